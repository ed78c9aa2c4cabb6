//! The driver's one error type.
use std::fmt;

use rnic_proto::host::context::{QpStatus, TermInfo};
use rnic_proto::host::regs::CmdResult;
use rnic_proto::host::{ContextError, DescError, QpState};
use rnic_proto::terminate::TermCode;

use crate::HalError;

/// Why the device refused a command (a `CMD_STATUS` result other than OK).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Rejection {
    /// BAD_OPCODE: the device does not know the command.
    BadOpcode,
    /// BAD_INDEX: no such QP, CQ or MR.
    BadIndex,
    /// BAD_STATE: not allowed in the object's state (for INVALIDATE_MR: the MR is not
    /// valid or has another key).
    BadState,
    /// BAD_VALUE: the context holds a value the device cannot use.
    BadValue,
    /// A result code the interface does not define.
    Unknown(u8),
}

impl Rejection {
    /// The rejection a `CMD_STATUS` result code stands for; `None` for OK.
    pub fn from_code(code: u8) -> Option<Rejection> {
        match CmdResult::try_from(code) {
            Ok(CmdResult::Ok) => None,
            Ok(CmdResult::BadOpcode) => Some(Rejection::BadOpcode),
            Ok(CmdResult::BadIndex) => Some(Rejection::BadIndex),
            Ok(CmdResult::BadState) => Some(Rejection::BadState),
            Ok(CmdResult::BadValue) => Some(Rejection::BadValue),
            Err(code) => Some(Rejection::Unknown(code)),
        }
    }
}

impl fmt::Display for Rejection {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let name = match self {
            Rejection::BadOpcode => "BAD_OPCODE",
            Rejection::BadIndex => "BAD_INDEX",
            Rejection::BadState => "BAD_STATE",
            Rejection::BadValue => "BAD_VALUE",
            Rejection::Unknown(code) => return write!(f, "unknown result {code}"),
        };
        f.write_str(name)
    }
}

/// The objects the driver hands out numbers for.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Resource {
    /// Queue pair numbers (`NUM_QPS`).
    QueuePair,
    /// Completion queue numbers (`NUM_CQS`).
    CompletionQueue,
    /// MR table entries (`NUM_MRS`).
    MemoryRegion,
    /// Protection domain numbers (16 bits).
    ProtectionDomain,
}

/// The two work queues of a QP.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum WorkQueue {
    /// The send queue.
    Send,
    /// The receive queue.
    Recv,
}

