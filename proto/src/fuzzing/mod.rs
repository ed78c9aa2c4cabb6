//! Property checks on arbitrary octets, one function per `cargo fuzz` target
//! in `fuzz/`. The seeded run in `seeds.rs` calls the same functions under
//! `cargo test`, so the properties are exercised on stable too.
//!
//! Each function panics when a property fails, which is how libFuzzer learns
//! of a finding, and returns whether the parser under test accepted the input
//! so that the seeded run can check it reached both paths. Built only with
//! the `fuzzing` feature and for this crate's own tests.

use crate::atomic::{masked_fetch_add_bit_serial, AtomicOp};
use crate::cm::{
    CmError, FrameKind, IrdOrd, MpaFrame, FLAG_C, FLAG_M, FLAG_R, FLAG_S, FRAME_HEADER_LEN, IRD_ORD_LEN,
    IRD_ORD_NO_NEGOTIATION, KEY_REP, KEY_REQ, MAX_PRIVATE_DATA,
};
use crate::ddp::{DdpError, DdpHeader, DDP_VERSION, DV_MASK, L_FLAG, T_FLAG};
use crate::mpa::markers::{fpdu_wire_len, is_marker_pos, MARKER_LEN};
use crate::mpa::{crc32c, crc_field, pad_len, Deframer, Framer, FramingConfig, MpaError, MARKER_INTERVAL};
use crate::rdmap::{
    parse_ulpdu, Opcode, RdmapError, RdmapHeader, Segment, IMMEDIATE_DATA_LEN, QN_ATOMIC_RESPONSE, RDMAP_VERSION,
};
use crate::terminate::{TermCode, Terminate};

#[cfg(test)]
mod seeds;

/// Mask on the ULPDU lengths of `mpa_deframe`'s framed mode: up to four
/// marker intervals keeps executions fast; 64 KiB ULPDUs are left to the
/// proptests.
const MAX_FUZZ_ULPDU: u16 = 0x07FF;

/// Bits of the DDP control octet a receiver reads; the rest is Rsvd.
const DDP_CTRL_USED: u8 = T_FLAG | L_FLAG | DV_MASK;

/// MPA receive side. Octet 0 selects markers (bit 0), CRCs (bit 1) and the
/// mode (bit 2): a raw stream, or ULPDUs framed then deframed. Bit 3 has the
/// target write the right CRCs into a raw stream (a fuzzer rarely guesses
/// them), or flip one bit of a framed one. Octet 1 chooses how the stream is
/// cut into `push` calls.
pub fn mpa_deframe(data: &[u8]) -> bool {
    let [flags, chunking, rest @ ..] = data else {
        return false;
    };
    let cfg = FramingConfig { markers: flags & 1 != 0, crc: flags & 2 != 0 };
    if flags & 4 == 0 {
        let mut stream = rest.to_vec();
        let crcs_right = cfg.crc && flags & 8 != 0;
        if crcs_right {
            write_crcs(cfg.markers, &mut stream);
        }
        deframe_raw(cfg, *chunking, &stream, crcs_right)
    } else {
        deframe_framed(cfg, *chunking, flags & 8 != 0, rest)
    }
}

/// Push sizes chosen by one octet, so that the fuzzer steers chunking too.
struct Chunks {
    x: u32,
    limit: u32,
}

impl Chunks {
    fn new(seed: u8) -> Self {
        const LIMITS: [u32; 6] = [1, 3, 17, 64, 511, 4096];
        Chunks {
            x: u32::from(seed) | 0x100, // xorshift needs a non-zero state
            limit: LIMITS[usize::from(seed) % LIMITS.len()],
        }
    }

    fn size(&mut self) -> usize {
        self.x ^= self.x << 13;
        self.x ^= self.x >> 17;
        self.x ^= self.x << 5;
        (1 + self.x % self.limit) as usize
    }
}

