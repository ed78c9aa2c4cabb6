//! The Terminate message header (RFC 5040 §4.8) and every Layer / Error
//! Type / Error Code it can carry (RFC 5040 Fig. 9, RFC 5041 §7.2,
//! RFC 5044 §8, RFC 6581 §8; CHECKLIST §0.3).
//!
//! Layout, all big-endian, nothing padded between fields:
//!
//! ```text
//! control word  Layer<<28 | EType<<24 | Code<<16 | M<<15 | D<<14 | R<<13 | Reserved(13)
//! u16           DDP Segment Length        present when M or D is set
//! 14/18 octets  Terminated DDP Header     present when D is set (14 if its T bit is 1)
//! 28 octets     Terminated RDMA Header    present when R is set (a Read Request header)
//! ```
//!
//! Parsing is liberal: reserved bits are ignored, unknown layer/type/code
//! values are kept as raw numbers, and the terminated DDP header is kept as
//! raw octets because it may be exactly the malformed header being reported.

use crate::ddp::{DdpError, DdpHeader, TaggedHeader, UntaggedHeader, T_FLAG};
use crate::rdmap::{RdmapError, ReadRequest};

/// A Terminate Layer / Error Type / Error Code triplet (`L/T/C`).
///
/// The fields are raw so that unknown values survive a parse; the associated
/// constants name every value defined by the RFCs.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Default)]
pub struct TermCode {
    /// Layer, 4 bits: 0 RDMA, 1 DDP, 2 LLP.
    pub layer: u8,
    /// Error Type, 4 bits.
    pub etype: u8,
    /// Error Code, 8 bits.
    pub code: u8,
}

/// M bit of the control word: DDP Segment Length valid.
pub const M_BIT: u32 = 1 << 15;
/// D bit of the control word: Terminated DDP Header included.
pub const D_BIT: u32 = 1 << 14;
/// R bit of the control word: Terminated RDMA Header included.
pub const R_BIT: u32 = 1 << 13;

const fn tc(layer: u8, etype: u8, code: u8) -> TermCode {
    TermCode { layer, etype, code }
}

impl TermCode {
    /// Layer 0: RDMAP.
    pub const LAYER_RDMA: u8 = 0;
    /// Layer 1: DDP.
    pub const LAYER_DDP: u8 = 1;
    /// Layer 2: the LLP (MPA).
    pub const LAYER_LLP: u8 = 2;

    /// RDMA Error Type 0: Local Catastrophic Error (no code; any value accepted).
    pub const ETYPE_RDMA_LOCAL_CATASTROPHIC: u8 = 0;
    /// RDMA Error Type 1: Remote Protection Error.
    pub const ETYPE_RDMA_REMOTE_PROTECTION: u8 = 1;
    /// RDMA Error Type 2: Remote Operation Error.
    pub const ETYPE_RDMA_REMOTE_OPERATION: u8 = 2;
    /// DDP Error Type 0: Local Catastrophic.
    pub const ETYPE_DDP_LOCAL_CATASTROPHIC: u8 = 0;
    /// DDP Error Type 1: Tagged Buffer Error.
    pub const ETYPE_DDP_TAGGED: u8 = 1;
    /// DDP Error Type 2: Untagged Buffer Error.
    pub const ETYPE_DDP_UNTAGGED: u8 = 2;
    /// DDP Error Type 3: reserved for the LLP.
    pub const ETYPE_DDP_RSVD_LLP: u8 = 3;
    /// LLP Error Type 0: MPA.
    pub const ETYPE_LLP_MPA: u8 = 0;

