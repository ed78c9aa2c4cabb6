//! A whole RDMAP segment (one ULPDU): DDP header, RDMAP header, payload.
//!
//! [`parse_ulpdu`] validates a ULPDU in the order the layers do: DDP version
//! (RFC 5041 §7.2), queue number, RDMAP version and opcode (RFC 5040 §7.2),
//! then the opcode's T flag and QN (CHECKLIST RDMAP-04), then the size of the
//! opcode's fixed header. [`Segment`] builds the ULPDU back.

use super::{
    AtomicRequest, AtomicResponse, Opcode, RdmapControl, RdmapError, ReadRequest, IMMEDIATE_DATA_LEN,
    QN_ATOMIC_RESPONSE,
};
use crate::ddp::{DdpHeader, TaggedHeader, UntaggedHeader};
use crate::terminate::Terminate;

/// The RDMAP header that follows the DDP header, by opcode.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum RdmapHeader {
    /// Write, Read Response, the Sends, and segments of a multi-segment
    /// Immediate Data message (whose octets are then in the payload).
    None,
    /// RDMA Read Request.
    ReadRequest(ReadRequest),
    /// Terminate.
    Terminate(Terminate),
    /// The 8 octets of a single-segment Immediate Data message.
    ImmediateData([u8; IMMEDIATE_DATA_LEN]),
    /// Atomic Request.
    AtomicRequest(AtomicRequest),
    /// Atomic Response.
    AtomicResponse(AtomicResponse),
}

impl RdmapHeader {
    /// Octets on the wire.
    pub fn encoded_len(&self) -> usize {
        match self {
            RdmapHeader::None => 0,
            RdmapHeader::ReadRequest(_) => ReadRequest::LEN,
            RdmapHeader::Terminate(t) => t.encoded_len(),
            RdmapHeader::ImmediateData(_) => IMMEDIATE_DATA_LEN,
            RdmapHeader::AtomicRequest(_) => AtomicRequest::LEN,
            RdmapHeader::AtomicResponse(_) => AtomicResponse::LEN,
        }
    }

    /// Appends the wire octets to `out`.
    pub fn encode(&self, out: &mut Vec<u8>) {
        match self {
            RdmapHeader::None => {}
            RdmapHeader::ReadRequest(h) => out.extend_from_slice(&h.to_bytes()),
            RdmapHeader::Terminate(t) => t.encode(out),
            RdmapHeader::ImmediateData(d) => out.extend_from_slice(d),
            RdmapHeader::AtomicRequest(h) => out.extend_from_slice(&h.to_bytes()),
            RdmapHeader::AtomicResponse(h) => out.extend_from_slice(&h.to_bytes()),
        }
    }
}

/// One RDMAP segment.
///
/// `opcode` is the decoded opcode of `ddp`'s ULP control octet. The
/// constructors keep the two consistent; [`Segment::encode`] writes `ddp`
/// verbatim, so a test can still build deliberately inconsistent segments.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Segment<'a> {
    /// The opcode.
    pub opcode: Opcode,
    /// The DDP header, RDMAP control octet included.
    pub ddp: DdpHeader,
    /// The opcode's RDMAP header.
    pub header: RdmapHeader,
    /// ULP payload after the headers (for a Terminate: any trailing octets).
    pub payload: &'a [u8],
}

impl<'a> Segment<'a> {
    /// A tagged segment (RDMA Write, Read Response).
    pub fn tagged(opcode: Opcode, last: bool, stag: u32, to: u64, payload: &'a [u8]) -> Self {
        let ulp_ctrl = RdmapControl::new(opcode).to_byte();
        Segment {
            opcode,
            ddp: DdpHeader::Tagged(TaggedHeader { last, ulp_ctrl, stag, to }),
            header: RdmapHeader::None,
            payload,
        }
    }

    /// An untagged segment on the opcode's own queue (QN 0 if the opcode is
    /// a tagged one; set `ddp` by hand for deliberate mismatches).
    pub fn untagged(
        opcode: Opcode,
        last: bool,
        inv_stag: u32,
        msn: u32,
        mo: u32,
        header: RdmapHeader,
        payload: &'a [u8],
    ) -> Self {
        let ulp_ctrl = RdmapControl::new(opcode).to_byte();
        let qn = opcode.queue().unwrap_or(0);
        Segment {
            opcode,
            ddp: DdpHeader::Untagged(UntaggedHeader { last, ulp_ctrl, inv_stag, qn, msn, mo }),
            header,
            payload,
        }
    }