/// Everything that can go wrong in the driver. User mistakes are errors, never panics.
#[derive(Debug, thiserror::Error)]
pub enum DriverError {
    /// BAR0 `ID` does not read "RNIC": wrong device, or BAR0 is not mapped.
    #[error("BAR0 ID reads {0:#010x}, not an RNIC")]
    NotAnRnic(u32),
    /// The interface major version is not the one this driver speaks.
    #[error("interface version {found:#010x} is not supported (this driver speaks {supported:#010x})")]
    UnsupportedVersion {
        /// `VERSION` as read.
        found: u32,
        /// The version this driver was written for.
        supported: u32,
    },
    /// A geometry register reads more than the interface can address.
    #[error("{register} reads {value}, more than the interface allows ({max})")]
    BadGeometry {
        /// The register.
        register: &'static str,
        /// Its value.
        value: u32,
        /// The interface's limit.
        max: u32,
    },
    /// `CMD_STATUS` still said BUSY after the driver's poll budget. The device is
    /// wedged: a later command would be ignored while this one runs.
    #[error("command {opcode:#04x} on object {index} still busy after {polls} polls of CMD_STATUS")]
    CommandTimeout {
        /// The command's opcode.
        opcode: u8,
        /// The object index.
        index: u32,
        /// Polls made.
        polls: u32,
    },
    /// The device refused a command.
    #[error("command {opcode:#04x} on object {index} rejected: {reason}")]
    Rejected {
        /// The command's opcode.
        opcode: u8,
        /// The object index.
        index: u32,
        /// The result code.
        reason: Rejection,
    },
    /// An object index that does not fit the 24-bit `CMD` index field.
    #[error("object index {0:#x} does not fit the 24-bit command index")]
    IndexTooLarge(u32),
    /// Every number of this kind is in use.
    #[error("no free {0:?} number left")]
    Exhausted(Resource),
    /// A ring larger than the driver allows (see `MAX_QUEUE_LOG_SIZE`).
    #[error("{queue}: 2^{log_size} entries exceeds the driver's limit of 2^{max}")]
    QueueTooLarge {
        /// Which ring.
        queue: &'static str,
        /// Requested log2 of its entries.
        log_size: u8,
        /// The limit.
        max: u8,
    },
    /// QP parameters the device would refuse (checked before anything is allocated).
    #[error("invalid QP parameters: {0}")]
    InvalidQp(#[source] ContextError),
    /// A buffer range outside its memory region or DMA region.
    #[error("{len} octets at offset {offset} do not fit in {size} octets")]
    OutOfBounds {
        /// Offset of the range.
        offset: u64,
        /// Its length.
        len: u64,
        /// Size of what it must fit in.
        size: u64,
    },
    /// Not enough free slots in a work queue: the device has not taken enough WQEs yet.
    /// Nothing was posted.
    #[error("{queue:?} queue of QP {qpn}: {needed} slots needed, {free} free")]
    QueueFull {
        /// The QP.
        qpn: u32,
        /// Which queue.
        queue: WorkQueue,
        /// Slots the post needed.
        needed: usize,
        /// Slots free.
        free: u32,
    },
    /// A batch with more WQEs than the work queue has slots: it would never fit, however
    /// long the device runs. Nothing was posted.
    #[error("{queue:?} queue of QP {qpn}: {needed} WQEs never fit its {capacity} slots; post smaller batches")]
    BatchTooLarge {
        /// The QP.
        qpn: u32,
        /// Which queue.
        queue: WorkQueue,
        /// Slots the batch needs.
        needed: usize,
        /// Slots in the ring.
        capacity: u32,
    },
    /// Work posted to a QP in RESET, which would drop it.
    #[error("QP {qpn} is in {state:?}; work can be posted in RTS or ERROR only")]
    WrongState {
        /// The QP.
        qpn: u32,
        /// Its state.
        state: QpState,
    },
    /// A CONN_ID change asked of a QP that is not in RESET.
    #[error("QP {qpn} is in {state:?}; its CONN_ID can change in RESET only")]
    ConnIdOutsideReset {
        /// The QP.
        qpn: u32,
        /// Its state.
        state: QpState,
    },
    /// A local buffer whose lkey no live memory region of this device has: never
    /// registered, deregistered since, or registered on another device. Nothing was posted.
    #[error(
        "lkey {lkey:#010x} names no live memory region of this device; take Sges from a registered \
         MemoryRegion (MemoryRegion::sge)"
    )]
    UnknownLkey {
        /// The lkey.
        lkey: u32,
    },
    /// A local buffer in a memory region of another protection domain than the QP's.
    /// Nothing was posted.
    #[error("lkey {lkey:#010x} is in PD {mr_pd}, QP {qpn} in PD {qp_pd}; register the buffer in the QP's PD")]
    WrongPd {
        /// The QP.
        qpn: u32,
        /// The lkey.
        lkey: u32,
        /// The region's PD.
        mr_pd: u16,
        /// The QP's PD.
        qp_pd: u16,
    },
    /// A local buffer the device writes (a receive buffer, a Read's sink, an atomic's
    /// result) in a region registered without LOCAL_WRITE. Nothing was posted.
    #[error(
        "lkey {lkey:#010x} lacks LOCAL_WRITE, which receive buffers, Read sinks and atomic results need; \
         register the region with local_write"
    )]
    NoLocalWrite {
        /// The lkey.
        lkey: u32,
    },
    /// A local buffer that does not lie inside its memory region (or whose range runs
    /// past 2^64). Nothing was posted.
    #[error(
        "{len} octets at TO {addr:#x} leave lkey {lkey:#010x}'s {size} octets at TO {va:#x}; keep the buffer \
         inside its region (MemoryRegion::sge checks this)"
    )]
    SgeOutOfBounds {
        /// The lkey.
        lkey: u32,
        /// Tagged offset of the buffer.
        addr: u64,
        /// Octets the device would touch.
        len: u64,
        /// Tagged offset of the region's first octet.
        va: u64,
        /// The region's length.
        size: u64,
    },
    /// Work the QP can never carry out: a Read or an atomic on a QP created with ORD 0
    /// would stop its send queue for good. Nothing was posted.
    #[error("QP {qpn} has ORD 0: a Read or atomic would never be issued; create the QP with ord 1 or more")]
    NoReadCredits {
        /// The QP.
        qpn: u32,
    },
    /// A memory region whose IOVA range runs past the end of the 64-bit IOVA space, which
    /// the device refuses. Nothing was registered.
    #[error(
        "{len} octets at IOVA {iova:#x} run past the end of the 64-bit IOVA space; the backend must map \
         the memory lower"
    )]
    IovaWraps {
        /// IOVA of the first octet.
        iova: u64,
        /// Octets.
        len: u64,
    },
    /// A host memory region whose IOVA range overlaps the device memory window: the device
    /// would serve those IOVAs from its own RAM, not from the host. Nothing was registered.
    #[error(
        "{len} octets of host memory at IOVA {iova:#x} overlap the device memory window ({window_len} octets \
         at {window:#x}), which the device serves from its own RAM; the backend must map host memory elsewhere"
    )]
    IovaInDeviceMemory {
        /// IOVA of the first octet.
        iova: u64,
        /// Octets.
        len: u64,
        /// `DM_BASE`.
        window: u64,
        /// `DM_SIZE`.
        window_len: u32,
    },
    /// An object of another device was passed in.
    #[error("the {0} belongs to another device")]
    ForeignObject(&'static str),
    /// Not enough device memory free for an allocation (or a length of 0).
    #[error("{len} octets of device memory requested, {available} free")]
    OutOfDeviceMemory {
        /// Octets asked for.
        len: u64,
        /// Octets free (some may be unusable for alignment).
        available: u64,
    },
    /// A feature the device does not report in FEATURES.
    #[error("the device does not support {0}")]
    Unsupported(&'static str),
    /// A CQE the driver cannot decode (a device bug). It has been consumed.
    #[error("CQ {cqn} entry {index}: {source}")]
    MalformedCqe {
        /// The CQ.
        cqn: u32,
        /// Absolute index of the entry.
        index: u32,
        /// What is wrong with it.
        #[source]
        source: DescError,
    },
    /// A queried context the driver cannot decode (a device bug).
    #[error("the device returned an invalid context: {0}")]
    BadContext(#[source] ContextError),
    /// A stream ring size outside what the driver uses.
    #[error("a stream ring of 2^{log2} octets: the driver uses 2^{min} to 2^{max}")]
    BadRingSize {
        /// The size asked for, log2 octets.
        log2: u32,
        /// The smallest size, log2 octets.
        min: u32,
        /// The largest size, log2 octets.
        max: u32,
    },
    /// A stream ring stopped: on TX a DMA write failed; on RX a record was bad or a DMA
    /// read failed.
    #[error("the {ring} stream ring stopped (STATUS {status:#x})")]
    RingStopped {
        /// "TX" or "RX".
        ring: &'static str,
        /// Its STATUS register.
        status: u32,
    },
    /// A TX ring record the driver cannot take (a device bug): the ring is left as it is.
    #[error("TX stream ring record at {position}: {what}")]
    MalformedRecord {
        /// The record's ring position (free-running octets).
        position: u32,
        /// What is wrong with it.
        what: String,
    },
    /// An FPDU that cannot be an RX ring record: empty, or larger than the ring holds.
    #[error("an FPDU of {len} octets cannot be a record of a stream ring of {size} octets")]
    RecordSize {
        /// The FPDU's octets.
        len: usize,
        /// The ring's octets.
        size: usize,
    },
    /// The backend failed.
    #[error(transparent)]
    Hal(#[from] HalError),
}

/// Why a QP stopped, as the device reports it ([`crate::QueuePair::error`]).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum QpError {
    /// A Terminate ended the stream (RFC 5040 §4.8): sent by the peer, or by this QP
    /// because of an error it found. The device keeps the first one.
    Terminated {
        /// The peer sent it; otherwise this QP did.
        by_peer: bool,
        /// Its layer, error type and error code.
        code: TermCode,
        /// The QP's state (ERROR: outstanding and new work completes as FLUSHED).
        state: QpState,
    },
    /// In ERROR with no Terminate: the host moved it there ([`crate::QueuePair::modify`]),
    /// which flushes its work without telling the peer.
    Flushed,
}

impl QpError {
    /// What a QP in `state` with `status` (QUERY_QP) reports; `None` while it works.
    pub fn from_status(state: QpState, status: &QpStatus) -> Option<QpError> {
        match status.terminate {
            Some(TermInfo { code, received }) => Some(QpError::Terminated { by_peer: received, code, state }),
            None if state == QpState::Error => Some(QpError::Flushed),
            None => None,
        }
    }
}

impl fmt::Display for QpError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match *self {
            QpError::Terminated { by_peer, code, state } => {
                let who = if by_peer { "the peer" } else { "this QP" };
                write!(f, "{who} sent Terminate {code} ({}, {}): ", layer_name(code.layer), etype_name(code))?;
                match code.name() {
                    Some(name) => f.write_str(name)?,
                    None => write!(f, "error code {:#04x}, which no RFC defines", code.code)?,
                }
                write!(f, "; the QP is in {}", state_name(state))
            }
            QpError::Flushed => f.write_str("the QP is in ERROR without a Terminate: the host moved it there"),
        }
    }
}

