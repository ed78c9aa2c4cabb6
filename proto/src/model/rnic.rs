//! One RNIC of the model: its host memory, MR table, QPs and CQs, the
//! command interface, and what happens when a QP enters ERROR.

use super::access::{check_access, Right};
use super::cq::{Cq, Expected, Queue};
use super::memory::HostMemory;
use super::qp::Qp;
use crate::atomic::OPERAND_LEN;
use crate::host::context::{CqContext, CqStatus, MrContext, QpContext, QpState};
use crate::host::desc::{Cqe, CqeOpcode, CqeStatus, RqWqe, SqOpcode, SqWqe};
use crate::host::regs::{self, CmdOpcode, CmdResult};
use crate::terminate::TermCode;

/// Sizes and capabilities of an RNIC (what its read-only registers report).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct RnicConfig {
    /// `NUM_QPS`.
    pub num_qps: u32,
    /// `NUM_CQS`.
    pub num_cqs: u32,
    /// `NUM_MRS`.
    pub num_mrs: u32,
    /// `DATAPATH_BYTES`.
    pub datapath_bytes: u32,
    /// `FEATURES`.
    pub features: u32,
    /// `DM_SIZE`: octets of device memory (0: none).
    pub dm_size: u32,
    /// `DM_BASE_LO`/`DM_BASE_HI`: the device memory's IOVA.
    pub dm_base: u64,
}

impl Default for RnicConfig {
    /// The default build: 64 QPs, 64 CQs, 256 MRs, 8 octets per cycle, CRC,
    /// markers, RFC 7306 atomics and Immediate Data, 32 KiB of device memory
    /// (FEATURES is what the default hardware build reports).
    fn default() -> Self {
        let mut features = [0u32];
        regs::features::CRC.set_word(&mut features, 1);
        regs::features::MARKERS.set_word(&mut features, 1);
        regs::features::ATOMICS.set_word(&mut features, 1);
        regs::features::IMMEDIATE.set_word(&mut features, 1);
        regs::features::DEVICE_MEMORY.set_word(&mut features, 1);
        RnicConfig {
            num_qps: regs::DEFAULT_NUM_QPS,
            num_cqs: regs::DEFAULT_NUM_CQS,
            num_mrs: regs::DEFAULT_NUM_MRS,
            datapath_bytes: regs::DEFAULT_DATAPATH_BYTES,
            features: features[0],
            dm_size: regs::DEFAULT_DM_SIZE,
            dm_base: regs::DEFAULT_DM_BASE,
        }
    }
}

/// What a QP's own checks say about an SQ WQE before it is transmitted.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Outcome {
    /// It goes out.
    Transmit {
        /// What it is.
        op: SqOpcode,
        /// The IOVA of its payload (Sends and Writes of non-zero length).
        source: Option<u64>,
    },
    /// A Read or atomic with ORD 0: it can never be issued, and the SQ
    /// stops there.
    Stall,
    /// It completes in error with this status.
    Fail(CqeStatus),
}

/// The local checks of an SQ WQE: a supported opcode, then the local
/// buffer it touches (lkey, PD, LOCAL_WRITE for a sink, no wrap, bounds),
/// then an ORD slot for a Read or atomic.
pub fn local_outcome(mrs: &[MrContext], ctx: &QpContext, wqe: &SqWqe) -> Outcome {
    let Some(op) = wqe.op().filter(|op| op.is_supported()) else {
        return Outcome::Fail(CqeStatus::BadOpcode);
    };
    let mut source = None;
    if let Some((len, right)) = local_buffer(op, wqe) {
        match check_access(mrs, ctx.pd, wqe.lkey, wqe.local_addr, len, right) {
            Ok(iova) => source = (right == Right::LocalRead).then_some(iova),
            Err(_) => return Outcome::Fail(CqeStatus::LocalProtection),
        }
    }
    if op.takes_ord_slot() && ctx.ord == 0 {
        return Outcome::Stall;
    }
    Outcome::Transmit { op, source }
}

