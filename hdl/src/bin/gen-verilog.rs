//! Writes every design of `rnic_hdl::designs` as Verilog.
//!
//! `cargo run -p rnic-hdl --bin gen-verilog` regenerates the checked-in `hdl/verilog/`;
//! `--out DIR` writes elsewhere; `--only NAME` (repeatable) writes only the designs named,
//! for a quick look at one block (the freshness test still wants every file regenerated).
use std::path::PathBuf;

fn main() {
    let mut args = std::env::args().skip(1);
    let mut out = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("verilog");
    let mut only = Vec::new();
    while let Some(arg) = args.next() {
        match arg.as_str() {
            "--out" => match args.next() {
                Some(dir) => out = PathBuf::from(dir),
                None => fail("--out needs a directory"),
            },
            "--only" => match args.next() {
                Some(name) => only.push(name),
                None => fail("--only needs a design name"),
            },
            "-h" | "--help" => {
                println!("usage: gen-verilog [--out DIR] [--only NAME ...]   (default: every design, to hdl/verilog)");
                return;
            }
            other => fail(&format!("unknown argument '{other}'")),
        }
    }
    if let Some(name) = only.iter().find(|n| !rnic_hdl::designs::all().iter().any(|d| d.name == n.as_str())) {
        fail(&format!("no design named '{name}'"));
    }
    let written = if only.is_empty() {
        rnic_hdl::designs::write_all(&out)
    } else {
        rnic_hdl::designs::write_some(&out, |name| only.iter().any(|n| n == name))
    };
    match written {
        Ok(paths) => {
            for p in paths {
                println!("wrote {}", p.display());
            }
        }
        Err(e) => fail(&format!("cannot write to {}: {e}", out.display())),
    }
}

fn fail(msg: &str) -> ! {
    eprintln!("gen-verilog: {msg}");
    std::process::exit(2)
}