    /// 0/0/any: RDMA Local Catastrophic Error (code octet is meaningless).
    pub const RDMA_LOCAL_CATASTROPHIC: TermCode = tc(0, 0, 0x00);
    /// 0/1/0x00: Invalid STag.
    pub const RDMA_PROT_INVALID_STAG: TermCode = tc(0, 1, 0x00);
    /// 0/1/0x01: Base or bounds violation.
    pub const RDMA_PROT_BASE_BOUNDS: TermCode = tc(0, 1, 0x01);
    /// 0/1/0x02: Access rights violation.
    pub const RDMA_PROT_ACCESS_RIGHTS: TermCode = tc(0, 1, 0x02);
    /// 0/1/0x03: STag not associated with RDMAP Stream.
    pub const RDMA_PROT_STAG_NOT_ASSOCIATED: TermCode = tc(0, 1, 0x03);
    /// 0/1/0x04: TO wrap.
    pub const RDMA_PROT_TO_WRAP: TermCode = tc(0, 1, 0x04);
    /// 0/1/0x09: STag cannot be Invalidated.
    pub const RDMA_PROT_CANNOT_INVALIDATE: TermCode = tc(0, 1, 0x09);
    /// 0/1/0xFF: Unspecified Error.
    pub const RDMA_PROT_UNSPECIFIED: TermCode = tc(0, 1, 0xFF);
    /// 0/2/0x05: Invalid RDMAP version.
    pub const RDMA_OP_INVALID_VERSION: TermCode = tc(0, 2, 0x05);
    /// 0/2/0x06: Unexpected OpCode.
    pub const RDMA_OP_UNEXPECTED_OPCODE: TermCode = tc(0, 2, 0x06);
    /// 0/2/0x07: Catastrophic error, localized to RDMAP Stream.
    pub const RDMA_OP_CATASTROPHIC_STREAM: TermCode = tc(0, 2, 0x07);
    /// 0/2/0x08: Catastrophic error, global.
    pub const RDMA_OP_CATASTROPHIC_GLOBAL: TermCode = tc(0, 2, 0x08);
    /// 0/2/0x09: STag cannot be Invalidated.
    pub const RDMA_OP_CANNOT_INVALIDATE: TermCode = tc(0, 2, 0x09);
    /// 0/2/0xFF: Unspecified Error.
    pub const RDMA_OP_UNSPECIFIED: TermCode = tc(0, 2, 0xFF);

    /// 1/0/0x00: DDP Local Catastrophic.
    pub const DDP_LOCAL_CATASTROPHIC: TermCode = tc(1, 0, 0x00);
    /// 1/1/0x00: Invalid STag.
    pub const DDP_TAGGED_INVALID_STAG: TermCode = tc(1, 1, 0x00);
    /// 1/1/0x01: Base or bounds violation.
    pub const DDP_TAGGED_BASE_BOUNDS: TermCode = tc(1, 1, 0x01);
    /// 1/1/0x02: STag not associated with DDP Stream.
    pub const DDP_TAGGED_STAG_NOT_ASSOCIATED: TermCode = tc(1, 1, 0x02);
    /// 1/1/0x03: TO wrap.
    pub const DDP_TAGGED_TO_WRAP: TermCode = tc(1, 1, 0x03);
    /// 1/1/0x04: Invalid DDP version (tagged segment).
    pub const DDP_TAGGED_INVALID_VERSION: TermCode = tc(1, 1, 0x04);
    /// 1/2/0x01: Invalid QN.
    pub const DDP_UNTAGGED_INVALID_QN: TermCode = tc(1, 2, 0x01);
    /// 1/2/0x02: Invalid MSN – no buffer available.
    pub const DDP_UNTAGGED_NO_BUFFER: TermCode = tc(1, 2, 0x02);
    /// 1/2/0x03: Invalid MSN – MSN range is not valid.
    pub const DDP_UNTAGGED_MSN_RANGE: TermCode = tc(1, 2, 0x03);
    /// 1/2/0x04: Invalid MO.
    pub const DDP_UNTAGGED_INVALID_MO: TermCode = tc(1, 2, 0x04);
    /// 1/2/0x05: DDP Message too long for available buffer.
    pub const DDP_UNTAGGED_TOO_LONG: TermCode = tc(1, 2, 0x05);
    /// 1/2/0x06: Invalid DDP version (untagged segment).
    pub const DDP_UNTAGGED_INVALID_VERSION: TermCode = tc(1, 2, 0x06);

    /// 2/0/0x01: TCP connection closed, terminated or lost.
    pub const MPA_CONNECTION_LOST: TermCode = tc(2, 0, 0x01);
    /// 2/0/0x02: Received MPA CRC does not match.
    pub const MPA_CRC: TermCode = tc(2, 0, 0x02);
    /// 2/0/0x03: Marker and ULPDU_Length disagree on the FPDU start.
    pub const MPA_MARKER: TermCode = tc(2, 0, 0x03);
    /// 2/0/0x04: Invalid MPA Request or Reply frame.
    pub const MPA_INVALID_FRAME: TermCode = tc(2, 0, 0x04);
    /// 2/0/0x05: Local catastrophic (RFC 6581).
    pub const MPA_LOCAL_CATASTROPHIC: TermCode = tc(2, 0, 0x05);
    /// 2/0/0x06: Insufficient IRD resources (RFC 6581).
    pub const MPA_INSUFFICIENT_IRD: TermCode = tc(2, 0, 0x06);
    /// 2/0/0x07: No matching RTR option (RFC 6581).
    pub const MPA_NO_MATCHING_RTR: TermCode = tc(2, 0, 0x07);