/// The local buffer a WQE touches, as a length and the right it needs;
/// `None` when it touches none. A zero-length WQE is not checked at all,
/// Immediate Data carries its octets in the WQE, and an atomic always
/// writes its 8-octet original value, whatever `length` says.
fn local_buffer(op: SqOpcode, wqe: &SqWqe) -> Option<(u64, Right)> {
    let len = u64::from(wqe.length);
    match op {
        SqOpcode::Imm | SqOpcode::ImmSe => None,
        SqOpcode::Atomic => Some((OPERAND_LEN as u64, Right::LocalWrite)),
        _ if len == 0 => None,
        SqOpcode::RdmaRead => Some((len, Right::LocalWrite)),
        _ => Some((len, Right::LocalRead)),
    }
}

/// The status of the outstanding Read or atomic a received Terminate
/// names, by the Terminate's class: protection and tagged-buffer errors
/// are REMOTE_ACCESS, operation and untagged-buffer errors
/// REMOTE_OPERATION, anything else (catastrophic, LLP) TERMINATED.
pub fn terminated_read_status(code: TermCode) -> CqeStatus {
    match (code.layer, code.etype) {
        (TermCode::LAYER_RDMA, TermCode::ETYPE_RDMA_REMOTE_PROTECTION)
        | (TermCode::LAYER_DDP, TermCode::ETYPE_DDP_TAGGED) => CqeStatus::RemoteAccess,
        (TermCode::LAYER_RDMA, TermCode::ETYPE_RDMA_REMOTE_OPERATION)
        | (TermCode::LAYER_DDP, TermCode::ETYPE_DDP_UNTAGGED) => CqeStatus::RemoteOperation,
        _ => CqeStatus::Terminated,
    }
}

/// The completion of an SQ WQE: `byte_len` is
/// [`SqWqe::completed_len`] on success, 0 otherwise; an opcode the
/// interface does not define reports SEND.
pub fn sq_cqe(qpn: u32, wqe: &SqWqe, status: CqeStatus) -> Cqe {
    let opcode = wqe.op().map_or(CqeOpcode::Send, SqOpcode::cqe_opcode);
    let mut c = Cqe::new(wqe.wr_id, qpn as u16, opcode, status);
    if status == CqeStatus::Success {
        c.byte_len = wqe.completed_len();
    }
    c
}

/// The completion of a receive in error (`byte_len` 0).
pub(crate) fn rq_cqe(qpn: u32, wqe: &RqWqe, status: CqeStatus) -> Cqe {
    Cqe::new(wqe.wr_id, qpn as u16, CqeOpcode::Recv, status)
}

/// How a QP enters ERROR.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct ErrorCause {
    /// The error came from the peer's direction (an incoming message or a
    /// received Terminate), so pending Sends and Writes may already have
    /// been transmitted by hardware.
    pub racy: bool,
    /// The outstanding Read or atomic a received Terminate names (QN 1
    /// MSN) and its status.
    pub read: Option<(u32, CqeStatus)>,
    /// Status of the receive a Send in progress had claimed.
    pub receiving: CqeStatus,
}

impl ErrorCause {
    /// Everything pending completes FLUSHED, exactly.
    pub const FLUSH: ErrorCause = ErrorCause { racy: false, read: None, receiving: CqeStatus::Flushed };
}

/// One RNIC.
#[derive(Clone, Debug)]
pub struct Rnic {
    /// The host memory its DMA reaches.
    pub mem: HostMemory,
    pub(crate) config: RnicConfig,
    pub(crate) mrs: Vec<MrContext>,
    pub(crate) qps: Vec<Qp>,
    pub(crate) cqs: Vec<Cq>,
}

