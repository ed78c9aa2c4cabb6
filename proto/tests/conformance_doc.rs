//! docs/CONFORMANCE.md stays true: it lists every CHECKLIST item exactly once, every test
//! it names exists, an item claimed as implemented names at least one test, the "runs in"
//! column says where its tests run (from the files that hold them), and an item claimed
//! for the RTL names a test that drives Verilated RTL. And docs/BRINGUP.md, whose flow
//! cannot run here, names only files that exist.
use std::path::{Path, PathBuf};

/// Every item id of the conformance checklist, in its order (MPA, MPA2, DDP, RDMAP,
/// ATOM, IMM, SEC).
fn checklist_items() -> Vec<String> {
    let sections: [(&str, usize); 7] =
        [("MPA", 26), ("MPA2", 8), ("DDP", 14), ("RDMAP", 20), ("ATOM", 16), ("IMM", 5), ("SEC", 12)];
    sections.iter().flat_map(|&(p, n)| (1..=n).map(move |i| format!("{p}-{i:02}"))).collect()
}

fn repo() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("..")
}

/// Every Rust source of the workspace under `dir`: its path from the repository root, and
/// its text.
fn rust_sources(dir: &Path, out: &mut Vec<(String, String)>) {
    for entry in std::fs::read_dir(dir).into_iter().flatten().flatten() {
        let path = entry.path();
        let name = entry.file_name();
        if path.is_dir() && name != "target" && name != ".git" && name != ".venv" {
            rust_sources(&path, out);
        } else if path.extension().is_some_and(|e| e == "rs") {
            let relative = path.strip_prefix(repo()).unwrap_or(&path).to_string_lossy().replace('\\', "/");
            let relative = relative.trim_start_matches("./").trim_start_matches("../").to_string();
            out.push((relative, std::fs::read_to_string(&path).unwrap_or_default()));
        }
    }
}

/// Where the tests of a file run, the places in the order the "runs in" column lists them:
/// `rnic_top` (the Verilated RNIC, through the driver or a raw peer on its streams),
/// `block` (a Verilated block's testbench), `driver` (the driver against its fake
/// backend), `model` (the reference model of `rnic-proto`), `wire` (the wire formats of
/// `rnic-proto`).
const PLACES: [&str; 5] = ["rnic_top", "block", "driver", "model", "wire"];

fn place(path: &str) -> &'static str {
    let file = path.rsplit('/').next().unwrap_or(path);
    match path {
        _ if path.starts_with("driver/tests/") && file.starts_with("sim_") => "rnic_top",
        _ if path.starts_with("sim/tests/") => "block",
        _ if path.starts_with("driver/") => "driver",
        _ if path.starts_with("proto/") && (file.starts_with("model") || path.contains("/model/")) => "model",
        _ if path.starts_with("proto/") => "wire",
        _ => "elsewhere",
    }
}

#[test]
fn conformance_doc_covers_every_item_and_names_real_tests() {
    let doc = std::fs::read_to_string(repo().join("docs/CONFORMANCE.md")).expect("docs/CONFORMANCE.md");
    let mut sources = Vec::new();
    for dir in ["proto", "hdl", "sim", "driver", "firmware-tests"] {
        rust_sources(&repo().join(dir), &mut sources);
    }
    let items = checklist_items();
    let mut seen = Vec::new();
    let mut problems = Vec::new();
    for line in doc.lines().filter(|l| l.starts_with("| ")) {
        let cells: Vec<&str> = line.split('|').map(str::trim).collect();
        let (id, tests, runs_in, status) = match cells.as_slice() {
            ["", id, _, tests, runs_in, status, ""] if items.iter().any(|i| i == id) => {
                (*id, *tests, *runs_in, *status)
            }
            ["", "item", ..] | ["", "---", ..] => continue,
            _ => {
                problems.push(format!("row not understood: {line}"));
                continue;
            }
        };
        seen.push(id.to_string());
        let names: Vec<&str> = tests.split('`').skip(1).step_by(2).collect();
        let mut places = Vec::new();
        for name in &names {
            let homes: Vec<&str> = sources
                .iter()
                .filter(|(_, text)| text.contains(&format!("fn {name}(")))
                .map(|(path, _)| place(path))
                .collect();
            if homes.is_empty() {
                problems.push(format!("{id}: no test named {name}"));
            }
            places.extend(homes);
        }
        let listed: Vec<&str> = PLACES.iter().copied().filter(|p| places.contains(p)).collect();
        let want = if listed.is_empty() { "—".to_string() } else { listed.join(", ") };
        if runs_in != want {
            problems.push(format!("{id}: runs in '{runs_in}', but its tests run in '{want}'"));
        }
        let known = ["RTL", "wire", "model", "driver", "not yet", "n/a", "partial"];
        if !known.iter().any(|k| status.starts_with(k)) {
            problems.push(format!("{id}: unknown status '{status}'"));
        }
        if ["RTL", "wire", "model", "driver"].iter().any(|k| status.starts_with(k)) && names.is_empty() {
            problems.push(format!("{id}: status '{status}' but no test"));
        }
        if status.starts_with("RTL") && !listed.iter().any(|p| ["rnic_top", "block"].contains(p)) {
            problems.push(format!("{id}: claimed for the RTL, but no test it names drives Verilated RTL"));
        }
    }
    for id in &items {
        match seen.iter().filter(|s| *s == id).count() {
            1 => {}
            0 => problems.push(format!("{id} is missing")),
            n => problems.push(format!("{id} appears {n} times")),
        }
    }
    assert!(problems.is_empty(), "docs/CONFORMANCE.md:\n  {}", problems.join("\n  "));
}

/// docs/BRINGUP.md describes a flow that cannot run here; every repository file it names
/// must exist, and the board wrapper must connect every port of the generated `rnic_top`.
#[test]
fn bringup_names_only_files_that_exist_and_its_wrapper_connects_every_rnic_top_port() {
    let doc = std::fs::read_to_string(repo().join("docs/BRINGUP.md")).expect("docs/BRINGUP.md");
    let named: Vec<&str> = doc
        .split('`')
        .skip(1)
        .step_by(2)
        .filter(|s| !s.contains(' ') && s.contains('/') && s.contains('.') && !s.starts_with('/'))
        .filter(|s| {
            ["bitstream/", "constraints/", "hdl/", "docs/", "driver/", "scripts/"].iter().any(|d| s.starts_with(d))
        })
        .filter(|s| !s.starts_with("bitstream/build/"))
        .collect();
    assert!(named.len() >= 4, "the flow's files are named: {named:?}");
    let missing: Vec<&&str> = named.iter().filter(|f| !repo().join(f).exists()).collect();
    assert!(missing.is_empty(), "docs/BRINGUP.md names files that do not exist: {missing:?}");

    let top = std::fs::read_to_string(repo().join("hdl/verilog/rnic_top.v")).expect("rnic_top.v");
    let header = top.split("module rnic_top(").nth(1).and_then(|h| h.split(");").next()).expect("rnic_top's ports");
    let wrapper = std::fs::read_to_string(repo().join("bitstream/vivado/rnic_au200.v")).expect("wrapper");
    let instance = wrapper.split("rnic_top rnic (").nth(1).and_then(|i| i.split(");").next()).expect("the instance");
    let unconnected: Vec<&str> =
        header.split(',').map(str::trim).filter(|p| !instance.contains(&format!(".{p}("))).collect();
    assert!(unconnected.is_empty(), "rnic_au200.v leaves rnic_top ports unconnected: {unconnected:?}");
}
