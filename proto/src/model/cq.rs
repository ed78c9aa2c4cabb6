//! Completion queues of the model, and checking observed CQEs against them.
//!
//! CQE order is defined per QP and per queue only: completions of different
//! QPs sharing a CQ, and the SQ and RQ completions of one QP, interleave as
//! timing has it. So a CQ's expectation is a set of ordered lists, one per
//! (QPN, [`Queue`]), and [`Cq::check`] splits an observed CQE list the same
//! way before comparing.
//!
//! After an error some completions depend on timing too (see the
//! [`crate::model`] docs): those are [`Expected::FlushedOrSent`].

use crate::host::context::CqContext;
use crate::host::desc::Cqe;
use std::collections::BTreeSet;

/// The queue a completion belongs to.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum Queue {
    /// The SQ.
    Send,
    /// The RQ.
    Recv,
}

impl Queue {
    /// The queue of a CQE, from its opcode.
    pub fn of(cqe: &Cqe) -> Queue {
        if cqe.opcode.is_receive() {
            Queue::Recv
        } else {
            Queue::Send
        }
    }
}

/// One completion the model predicts.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Expected {
    /// Exactly this CQE.
    Exact(Cqe),
    /// The model flushed this SQ WQE because its QP entered ERROR on an
    /// event from the peer's direction. Hardware may have transmitted it
    /// before that event; it then completes as `sent` instead, or leaves
    /// no CQE at all (`None`: unsignaled and successful).
    FlushedOrSent {
        /// The FLUSHED completion the model wrote.
        flushed: Cqe,
        /// The completion if it went out first.
        sent: Option<Cqe>,
    },
}

impl Expected {
    /// The CQE the model itself wrote.
    pub fn cqe(&self) -> &Cqe {
        match self {
            Expected::Exact(c) => c,
            Expected::FlushedOrSent { flushed, .. } => flushed,
        }
    }
}

/// Where an observed CQ list departs from the expectation.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
#[error("QP {qpn} {queue:?} completion {position}: expected {expected:?}, observed {observed:?}")]
pub struct CqMismatch {
    /// The QP.
    pub qpn: u16,
    /// The queue.
    pub queue: Queue,
    /// Index in the observed list of that QP and queue.
    pub position: usize,
    /// What the model expects there (`None`: nothing more).
    pub expected: Option<Expected>,
    /// What was observed there (`None`: nothing more).
    pub observed: Option<Cqe>,
}

/// A completion queue: its context and the completions written to it.
#[derive(Clone, Debug, Default)]
pub struct Cq {
    pub(crate) ctx: CqContext,
    pub(crate) entries: Vec<Expected>,
    pub(crate) dropped: u64,
}

impl Cq {
    /// The context.
    pub fn context(&self) -> &CqContext {
        &self.ctx
    }

    /// Every completion in the order the model wrote them.
    pub fn expected(&self) -> &[Expected] {
        &self.entries
    }

    /// The CQEs the model wrote (PHASE clear: it depends on the ring
    /// position, which depends on the cross-QP interleaving).
    pub fn cqes(&self) -> Vec<Cqe> {
        self.entries.iter().map(|e| *e.cqe()).collect()
    }

    /// The ordered expectation for one QP and queue.
    pub fn expected_for(&self, qpn: u16, queue: Queue) -> Vec<Expected> {
        self.entries.iter().filter(|e| e.cqe().qpn == qpn && Queue::of(e.cqe()) == queue).copied().collect()
    }

    /// Completions that arrived while the CQ was not enabled (discarded).
    pub fn dropped(&self) -> u64 {
        self.dropped
    }

    pub(crate) fn push(&mut self, e: Expected) {
        if self.ctx.enable {
            self.entries.push(e);
        } else {
            self.dropped += 1;
        }
    }

    /// Checks an observed CQE list (in the order the hardware wrote it)
    /// against the model: per QP and queue, the same completions in the same
    /// order, nothing missing and nothing extra. PHASE is not compared.
    pub fn check(&self, observed: &[Cqe]) -> Result<(), Box<CqMismatch>> {
        self.check_except(observed, &[])
    }

    /// [`Cq::check`] for every QP but those in `skip` (whose completions, expected or
    /// observed, are left out).
    pub fn check_except(&self, observed: &[Cqe], skip: &[u16]) -> Result<(), Box<CqMismatch>> {
        let clear = |c: &Cqe| Cqe { phase: false, ..*c };
        let keys: BTreeSet<(u16, Queue)> = self
            .entries
            .iter()
            .map(Expected::cqe)
            .chain(observed)
            .filter(|c| !skip.contains(&c.qpn))
            .map(|c| (c.qpn, Queue::of(c)))
            .collect();
        for (qpn, queue) in keys {
            let expected = self.expected_for(qpn, queue);
            let obs: Vec<Cqe> = observed.iter().filter(|c| c.qpn == qpn && Queue::of(c) == queue).map(clear).collect();
            if let Err((position, e)) = match_list(&expected, &obs) {
                return Err(Box::new(CqMismatch {
                    qpn,
                    queue,
                    position,
                    expected: e.and_then(|i| expected.get(i).copied()),
                    observed: obs.get(position).copied(),
                }));
            }
        }
        Ok(())
    }
}

/// Walks one QP's and queue's expectation and observation together. On a
/// mismatch, returns the observed position and the expectation's index
/// (`None` when the observation is longer).
fn match_list(expected: &[Expected], observed: &[Cqe]) -> Result<(), (usize, Option<usize>)> {
    let mut at = 0;
    for (i, e) in expected.iter().enumerate() {
        let next = observed.get(at);
        let ok = match e {
            Expected::Exact(c) => next == Some(c),
            Expected::FlushedOrSent { flushed, sent } => match sent {
                _ if next == Some(flushed) => true,
                Some(s) => next == Some(s),
                // Unsignaled and sent: no CQE, so nothing is consumed.
                None => continue,
            },
        };
        if !ok {
            return Err((at, Some(i)));
        }
        at += 1;
    }
    match observed.get(at) {
        None => Ok(()),
        Some(_) => Err((at, None)),
    }
}