    /// Every named triplet with its name, in CHECKLIST §0.3 order.
    pub const ALL: &'static [(TermCode, &'static str)] = &[
        (Self::RDMA_LOCAL_CATASTROPHIC, "RDMA Local Catastrophic Error"),
        (Self::RDMA_PROT_INVALID_STAG, "Invalid STag"),
        (Self::RDMA_PROT_BASE_BOUNDS, "Base or bounds violation"),
        (Self::RDMA_PROT_ACCESS_RIGHTS, "Access rights violation"),
        (Self::RDMA_PROT_STAG_NOT_ASSOCIATED, "STag not associated with RDMAP Stream"),
        (Self::RDMA_PROT_TO_WRAP, "TO wrap"),
        (Self::RDMA_PROT_CANNOT_INVALIDATE, "STag cannot be Invalidated"),
        (Self::RDMA_PROT_UNSPECIFIED, "Unspecified Error"),
        (Self::RDMA_OP_INVALID_VERSION, "Invalid RDMAP version"),
        (Self::RDMA_OP_UNEXPECTED_OPCODE, "Unexpected OpCode"),
        (Self::RDMA_OP_CATASTROPHIC_STREAM, "Catastrophic error, localized to RDMAP Stream"),
        (Self::RDMA_OP_CATASTROPHIC_GLOBAL, "Catastrophic error, global"),
        (Self::RDMA_OP_CANNOT_INVALIDATE, "STag cannot be Invalidated"),
        (Self::RDMA_OP_UNSPECIFIED, "Unspecified Error"),
        (Self::DDP_LOCAL_CATASTROPHIC, "DDP Local Catastrophic"),
        (Self::DDP_TAGGED_INVALID_STAG, "Invalid STag"),
        (Self::DDP_TAGGED_BASE_BOUNDS, "Base or bounds violation"),
        (Self::DDP_TAGGED_STAG_NOT_ASSOCIATED, "STag not associated with DDP Stream"),
        (Self::DDP_TAGGED_TO_WRAP, "TO wrap"),
        (Self::DDP_TAGGED_INVALID_VERSION, "Invalid DDP version"),
        (Self::DDP_UNTAGGED_INVALID_QN, "Invalid QN"),
        (Self::DDP_UNTAGGED_NO_BUFFER, "Invalid MSN - no buffer available"),
        (Self::DDP_UNTAGGED_MSN_RANGE, "Invalid MSN - MSN range is not valid"),
        (Self::DDP_UNTAGGED_INVALID_MO, "Invalid MO"),
        (Self::DDP_UNTAGGED_TOO_LONG, "DDP Message too long for available buffer"),
        (Self::DDP_UNTAGGED_INVALID_VERSION, "Invalid DDP version"),
        (Self::MPA_CONNECTION_LOST, "TCP connection closed, terminated or lost"),
        (Self::MPA_CRC, "Received MPA CRC does not match"),
        (Self::MPA_MARKER, "Marker and ULPDU_Length disagree"),
        (Self::MPA_INVALID_FRAME, "Invalid MPA Request or Reply frame"),
        (Self::MPA_LOCAL_CATASTROPHIC, "MPA local catastrophic"),
        (Self::MPA_INSUFFICIENT_IRD, "Insufficient IRD resources"),
        (Self::MPA_NO_MATCHING_RTR, "No matching RTR option"),
    ];

    /// A triplet from raw values (layer and etype are truncated to 4 bits).
    pub const fn new(layer: u8, etype: u8, code: u8) -> Self {
        tc(layer & 0xF, etype & 0xF, code)
    }

    /// True for RDMA Local Catastrophic, whose code octet carries no meaning
    /// ("Any value in this field is acceptable", RFC 5040 Fig. 9).
    pub fn is_rdma_local_catastrophic(&self) -> bool {
        self.layer == Self::LAYER_RDMA && self.etype == Self::ETYPE_RDMA_LOCAL_CATASTROPHIC
    }

    /// The RFC name of this triplet, or `None` for a value no RFC defines.
    pub fn name(&self) -> Option<&'static str> {
        if self.is_rdma_local_catastrophic() {
            return Some("RDMA Local Catastrophic Error");
        }
        Self::ALL.iter().find(|(c, _)| c == self).map(|(_, n)| *n)
    }

    /// True when an RFC defines this triplet.
    pub fn is_known(&self) -> bool {
        self.name().is_some()
    }

    /// The 32-bit Terminate control word with the given header flags and
    /// the 13 reserved bits zero.
    pub fn control_word(&self, m: bool, d: bool, r: bool) -> u32 {
        (u32::from(self.layer & 0xF) << 28)
            | (u32::from(self.etype & 0xF) << 24)
            | (u32::from(self.code) << 16)
            | if m { M_BIT } else { 0 }
            | if d { D_BIT } else { 0 }
            | if r { R_BIT } else { 0 }
    }

    /// Splits a control word into its triplet and the M, D and R flags;
    /// the reserved bits are ignored.
    pub fn from_control_word(word: u32) -> (TermCode, bool, bool, bool) {
        let code = tc((word >> 28) as u8 & 0xF, (word >> 24) as u8 & 0xF, (word >> 16) as u8);
        (code, word & M_BIT != 0, word & D_BIT != 0, word & R_BIT != 0)
    }
}

