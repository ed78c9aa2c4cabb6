//! `mpa/rx` (the deframer) in Verilator against `rnic_proto::mpa`: streams of random
//! FPDUs, one packet each, cut into random pieces, with back-pressure, with and without
//! markers and CRC; CRC and marker errors and packets out of step with their FPDUs, each
//! flagged with its MPA error code and the next packet read as the FPDU it is; and the
//! FPDUs of VECTORS V2-V11 (CHECKLIST MPA-02, -06, -08, -09, -10, -12, -13, -16).
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
            let mut fpdu = Vec::new();
            framer.frame(&ulpdu, &mut fpdu).expect("fits");
            // The reference deframer must agree with what was framed.
            assert_eq!(reference.pop_packet(&fpdu), Some(Ok(ulpdu.clone())), "proto round trip");
            rx.push_packet(&fpdu, || chunk(&mut chunks, lanes));
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

/// Frames `ulpdus` from the start of Full Operation, one FPDU each.
fn fpdus_of(cfg: FramingConfig, ulpdus: &[Vec<u8>]) -> Vec<Vec<u8>> {
    let mut framer = Framer::new(cfg);
    let frame = |u: &Vec<u8>| {
        let mut fpdu = Vec::new();
        framer.frame(u, &mut fpdu).expect("fits");
        fpdu
    };
    ulpdus.iter().map(frame).collect()
}

/// How a packet of the out-of-step test is spoiled.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Spoil {
    None,
    /// Bits flipped anywhere (CRC, marker, ULPDU_Length: then out of step too).
    Flip,
    /// Cut short by 1 to all octets.
    Truncate,
    /// Octets appended: whole words, or 1 to 3.
    Extend,
    /// Empty, or shorter than any FPDU.
    Tiny,
    /// Random octets of any length up to 3 000.
    Garbage,
}

/// One spoiled or good packet for the FPDU `fpdu`.
fn spoil(rng: &mut StdRng, fpdu: &[u8]) -> (Spoil, Vec<u8>) {
    let how = match rng.gen_range(0..100) {
        0..=54 => Spoil::None,
        55..=69 => Spoil::Flip,
        70..=79 => Spoil::Truncate,
        80..=89 => Spoil::Extend,
        90..=94 => Spoil::Tiny,
        _ => Spoil::Garbage,
    };
    let mut p = fpdu.to_vec();
    match how {
        Spoil::None => {}
        Spoil::Flip => {
            for _ in 0..rng.gen_range(1..=2) {
                let bit = rng.gen_range(0..p.len() * 8);
                p[bit / 8] ^= 1 << (bit % 8);
            }
        }
        Spoil::Truncate => p.truncate(rng.gen_range(0..p.len())),
        Spoil::Extend => {
            let more = if rng.gen_bool(0.5) { 4 * rng.gen_range(1..=40) } else { rng.gen_range(1..=3) };
            p.extend((0..more).map(|_| rng.gen::<u8>()));
        }
        Spoil::Tiny => p = (0..rng.gen_range(0..8)).map(|_| rng.gen()).collect(),
        Spoil::Garbage => p = (0..rng.gen_range(1..=3000)).map(|_| rng.gen()).collect(),
    }
    (how, p)
}

