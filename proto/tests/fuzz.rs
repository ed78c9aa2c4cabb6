//! Deterministic fuzzing of every parser: random and mutated byte strings
//! must give `Ok` or `Err`, never a panic. Whatever parses must also survive
//! an encode → parse round trip unchanged.

mod common;
use common::{hex, send_ulpdu};
use rand::rngs::StdRng;
use rand::{Rng, SeedableRng};
use rnic_proto::cm::{FrameKind, IrdOrd, MpaFrame};
use rnic_proto::ddp::DdpHeader;
use rnic_proto::mpa::{Deframer, Framer, FramingConfig};
use rnic_proto::rdmap::{parse_ulpdu, AtomicRequest, AtomicResponse, Opcode, RdmapHeader, ReadRequest, Segment};
use rnic_proto::terminate::{TermCode, Terminate, TerminatedDdpHeader};

const ITERATIONS: usize = 25_000;

fn seed_ulpdus() -> Vec<Vec<u8>> {
    let rr = ReadRequest { sink_stag: 1, sink_to: 2, size: 3, src_stag: 4, src_to: 5 };
    let term = Terminate::new(TermCode::RDMA_PROT_INVALID_STAG)
        .with_ddp(46, TerminatedDdpHeader::from_segment(&send_ulpdu(1, 0)).unwrap())
        .with_rdma(rr);
    let tagged_term = Terminate::new(TermCode::DDP_TAGGED_INVALID_STAG)
        .with_ddp(78, TerminatedDdpHeader::from_segment(&Segment::write(9, 9, b"").to_vec()).unwrap());
    vec![
        Segment::write(0xdead_beef, 0x1000, b"hello world").to_vec(),
        Segment::read_response(1, 2, &[7; 33]).to_vec(),
        Segment::send(1, b"Hello").to_vec(),
        Segment::send_invalidate(2, 0x55, b"inv").to_vec(),
        Segment::untagged(Opcode::SendSolicited, false, 0, 3, 100, RdmapHeader::None, b"x").to_vec(),
        Segment::read_request(1, rr).to_vec(),
        Segment::terminate(1, term).to_vec(),
        Segment::terminate(1, tagged_term).to_vec(),
        Segment::terminate(1, Terminate::new(TermCode::MPA_CRC)).to_vec(),
        Segment::immediate(2, [1, 2, 3, 4, 5, 6, 7, 8], true).to_vec(),
        Segment::atomic_request(2, AtomicRequest::fetch_add(1, 2, 0x1000, 1, 0)).to_vec(),
        Segment::atomic_response(1, AtomicResponse { request_id: 1, original: 0x29 }).to_vec(),
    ]
}

fn seed_frames() -> Vec<Vec<u8>> {
    let p2p = IrdOrd { peer_to_peer: true, ird: 16, read_rtr: true, ord: 16, ..IrdOrd::default() };
    vec![
        MpaFrame::new(FrameKind::Request).encode().unwrap(),
        MpaFrame { reject: true, private_data: b"no".to_vec(), ..MpaFrame::new(FrameKind::Reply) }.encode().unwrap(),
        MpaFrame::new(FrameKind::Request).enhanced(p2p).encode().unwrap(),
        hex("4d504120494420526570204672616d65 50 02 0004 3fff3fff"),
    ]
}

fn mutate(rng: &mut StdRng, input: &[u8]) -> Vec<u8> {
    let mut v = input.to_vec();
    match rng.gen_range(0..8) {
        0 => v.truncate(rng.gen_range(0..=v.len())),
        1 => {
            for _ in 0..rng.gen_range(1..4) {
                if !v.is_empty() {
                    let i = rng.gen_range(0..v.len());
                    v[i] ^= 1 << rng.gen_range(0..8);
                }
            }
        }
        2 => {
            let n = rng.gen_range(0..80);
            v = (0..n).map(|_| rng.gen()).collect();
        }
        3 => v.extend((0..rng.gen_range(1..40)).map(|_| rng.gen::<u8>())),
        4 => {
            if !v.is_empty() {
                let i = rng.gen_range(0..v.len());
                v[i] = rng.gen();
            }
        }
        5 => {
            // Clobber the first two octets: control / length fields.
            for b in v.iter_mut().take(2) {
                *b = rng.gen();
            }
        }
        6 => {
            if v.len() > 1 {
                let i = rng.gen_range(0..v.len());
                v.remove(i);
            }
        }
        _ => {
            let i = rng.gen_range(0..=v.len());
            v.insert(i, rng.gen());
        }
    }
    v
}

