//! MPA Request/Reply frames: connection setup before Full Operation
//! (RFC 5044 §7.1.1, RFC 6581 §6 and §9).
//!
//! ```text
//! 0..16   Key: "MPA ID Req Frame" or "MPA ID Rep Frame"
//! 16      M(0x80) | C(0x40) | R(0x20) | S(0x10) | Res(4)
//! 17      Rev
//! 18..20  PD_Length (big-endian, at most 512)
//! 20..    Private Data; when S = 1 (Rev ≥ 2) it begins with the 32-bit
//!         |A|B| IRD(14) |C|D| ORD(14)| word of RFC 6581 §9
//! ```
//!
//! The frames carry no ULPDU_Length, no CRC and no markers. Res bits are
//! written as zero and never checked (RFC 6581 §6). The S bit is honoured only
//! for Rev ≥ 2, because RFC 5044 Rev 1 treats that bit as reserved.

use crate::mpa::FramingConfig;

/// Key of an MPA Request frame.
pub const KEY_REQ: [u8; 16] = *b"MPA ID Req Frame";
/// Key of an MPA Reply frame.
pub const KEY_REP: [u8; 16] = *b"MPA ID Rep Frame";
/// Size of the fixed part: key (16), flags, Rev, PD_Length.
pub const FRAME_HEADER_LEN: usize = 20;
/// Largest PD_Length (RFC 5044 §7.1.1, RFC 6581 §7).
pub const MAX_PRIVATE_DATA: usize = 512;
/// Size of the RFC 6581 IRD/ORD word.
pub const IRD_ORD_LEN: usize = 4;
/// IRD/ORD value meaning "no automatic negotiation" (RFC 6581 §9.1).
pub const IRD_ORD_NO_NEGOTIATION: u16 = 0x3FFF;

/// M flag: the receiver of this frame must send markers.
pub const FLAG_M: u8 = 0x80;
/// C flag: CRCs requested.
pub const FLAG_C: u8 = 0x40;
/// R flag: connection rejected (Reply only).
pub const FLAG_R: u8 = 0x20;
/// S flag: Private Data starts with the IRD/ORD word (RFC 6581).
pub const FLAG_S: u8 = 0x10;

/// Request or Reply, told apart by the key.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum FrameKind {
    /// "MPA ID Req Frame", sent by the initiator.
    Request,
    /// "MPA ID Rep Frame", sent by the responder.
    Reply,
}

impl FrameKind {
    /// The 16-octet key.
    pub fn key(self) -> [u8; 16] {
        match self {
            FrameKind::Request => KEY_REQ,
            FrameKind::Reply => KEY_REP,
        }
    }
}

/// Errors that make a frame "improperly formatted": the TCP connection is
/// closed and MPA error 4 is reported locally (RFC 5044 §7.1.2, §8).
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum CmError {
    /// Not enough octets yet; `needed` is the total frame size known so far.
    #[error("MPA frame incomplete: need {needed} octets, got {got}")]
    Incomplete {
        /// Octets needed.
        needed: usize,
        /// Octets available.
        got: usize,
    },
    /// The key is neither the Request nor the Reply key (CHECKLIST MPA-18).
    #[error("bad MPA frame key")]
    BadKey,
    /// The key is valid but of the other role (CHECKLIST MPA-18).
    #[error("expected an MPA {expected:?} frame, got a {got:?}")]
    WrongKind {
        /// What the receiver expected.
        expected: FrameKind,
        /// What arrived.
        got: FrameKind,
    },
    /// PD_Length above 512 (CHECKLIST MPA-20).
    #[error("PD_Length {0} exceeds 512")]
    PrivateDataTooLong(usize),
    /// S = 1 with fewer than 4 octets of private data.
    #[error("S bit set but PD_Length {0} leaves no room for the IRD/ORD word")]
    MissingIrdOrd(usize),
    /// An IRD or ORD value does not fit 14 bits (encode only).
    #[error("IRD/ORD value {0:#x} does not fit in 14 bits")]
    IrdOrdRange(u16),
}

impl CmError {
    /// The MPA error code of RFC 5044 §8: 4, "Invalid MPA Request or Reply
    /// frame". The connection is closed rather than sent a Terminate.
    /// `Incomplete` is not an error of the frame and has no code.
    pub fn mpa_error_code(&self) -> Option<u8> {
        match self {
            CmError::Incomplete { .. } => None,
            _ => Some(4),
        }
    }
}

