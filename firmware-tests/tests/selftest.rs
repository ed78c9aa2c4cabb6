//! The programs run as a user would run them.
use std::process::Command;

fn selftest(args: &[&str]) -> std::process::Output {
    Command::new(env!("CARGO_BIN_EXE_selftest")).args(args).output().expect("run selftest")
}

#[test]
fn selftest_passes_on_the_fake_backend() {
    let out = selftest(&["--backend", "fake"]);
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(stdout.contains("ok: DMA memory"), "{stdout}");
    assert!(stdout.contains("not run: the RNIC operations (the fake backend has no RNIC"), "{stdout}");
}

/// What the loopback run on an RNIC must report, one line per operation checked.
#[cfg(feature = "sim")]
const LOOPBACK_LINES: [&str; 12] = [
    "ok: one RNIC in loopback",
    "ok: Send of 300 octets",
    "ok: Send with Solicited Event",
    "ok: Send with Invalidate",
    "ok: RDMA Write of 1000 octets",
    "ok: RDMA Read of 1500 octets",
    "ok: masked FetchAdd",
    "ok: masked CmpSwap, match",
    "ok: masked CmpSwap, no match",
    "ok: Immediate Data with Solicited Event",
    "ok: RDMA Write with Immediate Data",
    "ok: RDMA Write to an invalidated STag: Terminate 1/1/0x00 from B",
];

/// Issue 22: every operation once on one Verilated RNIC whose stream ports the simulator
/// loops, as the board's shell does.
#[cfg(feature = "sim")]
#[test]
fn selftest_runs_every_operation_on_one_simulated_rnic_in_loopback() {
    let out = selftest(&["--backend", "sim"]);
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(out.status.success(), "{stdout}{}", String::from_utf8_lossy(&out.stderr));
    for line in LOOPBACK_LINES {
        assert!(stdout.contains(line), "{line:?} missing from:\n{stdout}");
    }
}

/// The loop a card without a TCP engine uses: the driver carries every FPDU from the TX
/// stream ring into the RX stream ring, here against the RTL.
#[cfg(feature = "sim")]
#[test]
fn selftest_loops_through_the_stream_rings_on_the_rtl() {
    let out = selftest(&["--backend", "sim", "--loop", "rings"]);
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(out.status.success(), "{stdout}{}", String::from_utf8_lossy(&out.stderr));
    for line in LOOPBACK_LINES.iter().chain(&["FPDUs through the stream rings"]) {
        assert!(stdout.contains(line), "{line:?} missing from:\n{stdout}");
    }
}

#[test]
fn selftest_on_a_card_refuses_a_loop_it_does_not_have() {
    let out = selftest(&["--backend", "vfio", "--loop", "stream"]);
    assert_eq!(out.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&out.stderr).contains("--loop rings"));
}

#[test]
fn selftest_says_clearly_when_a_backend_cannot_open() {
    let out = selftest(&["--backend", "vfio", "--device", "0000:99:00.0"]);
    assert_eq!(out.status.code(), Some(2));
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(err.contains("cannot run on Vfio") && err.contains("no PCI device 0000:99:00.0"), "{err}");
}
