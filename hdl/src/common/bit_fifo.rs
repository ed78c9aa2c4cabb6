//! A first-in first-out queue of single bits in registers (`D` = `1 << AB` entries), for
//! queues too deep for [`super::SmallFifo`]'s nine but one bit wide: the side of every
//! burst a 200-cycle memory holds in flight. The bits live in one `D`-bit register; the
//! head bit is a register of its own, refilled from the entry after it (a `D`-to-1
//! multiplexer on a registered pointer, a log-depth tree) or straight from `s_data` when
//! the bit pushed becomes the head, so `m_data` is a register's output. The tail is kept
//! one-hot, so a push writes bit `i` from its own enable. The count and the flags drawn
//! from it ("full", "not empty", "one") are registers, each next value picked by this
//! cycle's handshakes among values made from registers: nothing between a handshake and
//! a register adds or compares.
//!
//! `m_data` is the oldest bit, valid while `m_valid`; a bit pushed is out the next cycle,
//! as from a register. `s_ready` is exactly "not full" and `m_valid` "not empty", both
//! registers. One bit per cycle each way.
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
    /// The entry the next push writes, one-hot.
    tail: DFF<Bits<D>>,
    /// The entry after the head.
    after_head: DFF<Bits<AB>>,
    /// The head bit (meaningful while `nonempty`).
    head_bit: DFF<Bit>,
    /// Bits held, and flags of it.
    count: DFF<Bits<AB1>>,
    full: DFF<Bit>,
    nonempty: DFF<Bit>,
    single: DFF<Bit>,
    push: Signal<Local, Bit>,
    pop: Signal<Local, Bit>,
    /// The bit pushed this cycle is the head next cycle.
    lands_at_head: Signal<Local, Bit>,
    /// From the count register: two held, `D` − 1 held, more than one held, and the
    /// count one up and one down.
    two: Signal<Local, Bit>,
    almost_full: Signal<Local, Bit>,
    several: Signal<Local, Bit>,
    count_up: Signal<Local, Bits<AB1>>,
    count_down: Signal<Local, Bits<AB1>>,
    /// The bits with the pushed one written, from registers and `s_data` alone.
    written: Signal<Local, Bits<D>>,
    last: Constant<Bits<AB1>>,
    one: Constant<Bits<AB1>>,
    first: Constant<Bits<D>>,
    /// The shift that brings the last entry's bit round to the first.
    wrap: Constant<Bits<D>>,
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
            tail: Default::default(),
            after_head: Default::default(),
            head_bit: Default::default(),
            count: Default::default(),
            full: Default::default(),
            nonempty: Default::default(),
            single: Default::default(),
            push: Default::default(),
            pop: Default::default(),
            lands_at_head: Default::default(),
            two: Default::default(),
            almost_full: Default::default(),
            several: Default::default(),
            count_up: Default::default(),
            count_down: Default::default(),
            written: Default::default(),
            last: constant(D as u64 - 1),
            one: constant(1),
            first: constant(1),
            wrap: constant(D as u64 - 1),
        }
    }
}

impl<const AB: usize, const AB1: usize, const D: usize> Logic for BitFifo<AB, AB1, D> {
    #[hdl_gen]
    fn update(&mut self) {
        dff_setup!(self, clock, bits, tail, after_head, head_bit, count, full, nonempty, single);
        self.s_ready.next = !self.full.q.val();
        self.m_valid.next = self.nonempty.q.val();
        self.m_data.next = self.head_bit.q.val();
        self.push.next = self.s_valid.val() & !self.full.q.val();
        self.pop.next = self.m_ready.val() & self.nonempty.q.val();
        // Each bit from its own enable: the one-hot tail, and the push.
        self.written.next = self.bits.q.val() & !self.tail.q.val();
        if self.s_data.val() {
            self.written.next = self.bits.q.val() | self.tail.q.val();
        }
        if self.push.val() {
            self.bits.d.next = self.written.val();
            self.tail.d.next = (self.tail.q.val() << 1) | (self.tail.q.val() >> self.wrap.val());
        }
        // The head moves on a pop, its bit refilled from the entry after it; into an empty
        // queue, or behind a lone head that leaves, the bit pushed is the head next.
        if self.pop.val() {
            self.after_head.d.next = self.after_head.q.val() + 1;
            self.head_bit.d.next = self.bits.q.val().get_bit(self.after_head.q.val().index());
        }
        self.lands_at_head.next = self.push.val() & (!self.nonempty.q.val() | (self.single.q.val() & self.pop.val()));
        if self.lands_at_head.val() {
            self.head_bit.d.next = self.s_data.val();
        }
        // The count and its flags, a cycle ahead.
        self.two.next = self.count.q.val() == (self.one.val() << 1);
        self.several.next = self.count.q.val() > self.one.val();
        self.count_up.next = self.count.q.val() + 1;
        self.count_down.next = self.count.q.val() - 1;
        self.almost_full.next = self.count.q.val() == self.last.val();
        self.nonempty.d.next = self.push.val() | self.several.val() | (self.single.q.val() & !self.pop.val());
        if self.push.val() & !self.pop.val() {
            self.count.d.next = self.count_up.val();
            self.single.d.next = !self.nonempty.q.val();
            self.full.d.next = self.almost_full.val();
        }
        if self.pop.val() & !self.push.val() {
            self.count.d.next = self.count_down.val();
            self.single.d.next = self.two.val();
            self.full.d.next = false;
        }
        if self.reset.val() {
            self.after_head.d.next = 1.into();
            self.tail.d.next = self.first.val();
            self.count.d.next = 0.into();
            self.full.d.next = false;
            self.nonempty.d.next = false;
            self.single.d.next = false;
        }
    }
}
