//! `atomic/unit` in Verilator against a sequential reference built on the
//! `rnic_proto::atomic` functions (CHECKLIST ATOM-09 masked FetchAdd, ATOM-10 masked
//! CmpSwap, ATOM-12 atomicity, ATOM-14 ordering): every op's original value, in op order,
//! and the memory left behind must be exactly what applying the ops one after another
//! gives, with memories of 1 and 200 cycles and random back-pressure everywhere.
use std::collections::HashMap;

use rand::rngs::StdRng;
use rand::{Rng, SeedableRng};
use rnic_proto::atomic::{masked_cmp_swap, masked_fetch_add};
use rnic_proto::host::context::MAX_READS;
use rnic_proto::host::regs::DEFAULT_NUM_QPS;
use rnic_sim::atomic_unit::{AtomicUnitDriver, Pressure, UnitOp};
use rnic_sim::trace;

/// Memory latencies every test runs with (cycles to read data and to write acks).
const LATENCIES: [u64; 2] = [1, 200];
/// Atomics the responder may have outstanding: 64 QPs with IRD `MAX_READS` each, all of
/// which the unit's op queue must take.
const OUTSTANDING: usize = DEFAULT_NUM_QPS as usize * MAX_READS as usize;

/// Words the random tests pick from: three share a write-back bucket of the unit
/// (address bits 6:3 ^ 10:7), one sits at the top of the address space.
const ADDRESSES: [u64; 8] = [0x1000, 0x1088, 0x1110, 0x1008, 0x2_0000_0040, 0x7FF8, 0xFFFF_FFFF_FFFF_FFF8, 0x10];

/// The sequential reference: memory as it is after every op so far.
#[derive(Default)]
struct Reference {
    words: HashMap<u64, u64>,
}

impl Reference {
    fn word(&self, addr: u64) -> u64 {
        self.words.get(&addr).copied().unwrap_or(0)
    }

    /// Applies `op`, returning the original value the unit must report.
    fn apply(&mut self, op: &UnitOp) -> u64 {
        let original = self.word(op.addr);
        let new = match op.aopcode {
            0x0 => masked_fetch_add(original, op.data, op.mask),
            0x2 => masked_cmp_swap(original, op.data, op.mask, op.compare, op.compare_mask),
            other => panic!("the unit is never given AOpCode {other:#x}"),
        };
        self.words.insert(op.addr, new);
        original
    }
}

/// A mask that exercises field boundaries: zero, all ones, one field MSB, byte or
/// half-word fields, adjacent bits, or random.
fn biased_mask(rng: &mut StdRng) -> u64 {
    match rng.gen_range(0..8) {
        0 => 0,
        1 => u64::MAX,
        2 => 1 << rng.gen_range(0..64),
        3 => [0x8080_8080_8080_8080, 0x8000_8000_8000_8000, 0x8000_0000_8000_0000][rng.gen_range(0..3)],
        4 => 0b11 << rng.gen_range(0..63),
        _ => rng.gen(),
    }
}

/// Operands that make carries run into mask bits.
fn biased_value(rng: &mut StdRng) -> u64 {
    match rng.gen_range(0..6) {
        0 => 0,
        1 => u64::MAX,
        2 => (1u64 << rng.gen_range(1..64)) - 1,
        3 => 1,
        _ => rng.gen(),
    }
}

/// A random FetchAdd or CmpSwap on `addr`; a CmpSwap compares equal to the word's current
/// value half of the time (as far as its compare mask looks), so both outcomes are common.
fn random_op(rng: &mut StdRng, addr: u64, current: u64) -> UnitOp {
    let aopcode = if rng.gen_bool(0.5) { 0x0 } else { 0x2 };
    let compare_mask = biased_mask(rng);
    let compare = if rng.gen_bool(0.5) { current ^ (rng.gen::<u64>() & !compare_mask) } else { biased_value(rng) };
    UnitOp {
        addr,
        aopcode,
        data: biased_value(rng),
        mask: biased_mask(rng),
        compare,
        compare_mask,
        fresh: false,
        after: 0,
    }
}