impl std::fmt::Display for TermCode {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{}/{}/{:#04x}", self.layer, self.etype, self.code)
    }
}

/// The DDP header of the message that caused a Terminate, kept as raw
/// octets (RFC 5040 §4.8: 112 bits tagged, 144 bits untagged).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum TerminatedDdpHeader {
    /// A 14-octet header (its T bit is 1).
    Tagged([u8; TaggedHeader::LEN]),
    /// An 18-octet header (its T bit is 0).
    Untagged([u8; UntaggedHeader::LEN]),
}

impl TerminatedDdpHeader {
    /// Copies the header of a DDP segment, taking 14 or 18 octets according
    /// to the T bit of its first octet. `None` when `buf` is too short.
    pub fn from_segment(buf: &[u8]) -> Option<Self> {
        let tagged = buf.first()? & T_FLAG != 0;
        if tagged {
            let b = buf.get(..TaggedHeader::LEN)?;
            b.try_into().ok().map(TerminatedDdpHeader::Tagged)
        } else {
            let b = buf.get(..UntaggedHeader::LEN)?;
            b.try_into().ok().map(TerminatedDdpHeader::Untagged)
        }
    }

    /// The octets of a well-formed header.
    pub fn from_header(h: &DdpHeader) -> Self {
        match h {
            DdpHeader::Tagged(t) => TerminatedDdpHeader::Tagged(t.to_bytes()),
            DdpHeader::Untagged(u) => TerminatedDdpHeader::Untagged(u.to_bytes()),
        }
    }

    /// The raw octets.
    pub fn as_bytes(&self) -> &[u8] {
        match self {
            TerminatedDdpHeader::Tagged(b) => b,
            TerminatedDdpHeader::Untagged(b) => b,
        }
    }

    /// Interprets the octets as a DDP header (may fail, e.g. on a bad DV).
    pub fn parse(&self) -> Result<DdpHeader, DdpError> {
        DdpHeader::parse(self.as_bytes())
    }
}

/// A Terminate header (RFC 5040 §4.8, CHECKLIST RDMAP-13 / RDMAP-14).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Default)]
pub struct Terminate {
    /// Layer / Error Type / Error Code.
    pub code: TermCode,
    /// M bit: the DDP Segment Length is valid.
    pub m: bool,
    /// DDP Segment Length. On the wire only when M or D is set; reads as 0
    /// when absent. Informational: RFC 5040 does not say whether it includes
    /// the DDP header (CHECKLIST RDMAP-14).
    pub segment_length: u16,
    /// Terminated DDP Header; its presence is the D bit.
    pub ddp_header: Option<TerminatedDdpHeader>,
    /// Terminated RDMA Header (a Read Request header); its presence is the R bit.
    pub rdma_header: Option<ReadRequest>,
}