type Delivered = Vec<Result<Vec<u8>, MpaError>>;

/// Everything a deframer delivers from `stream`, pushed in one piece
/// (`chunking` None) or in chunks, popping after every push.
fn deframe(cfg: FramingConfig, stream: &[u8], chunking: Option<u8>) -> (Delivered, Deframer) {
    let mut d = Deframer::new(cfg);
    let mut out = Vec::new();
    let mut chunks = chunking.map(Chunks::new);
    let mut rest = stream;
    loop {
        while let Some(r) = d.pop() {
            out.push(r);
        }
        if rest.is_empty() {
            return (out, d);
        }
        let n = chunks.as_mut().map_or(rest.len(), Chunks::size).min(rest.len());
        d.push(&rest[..n]);
        rest = &rest[n..];
    }
}

fn frame_all(cfg: FramingConfig, ulpdus: &[Vec<u8>]) -> (Vec<u8>, Vec<usize>) {
    let mut framer = Framer::new(cfg);
    let (mut stream, mut starts) = (Vec::new(), Vec::new());
    for u in ulpdus {
        starts.push(stream.len());
        framer.frame(u, &mut stream).expect("ULPDUs here fit in an FPDU");
    }
    assert_eq!(framer.position(), stream.len() as u64);
    (stream, starts)
}

fn oks(ulpdus: &[Vec<u8>]) -> Delivered {
    ulpdus.iter().cloned().map(Ok).collect()
}

/// Overwrites the CRC field of every whole FPDU of `stream`, walking it as
/// a receiver does, so that a raw stream gets past the CRC check to the
/// marker check and to delivery.
fn write_crcs(markers: bool, stream: &mut [u8]) {
    let mut at = 0;
    loop {
        let lead = if markers && is_marker_pos(at as u64) { MARKER_LEN } else { 0 };
        let Some(len) = stream.get(at + lead..at + lead + 2) else {
            return;
        };
        let ulpdu_len = usize::from(u16::from_be_bytes([len[0], len[1]]));
        let content_len = 2 + ulpdu_len + pad_len(ulpdu_len);
        let wire = fpdu_wire_len(at as u64, content_len, markers);
        let Some(fpdu) = stream.get_mut(at..at + wire) else {
            return;
        };
        let (covered, field) = fpdu.split_at_mut(wire - 4);
        field.copy_from_slice(&crc_field(crc32c(covered)));
        at += wire;
    }
}

/// Any stream: chunking never changes what is delivered, an error is final
/// and only comes from a check that is enabled (never the CRC check when the
/// CRCs were written right), and re-framing what was delivered takes as many
/// octets as were consumed and deframes back to it.
fn deframe_raw(cfg: FramingConfig, chunking: u8, stream: &[u8], crcs_right: bool) -> bool {
    let (whole, d) = deframe(cfg, stream, None);
    let (chunked, _) = deframe(cfg, stream, Some(chunking));
    assert_eq!(whole, chunked, "the chunking changed what was delivered");

    let ulpdus: Vec<Vec<u8>> = whole.iter().filter_map(|r| r.clone().ok()).collect();
    match whole.last() {
        Some(Err(e)) => {
            assert_eq!(ulpdus.len() + 1, whole.len(), "delivery after an error");
            assert!(d.has_failed());
            match e {
                MpaError::Crc { .. } => assert!(cfg.crc && !crcs_right, "CRC error: {e:?}"),
                MpaError::Marker { .. } => assert!(cfg.markers, "marker error without markers"),
                MpaError::UlpduTooLong(_) => panic!("transmit error from the receiver"),
                MpaError::OutOfStep { .. } => panic!("a packet error from a stream"),
            }
        }
        _ => {
            assert!(!d.has_failed());
            assert_eq!(d.position() + d.buffered() as u64, stream.len() as u64);
        }
    }
    let (again, _) = frame_all(cfg, &ulpdus);
    assert_eq!(again.len() as u64, d.position(), "re-framed length");
    assert_eq!(deframe(cfg, &again, Some(chunking)).0, oks(&ulpdus));
    !ulpdus.is_empty()
}

