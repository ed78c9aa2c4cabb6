//! A first-in first-out queue of single bits in registers (`D` = `1 << AB` entries), for
//! queues too deep for [`super::SmallFifo`]'s eight but one bit wide: the side of every
//! burst a 200-cycle memory holds in flight. The bits live in one `D`-bit register, so
//! the head is a `D`-to-1 multiplexer on a registered pointer (a log-depth tree, not a
//! chain) and a push is a decoded write enable.
//!
//! `m_data` is the oldest bit, valid while `m_valid`; a bit pushed is out the next cycle,
//! as from a register. One bit per cycle each way; `s_ready` is "not full", `m_valid`
//! "not empty", both from registers alone.
use rust_hdl::prelude::*;

use crate::common::constant;

/// `AB` = pointer bits, `AB1` = `AB + 1`, `D` = `1 << AB` entries.
#[derive(LogicBlock)]
pub struct BitFifo<const AB: usize, const AB1: usize, const D: usize> {
    pub clock: Signal<In, Clock>,
    pub reset: Signal<In, Bit>,
    pub s_valid: Signal<In, Bit>,
    pub s_ready: Signal<Out, Bit>,
    pub s_data: Signal<In, Bit>,
    pub m_valid: Signal<Out, Bit>,
    pub m_ready: Signal<In, Bit>,
    pub m_data: Signal<Out, Bit>,
    bits: DFF<Bits<D>>,
    head: DFF<Bits<AB1>>,
    tail: DFF<Bits<AB1>>,
    count: Signal<Local, Bits<AB1>>,
    push: Signal<Local, Bit>,
    /// The entry the tail names, one-hot.
    slot: Signal<Local, Bits<D>>,
    one: Constant<Bits<D>>,
    depth: Constant<Bits<AB1>>,
}

impl<const AB: usize, const AB1: usize, const D: usize> Default for BitFifo<AB, AB1, D> {
    fn default() -> Self {
        const { assert!(AB1 == AB + 1 && D == 1 << AB) };
        BitFifo {
            clock: Default::default(),
            reset: Default::default(),
            s_valid: Default::default(),
            s_ready: Default::default(),
            s_data: Default::default(),
            m_valid: Default::default(),
            m_ready: Default::default(),
            m_data: Default::default(),
            bits: Default::default(),
            head: Default::default(),
            tail: Default::default(),
            count: Default::default(),
            push: Default::default(),
            slot: Default::default(),
            one: constant(1),
            depth: constant(D as u64),
        }
    }
}

impl<const AB: usize, const AB1: usize, const D: usize> Logic for BitFifo<AB, AB1, D> {
    #[hdl_gen]
    fn update(&mut self) {
        dff_setup!(self, clock, bits, head, tail);
        self.count.next = self.tail.q.val() - self.head.q.val();
        self.s_ready.next = self.count.val() != self.depth.val();
        self.m_valid.next = self.count.val().any();
        self.m_data.next = self.bits.q.val().get_bit(self.head.q.val().get_bits::<AB>(0).index());
        self.push.next = self.s_valid.val() & (self.count.val() != self.depth.val());
        self.slot.next = self.one.val() << bit_cast::<D, AB>(self.tail.q.val().get_bits::<AB>(0));
        if self.push.val() {
            self.bits.d.next = self.bits.q.val() & !self.slot.val();
            if self.s_data.val() {
                self.bits.d.next = self.bits.q.val() | self.slot.val();
            }
            self.tail.d.next = self.tail.q.val() + 1;
        }
        if self.m_ready.val() & self.count.val().any() {
            self.head.d.next = self.head.q.val() + 1;
        }
        if self.reset.val() {
            self.head.d.next = 0.into();
            self.tail.d.next = 0.into();
        }
    }
}
