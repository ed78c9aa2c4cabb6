//! docs/CONFORMANCE.md stays true: it lists every CHECKLIST item exactly once, every test
//! it names exists, and an item claimed as implemented names at least one test.
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
