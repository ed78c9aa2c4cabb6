//! QP, CQ and MR contexts as the command interface carries them in
//! `CMD_DATA` (16 little-endian words), and STags.
//!
//! `to_words` writes a context into words 0–7 (the rest zero);
//! `from_words` reads it back, ignoring reserved bits and the query-only
//! words, and refuses values the RNIC cannot use with a [`ContextError`]
//! (the command then ends with `BAD_VALUE`). Query results append a status
//! ([`QpStatus`], [`CqStatus`]) in the words after the context.

use super::desc::{CQE_LEN, RQ_WQE_LEN, SQ_WQE_SLOT_LEN};
use super::field::Field;
use crate::mpa::MIN_MULPDU;
use crate::terminate::TermCode;

/// Largest `log_size` of a ring. Indices are free-running 32-bit counters,
/// so a ring must be at most half their range for the lap (and with it the
/// CQE phase) to alternate across the counter's wrap.
pub const MAX_LOG_SIZE: u8 = 31;
/// Alignment of `sq_base`: one SQ slot.
pub const SQ_BASE_ALIGN: u64 = SQ_WQE_SLOT_LEN as u64;
/// Alignment of `rq_base`: one RQ slot.
pub const RQ_BASE_ALIGN: u64 = RQ_WQE_LEN as u64;
/// Alignment of a CQ `base`: one CQE.
pub const CQ_BASE_ALIGN: u64 = CQE_LEN as u64;
/// The largest MR index: STags carry it in their upper 24 bits.
pub const MAX_MR_INDEX: u32 = (1 << 24) - 1;
/// The most RDMA Reads a QP has outstanding each way: its ORD and IRD are at most
/// this (the RNIC keeps a table of this many Reads per QP in each direction).
pub const MAX_READS: u8 = 16;

/// The STag of MR `index` with `key` (`index << 8 | key`). Local keys
/// (lkeys) name MRs the same way.
pub const fn stag(index: u32, key: u8) -> u32 {
    (index << 8) | key as u32
}

/// The MR index an STag names.
pub const fn stag_index(stag: u32) -> u32 {
    stag >> 8
}

/// The key of an STag (its low 8 bits).
pub const fn stag_key(stag: u32) -> u8 {
    stag as u8
}

/// A context value the RNIC cannot use.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum ContextError {
    /// QP state other than RESET, RTS or ERROR.
    #[error("QP state {0} is not RESET (0), RTS (1) or ERROR (2)")]
    QpState(u8),
    /// A ring larger than [`MAX_LOG_SIZE`] allows.
    #[error("{field} {value} exceeds {MAX_LOG_SIZE}")]
    LogSize {
        /// The field.
        field: &'static str,
        /// Its value.
        value: u8,
    },
    /// A ring base that is not aligned to its slot size.
    #[error("{field} {addr:#x} is not {align}-octet aligned")]
    Misaligned {
        /// The field.
        field: &'static str,
        /// The address.
        addr: u64,
        /// The required alignment.
        align: u64,
    },
    /// A QP in RTS whose MULPDU is below the RFC 5044 §4.5 floor (128),
    /// which also guarantees that every single-segment message fits.
    #[error("MULPDU {0} is below {MIN_MULPDU}")]
    Mulpdu(u16),
    /// An IRD or ORD above [`MAX_READS`].
    #[error("{field} {value} exceeds {MAX_READS}")]
    ReadDepth {
        /// The field.
        field: &'static str,
        /// Its value.
        value: u8,
    },
    /// A ring or region that runs past the end of the 64-bit address space.
    #[error("{field} range of {len} octets at {start:#x} wraps")]
    Wraps {
        /// The field.
        field: &'static str,
        /// First address.
        start: u64,
        /// Length in octets.
        len: u128,
    },
}

fn check_ring(field: &'static str, base: u64, log_size: u8, slot: u64, align: u64) -> Result<(), ContextError> {
    if log_size > MAX_LOG_SIZE {
        return Err(ContextError::LogSize { field, value: log_size });
    }
    if !base.is_multiple_of(align) {
        return Err(ContextError::Misaligned { field, addr: base, align });
    }
    check_range(field, base, u128::from(slot) << log_size)
}

fn check_range(field: &'static str, start: u64, len: u128) -> Result<(), ContextError> {
    if u128::from(start) + len > 1u128 << 64 {
        return Err(ContextError::Wraps { field, start, len });
    }
    Ok(())
}

