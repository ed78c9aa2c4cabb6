//! A first-in first-out queue in block RAM (`1 << AB` entries of `W` bits), for queues too
//! deep for registers: payload waiting for the transmitter, jobs waiting for the segmenter.
//! `m_data` is the oldest entry, valid while `m_valid`, one entry per cycle each way.
//!
//! The RAM reads synchronously, so its read address runs one entry ahead: it is the read
//! pointer after this cycle's pop, and a write becomes readable two cycles after it
//! (`visible` trails the write pointer by a cycle). `count` is the entries held, for
//! users that reserve room ahead of their writes.
//!
//! The read side decides a cycle ahead: `m_valid` is a register (the next read pointer
//! against the next `visible`), and the pointer after a pop is kept incremented in a
//! register of its own, so a pop selects the RAM's next address without an adder.
use rust_hdl::prelude::*;

use crate::common::constant;

/// `AB` = address bits, `AB1` = `AB + 1`.
#[derive(LogicBlock)]
pub struct RamFifo<const W: usize, const AB: usize, const AB1: usize> {
    pub clock: Signal<In, Clock>,
    pub reset: Signal<In, Bit>,
    pub s_valid: Signal<In, Bit>,
    pub s_ready: Signal<Out, Bit>,
    pub s_data: Signal<In, Bits<W>>,
    pub m_valid: Signal<Out, Bit>,
    pub m_ready: Signal<In, Bit>,
    pub m_data: Signal<Out, Bits<W>>,
    pub count: Signal<Out, Bits<AB1>>,
    ram: RAM<Bits<W>, AB>,
    wr_ptr: DFF<Bits<AB1>>,
    visible: DFF<Bits<AB1>>,
    rd_ptr: DFF<Bits<AB1>>,
    /// `rd_ptr + 1` (it starts at its value after a reset, 1), and `rd_ptr != visible`
    /// (an entry is readable), as registers.
    rd_inc: DFFWithInit<Bits<AB1>>,
    readable: DFF<Bit>,
    push: Signal<Local, Bit>,
    pop: Signal<Local, Bit>,
    next_rd: Signal<Local, Bits<AB1>>,
    depth: Constant<Bits<AB1>>,
}

impl<const W: usize, const AB: usize, const AB1: usize> Default for RamFifo<W, AB, AB1> {
    fn default() -> Self {
        const { assert!(AB1 == AB + 1 && AB < 32) };
        RamFifo {
            clock: Default::default(),
            reset: Default::default(),
            s_valid: Default::default(),
            s_ready: Default::default(),
            s_data: Default::default(),
            m_valid: Default::default(),
            m_ready: Default::default(),
            m_data: Default::default(),
            count: Default::default(),
            ram: Default::default(),
            wr_ptr: Default::default(),
            visible: Default::default(),
            rd_ptr: Default::default(),
            rd_inc: DFFWithInit::new(1.into()),
            readable: Default::default(),
            push: Default::default(),
            pop: Default::default(),
            next_rd: Default::default(),
            depth: constant(1 << AB),
        }
    }
}

impl<const W: usize, const AB: usize, const AB1: usize> Logic for RamFifo<W, AB, AB1> {
    #[hdl_gen]
    fn update(&mut self) {
        dff_setup!(self, clock, wr_ptr, visible, rd_ptr, rd_inc, readable);
        self.ram.read_clock.next = self.clock.val();
        self.ram.write_clock.next = self.clock.val();
        self.count.next = self.wr_ptr.q.val() - self.rd_ptr.q.val();
        self.s_ready.next = self.count.val() != self.depth.val();
        self.m_valid.next = self.readable.q.val();
        self.push.next = self.s_valid.val() & (self.count.val() != self.depth.val());
        self.pop.next = self.m_ready.val() & self.readable.q.val();
        self.ram.write_enable.next = self.push.val();
        self.ram.write_address.next = self.wr_ptr.q.val().get_bits::<AB>(0);
        self.ram.write_data.next = self.s_data.val();
        if self.push.val() {
            self.wr_ptr.d.next = self.wr_ptr.q.val() + 1;
        }
        self.visible.d.next = self.wr_ptr.q.val();
        self.next_rd.next = self.rd_ptr.q.val();
        if self.pop.val() {
            self.next_rd.next = self.rd_inc.q.val();
        }
        self.rd_ptr.d.next = self.next_rd.val();
        self.rd_inc.d.next = self.next_rd.val() + 1;
        self.readable.d.next = self.next_rd.val() != self.wr_ptr.q.val();
        self.ram.read_address.next = self.next_rd.val().get_bits::<AB>(0);
        self.m_data.next = self.ram.read_data.val();
        if self.reset.val() {
            self.wr_ptr.d.next = 0.into();
            self.visible.d.next = 0.into();
            self.rd_ptr.d.next = 0.into();
            self.rd_inc.d.next = 1.into();
            self.readable.d.next = false;
        }
    }
}
