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

#[test]
fn selftest_on_the_board_names_a_serial_port_that_is_not_there() {
    let out = selftest(&["--backend", "serial", "--port", "/dev/nonexistent-port"]);
    assert_eq!(out.status.code(), Some(2));
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(err.contains("cannot run on Serial") && err.contains("no serial port /dev/nonexistent-port"), "{err}");
    assert!(err.contains("ls /dev/ttyUSB* /dev/ttyACM*"), "{err}");
}

#[test]
fn selftest_on_the_board_needs_its_port_and_refuses_the_ring_loop() {
    let out = selftest(&["--backend", "serial"]);
    assert_eq!(out.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&out.stderr).contains("--port <PATH>"));
    let out = selftest(&["--backend", "serial", "--port", "/dev/nonexistent-port", "--loop", "rings"]);
    assert_eq!(out.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&out.stderr).contains("loops the RNIC's TX stream into its RX stream in hardware"));
}

/// The measuring programs cannot run on the board (they count the simulator's cycles):
/// they say so and point at `selftest`.
#[test]
fn the_measuring_programs_send_the_board_to_selftest() {
    for program in [env!("CARGO_BIN_EXE_write_bw"), env!("CARGO_BIN_EXE_pingpong")] {
        let out = Command::new(program).args(["--backend", "serial"]).output().expect("run");
        let err = String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.status.code(), Some(2), "{program}: {err}");
        assert!(err.contains("clock cycles") && err.contains("selftest --backend serial --port PATH"), "{err}");
    }
}

/// The board's selftest over a real tty: a pty whose other end a thread serves as the
/// board's bridge (the protocol's reference model) with registers and memory but no RNIC
/// behind them. The platform checks pass over the link, then opening the RNIC fails, and
/// the failure reports the link's counters.
#[cfg(target_os = "linux")]
#[test]
fn selftest_on_the_board_runs_over_a_tty_and_reports_the_link() {
    use std::collections::HashMap;
    use std::fs::File;
    use std::io::{Read, Write};
    use std::os::fd::FromRawFd;

    use rnic_proto::bridge::{frame, BridgeBus, BridgeModel, Deframer};

    struct Board {
        regs: HashMap<u16, u32>,
        mem: Vec<u8>,
    }
    impl BridgeBus for Board {
        fn bar0_write(&mut self, addr: u16, value: u32) -> bool {
            self.regs.insert(addr, value);
            true
        }
        fn bar0_read(&mut self, addr: u16) -> (u32, bool) {
            (self.regs.get(&addr).copied().unwrap_or(0), true)
        }
        fn mem_write(&mut self, index: u32, value: u32, strobes: u8) {
            for (i, b) in value.to_le_bytes().into_iter().enumerate().filter(|(i, _)| strobes >> i & 1 != 0) {
                self.mem[index as usize * 4 + i] = b;
            }
        }
        fn mem_read(&mut self, index: u32) -> u32 {
            let at = index as usize * 4;
            u32::from_le_bytes(self.mem[at..at + 4].try_into().expect("a word"))
        }
        fn take_irqs(&mut self) -> u32 {
            0
        }
    }

    // SAFETY: plain libc calls on a fresh descriptor; the name buffer outlives the call.
    let (mut master, name) = unsafe {
        let fd = libc::posix_openpt(libc::O_RDWR | libc::O_NOCTTY);
        assert!(fd >= 0 && libc::grantpt(fd) == 0 && libc::unlockpt(fd) == 0, "a pty");
        let mut name = [0 as libc::c_char; 64];
        assert_eq!(libc::ptsname_r(fd, name.as_mut_ptr(), name.len()), 0);
        (File::from_raw_fd(fd), std::ffi::CStr::from_ptr(name.as_ptr()).to_string_lossy().into_owned())
    };
    // Held open until the end, so that the board's reads wait rather than fail.
    let holder = File::options().read(true).write(true).open(&name).expect("the pty's tty");
    let board = std::thread::spawn(move || {
        let (mut bridge, mut deframer) = (BridgeModel::new(16), Deframer::default());
        let mut board = Board { regs: HashMap::new(), mem: vec![0xa5; 1 << 16] };
        let mut buf = [0; 256];
        while let Ok(n @ 1..) = master.read(&mut buf) {
            for &b in &buf[..n] {
                if let Some(f) = deframer.push(b) {
                    if master.write_all(&frame(&bridge.handle(&mut board, &f))).is_err() {
                        return;
                    }
                }
            }
        }
    });
    let out = selftest(&["--backend", "serial", "--port", &name]);
    drop(holder);
    board.join().expect("the board thread");
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(1), "{err}");
    assert!(err.contains("opening the RNIC") && err.contains("(serial link: "), "{err}");
    assert!(err.trim_end().ends_with(" requests, 0 retries)"), "{err}");
}