/// The RFC 6581 §9 IRD/ORD word with its A/B/C/D control flags.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Default)]
pub struct IrdOrd {
    /// A: peer-to-peer connection model.
    pub peer_to_peer: bool,
    /// B: a zero-length Send (FULPDU) is acceptable as the RTR.
    pub send_rtr: bool,
    /// IRD, 14 bits (0x3FFF: no automatic negotiation).
    pub ird: u16,
    /// C: a zero-length RDMA Write is acceptable as the RTR.
    pub write_rtr: bool,
    /// D: a zero-length RDMA Read is acceptable as the RTR.
    pub read_rtr: bool,
    /// ORD, 14 bits (0x3FFF: no automatic negotiation).
    pub ord: u16,
}

impl IrdOrd {
    /// Client/server mode with the given depths.
    pub fn new(ird: u16, ord: u16) -> Self {
        IrdOrd { ird, ord, ..IrdOrd::default() }
    }

    /// The four wire octets; fails if IRD or ORD exceeds 14 bits.
    pub fn to_bytes(&self) -> Result<[u8; IRD_ORD_LEN], CmError> {
        for v in [self.ird, self.ord] {
            if v > IRD_ORD_NO_NEGOTIATION {
                return Err(CmError::IrdOrdRange(v));
            }
        }
        let hi = u16::from(self.peer_to_peer) << 15 | u16::from(self.send_rtr) << 14 | self.ird;
        let lo = u16::from(self.write_rtr) << 15 | u16::from(self.read_rtr) << 14 | self.ord;
        let (h, l) = (hi.to_be_bytes(), lo.to_be_bytes());
        Ok([h[0], h[1], l[0], l[1]])
    }

    /// Reads the word, keeping B/C/D as received.
    pub fn from_bytes(b: [u8; IRD_ORD_LEN]) -> Self {
        let hi = u16::from_be_bytes([b[0], b[1]]);
        let lo = u16::from_be_bytes([b[2], b[3]]);
        IrdOrd {
            peer_to_peer: hi & 0x8000 != 0,
            send_rtr: hi & 0x4000 != 0,
            ird: hi & 0x3FFF,
            write_rtr: lo & 0x8000 != 0,
            read_rtr: lo & 0x4000 != 0,
            ord: lo & 0x3FFF,
        }
    }

    /// The flags as a receiver must act on them: with A = 0, B, C and D
    /// "MUST be ignored" (RFC 6581 §9.2, CHECKLIST MPA2-06).
    pub fn effective(&self) -> Self {
        if self.peer_to_peer {
            *self
        } else {
            IrdOrd { send_rtr: false, write_rtr: false, read_rtr: false, ..*self }
        }
    }
}

/// An MPA Request or Reply frame.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct MpaFrame {
    /// Request or Reply.
    pub kind: FrameKind,
    /// M: markers wanted in the direction towards the sender of this frame.
    pub markers: bool,
    /// C: CRCs wanted.
    pub crc: bool,
    /// R: rejected (meaningful in a Reply only).
    pub reject: bool,
    /// Rev: 1 (RFC 5044) or 2 (RFC 6581).
    pub rev: u8,
    /// The IRD/ORD word; `Some` means S = 1.
    pub ird_ord: Option<IrdOrd>,
    /// ULP private data (after the IRD/ORD word when there is one).
    pub private_data: Vec<u8>,
}

impl MpaFrame {
    /// A Rev 1 frame with CRCs requested, no markers, no private data.
    pub fn new(kind: FrameKind) -> Self {
        MpaFrame { kind, markers: false, crc: true, reject: false, rev: 1, ird_ord: None, private_data: Vec::new() }
    }

    /// Turns the frame into an enhanced Rev 2 frame carrying `ird_ord` (S = 1).
    pub fn enhanced(mut self, ird_ord: IrdOrd) -> Self {
        self.rev = self.rev.max(2);
        self.ird_ord = Some(ird_ord);
        self
    }

    /// PD_Length: private data plus the IRD/ORD word.
    pub fn pd_length(&self) -> usize {
        self.private_data.len() + if self.ird_ord.is_some() { IRD_ORD_LEN } else { 0 }
    }

