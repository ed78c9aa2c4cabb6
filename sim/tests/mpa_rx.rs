//! `mpa/rx` (the deframer) in Verilator against `rnic_proto::mpa`: streams of random
//! FPDUs cut into random pieces, with back-pressure, with and without markers and CRC;
//! CRC and marker errors; and the FPDUs of VECTORS V2-V11 (CHECKLIST MPA-02, -06, -08,
//! -09, -10, -12, -13, -16, -25).
mod common;

use std::collections::VecDeque;

use common::{hex, random_length, ulpdu_of, zero_send, V3_WITH_MARKER, WIRE_VECTORS};
use rand::rngs::StdRng;
use rand::{Rng, SeedableRng};
use rnic_proto::mpa::{crc32c, crc_field, Deframer, Framer, FramingConfig};
use rnic_sim::axis::Packet;
use rnic_sim::mpa::MpaRxDriver;
use rnic_sim::trace;

const LANES: usize = 8;
const MARKERS_AND_CRC: FramingConfig = FramingConfig { markers: true, crc: true };
const CRC_ONLY: FramingConfig = FramingConfig { markers: false, crc: true };

/// A piece size: mostly whole beats, often odd sizes, sometimes single octets.
fn chunk(rng: &mut StdRng, lanes: usize) -> usize {
    match rng.gen_range(0..10) {
        0..=4 => lanes,
        5 => 1,
        _ => rng.gen_range(1..=lanes),
    }
}

/// Runs cycles until `packets` ULPDUs came out or nothing moved for `patience` cycles.
fn collect(rx: &mut MpaRxDriver, rng: &mut StdRng, packets: usize, patience: u64) -> Vec<Packet> {
    let mut out = Vec::new();
    let mut idle = 0;
    while out.len() < packets && idle < patience {
        rx.cycle(rng);
        idle += 1;
        while let Some(p) = rx.sink.pop_packet() {
            out.push(p);
            idle = 0;
        }
    }
    out
}

fn differential(lanes: usize, cfg: FramingConfig, seed: u64, count: usize, valid_rate: f64, ready_rate: f64) {
    let mut rx = MpaRxDriver::new(lanes, cfg).expect("model");
    rx.source.valid_rate = valid_rate;
    rx.sink.ready_rate = ready_rate;
    let mut rng = StdRng::seed_from_u64(seed);
    let mut chunks = StdRng::seed_from_u64(seed ^ 0xC0FFEE);
    let mut framer = Framer::new(cfg);
    let mut reference = Deframer::new(cfg);
    let mut expected: VecDeque<Vec<u8>> = VecDeque::new();
    let (mut sent, mut checked, mut idle) = (0, 0, 0u64);
    while checked < count {
        while sent < count && expected.len() < 4 {
            let ulpdu: Vec<u8> = (0..random_length(&mut rng)).map(|_| rng.gen()).collect();
            let mut wire = Vec::new();
            framer.frame(&ulpdu, &mut wire).expect("fits");
            // The reference deframer must agree with what was framed.
            reference.push(&wire);
            assert_eq!(reference.pop(), Some(Ok(ulpdu.clone())), "proto round trip");
            rx.push_stream(&wire, || chunk(&mut chunks, lanes));
            expected.push_back(ulpdu);
            sent += 1;
        }
        rx.cycle(&mut rng);
        idle += 1;
        while let Some(p) = rx.sink.pop_packet() {
            p.check_shape(lanes, 1).unwrap_or_else(|e| panic!("ULPDU {checked}: {e}"));
            let want = expected.pop_front().expect("a ULPDU nobody sent");
            assert_eq!(p.user(), 0, "ULPDU {checked} flagged bad");
            assert_eq!(p.bytes(), want, "ULPDU {checked} (W={lanes}, {cfg:?})");
            checked += 1;
            idle = 0;
        }
        assert!(idle < 200_000, "deframer made no progress for 200 000 cycles (ULPDU {checked})");
    }
    assert_eq!(rx.failure(), None);
}

#[test]
fn mpa_rx_w8_matches_proto_markers_and_crc() {
    trace::on_failure("mpa_rx_w8_matches_proto_markers_and_crc", || {
        differential(8, MARKERS_AND_CRC, 11, 10_000, 0.8, 0.8)
    });
}

