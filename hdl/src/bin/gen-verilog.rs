//! Writes every design of `rnic_hdl::designs` as Verilog.
//!
//! `cargo run -p rnic-hdl --bin gen-verilog` regenerates the checked-in `hdl/verilog/`;
//! `--out DIR` writes elsewhere.
use std::path::PathBuf;

fn main() {
    let mut args = std::env::args().skip(1);
    let mut out = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("verilog");
    while let Some(arg) = args.next() {
        match arg.as_str() {
            "--out" => match args.next() {
                Some(dir) => out = PathBuf::from(dir),
                None => fail("--out needs a directory"),
            },
            "-h" | "--help" => {
                println!("usage: gen-verilog [--out DIR]   (default: hdl/verilog)");
                return;
            }
            other => fail(&format!("unknown argument '{other}'")),
        }
    }
    match rnic_hdl::designs::write_all(&out) {
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