    /// A single-segment RDMA Write.
    pub fn write(stag: u32, to: u64, payload: &'a [u8]) -> Self {
        Self::tagged(Opcode::RdmaWrite, true, stag, to, payload)
    }

    /// A single-segment RDMA Read Response.
    pub fn read_response(stag: u32, to: u64, payload: &'a [u8]) -> Self {
        Self::tagged(Opcode::ReadResponse, true, stag, to, payload)
    }

    /// A single-segment Send.
    pub fn send(msn: u32, payload: &'a [u8]) -> Self {
        Self::untagged(Opcode::Send, true, 0, msn, 0, RdmapHeader::None, payload)
    }

    /// A single-segment Send with Invalidate.
    pub fn send_invalidate(msn: u32, inv_stag: u32, payload: &'a [u8]) -> Self {
        Self::untagged(Opcode::SendInvalidate, true, inv_stag, msn, 0, RdmapHeader::None, payload)
    }

    /// An RDMA Read Request on QN 1.
    pub fn read_request(msn: u32, rr: ReadRequest) -> Self {
        Self::untagged(Opcode::ReadRequest, true, 0, msn, 0, RdmapHeader::ReadRequest(rr), &[])
    }

    /// A Terminate on QN 2 with the given MSN (1 for the only Terminate of a stream).
    pub fn terminate(msn: u32, t: Terminate) -> Self {
        Self::untagged(Opcode::Terminate, true, 0, msn, 0, RdmapHeader::Terminate(t), &[])
    }

    /// A single-segment Immediate Data message (opcode 0x8, or 0x9 when solicited).
    pub fn immediate(msn: u32, data: [u8; IMMEDIATE_DATA_LEN], solicited: bool) -> Self {
        let opcode = if solicited { Opcode::ImmediateDataSolicited } else { Opcode::ImmediateData };
        Self::untagged(opcode, true, 0, msn, 0, RdmapHeader::ImmediateData(data), &[])
    }

    /// An Atomic Request on QN 1.
    pub fn atomic_request(msn: u32, req: AtomicRequest) -> Self {
        Self::untagged(Opcode::AtomicRequest, true, 0, msn, 0, RdmapHeader::AtomicRequest(req), &[])
    }

    /// An Atomic Response on QN 3.
    pub fn atomic_response(msn: u32, resp: AtomicResponse) -> Self {
        let h = RdmapHeader::AtomicResponse(resp);
        Self::untagged(Opcode::AtomicResponse, true, 0, msn, 0, h, &[])
    }

    /// The Invalidate STag, for the two opcodes where it is meaningful.
    pub fn invalidate_stag(&self) -> Option<u32> {
        match (&self.ddp, self.opcode.has_invalidate_stag()) {
            (DdpHeader::Untagged(h), true) => Some(h.inv_stag),
            _ => None,
        }
    }

    /// ULPDU size (what MPA puts in ULPDU_Length).
    pub fn encoded_len(&self) -> usize {
        self.ddp.len() + self.header.encoded_len() + self.payload.len()
    }

    /// Appends the ULPDU octets to `out`.
    pub fn encode(&self, out: &mut Vec<u8>) {
        self.ddp.encode(out);
        self.header.encode(out);
        out.extend_from_slice(self.payload);
    }

    /// The ULPDU octets.
    pub fn to_vec(&self) -> Vec<u8> {
        let mut v = Vec::with_capacity(self.encoded_len());
        self.encode(&mut v);
        v
    }
}

