//! The requester: taking the next SQ WQE, checking it locally, sending it.

use super::cq::{Expected, Queue};
use super::fabric::{Fabric, ModelError, Side, Step, Token};
use super::qp::{Awaiting, Outstanding, Qp};
use super::rnic::{local_outcome, sq_cqe, ErrorCause, Outcome};
use super::wire::{atomic_request_ulpdu, read_request_of, request_ulpdus};
use crate::host::context::{QpState, MAX_READS};
use crate::host::desc::{CqeStatus, SqOpcode, SqWqe};
use crate::rdmap::Segment;
use crate::terminate::{TermCode, Terminate};

impl Fabric {
    /// Executes the SQ WQE a token stands for, if it is next in its SQ.
    pub(crate) fn sq_step(&mut self, t: Token) -> Result<Step, ModelError> {
        let rnic = &mut self.rnics[t.side.index()];
        let Some(qp) = rnic.qps.get(t.qpn as usize) else {
            return Ok(Step::Stale);
        };
        let Some(front) = qp.sq.front().copied() else {
            return Ok(Step::Stale);
        };
        if front.id > t.id {
            return Ok(Step::Stale);
        }
        if front.id < t.id {
            return Ok(Step::Blocked);
        }
        match qp.ctx.state {
            QpState::Reset => return Ok(Step::Stale),
            QpState::Error => {
                rnic.enter_error(t.qpn, ErrorCause::FLUSH);
                return Ok(Step::Done);
            }
            QpState::Rts => {}
        }
        // Everything a WQE causes is processed before the next one starts,
        // so a Read or atomic still outstanding here lost its request or
        // response to a peer that drops traffic: nothing after it can
        // complete. With the test as the peer, responses come later, and up
        // to ORD requests are outstanding (Reads and atomics share the slots).
        let blocked = match qp.external {
            true => {
                let slots = usize::from(qp.ctx.ord.min(MAX_READS));
                front.wqe.op().is_some_and(SqOpcode::takes_ord_slot) && qp.ord.len() >= slots.max(1)
            }
            false => !qp.ord.is_empty(),
        };
        if blocked {
            return Ok(Step::Blocked);
        }
        match local_outcome(&rnic.mrs, &qp.ctx, &front.wqe) {
            Outcome::Stall => Ok(Step::Blocked),
            Outcome::Fail(status) => {
                self.local_error(t.side, t.qpn, status);
                Ok(Step::Done)
            }
            Outcome::Transmit { op, source } => {
                self.issue(t.side, t.qpn, op, source)?;
                Ok(Step::Done)
            }
        }
    }

    /// Sends the WQE at the head of the SQ. Sends, Writes and Immediate
    /// Data complete once their last segment is handed on; a Read or an
    /// atomic takes an ORD slot and waits for its response.
    fn issue(&mut self, side: Side, qpn: u32, op: SqOpcode, source: Option<u64>) -> Result<(), ModelError> {
        let rnic = &mut self.rnics[side.index()];
        let qp = &mut rnic.qps[qpn as usize];
        let Some(posted) = qp.sq.pop_front() else {
            return Ok(());
        };
        let wqe = posted.wqe;
        qp.status.sq_ci = qp.status.sq_ci.wrapping_add(1);
        let ulpdus = if op.takes_ord_slot() {
            vec![qp.take_ord_slot(wqe)]
        } else {
            let msn = match op {
                SqOpcode::RdmaWrite => 0,
                _ => {
                    let msn = qp.msn.send;
                    qp.msn.send = msn.wrapping_add(1);
                    msn
                }
            };
            let payload = match source {
                Some(iova) => rnic.mem.read(iova, wqe.length as usize)?.to_vec(),
                None => Vec::new(),
            };
            request_ulpdus(&wqe, msn, &payload, qp.ctx.mulpdu).unwrap_or_default()
        };
        for ulpdu in ulpdus {
            self.transmit(side, qpn, ulpdu);
        }
        if !op.takes_ord_slot() && wqe.signaled {
            let cqe = sq_cqe(qpn, &wqe, CqeStatus::Success);
            self.rnics[side.index()].complete(qpn, Queue::Send, Expected::Exact(cqe));
        }
        Ok(())
    }

    /// The WQE at the head of the SQ failed its local checks: it completes
    /// with `status`, a Terminate replaces it on the wire (RFC 5040 §7.1
    /// case 1: Local Catastrophic, no headers), and the QP enters ERROR.
    /// The transmitter stops at this WQE, so the flush is exact.
    fn local_error(&mut self, side: Side, qpn: u32, status: CqeStatus) {
        let rnic = &mut self.rnics[side.index()];
        let qp = &mut rnic.qps[qpn as usize];
        let Some(posted) = qp.sq.pop_front() else {
            return;
        };
        qp.status.sq_ci = qp.status.sq_ci.wrapping_add(1);
        let cqe = sq_cqe(qpn, &posted.wqe, status);
        rnic.complete(qpn, Queue::Send, Expected::Exact(cqe));
        self.send_terminate(side, qpn, Terminate::new(TermCode::RDMA_LOCAL_CATASTROPHIC));
        self.rnics[side.index()].enter_error(qpn, ErrorCause::FLUSH);
    }
}

impl Qp {
    /// Takes an ORD slot for a Read or ATOMIC WQE and returns its request:
    /// the next QN 1 MSN (Read and Atomic Requests share it), and for an
    /// atomic the next Request Identifier.
    fn take_ord_slot(&mut self, wqe: SqWqe) -> Vec<u8> {
        let msn = self.msn.read_request;
        self.msn.read_request = msn.wrapping_add(1);
        let (awaiting, ulpdu) = if wqe.op() == Some(SqOpcode::Atomic) {
            let request_id = self.next_request_id;
            self.next_request_id = request_id.wrapping_add(1);
            let ulpdu = atomic_request_ulpdu(&wqe, msn, request_id);
            (Awaiting::Atomic { request_id }, ulpdu)
        } else {
            let request = read_request_of(&wqe);
            let ulpdu = Segment::read_request(msn, request).to_vec();
            (Awaiting::Read { request, placed: 0 }, ulpdu)
        };
        self.ord.push_back(Outstanding { wqe, msn, awaiting });
        ulpdu
    }
}
