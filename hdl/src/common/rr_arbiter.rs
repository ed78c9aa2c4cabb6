//! A pipelined round-robin arbiter over `N` requesters (at most 256), for many queues: its
//! depth does not grow with `N` as a scan does (a 64-way scan is an 18-level chain).
//!
//! Four registered stages, none more than four LUT levels deep (the carry chain counts
//! as one):
//!
//! 1. `requests` is registered on entry, so the user's logic in front adds no depth,
//!    and so are the requesters among them above the last grant (`requests & above`).
//! 2. The lowest of those and the lowest requester at all are each isolated as `x & (!x + 1)` on the carry chain, and
//!    registered with whether there is any above the last grant.
//! 3. The first if there is one, else the second, is the grant, registered as a one-hot
//!    word.
//! 4. It is encoded (each index bit is an OR of the requesters whose index has it) and
//!    registered with the one-hot word: `found`, `grant`, `grant_onehot`.
//!
//! The grant is that of the requests of four cycles before, so the user checks that its
//! requester still asks (`grant_onehot & requests`) before taking it with `accept`.
//! `accept` moves the priority past the grant (`above` = every requester after it) and
//! holds `found` low for the four cycles in which grants made under the old priority
//! are still in the pipeline: the next grant follows the new order.
use rust_hdl::prelude::*;

use crate::common::constant;

/// `N` requesters, `N` ≤ 256.
#[derive(LogicBlock)]
pub struct RrArbiter<const N: usize> {
    pub clock: Signal<In, Clock>,
    pub reset: Signal<In, Bit>,
    pub requests: Signal<In, Bits<N>>,
    /// A grant, and which requester (as an index and as a one-hot word).
    pub found: Signal<Out, Bit>,
    pub grant: Signal<Out, Bits<8>>,
    pub grant_onehot: Signal<Out, Bits<N>>,
    /// The user takes the grant on offer (only while `found`).
    pub accept: Signal<In, Bit>,
    req: DFF<Bits<N>>,
    high: DFF<Bits<N>>,
    /// The requesters after the last grant, which come first.
    above: DFF<Bits<N>>,
    first_high: DFF<Bits<N>>,
    first_any: DFF<Bits<N>>,
    high_any: DFF<Bit>,
    req_any: DFF<Bit>,
    chosen: DFF<Bits<N>>,
    chosen_found: DFF<Bit>,
    out_onehot: DFF<Bits<N>>,
    out_index: DFF<Bits<8>>,
    out_found: DFF<Bit>,
    /// Cycles left in which the pipeline still holds grants of the old priority.
    settle: DFF<Bits<3>>,
    choice: Signal<Local, Bits<N>>,
    index: Signal<Local, Bits<8>>,
    one: Constant<Bits<N>>,
    // The requesters whose index has bit k set, for k = 0..8.
    has_bit0: Constant<Bits<N>>,
    has_bit1: Constant<Bits<N>>,
    has_bit2: Constant<Bits<N>>,
    has_bit3: Constant<Bits<N>>,
    has_bit4: Constant<Bits<N>>,
    has_bit5: Constant<Bits<N>>,
    has_bit6: Constant<Bits<N>>,
    has_bit7: Constant<Bits<N>>,
    settle_cycles: Constant<Bits<3>>,
}

/// The requesters (of `N`) whose index has bit `k` set.
fn with_bit<const N: usize>(k: usize) -> Constant<Bits<N>> {
    let mut mask = Bits::<N>::default();
    for i in (0..N).filter(|i| i >> k & 1 == 1) {
        mask = mask | (Bits::<N>::from(1u64) << i as u64);
    }
    Constant::new(mask)
}

