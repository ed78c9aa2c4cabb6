//! `atomic/alu` in Verilator against the `rnic_proto::atomic` functions (CHECKLIST ATOM-09,
//! ATOM-10): random operations with biased masks, chained operations, and the V13/V14
//! tables of VECTORS.md.
use std::collections::VecDeque;

use rand::rngs::StdRng;
use rand::{Rng, SeedableRng};
use rnic_proto::atomic::{masked_cmp_swap, masked_fetch_add};
use rnic_sim::alu::{AluDriver, AluOp, AluResult};
use rnic_sim::trace;

/// Cycles from presenting an operation to its result (hdl `ALU_LATENCY`).
const LATENCY: u64 = 2;

/// What the ALU must produce, operation by operation.
#[derive(Default)]
struct Reference {
    last_result: u64,
}

impl Reference {
    fn apply(&mut self, op: &AluOp) -> AluResult {
        let original = if op.chain { self.last_result } else { op.original };
        let (result, unsupported) = match op.aopcode {
            0x0 => (masked_fetch_add(original, op.data, op.mask), false),
            0x2 => (masked_cmp_swap(original, op.data, op.mask, op.compare, op.compare_mask), false),
            _ => (original, true),
        };
        self.last_result = result;
        AluResult { result, original, changed: result != original, tag: op.tag, unsupported }
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

/// Operands that make carries run into mask bits: all ones below a field MSB, etc.
fn biased_value(rng: &mut StdRng) -> u64 {
    match rng.gen_range(0..6) {
        0 => 0,
        1 => u64::MAX,
        2 => (1u64 << rng.gen_range(1..64)) - 1,
        3 => 1,
        _ => rng.gen(),
    }
}

fn random_op(rng: &mut StdRng, tag: u16) -> AluOp {
    let aopcode = match rng.gen_range(0..20) {
        0 => rng.gen_range(0..16), // occasionally unsupported (0x1 = draft Swap, 0x3..)
        1..=10 => 0x0,
        _ => 0x2,
    };
    let original = biased_value(rng);
    // CmpSwap compares equal often enough to exercise the swap path.
    let compare = if rng.gen_bool(0.5) { original } else { biased_value(rng) };
    AluOp {
        aopcode,
        chain: rng.gen_bool(0.3),
        original,
        data: biased_value(rng),
        mask: biased_mask(rng),
        compare,
        compare_mask: biased_mask(rng),
        tag,
    }
}

/// Drives `ops` (None = idle cycle) and checks every result against the reference, on
/// the right cycle and in order. Returns the number of operations checked.
fn run(alu: &mut AluDriver, ops: impl IntoIterator<Item = Option<AluOp>>) -> usize {
    let mut reference = Reference::default();
    let mut expected: VecDeque<(u64, AluResult)> = VecDeque::new();
    let mut checked = 0;
    let mut cycle = 0u64;
    let mut check =
        |out: Option<AluResult>, cycle: u64, expected: &mut VecDeque<(u64, AluResult)>| match expected.front() {
            Some(&(due, want)) if due == cycle => {
                assert_eq!(out, Some(want), "cycle {cycle}");
                expected.pop_front();
                checked += 1;
            }
            _ => assert_eq!(out, None, "unexpected result on cycle {cycle}"),
        };
    for op in ops {
        if let Some(op) = &op {
            expected.push_back((cycle + LATENCY, reference.apply(op)));
        }
        let out = alu.cycle(op);
        check(out, cycle, &mut expected);
        cycle += 1;
    }
    while !expected.is_empty() {
        let out = alu.cycle(None);
        check(out, cycle, &mut expected);
        cycle += 1;
    }
    checked
}

#[test]
fn atom_09_10_alu_matches_proto_on_random_operations() {
    trace::on_failure("atom_09_10_alu_matches_proto_on_random_operations", || {
        let mut alu = AluDriver::new().expect("model");
        let mut rng = StdRng::seed_from_u64(0x7306);
        let ops: Vec<Option<AluOp>> =
            (0..30_000u32).map(|i| rng.gen_bool(0.85).then(|| random_op(&mut rng, i as u16))).collect();
        // Both verdicts of `changed` come up often: operations that leave the word as it
        // was (zero Add Data, a failed compare, a swap of equal bits) and those that do not.
        let mut reference = Reference::default();
        let verdicts: Vec<bool> =
            ops.iter().flatten().map(|op| reference.apply(op)).filter(|r| !r.unsupported).map(|r| r.changed).collect();
        let unchanged = verdicts.iter().filter(|&&c| !c).count();
        assert!(
            unchanged >= 2_000 && verdicts.len() - unchanged >= 2_000,
            "{unchanged} of {} unchanged",
            verdicts.len()
        );
        let checked = run(&mut alu, ops);
        assert!(checked >= 20_000, "only {checked} operations checked");
    });
}

#[test]
fn atom_09_masked_fetch_add_v13_table() {
    // VECTORS V13: (original, add, mask, result).
    const V13: [(u64, u64, u64, u64); 11] = [
        (0x00000000000000ff, 0x1, 0x0, 0x0000000000000100),
        (0xffffffffffffffff, 0x1, 0x0, 0x0000000000000000),
        (0xffffffffffffffff, 0x1, 0x8000000000000000, 0x0000000000000000),
        (0x00000001ffffffff, 0x1, 0x8000000080000000, 0x0000000100000000),
        (0x00000001ffffffff, 0x1, 0x0, 0x0000000200000000),
        (0x0001ffff7fff8000, 0x0001000100010001, 0x8000800080008000, 0x0002000080008001),
        (0x00ff7f80fe01ffff, 0x0101010101010101, 0x8080808080808080, 0x01008081ff020000),
        (0x00000000000000ff, 0x1, 0x0000000000000080, 0x0000000000000000),
        (0x1, 0x1, 0x1, 0x0),
        (0xf0f0f0f0f0f0f0f0, 0xffff0000ffff0000, 0xffffffffffffffff, 0x0f0ff0f00f0ff0f0),
        (0x0123456789abcdef, 0x0, 0x0, 0x0123456789abcdef),
    ];
    let mut alu = AluDriver::new().expect("model");
    for (i, &(original, data, mask, want)) in V13.iter().enumerate() {
        let op = AluOp { aopcode: 0, original, data, mask, tag: i as u16, ..Default::default() };
        let out = [alu.cycle(Some(op)), alu.cycle(None), alu.cycle(None)];
        let got = out[2].expect("result after two cycles");
        assert_eq!((got.result, got.original, got.tag), (want, original, i as u16), "V13 row {i}");
    }
}

#[test]
fn atom_10_masked_cmp_swap_v14_table() {
    // VECTORS V14: (original, swap, swap mask, compare, compare mask, memory after).
    const V14: [(u64, u64, u64, u64, u64, u64); 7] = [
        (0x1111, 0x2222, u64::MAX, 0x1111, u64::MAX, 0x2222),
        (0x1111, 0x2222, u64::MAX, 0x1112, u64::MAX, 0x1111),
        (
            0xaaaa0000bbbb0000,
            0x1234567812345678,
            0x00000000ffffffff,
            0xaaaa0000ffffffff,
            0xffffffff00000000,
            0xaaaa000012345678,
        ),
        (0xdeadbeef00000000, 0xffff, 0xffff, 0x0, 0x0, 0xdeadbeef0000ffff),
        (0x5555, 0xaaaa, 0x0, 0x5555, u64::MAX, 0x5555),
        (0xf0, 0x1, 0x1, 0x0, 0x1, 0xf1),
        (0xf1, 0x1, 0x1, 0x0, 0x1, 0xf1),
    ];
    let mut alu = AluDriver::new().expect("model");
    for (i, &(original, data, mask, compare, compare_mask, want)) in V14.iter().enumerate() {
        let op = AluOp { aopcode: 2, original, data, mask, compare, compare_mask, ..Default::default() };
        alu.cycle(Some(op));
        alu.cycle(None);
        let got = alu.cycle(None).expect("result");
        assert_eq!((got.result, got.original), (want, original), "V14 row {i}");
    }
}

#[test]
fn atom_12_chained_fetch_add_runs_one_per_cycle() {
    // 1 000 back-to-back FetchAdd(+1) on one word, each taking the previous result: the
    // returned originals are exactly 0..999 and the word ends at 1000.
    let mut alu = AluDriver::new().expect("model");
    let n = 1000u64;
    let mut originals = Vec::new();
    let mut last = None;
    for i in 0..n + LATENCY {
        let op = (i < n).then_some(AluOp { aopcode: 0, chain: i > 0, data: 1, tag: i as u16, ..Default::default() });
        if let Some(r) = alu.cycle(op) {
            originals.push(r.original);
            last = Some(r.result);
        }
    }
    assert_eq!(originals, (0..n).collect::<Vec<_>>());
    assert_eq!(last, Some(n));
}

#[test]
fn atom_04_unsupported_aopcodes_leave_the_word_unchanged() {
    let mut alu = AluDriver::new().expect("model");
    for aopcode in [0x1u8, 0x3, 0x7, 0xF] {
        let op = AluOp { aopcode, original: 0x1234, data: 0xFFFF, mask: u64::MAX, ..Default::default() };
        alu.cycle(Some(op));
        alu.cycle(None);
        let got = alu.cycle(None).expect("result");
        assert!(got.unsupported, "AOpCode {aopcode:#x}");
        assert_eq!(got.result, 0x1234, "AOpCode {aopcode:#x}");
    }
}
