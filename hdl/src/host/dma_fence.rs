//! The DMA fence of the command unit: a command that takes memory away from the RNIC (a
//! QP reset, a CQ or MR rewritten, an MR invalidated) completes only once every DMA
//! access asked for before it took effect has completed, so the host may free that
//! memory as soon as it sees the command done (docs/REGISTERS.md, commands).
//!
//! `start` begins a fence. For `SETTLE` cycles the engines see the new context (a request
//! an engine decided on from the old one reaches its arbiter within them). Then the fence
//! notes which clients of the read and write arbiters hold a request (`*_pending`), and
//! follows the engines' request count (`*_issue`) until each of those clients has been
//! granted (`*_taken`): that count is the mark. `done` pulses once the engines have
//! completed (`*_complete`, in request order) as many requests as the mark, for reads and
//! for writes. Requests asked for later are not waited for, so traffic of other QPs never
//! holds a command up for longer than what was in flight.
//!
//! `NR`/`NW` = clients of the read / write arbiter.
use rust_hdl::prelude::*;

use crate::common::constant;

/// Cycles from `start` until the fence notes what is pending.
pub const SETTLE: u64 = 4;

/// Fence states.
const IDLE: u64 = 0;
const SETTLING: u64 = 1;
const DRAINING: u64 = 2;

#[derive(LogicBlock)]
pub struct DmaFence<const NR: usize, const NW: usize> {
    pub clock: Signal<In, Clock>,
    pub reset: Signal<In, Bit>,
    pub start: Signal<In, Bit>,
    pub done: Signal<Out, Bit>,
    /// Clients holding a request at their arbiter (valid), and those granted this cycle
    /// (valid and ready).
    pub rd_pending: Signal<In, Bits<NR>>,
    pub rd_taken: Signal<In, Bits<NR>>,
    pub wr_pending: Signal<In, Bits<NW>>,
    pub wr_taken: Signal<In, Bits<NW>>,
    /// A request enters the read / write engine; one completes (its last octet delivered,
    /// its last write acknowledged).
    pub rd_issue: Signal<In, Bit>,
    pub rd_complete: Signal<In, Bit>,
    pub wr_issue: Signal<In, Bit>,
    pub wr_complete: Signal<In, Bit>,
    state: DFF<Bits<2>>,
    settle: DFF<Bits<3>>,
    rd_issued: DFF<Bits<16>>,
    rd_completed: DFF<Bits<16>>,
    wr_issued: DFF<Bits<16>>,
    wr_completed: DFF<Bits<16>>,
    rd_mark: DFF<Bits<16>>,
    wr_mark: DFF<Bits<16>>,
    rd_wait: DFF<Bits<NR>>,
    wr_wait: DFF<Bits<NW>>,
    done_q: DFF<Bit>,
    /// The counts including this cycle's issue.
    rd_count: Signal<Local, Bits<16>>,
    wr_count: Signal<Local, Bits<16>>,
    /// Completions less the mark; reached when that is not negative.
    rd_gap: Signal<Local, Bits<16>>,
    wr_gap: Signal<Local, Bits<16>>,
    rd_reached: Signal<Local, Bit>,
    wr_reached: Signal<Local, Bit>,
    st_idle: Constant<Bits<2>>,
    st_settling: Constant<Bits<2>>,
    st_draining: Constant<Bits<2>>,
    settle_cycles: Constant<Bits<3>>,
}

impl<const NR: usize, const NW: usize> Default for DmaFence<NR, NW> {
    fn default() -> Self {
        DmaFence {
            clock: Default::default(),
            reset: Default::default(),
            start: Default::default(),
            done: Default::default(),
            rd_pending: Default::default(),
            rd_taken: Default::default(),
            wr_pending: Default::default(),
            wr_taken: Default::default(),
            rd_issue: Default::default(),
            rd_complete: Default::default(),
            wr_issue: Default::default(),
            wr_complete: Default::default(),
            state: Default::default(),
            settle: Default::default(),
            rd_issued: Default::default(),
            rd_completed: Default::default(),
            wr_issued: Default::default(),
            wr_completed: Default::default(),
            rd_mark: Default::default(),
            wr_mark: Default::default(),
            rd_wait: Default::default(),
            wr_wait: Default::default(),
            done_q: Default::default(),
            rd_count: Default::default(),
            wr_count: Default::default(),
            rd_gap: Default::default(),
            wr_gap: Default::default(),
            rd_reached: Default::default(),
            wr_reached: Default::default(),
            st_idle: constant(IDLE),
            st_settling: constant(SETTLING),
            st_draining: constant(DRAINING),
            settle_cycles: constant(SETTLE - 1),
        }
    }
}

