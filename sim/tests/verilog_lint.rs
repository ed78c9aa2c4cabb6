//! Every generated design in `hdl/verilog/` passes Verilator's lint with the warnings the
//! board build keeps (`bitstream/board-build`: `-Wall` less WIDTH, UNUSED and
//! DECLFILENAME), so a change that lints dirty fails here, not hours later in a board
//! build. Runs the Verilator the models are built with (found by `build.rs`).
use std::path::{Path, PathBuf};
use std::process::Command;

/// The warnings the board build turns off; everything else of `-Wall` is an error.
const WAIVED: [&str; 3] = ["-Wno-WIDTH", "-Wno-UNUSED", "-Wno-DECLFILENAME"];

#[test]
fn every_generated_design_lints_clean() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("..");
    let dir = root.join("hdl/verilog");
    let mut designs: Vec<PathBuf> = std::fs::read_dir(&dir)
        .expect("hdl/verilog")
        .map(|e| e.expect("entry").path())
        .filter(|p| p.extension().is_some_and(|e| e == "v"))
        .collect();
    designs.sort();
    assert!(designs.len() > 30, "the generated designs are in {}", dir.display());
    let tool = PathBuf::from(env!("RNIC_SIM_VERILATOR"));
    let mut dirty = Vec::new();
    for file in &designs {
        let top = file.file_stem().expect("stem").to_string_lossy().into_owned();
        let out = Command::new(&tool)
            .args(["--lint-only", "-Wall"])
            .args(WAIVED)
            .args(["--top-module", &top])
            .arg(file)
            .output()
            .unwrap_or_else(|e| panic!("cannot run {}: {e}", tool.display()));
        if !out.status.success() {
            let report = String::from_utf8_lossy(&out.stderr);
            let first: Vec<&str> = report.lines().filter(|l| l.starts_with('%')).take(3).collect();
            dirty.push(format!("{top}:\n    {}", first.join("\n    ")));
        }
    }
    assert!(dirty.is_empty(), "designs that do not lint clean:\n{}", dirty.join("\n"));
}
