//! A RAM (`1 << A` words of `D`) whose read is registered twice: the address is taken at
//! the clock edge (the block RAM's own input register) and the word read is registered
//! again at the next (its output register), so `read_data` is the word at the
//! `read_address` of two cycles before, one read per cycle. Nothing combinational runs
//! from the RAM's output into the user's logic: the path RAM → compare → add → register
//! that limits a one-register read becomes RAM → register, then register → logic.
//!
//! A write and a read of the same address in the same cycle reads the old word. Users
//! that read what they have just written keep the write in flight in a register and
//! forward it (see the pipelines that use this RAM).
use rust_hdl::prelude::*;

/// `D` = word type, `A` = address bits.
#[derive(LogicBlock, Default)]
pub struct RegRam<D: Synth, const A: usize> {
    pub clock: Signal<In, Clock>,
    pub write_enable: Signal<In, Bit>,
    pub write_address: Signal<In, Bits<A>>,
    pub write_data: Signal<In, D>,
    pub read_address: Signal<In, Bits<A>>,
    /// The word at `read_address` two cycles ago.
    pub read_data: Signal<Out, D>,
    ram: RAM<D, A>,
    out: DFF<D>,
}

impl<D: Synth, const A: usize> Logic for RegRam<D, A> {
    #[hdl_gen]
    fn update(&mut self) {
        dff_setup!(self, clock, out);
        self.ram.read_clock.next = self.clock.val();
        self.ram.write_clock.next = self.clock.val();
        self.ram.write_enable.next = self.write_enable.val();
        self.ram.write_address.next = self.write_address.val();
        self.ram.write_data.next = self.write_data.val();
        self.ram.read_address.next = self.read_address.val();
        self.out.d.next = self.ram.read_data.val();
        self.read_data.next = self.out.q.val();
    }
}