/// ULPDUs cut from `data` (a 3-octet bit index, then up to 8 of
/// `length(2) | octets`, padded with a pattern when the input runs out) are
/// framed and deframed back. One flipped bit outside a ULPDU_Length is
/// caught by the CRC when CRCs are on, by the marker check when it lands in
/// an FPDUPTR, and otherwise changes one delivered bit at most.
fn deframe_framed(cfg: FramingConfig, chunking: u8, flip: bool, data: &[u8]) -> bool {
    let [b0, b1, b2, rest @ ..] = data else {
        return false;
    };
    let mut rest = rest;
    let bit_index = usize::from(*b0) << 16 | usize::from(*b1) << 8 | usize::from(*b2);
    let mut ulpdus = Vec::new();
    while ulpdus.len() < 8 {
        let [hi, lo, tail @ ..] = rest else { break };
        let len = usize::from(u16::from_be_bytes([*hi, *lo]) & MAX_FUZZ_ULPDU);
        let take = len.min(tail.len());
        let mut u = tail[..take].to_vec();
        u.resize(len, 0x5a);
        ulpdus.push(u);
        rest = &tail[take..];
    }
    let (mut stream, starts) = frame_all(cfg, &ulpdus);
    assert_eq!(stream.len() % 4, 0, "FPDUs keep 4-octet alignment");

    if !flip || stream.is_empty() {
        let (got, d) = deframe(cfg, &stream, Some(chunking));
        assert_eq!(got, oks(&ulpdus), "framed ULPDUs come back");
        assert_eq!((d.position(), d.buffered()), (stream.len() as u64, 0));
        return !ulpdus.is_empty();
    }

    let bit = bit_index % (stream.len() * 8);
    let at = bit / 8;
    stream[at] ^= 1 << (bit % 8);
    let (got, _) = deframe(cfg, &stream, Some(chunking));

    // The FPDU holding the flipped octet, and where its ULPDU_Length is.
    let k = starts.partition_point(|&s| s <= at) - 1;
    let leading_marker = cfg.markers && is_marker_pos(starts[k] as u64);
    let len_at = starts[k] + if leading_marker { MARKER_LEN } else { 0 };
    if (len_at..len_at + 2).contains(&at) {
        // Every later boundary moves: only "no panic" is left to check.
        return false;
    }
    let in_marker = cfg.markers && (at as u64 % MARKER_INTERVAL) < MARKER_LEN as u64;
    // FPDUPTR is octets 2-3 of a marker; its two low bits are ignored.
    let in_fpduptr = in_marker && at % 4 >= 2 && !(at % 4 == 3 && bit % 8 < 2);
    let mut want = oks(&ulpdus[..k]);
    if cfg.crc {
        assert!(matches!(got.get(k), Some(Err(MpaError::Crc { .. }))), "{got:?}");
    } else if in_fpduptr {
        assert!(matches!(got.get(k), Some(Err(MpaError::Marker { .. }))), "{got:?}");
    } else {
        assert_eq!(got.len(), ulpdus.len());
        let flipped: u32 = got
            .iter()
            .zip(&ulpdus)
            .map(|(g, u)| {
                let g = g.as_ref().expect("nothing checks this octet");
                assert_eq!(g.len(), u.len());
                g.iter().zip(u).map(|(a, b)| (a ^ b).count_ones()).sum::<u32>()
            })
            .sum();
        assert!(flipped <= 1, "{flipped} bits changed by one flip");
        return true;
    }
    want.push(got[k].clone());
    assert_eq!(got, want, "FPDUs before the flip are delivered, nothing after");
    true
}