/// Runs the ULPDU-level parsers; returns whether `parse_ulpdu` accepted it.
fn check_ulpdu(bytes: &[u8]) -> bool {
    let _ = DdpHeader::parse(bytes);
    if let Ok(t) = Terminate::parse(bytes) {
        assert_eq!(Terminate::parse(&t.to_vec()), Ok(t));
    }
    match parse_ulpdu(bytes) {
        Ok(seg) => {
            let again = seg.to_vec();
            assert_eq!(parse_ulpdu(&again), Ok(seg), "re-parse of {bytes:02x?}");
            true
        }
        Err(e) => {
            let _ = e.term_code();
            false
        }
    }
}

fn check_frame(bytes: &[u8]) {
    if let Ok((frame, used)) = MpaFrame::decode(bytes) {
        assert!(used <= bytes.len());
        let again = frame.encode().expect("decoded frames re-encode");
        assert_eq!(MpaFrame::decode(&again), Ok((frame, again.len())));
    }
    let _ = MpaFrame::decode_as(bytes, FrameKind::Reply);
    let _ = MpaFrame::frame_len(bytes);
}

/// Feeds the stream in random chunks under every configuration; returns
/// (ULPDUs delivered, errors reported).
fn check_deframer(rng: &mut StdRng, stream: &[u8]) -> (usize, usize) {
    let (mut delivered, mut errors) = (0, 0);
    for cfg in [
        FramingConfig { markers: false, crc: false },
        FramingConfig { markers: true, crc: false },
        FramingConfig::CRC_ONLY,
        FramingConfig::MARKERS_AND_CRC,
    ] {
        let mut d = Deframer::new(cfg);
        let mut rest = stream;
        let mut failed = false;
        while !rest.is_empty() {
            let n = rng.gen_range(1..=rest.len().min(64));
            d.push(&rest[..n]);
            rest = &rest[n..];
            while let Some(r) = d.pop() {
                assert!(!failed, "delivery after an error");
                match r {
                    Ok(u) => {
                        check_ulpdu(&u);
                        delivered += 1;
                    }
                    Err(_) => {
                        failed = true;
                        errors += 1;
                    }
                }
            }
        }
    }
    (delivered, errors)
}

#[test]
fn fuzz_parsers_never_panic() {
    let mut rng = StdRng::seed_from_u64(0x1_7306);
    let ulpdus = seed_ulpdus();
    let frames = seed_frames();
    let mut accepted = 0;
    for _ in 0..ITERATIONS {
        let base = &ulpdus[rng.gen_range(0..ulpdus.len())];
        let mut input = mutate(&mut rng, base);
        if rng.gen_bool(0.3) {
            input = mutate(&mut rng, &input);
        }
        accepted += usize::from(check_ulpdu(&input));
        check_frame(&input);

        let f = &frames[rng.gen_range(0..frames.len())];
        check_frame(&mutate(&mut rng, f));
    }
    // The mutations reach both the accepting and the rejecting paths.
    assert!(accepted > ITERATIONS / 20 && accepted < ITERATIONS / 2, "accepted {accepted}");
}

#[test]
fn fuzz_deframer_never_panics() {
    let mut rng = StdRng::seed_from_u64(0x5044);
    let ulpdus = seed_ulpdus();
    let (mut delivered, mut errors) = (0, 0);
    for i in 0..ITERATIONS {
        let cfg = FramingConfig { markers: i % 2 == 0, crc: i % 3 != 0 };
        let mut framer = Framer::new(cfg);
        let mut stream = Vec::new();
        for _ in 0..rng.gen_range(1..6) {
            let u = &ulpdus[rng.gen_range(0..ulpdus.len())];
            framer.frame(u, &mut stream).unwrap();
        }
        // Several mutations of the framed stream, plus pure noise.
        let mutated = match i % 4 {
            0 => stream.clone(),
            1 => mutate(&mut rng, &stream),
            2 => {
                let once = mutate(&mut rng, &stream);
                mutate(&mut rng, &once)
            }
            _ => (0..rng.gen_range(0..200)).map(|_| rng.gen()).collect(),
        };
        let (d, e) = check_deframer(&mut rng, &mutated);
        delivered += d;
        errors += e;
    }
    assert!(delivered > 1000 && errors > 1000, "delivered {delivered}, errors {errors}");
}
