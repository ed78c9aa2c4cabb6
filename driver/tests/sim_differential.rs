//! Differential end-to-end test: two Verilated RNICs (`rnic_top`, and the 16-QP build
//! `rnic_top_q16`) linked stream to stream run random work of every kind the RNIC does —
//! Sends of all four kinds, RDMA Writes, Reads under ORD/IRD limits, masked FetchAdd and
//! CmpSwap (QP 0's in device memory), Immediate Data with and without Solicited Event,
//! Write with Immediate, Send with Invalidate and local invalidation — in both directions
//! on four QP pairs (with and without MPA CRCs and markers, different MULPDUs, ORD and
//! IRD), sizes 0..64 KiB, with random back-pressure on the link and the DMA bus, and
//! errors injected into one round in six (a wrong key, out of bounds, a missing right,
//! another PD's MR, an invalidated STag, a misaligned atomic, a Read of another PD's MR,
//! a Send longer than its receive). After every round, both hosts' memory (every octet),
//! every completion and every QP's state and Terminate must be what
//! `rnic_proto::model::Fabric` predicts for the same work requests, the model set up from
//! the test's own description of the hosts, never from reading the devices back
//! (`common::workload`).
//!
//! Five seeds of 2 000 requests on each build run in `cargo test`; `RNIC_DIFF_SEED=<n>`
//! runs another sequence (`RNIC_DIFF_OPS=<n>` requests) on both.
#![cfg(feature = "sim")]

mod common;

use common::workload::{with_pair, Spec};
use rnic_driver::QpCaps;
use rnic_proto::model::RnicConfig;

/// Requests per seed and build in the normal run.
const OPS: usize = 2_000;
const SEEDS: [u64; 5] = [0xd1ff, 0xd1ff_0001, 0xd1ff_0002, 0xd1ff_0003, 0xd1ff_0004];

/// Four QP pairs: every mix of MPA options, each pair's own; MULPDUs from small to large;
/// ORD (= the peer's IRD) 4, 2, 1 and 4.
fn qps() -> Vec<QpCaps> {
    (0..4)
        .map(|q| QpCaps {
            sq_log_size: 6,
            rq_log_size: 6,
            mulpdu: [1460, 700, 4000, 9000][q],
            ird: [4, 2, 1, 4][q],
            ord: [4, 2, 1, 4][q],
            crc: [true, true, false, false][q],
            markers_tx: [false, true, true, false][q],
            markers_rx: [false, true, true, false][q],
            conn_id: 0,
        })
        .collect()
}

fn spec(design: &'static str, model: RnicConfig, seed: u64) -> Spec {
    Spec { design, model, qps: qps(), source: 128 * 1024, area: 64 * 1024, large: 0.1, seed, random_reset: None }
}

/// `ops` random requests on two `design` RNICs against the model of an RNIC with
/// `model`'s sizes (which the capability registers must report).
fn run(design: &'static str, model: RnicConfig, seed: u64, ops: usize) {
    run_spec(&spec(design, model, seed), ops);
}

fn run_spec(spec: &Spec, ops: usize) {
    let (design, seed) = (spec.design, spec.seed);
    with_pair(spec, None, |pair| {
        let mut round = 0;
        while pair.posted < ops {
            round += 1;
            pair.round(3, 1.0 / 6.0, &format!("{design}, seed {seed:#x}, round {round}"));
        }
        let cycles = pair.hosts[0].dev.hal().cycles();
        eprintln!("{design} seed {seed:#x}: {round} rounds, {cycles} cycles: {}", pair.tally.summary());
    });
}

fn seed_from_env() -> Option<u64> {
    std::env::var("RNIC_DIFF_SEED").ok().map(|s| {
        let s = s.trim();
        s.strip_prefix("0x")
            .map_or_else(|| s.parse(), |h| u64::from_str_radix(h, 16))
            .unwrap_or_else(|_| panic!("RNIC_DIFF_SEED={s}: not a number"))
    })
}

fn ops_from_env() -> usize {
    std::env::var("RNIC_DIFF_OPS").ok().and_then(|s| s.parse().ok()).unwrap_or(OPS)
}

fn q16() -> RnicConfig {
    RnicConfig { num_qps: 16, num_cqs: 16, num_mrs: 64, ..RnicConfig::default() }
}

/// Seed `i` of [`SEEDS`] on `design`, or with `RNIC_DIFF_SEED` set, that seed (once, as
/// seed 0) with `RNIC_DIFF_OPS` requests.
fn seed(design: &'static str, model: RnicConfig, i: usize) {
    match seed_from_env() {
        Some(seed) if i == 0 => run(design, model, seed, ops_from_env()),
        Some(_) => {}
        None => run(design, model, SEEDS[i], OPS),
    }
}

#[test]
fn every_kind_of_work_with_errors_matches_the_model_seed_1() {
    seed("rnic_top", RnicConfig::default(), 0);
}

#[test]
fn every_kind_of_work_with_errors_matches_the_model_seed_2() {
    seed("rnic_top", RnicConfig::default(), 1);
}

#[test]
fn every_kind_of_work_with_errors_matches_the_model_seed_3() {
    seed("rnic_top", RnicConfig::default(), 2);
}

#[test]
fn every_kind_of_work_with_errors_matches_the_model_seed_4() {
    seed("rnic_top", RnicConfig::default(), 3);
}

#[test]
fn every_kind_of_work_with_errors_matches_the_model_seed_5() {
    seed("rnic_top", RnicConfig::default(), 4);
}

#[test]
fn the_16_qp_build_matches_the_model_seed_1() {
    seed("rnic_top_q16", q16(), 0);
}

#[test]
fn the_16_qp_build_matches_the_model_seed_2() {
    seed("rnic_top_q16", q16(), 1);
}

#[test]
fn the_16_qp_build_matches_the_model_seed_3() {
    seed("rnic_top_q16", q16(), 2);
}

#[test]
fn the_16_qp_build_matches_the_model_seed_4() {
    seed("rnic_top_q16", q16(), 3);
}

#[test]
fn the_16_qp_build_matches_the_model_seed_5() {
    seed("rnic_top_q16", q16(), 4);
}

/// Requests per seed on the random-reset models.
const X_OPS: usize = 500;

/// The random-reset `rnic_top` (`rnic_top_x`, every register powered up and every X
/// assigned at random from reset seed `reset_seed`), 500 requests.
fn random_reset(reset_seed: u64) {
    let spec =
        Spec { random_reset: Some(reset_seed), ..spec("rnic_top", RnicConfig::default(), 0xd1ff_0100 + reset_seed) };
    run_spec(&spec, X_OPS);
}

#[test]
fn x_random_reset_every_kind_of_work_with_errors_matches_the_model_seed_1() {
    random_reset(1);
}

#[test]
fn x_random_reset_every_kind_of_work_with_errors_matches_the_model_seed_2() {
    random_reset(3);
}
