//! Two RNICs with QPs connected one to one, and the run loop.
//!
//! Work runs in lock-step: SQ WQEs execute one at a time in the order they
//! were posted (across all QPs of both RNICs), and after each one every
//! message it caused — segments to the peer, Read Responses, Terminates —
//! is delivered and processed before the next WQE starts. Each direction
//! of a connection is an in-order stream.

use super::memory::MemoryError;
use super::rnic::{ErrorCause, Rnic, RnicConfig};
use crate::host::context::{QpState, TermInfo};
use crate::host::desc::{RqWqe, SqWqe};
use crate::rdmap::Segment;
use crate::terminate::{TermCode, Terminate, TerminatedDdpHeader};
use std::collections::VecDeque;

use super::qp::{Posted, Qp};

/// One of the two RNICs.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum Side {
    /// The first RNIC.
    A,
    /// The second RNIC.
    B,
}

impl Side {
    /// The other RNIC.
    pub fn peer(self) -> Side {
        match self {
            Side::A => Side::B,
            Side::B => Side::A,
        }
    }

    pub(crate) fn index(self) -> usize {
        self as usize
    }
}

/// A request the model cannot carry out: a harness mistake, not an RNIC
/// behaviour.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum ModelError {
    /// No such QP.
    #[error("{side:?} has no QP {qpn}")]
    NoQp {
        /// The RNIC.
        side: Side,
        /// The QP number.
        qpn: u32,
    },
    /// The QP is connected already.
    #[error("QP {qpn} of {side:?} is connected already")]
    Connected {
        /// The RNIC.
        side: Side,
        /// The QP number.
        qpn: u32,
    },
    /// Work posted to a QP in RTS that has no peer.
    #[error("QP {qpn} of {side:?} is not connected")]
    NotConnected {
        /// The RNIC.
        side: Side,
        /// The QP number.
        qpn: u32,
    },
    /// Work posted to a QP in RESET (hardware ignores its doorbells).
    #[error("QP {qpn} of {side:?} is in RESET")]
    InReset {
        /// The RNIC.
        side: Side,
        /// The QP number.
        qpn: u32,
    },
    /// More WQEs posted than the ring has slots.
    #[error("the {queue} of QP {qpn} of {side:?} is full")]
    QueueFull {
        /// The RNIC.
        side: Side,
        /// The QP number.
        qpn: u32,
        /// "SQ" or "RQ".
        queue: &'static str,
    },
    /// A DMA access outside the host memory regions.
    #[error(transparent)]
    Memory(#[from] MemoryError),
}

/// An SQ WQE's place in the global post order.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct Token {
    pub side: Side,
    pub qpn: u32,
    pub id: u64,
}

/// What became of a token.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Step {
    /// Its WQE was executed or flushed.
    Done,
    /// Its WQE is gone (flushed or reset earlier).
    Stale,
    /// Its WQE waits behind one that cannot proceed.
    Blocked,
}

/// A ULPDU on its way to a QP.
#[derive(Clone, Debug, PartialEq, Eq)]
struct Transit {
    to: Side,
    qpn: u32,
    ulpdu: Vec<u8>,
}

/// Two RNICs and the connections between their QPs.
#[derive(Clone, Debug)]
pub struct Fabric {
    pub(crate) rnics: [Rnic; 2],
    order: VecDeque<Token>,
    blocked: Vec<Token>,
    next_id: u64,
    wire: VecDeque<Transit>,
}

impl Fabric {
    /// Two RNICs of the same configuration, nothing connected.
    pub fn new(config: RnicConfig) -> Self {
        Fabric {
            rnics: [Rnic::new(config), Rnic::new(config)],
            order: VecDeque::new(),
            blocked: Vec::new(),
            next_id: 0,
            wire: VecDeque::new(),
        }
    }

    /// One RNIC.
    pub fn rnic(&self, side: Side) -> &Rnic {
        &self.rnics[side.index()]
    }

    /// One RNIC, for commands and host memory.
    pub fn rnic_mut(&mut self, side: Side) -> &mut Rnic {
        &mut self.rnics[side.index()]
    }

    fn qp_exists(&self, side: Side, qpn: u32) -> Result<(), ModelError> {
        match self.rnic(side).qp(qpn) {
            Some(_) => Ok(()),
            None => Err(ModelError::NoQp { side, qpn }),
        }
    }

    /// Connects QP `a` of RNIC A with QP `b` of RNIC B.
    pub fn connect(&mut self, a: u32, b: u32) -> Result<(), ModelError> {
        for (side, qpn) in [(Side::A, a), (Side::B, b)] {
            self.qp_exists(side, qpn)?;
            if self.rnic(side).qps[qpn as usize].peer.is_some() {
                return Err(ModelError::Connected { side, qpn });
            }
        }
        self.rnics[0].qps[a as usize].peer = Some(b);
        self.rnics[1].qps[b as usize].peer = Some(a);
        Ok(())
    }

    /// Makes the test the peer of QP `qpn` of `side`: what the QP transmits is logged
    /// ([`Qp::tx`]) and goes nowhere, what it receives the test hands it with
    /// [`Fabric::deliver`]. Its Reads and atomics do not wait for each other's responses
    /// (they cannot arrive within [`Fabric::run`]): up to ORD of them are outstanding at
    /// once, as on hardware.
    pub fn connect_external(&mut self, side: Side, qpn: u32) -> Result<(), ModelError> {
        self.qp_exists(side, qpn)?;
        let qp = &mut self.rnics[side.index()].qps[qpn as usize];
        if qp.peer.is_some() || qp.external {
            return Err(ModelError::Connected { side, qpn });
        }
        qp.external = true;
        Ok(())
    }

