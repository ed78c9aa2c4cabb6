//! Per-connection fault isolation (RFC 5044 §8, MPA-08/13/25): one bad FPDU fails its own
//! connection and no other.
//!
//! Two Verilated `rnic_top`s linked stream to stream carry random work of every kind on
//! eight QP pairs (all with MPA CRCs, half with markers, MULPDUs and ORD/IRD of every size)
//! in both directions. In every round a link tap corrupts one FPDU of a random pair going a
//! random way, at a random point of its traffic, with one of the RX fuzzer's mutations
//! (bit flips, truncation, a rewritten ULPDU_Length, a rewritten octet, a splice with the
//! FPDU before it, a zeroed CRC field, garbage appended), always into a packet whose CRC
//! fails. The other seven pairs must end exactly as `rnic_proto::model::Fabric` predicts —
//! every octet of both hosts' memory, every completion, every QP's state — and the victim
//! must fail alone: the receiving QP in ERROR with an LLP Terminate sent, its peer in ERROR
//! with it received, every work request posted on the pair completed once
//! (`common::workload::Pair::isolation_round`). The devices stay up between rounds: the
//! victim pair is reset and the next round picks another.
//!
//! Four tests of 250 rounds run in `cargo test` (1 000 corruptions);
//! `RNIC_ISOLATION_SEED=<n>` replays one sequence (`RNIC_ISOLATION_ROUNDS=<n>` rounds).
#![cfg(feature = "sim")]

mod common;

use std::cell::RefCell;
use std::rc::Rc;

use common::workload::{tap_of, with_pair, Corruptor, Spec};
use rnic_driver::QpCaps;
use rnic_proto::model::RnicConfig;

const ROUNDS: usize = 250;
const SEEDS: [u64; 4] = [0x150_0001, 0x150_0002, 0x150_0003, 0x150_0004];

/// Eight QP pairs, all with CRCs (the bad FPDU must be one the receiver can tell from a
/// good one); markers on half; MULPDUs from small to large; ORD (= the peer's IRD) 1 to 4.
fn qps() -> Vec<QpCaps> {
    (0..8)
        .map(|q| QpCaps {
            sq_log_size: 6,
            rq_log_size: 6,
            mulpdu: [1460, 700, 4000, 9000, 536, 1460, 2048, 8000][q],
            ird: [4, 2, 1, 4, 3, 1, 2, 4][q],
            ord: [4, 2, 1, 4, 3, 1, 2, 4][q],
            crc: true,
            markers_tx: q % 2 == 1,
            markers_rx: q % 2 == 1,
            conn_id: 0,
        })
        .collect()
}

fn run(seed: u64, rounds: usize) {
    let spec = Spec {
        design: "rnic_top",
        model: RnicConfig::default(),
        qps: qps(),
        source: 64 * 1024,
        area: 16 * 1024,
        large: 0.05,
        seed,
        random_reset: None,
    };
    let corruptor = Rc::new(RefCell::new(Corruptor::new(seed ^ 0xbad)));
    with_pair(&spec, Some(tap_of(&corruptor)), |pair| {
        for round in 1..=rounds {
            pair.isolation_round(2, &corruptor, &format!("seed {seed:#x}, round {round}"));
        }
        let cycles = pair.hosts[0].dev.hal().cycles();
        eprintln!("seed {seed:#x}: {rounds} rounds, {cycles} cycles: {}", pair.tally.summary());
    });
}

fn env(name: &str) -> Option<u64> {
    std::env::var(name).ok().map(|s| {
        let s = s.trim();
        s.strip_prefix("0x")
            .map_or_else(|| s.parse(), |h| u64::from_str_radix(h, 16))
            .unwrap_or_else(|_| panic!("{name}={s}: not a number"))
    })
}

/// Seed `i` of [`SEEDS`], or with `RNIC_ISOLATION_SEED` set, that seed (once, as seed 0).
fn seed(i: usize) {
    let rounds = env("RNIC_ISOLATION_ROUNDS").map_or(ROUNDS, |n| n as usize);
    match env("RNIC_ISOLATION_SEED") {
        Some(seed) if i == 0 => run(seed, rounds),
        Some(_) => {}
        None => run(SEEDS[i], rounds),
    }
}

#[test]
fn mpa_08_13_25_a_bad_fpdu_fails_its_connection_and_the_other_seven_lose_nothing_seed_1() {
    seed(0);
}

#[test]
fn mpa_08_13_25_a_bad_fpdu_fails_its_connection_and_the_other_seven_lose_nothing_seed_2() {
    seed(1);
}

#[test]
fn mpa_08_13_25_a_bad_fpdu_fails_its_connection_and_the_other_seven_lose_nothing_seed_3() {
    seed(2);
}

#[test]
fn mpa_08_13_25_a_bad_fpdu_fails_its_connection_and_the_other_seven_lose_nothing_seed_4() {
    seed(3);
}
