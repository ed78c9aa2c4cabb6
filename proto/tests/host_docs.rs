//! docs/REGISTERS.md and docs/DESCRIPTORS.md stay true: every register
//! offset, register field, context field, descriptor field and code in their
//! tables equals the `rnic_proto::host` constant, and every constant is
//! documented.

use rnic_proto::host::context::{cq_fields, mr_fields, qp_fields, QpState};
use rnic_proto::host::desc::{cqe_fields, rq_wqe_fields, sq_wqe_fields, CqeOpcode, CqeStatus, SqOpcode};
use rnic_proto::host::regs::{self, CmdOpcode, CmdResult};
use rnic_proto::host::Field;
use std::collections::BTreeSet;
use std::path::Path;

fn doc(name: &str) -> String {
    let path = Path::new(env!("CARGO_MANIFEST_DIR")).join("../docs").join(name);
    std::fs::read_to_string(&path).unwrap_or_else(|e| panic!("{}: {e}", path.display()))
}

/// The rows of every table under the `##` heading `title` (header rows and
/// separators left out), as trimmed cells. `\|` inside a cell is kept.
fn tables(doc: &str, title: &str) -> Vec<Vec<Vec<String>>> {
    let mut lines = doc.lines().skip_while(|l| l.trim_start_matches('#').trim() != title || !l.starts_with('#'));
    assert!(lines.next().is_some(), "no section '{title}'");
    let mut out: Vec<Vec<Vec<String>>> = Vec::new();
    let mut in_table = false;
    for line in lines.take_while(|l| !l.starts_with("## ")) {
        if !line.starts_with('|') {
            in_table = false;
            continue;
        }
        let cells: Vec<String> =
            line.replace("\\|", "\u{1}").split('|').map(|c| c.trim().replace('\u{1}', "|")).collect();
        let cells = cells[1..cells.len() - 1].to_vec();
        if !in_table {
            in_table = true;
            out.push(Vec::new());
            continue; // the header row
        }
        if cells.iter().all(|c| c.chars().all(|ch| ch == '-')) {
            continue;
        }
        if let Some(t) = out.last_mut() {
            t.push(cells);
        }
    }
    assert!(!out.is_empty(), "no table in section '{title}'");
    out
}

fn table(doc: &str, title: &str, index: usize) -> Vec<Vec<String>> {
    tables(doc, title).swap_remove(index)
}

fn number(s: &str) -> u64 {
    let s = s.replace('_', "");
    match s.strip_prefix("0x") {
        Some(h) => u64::from_str_radix(h, 16),
        None => s.parse(),
    }
    .unwrap_or_else(|_| panic!("not a number: '{s}'"))
}

/// "a–b" (or "a-b") as (a, b); a single "a" as (a, a).
fn range(s: &str, unit_prefix: &str) -> (u64, u64) {
    let s = s.replace('–', "-");
    let mut parts = s.split('-').map(|p| number(p.trim().trim_start_matches(unit_prefix)));
    let first = parts.next().unwrap();
    (first, parts.next().unwrap_or(first))
}

/// "h:l" or "n" as (high, low).
fn bits(s: &str) -> (u64, u64) {
    match s.split_once(':') {
        Some((h, l)) => (number(h), number(l)),
        None => (number(s), number(s)),
    }
}

/// A documented field: name, lsb and width, from a unit cell ("w4–w5" or
/// "8–15"), a bits cell and a name cell. The unit range must be exactly the
/// units the bits cover.
fn documented_field(unit: &str, bits_cell: &str, name: &str, unit_bits: u64, prefix: &str) -> (String, u32, u32) {
    let (first, last) = range(unit, prefix);
    let (hi, lo) = bits(bits_cell);
    let lsb = first * unit_bits + lo;
    let msb = first * unit_bits + hi;
    assert_eq!(msb / unit_bits, last, "{name}: '{unit}' does not match bits {bits_cell}");
    (name.to_string(), lsb as u32, (hi - lo + 1) as u32)
}

fn as_set(fields: &[Field]) -> BTreeSet<(String, u32, u32)> {
    fields.iter().map(|f| (f.name.to_string(), f.lsb, f.width)).collect()
}