/// Packets of one connection, most of them one good FPDU each, the others spoiled: each
/// packet gives exactly one ULPDU, in order, and its MPA error code is what
/// `Deframer::pop_packet` says of the packet at its stream position (the stream position
/// goes on by each packet's length, up to a whole word); the good ones come out whole.
/// No packet, however it is spoiled, costs the next one anything.
fn packets_in_and_out_of_step(lanes: usize, cfg: FramingConfig, seed: u64, count: usize) {
    let mut rx = MpaRxDriver::new(lanes, cfg).expect("model");
    rx.source.valid_rate = 0.9;
    rx.sink.ready_rate = 0.8;
    let mut rng = StdRng::seed_from_u64(seed);
    let mut chunks = StdRng::seed_from_u64(seed ^ 0xC0FFEE);
    let (mut position, mut codes) = (0u64, [0usize; 6]);
    let mut expected: VecDeque<(_, Result<Vec<u8>, u8>)> = VecDeque::new();
    let (mut sent, mut checked, mut idle) = (0, 0, 0u64);
    while checked < count {
        while sent < count && expected.len() < 4 {
            let ulpdu: Vec<u8> = (0..random_length(&mut rng).min(3000)).map(|_| rng.gen()).collect();
            let mut fpdu = Vec::new();
            Framer::at(cfg, position).frame(&ulpdu, &mut fpdu).expect("fits");
            let (how, packet) = spoil(&mut rng, &fpdu);
            let verdict = Deframer::at(cfg, position).pop_packet(&packet).expect("a verdict");
            let how = (how, position, packet.len(), verdict.as_ref().err().map(|e| e.to_string()));
            let verdict = verdict.map_err(|e| e.terminate_code().expect("a receive error"));
            codes[verdict.as_ref().err().map_or(0, |&c| usize::from(c))] += 1;
            position += packet.len().next_multiple_of(4) as u64;
            rx.push_packet(&packet, || chunk(&mut chunks, lanes));
            expected.push_back((how, verdict));
            sent += 1;
        }
        rx.cycle(&mut rng);
        idle += 1;
        while let Some(p) = rx.sink.pop_packet() {
            let (how, want) = expected.pop_front().expect("a ULPDU for a packet nobody sent");
            let what = format!("packet {checked} ({how:?}, W={lanes}, {cfg:?})");
            match want {
                Ok(ulpdu) => {
                    p.check_shape(lanes, 1).unwrap_or_else(|e| panic!("{what}: {e}"));
                    assert_eq!((p.user(), p.bytes()), (0, ulpdu), "{what}");
                }
                Err(code) => assert_eq!(p.user(), u64::from(code), "{what}: the MPA error code"),
            }
            checked += 1;
            idle = 0;
        }
        assert!(idle < 50_000, "deframer made no progress for 50 000 cycles (packet {checked})");
    }
    // Every verdict occurred: good, out of step (5), CRC (2) with CRCs, markers (3) with
    // markers and no CRCs (a flipped marker is a CRC error first).
    assert!(codes[0] > 0 && codes[5] > 0, "verdicts {codes:?}");
    assert!(codes[2] > 0 || !cfg.crc, "verdicts {codes:?}");
    assert!(codes[3] > 0 || !cfg.markers || cfg.crc, "verdicts {codes:?}");
}

#[test]
fn mpa_08_13_w8_every_packet_gets_its_verdict_and_none_puts_the_next_out_of_step() {
    trace::on_failure("mpa_08_13_w8_every_packet_gets_its_verdict_and_none_puts_the_next_out_of_step", || {
        packets_in_and_out_of_step(8, MARKERS_AND_CRC, 81, 3_000);
        packets_in_and_out_of_step(8, CRC_ONLY, 82, 3_000);
        packets_in_and_out_of_step(8, FramingConfig { markers: true, crc: false }, 83, 2_000);
        packets_in_and_out_of_step(8, FramingConfig { markers: false, crc: false }, 84, 1_000);
    });
}

#[test]
fn mpa_08_13_w16_to_w64_every_packet_gets_its_verdict() {
    trace::on_failure("mpa_08_13_w16_to_w64_every_packet_gets_its_verdict", || {
        for lanes in [16, 32, 64] {
            packets_in_and_out_of_step(lanes, MARKERS_AND_CRC, 80 + lanes as u64, 1_000);
        }
    });
}

#[test]
fn mpa_08_corrupted_fpdu_is_flagged_and_the_packets_after_it_are_delivered() {
    // 300 streams, each with one flipped bit somewhere in FPDU `bad` (length field, data,
    // PAD, marker or CRC), followed by valid FPDUs: the ULPDUs before it arrive good, then
    // one flagged ULPDU (CRC error; out of step where the flip lengthened or shortened
    // ULPDU_Length), then the ones after it, good: the deframer itself never stops (the
    // QP that failed does, in rnic_top).
    trace::on_failure("mpa_08_corrupted_fpdu_is_flagged_and_the_packets_after_it_are_delivered", || {
        let mut rng = StdRng::seed_from_u64(8);
        for case in 0..300 {
            let cfg = if case % 2 == 0 { MARKERS_AND_CRC } else { CRC_ONLY };
            let mut rx = MpaRxDriver::new(LANES, cfg).expect("model");
            let mut ulpdus: Vec<Vec<u8>> =
                (0..6).map(|_| (0..rng.gen_range(0..2000)).map(|_| rng.gen()).collect()).collect();
            let bad = rng.gen_range(0..ulpdus.len() - 1);
            ulpdus.extend(std::iter::repeat_n(vec![0x5a; 8000], 3));
            let mut fpdus = fpdus_of(cfg, &ulpdus);
            let at = rng.gen_range(0..fpdus[bad].len());
            fpdus[bad][at] ^= 1 << rng.gen_range(0..8);
            // A flip in ULPDU_Length puts the FPDU out of step with its packet, unless the
            // padded length stays the same; in a marker's FPDUPTR it is a CRC error first.
            let position = fpdus[..bad].iter().map(Vec::len).sum::<usize>() as u64;
            let verdict = Deframer::at(cfg, position).pop_packet(&fpdus[bad]).expect("a verdict");
            let code = u64::from(verdict.expect_err("flipped").terminate_code().expect("a code"));

            let mut chunks = StdRng::seed_from_u64(case);
            rx.push_fpdus(&fpdus, || chunk(&mut chunks, LANES));
            let got = collect(&mut rx, &mut rng, fpdus.len(), 2_000);
            assert_eq!(got.len(), fpdus.len(), "case {case}: corrupted octet {at} of FPDU {bad}");
            for (i, p) in got.iter().enumerate() {
                let want = if i == bad { (code, None) } else { (0, Some(ulpdus[i].clone())) };
                let is = (p.user(), (i != bad).then(|| p.bytes()));
                assert_eq!(is, want, "case {case}, ULPDU {i} (octet {at} of FPDU {bad} flipped)");
            }
        }
    });
}