/// Cycles any single step may take before the test calls it a hang: a few memory round
/// trips for every op that may be waiting, with back-pressure.
fn step_limit(latency: u64, ops: usize) -> u64 {
    50_000 + 40 * (latency + 10) * ops as u64
}

/// Checks the results so far against the reference originals, in order.
fn check_results(unit: &AtomicUnitDriver, expected: &[u64], what: &str) {
    assert!(unit.results.len() <= expected.len(), "{what}: more results than ops");
    if let Some(i) = unit.results.iter().zip(expected).position(|(got, want)| got != want) {
        panic!("{what}: result {i} is {:#018x}, the sequential reference says {:#018x}", unit.results[i], expected[i]);
    }
}

/// `ops` random ops over `words` addresses at memory latency `latency`: runs of ops on one
/// word (chained by the unit) and switches between words, some ops `fresh` after the test
/// changed their word in memory itself, random back-pressure.
fn random_run(latency: u64, words: usize, ops: usize, seed: u64) {
    let mut rng = StdRng::seed_from_u64(seed);
    let mut pressure = Pressure::random(&mut rng, 0.3);
    if words.is_multiple_of(2) {
        // Sparse ops: the ALU runs dry between them and write-backs pile up.
        pressure.op_valid = 0.1;
    }
    let mut unit = AtomicUnitDriver::new(latency, pressure, seed).expect("model");
    let addrs: Vec<u64> = (0..words).map(|_| ADDRESSES[rng.gen_range(0..ADDRESSES.len())]).collect();
    let mut reference = Reference::default();
    for &addr in &addrs {
        let value = biased_value(&mut rng);
        unit.memory.words.insert(addr, value);
        reference.words.insert(addr, value);
    }
    let what = format!("latency {latency}, {words} word(s), seed {seed}");
    let mut expected = Vec::with_capacity(ops);
    let mut addr = addrs[0];
    for _ in 0..ops {
        if rng.gen_bool(0.3) {
            addr = addrs[rng.gen_range(0..addrs.len())];
        }
        let mut op = random_op(&mut rng, addr, reference.word(addr));
        if rng.gen_bool(0.02) {
            // Someone else writes the word: wait until the unit has nothing in flight
            // (every result out means every write-back acknowledged), change memory
            // behind its back, and tell it with `fresh`.
            unit.run_until(step_limit(latency, unit.queue.len()), &format!("{what}: drained before a fresh op"), |u| {
                u.drained()
            });
            check_results(&unit, &expected, &what);
            let value = biased_value(&mut rng);
            unit.memory.words.insert(addr, value);
            reference.words.insert(addr, value);
            op = random_op(&mut rng, addr, value);
            op.fresh = true;
        } else if rng.gen_bool(0.03) {
            // `fresh` with nothing changed and nothing drained: the unit must still read
            // the word, and only once its own write-backs to it are acknowledged.
            op.fresh = true;
        }
        expected.push(reference.apply(&op));
        unit.queue.push_back(op);
        // Keep a few ops queued; run while the queue is long.
        while unit.queue.len() > 8 {
            let before = unit.accepted();
            unit.run_until(step_limit(latency, 8), &format!("{what}: op taken"), |u| u.accepted() > before);
        }
    }
    unit.drain(step_limit(latency, ops.min(600)));
    check_results(&unit, &expected, &what);
    assert_eq!(unit.results.len(), ops, "{what}: results");
    for &addr in &addrs {
        assert_eq!(unit.memory.word(addr), reference.word(addr), "{what}: memory at {addr:#x} at the end");
    }
}

#[test]
fn atom_09_10_12_14_unit_matches_sequential_reference_on_random_ops() {
    trace::on_failure("atom_09_10_12_14_unit_matches_sequential_reference_on_random_ops", || {
        // 20 000 ops per latency, over 1 to 4 words.
        for latency in LATENCIES {
            for words in 1..=4 {
                random_run(latency, words, 5_000, 0x7306 + latency * 16 + words as u64);
            }
        }
    });
}