/// DDP and RDMAP headers of one ULPDU. Whatever parses re-encodes to the
/// input with only reserved bits cleared, parses again to the same segment,
/// and is consistent with its opcode; whatever fails names an RFC-defined
/// Terminate code.
pub fn ddp_rdmap_parse(data: &[u8]) -> bool {
    check_ddp_header(data);
    let seg = match parse_ulpdu(data) {
        Ok(seg) => seg,
        Err(e) => {
            check_rejection(data, &e);
            return false;
        }
    };
    assert_eq!(seg.encoded_len(), data.len());
    let encoded = seg.to_vec();
    assert_eq!(encoded, canonical_ulpdu(&seg, data), "re-encoding of {data:02x?}");
    assert_eq!(parse_ulpdu(&encoded), Ok(seg));
    check_segment(&seg);
    true
}

/// A rejection names an RFC-defined Terminate code and is the first failing
/// check in the order the layers make them: DDP header, QN, RDMAP version,
/// opcode, the opcode's T flag and QN, then its own layout.
fn check_rejection(data: &[u8], e: &RdmapError) {
    assert!(e.term_code().is_known(), "{e:?} -> {}", e.term_code());
    let ddp = match DdpHeader::parse(data) {
        Ok(h) => h,
        Err(d) => {
            assert_eq!(e, &RdmapError::Ddp(d));
            return;
        }
    };
    let qn = match ddp {
        DdpHeader::Untagged(h) => Some(h.qn),
        DdpHeader::Tagged(_) => None,
    };
    let (rv, code) = (ddp.ulp_ctrl() >> 6, ddp.ulp_ctrl() & 0x0F);
    let want = match (qn, Opcode::try_from(code)) {
        (Some(qn), _) if qn > QN_ATOMIC_RESPONSE => RdmapError::InvalidQn(qn),
        _ if rv != RDMAP_VERSION => RdmapError::Version(rv),
        (_, Err(unknown)) => unknown,
        (_, Ok(opcode)) if opcode.is_tagged() != ddp.is_tagged() => {
            RdmapError::TaggedMismatch { opcode, tagged: ddp.is_tagged() }
        }
        (Some(qn), Ok(opcode)) if Some(qn) != opcode.queue() => RdmapError::QueueMismatch { opcode, qn },
        _ => {
            let layout = matches!(
                e,
                RdmapError::NotSingleSegment { .. }
                    | RdmapError::Length { .. }
                    | RdmapError::Truncated { .. }
                    | RdmapError::ImmediateDataLength { .. }
            );
            assert!(layout, "{e:?} for {data:02x?}");
            return;
        }
    };
    assert_eq!(e, &want, "for {data:02x?}");
}

fn check_ddp_header(data: &[u8]) {
    let needed = |ctrl: u8| if ctrl & T_FLAG != 0 { 14 } else { 18 };
    match DdpHeader::parse(data) {
        Ok(h) => {
            assert_eq!(h.len(), needed(data[0]));
            let mut want = data[..h.len()].to_vec();
            want[0] &= DDP_CTRL_USED;
            assert_eq!(h.to_vec(), want);
        }
        Err(DdpError::Version { dv, tagged }) => {
            assert_eq!((dv, tagged), (data[0] & DV_MASK, data[0] & T_FLAG != 0));
            assert_ne!(dv, DDP_VERSION);
        }
        Err(DdpError::Truncated { needed: n, got }) => {
            assert_eq!(got, data.len());
            assert!(data.is_empty() || n == needed(data[0]));
            assert!(got < n);
        }
    }
}

/// `data` with the reserved bits the parser ignores cleared, as the encoder
/// writes them.
fn canonical_ulpdu(seg: &Segment<'_>, data: &[u8]) -> Vec<u8> {
    let mut want = data.to_vec();
    want[0] &= DDP_CTRL_USED;
    let h = seg.ddp.len();
    match seg.header {
        // Terminate control word: Reserved(13) after M, D and R.
        RdmapHeader::Terminate(_) => {
            want[h + 2] &= 0xE0;
            want[h + 3] = 0;
        }
        // Atomic Request: 28 reserved bits before the AOpCode.
        RdmapHeader::AtomicRequest(_) => {
            want[h..h + 3].fill(0);
            want[h + 3] &= 0x0F;
        }
        _ => {}
    }
    want
}

