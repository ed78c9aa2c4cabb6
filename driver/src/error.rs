//! The driver's one error type.
use std::fmt;

use rnic_proto::host::regs::CmdResult;
use rnic_proto::host::{ContextError, DescError, QpState};

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
    /// Work posted to a QP in RESET, which would drop it.
    #[error("QP {qpn} is in {state:?}; work can be posted in RTS or ERROR only")]
    WrongState {
        /// The QP.
        qpn: u32,
        /// Its state.
        state: QpState,
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
    /// The backend failed.
    #[error(transparent)]
    Hal(#[from] HalError),
}