#[test]
fn mpa_rx_w8_matches_proto_crc_only() {
    trace::on_failure("mpa_rx_w8_matches_proto_crc_only", || differential(8, CRC_ONLY, 12, 10_000, 0.9, 0.7));
}

#[test]
fn mpa_rx_w8_matches_proto_markers_no_crc() {
    let cfg = FramingConfig { markers: true, crc: false };
    trace::on_failure("mpa_rx_w8_matches_proto_markers_no_crc", || differential(8, cfg, 13, 10_000, 1.0, 0.5));
}

#[test]
fn mpa_rx_w8_matches_proto_at_full_rate() {
    trace::on_failure("mpa_rx_w8_matches_proto_at_full_rate", || {
        differential(8, MARKERS_AND_CRC, 14, 10_000, 1.0, 1.0)
    });
}

#[test]
fn mpa_rx_w16_matches_proto_markers_and_crc() {
    trace::on_failure("mpa_rx_w16_matches_proto_markers_and_crc", || {
        differential(16, MARKERS_AND_CRC, 16, 10_000, 0.8, 0.8)
    });
}

#[test]
fn mpa_rx_w32_matches_proto_markers_and_crc() {
    trace::on_failure("mpa_rx_w32_matches_proto_markers_and_crc", || {
        differential(32, MARKERS_AND_CRC, 32, 10_000, 0.8, 0.8)
    });
}

#[test]
fn mpa_rx_w64_matches_proto_markers_and_crc() {
    trace::on_failure("mpa_rx_w64_matches_proto_markers_and_crc", || {
        differential(64, MARKERS_AND_CRC, 64, 10_000, 0.8, 0.8)
    });
}

/// Frames `ulpdus` from the start of Full Operation.
fn stream_of(cfg: FramingConfig, ulpdus: &[Vec<u8>]) -> Vec<u8> {
    let mut framer = Framer::new(cfg);
    let mut wire = Vec::new();
    for u in ulpdus {
        framer.frame(u, &mut wire).expect("fits");
    }
    wire
}

fn random_ulpdus(rng: &mut StdRng, n: usize) -> Vec<Vec<u8>> {
    (0..n).map(|_| (0..rng.gen_range(0..2000)).map(|_| rng.gen()).collect()).collect()
}

#[test]
fn mpa_08_25_corrupted_fpdu_is_flagged_and_nothing_follows() {
    // 300 streams, each with one flipped bit somewhere in FPDU `bad` (length field, data,
    // PAD, marker or CRC), followed by 70 KB more of valid FPDUs: the ULPDUs before it
    // arrive good, then exactly one flagged ULPDU, then nothing; the error code is 2.
    trace::on_failure("mpa_08_25_corrupted_fpdu_is_flagged_and_nothing_follows", || {
        let mut rng = StdRng::seed_from_u64(8);
        for case in 0..300 {
            let cfg = if case % 2 == 0 { MARKERS_AND_CRC } else { CRC_ONLY };
            let mut rx = MpaRxDriver::new(LANES, cfg).expect("model");
            let mut ulpdus = random_ulpdus(&mut rng, 6);
            let bad = rng.gen_range(0..ulpdus.len());
            ulpdus.extend(std::iter::repeat_n(vec![0x5a; 8000], 9));
            let good_before = stream_of(cfg, &ulpdus[..bad]);
            let mut wire = stream_of(cfg, &ulpdus);
            let fpdu_len = stream_of(cfg, &ulpdus[..=bad]).len() - good_before.len();
            let at = good_before.len() + rng.gen_range(0..fpdu_len);
            wire[at] ^= 1 << rng.gen_range(0..8);
            let mut reference = Deframer::new(cfg);
            reference.push(&wire);
            for u in &ulpdus[..bad] {
                assert_eq!(reference.pop(), Some(Ok(u.clone())));
            }
            assert!(matches!(reference.pop(), Some(Err(_))), "case {case}: proto sees the error");

            let mut chunks = StdRng::seed_from_u64(case);
            rx.push_stream(&wire, || chunk(&mut chunks, LANES));
            let mut got = collect(&mut rx, &mut rng, usize::MAX, 2_000);
            // The rest of the stream is accepted and dropped: it never backs up.
            for _ in 0..20_000 {
                if rx.source.pending() == 0 {
                    break;
                }
                rx.cycle(&mut rng);
            }
            got.extend(collect(&mut rx, &mut rng, usize::MAX, 100));
            assert_eq!(got.len(), bad + 1, "case {case}: corrupted octet {at} of FPDU {bad}");
            for (i, p) in got[..bad].iter().enumerate() {
                assert_eq!((p.user(), p.bytes()), (0, ulpdus[i].clone()), "case {case}, ULPDU {i}");
            }
            assert_eq!(got[bad].user() & 1, 1, "case {case}: CRC error flagged");
            assert_eq!(rx.failure(), Some(2), "case {case}");
            assert_eq!(rx.source.pending(), 0, "case {case}: the rest of the stream is drained");
        }
    });
}

