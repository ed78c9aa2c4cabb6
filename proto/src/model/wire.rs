//! What goes on the wire: DDP segmentation of RDMAP messages at MULPDU, and
//! the per-QP log of transmitted ULPDUs.
//!
//! Every segment is at most MULPDU octets (CHECKLIST DDP-08), so a segment
//! carries `mulpdu − header` payload octets: 18 for untagged, 14 for tagged
//! headers. A message of `n` octets becomes `max(1, ⌈n / payload⌉)`
//! segments: a zero-length message is exactly one segment with L = 1
//! (DDP-09). Segments go out in increasing MO / TO order with L on the last
//! (DDP-03, DDP-07); Writes and Read Responses advance the TO, Sends the MO.
//! The RFC 7306 messages are always one segment: Immediate Data (26
//! octets), Atomic Request (70) and Atomic Response (30).

use crate::atomic::AtomicOp;
use crate::ddp::{TaggedHeader, UntaggedHeader};
use crate::host::desc::{SqOpcode, SqWqe};
use crate::rdmap::{AtomicRequest, Opcode, RdmapHeader, ReadRequest, Segment};

/// Payload octets per segment for a MULPDU and a header length (at least 1,
/// so that a MULPDU no context allows still segments rather than loops).
pub fn payload_per_segment(mulpdu: u16, header_len: usize) -> usize {
    usize::from(mulpdu).saturating_sub(header_len).max(1)
}

/// Segments a message of `len` payload octets needs.
pub fn segment_count(len: usize, mulpdu: u16, header_len: usize) -> usize {
    len.div_ceil(payload_per_segment(mulpdu, header_len)).max(1)
}

/// The payload pieces of a message: offset, octets and the L flag of each.
fn pieces(payload: &[u8], per: usize) -> Vec<(usize, &[u8], bool)> {
    if payload.is_empty() {
        return vec![(0, payload, true)];
    }
    let n = payload.len().div_ceil(per);
    payload.chunks(per).enumerate().map(|(i, c)| (i * per, c, i + 1 == n)).collect()
}

/// The ULPDUs of an untagged message on its opcode's queue (the Sends:
/// QN 0, one MSN, MO advancing). `inv_stag` is zero except for the
/// invalidating Sends (CHECKLIST RDMAP-05).
pub fn untagged_ulpdus(opcode: Opcode, msn: u32, inv_stag: u32, payload: &[u8], mulpdu: u16) -> Vec<Vec<u8>> {
    let per = payload_per_segment(mulpdu, UntaggedHeader::LEN);
    pieces(payload, per)
        .into_iter()
        .map(|(mo, chunk, last)| {
            Segment::untagged(opcode, last, inv_stag, msn, mo as u32, RdmapHeader::None, chunk).to_vec()
        })
        .collect()
}

/// The ULPDUs of a tagged message (RDMA Write, Read Response) to `stag`
/// starting at `to`.
pub fn tagged_ulpdus(opcode: Opcode, stag: u32, to: u64, payload: &[u8], mulpdu: u16) -> Vec<Vec<u8>> {
    let per = payload_per_segment(mulpdu, TaggedHeader::LEN);
    pieces(payload, per)
        .into_iter()
        .map(|(off, chunk, last)| Segment::tagged(opcode, last, stag, to.wrapping_add(off as u64), chunk).to_vec())
        .collect()
}

/// The Read Request an RDMA Read WQE sends: the sink is the WQE's local
/// buffer (its lkey is the sink STag), the source its remote STag and TO.
pub fn read_request_of(wqe: &SqWqe) -> ReadRequest {
    ReadRequest {
        sink_stag: wqe.lkey,
        sink_to: wqe.local_addr,
        size: wqe.length,
        src_stag: wqe.remote_stag,
        src_to: wqe.remote_to,
    }
}

/// The Atomic Request an ATOMIC WQE sends. The AOpCode goes out as the WQE
/// has it, so that a raw WQE can probe a responder with an unsupported one;
/// a FetchAdd carries the transmit values of the fields it does not use
/// (Compare Data 0, Compare Mask all ones: CHECKLIST ATOM-03) whatever the
/// WQE holds there.
pub fn atomic_request_of(wqe: &SqWqe, request_id: u32) -> AtomicRequest {
    let aopcode = wqe.aopcode & 0x0F;
    let (compare, compare_mask) =
        if aopcode == AtomicOp::FetchAdd.code() { (0, u64::MAX) } else { (wqe.compare, wqe.compare_mask) };
    AtomicRequest {
        aopcode,
        request_id,
        stag: wqe.remote_stag,
        to: wqe.remote_to,
        add_swap: wqe.add_swap,
        add_swap_mask: wqe.add_swap_mask,
        compare,
        compare_mask,
    }
}