fn assert_same(what: &str, documented: BTreeSet<(String, u32, u32)>, constants: BTreeSet<(String, u32, u32)>) {
    let missing: Vec<_> = constants.difference(&documented).collect();
    let wrong: Vec<_> = documented.difference(&constants).collect();
    assert!(
        missing.is_empty() && wrong.is_empty(),
        "{what}: undocumented or different {missing:?}; documented but not so {wrong:?}"
    );
}

fn context_table(d: &str, title: &str, fields: &[Field]) {
    let rows = table(d, title, 0);
    let documented = rows.iter().map(|r| documented_field(&r[0], &r[1], &r[2], 32, "w")).collect();
    assert_same(title, documented, as_set(fields));
}

fn descriptor_table(d: &str, title: &str, fields: &[Field]) {
    let rows = table(d, title, 0);
    let documented = rows.iter().map(|r| documented_field(&r[0], &r[1], &r[2], 8, "")).collect();
    assert_same(title, documented, as_set(fields));
}

/// A code table: value column and name column against (value, name) pairs.
fn code_table(rows: &[Vec<String>], what: &str, codes: &[(u64, &str)]) {
    let documented: BTreeSet<(u64, String)> = rows.iter().map(|r| (number(&r[0]), r[1].clone())).collect();
    let constants: BTreeSet<(u64, String)> = codes.iter().map(|(v, n)| (*v, n.to_string())).collect();
    assert_eq!(documented, constants, "{what}");
}

fn check_register_map(d: &str) {
    let rows = table(d, "Register map", 0);
    let mut fixed = BTreeSet::new();
    let mut arrays = BTreeSet::new();
    for r in &rows {
        let (offset, name, access) = (&r[0], r[1].clone(), r[2].clone());
        match offset.split_once('+') {
            None => {
                fixed.insert((name, number(offset) as u32, access));
            }
            Some((base, step)) => {
                let stride = step.trim().split('·').next().unwrap();
                arrays.insert((name, number(base.trim()) as u32, number(stride) as u32, access));
            }
        }
    }
    let want_fixed: BTreeSet<_> = regs::REGISTERS
        .iter()
        .filter(|r| r.offset != regs::CMD_DATA)
        .map(|r| (r.name.to_string(), r.offset, r.access.as_str().to_string()))
        .collect();
    assert_eq!(fixed, want_fixed, "fixed registers");
    let want_arrays: BTreeSet<_> = regs::REGISTER_ARRAYS
        .iter()
        .map(|a| (a.name.to_string(), a.base, a.stride, a.access.as_str().to_string()))
        .collect();
    assert_eq!(arrays, want_arrays, "register arrays");
}

fn check_register_fields(d: &str) {
    let rows = table(d, "Register fields", 0);
    let documented: BTreeSet<_> = rows
        .iter()
        .map(|r| {
            let (name, lsb, width) = documented_field("0", &r[1], &r[2], 32, "");
            (format!("{}.{name}", r[0]), lsb, width)
        })
        .collect();
    let constants: BTreeSet<_> =
        regs::REGISTER_FIELDS.iter().map(|(reg, f)| (format!("{reg}.{}", f.name), f.lsb, f.width)).collect();
    assert_same("register fields", documented, constants);
}

fn check_register_codes(d: &str) {
    let codes: Vec<(u64, &str)> = CmdOpcode::ALL.iter().map(|(o, n)| (o.code().into(), *n)).collect();
    code_table(&table(d, "Commands", 0), "commands", &codes);
    let codes: Vec<(u64, &str)> = CmdResult::ALL.iter().map(|(r, n)| (r.code().into(), *n)).collect();
    code_table(&table(d, "Commands", 1), "results", &codes);
    let codes: Vec<(u64, &str)> = QpState::ALL.iter().map(|(s, n)| (*s as u64, *n)).collect();
    code_table(&table(d, "QP context", 1), "QP states", &codes);
}

fn check_contexts(d: &str) {
    context_table(d, "QP context", qp_fields::CONTEXT);
    context_table(d, "QP status", qp_fields::STATUS);
    context_table(d, "CQ context", cq_fields::CONTEXT);
    context_table(d, "CQ status", cq_fields::STATUS);
    context_table(d, "MR context", mr_fields::CONTEXT);
}