/// The stream of RFC 5044 Figs. 5 and 6 (VECTORS V2): two Sends, the second FPDU at
/// 0x1EC with a marker at 0x200 inside it.
fn figure6_stream() -> (Vec<Vec<u8>>, Vec<u8>) {
    let ulpdus = vec![zero_send(1, 464), zero_send(2, 24)];
    let wire = stream_of(MARKERS_AND_CRC, &ulpdus);
    assert_eq!(&wire[0x21c..0x220], &[0x84, 0x92, 0x58, 0x98], "Figure 6 CRC");
    (ulpdus, wire)
}

/// Rewrites the FPDUPTR field of the marker at 0x200 and fixes the second FPDU's CRC.
fn with_marker(mut wire: Vec<u8>, marker: [u8; 4]) -> Vec<u8> {
    wire[0x200..0x204].copy_from_slice(&marker);
    let crc = crc32c(&wire[0x1ec..0x21c]);
    wire[0x21c..0x220].copy_from_slice(&crc_field(crc));
    wire
}

#[test]
fn mpa_02_12_rx_reads_the_rfc5044_figures_v2() {
    let (ulpdus, wire) = figure6_stream();
    let mut rx = MpaRxDriver::new(LANES, MARKERS_AND_CRC).expect("model");
    let mut rng = StdRng::seed_from_u64(2);
    rx.push_stream(&wire, || LANES);
    let got = collect(&mut rx, &mut rng, 2, 1000);
    assert_eq!(
        got.iter().map(|p| (p.user(), p.bytes())).collect::<Vec<_>>(),
        vec![(0, ulpdus[0].clone()), (0, ulpdus[1].clone())]
    );
}

#[test]
fn mpa_10_marker_reserved_bits_and_low_fpduptr_bits_are_ignored() {
    let (ulpdus, wire) = figure6_stream();
    let wire = with_marker(wire, [0xff, 0xff, 0x00, 0x17]);
    let mut rx = MpaRxDriver::new(LANES, MARKERS_AND_CRC).expect("model");
    let mut rng = StdRng::seed_from_u64(10);
    rx.push_stream(&wire, || LANES);
    let got = collect(&mut rx, &mut rng, 2, 1000);
    assert_eq!(got.len(), 2);
    assert_eq!((got[1].user(), got[1].bytes()), (0, ulpdus[1].clone()));
    assert_eq!(rx.failure(), None);
}

#[test]
fn mpa_13_marker_off_by_4_is_a_marker_error() {
    let (ulpdus, wire) = figure6_stream();
    let wire = with_marker(wire, [0x00, 0x00, 0x00, 0x18]);
    let mut reference = Deframer::new(MARKERS_AND_CRC);
    reference.push(&wire);
    assert_eq!(reference.pop(), Some(Ok(ulpdus[0].clone())));
    assert!(matches!(reference.pop(), Some(Err(e)) if e.terminate_code() == Some(3)));

    let mut rx = MpaRxDriver::new(LANES, MARKERS_AND_CRC).expect("model");
    let mut rng = StdRng::seed_from_u64(13);
    rx.push_stream(&wire, || LANES);
    let got = collect(&mut rx, &mut rng, 3, 1000);
    assert_eq!(got.len(), 2);
    assert_eq!(got[0].user(), 0);
    assert_eq!(got[1].user(), 2, "marker error flagged, CRC good");
    assert_eq!(rx.failure(), Some(3));
}