impl Rnic {
    /// An RNIC with every object in its reset state and no host memory.
    pub fn new(config: RnicConfig) -> Self {
        Rnic {
            mem: HostMemory::new(),
            config,
            mrs: vec![MrContext::default(); config.num_mrs as usize],
            qps: vec![Qp::default(); config.num_qps as usize],
            cqs: vec![Cq::default(); config.num_cqs as usize],
        }
    }

    /// The configuration.
    pub fn config(&self) -> &RnicConfig {
        &self.config
    }

    /// The value of an identity or capability register (ID … FEATURES, DM_*);
    /// `None` for any other offset.
    pub fn identity_register(&self, offset: u32) -> Option<u32> {
        Some(match offset {
            regs::ID => regs::ID_VALUE,
            regs::VERSION => regs::VERSION_VALUE,
            regs::DATAPATH_BYTES => self.config.datapath_bytes,
            regs::NUM_QPS => self.config.num_qps,
            regs::NUM_CQS => self.config.num_cqs,
            regs::NUM_MRS => self.config.num_mrs,
            regs::FEATURES => self.config.features,
            regs::DM_SIZE => self.config.dm_size,
            regs::DM_BASE_LO => self.config.dm_base as u32,
            regs::DM_BASE_HI => (self.config.dm_base >> 32) as u32,
            _ => return None,
        })
    }

    /// The MR table.
    pub fn mrs(&self) -> &[MrContext] {
        &self.mrs
    }

    /// QP `qpn`.
    pub fn qp(&self, qpn: u32) -> Option<&Qp> {
        self.qps.get(qpn as usize)
    }

    /// CQ `cqn`.
    pub fn cq(&self, cqn: u32) -> Option<&Cq> {
        self.cqs.get(cqn as usize)
    }

    /// Runs a command as the command interface does: `opcode` and `index`
    /// from `CMD`, `data` from `CMD_DATA`. Returns the result and
    /// `CMD_DATA` afterwards (a query's output; otherwise unchanged). Checks go
    /// opcode, index, value, state: the first failing one is the result.
    pub fn command(&mut self, opcode: u8, index: u32, data: &[u32; 16]) -> (CmdResult, [u32; 16]) {
        let Ok(op) = CmdOpcode::try_from(opcode) else {
            return (CmdResult::BadOpcode, *data);
        };
        // The object must exist before its new context is even looked at.
        let objects = match op {
            CmdOpcode::WriteQp | CmdOpcode::QueryQp => self.config.num_qps,
            CmdOpcode::WriteCq | CmdOpcode::QueryCq => self.config.num_cqs,
            CmdOpcode::WriteMr | CmdOpcode::QueryMr | CmdOpcode::InvalidateMr => self.config.num_mrs,
        };
        if index >= objects {
            return (CmdResult::BadIndex, *data);
        }
        let bad_value = |_| CmdResult::BadValue;
        let result = match op {
            CmdOpcode::WriteQp => {
                QpContext::from_words(data).map_err(bad_value).and_then(|ctx| self.write_qp(index, &ctx))
            }
            CmdOpcode::WriteCq => {
                CqContext::from_words(data).map_err(bad_value).and_then(|ctx| self.write_cq(index, &ctx))
            }
            CmdOpcode::WriteMr => {
                MrContext::from_words(data).map_err(bad_value).and_then(|ctx| self.write_mr(index, &ctx))
            }
            CmdOpcode::InvalidateMr => self.invalidate_mr(index, data[0] as u8),
            CmdOpcode::QueryQp => return self.answer(self.query_qp(index), data),
            CmdOpcode::QueryCq => return self.answer(self.query_cq(index), data),
            CmdOpcode::QueryMr => return self.answer(self.query_mr(index), data),
        };
        (result.err().unwrap_or(CmdResult::Ok), *data)
    }

    fn answer(&self, r: Result<[u32; 16], CmdResult>, data: &[u32; 16]) -> (CmdResult, [u32; 16]) {
        match r {
            Ok(words) => (CmdResult::Ok, words),
            Err(e) => (e, *data),
        }
    }