/// Parses one ULPDU (a DDP segment carrying RDMAP).
///
/// Never panics; every malformation is an [`RdmapError`] whose
/// [`term_code`](RdmapError::term_code) names the Terminate to send.
pub fn parse_ulpdu(ulpdu: &[u8]) -> Result<Segment<'_>, RdmapError> {
    let ddp = DdpHeader::parse(ulpdu)?;
    if let DdpHeader::Untagged(h) = &ddp {
        if h.qn > QN_ATOMIC_RESPONSE {
            return Err(RdmapError::InvalidQn(h.qn));
        }
    }
    let opcode = RdmapControl::parse(ddp.ulp_ctrl())?.opcode;
    check_model(opcode, &ddp)?;
    let rest = ulpdu.get(ddp.len()..).unwrap_or(&[]);
    let (header, payload) = parse_rdmap_header(opcode, &ddp, rest)?;
    Ok(Segment { opcode, ddp, header, payload })
}

/// The opcode's T flag and QN must match the segment (CHECKLIST RDMAP-04).
fn check_model(opcode: Opcode, ddp: &DdpHeader) -> Result<(), RdmapError> {
    if opcode.is_tagged() != ddp.is_tagged() {
        return Err(RdmapError::TaggedMismatch { opcode, tagged: ddp.is_tagged() });
    }
    match (ddp, opcode.queue()) {
        (DdpHeader::Untagged(h), Some(qn)) if h.qn != qn => Err(RdmapError::QueueMismatch { opcode, qn: h.qn }),
        _ => Ok(()),
    }
}

/// Splits what follows the DDP header into the opcode's header and payload.
fn parse_rdmap_header<'a>(
    opcode: Opcode,
    ddp: &DdpHeader,
    rest: &'a [u8],
) -> Result<(RdmapHeader, &'a [u8]), RdmapError> {
    let (last, mo) = match ddp {
        DdpHeader::Untagged(h) => (h.last, h.mo),
        DdpHeader::Tagged(h) => (h.last, 0),
    };
    let single = || {
        if last && mo == 0 {
            Ok(())
        } else {
            Err(RdmapError::NotSingleSegment { opcode, last, mo })
        }
    };
    let exact = |expected: usize| {
        if rest.len() == expected {
            Ok(())
        } else {
            Err(RdmapError::Length { opcode, expected, got: rest.len() })
        }
    };
    let none: &'a [u8] = &[];
    match opcode {
        Opcode::ReadRequest => {
            single()?;
            exact(ReadRequest::LEN)?;
            Ok((RdmapHeader::ReadRequest(ReadRequest::parse(rest)?), none))
        }
        Opcode::AtomicRequest => {
            single()?;
            exact(AtomicRequest::LEN)?;
            Ok((RdmapHeader::AtomicRequest(AtomicRequest::parse(rest)?), none))
        }
        Opcode::AtomicResponse => {
            single()?;
            exact(AtomicResponse::LEN)?;
            Ok((RdmapHeader::AtomicResponse(AtomicResponse::parse(rest)?), none))
        }
        Opcode::Terminate => {
            single()?;
            let (t, used) = Terminate::parse_prefix(rest)?;
            Ok((RdmapHeader::Terminate(t), rest.get(used..).unwrap_or(none)))
        }
        Opcode::ImmediateData | Opcode::ImmediateDataSolicited => parse_immediate(last, mo, rest),
        _ => Ok((RdmapHeader::None, rest)),
    }
}

/// Immediate Data carries exactly 8 octets per message (RFC 7306 §6.3).
///
/// The usual single segment becomes [`RdmapHeader::ImmediateData`]. DDP may
/// legally split the message (CHECKLIST IMM-03, Rec.), so a segment with
/// L = 0 or MO ≠ 0 is accepted as a fragment in the payload as long as the
/// message cannot exceed 8 octets and its last segment ends exactly at 8.
fn parse_immediate(last: bool, mo: u32, rest: &[u8]) -> Result<(RdmapHeader, &[u8]), RdmapError> {
    let message_len = u64::from(mo) + rest.len() as u64;
    let limit = IMMEDIATE_DATA_LEN as u64;
    if message_len > limit || (last && message_len != limit) {
        return Err(RdmapError::ImmediateDataLength { message_len });
    }
    if last && mo == 0 {
        let mut data = [0u8; IMMEDIATE_DATA_LEN];
        data.copy_from_slice(rest);
        return Ok((RdmapHeader::ImmediateData(data), &[]));
    }
    Ok((RdmapHeader::None, rest))
}
