//! UART transmitter, 8N1: one start bit, eight data bits LSB first, one stop bit.
//!
//! A byte is taken when `valid` and `ready` are both high (`ready` is high whenever no
//! byte is going out, so bytes offered back to back leave without a gap between frames).
//! Every bit lasts `clks_per_bit` cycles, an input so that the generated Verilog does not
//! depend on the clock. `txd` comes straight from a flip-flop, so the line never glitches.
use rust_hdl::prelude::*;

#[derive(LogicBlock, Default)]
pub struct UartTx {
    pub clock: Signal<In, Clock>,
    pub reset: Signal<In, Bit>,
    /// Clock cycles per bit (clock frequency / baud rate), at least 1.
    pub clks_per_bit: Signal<In, Bits<16>>,
    pub data: Signal<In, Bits<8>>,
    pub valid: Signal<In, Bit>,
    pub ready: Signal<Out, Bit>,
    /// The serial line, high when idle.
    pub txd: Signal<Out, Bit>,
    /// The frame still to send, start bit first, stored inverted: the flip-flops'
    /// power-up zeros then hold the line idle (high) before the first reset.
    frame_n: DFF<Bits<10>>,
    /// Bits of the frame not yet finished, the one on the line included.
    bits_left: DFF<Bits<4>>,
    /// Cycles left in the current bit, minus one.
    count: DFF<Bits<16>>,
    busy: Signal<Local, Bit>,
    /// The last cycle of the stop bit: the next frame may start in the cycle after it.
    last: Signal<Local, Bit>,
    load: Signal<Local, Bit>,
    /// The byte inverted at its own width: inverted after widening, Verilog would also
    /// invert the zeros it widens with, and the stop bit with them.
    data_n: Signal<Local, Bits<8>>,
}

impl Logic for UartTx {
    #[hdl_gen]
    fn update(&mut self) {
        dff_setup!(self, clock, frame_n, bits_left, count);
        self.busy.next = self.bits_left.q.val().any();
        self.last.next = (self.bits_left.q.val() == 1) & !self.count.q.val().any();
        self.ready.next = (!self.busy.val() | self.last.val()) & !self.reset.val();
        self.load.next = (!self.busy.val() | self.last.val()) & self.valid.val();
        if self.busy.val() {
            self.count.d.next = self.count.q.val() - 1;
            if !self.count.q.val().any() {
                self.count.d.next = self.clks_per_bit.val() - 1;
                self.frame_n.d.next = self.frame_n.q.val() >> 1;
                self.bits_left.d.next = self.bits_left.q.val() - 1;
            }
        }
        self.data_n.next = !self.data.val();
        if self.load.val() {
            // Inverted: a start bit (0) stored as 1, the data inverted, a stop bit (1) as 0.
            self.frame_n.d.next = (bit_cast::<10, 8>(self.data_n.val()) << 1) | 1;
            self.bits_left.d.next = 10.into();
            self.count.d.next = self.clks_per_bit.val() - 1;
        }
        if self.reset.val() {
            self.frame_n.d.next = 0.into();
            self.bits_left.d.next = 0.into();
        }
        self.txd.next = !self.frame_n.q.val().get_bit(0);
    }
}
