//! RDMAP (RFC 5040) and its RFC 7306 extensions on the wire.
//!
//! RDMAP rides in DDP segments: its control octet is DDP's `RsvdULP[0:7]`
//! (`RV(2) | Rsv(2) | Opcode(4)`), the Invalidate STag is `RsvdULP[8:39]` of
//! an untagged header, and some opcodes carry a fixed RDMAP header right after
//! the DDP header:
//!
//! * [`headers`]: Read Request (28 octets), Atomic Request (52), Atomic
//!   Response (12);
//! * [`segment`]: a whole parsed segment and [`parse_ulpdu`];
//! * this file: opcodes, the control octet, queue numbers and errors.
//!
//! The Terminate header lives in [`crate::terminate`].

pub mod headers;
pub mod segment;

pub use headers::{AtomicRequest, AtomicResponse, ReadRequest};
pub use segment::{parse_ulpdu, RdmapHeader, Segment};

use crate::ddp::DdpError;
use crate::terminate::TermCode;

/// RV = 01b: RFC 5040 RDMAP (00b is the RDMA Consortium dialect, not supported).
pub const RDMAP_VERSION: u8 = 1;

/// Untagged queue for Sends, Send variants and Immediate Data (RFC 7306 §10.2).
pub const QN_SEND: u32 = 0;
/// Untagged queue for RDMA Read Requests and Atomic Requests.
pub const QN_READ_ATOMIC_REQUEST: u32 = 1;
/// Untagged queue for Terminate.
pub const QN_TERMINATE: u32 = 2;
/// Untagged queue for Atomic Responses.
pub const QN_ATOMIC_RESPONSE: u32 = 3;

/// Octets of Immediate Data in an Immediate Data message (RFC 7306 §6.3).
pub const IMMEDIATE_DATA_LEN: usize = 8;

/// RDMAP opcodes (RFC 5040 Fig. 4, RFC 7306 Fig. 2 and §10; CHECKLIST §0.1).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
#[repr(u8)]
pub enum Opcode {
    /// 0x0, tagged.
    RdmaWrite = 0x0,
    /// 0x1, untagged on QN 1.
    ReadRequest = 0x1,
    /// 0x2, tagged.
    ReadResponse = 0x2,
    /// 0x3, untagged on QN 0.
    Send = 0x3,
    /// 0x4, untagged on QN 0, Invalidate STag valid.
    SendInvalidate = 0x4,
    /// 0x5, untagged on QN 0.
    SendSolicited = 0x5,
    /// 0x6, untagged on QN 0, Invalidate STag valid.
    SendSolicitedInvalidate = 0x6,
    /// 0x7, untagged on QN 2.
    Terminate = 0x7,
    /// 0x8 (RFC 7306), untagged on QN 0.
    ImmediateData = 0x8,
    /// 0x9 (RFC 7306), untagged on QN 0.
    ImmediateDataSolicited = 0x9,
    /// 0xA (RFC 7306), untagged on QN 1.
    AtomicRequest = 0xA,
    /// 0xB (RFC 7306), untagged on QN 3.
    AtomicResponse = 0xB,
}

impl Opcode {
    /// Every opcode, in numeric order.
    pub const ALL: [Opcode; 12] = [
        Opcode::RdmaWrite,
        Opcode::ReadRequest,
        Opcode::ReadResponse,
        Opcode::Send,
        Opcode::SendInvalidate,
        Opcode::SendSolicited,
        Opcode::SendSolicitedInvalidate,
        Opcode::Terminate,
        Opcode::ImmediateData,
        Opcode::ImmediateDataSolicited,
        Opcode::AtomicRequest,
        Opcode::AtomicResponse,
    ];

    /// The 4-bit opcode value.
    pub fn code(self) -> u8 {
        self as u8
    }

    /// The T flag this opcode must travel with.
    pub fn is_tagged(self) -> bool {
        matches!(self, Opcode::RdmaWrite | Opcode::ReadResponse)
    }