/// The parsed header matches the opcode, single-segment messages are
/// single segments, and an atomic's operands give the RFC 7306 result.
fn check_segment(seg: &Segment<'_>) {
    assert_eq!(seg.opcode.is_tagged(), seg.ddp.is_tagged());
    let mo = match seg.ddp {
        DdpHeader::Untagged(h) => {
            assert_eq!(Some(h.qn), seg.opcode.queue());
            h.mo
        }
        DdpHeader::Tagged(_) => 0,
    };
    let single = seg.ddp.last() && mo == 0;
    let immediate = matches!(seg.opcode, Opcode::ImmediateData | Opcode::ImmediateDataSolicited);
    match (&seg.header, seg.opcode) {
        (RdmapHeader::ReadRequest(_), Opcode::ReadRequest)
        | (RdmapHeader::AtomicResponse(_), Opcode::AtomicResponse) => {
            assert!(single && seg.payload.is_empty());
        }
        (RdmapHeader::AtomicRequest(req), Opcode::AtomicRequest) => {
            assert!(single && seg.payload.is_empty());
            check_atomic(req);
        }
        // Octets after a Terminate header are kept as payload.
        (RdmapHeader::Terminate(_), Opcode::Terminate) => assert!(single),
        (RdmapHeader::ImmediateData(_), _) if immediate => {
            assert!(single && seg.payload.is_empty());
        }
        // A fragment of a multi-segment Immediate Data message, which
        // holds 8 octets in all.
        (RdmapHeader::None, _) if immediate => {
            let end = u64::from(mo) + seg.payload.len() as u64;
            assert!(!single && end <= IMMEDIATE_DATA_LEN as u64);
            assert!(!seg.ddp.last() || end == IMMEDIATE_DATA_LEN as u64);
        }
        (RdmapHeader::None, op) => assert_eq!(op.header_len(), Some(0), "{op:?}"),
        (h, op) => panic!("{op:?} parsed with {h:?}"),
    }
}

fn check_atomic(req: &crate::rdmap::AtomicRequest) {
    // Target values the fuzzer controls: equal to Compare Data, one bit
    // away from it, and unrelated.
    let one_bit = 1u64 << (req.to % 64);
    let originals = [req.compare, req.compare ^ one_bit, req.compare.rotate_left(17) ^ req.to];
    for original in originals {
        let Ok(op) = req.op() else {
            let unsupported = RdmapError::UnsupportedAOpCode(req.aopcode);
            assert_eq!(req.apply(original), Err(unsupported));
            continue;
        };
        let new = req.apply(original).expect("supported AOpCode");
        match op {
            AtomicOp::FetchAdd => {
                let add = (req.add_swap, req.add_swap_mask);
                assert_eq!(new, masked_fetch_add_bit_serial(original, add.0, add.1));
            }
            AtomicOp::CmpSwap => {
                let swapped = (original ^ req.compare) & req.compare_mask == 0;
                let mask = if swapped { req.add_swap_mask } else { 0 };
                assert_eq!(new & !mask, original & !mask);
                assert_eq!(new & mask, req.add_swap & mask);
            }
        }
    }
}

