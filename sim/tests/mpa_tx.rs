//! `mpa/tx` (the framer) in Verilator against `rnic_proto::mpa::Framer`: random ULPDUs
//! with random input gaps and output back-pressure, with and without markers and CRC, and
//! the FPDUs of VECTORS V2-V11 reproduced byte for byte (CHECKLIST MPA-01, -02, -03, -06,
//! -09, -11, -12).
mod common;

use std::collections::VecDeque;

use common::{hex, random_length, ulpdu_of, zero_send, V3_WITH_MARKER, WIRE_VECTORS};
use rand::rngs::StdRng;
use rand::{Rng, SeedableRng};
use rnic_proto::mpa::{Framer, FramingConfig};
use rnic_sim::mpa::MpaTxDriver;
use rnic_sim::trace;

const MARKERS_AND_CRC: FramingConfig = FramingConfig { markers: true, crc: true };

/// Sends `count` random ULPDUs through the framer and checks every FPDU against the
/// reference, in order, and the packet shape. Panics if the framer stops making progress.
fn differential(lanes: usize, cfg: FramingConfig, seed: u64, count: usize, valid_rate: f64, ready_rate: f64) {
    differential_with(lanes, cfg, seed, count, valid_rate, ready_rate, random_length, 4)
}

/// [`differential`] with ULPDU lengths from `length` and up to `queued` ULPDUs handed to
/// the input ahead of the output.
#[allow(clippy::too_many_arguments)]
fn differential_with(
    lanes: usize,
    cfg: FramingConfig,
    seed: u64,
    count: usize,
    valid_rate: f64,
    ready_rate: f64,
    length: fn(&mut StdRng) -> usize,
    queued: usize,
) {
    let mut tx = MpaTxDriver::new(lanes, cfg).expect("model");
    tx.source.valid_rate = valid_rate;
    tx.sink.ready_rate = ready_rate;
    let mut framer = Framer::new(cfg);
    let mut rng = StdRng::seed_from_u64(seed);
    let mut expected: VecDeque<Vec<u8>> = VecDeque::new();
    let mut sent = 0;
    let mut checked = 0;
    let mut idle = 0u64;
    while checked < count {
        // Keep a few ULPDUs queued so the input is rarely starved by the bench.
        while sent < count && expected.len() < queued {
            let ulpdu: Vec<u8> = (0..length(&mut rng)).map(|_| rng.gen()).collect();
            let mut fpdu = Vec::new();
            framer.frame(&ulpdu, &mut fpdu).expect("ULPDU fits");
            tx.send(&ulpdu);
            expected.push_back(fpdu);
            sent += 1;
        }
        tx.cycle(&mut rng);
        idle += 1;
        while let Some(packet) = tx.sink.pop_packet() {
            packet.check_shape(lanes, 4).unwrap_or_else(|e| panic!("FPDU {checked}: {e}"));
            let want = expected.pop_front().expect("an FPDU nobody sent");
            assert_eq!(packet.bytes(), want, "FPDU {checked} (W={lanes}, {cfg:?})");
            checked += 1;
            idle = 0;
        }
        assert!(idle < 200_000, "framer made no progress for 200 000 cycles (FPDU {checked})");
    }
    assert!(!tx.length_error(), "length error on well-formed input");
}

#[test]
fn mpa_tx_w8_matches_proto_markers_and_crc() {
    trace::on_failure("mpa_tx_w8_matches_proto_markers_and_crc", || {
        differential(8, MARKERS_AND_CRC, 1, 10_000, 0.9, 0.8)
    });
}

#[test]
fn mpa_tx_w8_matches_proto_crc_only() {
    let cfg = FramingConfig { markers: false, crc: true };
    trace::on_failure("mpa_tx_w8_matches_proto_crc_only", || differential(8, cfg, 2, 10_000, 0.9, 0.8));
}

#[test]
fn mpa_tx_w8_matches_proto_markers_no_crc() {
    let cfg = FramingConfig { markers: true, crc: false };
    trace::on_failure("mpa_tx_w8_matches_proto_markers_no_crc", || differential(8, cfg, 3, 10_000, 1.0, 0.5));
}

#[test]
fn mpa_tx_w8_matches_proto_at_full_rate() {
    trace::on_failure("mpa_tx_w8_matches_proto_at_full_rate", || differential(8, MARKERS_AND_CRC, 4, 10_000, 1.0, 1.0));
}

#[test]
fn mpa_tx_w16_matches_proto_markers_and_crc() {
    trace::on_failure("mpa_tx_w16_matches_proto_markers_and_crc", || {
        differential(16, MARKERS_AND_CRC, 16, 10_000, 0.9, 0.8)
    });
}

#[test]
fn mpa_tx_w32_matches_proto_markers_and_crc() {
    trace::on_failure("mpa_tx_w32_matches_proto_markers_and_crc", || {
        differential(32, MARKERS_AND_CRC, 32, 10_000, 0.9, 0.8)
    });
}