#[test]
fn atom_12_contended_fetch_add_four_requesters_one_word() {
    trace::on_failure("atom_12_contended_fetch_add_four_requesters_one_word", || {
        for latency in LATENCIES {
            // Four requesters' 10 000 FetchAdd(+1) each, interleaved at random, all on one
            // word: the originals are exactly 0..39 999 in order and the word ends at 40 000.
            let mut rng = StdRng::seed_from_u64(latency);
            let pressure = Pressure::random(&mut rng, 0.5);
            let mut unit = AtomicUnitDriver::new(latency, pressure, latency).expect("model");
            let addr = 0x4000_0008;
            let mut left = [10_000u32; 4];
            while left.iter().any(|&n| n > 0) {
                let who = rng.gen_range(0..4);
                if left[who] > 0 {
                    left[who] -= 1;
                    unit.queue.push_back(UnitOp { addr, aopcode: 0x0, data: 1, ..Default::default() });
                }
            }
            unit.drain(step_limit(latency, 2_000) + 40_000 * 4);
            let want: Vec<u64> = (0..40_000).collect();
            assert!(unit.results == want, "latency {latency}: originals are not 0..39 999 in order");
            assert_eq!(unit.memory.word(addr), 40_000, "latency {latency}: final value");
        }
    });
}

#[test]
fn atom_14_after_gate_holds_the_op_and_those_behind_it() {
    trace::on_failure("atom_14_after_gate_holds_the_op_and_those_behind_it", || {
        for latency in LATENCIES {
            let what = format!("latency {latency}");
            let mut unit = AtomicUnitDriver::new(latency, Pressure::NONE, 1).expect("model");
            let mut reference = Reference::default();
            let mut expected = Vec::new();
            let (a, b, c) = (0x100, 0x208, 0x3F0);
            let mut push = |unit: &mut AtomicUnitDriver, expected: &mut Vec<u64>, addr: u64, after: u16| {
                let op = UnitOp { addr, aopcode: 0x0, data: 0x11, after, ..Default::default() };
                expected.push(reference.apply(&op));
                unit.queue.push_back(op);
            };
            // done_count near the wrap: "reached" is modulo 2^16.
            unit.done_count = 0xFFF0;
            push(&mut unit, &mut expected, a, 0xFFF0);
            unit.drain(step_limit(latency, 2));
            assert_eq!(unit.results.len(), 1, "{what}: an op whose after is reached runs");

            // The next op on that word is gated at 0x0005, after the wrap. The op on another
            // word behind it is ungated, and must wait too.
            push(&mut unit, &mut expected, a, 0x0005);
            push(&mut unit, &mut expected, b, 0xFFF0);
            let reads = unit.memory.reads_taken;
            for done_count in [0xFFF0u16, 0xFFFF, 0x0000, 0x0004] {
                unit.done_count = done_count;
                for _ in 0..4 * latency + 200 {
                    unit.cycle();
                }
                assert_eq!(
                    unit.results.len(),
                    1,
                    "{what}: a gated op (or one behind it) ran at done_count {done_count:#x}"
                );
                assert_eq!(unit.memory.reads_taken, reads, "{what}: an op behind a gated op read memory");
            }
            unit.done_count = 0x0005;
            unit.drain(step_limit(latency, 3));
            check_results(&unit, &expected, &what);
            assert_eq!(unit.results.len(), 3, "{what}: both ops ran once done_count reached 0x0005");

            // A gated op on a word not held must not even read it.
            push(&mut unit, &mut expected, c, 0x0100);
            let reads = unit.memory.reads_taken;
            for _ in 0..4 * latency + 200 {
                unit.cycle();
            }
            assert_eq!(unit.memory.reads_taken, reads, "{what}: a gated op read memory");
            assert_eq!(unit.results.len(), 3, "{what}: a gated op ran");
            unit.done_count = 0x0100;
            unit.drain(step_limit(latency, 2));
            check_results(&unit, &expected, &what);
            assert_eq!(unit.results.len(), 4, "{what}: results");
            for addr in [a, b, c] {
                assert_eq!(unit.memory.word(addr), reference.word(addr), "{what}: memory at {addr:#x}");
            }
        }
    });
}