    /// WRITE_QP. CQ numbers must exist (BAD_VALUE). Base addresses and ring
    /// sizes may change only while the QP is in RESET, and an ERROR QP goes
    /// back to RTS only through RESET (BAD_STATE). Writing RESET clears the
    /// queues, indices and MSNs; writing ERROR flushes the queues (no
    /// Terminate is sent).
    pub fn write_qp(&mut self, qpn: u32, ctx: &QpContext) -> Result<(), CmdResult> {
        let num_cqs = self.config.num_cqs;
        let qp = self.qps.get_mut(qpn as usize).ok_or(CmdResult::BadIndex)?;
        ctx.validate().map_err(|_| CmdResult::BadValue)?;
        if u32::from(ctx.send_cq) >= num_cqs || u32::from(ctx.recv_cq) >= num_cqs {
            return Err(CmdResult::BadValue);
        }
        let old = qp.ctx;
        let layout = |c: &QpContext| (c.sq_base, c.rq_base, c.sq_log_size, c.rq_log_size);
        let relayout = layout(&old) != layout(ctx) && old.state != QpState::Reset;
        if relayout || (old.state, ctx.state) == (QpState::Error, QpState::Rts) {
            return Err(CmdResult::BadState);
        }
        match ctx.state {
            QpState::Reset => qp.reset(*ctx),
            QpState::Rts => qp.ctx = *ctx,
            QpState::Error => {
                qp.ctx = *ctx;
                self.enter_error(qpn, ErrorCause::FLUSH);
            }
        }
        Ok(())
    }

    /// QUERY_QP: the context (w0–w7) and its status (w8–w11).
    pub fn query_qp(&self, qpn: u32) -> Result<[u32; 16], CmdResult> {
        let qp = self.qp(qpn).ok_or(CmdResult::BadIndex)?;
        let mut w = qp.ctx.to_words();
        qp.status.write_words(&mut w);
        Ok(w)
    }

    /// WRITE_CQ. Writing a context with ENABLE clear empties the CQ (its
    /// producer index and OVERFLOW go back to 0).
    pub fn write_cq(&mut self, cqn: u32, ctx: &CqContext) -> Result<(), CmdResult> {
        let cq = self.cqs.get_mut(cqn as usize).ok_or(CmdResult::BadIndex)?;
        ctx.validate().map_err(|_| CmdResult::BadValue)?;
        if !ctx.enable {
            *cq = Cq::default();
        }
        cq.ctx = *ctx;
        Ok(())
    }

    /// QUERY_CQ: the context (w0–w3) and its status (w4–w5). The model
    /// does not track the host's consumer index, so OVERFLOW stays 0.
    pub fn query_cq(&self, cqn: u32) -> Result<[u32; 16], CmdResult> {
        let cq = self.cq(cqn).ok_or(CmdResult::BadIndex)?;
        let mut w = cq.ctx.to_words();
        CqStatus { pi: cq.entries.len() as u32, overflow: false }.write_words(&mut w);
        Ok(w)
    }

    /// WRITE_MR (allowed at any time).
    pub fn write_mr(&mut self, index: u32, ctx: &MrContext) -> Result<(), CmdResult> {
        let mr = self.mrs.get_mut(index as usize).ok_or(CmdResult::BadIndex)?;
        ctx.validate().map_err(|_| CmdResult::BadValue)?;
        *mr = *ctx;
        Ok(())
    }

    /// QUERY_MR.
    pub fn query_mr(&self, index: u32) -> Result<[u32; 16], CmdResult> {
        self.mrs.get(index as usize).map(MrContext::to_words).ok_or(CmdResult::BadIndex)
    }

    /// INVALIDATE_MR: BAD_STATE unless the MR is valid and has this key.
    pub fn invalidate_mr(&mut self, index: u32, key: u8) -> Result<(), CmdResult> {
        let mr = self.mrs.get_mut(index as usize).ok_or(CmdResult::BadIndex)?;
        if !mr.valid || mr.key != key {
            return Err(CmdResult::BadState);
        }
        mr.valid = false;
        Ok(())
    }