impl<const NR: usize, const NW: usize> Logic for DmaFence<NR, NW> {
    #[hdl_gen]
    fn update(&mut self) {
        dff_setup!(
            self,
            clock,
            state,
            settle,
            rd_issued,
            rd_completed,
            wr_issued,
            wr_completed,
            rd_mark,
            wr_mark,
            rd_wait,
            wr_wait,
            done_q
        );
        // The engines' requests and completions, counted modulo 2^16 (far more than can be
        // in flight).
        self.rd_count.next = self.rd_issued.q.val();
        if self.rd_issue.val() {
            self.rd_count.next = self.rd_issued.q.val() + 1;
        }
        self.wr_count.next = self.wr_issued.q.val();
        if self.wr_issue.val() {
            self.wr_count.next = self.wr_issued.q.val() + 1;
        }
        self.rd_issued.d.next = self.rd_count.val();
        self.wr_issued.d.next = self.wr_count.val();
        if self.rd_complete.val() {
            self.rd_completed.d.next = self.rd_completed.q.val() + 1;
        }
        if self.wr_complete.val() {
            self.wr_completed.d.next = self.wr_completed.q.val() + 1;
        }
        self.rd_gap.next = self.rd_completed.q.val() - self.rd_mark.q.val();
        self.wr_gap.next = self.wr_completed.q.val() - self.wr_mark.q.val();
        self.rd_reached.next = !self.rd_gap.val().get_bit(15);
        self.wr_reached.next = !self.wr_gap.val().get_bit(15);

        self.done_q.d.next = false;
        if (self.state.q.val() == self.st_idle.val()) & self.start.val() {
            self.state.d.next = self.st_settling.val();
            self.settle.d.next = self.settle_cycles.val();
        }
        if self.state.q.val() == self.st_settling.val() {
            self.settle.d.next = self.settle.q.val() - 1;
            if !self.settle.q.val().any() {
                self.state.d.next = self.st_draining.val();
                self.rd_wait.d.next = self.rd_pending.val() & !self.rd_taken.val();
                self.wr_wait.d.next = self.wr_pending.val() & !self.wr_taken.val();
                self.rd_mark.d.next = self.rd_count.val();
                self.wr_mark.d.next = self.wr_count.val();
            }
        }
        if self.state.q.val() == self.st_draining.val() {
            // The mark follows the count while a noted client still waits for its grant.
            self.rd_wait.d.next = self.rd_wait.q.val() & !self.rd_taken.val();
            self.wr_wait.d.next = self.wr_wait.q.val() & !self.wr_taken.val();
            if self.rd_wait.q.val().any() {
                self.rd_mark.d.next = self.rd_count.val();
            }
            if self.wr_wait.q.val().any() {
                self.wr_mark.d.next = self.wr_count.val();
            }
            if !self.rd_wait.q.val().any() & !self.wr_wait.q.val().any() & self.rd_reached.val() & self.wr_reached.val()
            {
                self.state.d.next = self.st_idle.val();
                self.done_q.d.next = true;
            }
        }
        if self.reset.val() {
            self.state.d.next = self.st_idle.val();
            self.rd_issued.d.next = 0.into();
            self.rd_completed.d.next = 0.into();
            self.wr_issued.d.next = 0.into();
            self.wr_completed.d.next = 0.into();
            self.done_q.d.next = false;
        }
        self.done.next = self.done_q.q.val();
    }
}
