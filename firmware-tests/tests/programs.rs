//! The measuring programs run as a user runs them, on two Verilated RNICs (`--backend
//! sim`): each must succeed, print its table with figures that make sense, and have
//! checked its data (a wrong octet makes it exit 1); a backend that cannot run is refused
//! with exit status 2.
#![cfg(feature = "sim")]
use std::process::{Command, Output};

fn run(program: &str, args: &[&str]) -> Output {
    let exe = match program {
        "pingpong" => env!("CARGO_BIN_EXE_pingpong"),
        "write_bw" => env!("CARGO_BIN_EXE_write_bw"),
        "read_bw" => env!("CARGO_BIN_EXE_read_bw"),
        "read_lat" => env!("CARGO_BIN_EXE_read_lat"),
        "atomic_bw" => env!("CARGO_BIN_EXE_atomic_bw"),
        "atomic_lat" => env!("CARGO_BIN_EXE_atomic_lat"),
        "atomic_responder" => env!("CARGO_BIN_EXE_atomic_responder"),
        "imm_pingpong" => env!("CARGO_BIN_EXE_imm_pingpong"),
        "sequencer" => env!("CARGO_BIN_EXE_sequencer"),
        other => panic!("no program {other}"),
    };
    let out = Command::new(exe).args(["--backend", "sim"]).args(args).output().expect("run the program");
    assert!(out.status.success(), "{program} {args:?} failed:\n{}", String::from_utf8_lossy(&out.stderr));
    out
}

/// The cells of the table's first data row (the third line of the table).
fn first_row(stdout: &[u8]) -> Vec<String> {
    let text = String::from_utf8_lossy(stdout);
    let rows: Vec<&str> = text.lines().filter(|l| l.starts_with('|')).collect();
    assert!(rows.len() >= 3, "a header, a rule and a row in:\n{text}");
    rows[2].trim_matches('|').split('|').map(|c| c.trim().to_string()).collect()
}

fn number(cell: &str) -> f64 {
    cell.parse().unwrap_or_else(|_| panic!("{cell:?} is not a number"))
}

#[test]
fn pingpong_measures_one_way_latency_on_sim() {
    let out = run("pingpong", &["--size", "100", "--iters", "3"]);
    let row = first_row(&out.stdout);
    assert_eq!((row[0].as_str(), row[1].as_str()), ("100", "6"), "both directions of 3 round trips");
    let (min, max) = (number(&row[2]), number(&row[5]));
    // A Send crosses at least four DMA round trips of 200 cycles (WQE, payload, receive
    // WQE, placement): anything faster is not measuring the path.
    assert!(min >= 800.0 && min <= max && max < 20_000.0, "latencies {row:?}");
    assert!(String::from_utf8_lossy(&out.stdout).contains("data checked"));
}

#[test]
fn write_bw_moves_every_octet_near_the_datapath_rate() {
    let out = run("write_bw", &["--size", "4096", "--iters", "24", "--qps", "2"]);
    let row = first_row(&out.stdout);
    assert_eq!((row[0].as_str(), row[1].as_str()), ("4096", "48"));
    let (payload, wire) = (number(&row[3]), number(&row[4]));
    assert!(payload > 0.0 && wire > payload && wire <= 8.0, "{row:?}");
    // A reads each Write's payload (512 beats, one more when it does not start on a beat)
    // and its WQE (96 octets at least, 12 beats): never less, and not much more.
    let beats = number(&row[6]);
    assert!((512.0 + 12.0..512.0 + 24.0).contains(&beats), "A's DMA read beats per Write: {row:?}");
}

/// The MPA options reach the wire: a marker takes four octets of every 512, CRCs off change
/// nothing in size; every octet still arrives.
#[test]
fn write_bw_runs_with_markers_and_without_crcs() {
    let plain = first_row(&run("write_bw", &["--size", "4096", "--iters", "8"]).stdout);
    let marked = first_row(&run("write_bw", &["--size", "4096", "--iters", "8", "--markers", "--no-crc"]).stdout);
    let (payload, wire, marked_wire) = (number(&plain[3]), number(&plain[4]), number(&marked[4]));
    let octets = |row: &[String]| number(&row[4]) * number(&row[2]);
    let ratio = octets(&marked) / octets(&plain);
    assert!(payload > 0.0 && marked_wire > 0.0, "{plain:?} {marked:?}");
    assert!(
        (ratio - 512.0 / 508.0).abs() < 0.002,
        "a marker takes 4 octets of every 512: {ratio} ({wire} vs {marked_wire})"
    );
}

#[test]
fn read_bw_brings_back_every_octet() {
    let out = run("read_bw", &["--size", "3000", "--iters", "12", "--qps", "2", "--mulpdu", "700"]);
    let row = first_row(&out.stdout);
    assert_eq!((row[0].as_str(), row[1].as_str()), ("3000", "24"));
    assert!(number(&row[3]) > 0.5 && number(&row[4]) <= 8.0, "{row:?}");
}

#[test]
fn read_lat_measures_each_read() {
    let out = run("read_lat", &["--size", "64", "--iters", "4"]);
    let row = first_row(&out.stdout);
    assert_eq!(row[1], "4");
    assert!(number(&row[2]) >= 600.0, "a Read takes the WQE fetch, the peer's DMA read and the placement: {row:?}");
}

/// RFC 7306: both atomics, contended and not, return checked values (the programs exit 1
/// on a ticket handed out twice or a CmpSwap chain that breaks).
#[test]
fn atomic_bw_runs_both_operations_contended_and_not() {
    let runs: [(&[&str], &str); 3] = [
        (&["--qps", "3", "--iters", "40", "--contended"], "120"),
        (&["--qps", "2", "--iters", "40"], "80"),
        (&["--op", "cswap", "--qps", "3", "--iters", "40", "--contended"], "120"),
    ];
    for (args, atomics) in runs {
        let row = first_row(&run("atomic_bw", args).stdout);
        assert_eq!(row[1], atomics, "{args:?}");
        let rate = number(&row[3]);
        assert!(rate > 0.0 && rate <= 1.0, "{row:?}");
    }
}