#[test]
fn mpa_09_crc_octets_in_network_order_are_rejected() {
    // VECTORS V3 with its CRC field written 01 b1 f5 20 instead of 20 f5 b1 01.
    let mut wire = hex("001741430000000000000000000000010000000048656c6c6f000000");
    wire.extend([0x01, 0xb1, 0xf5, 0x20]);
    let mut rx = MpaRxDriver::new(LANES, CRC_ONLY).expect("model");
    let mut rng = StdRng::seed_from_u64(9);
    rx.push_stream(&wire, || LANES);
    let got = collect(&mut rx, &mut rng, 1, 1000);
    assert_eq!(got.len(), 1);
    assert_eq!(got[0].user(), 1);
    assert_eq!(rx.failure(), Some(2));
}

#[test]
fn mpa_05_crc_field_not_checked_when_crc_is_off() {
    let mut wire = hex("001741430000000000000000000000010000000048656c6c6f000000");
    wire.extend([0xde, 0xad, 0xbe, 0xef]);
    let mut rx = MpaRxDriver::new(LANES, FramingConfig { markers: false, crc: false }).expect("model");
    let mut rng = StdRng::seed_from_u64(5);
    rx.push_stream(&wire, || LANES);
    let got = collect(&mut rx, &mut rng, 1, 1000);
    assert_eq!((got[0].user(), got[0].bytes()), (0, wire[2..25].to_vec()));
}

#[test]
fn mpa_16_fpdu_split_over_segments_is_delivered_once_after_its_last_octet() {
    // VECTORS V3 in pieces of 1, 2 and 29 octets: nothing leaves before the last piece.
    let wire = hex("001741430000000000000000000000010000000048656c6c6f00000020f5b101");
    let mut rx = MpaRxDriver::new(LANES, CRC_ONLY).expect("model");
    let mut rng = StdRng::seed_from_u64(16);
    rx.push_stream(&wire[..1], || LANES);
    rx.push_stream(&wire[1..3], || LANES);
    assert!(collect(&mut rx, &mut rng, 1, 200).is_empty());
    rx.push_stream(&wire[3..], || LANES);
    let got = collect(&mut rx, &mut rng, 2, 200);
    assert_eq!(got.len(), 1);
    assert_eq!((got[0].user(), got[0].bytes()), (0, wire[2..25].to_vec()));
}

#[test]
fn mpa_rx_reads_vectors_v3_to_v11_and_the_leading_marker_form_of_v3() {
    let mut rng = StdRng::seed_from_u64(3);
    for (name, v) in WIRE_VECTORS {
        let wire = hex(v);
        let mut rx = MpaRxDriver::new(LANES, CRC_ONLY).expect("model");
        rx.push_stream(&wire, || LANES);
        let got = collect(&mut rx, &mut rng, 1, 1000);
        assert_eq!((got[0].user(), got[0].bytes()), (0, ulpdu_of(&wire)), "{name}");
    }
    let with_marker = hex(V3_WITH_MARKER);
    let mut rx = MpaRxDriver::new(LANES, MARKERS_AND_CRC).expect("model");
    rx.push_stream(&with_marker, || 3);
    let got = collect(&mut rx, &mut rng, 1, 1000);
    assert_eq!((got[0].user(), got[0].bytes()), (0, with_marker[6..29].to_vec()));
}

#[test]
fn mpa_03_rx_ignores_a_nonzero_pad() {
    // VECTORS V3 with PAD ff ff ff and the CRC recomputed over it: accepted, and only the
    // 23 ULPDU octets leave.
    let mut wire = hex("001741430000000000000000000000010000000048656c6c6fffffff");
    let crc = crc32c(&wire);
    wire.extend(crc_field(crc));
    let mut rx = MpaRxDriver::new(LANES, CRC_ONLY).expect("model");
    let mut rng = StdRng::seed_from_u64(33);
    rx.push_stream(&wire, || LANES);
    let got = collect(&mut rx, &mut rng, 1, 1000);
    assert_eq!((got[0].user(), got[0].bytes()), (0, wire[2..25].to_vec()));
}