    /// The wire octets.
    pub fn encode(&self) -> Result<Vec<u8>, CmError> {
        let pd_len = self.pd_length();
        if pd_len > MAX_PRIVATE_DATA {
            return Err(CmError::PrivateDataTooLong(pd_len));
        }
        let mut out = Vec::with_capacity(FRAME_HEADER_LEN + pd_len);
        out.extend_from_slice(&self.kind.key());
        let flags = if self.markers { FLAG_M } else { 0 }
            | if self.crc { FLAG_C } else { 0 }
            | if self.reject { FLAG_R } else { 0 }
            | if self.ird_ord.is_some() { FLAG_S } else { 0 };
        out.push(flags);
        out.push(self.rev);
        out.extend_from_slice(&(pd_len as u16).to_be_bytes()); // ≤ 512, checked above
        if let Some(w) = &self.ird_ord {
            out.extend_from_slice(&w.to_bytes()?);
        }
        out.extend_from_slice(&self.private_data);
        Ok(out)
    }

    /// Total frame size announced by a received header, once its first 20
    /// octets are present. Lets a receiver wait for the whole frame.
    pub fn frame_len(buf: &[u8]) -> Result<usize, CmError> {
        let hdr =
            buf.get(..FRAME_HEADER_LEN).ok_or(CmError::Incomplete { needed: FRAME_HEADER_LEN, got: buf.len() })?;
        if hdr[..16] != KEY_REQ && hdr[..16] != KEY_REP {
            return Err(CmError::BadKey);
        }
        let pd_len = usize::from(u16::from_be_bytes([hdr[18], hdr[19]]));
        if pd_len > MAX_PRIVATE_DATA {
            return Err(CmError::PrivateDataTooLong(pd_len));
        }
        Ok(FRAME_HEADER_LEN + pd_len)
    }

    /// Decodes a frame at the start of `buf`, returning it and its size;
    /// octets after it (the first FPDU, say) are left alone.
    pub fn decode(buf: &[u8]) -> Result<(MpaFrame, usize), CmError> {
        let total = Self::frame_len(buf)?;
        let frame = buf.get(..total).ok_or(CmError::Incomplete { needed: total, got: buf.len() })?;
        let kind = if frame[..16] == KEY_REQ { FrameKind::Request } else { FrameKind::Reply };
        let flags = frame[16];
        let rev = frame[17];
        let mut pd = &frame[FRAME_HEADER_LEN..];
        let enhanced = flags & FLAG_S != 0 && rev >= 2;
        let ird_ord = if enhanced {
            let word = pd.get(..IRD_ORD_LEN).ok_or(CmError::MissingIrdOrd(pd.len()))?;
            let w = IrdOrd::from_bytes([word[0], word[1], word[2], word[3]]);
            pd = &pd[IRD_ORD_LEN..];
            Some(w)
        } else {
            None
        };
        let frame = MpaFrame {
            kind,
            markers: flags & FLAG_M != 0,
            crc: flags & FLAG_C != 0,
            reject: flags & FLAG_R != 0,
            rev,
            ird_ord,
            private_data: pd.to_vec(),
        };
        Ok((frame, total))
    }

    /// Decodes a frame and checks that it has the expected role: an
    /// initiator expects a Reply, a responder a Request (CHECKLIST MPA-18).
    pub fn decode_as(buf: &[u8], expected: FrameKind) -> Result<(MpaFrame, usize), CmError> {
        let (frame, used) = Self::decode(buf)?;
        if frame.kind != expected {
            return Err(CmError::WrongKind { expected, got: frame.kind });
        }
        Ok((frame, used))
    }
}

/// The framing each direction uses once both frames have been exchanged.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct NegotiatedFraming {
    /// What the initiator sends (and the responder receives).
    pub initiator_to_responder: FramingConfig,
    /// What the responder sends (and the initiator receives).
    pub responder_to_initiator: FramingConfig,
}

/// Applies the M and C bits of a Request and its Reply (RFC 5044 §7.1.1,
/// §4.4; CHECKLIST MPA-05 and MPA-14).
///
/// M is per direction: M = 1 in the Request obliges the responder to send
/// markers, M = 1 in the Reply obliges the initiator. CRCs are off only when
/// both frames have C = 0.
pub fn negotiate_framing(request: &MpaFrame, reply: &MpaFrame) -> NegotiatedFraming {
    let crc = request.crc || reply.crc;
    NegotiatedFraming {
        initiator_to_responder: FramingConfig { markers: reply.markers, crc },
        responder_to_initiator: FramingConfig { markers: request.markers, crc },
    }
}