    /// The queue number of an untagged opcode; `None` for tagged ones.
    pub fn queue(self) -> Option<u32> {
        match self {
            Opcode::RdmaWrite | Opcode::ReadResponse => None,
            Opcode::ReadRequest | Opcode::AtomicRequest => Some(QN_READ_ATOMIC_REQUEST),
            Opcode::Terminate => Some(QN_TERMINATE),
            Opcode::AtomicResponse => Some(QN_ATOMIC_RESPONSE),
            Opcode::Send
            | Opcode::SendInvalidate
            | Opcode::SendSolicited
            | Opcode::SendSolicitedInvalidate
            | Opcode::ImmediateData
            | Opcode::ImmediateDataSolicited => Some(QN_SEND),
        }
    }

    /// True when the Invalidate STag field is meaningful (RFC 5040 §4.1).
    pub fn has_invalidate_stag(self) -> bool {
        matches!(self, Opcode::SendInvalidate | Opcode::SendSolicitedInvalidate)
    }

    /// True for the opcodes that ask for a solicited event.
    pub fn is_solicited(self) -> bool {
        matches!(self, Opcode::SendSolicited | Opcode::SendSolicitedInvalidate | Opcode::ImmediateDataSolicited)
    }

    /// True for the opcodes that carry ULP payload after their headers.
    pub fn has_payload(self) -> bool {
        matches!(
            self,
            Opcode::RdmaWrite
                | Opcode::ReadResponse
                | Opcode::Send
                | Opcode::SendInvalidate
                | Opcode::SendSolicited
                | Opcode::SendSolicitedInvalidate
        )
    }

    /// Size of the fixed RDMAP header after the DDP header: `Some(0)` for
    /// none, `None` for the variable Terminate header.
    pub fn header_len(self) -> Option<usize> {
        match self {
            Opcode::ReadRequest => Some(ReadRequest::LEN),
            Opcode::AtomicRequest => Some(AtomicRequest::LEN),
            Opcode::AtomicResponse => Some(AtomicResponse::LEN),
            Opcode::ImmediateData | Opcode::ImmediateDataSolicited => Some(IMMEDIATE_DATA_LEN),
            Opcode::Terminate => None,
            _ => Some(0),
        }
    }
}

impl TryFrom<u8> for Opcode {
    type Error = RdmapError;

    /// Accepts 0x0–0xB; 0xC–0xF (and anything wider than 4 bits) is unknown.
    fn try_from(v: u8) -> Result<Self, RdmapError> {
        Opcode::ALL.get(usize::from(v)).copied().ok_or(RdmapError::UnknownOpcode(v))
    }
}

/// The RDMAP control octet `RV(2) | Rsv(2) | Opcode(4)` (RFC 5040 §4.1).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct RdmapControl {
    /// RDMAP version, 2 bits (01b for RFC 5040).
    pub rv: u8,
    /// The opcode.
    pub opcode: Opcode,
}

impl RdmapControl {
    /// RV = 01b with the given opcode.
    pub fn new(opcode: Opcode) -> Self {
        RdmapControl { rv: RDMAP_VERSION, opcode }
    }

    /// The wire octet (Rsv bits zero).
    pub fn to_byte(self) -> u8 {
        ((self.rv & 3) << 6) | self.opcode.code()
    }

    /// Parses the octet: RV must be 01b (CHECKLIST RDMAP-02), the opcode
    /// known (RDMAP-03); the Rsv bits are ignored (RDMAP-01).
    pub fn parse(b: u8) -> Result<Self, RdmapError> {
        let rv = b >> 6;
        if rv != RDMAP_VERSION {
            return Err(RdmapError::Version(rv));
        }
        let opcode = Opcode::try_from(b & 0x0F)?;
        Ok(RdmapControl { rv, opcode })
    }
}