/// QP states (QP context w0 bits 3:0).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Default)]
#[repr(u8)]
pub enum QpState {
    /// Not in use; indices and MSNs are cleared.
    #[default]
    Reset = 0,
    /// Ready to send (and receive).
    Rts = 1,
    /// Stopped: new and outstanding work completes with FLUSHED.
    Error = 2,
}

impl QpState {
    /// Every state with its docs name.
    pub const ALL: [(QpState, &'static str); 3] =
        [(QpState::Reset, "RESET"), (QpState::Rts, "RTS"), (QpState::Error, "ERROR")];
}

impl TryFrom<u8> for QpState {
    type Error = ContextError;

    fn try_from(v: u8) -> Result<Self, ContextError> {
        match v {
            0 => Ok(QpState::Reset),
            1 => Ok(QpState::Rts),
            2 => Ok(QpState::Error),
            _ => Err(ContextError::QpState(v)),
        }
    }
}

/// QP context fields (CMD_DATA w0–w7) and QUERY_QP status fields (w8–w11).
pub mod qp_fields {
    use super::Field;
    /// QP state, see [`super::QpState`].
    pub const STATE: Field = Field::at_word("state", 0, 0, 4);
    /// MPA CRC32c on.
    pub const CRC_ENABLE: Field = Field::at_word("crc_enable", 0, 8, 1);
    /// MPA markers on the FPDUs this QP sends (RFC 5044 §7.1.1: the peer's M bit).
    pub const MARKERS_TX: Field = Field::at_word("markers_tx", 0, 9, 1);
    /// MPA markers on the FPDUs this QP receives (its own M bit).
    pub const MARKERS_RX: Field = Field::at_word("markers_rx", 0, 10, 1);
    /// Protection domain.
    pub const PD: Field = Field::at_word("pd", 0, 16, 16);
    /// Connection id: the `tuser` of the TCP streams.
    pub const CONN_ID: Field = Field::at_word("conn_id", 1, 0, 16);
    /// Largest ULPDU, DDP and RDMAP headers included.
    pub const MULPDU: Field = Field::at_word("mulpdu", 1, 16, 16);
    /// CQ of the SQ completions.
    pub const SEND_CQ: Field = Field::at_word("send_cq", 2, 0, 16);
    /// CQ of the RQ completions.
    pub const RECV_CQ: Field = Field::at_word("recv_cq", 2, 16, 16);
    /// log2 of the SQ slots.
    pub const SQ_LOG_SIZE: Field = Field::at_word("sq_log_size", 3, 0, 8);
    /// log2 of the RQ slots.
    pub const RQ_LOG_SIZE: Field = Field::at_word("rq_log_size", 3, 8, 8);
    /// Inbound RDMA Read Requests the QP accepts at once.
    pub const IRD: Field = Field::at_word("ird", 3, 16, 8);
    /// Outbound RDMA Read Requests the QP issues at once.
    pub const ORD: Field = Field::at_word("ord", 3, 24, 8);
    /// IOVA of SQ slot 0 (w4 low, w5 high).
    pub const SQ_BASE: Field = Field::at_word("sq_base", 4, 0, 64);
    /// IOVA of RQ slot 0 (w6 low, w7 high).
    pub const RQ_BASE: Field = Field::at_word("rq_base", 6, 0, 64);

    /// Query only: SQ WQEs the RNIC has taken.
    pub const SQ_CI: Field = Field::at_word("sq_ci", 8, 0, 32);
    /// Query only: RQ WQEs the RNIC has consumed.
    pub const RQ_CI: Field = Field::at_word("rq_ci", 9, 0, 32);
    /// Query only: Terminate error code.
    pub const TERM_CODE: Field = Field::at_word("term_code", 10, 8, 8);
    /// Query only: Terminate error type.
    pub const TERM_ETYPE: Field = Field::at_word("term_etype", 10, 16, 4);
    /// Query only: Terminate layer.
    pub const TERM_LAYER: Field = Field::at_word("term_layer", 10, 24, 4);
    /// Query only: the Terminate came from the peer (0: this QP sent it).
    pub const TERM_RECEIVED: Field = Field::at_word("term_received", 10, 30, 1);
    /// Query only: the terminate fields are valid.
    pub const TERM_VALID: Field = Field::at_word("term_valid", 10, 31, 1);

    /// The context fields, in word order.
    pub const CONTEXT: &[Field] = &[
        STATE,
        CRC_ENABLE,
        MARKERS_TX,
        MARKERS_RX,
        PD,
        CONN_ID,
        MULPDU,
        SEND_CQ,
        RECV_CQ,
        SQ_LOG_SIZE,
        RQ_LOG_SIZE,
        IRD,
        ORD,
        SQ_BASE,
        RQ_BASE,
    ];
    /// The status fields QUERY_QP adds.
    pub const STATUS: &[Field] = &[SQ_CI, RQ_CI, TERM_CODE, TERM_ETYPE, TERM_LAYER, TERM_RECEIVED, TERM_VALID];
}

/// A QP context (CMD_DATA w0–w7).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Default)]
pub struct QpContext {
    /// State.
    pub state: QpState,
    /// MPA CRC32c on.
    pub crc_enable: bool,
    /// MPA markers on the FPDUs this QP sends.
    pub markers_tx: bool,
    /// MPA markers on the FPDUs this QP receives.
    pub markers_rx: bool,
    /// Protection domain.
    pub pd: u16,
    /// Connection id (`tuser` of the streams).
    pub conn_id: u16,
    /// Largest ULPDU in octets, DDP and RDMAP headers included.
    pub mulpdu: u16,
    /// CQ for SQ completions.
    pub send_cq: u16,
    /// CQ for RQ completions.
    pub recv_cq: u16,
    /// The SQ has `2^sq_log_size` slots of 128 octets.
    pub sq_log_size: u8,
    /// The RQ has `2^rq_log_size` slots of 32 octets.
    pub rq_log_size: u8,
    /// Inbound Read Request limit.
    pub ird: u8,
    /// Outbound Read Request limit.
    pub ord: u8,
    /// IOVA of the SQ, 128-octet aligned.
    pub sq_base: u64,
    /// IOVA of the RQ, 32-octet aligned.
    pub rq_base: u64,
}

impl QpContext {
    /// The CMD_DATA words (w8–w15 zero).
    pub fn to_words(&self) -> [u32; 16] {
        use qp_fields as f;
        let mut w = [0u32; 16];
        f::STATE.set_word(&mut w, self.state as u64);
        f::CRC_ENABLE.set_word(&mut w, self.crc_enable.into());
        f::MARKERS_TX.set_word(&mut w, self.markers_tx.into());
        f::MARKERS_RX.set_word(&mut w, self.markers_rx.into());
        f::PD.set_word(&mut w, self.pd.into());
        f::CONN_ID.set_word(&mut w, self.conn_id.into());
        f::MULPDU.set_word(&mut w, self.mulpdu.into());
        f::SEND_CQ.set_word(&mut w, self.send_cq.into());
        f::RECV_CQ.set_word(&mut w, self.recv_cq.into());
        f::SQ_LOG_SIZE.set_word(&mut w, self.sq_log_size.into());
        f::RQ_LOG_SIZE.set_word(&mut w, self.rq_log_size.into());
        f::IRD.set_word(&mut w, self.ird.into());
        f::ORD.set_word(&mut w, self.ord.into());
        f::SQ_BASE.set_word(&mut w, self.sq_base);
        f::RQ_BASE.set_word(&mut w, self.rq_base);
        w
    }

    /// Reads and checks a context; w8–w15 and reserved bits are ignored.
    pub fn from_words(w: &[u32; 16]) -> Result<Self, ContextError> {
        use qp_fields as f;
        let ctx = QpContext {
            state: QpState::try_from(f::STATE.get_word(w) as u8)?,
            crc_enable: f::CRC_ENABLE.get_word(w) != 0,
            markers_tx: f::MARKERS_TX.get_word(w) != 0,
            markers_rx: f::MARKERS_RX.get_word(w) != 0,
            pd: f::PD.get_word(w) as u16,
            conn_id: f::CONN_ID.get_word(w) as u16,
            mulpdu: f::MULPDU.get_word(w) as u16,
            send_cq: f::SEND_CQ.get_word(w) as u16,
            recv_cq: f::RECV_CQ.get_word(w) as u16,
            sq_log_size: f::SQ_LOG_SIZE.get_word(w) as u8,
            rq_log_size: f::RQ_LOG_SIZE.get_word(w) as u8,
            ird: f::IRD.get_word(w) as u8,
            ord: f::ORD.get_word(w) as u8,
            sq_base: f::SQ_BASE.get_word(w),
            rq_base: f::RQ_BASE.get_word(w),
        };
        ctx.validate()?;
        Ok(ctx)
    }

    /// The checks of [`QpContext::from_words`]: ring sizes and alignment,
    /// and a usable MULPDU once the QP is in RTS (a RESET context may
    /// still be all zeros).
    pub fn validate(&self) -> Result<(), ContextError> {
        check_ring("sq_log_size", self.sq_base, self.sq_log_size, SQ_WQE_SLOT_LEN as u64, SQ_BASE_ALIGN)?;
        check_ring("rq_log_size", self.rq_base, self.rq_log_size, RQ_WQE_LEN as u64, RQ_BASE_ALIGN)?;
        if self.state == QpState::Rts && usize::from(self.mulpdu) < MIN_MULPDU {
            return Err(ContextError::Mulpdu(self.mulpdu));
        }
        for (field, value) in [("ird", self.ird), ("ord", self.ord)] {
            if value > MAX_READS {
                return Err(ContextError::ReadDepth { field, value });
            }
        }
        Ok(())
    }
}

/// The Terminate a QP sent or received first (QUERY_QP w10).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct TermInfo {
    /// Layer / error type / error code.
    pub code: TermCode,
    /// True when the peer sent it; false when this QP did.
    pub received: bool,
}

/// What QUERY_QP reports after the context (w8–w11).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Default)]
pub struct QpStatus {
    /// SQ WQEs the RNIC has taken from the ring (free-running).
    pub sq_ci: u32,
    /// RQ WQEs the RNIC has consumed (free-running).
    pub rq_ci: u32,
    /// The first Terminate of this QP, if any.
    pub terminate: Option<TermInfo>,
}

impl QpStatus {
    /// Writes w8–w11 (w11 reserved, zero).
    pub fn write_words(&self, w: &mut [u32; 16]) {
        use qp_fields as f;
        f::SQ_CI.set_word(w, self.sq_ci.into());
        f::RQ_CI.set_word(w, self.rq_ci.into());
        w[10] = 0;
        w[11] = 0;
        if let Some(t) = self.terminate {
            f::TERM_VALID.set_word(w, 1);
            f::TERM_RECEIVED.set_word(w, t.received.into());
            f::TERM_LAYER.set_word(w, t.code.layer.into());
            f::TERM_ETYPE.set_word(w, t.code.etype.into());
            f::TERM_CODE.set_word(w, t.code.code.into());
        }
    }

