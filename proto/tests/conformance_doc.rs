//! docs/CONFORMANCE.md stays true: it lists every CHECKLIST item exactly once, every test
//! it names exists, and an item claimed as implemented names at least one test. And
//! docs/BRINGUP.md, whose flow cannot run here, names only files that exist.
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

/// The text of every Rust source of the workspace.
fn rust_sources(dir: &Path, out: &mut String) {
    for entry in std::fs::read_dir(dir).into_iter().flatten().flatten() {
        let path = entry.path();
        let name = entry.file_name();
        if path.is_dir() && name != "target" && name != ".git" && name != ".venv" {
            rust_sources(&path, out);
        } else if path.extension().is_some_and(|e| e == "rs") {
            out.push_str(&std::fs::read_to_string(&path).unwrap_or_default());
        }
    }
}

#[test]
fn conformance_doc_covers_every_item_and_names_real_tests() {
    let doc = std::fs::read_to_string(repo().join("docs/CONFORMANCE.md")).expect("docs/CONFORMANCE.md");
    let mut sources = String::new();
    for dir in ["proto", "hdl", "sim", "driver", "firmware-tests"] {
        rust_sources(&repo().join(dir), &mut sources);
    }
    let items = checklist_items();
    let mut seen = Vec::new();
    let mut problems = Vec::new();
    for line in doc.lines().filter(|l| l.starts_with("| ")) {
        let cells: Vec<&str> = line.split('|').map(str::trim).collect();
        let (id, tests, status) = match cells.as_slice() {
            ["", id, _, tests, status, ""] if items.iter().any(|i| i == id) => (*id, *tests, *status),
            ["", "item", ..] | ["", "---", ..] => continue,
            _ => {
                problems.push(format!("row not understood: {line}"));
                continue;
            }
        };
        seen.push(id.to_string());
        let names: Vec<&str> = tests.split('`').skip(1).step_by(2).collect();
        for name in &names {
            if !sources.contains(&format!("fn {name}(")) {
                problems.push(format!("{id}: no test named {name}"));
            }
        }
        let known = ["RTL", "wire", "model", "driver", "not yet", "n/a", "partial"];
        if !known.iter().any(|k| status.starts_with(k)) {
            problems.push(format!("{id}: unknown status '{status}'"));
        }
        if ["RTL", "wire", "model", "driver"].iter().any(|k| status.starts_with(k)) && names.is_empty() {
            problems.push(format!("{id}: status '{status}' but no test"));
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