/// The one ULPDU of an ATOMIC WQE: its Atomic Request on QN 1 with that
/// queue's MSN and the QP's Request Identifier for it.
pub fn atomic_request_ulpdu(wqe: &SqWqe, msn: u32, request_id: u32) -> Vec<u8> {
    Segment::atomic_request(msn, atomic_request_of(wqe, request_id)).to_vec()
}

/// The ULPDUs a supported SQ WQE sends, given the MSN of its queue (QN 0
/// for Sends and Immediate Data, QN 1 for Reads; ignored for Writes) and
/// its local payload (empty for a Read; Immediate Data carries the WQE's
/// `imm` octets instead). `None` for an opcode the RNIC does not execute,
/// and for ATOMIC, whose request also needs its Request Identifier
/// ([`atomic_request_ulpdu`]).
pub fn request_ulpdus(wqe: &SqWqe, msn: u32, payload: &[u8], mulpdu: u16) -> Option<Vec<Vec<u8>>> {
    let op = wqe.op().filter(|op| op.is_supported())?;
    let rdmap = op.rdmap_opcode()?;
    Some(match op {
        SqOpcode::RdmaWrite => tagged_ulpdus(rdmap, wqe.remote_stag, wqe.remote_to, payload, mulpdu),
        SqOpcode::RdmaRead => vec![Segment::read_request(msn, read_request_of(wqe)).to_vec()],
        SqOpcode::Atomic => return None,
        SqOpcode::Imm | SqOpcode::ImmSe => {
            let solicited = rdmap.is_solicited();
            vec![Segment::immediate(msn, wqe.imm.to_le_bytes(), solicited).to_vec()]
        }
        _ => {
            let inv = if rdmap.has_invalidate_stag() { wqe.remote_stag } else { 0 };
            untagged_ulpdus(rdmap, msn, inv, payload, mulpdu)
        }
    })
}

/// Which part of a QP's transmit stream a ULPDU belongs to. The order
/// inside each class is defined; how the classes interleave is timing.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum TxClass {
    /// A message of the SQ: Send, Write, Read Request, Immediate Data,
    /// Atomic Request.
    Request,
    /// A Read Response, answering the peer's Read Request.
    ReadResponse,
    /// An Atomic Response, answering the peer's Atomic Request.
    AtomicResponse,
    /// A Terminate.
    Terminate,
}

impl TxClass {
    /// The class of a ULPDU, from the opcode in its RDMAP control octet.
    pub fn of(ulpdu: &[u8]) -> TxClass {
        let opcode = ulpdu.get(1).map(|c| c & 0x0F);
        if opcode == Some(Opcode::ReadResponse.code()) {
            TxClass::ReadResponse
        } else if opcode == Some(Opcode::AtomicResponse.code()) {
            TxClass::AtomicResponse
        } else if opcode == Some(Opcode::Terminate.code()) {
            TxClass::Terminate
        } else {
            TxClass::Request
        }
    }
}

/// The ULPDUs one QP transmitted, by class, each class in order.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct TxLog {
    /// SQ messages (Sends, Writes, Read Requests, Immediate Data, Atomic
    /// Requests), segment by segment.
    pub requests: Vec<Vec<u8>>,
    /// Read Responses, in the order of the requests they answer.
    pub read_responses: Vec<Vec<u8>>,
    /// Atomic Responses, in the order of the requests they answer (their
    /// order relative to Read Responses is defined too, RFC 7306 §7, but
    /// not kept here).
    pub atomic_responses: Vec<Vec<u8>>,
    /// Terminates (at most one from a correct RNIC).
    pub terminates: Vec<Vec<u8>>,
}

impl TxLog {
    /// Sorts an observed transmit stream (e.g. the hardware's) into classes,
    /// for comparison with the model's log.
    pub fn from_stream<I: IntoIterator<Item = Vec<u8>>>(ulpdus: I) -> Self {
        let mut log = TxLog::default();
        for u in ulpdus {
            log.push(u);
        }
        log
    }

    /// Appends one ULPDU to its class.
    pub fn push(&mut self, ulpdu: Vec<u8>) {
        match TxClass::of(&ulpdu) {
            TxClass::Request => self.requests.push(ulpdu),
            TxClass::ReadResponse => self.read_responses.push(ulpdu),
            TxClass::AtomicResponse => self.atomic_responses.push(ulpdu),
            TxClass::Terminate => self.terminates.push(ulpdu),
        }
    }
}