    /// Reads w8–w11.
    pub fn from_words(w: &[u32; 16]) -> Self {
        use qp_fields as f;
        let terminate = (f::TERM_VALID.get_word(w) != 0).then(|| TermInfo {
            code: TermCode::new(
                f::TERM_LAYER.get_word(w) as u8,
                f::TERM_ETYPE.get_word(w) as u8,
                f::TERM_CODE.get_word(w) as u8,
            ),
            received: f::TERM_RECEIVED.get_word(w) != 0,
        });
        QpStatus { sq_ci: f::SQ_CI.get_word(w) as u32, rq_ci: f::RQ_CI.get_word(w) as u32, terminate }
    }
}

/// CQ context fields (w0–w3) and QUERY_CQ status fields (w4–w5).
pub mod cq_fields {
    use super::Field;
    /// log2 of the CQE slots.
    pub const LOG_SIZE: Field = Field::at_word("log_size", 0, 0, 8);
    /// The CQ accepts completions.
    pub const ENABLE: Field = Field::at_word("enable", 0, 8, 1);
    /// Interrupt vector.
    pub const VECTOR: Field = Field::at_word("vector", 0, 16, 16);
    /// IOVA of slot 0 (w1 low, w2 high).
    pub const BASE: Field = Field::at_word("base", 1, 0, 64);
    /// Query only: CQEs written (free-running).
    pub const PI: Field = Field::at_word("pi", 4, 0, 32);
    /// Query only: a CQE found the ring full.
    pub const OVERFLOW: Field = Field::at_word("overflow", 5, 0, 1);

