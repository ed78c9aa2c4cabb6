//! # rnic-proto: the wire truth of the iWARP stack
//!
//! Byte-exact encoders and parsers for every protocol stage an iWARP RNIC
//! speaks, plus the masked atomic semantics of RFC 7306. The hardware and
//! the simulator are tested differentially against this crate, so every
//! function here follows the RFC text (not the drafts) to the octet.
//!
//! The modules follow the protocol stack from the wire upwards:
//!
//! | Module | Stage | Specification |
//! |---|---|---|
//! | [`cm`] | MPA Request/Reply frames (connection setup) | RFC 5044 §7.1, RFC 6581 §6, §9 |
//! | [`mpa`] | FPDU framing: length, PAD, markers, CRC32c | RFC 5044 §4 |
//! | [`ddp`] | DDP tagged / untagged headers | RFC 5041 §4 |
//! | [`rdmap`] | RDMAP control octet, opcode headers, whole segments | RFC 5040 §4, RFC 7306 §4–§6 |
//! | [`terminate`] | Terminate header and every layer/type/code | RFC 5040 §4.8, RFC 5041 §7.2, RFC 5044 §8, RFC 6581 §8 |
//! | [`atomic`] | FetchAdd / CmpSwap with masks | RFC 7306 §5.1 |
//! | [`host`] | BAR0 registers, QP/CQ/MR contexts, WQE and CQE descriptors | `docs/REGISTERS.md`, `docs/DESCRIPTORS.md` |
//! | [`model`] | message-level reference model of two connected RNICs | RFC 5040 §5–§7, RFC 5041 §5, §7 |
//! | [`pcap`] | packet captures of the streams as Ethernet/IPv4/TCP frames | libpcap format, RFC 793 |
//! | [`bridge`] | the board's serial bridge to BAR0, host memory and interrupts | this project (SLIP framing: RFC 1055) |
//!
//! Conventions shared by all modules:
//!
//! * Every multi-octet wire field is big-endian (network order). The single
//!   exception is the MPA CRC field, which carries the CRC32c value least
//!   significant octet first, exactly like an iSCSI digest (RFC 5044 §4.4,
//!   RFC 3720 B.4). The host interface ([`host`]: registers, contexts,
//!   descriptors in host memory) is little-endian, the host's order.
//! * Parsers never panic. Malformed input is reported as a typed error, and
//!   errors that have a Terminate meaning can be mapped to the
//!   Layer/EType/Code triplet through a `term_code()` method.
//! * Reserved fields are written as zero and ignored when read.
#![forbid(unsafe_code)]
#![deny(missing_docs)]

pub mod atomic;
pub mod bridge;
pub mod cm;
pub mod ddp;
#[cfg(any(test, feature = "fuzzing"))]
#[doc(hidden)]
pub mod fuzzing;
pub mod host;
pub mod model;
pub mod mpa;
pub mod pcap;
pub mod rdmap;
pub mod terminate;

pub use atomic::{masked_cmp_swap, masked_fetch_add, masked_fetch_add_bit_serial, AtomicOp};
pub use cm::{negotiate_framing, CmError, FrameKind, IrdOrd, MpaFrame, NegotiatedFraming};
pub use ddp::{DdpError, DdpHeader, TaggedHeader, UntaggedHeader};
pub use mpa::{
    build_fpdu, crc32c, crc_field, mulpdu, pad_len, Deframer, Framer, FramingConfig, Marker, MpaError, MARKER_INTERVAL,
};
pub use rdmap::{
    parse_ulpdu, AtomicRequest, AtomicResponse, Opcode, RdmapControl, RdmapError, RdmapHeader, ReadRequest, Segment,
};
pub use terminate::{TermCode, Terminate, TerminatedDdpHeader};
