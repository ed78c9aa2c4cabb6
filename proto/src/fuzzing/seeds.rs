//! The fuzz target bodies on a fixed, seeded corpus: well-formed inputs and
//! random mutations of them, so `cargo test` checks the same properties as
//! `cargo fuzz` without a nightly toolchain.

use super::{cm_frames, ddp_rdmap_parse, mpa_deframe, terminate_parse};
use crate::cm::{FrameKind, IrdOrd, MpaFrame};
use crate::mpa::{Framer, FramingConfig};
use crate::rdmap::{AtomicRequest, AtomicResponse, Opcode, RdmapHeader, ReadRequest, Segment};
use crate::terminate::{TermCode, Terminate, TerminatedDdpHeader};
use rand::rngs::StdRng;
use rand::{Rng, SeedableRng};

fn bytes(rng: &mut StdRng, n: usize) -> Vec<u8> {
    (0..n).map(|_| rng.gen()).collect()
}

/// Random octets, a random number of them in `len`.
fn some_bytes(rng: &mut StdRng, len: std::ops::Range<usize>) -> Vec<u8> {
    let n = rng.gen_range(len);
    bytes(rng, n)
}

/// One to three edits of the kinds libFuzzer makes first.
fn mutate(rng: &mut StdRng, v: &mut Vec<u8>) {
    for _ in 0..rng.gen_range(1..=3) {
        let at = rng.gen_range(0..=v.len());
        match rng.gen_range(0..6) {
            0 if at < v.len() => v[at] ^= 1 << rng.gen_range(0..8),
            1 if at < v.len() => v[at] = rng.gen(),
            2 if at < v.len() => {
                v.remove(at);
            }
            3 => v.truncate(at),
            4 => v.insert(at, rng.gen()),
            _ => v.extend(some_bytes(rng, 1..16)),
        }
    }
}

/// Runs `target` on `n` inputs: a quarter as generated, the rest mutated,
/// and checks that both the accepting and the rejecting paths were taken.
fn run(seed: u64, n: usize, gen: impl Fn(&mut StdRng) -> Vec<u8>, target: fn(&[u8]) -> bool) {
    let mut rng = StdRng::seed_from_u64(seed);
    let mut accepted = 0;
    for i in 0..n {
        let mut input = gen(&mut rng);
        if i % 4 != 0 {
            mutate(&mut rng, &mut input);
        }
        accepted += usize::from(target(&input));
    }
    assert!(accepted > n / 10 && accepted < n, "accepted {accepted} of {n}");
}

fn ulpdu_len(rng: &mut StdRng) -> usize {
    // Around the 512-octet marker interval, and across several of them.
    [0, 1, 3, 17, 100, 509, 600, 1500][rng.gen_range(0..8)]
}

#[test]
fn seeds_mpa_deframe() {
    run(0x5044, 10_000, mpa_input, mpa_deframe);
}

/// `flags | chunking` then either framed ULPDUs (raw mode, so the deframer
/// has something to accept) or the length-prefixed ULPDUs of framed mode.
fn mpa_input(rng: &mut StdRng) -> Vec<u8> {
    let flags: u8 = rng.gen_range(0..16);
    let mut v = vec![flags, rng.gen()];
    let ulpdus: Vec<Vec<u8>> = (0..rng.gen_range(0..4))
        .map(|_| {
            let n = ulpdu_len(rng);
            bytes(rng, n)
        })
        .collect();
    if flags & 4 == 0 {
        let cfg = FramingConfig { markers: flags & 1 != 0, crc: flags & 2 != 0 };
        let mut framer = Framer::new(cfg);
        for u in &ulpdus {
            framer.frame(u, &mut v).unwrap();
        }
    } else {
        // The bit to flip: anywhere, or in one of the first markers.
        let bit: u32 = if rng.gen_bool(0.5) {
            rng.gen()
        } else {
            (rng.gen_range(0..3) * 512 + rng.gen_range(0..4)) * 8 + rng.gen_range(0..8)
        };
        v.extend_from_slice(&bit.to_be_bytes()[1..]);
        for u in &ulpdus {
            v.extend_from_slice(&(u.len() as u16).to_be_bytes());
            // Sometimes short, so the pattern fills the rest.
            let keep = if rng.gen_bool(0.2) { u.len() / 2 } else { u.len() };
            v.extend_from_slice(&u[..keep]);
        }
    }
    v
}

#[test]
fn seeds_ddp_rdmap_parse() {
    run(0x5041, 20_000, ulpdu_input, ddp_rdmap_parse);
}

fn read_request(rng: &mut StdRng) -> ReadRequest {
    ReadRequest { sink_stag: rng.gen(), sink_to: rng.gen(), size: rng.gen(), src_stag: rng.gen(), src_to: rng.gen() }
}