    /// The context fields, in word order.
    pub const CONTEXT: &[Field] = &[LOG_SIZE, ENABLE, VECTOR, BASE];
    /// The status fields QUERY_CQ adds.
    pub const STATUS: &[Field] = &[PI, OVERFLOW];
}

/// A CQ context (CMD_DATA w0–w3).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Default)]
pub struct CqContext {
    /// The ring has `2^log_size` CQEs of 32 octets.
    pub log_size: u8,
    /// The CQ accepts completions.
    pub enable: bool,
    /// Interrupt vector.
    pub vector: u16,
    /// IOVA of the ring, 32-octet aligned.
    pub base: u64,
}

impl CqContext {
    /// The CMD_DATA words (w4–w15 zero).
    pub fn to_words(&self) -> [u32; 16] {
        use cq_fields as f;
        let mut w = [0u32; 16];
        f::LOG_SIZE.set_word(&mut w, self.log_size.into());
        f::ENABLE.set_word(&mut w, self.enable.into());
        f::VECTOR.set_word(&mut w, self.vector.into());
        f::BASE.set_word(&mut w, self.base);
        w
    }

    /// Reads and checks a context; w3–w15 and reserved bits are ignored.
    pub fn from_words(w: &[u32; 16]) -> Result<Self, ContextError> {
        use cq_fields as f;
        let ctx = CqContext {
            log_size: f::LOG_SIZE.get_word(w) as u8,
            enable: f::ENABLE.get_word(w) != 0,
            vector: f::VECTOR.get_word(w) as u16,
            base: f::BASE.get_word(w),
        };
        ctx.validate()?;
        Ok(ctx)
    }