#[test]
fn atom_14_results_held_back_until_the_op_queue_fills_nothing_lost() {
    trace::on_failure("atom_14_results_held_back_until_the_op_queue_fills_nothing_lost", || {
        for latency in LATENCIES {
            let what = format!("latency {latency}");
            let mut rng = StdRng::seed_from_u64(0xD0 + latency);
            let mut pressure = Pressure::random(&mut rng, 0.5);
            pressure.res_ready = 0.0;
            let mut unit = AtomicUnitDriver::new(latency, pressure, latency).expect("model");
            let mut reference = Reference::default();
            let mut expected = Vec::new();
            // Runs of 699 ops on one word (the unit chains them and fills its result
            // storage), then one on another word.
            let ops = 3_000;
            for i in 0..ops {
                let addr = if i % 700 == 699 { ADDRESSES[1 + i / 700] } else { 0x1000 };
                let op = random_op(&mut rng, addr, reference.word(addr));
                expected.push(reference.apply(&op));
                unit.queue.push_back(op);
            }
            // Long enough for the result storage and then the op queue (`OUTSTANDING`) to
            // fill, with ops offered at half the cycles or more.
            for _ in 0..2_000 + 2 * OUTSTANDING {
                unit.cycle();
            }
            assert!(unit.results.is_empty(), "{what}: a result left while m_res_ready was low");
            assert!(unit.accepted() < ops, "{what}: the unit took every op with its results held back");
            assert!(!unit.op_ready(), "{what}: the unit still takes ops with its result storage full");
            assert_eq!(unit.memory.writes_in_flight(), 0, "{what}: write-backs stuck while results are held");
            let taken = unit.accepted();
            unit.pressure.res_ready = 1.0;
            unit.drain(step_limit(latency, 600));
            check_results(&unit, &expected, &what);
            assert_eq!(unit.results.len(), ops, "{what}: results");
            assert!(taken > 500, "{what}: only {taken} ops taken before results were held back");
            assert_eq!(unit.memory.word(0x1000), reference.word(0x1000), "{what}: memory");
        }
    });
}

/// The receive engine must never wait for the unit (the head may wait for Read Responses
/// that wait for the peer, which may wait for this engine): with its head gated, the unit
/// still takes as many ops as 64 QPs with IRD `MAX_READS` can have outstanding, and runs them all in
/// order once the gate opens.
#[test]
fn atom_14_ops_queue_behind_a_gated_head() {
    trace::on_failure("atom_14_ops_queue_behind_a_gated_head", || {
        for latency in LATENCIES {
            let what = format!("latency {latency}");
            let mut unit = AtomicUnitDriver::new(latency, Pressure::NONE, 3).expect("model");
            let mut reference = Reference::default();
            let mut expected = Vec::new();
            unit.done_count = 0;
            for i in 0..OUTSTANDING + 1 {
                // The first op waits for done_count 1; those behind it are ungated, on words
                // of their own and on the head's.
                let addr = ADDRESSES[i % ADDRESSES.len()];
                let op = UnitOp { addr, aopcode: 0x0, data: i as u64, after: u16::from(i == 0), ..Default::default() };
                expected.push(reference.apply(&op));
                unit.queue.push_back(op);
            }
            for _ in 0..2 * OUTSTANDING + 4 * latency as usize + 100 {
                unit.cycle();
            }
            assert_eq!(unit.accepted(), OUTSTANDING + 1, "{what}: ops taken behind a gated head");
            assert!(unit.results.is_empty(), "{what}: an op ran before the gate opened");
            unit.done_count = 1;
            unit.drain(step_limit(latency, OUTSTANDING + 1));
            check_results(&unit, &expected, &what);
            for addr in ADDRESSES {
                assert_eq!(unit.memory.word(addr), reference.word(addr), "{what}: memory at {addr:#x}");
            }
        }
    });
}