impl std::error::Error for QpError {}

/// The state as `docs/REGISTERS.md` names it.
fn state_name(state: QpState) -> &'static str {
    match state {
        QpState::Reset => "RESET",
        QpState::Rts => "RTS",
        QpState::Error => "ERROR",
    }
}

/// RFC 5040 §4.8 layer names.
fn layer_name(layer: u8) -> &'static str {
    match layer {
        TermCode::LAYER_RDMA => "RDMAP",
        TermCode::LAYER_DDP => "DDP",
        TermCode::LAYER_LLP => "LLP (MPA)",
        _ => "unknown layer",
    }
}

/// RFC 5040 §4.8 error type names, per layer.
fn etype_name(code: TermCode) -> &'static str {
    match (code.layer, code.etype) {
        (TermCode::LAYER_RDMA, TermCode::ETYPE_RDMA_LOCAL_CATASTROPHIC) => "Local Catastrophic Error",
        (TermCode::LAYER_RDMA, TermCode::ETYPE_RDMA_REMOTE_PROTECTION) => "Remote Protection Error",
        (TermCode::LAYER_RDMA, TermCode::ETYPE_RDMA_REMOTE_OPERATION) => "Remote Operation Error",
        (TermCode::LAYER_DDP, TermCode::ETYPE_DDP_LOCAL_CATASTROPHIC) => "Local Catastrophic Error",
        (TermCode::LAYER_DDP, TermCode::ETYPE_DDP_TAGGED) => "Tagged Buffer Error",
        (TermCode::LAYER_DDP, TermCode::ETYPE_DDP_UNTAGGED) => "Untagged Buffer Error",
        (TermCode::LAYER_DDP, TermCode::ETYPE_DDP_RSVD_LLP) => "reserved for the LLP",
        (TermCode::LAYER_LLP, TermCode::ETYPE_LLP_MPA) => "MPA Error",
        _ => "unknown error type",
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_qp_error_names_the_terminate_by_layer_type_and_code() {
        let sent = QpError::Terminated { by_peer: false, code: TermCode::MPA_CRC, state: QpState::Error };
        assert_eq!(
            sent.to_string(),
            "this QP sent Terminate 2/0/0x02 (LLP (MPA), MPA Error): Received MPA CRC does not match; the QP is in ERROR"
        );
        let rdma =
            QpError::Terminated { by_peer: true, code: TermCode::RDMA_PROT_ACCESS_RIGHTS, state: QpState::Error };
        assert!(rdma.to_string().contains("(RDMAP, Remote Protection Error): Access rights violation"), "{rdma}");
        let unknown = QpError::Terminated { by_peer: true, code: TermCode::new(5, 9, 0x42), state: QpState::Error };
        assert_eq!(
            unknown.to_string(),
            "the peer sent Terminate 5/9/0x42 (unknown layer, unknown error type): error code 0x42, which no RFC \
             defines; the QP is in ERROR"
        );
    }

    #[test]
    fn misuse_messages_name_the_object_and_the_fix_on_one_line() {
        assert_eq!(
            DriverError::UnknownLkey { lkey: 0x105 }.to_string(),
            "lkey 0x00000105 names no live memory region of this device; take Sges from a registered MemoryRegion \
             (MemoryRegion::sge)"
        );
        let out = DriverError::SgeOutOfBounds { lkey: 0x105, addr: 0x1100, len: 8, va: 0x1000, size: 256 };
        assert_eq!(
            out.to_string(),
            "8 octets at TO 0x1100 leave lkey 0x00000105's 256 octets at TO 0x1000; keep the buffer inside its \
             region (MemoryRegion::sge checks this)"
        );
    }

    #[test]
    fn the_status_says_terminated_flushed_or_nothing() {
        let term = TermInfo { code: TermCode::DDP_UNTAGGED_NO_BUFFER, received: true };
        let terminated = QpStatus { terminate: Some(term), ..QpStatus::default() };
        assert_eq!(
            QpError::from_status(QpState::Error, &terminated),
            Some(QpError::Terminated { by_peer: true, code: TermCode::DDP_UNTAGGED_NO_BUFFER, state: QpState::Error })
        );
        assert_eq!(QpError::from_status(QpState::Error, &QpStatus::default()), Some(QpError::Flushed));
        assert_eq!(QpError::from_status(QpState::Rts, &QpStatus::default()), None);
        assert_eq!(QpError::from_status(QpState::Reset, &QpStatus::default()), None);
    }
}