#[test]
fn mpa_tx_w64_matches_proto_markers_and_crc() {
    trace::on_failure("mpa_tx_w64_matches_proto_markers_and_crc", || {
        differential(64, MARKERS_AND_CRC, 64, 10_000, 0.9, 0.8)
    });
}

/// FPDUs of one to three words, many at a time, against a slow output: the marker stage's
/// queue of FPDU content counts fills (the buffer holds more FPDUs than the queue), and
/// its input must wait for room rather than lose a count.
#[test]
fn mpa_tx_w64_short_fpdus_wait_for_room_in_the_count_queue() {
    trace::on_failure("mpa_tx_w64_short_fpdus_wait_for_room_in_the_count_queue", || {
        differential_with(64, MARKERS_AND_CRC, 65, 3_000, 1.0, 0.1, |rng| rng.gen_range(0..10), 40)
    });
}

/// Runs `ulpdus` through a framer fresh from reset and returns the stream it sends.
fn frame_stream(lanes: usize, cfg: FramingConfig, ulpdus: &[Vec<u8>]) -> Vec<u8> {
    let mut tx = MpaTxDriver::new(lanes, cfg).expect("model");
    let mut rng = StdRng::seed_from_u64(0);
    for u in ulpdus {
        tx.send(u);
    }
    let mut out = Vec::new();
    let mut packets = 0;
    for _ in 0..10_000 {
        tx.cycle(&mut rng);
        while let Some(p) = tx.sink.pop_packet() {
            out.extend(p.bytes());
            packets += 1;
        }
        if packets == ulpdus.len() {
            return out;
        }
    }
    panic!("framer sent {packets} of {} FPDUs", ulpdus.len());
}

#[test]
fn mpa_01_09_tx_reproduces_vectors_v3_to_v11() {
    let crc_only = FramingConfig { markers: false, crc: true };
    for (name, wire) in WIRE_VECTORS {
        assert_eq!(frame_stream(8, crc_only, &[ulpdu_of(&hex(wire))]), hex(wire), "{name}");
    }
}

#[test]
fn mpa_22_tx_first_fpdu_starts_with_a_zero_marker_v3() {
    // VECTORS V3, second form: the first FPDU of Full Operation with markers on.
    let send = ulpdu_of(&hex(WIRE_VECTORS[0].1));
    assert_eq!(frame_stream(8, MARKERS_AND_CRC, &[send]), hex(V3_WITH_MARKER));
}

#[test]
fn mpa_06_12_tx_reproduces_rfc5044_figures_v2() {
    // VECTORS V2 / RFC 5044 Figs. 5 and 6: Sends (QN 0) with zero payloads.
    let figure5 = frame_stream(8, MARKERS_AND_CRC, &[zero_send(1, 24)]);
    assert_eq!(figure5.len(), 52);
    assert_eq!(&figure5[..8], &hex("00000000002a4143")[..]);
    assert_eq!(&figure5[48..], &hex("52239983")[..], "Figure 5 CRC");

    let stream = frame_stream(8, MARKERS_AND_CRC, &[zero_send(1, 464), zero_send(2, 24)]);
    let second = &stream[0x1ec..];
    assert_eq!(second.len(), 52);
    assert_eq!(&second[..16], &hex("002a4143000000000000000000000002")[..]);
    assert_eq!(&stream[0x200..0x204], &hex("00000014")[..], "marker at 0x200, FPDUPTR 0x14");
    assert_eq!(&second[48..], &hex("84925898")[..], "Figure 6 CRC");
}

#[test]
fn tx_length_mismatch_is_flagged_and_framing_follows_the_length_field() {
    // A ULPDU announced as 40 octets that is 30 long, then one announced as 8 that is 20
    // long: the FPDUs carry 40 octets (zero-filled) and 8 octets, and the error latches.
    let mut tx = MpaTxDriver::new(8, MARKERS_AND_CRC).expect("model");
    let mut rng = StdRng::seed_from_u64(9);
    let short: Vec<u8> = (1..=30).collect();
    let long: Vec<u8> = (101..=120).collect();
    tx.source.push(rnic_sim::axis::packet_beats(&short, 8, 40));
    tx.source.push(rnic_sim::axis::packet_beats(&long, 8, 8));
    let mut framer = Framer::new(MARKERS_AND_CRC);
    let mut want = Vec::new();
    let mut padded = short.clone();
    padded.resize(40, 0);
    framer.frame(&padded, &mut want).expect("fits");
    framer.frame(&long[..8], &mut want).expect("fits");
    let mut got = Vec::new();
    for _ in 0..200 {
        tx.cycle(&mut rng);
        while let Some(p) = tx.sink.pop_packet() {
            got.extend(p.bytes());
        }
    }
    assert_eq!(got, want);
    assert!(tx.length_error());
}
