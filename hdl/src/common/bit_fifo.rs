//! A first-in first-out queue of single bits in registers (`D` entries, at least 4), for
//! queues too deep for [`super::SmallFifo`]'s nine but one bit wide: the side of every
//! burst a 200-cycle memory holds in flight. The bits live in one `D`-bit register that
//! shifts down on a pop, so the oldest bit is always bit 0 and `m_data` is a register's
//! output with no multiplexer in front of it. The tail (the entry the next push writes)
//! is kept one-hot, all zero when full, so each bit's next value is picked from itself,
//! the bit above it and `s_data` by its own tail bits and this cycle's handshakes. The
//! flags ("full", "not empty", "one") are registers, each next value picked by the
//! handshakes among values read off the one-hot tail: nothing between a handshake and a
//! register adds, compares or selects by index.
//!
//! `m_data` is the oldest bit, valid while `m_valid`; a bit pushed is out the next cycle,
//! as from a register. `s_ready` is exactly "not full" and `m_valid` "not empty", both
//! registers. One bit per cycle each way.
use rust_hdl::prelude::*;

use crate::common::constant;

/// `D` = entries.
#[derive(LogicBlock)]
pub struct BitFifo<const D: usize> {
    pub clock: Signal<In, Clock>,
    pub reset: Signal<In, Bit>,
    pub s_valid: Signal<In, Bit>,
    pub s_ready: Signal<Out, Bit>,
    pub s_data: Signal<In, Bit>,
    pub m_valid: Signal<Out, Bit>,
    pub m_ready: Signal<In, Bit>,
    pub m_data: Signal<Out, Bit>,
    /// The bits held, the oldest at bit 0.
    bits: DFF<Bits<D>>,
    /// The entry the next push writes (the count of bits held), one-hot; zero when full.
    tail: DFF<Bits<D>>,
    /// Flags of the count.
    full: DFF<Bit>,
    nonempty: DFF<Bit>,
    single: DFF<Bit>,
    push: Signal<Local, Bit>,
    pop: Signal<Local, Bit>,
    /// The bits and the tail as they stand after this cycle's pop, if any (shifted down
    /// one entry), and the pushed bit written there.
    base: Signal<Local, Bits<D>>,
    at: Signal<Local, Bits<D>>,
    written: Signal<Local, Bits<D>>,
    first: Constant<Bits<D>>,
    /// The last entry, where the tail comes back to when a full queue pops.
    last: Constant<Bits<D>>,
}

impl<const D: usize> Default for BitFifo<D> {
    fn default() -> Self {
        const { assert!(D >= 4 && D <= 64) };
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
            full: Default::default(),
            nonempty: Default::default(),
            single: Default::default(),
            push: Default::default(),
            pop: Default::default(),
            base: Default::default(),
            at: Default::default(),
            written: Default::default(),
            first: constant(1),
            last: constant(1 << (D - 1)),
        }
    }
}

impl<const D: usize> Logic for BitFifo<D> {
    #[hdl_gen]
    fn update(&mut self) {
        dff_setup!(self, clock, bits, tail, full, nonempty, single);
        self.s_ready.next = !self.full.q.val();
        self.m_valid.next = self.nonempty.q.val();
        self.m_data.next = self.bits.q.val().get_bit(0);
        self.push.next = self.s_valid.val() & !self.full.q.val();
        self.pop.next = self.m_ready.val() & self.nonempty.q.val();
        // A pop shifts every bit down one entry, and the tail with them (a push is refused
        // when full, so a pop and a push together always find the tail non-zero).
        self.base.next = self.bits.q.val();
        self.at.next = self.tail.q.val();
        if self.pop.val() {
            self.base.next = self.bits.q.val() >> 1;
            self.at.next = self.tail.q.val() >> 1;
        }
        // Each bit from its own tail bits: the pushed bit written where the tail points.
        self.written.next = self.base.val() & !self.at.val();
        if self.s_data.val() {
            self.written.next = self.base.val() | self.at.val();
        }
        self.bits.d.next = self.base.val();
        if self.push.val() {
            self.bits.d.next = self.written.val();
        }
        // The tail and the flags, read off the one-hot tail (two held: bit 2; D - 1 held:
        // the last bit).
        if self.push.val() & !self.pop.val() {
            self.tail.d.next = self.tail.q.val() << 1;
            self.single.d.next = !self.nonempty.q.val();
            self.full.d.next = (self.tail.q.val() & self.last.val()).any();
            self.nonempty.d.next = true;
        }
        if self.pop.val() & !self.push.val() {
            self.tail.d.next = self.tail.q.val() >> 1;
            if self.full.q.val() {
                self.tail.d.next = self.last.val();
            }
            self.single.d.next = self.tail.q.val().get_bit(2);
            self.full.d.next = false;
            self.nonempty.d.next = !self.single.q.val();
        }
        if self.reset.val() {
            self.tail.d.next = self.first.val();
            self.full.d.next = false;
            self.nonempty.d.next = false;
            self.single.d.next = false;
        }
    }
}