impl Terminate {
    /// Size of the control word.
    pub const CONTROL_LEN: usize = 4;
    /// Largest header: 4 + 2 + 18 + 28.
    pub const MAX_LEN: usize = 52;

    /// A Terminate with no headers attached (M = D = R = 0).
    pub fn new(code: TermCode) -> Self {
        Terminate { code, ..Terminate::default() }
    }

    /// Attaches the offending DDP header and its segment length (M = D = 1).
    pub fn with_ddp(mut self, segment_length: u16, header: TerminatedDdpHeader) -> Self {
        self.m = true;
        self.segment_length = segment_length;
        self.ddp_header = Some(header);
        self
    }

    /// Attaches the offending Read Request header (R = 1).
    pub fn with_rdma(mut self, header: ReadRequest) -> Self {
        self.rdma_header = Some(header);
        self
    }

    /// D bit.
    pub fn d(&self) -> bool {
        self.ddp_header.is_some()
    }

    /// R bit.
    pub fn r(&self) -> bool {
        self.rdma_header.is_some()
    }

    /// The control word as it goes on the wire.
    pub fn control_word(&self) -> u32 {
        self.code.control_word(self.m, self.d(), self.r())
    }

    fn has_length_field(&self) -> bool {
        self.m || self.d()
    }

    /// Octets this header occupies on the wire.
    pub fn encoded_len(&self) -> usize {
        Self::CONTROL_LEN
            + if self.has_length_field() { 2 } else { 0 }
            + self.ddp_header.map_or(0, |h| h.as_bytes().len())
            + if self.r() { ReadRequest::LEN } else { 0 }
    }

    /// Appends the wire octets to `out`.
    pub fn encode(&self, out: &mut Vec<u8>) {
        out.extend_from_slice(&self.control_word().to_be_bytes());
        if self.has_length_field() {
            out.extend_from_slice(&self.segment_length.to_be_bytes());
        }
        if let Some(h) = &self.ddp_header {
            out.extend_from_slice(h.as_bytes());
        }
        if let Some(r) = &self.rdma_header {
            out.extend_from_slice(&r.to_bytes());
        }
    }

    /// The wire octets as a vector.
    pub fn to_vec(&self) -> Vec<u8> {
        let mut v = Vec::with_capacity(self.encoded_len());
        self.encode(&mut v);
        v
    }

    /// Parses a Terminate header at the start of `buf`, returning it and the
    /// number of octets it occupies. Octets after it are not looked at.
    pub fn parse_prefix(buf: &[u8]) -> Result<(Terminate, usize), RdmapError> {
        let mut at = 0usize;
        let word = take(buf, &mut at, Self::CONTROL_LEN, "Terminate control word")?;
        let word = u32::from_be_bytes([word[0], word[1], word[2], word[3]]);
        let (code, m, d, r) = TermCode::from_control_word(word);
        let mut t = Terminate { code, m, ..Terminate::default() };
        if m || d {
            let l = take(buf, &mut at, 2, "Terminate DDP Segment Length")?;
            t.segment_length = u16::from_be_bytes([l[0], l[1]]);
        }
        if d {
            let first = buf.get(at).copied().ok_or(RdmapError::Truncated {
                what: "Terminated DDP Header",
                needed: at + TaggedHeader::LEN,
                got: buf.len(),
            })?;
            let len = if first & T_FLAG != 0 { TaggedHeader::LEN } else { UntaggedHeader::LEN };
            let h = take(buf, &mut at, len, "Terminated DDP Header")?;
            t.ddp_header = TerminatedDdpHeader::from_segment(h);
        }
        if r {
            let h = take(buf, &mut at, ReadRequest::LEN, "Terminated RDMA Header")?;
            t.rdma_header = ReadRequest::parse(h).ok();
        }
        Ok((t, at))
    }

    /// Parses a Terminate header, ignoring any octets after it.
    pub fn parse(buf: &[u8]) -> Result<Terminate, RdmapError> {
        Self::parse_prefix(buf).map(|(t, _)| t)
    }
}

/// Takes `n` octets at `*at`, advancing it, or reports what was truncated.
fn take<'a>(buf: &'a [u8], at: &mut usize, n: usize, what: &'static str) -> Result<&'a [u8], RdmapError> {
    let s = buf.get(*at..*at + n).ok_or(RdmapError::Truncated { what, needed: *at + n, got: buf.len() })?;
    *at += n;
    Ok(s)
}