/// Liberal Terminate parsing. A failure can only be running out of octets;
/// a success occupies `encoded_len` octets, re-encodes to them with the
/// reserved bits cleared, fails on any shorter prefix, and survives a trip
/// through a Terminate segment with trailing octets.
pub fn terminate_parse(data: &[u8]) -> bool {
    let (t, used) = match Terminate::parse_prefix(data) {
        Ok(ok) => ok,
        Err(e) => {
            let truncated = matches!(e, RdmapError::Truncated { needed, got, .. }
                if got == data.len() && needed > got);
            assert!(truncated, "{e:?}");
            return false;
        }
    };
    assert_eq!(used, t.encoded_len());
    let word = u32::from_be_bytes([data[0], data[1], data[2], data[3]]);
    let (code, m, d, r) = TermCode::from_control_word(word);
    assert_eq!((t.code, t.m, t.d(), t.r()), (code, m, d, r));
    if !(m || d) {
        assert_eq!(t.segment_length, 0);
    }
    if let Some(h) = t.ddp_header {
        let b = h.as_bytes();
        assert_eq!(b.len(), if b[0] & T_FLAG != 0 { 14 } else { 18 });
    }
    let mut want = data[..used].to_vec();
    want[2] &= 0xE0;
    want[3] = 0;
    assert_eq!(t.to_vec(), want, "re-encoding of {data:02x?}");
    assert_eq!(Terminate::parse_prefix(&want), Ok((t, used)));
    assert!(Terminate::parse(&data[..used - 1]).is_err());
    let _ = (t.code.name(), t.code.to_string());

    let trailing = &data[used..];
    let ulpdu = Segment { payload: trailing, ..Segment::terminate(1, t) }.to_vec();
    let seg = parse_ulpdu(&ulpdu).expect("a well-formed Terminate segment");
    assert_eq!((seg.header, seg.payload), (RdmapHeader::Terminate(t), trailing));
    true
}

/// MPA Request/Reply frames. Octet 0 says what follows: a frame as
/// received (0), a frame after the Request (1) or Reply (2) key, which the
/// target supplies because a fuzzer is slow to guess 16 octets, or the
/// fields of a frame to encode (3).
pub fn cm_frames(data: &[u8]) -> bool {
    let [mode, rest @ ..] = data else {
        return false;
    };
    let key = match mode & 3 {
        0 => None,
        1 => Some(KEY_REQ),
        2 => Some(KEY_REP),
        _ => return check_encode(rest),
    };
    let frame: Vec<u8> = key.iter().flatten().chain(rest).copied().collect();
    check_decode(&frame)
}

/// Decoding agrees with `frame_len`, a decoded frame re-encodes to its
/// octets (reserved flag bits cleared) and decodes again, every shorter
/// prefix is incomplete, and every error is the one the header calls for.
fn check_decode(data: &[u8]) -> bool {
    let (frame, n) = match MpaFrame::decode(data) {
        Ok(ok) => ok,
        Err(e) => {
            check_decode_error(data, &e);
            return false;
        }
    };
    assert_eq!(MpaFrame::frame_len(data), Ok(n));
    assert_eq!(n, FRAME_HEADER_LEN + frame.pd_length());
    let kind = if data[..16] == KEY_REQ { FrameKind::Request } else { FrameKind::Reply };
    assert_eq!(frame.kind, kind);
    let mut want = data[..n].to_vec();
    let s = if frame.rev >= 2 { FLAG_S } else { 0 };
    want[16] &= FLAG_M | FLAG_C | FLAG_R | s;
    assert_eq!(frame.encode().as_ref(), Ok(&want), "re-encoding of {data:02x?}");
    assert_eq!(MpaFrame::decode(&want), Ok((frame.clone(), n)));

    let other = match kind {
        FrameKind::Request => FrameKind::Reply,
        FrameKind::Reply => FrameKind::Request,
    };
    assert_eq!(MpaFrame::decode_as(data, kind), Ok((frame.clone(), n)));
    let wrong = CmError::WrongKind { expected: other, got: kind };
    assert_eq!(MpaFrame::decode_as(data, other), Err(wrong));
    let short = n - 1;
    let needed = if short < FRAME_HEADER_LEN { FRAME_HEADER_LEN } else { n };
    let incomplete = CmError::Incomplete { needed, got: short };
    assert_eq!(MpaFrame::decode(&data[..short]), Err(incomplete));

    if let Some(w) = frame.ird_ord {
        let e = w.effective();
        assert_eq!(e.effective(), e);
        assert_eq!((e.ird, e.ord, e.peer_to_peer), (w.ird, w.ord, w.peer_to_peer));
        if !w.peer_to_peer {
            assert!(!(e.send_rtr || e.write_rtr || e.read_rtr));
        }
    }
    true
}