    /// Writes a completion to the CQ of QP `qpn`'s queue.
    pub(crate) fn complete(&mut self, qpn: u32, queue: Queue, e: Expected) {
        let Some(qp) = self.qps.get(qpn as usize) else {
            return;
        };
        let cqn = match queue {
            Queue::Send => qp.ctx.send_cq,
            Queue::Recv => qp.ctx.recv_cq,
        };
        if let Some(cq) = self.cqs.get_mut(usize::from(cqn)) {
            cq.push(e);
        }
    }

    /// Moves QP `qpn` to ERROR and completes all its work, in queue order:
    /// outstanding Reads and atomics (the one `cause` names with its
    /// status), SQ WQEs not yet taken, the receive a Send in progress
    /// claimed, the other receives. All FLUSHED unless `cause` says
    /// otherwise.
    pub(crate) fn enter_error(&mut self, qpn: u32, cause: ErrorCause) {
        let Some(qp) = self.qps.get_mut(qpn as usize) else {
            return;
        };
        qp.ctx.state = QpState::Error;
        let mut done = Vec::new();
        for r in qp.ord.drain(..) {
            let status = match cause.read {
                Some((msn, status)) if msn == r.msn => status,
                _ => CqeStatus::Flushed,
            };
            done.push((Queue::Send, Expected::Exact(sq_cqe(qpn, &r.wqe, status))));
        }
        let mut racy = cause.racy;
        for p in qp.sq.drain(..) {
            let flushed = sq_cqe(qpn, &p.wqe, CqeStatus::Flushed);
            let e =
                if racy { racy_flush(&self.mrs, &qp.ctx, qpn, &p.wqe, &mut racy) } else { Expected::Exact(flushed) };
            qp.status.sq_ci = qp.status.sq_ci.wrapping_add(1);
            done.push((Queue::Send, e));
        }
        if let Some(r) = qp.receiving.take() {
            done.push((Queue::Recv, Expected::Exact(rq_cqe(qpn, &r.wqe, cause.receiving))));
            qp.status.rq_ci = qp.status.rq_ci.wrapping_add(1);
        }
        for w in qp.rq.drain(..) {
            done.push((Queue::Recv, Expected::Exact(rq_cqe(qpn, &w, CqeStatus::Flushed))));
            qp.status.rq_ci = qp.status.rq_ci.wrapping_add(1);
        }
        for (queue, e) in done {
            self.complete(qpn, queue, e);
        }
    }
}

/// The expectation for a pending SQ WQE flushed on an event from the
/// peer's direction. Hardware may have sent it first: a Send, Write or
/// Immediate Data then completes as sent; a Read or atomic is flushed
/// either way (the peer drops its request, or its response, once it is in
/// ERROR). Once a WQE could not have gone out (it stalls or fails
/// locally), nothing after it could either, and `racy` turns off.
fn racy_flush(mrs: &[MrContext], ctx: &QpContext, qpn: u32, wqe: &SqWqe, racy: &mut bool) -> Expected {
    let flushed = sq_cqe(qpn, wqe, CqeStatus::Flushed);
    match local_outcome(mrs, ctx, wqe) {
        Outcome::Transmit { op, .. } if op.takes_ord_slot() => Expected::Exact(flushed),
        Outcome::Transmit { .. } => {
            Expected::FlushedOrSent { flushed, sent: wqe.signaled.then(|| sq_cqe(qpn, wqe, CqeStatus::Success)) }
        }
        Outcome::Stall => {
            *racy = false;
            Expected::Exact(flushed)
        }
        Outcome::Fail(status) => {
            *racy = false;
            Expected::FlushedOrSent { flushed, sent: Some(sq_cqe(qpn, wqe, status)) }
        }
    }
}