    /// Checks that a QP can take work and that its ring has room for one
    /// more WQE; `ring` gives the WQEs in the ring now and its log2 size.
    fn check_post(
        &self,
        side: Side,
        qpn: u32,
        queue: &'static str,
        ring: impl Fn(&Qp) -> (usize, u8),
    ) -> Result<(), ModelError> {
        let qp = self.rnic(side).qp(qpn).ok_or(ModelError::NoQp { side, qpn })?;
        match qp.ctx.state {
            QpState::Reset => return Err(ModelError::InReset { side, qpn }),
            QpState::Rts if qp.peer.is_none() && !qp.external => return Err(ModelError::NotConnected { side, qpn }),
            _ => {}
        }
        let (queued, log_size) = ring(qp);
        if queued as u64 >= 1u64 << log_size {
            return Err(ModelError::QueueFull { side, qpn, queue });
        }
        Ok(())
    }

    /// Posts an SQ WQE (written to its slot and announced by `SQ_PI`).
    pub fn post_send(&mut self, side: Side, qpn: u32, wqe: SqWqe) -> Result<(), ModelError> {
        self.check_post(side, qpn, "SQ", |qp| (qp.sq.len(), qp.ctx.sq_log_size))?;
        let id = self.next_id;
        self.next_id += 1;
        self.rnics[side.index()].qps[qpn as usize].sq.push_back(Posted { id, wqe });
        self.order.push_back(Token { side, qpn, id });
        Ok(())
    }

    /// Posts an RQ WQE (written to its slot and announced by `RQ_PI`).
    pub fn post_recv(&mut self, side: Side, qpn: u32, wqe: RqWqe) -> Result<(), ModelError> {
        self.check_post(side, qpn, "RQ", |qp| (qp.rq.len(), qp.ctx.rq_log_size))?;
        self.rnics[side.index()].qps[qpn as usize].rq.push_back(wqe);
        Ok(())
    }

    /// Runs to quiescence: every posted SQ WQE executes (or stays stalled
    /// behind a Read that cannot complete), and every QP in ERROR has
    /// flushed its queues. After an `Err` (a harness mistake) the state of
    /// the fabric is unspecified.
    pub fn run(&mut self) -> Result<(), ModelError> {
        let mut order: VecDeque<Token> = self.blocked.drain(..).chain(self.order.drain(..)).collect();
        while let Some(t) = order.pop_front() {
            if self.sq_step(t)? == Step::Blocked {
                self.blocked.push(t);
            }
            self.drain_wire()?;
        }
        for rnic in &mut self.rnics {
            for qpn in 0..rnic.qps.len() as u32 {
                let qp = &rnic.qps[qpn as usize];
                let idle = qp.sq.is_empty() && qp.rq.is_empty() && qp.ord.is_empty();
                if qp.ctx.state == QpState::Error && !idle {
                    rnic.enter_error(qpn, ErrorCause::FLUSH);
                }
            }
        }
        Ok(())
    }

    /// Hands a ULPDU to QP `qpn` of `side` as if its peer had sent it, and
    /// processes everything that follows (replies go to the peer, if it has
    /// one). This is how a test plays a misbehaving peer.
    pub fn deliver(&mut self, side: Side, qpn: u32, ulpdu: &[u8]) -> Result<(), ModelError> {
        self.qp_exists(side, qpn)?;
        self.receive(side, qpn, ulpdu)?;
        self.drain_wire()
    }

    /// The MPA layer under QP `qpn` of `side` failed its stream with `code` (layer 2, type
    /// 0: a CRC or marker error, RFC 5044 §8; a packet out of step with its FPDU or a ULPDU
    /// longer than the receive buffer, local catastrophic, RFC 6581 §8): a QP in RTS sends
    /// the Terminate, without headers, and enters ERROR, which drops everything its peer
    /// sends after; any other QP ignores it. Replies go to the peer, if it has one.
    pub fn deliver_mpa_error(&mut self, side: Side, qpn: u32, code: TermCode) -> Result<(), ModelError> {
        self.qp_exists(side, qpn)?;
        self.mpa_error(side, qpn, code);
        self.drain_wire()
    }

    fn drain_wire(&mut self) -> Result<(), ModelError> {
        while let Some(t) = self.wire.pop_front() {
            self.receive(t.to, t.qpn, &t.ulpdu)?;
        }
        Ok(())
    }

    /// Logs a ULPDU in the QP's transmit log and puts it on the wire to
    /// the peer (if any).
    pub(crate) fn transmit(&mut self, side: Side, qpn: u32, ulpdu: Vec<u8>) {
        let qp = &mut self.rnics[side.index()].qps[qpn as usize];
        qp.tx.push(ulpdu.clone());
        if let Some(peer) = qp.peer {
            self.wire.push_back(Transit { to: side.peer(), qpn: peer, ulpdu });
        }
    }

    /// Sends this QP's Terminate (QN 2) and remembers it for QUERY_QP.
    pub(crate) fn send_terminate(&mut self, side: Side, qpn: u32, t: Terminate) {
        let qp = &mut self.rnics[side.index()].qps[qpn as usize];
        let msn = qp.msn.terminate;
        qp.msn.terminate = msn.wrapping_add(1);
        qp.status.terminate.get_or_insert(TermInfo { code: t.code, received: false });
        self.transmit(side, qpn, Segment::terminate(msn, t).to_vec());
    }
}

/// A Terminate carrying the DDP header and segment length of the ULPDU it
/// reports (M = D = 1), when that header can be taken from it.
pub(crate) fn with_ddp_header(t: Terminate, ulpdu: &[u8]) -> Terminate {
    match TerminatedDdpHeader::from_segment(ulpdu) {
        Some(h) => t.with_ddp(u16::try_from(ulpdu.len()).unwrap_or(u16::MAX), h),
        None => t,
    }
}
