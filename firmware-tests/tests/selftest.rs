//! The programs run as a user would run them.
use std::process::Command;

fn selftest(args: &[&str]) -> std::process::Output {
    Command::new(env!("CARGO_BIN_EXE_selftest")).args(args).output().expect("run selftest")
}

#[test]
fn selftest_passes_on_the_fake_backend() {
    let out = selftest(&["--backend", "fake"]);
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    assert!(String::from_utf8_lossy(&out.stdout).contains("ok: DMA memory"));
}

#[test]
fn selftest_says_clearly_when_a_backend_cannot_open() {
    let out = selftest(&["--backend", "vfio", "--device", "0000:99:00.0"]);
    assert_eq!(out.status.code(), Some(2));
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(err.contains("cannot open Vfio backend") && err.contains("no PCI device 0000:99:00.0"), "{err}");
}
