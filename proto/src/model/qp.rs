//! The state of one QP in the model.

use super::wire::TxLog;
use crate::host::context::{QpContext, QpState, QpStatus, TermInfo};
use crate::host::desc::{RqWqe, SqWqe};
use crate::rdmap::ReadRequest;
use std::collections::VecDeque;

/// Next MSN of each untagged queue, per direction (RFC 5041 §4.3: one
/// counter per stream, direction and QN, starting at 1, wrapping).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Msns {
    /// QN 0, sent: Sends and Immediate Data.
    pub send: u32,
    /// QN 1, sent: Read Requests and Atomic Requests (one counter,
    /// RFC 7306 §5.2).
    pub read_request: u32,
    /// QN 2, sent: Terminate.
    pub terminate: u32,
    /// QN 3, sent: Atomic Responses.
    pub atomic_response: u32,
    /// QN 0, expected from the peer.
    pub recv: u32,
    /// QN 1, expected from the peer.
    pub read_request_recv: u32,
    /// QN 3, expected from the peer.
    pub atomic_response_recv: u32,
}

impl Default for Msns {
    fn default() -> Self {
        Msns {
            send: 1,
            read_request: 1,
            terminate: 1,
            atomic_response: 1,
            recv: 1,
            read_request_recv: 1,
            atomic_response_recv: 1,
        }
    }
}

/// An SQ WQE posted and not yet taken by the RNIC.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct Posted {
    /// Position in the fabric's global post order.
    pub id: u64,
    pub wqe: SqWqe,
}

/// An RDMA Read or an atomic whose request went out and whose response is
/// still due: one ORD slot.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct Outstanding {
    pub wqe: SqWqe,
    /// MSN of its request on QN 1, by which a Terminate names it.
    pub msn: u32,
    pub awaiting: Awaiting,
}

/// What an ORD slot waits for.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Awaiting {
    /// Read Response segments for this request.
    Read {
        request: ReadRequest,
        /// Response octets placed so far.
        placed: u32,
    },
    /// The Atomic Response echoing this Request Identifier.
    Atomic { request_id: u32 },
}

/// A receive buffer claimed by a Send whose last segment has not arrived.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct Receiving {
    pub wqe: RqWqe,
    pub msn: u32,
    /// Octets placed so far (the next MO).
    pub placed: u32,
}

/// One QP.
#[derive(Clone, Debug)]
pub struct Qp {
    pub(crate) ctx: QpContext,
    pub(crate) peer: Option<u32>,
    /// The peer is the test itself ([`Fabric::connect_external`](super::Fabric::connect_external)).
    pub(crate) external: bool,
    pub(crate) sq: VecDeque<Posted>,
    /// ORD slots in use, oldest first.
    pub(crate) ord: VecDeque<Outstanding>,
    /// Request Identifier of the next Atomic Request: the count of those
    /// sent, from 1, so it equals the QN 3 MSN of its response.
    pub(crate) next_request_id: u32,
    pub(crate) rq: VecDeque<RqWqe>,
    pub(crate) receiving: Option<Receiving>,
    pub(crate) status: QpStatus,
    pub(crate) msn: Msns,
    pub(crate) tx: TxLog,
}

impl Default for Qp {
    fn default() -> Self {
        Qp {
            ctx: QpContext::default(),
            peer: None,
            external: false,
            sq: VecDeque::new(),
            ord: VecDeque::new(),
            next_request_id: 1,
            rq: VecDeque::new(),
            receiving: None,
            status: QpStatus::default(),
            msn: Msns::default(),
            tx: TxLog::default(),
        }
    }
}

impl Qp {
    /// The context as last written (the state follows errors too).
    pub fn context(&self) -> &QpContext {
        &self.ctx
    }

    /// The state.
    pub fn state(&self) -> QpState {
        self.ctx.state
    }

    /// The connected QP on the other RNIC.
    pub fn peer(&self) -> Option<u32> {
        self.peer
    }

    /// Whether the test plays this QP's peer.
    pub fn external(&self) -> bool {
        self.external
    }

    /// What QUERY_QP reports after the context.
    pub fn status(&self) -> &QpStatus {
        &self.status
    }

    /// The first Terminate this QP sent or received.
    pub fn terminate(&self) -> Option<TermInfo> {
        self.status.terminate
    }

    /// Next MSNs.
    pub fn msns(&self) -> &Msns {
        &self.msn
    }

    /// Everything this QP transmitted since it was last reset.
    pub fn tx(&self) -> &TxLog {
        &self.tx
    }

    /// SQ WQEs posted and not yet taken (stalled, e.g. a Read with ORD 0).
    pub fn pending_sends(&self) -> usize {
        self.sq.len()
    }

    /// Reads and atomics whose response has not arrived (the peer dropped
    /// the request).
    pub fn outstanding_reads(&self) -> usize {
        self.ord.len()
    }

    /// Receive buffers posted and not yet consumed.
    pub fn pending_recvs(&self) -> usize {
        self.rq.len() + usize::from(self.receiving.is_some())
    }

    /// Back to RESET: every queue, index, MSN, Request Identifier and log
    /// cleared, no CQEs.
    pub(crate) fn reset(&mut self, ctx: QpContext) {
        *self = Qp { ctx, peer: self.peer, external: self.external, ..Qp::default() };
    }
}
