//! The Verilated framer feeding the Verilated deframer: random ULPDUs go in one end and
//! must come out of the other unchanged and flagged good, at every width, with markers and
//! CRC on, random gaps and back-pressure on both ends, and the octet stream between them
//! re-cut into random pieces as TCP would. The framer's `fpdu_wait` is raised at random
//! (as `top.rs` raises it until the next FPDU's settings are in): no FPDU may start while
//! it is high, and the stream must come through all the same.
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
    let (wait, start) = (tx.model.port("fpdu_wait"), tx.model.port("fpdu_start"));
    let (mut starts, mut waits) = (0u64, 0u64);
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
        // (With `fpdu_wait` high no FPDU starts, whatever the streams' handshakes.)
        let waiting = rng.gen_bool(0.3);
        tx.model.set_bit(wait, waiting);
        tx.model.eval();
        let starting = tx.model.get_bit(start);
        assert!(!(waiting && starting), "an FPDU started with fpdu_wait high (W={lanes})");
        starts += u64::from(starting);
        waits += u64::from(waiting);
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
    assert!(starts > 0 && waits > 0, "{starts} FPDU starts seen, {waits} cycles of fpdu_wait");
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