fn terminate(rng: &mut StdRng) -> Terminate {
    let code = TermCode::ALL[rng.gen_range(0..TermCode::ALL.len())].0;
    let mut t = Terminate::new(code);
    if rng.gen_bool(0.5) {
        let offending = Segment::write(rng.gen(), rng.gen(), b"").to_vec();
        let offending = if rng.gen_bool(0.5) { offending } else { Segment::send(rng.gen(), b"x").to_vec() };
        let h = TerminatedDdpHeader::from_segment(&offending).unwrap();
        t = t.with_ddp(rng.gen(), h);
    } else {
        t.m = rng.gen_bool(0.3);
    }
    if rng.gen_bool(0.5) {
        t = t.with_rdma(read_request(rng));
    }
    t
}

fn ulpdu_input(rng: &mut StdRng) -> Vec<u8> {
    let payload = some_bytes(rng, 0..40);
    let seg = match rng.gen_range(0..10) {
        0 => Segment::tagged(Opcode::RdmaWrite, rng.gen(), rng.gen(), rng.gen(), &payload),
        1 => Segment::read_response(rng.gen(), rng.gen(), &payload),
        2 => {
            let op = [Opcode::Send, Opcode::SendSolicited][rng.gen_range(0..2)];
            let h = RdmapHeader::None;
            Segment::untagged(op, rng.gen(), 0, rng.gen(), rng.gen(), h, &payload)
        }
        3 => Segment::send_invalidate(rng.gen(), rng.gen(), &payload),
        4 => Segment::read_request(rng.gen(), read_request(rng)),
        5 => Segment::terminate(1, terminate(rng)),
        6 => Segment::immediate(rng.gen(), rng.gen(), rng.gen()),
        7 => {
            // A fragment of a split Immediate Data message.
            let mo = rng.gen_range(0..8);
            let frag = &payload[..payload.len().min(8 - mo)];
            let op = Opcode::ImmediateData;
            let last = mo + frag.len() == 8;
            Segment::untagged(op, last, 0, 1, mo as u32, RdmapHeader::None, frag)
        }
        8 => {
            let req = if rng.gen_bool(0.5) {
                AtomicRequest::fetch_add(rng.gen(), rng.gen(), rng.gen(), rng.gen(), rng.gen())
            } else {
                let (id, stag, to) = (rng.gen(), rng.gen(), rng.gen());
                let (s, sm, c, cm) = (rng.gen(), rng.gen(), rng.gen(), rng.gen());
                AtomicRequest::cmp_swap(id, stag, to, s, sm, c, cm)
            };
            Segment::atomic_request(rng.gen(), req)
        }
        _ => {
            let resp = AtomicResponse { request_id: rng.gen(), original: rng.gen() };
            Segment::atomic_response(rng.gen(), resp)
        }
    };
    seg.to_vec()
}

#[test]
fn seeds_terminate_parse() {
    run(0x5040, 20_000, terminate_input, terminate_parse);
}

fn terminate_input(rng: &mut StdRng) -> Vec<u8> {
    let mut v = terminate(rng).to_vec();
    if rng.gen_bool(0.3) {
        v.extend(some_bytes(rng, 1..8));
    }
    v
}

#[test]
fn seeds_cm_frames() {
    run(0x6581, 20_000, frame_input, cm_frames);
}

/// A mode octet, then an encoded frame (whole, or without its key when the
/// target supplies it), or the fields `cm_frames` encodes.
fn frame_input(rng: &mut StdRng) -> Vec<u8> {
    let mode: u8 = rng.gen_range(0..4);
    let mut v = vec![mode];
    if mode == 3 {
        let pd_len = [0, 10, 300, 600][rng.gen_range(0..4)];
        v.extend(bytes(rng, 6 + pd_len));
        return v;
    }
    let kind = match mode {
        1 => FrameKind::Request,
        2 => FrameKind::Reply,
        _ => [FrameKind::Request, FrameKind::Reply][rng.gen_range(0..2)],
    };
    let pd_len = [0, 1, 4, 40][rng.gen_range(0..4)];
    let mut f = MpaFrame {
        markers: rng.gen(),
        crc: rng.gen(),
        reject: rng.gen(),
        rev: rng.gen_range(1..=2),
        private_data: bytes(rng, pd_len),
        ..MpaFrame::new(kind)
    };
    if f.rev == 2 && rng.gen_bool(0.6) {
        let w = IrdOrd::from_bytes(rng.gen());
        f = f.enhanced(w);
    }
    let encoded = f.encode().unwrap();
    let skip = if mode == 0 { 0 } else { 16 };
    v.extend_from_slice(&encoded[skip..]);
    if rng.gen_bool(0.2) {
        // The first FPDU may follow in the same read.
        v.extend(bytes(rng, 8));
    }
    v
}