fn check_decode_error(data: &[u8], e: &CmError) {
    assert_eq!(e.mpa_error_code().is_none(), matches!(e, CmError::Incomplete { .. }));
    let Some(hdr) = data.get(..FRAME_HEADER_LEN) else {
        let want = CmError::Incomplete { needed: FRAME_HEADER_LEN, got: data.len() };
        assert_eq!(e, &want);
        return;
    };
    let pd_len = usize::from(u16::from_be_bytes([hdr[18], hdr[19]]));
    let enhanced = hdr[16] & FLAG_S != 0 && hdr[17] >= 2;
    let want = if hdr[..16] != KEY_REQ && hdr[..16] != KEY_REP {
        CmError::BadKey
    } else if pd_len > MAX_PRIVATE_DATA {
        CmError::PrivateDataTooLong(pd_len)
    } else if data.len() < FRAME_HEADER_LEN + pd_len {
        CmError::Incomplete { needed: FRAME_HEADER_LEN + pd_len, got: data.len() }
    } else if enhanced && pd_len < IRD_ORD_LEN {
        CmError::MissingIrdOrd(pd_len)
    } else {
        panic!("{e:?} for a well-formed frame {data:02x?}")
    };
    assert_eq!(e, &want);
}

/// A frame built from `flags | rev | IRD(2) | ORD(2) | private data`
/// encodes and decodes back unless it breaks a limit, which `encode` then
/// reports.
fn check_encode(data: &[u8]) -> bool {
    let [flags, rev, i0, i1, o0, o1, pd @ ..] = data else {
        return false;
    };
    let kind = if flags & 1 != 0 { FrameKind::Reply } else { FrameKind::Request };
    let mut frame = MpaFrame {
        markers: flags & FLAG_M != 0,
        crc: flags & FLAG_C != 0,
        reject: flags & FLAG_R != 0,
        rev: *rev,
        private_data: pd.to_vec(),
        ..MpaFrame::new(kind)
    };
    if flags & FLAG_S != 0 {
        // Raw 16-bit values, shifted into range when bit 1 is set, so that
        // both valid and out-of-range IRD/ORD are tried.
        let mut w = IrdOrd::from_bytes([*i0, *i1, *o0, *o1]);
        w.ird = u16::from_be_bytes([*i0, *i1]) >> (flags & 2);
        w.ord = u16::from_be_bytes([*o0, *o1]) >> (flags & 2);
        frame = frame.enhanced(w);
    }
    let wide = frame.ird_ord.and_then(|w| [w.ird, w.ord].into_iter().find(|&v| v > IRD_ORD_NO_NEGOTIATION));
    match frame.encode() {
        Ok(bytes) => {
            assert!(frame.pd_length() <= MAX_PRIVATE_DATA && wide.is_none());
            assert_eq!(MpaFrame::decode(&bytes), Ok((frame, bytes.len())));
            true
        }
        Err(CmError::PrivateDataTooLong(n)) => {
            assert_eq!(n, frame.pd_length());
            assert!(n > MAX_PRIVATE_DATA);
            false
        }
        Err(CmError::IrdOrdRange(v)) => {
            assert!(frame.pd_length() <= MAX_PRIVATE_DATA);
            assert_eq!(Some(v), wide);
            false
        }
        Err(e) => panic!("encode: {e:?}"),
    }
}
