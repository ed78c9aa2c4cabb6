//! UART receiver, 8N1: one start bit, eight data bits LSB first, one stop bit.
//!
//! The line goes through a two-flip-flop synchronizer (it comes from another clock
//! domain: a pin). A falling edge starts a frame; the start bit is sampled again half a
//! bit later, and if the line is high by then the edge was a glitch and the receiver goes
//! back to waiting. The data bits and the stop bit are then sampled in their middles,
//! `clks_per_bit` cycles apart. A byte with a high stop bit comes out as a one-cycle
//! `valid` pulse, with `data` held until the next byte. A low stop bit (a framing error,
//! or a break) drops the byte, and the receiver waits for the line to go high before it
//! looks for the next start bit, so a long break is not read as a stream of zero bytes.
//!
//! The bit time is an input, `clks_per_bit` (at least 4), rather than a constant, so that
//! the generated Verilog does not depend on the clock: the board shell drives it from its
//! clock and baud parameters.
use rust_hdl::prelude::*;

/// Receiver states.
const IDLE: u8 = 0;
const START: u8 = 1;
const DATA: u8 = 2;
const STOP: u8 = 3;
const BREAK: u8 = 4;

#[derive(LogicBlock)]
pub struct UartRx {
    pub clock: Signal<In, Clock>,
    pub reset: Signal<In, Bit>,
    /// Clock cycles per bit (clock frequency / baud rate), at least 4.
    pub clks_per_bit: Signal<In, Bits<16>>,
    /// The serial line, asynchronous; high when idle.
    pub rxd: Signal<In, Bit>,
    /// The last byte received, held until the next one.
    pub data: Signal<Out, Bits<8>>,
    /// High for one cycle per byte received with a valid stop bit.
    pub valid: Signal<Out, Bit>,
    // The synchronizer stores the line inverted, so that the flip-flops' power-up zeros
    // read as an idle (high) line rather than as a start bit.
    sync1_n: DFF<Bit>,
    sync2_n: DFF<Bit>,
    state: DFF<Bits<3>>,
    /// Cycles left until the next sample, minus one.
    count: DFF<Bits<16>>,
    /// Data bits still to sample after the current one.
    bits_left: DFF<Bits<3>>,
    shift: DFF<Bits<8>>,
    received: DFF<Bits<8>>,
    pulse: DFF<Bit>,
    idle: Constant<Bits<3>>,
    start: Constant<Bits<3>>,
    data_bits: Constant<Bits<3>>,
    stop: Constant<Bits<3>>,
    brk: Constant<Bits<3>>,
    line: Signal<Local, Bit>,
    sample: Signal<Local, Bit>,
}

impl Default for UartRx {
    fn default() -> Self {
        UartRx {
            clock: Default::default(),
            reset: Default::default(),
            clks_per_bit: Default::default(),
            rxd: Default::default(),
            data: Default::default(),
            valid: Default::default(),
            sync1_n: Default::default(),
            sync2_n: Default::default(),
            state: Default::default(),
            count: Default::default(),
            bits_left: Default::default(),
            shift: Default::default(),
            received: Default::default(),
            pulse: Default::default(),
            idle: Constant::new(IDLE.to_bits()),
            start: Constant::new(START.to_bits()),
            data_bits: Constant::new(DATA.to_bits()),
            stop: Constant::new(STOP.to_bits()),
            brk: Constant::new(BREAK.to_bits()),
            line: Default::default(),
            sample: Default::default(),
        }
    }
}

impl Logic for UartRx {
    #[hdl_gen]
    fn update(&mut self) {
        dff_setup!(self, clock, sync1_n, sync2_n, state, count, bits_left, shift, received, pulse);
        self.sync1_n.d.next = !self.rxd.val();
        self.sync2_n.d.next = self.sync1_n.q.val();
        self.line.next = !self.sync2_n.q.val();

        // One sample per bit: when the count runs out, reload it for a whole bit.
        self.sample.next = !self.count.q.val().any();
        self.count.d.next = self.count.q.val() - 1;
        if self.sample.val() {
            self.count.d.next = self.clks_per_bit.val() - 1;
        }
        self.pulse.d.next = false;

        if self.state.q.val() == self.idle.val() {
            if !self.line.val() {
                // The start bit is sampled again half a bit after its edge was seen.
                self.state.d.next = self.start.val();
                self.count.d.next = (self.clks_per_bit.val() >> 1) - 1;
            }
        } else if self.state.q.val() == self.start.val() {
            if self.sample.val() {
                if self.line.val() {
                    self.state.d.next = self.idle.val();
                } else {
                    self.state.d.next = self.data_bits.val();
                    self.bits_left.d.next = 7.into();
                }
            }
        } else if self.state.q.val() == self.data_bits.val() {
            if self.sample.val() {
                self.shift.d.next = (self.shift.q.val() >> 1) | (bit_cast::<8, 1>(self.line.val().into()) << 7);
                self.bits_left.d.next = self.bits_left.q.val() - 1;
                if !self.bits_left.q.val().any() {
                    self.state.d.next = self.stop.val();
                }
            }
        } else if self.state.q.val() == self.stop.val() {
            if self.sample.val() {
                if self.line.val() {
                    self.state.d.next = self.idle.val();
                    self.received.d.next = self.shift.q.val();
                    self.pulse.d.next = true;
                } else {
                    self.state.d.next = self.brk.val();
                }
            }
        } else if self.line.val() {
            self.state.d.next = self.idle.val();
        }

        if self.reset.val() {
            self.state.d.next = self.idle.val();
            self.pulse.d.next = false;
        }
        self.data.next = self.received.q.val();
        self.valid.next = self.pulse.q.val();
    }
}