/// Errors found while parsing an RDMAP segment.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum RdmapError {
    /// The DDP header is bad.
    #[error(transparent)]
    Ddp(#[from] DdpError),
    /// A fixed header or a Terminate field runs past the end of the segment.
    #[error("{what} truncated: need {needed} octets, got {got}")]
    Truncated {
        /// The structure that was cut short.
        what: &'static str,
        /// Octets needed.
        needed: usize,
        /// Octets available.
        got: usize,
    },
    /// An untagged segment names a queue RDMAP does not have (QN > 3).
    #[error("invalid DDP queue number {0}")]
    InvalidQn(u32),
    /// RV is not 01b.
    #[error("invalid RDMAP version {0}")]
    Version(u8),
    /// Opcode 0xC–0xF.
    #[error("unknown RDMAP opcode {0:#x}")]
    UnknownOpcode(u8),
    /// The opcode travels with the other T flag (CHECKLIST RDMAP-04).
    #[error("opcode {opcode:?} in a {} segment", if *.tagged { "tagged" } else { "untagged" })]
    TaggedMismatch {
        /// The opcode.
        opcode: Opcode,
        /// The T flag as received.
        tagged: bool,
    },
    /// The opcode travels on another queue (CHECKLIST RDMAP-04).
    #[error("opcode {opcode:?} on queue {qn}")]
    QueueMismatch {
        /// The opcode.
        opcode: Opcode,
        /// The QN as received.
        qn: u32,
    },
    /// A message that is always one segment (Read Request, Terminate, Atomic
    /// Request/Response) arrived with L = 0 or MO ≠ 0.
    #[error("opcode {opcode:?} must be a single segment (L=1, MO=0), got L={last} MO={mo}")]
    NotSingleSegment {
        /// The opcode.
        opcode: Opcode,
        /// The L flag as received.
        last: bool,
        /// The MO as received.
        mo: u32,
    },
    /// The segment's length does not fit the opcode's fixed header.
    #[error("opcode {opcode:?} needs {expected} octets after the DDP header, got {got}")]
    Length {
        /// The opcode.
        opcode: Opcode,
        /// Octets the opcode requires.
        expected: usize,
        /// Octets received.
        got: usize,
    },
    /// Immediate Data whose message length is not exactly 8 (CHECKLIST IMM-03).
    #[error("Immediate Data message of {message_len} octets (must be 8)")]
    ImmediateDataLength {
        /// Message length so far (MO + segment payload).
        message_len: u64,
    },
    /// An Atomic Request with an AOpCode this RNIC does not implement
    /// (0x1 Reserved, 0x3–0xF unassigned; CHECKLIST ATOM-04).
    #[error("unsupported atomic operation code {0:#x}")]
    UnsupportedAOpCode(u8),
}

impl RdmapError {
    /// The Terminate Layer/EType/Code this error calls for (CHECKLIST §0.3).
    ///
    /// Where the RFCs define no code the CHECKLIST recommendation is used:
    /// `0/2/0x06` for opcode/T/QN mismatches and unsupported AOpCodes,
    /// `0/2/0xFF` for length errors (including Immediate Data, IMM-03).
    pub fn term_code(&self) -> TermCode {
        match self {
            RdmapError::Ddp(e) => e.term_code(),
            RdmapError::InvalidQn(_) => TermCode::DDP_UNTAGGED_INVALID_QN,
            RdmapError::Version(_) => TermCode::RDMA_OP_INVALID_VERSION,
            RdmapError::UnknownOpcode(_)
            | RdmapError::TaggedMismatch { .. }
            | RdmapError::QueueMismatch { .. }
            | RdmapError::UnsupportedAOpCode(_) => TermCode::RDMA_OP_UNEXPECTED_OPCODE,
            RdmapError::Truncated { .. }
            | RdmapError::NotSingleSegment { .. }
            | RdmapError::Length { .. }
            | RdmapError::ImmediateDataLength { .. } => TermCode::RDMA_OP_UNSPECIFIED,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn opcode_round_trip() {
        for v in 0u8..=0xFF {
            match Opcode::try_from(v) {
                Ok(op) => assert_eq!(op.code(), v),
                Err(e) => {
                    assert!(v >= 0xC);
                    assert_eq!(e, RdmapError::UnknownOpcode(v));
                }
            }
        }
    }

    #[test]
    fn control_octet() {
        assert_eq!(RdmapControl::new(Opcode::Send).to_byte(), 0x43);
        assert_eq!(RdmapControl::parse(0x73).map(|c| c.opcode), Ok(Opcode::Send));
        assert_eq!(RdmapControl::parse(0x83), Err(RdmapError::Version(2)));
    }
}