    /// The checks of [`CqContext::from_words`]: ring size and alignment.
    pub fn validate(&self) -> Result<(), ContextError> {
        check_ring("log_size", self.base, self.log_size, CQE_LEN as u64, CQ_BASE_ALIGN)
    }
}

/// What QUERY_CQ reports after the context (w4–w5).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Default)]
pub struct CqStatus {
    /// CQEs written (free-running).
    pub pi: u32,
    /// A CQE found the ring full.
    pub overflow: bool,
}

impl CqStatus {
    /// Writes w4–w5.
    pub fn write_words(&self, w: &mut [u32; 16]) {
        cq_fields::PI.set_word(w, self.pi.into());
        w[5] = 0;
        cq_fields::OVERFLOW.set_word(w, self.overflow.into());
    }

    /// Reads w4–w5.
    pub fn from_words(w: &[u32; 16]) -> Self {
        CqStatus { pi: cq_fields::PI.get_word(w) as u32, overflow: cq_fields::OVERFLOW.get_word(w) != 0 }
    }
}

/// MR context fields (w0–w6; w7 reserved).
pub mod mr_fields {
    use super::Field;
    /// The key: the low 8 bits of the STag.
    pub const KEY: Field = Field::at_word("key", 0, 0, 8);
    /// The RNIC may write the region for local work (receive buffers, Read sinks).
    pub const LOCAL_WRITE: Field = Field::at_word("local_write", 0, 8, 1);
    /// The peer may read it (RDMA Read source).
    pub const REMOTE_READ: Field = Field::at_word("remote_read", 0, 9, 1);
    /// The peer may write it (RDMA Write target).
    pub const REMOTE_WRITE: Field = Field::at_word("remote_write", 0, 10, 1);
    /// The peer may run atomics on it.
    pub const REMOTE_ATOMIC: Field = Field::at_word("remote_atomic", 0, 11, 1);
    /// The entry is valid.
    pub const VALID: Field = Field::at_word("valid", 0, 15, 1);
    /// Protection domain.
    pub const PD: Field = Field::at_word("pd", 0, 16, 16);
    /// Tagged offset of the first octet (w1 low, w2 high).
    pub const VA: Field = Field::at_word("va", 1, 0, 64);
    /// Length in octets (w3 low, w4 high).
    pub const LENGTH: Field = Field::at_word("length", 3, 0, 64);
    /// IOVA of the first octet (w5 low, w6 high).
    pub const IOVA: Field = Field::at_word("iova", 5, 0, 64);