/// The stream of RFC 5044 Figs. 5 and 6 (VECTORS V2): two Sends, the second FPDU at
/// 0x1EC with a marker at 0x200 inside it.
fn figure6_stream() -> (Vec<Vec<u8>>, Vec<u8>) {
    let ulpdus = vec![zero_send(1, 464), zero_send(2, 24)];
    let wire = fpdus_of(MARKERS_AND_CRC, &ulpdus).concat();
    assert_eq!(&wire[0x21c..0x220], &[0x84, 0x92, 0x58, 0x98], "Figure 6 CRC");
    (ulpdus, wire)
}

/// The Figure 6 stream as its two packets, the second FPDU at 0x1EC.
fn figure6_packets(rx: &mut MpaRxDriver, wire: &[u8]) {
    rx.push_packet(&wire[..0x1ec], || LANES);
    rx.push_packet(&wire[0x1ec..], || LANES);
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
    figure6_packets(&mut rx, &wire);
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
    figure6_packets(&mut rx, &wire);
    let got = collect(&mut rx, &mut rng, 2, 1000);
    assert_eq!(got.len(), 2);
    assert_eq!((got[1].user(), got[1].bytes()), (0, ulpdus[1].clone()));
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
    figure6_packets(&mut rx, &wire);
    let got = collect(&mut rx, &mut rng, 3, 1000);
    assert_eq!(got.len(), 2);
    assert_eq!(got[0].user(), 0);
    assert_eq!(got[1].user(), 3, "marker error (MPA error 3) flagged, CRC good");
}

#[test]
fn mpa_09_crc_octets_in_network_order_are_rejected() {
    // VECTORS V3 with its CRC field written 01 b1 f5 20 instead of 20 f5 b1 01.
    let mut wire = hex("001741430000000000000000000000010000000048656c6c6f000000");
    wire.extend([0x01, 0xb1, 0xf5, 0x20]);
    let mut rx = MpaRxDriver::new(LANES, CRC_ONLY).expect("model");
    let mut rng = StdRng::seed_from_u64(9);
    rx.push_packet(&wire, || LANES);
    let got = collect(&mut rx, &mut rng, 1, 1000);
    assert_eq!(got.len(), 1);
    assert_eq!(got[0].user(), 2, "CRC error (MPA error 2)");
}

#[test]
fn mpa_05_crc_field_not_checked_when_crc_is_off() {
    let mut wire = hex("001741430000000000000000000000010000000048656c6c6f000000");
    wire.extend([0xde, 0xad, 0xbe, 0xef]);
    let mut rx = MpaRxDriver::new(LANES, FramingConfig { markers: false, crc: false }).expect("model");
    let mut rng = StdRng::seed_from_u64(5);
    rx.push_packet(&wire, || LANES);
    let got = collect(&mut rx, &mut rng, 1, 1000);
    assert_eq!((got[0].user(), got[0].bytes()), (0, wire[2..25].to_vec()));
}

#[test]
fn mpa_16_fpdu_split_over_segments_is_delivered_once_after_its_last_octet() {
    // VECTORS V3 in pieces of 1, 2 and 29 octets: nothing leaves before the last piece.
    let wire = hex("001741430000000000000000000000010000000048656c6c6f00000020f5b101");
    let mut rx = MpaRxDriver::new(LANES, CRC_ONLY).expect("model");
    let mut rng = StdRng::seed_from_u64(16);
    rx.push_part(&wire[..1], || LANES);
    rx.push_part(&wire[1..3], || LANES);
    assert!(collect(&mut rx, &mut rng, 1, 200).is_empty());
    rx.push_packet(&wire[3..], || LANES);
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
        rx.push_packet(&wire, || LANES);
        let got = collect(&mut rx, &mut rng, 1, 1000);
        assert_eq!((got[0].user(), got[0].bytes()), (0, ulpdu_of(&wire)), "{name}");
    }
    let with_marker = hex(V3_WITH_MARKER);
    let mut rx = MpaRxDriver::new(LANES, MARKERS_AND_CRC).expect("model");
    rx.push_packet(&with_marker, || 3);
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
    rx.push_packet(&wire, || LANES);
    let got = collect(&mut rx, &mut rng, 1, 1000);
    assert_eq!((got[0].user(), got[0].bytes()), (0, wire[2..25].to_vec()));
}