impl<const N: usize> Default for RrArbiter<N> {
    fn default() -> Self {
        const { assert!(N >= 2 && N <= 256) };
        RrArbiter {
            clock: Default::default(),
            reset: Default::default(),
            requests: Default::default(),
            found: Default::default(),
            grant: Default::default(),
            grant_onehot: Default::default(),
            accept: Default::default(),
            req: Default::default(),
            high: Default::default(),
            above: Default::default(),
            first_high: Default::default(),
            first_any: Default::default(),
            high_any: Default::default(),
            req_any: Default::default(),
            chosen: Default::default(),
            chosen_found: Default::default(),
            out_onehot: Default::default(),
            out_index: Default::default(),
            out_found: Default::default(),
            settle: Default::default(),
            choice: Default::default(),
            index: Default::default(),
            one: constant(1),
            has_bit0: with_bit(0),
            has_bit1: with_bit(1),
            has_bit2: with_bit(2),
            has_bit3: with_bit(3),
            has_bit4: with_bit(4),
            has_bit5: with_bit(5),
            has_bit6: with_bit(6),
            has_bit7: with_bit(7),
            settle_cycles: constant(4),
        }
    }
}

impl<const N: usize> Logic for RrArbiter<N> {
    #[hdl_gen]
    fn update(&mut self) {
        dff_setup!(
            self,
            clock,
            req,
            high,
            above,
            first_high,
            first_any,
            high_any,
            req_any,
            chosen,
            chosen_found,
            out_onehot,
            out_index,
            out_found,
            settle
        );
        // Stage 1: the requests, and those above the last grant.
        self.req.d.next = self.requests.val();
        self.high.d.next = self.requests.val() & self.above.q.val();
        // Stage 2: the lowest requester above the last grant, and the lowest of all.
        self.first_high.d.next = self.high.q.val() & (!self.high.q.val() + self.one.val());
        self.first_any.d.next = self.req.q.val() & (!self.req.q.val() + self.one.val());
        self.high_any.d.next = self.high.q.val().any();
        self.req_any.d.next = self.req.q.val().any();
        // Stage 3: the first of them that exists.
        self.choice.next = self.first_any.q.val();
        if self.high_any.q.val() {
            self.choice.next = self.first_high.q.val();
        }
        self.chosen.d.next = self.choice.val();
        self.chosen_found.d.next = self.req_any.q.val();
        // Stage 4: its index.
        self.index.next = bit_cast::<8, 1>((self.chosen.q.val() & self.has_bit0.val()).any().into())
            | (bit_cast::<8, 1>((self.chosen.q.val() & self.has_bit1.val()).any().into()) << 1)
            | (bit_cast::<8, 1>((self.chosen.q.val() & self.has_bit2.val()).any().into()) << 2)
            | (bit_cast::<8, 1>((self.chosen.q.val() & self.has_bit3.val()).any().into()) << 3)
            | (bit_cast::<8, 1>((self.chosen.q.val() & self.has_bit4.val()).any().into()) << 4)
            | (bit_cast::<8, 1>((self.chosen.q.val() & self.has_bit5.val()).any().into()) << 5)
            | (bit_cast::<8, 1>((self.chosen.q.val() & self.has_bit6.val()).any().into()) << 6)
            | (bit_cast::<8, 1>((self.chosen.q.val() & self.has_bit7.val()).any().into()) << 7);
        self.out_onehot.d.next = self.chosen.q.val();
        self.out_index.d.next = self.index.val();
        self.out_found.d.next = self.chosen_found.q.val();
        self.found.next = self.out_found.q.val() & !self.settle.q.val().any();
        self.grant.next = self.out_index.q.val();
        self.grant_onehot.next = self.out_onehot.q.val();
        // Taking a grant: the requesters after it come first from now on, and the grants
        // grants already in the pipeline are not offered.
        if self.settle.q.val().any() {
            self.settle.d.next = self.settle.q.val() - 1;
        }
        if self.accept.val() & self.found.val() {
            self.above.d.next = !((self.out_onehot.q.val() << 1) - self.one.val());
            self.settle.d.next = self.settle_cycles.val();
        }
        if self.reset.val() {
            self.req.d.next = 0.into();
            self.high.d.next = 0.into();
            self.above.d.next = 0.into();
            self.req_any.d.next = false;
            self.chosen_found.d.next = false;
            self.out_found.d.next = false;
            self.settle.d.next = 0.into();
        }
    }
}
