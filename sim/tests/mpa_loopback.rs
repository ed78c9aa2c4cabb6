//! The Verilated framer feeding the Verilated deframer: random ULPDUs go in one end and
//! must come out of the other unchanged and flagged good, at every width, with markers and
//! CRC on, random gaps and back-pressure on both ends, and the octet stream between them
//! re-cut into random pieces as TCP would.
use std::collections::VecDeque;

use rand::rngs::StdRng;
use rand::{Rng, SeedableRng};
use rnic_proto::mpa::FramingConfig;
use rnic_sim::mpa::{MpaRxDriver, MpaTxDriver};
use rnic_sim::trace;

fn loopback(lanes: usize, seed: u64, count: usize) {
    let cfg = FramingConfig { markers: true, crc: true };
    let mut tx = MpaTxDriver::new(lanes, cfg).expect("framer");
    let mut rx = MpaRxDriver::new(lanes, cfg).expect("deframer");
    tx.source.valid_rate = 0.9;
    tx.sink.ready_rate = 0.9;
    rx.source.valid_rate = 0.9;
    rx.sink.ready_rate = 0.8;
    let mut rng = StdRng::seed_from_u64(seed);
    let mut pieces = StdRng::seed_from_u64(!seed);
    let mut sent: VecDeque<Vec<u8>> = VecDeque::new();
    let (mut queued, mut received, mut idle) = (0, 0, 0u64);
    while received < count {
        while queued < count && sent.len() < 8 {
            let len = match rng.gen_range(0..10) {
                0 => rng.gen_range(0..20),
                1..=7 => rng.gen_range(18..1500),
                _ => rng.gen_range(1500..9000),
            };
            let ulpdu: Vec<u8> = (0..len).map(|_| rng.gen()).collect();
            tx.send(&ulpdu);
            sent.push_back(ulpdu);
            queued += 1;
        }
        tx.cycle(&mut rng);
        while let Some(fpdu) = tx.sink.pop_packet() {
            rx.push_packet(&fpdu.bytes(), || pieces.gen_range(1..=lanes));
        }
        rx.cycle(&mut rng);
        idle += 1;
        while let Some(p) = rx.sink.pop_packet() {
            let want = sent.pop_front().expect("a ULPDU nobody sent");
            assert_eq!(p.user(), 0, "ULPDU {received} flagged bad");
            assert_eq!(p.bytes(), want, "ULPDU {received} (W={lanes})");
            received += 1;
            idle = 0;
        }
        assert!(idle < 100_000, "no ULPDU for 100 000 cycles after {received}");
    }
}

#[test]
fn mpa_loopback_tx_to_rx_w8() {
    trace::on_failure("mpa_loopback_tx_to_rx_w8", || loopback(8, 81, 10_000));
}

#[test]
fn mpa_loopback_tx_to_rx_w16() {
    trace::on_failure("mpa_loopback_tx_to_rx_w16", || loopback(16, 82, 10_000));
}

#[test]
fn mpa_loopback_tx_to_rx_w32() {
    trace::on_failure("mpa_loopback_tx_to_rx_w32", || loopback(32, 83, 10_000));
}

#[test]
fn mpa_loopback_tx_to_rx_w64() {
    trace::on_failure("mpa_loopback_tx_to_rx_w64", || loopback(64, 84, 10_000));
}