    /// The context fields, in word order.
    pub const CONTEXT: &[Field] =
        &[KEY, LOCAL_WRITE, REMOTE_READ, REMOTE_WRITE, REMOTE_ATOMIC, VALID, PD, VA, LENGTH, IOVA];
}

/// Access rights of an MR.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Default)]
pub struct MrAccess {
    /// Receive buffers and Read sinks.
    pub local_write: bool,
    /// RDMA Read source.
    pub remote_read: bool,
    /// RDMA Write target.
    pub remote_write: bool,
    /// Atomic target.
    pub remote_atomic: bool,
}

impl MrAccess {
    /// Every right.
    pub const ALL: MrAccess =
        MrAccess { local_write: true, remote_read: true, remote_write: true, remote_atomic: true };
}

/// An MR context (CMD_DATA w0–w7).
///
/// A tagged offset `to` in `[va, va + length)` maps to the DMA address
/// `iova + (to − va)`: regions are IOVA-contiguous.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Default)]
pub struct MrContext {
    /// Key (low 8 bits of the STag).
    pub key: u8,
    /// Rights.
    pub access: MrAccess,
    /// The entry is valid.
    pub valid: bool,
    /// Protection domain.
    pub pd: u16,
    /// Tagged offset of the first octet.
    pub va: u64,
    /// Length in octets.
    pub length: u64,
    /// IOVA of the first octet.
    pub iova: u64,
}

impl MrContext {
    /// The CMD_DATA words (w7–w15 zero).
    pub fn to_words(&self) -> [u32; 16] {
        use mr_fields as f;
        let mut w = [0u32; 16];
        f::KEY.set_word(&mut w, self.key.into());
        f::LOCAL_WRITE.set_word(&mut w, self.access.local_write.into());
        f::REMOTE_READ.set_word(&mut w, self.access.remote_read.into());
        f::REMOTE_WRITE.set_word(&mut w, self.access.remote_write.into());
        f::REMOTE_ATOMIC.set_word(&mut w, self.access.remote_atomic.into());
        f::VALID.set_word(&mut w, self.valid.into());
        f::PD.set_word(&mut w, self.pd.into());
        f::VA.set_word(&mut w, self.va);
        f::LENGTH.set_word(&mut w, self.length);
        f::IOVA.set_word(&mut w, self.iova);
        w
    }

    /// Reads and checks a context (neither the TO range nor the IOVA range
    /// may run past 2^64); w7–w15 and reserved bits are ignored.
    pub fn from_words(w: &[u32; 16]) -> Result<Self, ContextError> {
        use mr_fields as f;
        let ctx = MrContext {
            key: f::KEY.get_word(w) as u8,
            access: MrAccess {
                local_write: f::LOCAL_WRITE.get_word(w) != 0,
                remote_read: f::REMOTE_READ.get_word(w) != 0,
                remote_write: f::REMOTE_WRITE.get_word(w) != 0,
                remote_atomic: f::REMOTE_ATOMIC.get_word(w) != 0,
            },
            valid: f::VALID.get_word(w) != 0,
            pd: f::PD.get_word(w) as u16,
            va: f::VA.get_word(w),
            length: f::LENGTH.get_word(w),
            iova: f::IOVA.get_word(w),
        };
        ctx.validate()?;
        Ok(ctx)
    }

    /// The checks of [`MrContext::from_words`].
    pub fn validate(&self) -> Result<(), ContextError> {
        check_range("va", self.va, self.length.into())?;
        check_range("iova", self.iova, self.length.into())
    }

    /// True when `[to, to + len)` lies inside the region (never true for a
    /// range that wraps).
    pub fn contains(&self, to: u64, len: u64) -> bool {
        let end = u128::from(to) + u128::from(len);
        to >= self.va && end <= u128::from(self.va) + u128::from(self.length)
    }

    /// The IOVA of tagged offset `to` (which must lie inside the region).
    pub fn iova_of(&self, to: u64) -> u64 {
        self.iova.wrapping_add(to.wrapping_sub(self.va))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn stag_helpers() {
        assert_eq!(stag(0x12_3456, 0x78), 0x1234_5678);
        assert_eq!(stag_index(0x1234_5678), 0x12_3456);
        assert_eq!(stag_key(0x1234_5678), 0x78);
    }

    #[test]
    fn mr_contains_up_to_the_last_octet_of_the_address_space() {
        let mr = MrContext { va: u64::MAX - 15, length: 16, ..MrContext::default() };
        assert!(mr.contains(u64::MAX - 15, 16));
        assert!(mr.contains(u64::MAX, 1));
        assert!(!mr.contains(u64::MAX, 2));
        assert!(!mr.contains(u64::MAX - 16, 1));
    }
}