fn check_descriptors(d: &str) {
    descriptor_table(d, "SQ WQE", sq_wqe_fields::ALL);
    descriptor_table(d, "RQ WQE", rq_wqe_fields::ALL);
    descriptor_table(d, "CQE", cqe_fields::ALL);
    let codes: Vec<(u64, &str)> = SqOpcode::ALL.iter().map(|(o, n)| (o.code().into(), *n)).collect();
    code_table(&table(d, "SQ WQE", 1), "SQ opcodes", &codes);
    let codes: Vec<(u64, &str)> = CqeOpcode::ALL.iter().map(|(o, n)| (o.code().into(), *n)).collect();
    code_table(&table(d, "CQE", 1), "CQE opcodes", &codes);
    let codes: Vec<(u64, &str)> = CqeStatus::ALL.iter().map(|(s, n)| (s.code().into(), *n)).collect();
    code_table(&table(d, "CQE", 2), "CQE status", &codes);
}

#[test]
fn register_map_matches_the_constants() {
    check_register_map(&doc("REGISTERS.md"));
    // The array formulas are the offset functions of the driver and the HDL.
    assert_eq!((regs::sq_pi(3), regs::rq_pi(3), regs::cq_ci(3), regs::cq_arm(3)), (0x1018, 0x101C, 0x2018, 0x201C));
}

#[test]
fn register_fields_match_the_constants() {
    check_register_fields(&doc("REGISTERS.md"));
}

#[test]
fn commands_results_and_states_match_the_constants() {
    check_register_codes(&doc("REGISTERS.md"));
}

#[test]
fn contexts_match_the_constants() {
    check_contexts(&doc("REGISTERS.md"));
}

#[test]
fn descriptors_and_their_codes_match_the_constants() {
    check_descriptors(&doc("DESCRIPTORS.md"));
}

/// One of the doc checks above.
type Check = fn(&str);

/// True when `check` panics on `text`.
fn rejects(text: String, check: Check) -> bool {
    std::panic::catch_unwind(move || check(&text)).is_err()
}

#[test]
fn the_checks_fail_on_a_drifted_doc() {
    let regs_doc = doc("REGISTERS.md");
    let drifts: [(&str, &str, Check); 6] = [
        ("| 0x034 | CMD_STATUS |", "| 0x038 | CMD_STATUS |", check_register_map),
        ("| 0x1004 + 8·qpn |", "| 0x1008 + 8·qpn |", check_register_map),
        ("| CMD | 31:8 | index |", "| CMD | 31:9 | index |", check_register_fields),
        ("| 4 | BAD_VALUE |", "| 5 | BAD_VALUE |", check_register_codes),
        ("| w3 | 31:24 | ord |", "| w3 | 31:25 | ord |", check_contexts),
        ("| w4–w5 | 63:0 | sq_base |", "| w4 | 63:0 | sq_base |", check_contexts),
    ];
    for (from, to, check) in drifts {
        assert!(regs_doc.contains(from), "{from}");
        assert!(rejects(regs_doc.replace(from, to), check), "{from} -> {to}");
    }
    let desc = doc("DESCRIPTORS.md");
    let drifts = [
        ("| 1 | 1 | fence |", "| 1 | 2 | fence |"),
        ("| 4–7 | 31:0 | length |", "| 4–6 | 31:0 | length |"),
        ("| 31 | 3 | invalidated |", ""),
        ("| 7 | TERMINATED |", "| 8 | TERMINATED |"),
        ("| 0x10 | WRITE_IMM |", "| 0x0B | WRITE_IMM |"),
        ("| 2 | 3:0 | aopcode |", "| 2 | 4:0 | aopcode |"),
        ("| 88–95 | 63:0 | compare_mask |", "| 80–87 | 63:0 | compare_mask |"),
        ("| 4 | RECV_IMM |", "| 5 | RECV_IMM |"),
    ];
    for (from, to) in drifts {
        assert!(desc.contains(from), "{from}");
        assert!(rejects(desc.replace(from, to), check_descriptors), "{from} -> {to}");
    }
}