/// Device memory: the same checked runs with B's targets on chip, and one host DMA round
/// trip less per atomic than on host memory.
#[test]
fn atomic_bw_and_atomic_lat_run_on_device_memory() {
    let row = first_row(&run("atomic_bw", &["--qps", "3", "--iters", "40", "--contended", "--device-memory"]).stdout);
    assert_eq!(row[1], "120");
    let out = run("atomic_lat", &["--iters", "4", "--device-memory"]);
    assert!(String::from_utf8_lossy(&out.stdout).contains("on a word of B's device memory"));
    let on_chip = number(&first_row(&out.stdout)[2]);
    let host = number(&first_row(&run("atomic_lat", &["--iters", "4"]).stdout)[2]);
    assert!(on_chip + 150.0 <= host, "device memory {on_chip} cycles, host memory {host}");
}

/// The responder alone, fed at link rate: every response checked, the rate within the
/// link's bound, and device memory at least as fast as host memory.
#[test]
fn atomic_responder_answers_a_raw_peer_within_the_link_bound() {
    let rate = |extra: &[&str]| {
        let args = [&["--qps", "8", "--iters", "30", "--contended"], extra].concat();
        let row = first_row(&run("atomic_responder", &args).stdout);
        assert_eq!(row[0], "240", "{row:?}");
        let (rate, bound) = (number(&row[2]), number(&row[3]));
        assert!(rate > 0.0 && rate <= bound, "{row:?}");
        rate
    };
    let (host, on_chip) = (rate(&[]), rate(&["--device-memory"]));
    assert!(on_chip >= host * 0.95, "device memory {on_chip}, host memory {host}");
}

#[test]
fn atomic_lat_and_imm_pingpong_measure_round_trips() {
    let row = first_row(&run("atomic_lat", &["--iters", "4"]).stdout);
    assert_eq!((row[0].as_str(), row[1].as_str()), ("8", "4"));
    // A request, the peer's read and write-back, the response and its placement: several
    // DMA round trips of 200 cycles.
    assert!(number(&row[2]) >= 800.0, "{row:?}");
    let row = first_row(&run("imm_pingpong", &["--iters", "3"]).stdout);
    assert_eq!((row[0].as_str(), row[1].as_str()), ("8", "6"));
    assert!(number(&row[2]) >= 400.0, "{row:?}");
}

#[test]
fn sequencer_hands_out_every_ticket_once() {
    let out = run("sequencer", &["--qps", "4", "--iters", "50"]);
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(text.contains("counter at 200: tickets 0..200 each handed out once"), "{text}");
    assert_eq!(text.lines().filter(|l| l.starts_with('|')).count(), 2 + 4, "a row per QP:\n{text}");
}

#[test]
fn write_bw_sweep_writes_a_plot() {
    let svg = std::env::temp_dir().join(format!("write_bw_sweep_{}.svg", std::process::id()));
    let out = run("write_bw", &["--sweep", "--iters", "2", "--svg", svg.to_str().expect("path")]);
    let text = String::from_utf8_lossy(&out.stdout);
    assert_eq!(text.lines().filter(|l| l.starts_with('|')).count(), 2 + 11, "one row per size:\n{text}");
    let plot = std::fs::read_to_string(&svg).expect("the plot");
    std::fs::remove_file(&svg).ok();
    assert!(
        plot.starts_with("<svg") && plot.contains("message size") && plot.contains("<polyline"),
        "an SVG with curves"
    );
}

/// Issue 22: the programs run on one RNIC whose stream is looped back into itself (A's
/// and B's QPs on the same device), as on the board.
#[test]
fn pingpong_and_write_bw_run_on_one_rnic_in_loopback() {
    let out = run("pingpong", &["--size", "64", "--iters", "3", "--loopback"]);
    let row = first_row(&out.stdout);
    assert_eq!((row[0].as_str(), row[1].as_str()), ("64", "6"), "both directions of 3 round trips");
    assert!(number(&row[2]) >= 800.0, "{row:?}");
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(text.contains("one RNIC in loopback") && text.contains("data checked"), "{text}");
    let out = run("write_bw", &["--size", "1024", "--iters", "16", "--qps", "2", "--loopback"]);
    let row = first_row(&out.stdout);
    assert_eq!((row[0].as_str(), row[1].as_str()), ("1024", "32"));
    assert!(number(&row[3]) > 0.0 && number(&row[4]) <= 8.0, "{row:?}");
    assert!(String::from_utf8_lossy(&out.stdout).contains("one RNIC in loopback"));
}

#[test]
fn vfio_with_no_such_device_is_refused_with_the_fix() {
    for program in [env!("CARGO_BIN_EXE_write_bw"), env!("CARGO_BIN_EXE_pingpong"), env!("CARGO_BIN_EXE_atomic_lat")] {
        let out = Command::new(program).args(["--backend", "vfio", "--device", "0000:fe:1f.7"]).output().expect("run");
        let err = String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.status.code(), Some(2), "{program}: {err}");
        assert!(err.contains("no PCI device 0000:fe:1f.7") && err.contains("lspci -D"), "{program}: {err}");
    }
    let out = Command::new(env!("CARGO_BIN_EXE_write_bw")).args(["--backend", "vfio"]).output().expect("run");
    assert!(String::from_utf8_lossy(&out.stderr).contains("needs --device"), "no device given");
}
