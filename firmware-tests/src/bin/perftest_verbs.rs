//! `perftest_verbs [--lib DIR] [--design NAME] [--iters N] [--lat-iters N]`: Debian's
//! perftest, unmodified, between two processes on 127.0.0.1, each on its own simulated RNIC
//! through the verbs library (docs/VERBS.md), and what perftest printed converted to the
//! RNIC's clock.
//!
//! perftest times with the host's clock, so its figures are rates of the *simulation*. The
//! library says how many cycles its model ran in how much wall time while QPs existed
//! (`RNIC_VERBS_STATS=1`): that ratio turns perftest's averages (message rate, mean
//! latency) into cycles, and cycles at the routed Fmax into what the RNIC would give. The
//! conversion holds on average only: the model and perftest's own polling thread share the
//! host's cores, so single samples (perftest's minimum or typical latency) are bent by the
//! scheduler and are not converted. The repo's own programs (`write_bw`, `pingpong`, ...)
//! count cycles exactly. Exits 1 if a program fails, 2 if perftest or the library is
//! missing.
use std::io::Read;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use clap::Parser;
use rnic_firmware_tests::report::{Table, ROUTED_FMAX_MHZ};

#[derive(Parser)]
#[command(about = "Debian's perftest on two simulated RNICs through the verbs library, at the RNIC's clock")]
struct Args {
    /// Where libibverbs.so.1 and librdmacm.so.1 are (default: `scripts/verbs-libs --release`
    /// builds them and says where).
    #[arg(long)]
    lib: Option<PathBuf>,
    /// The simulated design (`RNIC_SIM_DESIGN`): the 16-QP core, whose routed Fmax the
    /// figures are converted at.
    #[arg(long, default_value = "rnic_top_q16")]
    design: String,
    /// Iterations of each bandwidth program.
    #[arg(long, default_value_t = 1000)]
    iters: u32,
    /// Iterations of each latency program.
    #[arg(long, default_value_t = 200)]
    lat_iters: u32,
    /// First TCP port; each run takes the next.
    #[arg(long, default_value_t = 18600)]
    port: u16,
}

/// How a program reports.
#[derive(Clone, Copy, PartialEq, Eq)]
enum Kind {
    /// `#bytes #iterations BW-peak BW-average MsgRate[Mpps]`.
    Bandwidth,
    /// `#bytes #iterations t_min t_max t_typical t_avg ...` in µs; one way (half a round
    /// trip).
    Latency,
}

/// What the library said when the last QP of the client went: its model's cycles per
/// second of wall time.
struct Ran {
    cycles_per_second: f64,
}

impl Ran {
    /// From the library's `RNIC_VERBS_STATS` line.
    fn parse(stderr: &str) -> Option<Ran> {
        let line = stderr.lines().rev().find(|l| l.contains(" cycles/s)"))?;
        let words: Vec<&str> = line.split_whitespace().collect();
        let at = words.iter().position(|w| *w == "cycles/s)")?.checked_sub(1)?;
        Some(Ran { cycles_per_second: words[at].trim_start_matches('(').parse().ok()? })
    }
}

fn fail(why: impl std::fmt::Display, code: i32) -> ! {
    eprintln!("perftest_verbs: {why}");
    std::process::exit(code)
}

/// The library's directory: given, or built by `scripts/verbs-libs --release`.
fn library(given: Option<PathBuf>) -> PathBuf {
    if let Some(dir) = given {
        return dir;
    }
    let script = Path::new(env!("CARGO_MANIFEST_DIR")).join("../scripts/verbs-libs");
    let out = Command::new(&script)
        .arg("--release")
        .stderr(Stdio::inherit())
        .output()
        .unwrap_or_else(|e| fail(format!("cannot run {}: {e}", script.display()), 2));
    if !out.status.success() {
        fail("scripts/verbs-libs --release failed", 2);
    }
    PathBuf::from(String::from_utf8_lossy(&out.stdout).lines().last().unwrap_or_default().trim())
}

/// Whether something listens on TCP `port` of 127.0.0.1 (from /proc/net/tcp).
fn listening(port: u16) -> bool {
    const LISTEN: &str = "0A";
    let table = std::fs::read_to_string("/proc/net/tcp").unwrap_or_default();
    table.lines().skip(1).any(|l| {
        let f: Vec<&str> = l.split_whitespace().collect();
        f.len() > 3 && f[3] == LISTEN && f[1].rsplit(':').next() == Some(&format!("{port:04X}"))
    })
}

/// What a finished process printed, read while it runs (a full pipe would stop it).
fn finish(mut child: Child, deadline: Instant, what: &str) -> (String, String) {
    let mut out = child.stdout.take().expect("piped");
    let mut err = child.stderr.take().expect("piped");
    let reader = std::thread::spawn(move || {
        let mut s = String::new();
        let _ = out.read_to_string(&mut s);
        s
    });
    let mut stderr = String::new();
    let _ = err.read_to_string(&mut stderr);
    loop {
        match child.try_wait() {
            Ok(Some(status)) if status.success() => break,
            Ok(Some(status)) => fail(format!("{what} ended with {status}:\n{stderr}"), 1),
            Ok(None) if Instant::now() > deadline => {
                let _ = child.kill();
                fail(format!("{what} did not finish in time"), 1);
            }
            Ok(None) => std::thread::sleep(Duration::from_millis(20)),
            Err(e) => fail(format!("{what}: {e}"), 1),
        }
    }
    (reader.join().unwrap_or_default(), stderr)
}

/// Runs `program` as server and client; the client's output and the library's account.
fn run(args: &Args, lib: &Path, port: u16, program: &str, size: u32, iters: u32) -> (String, Ran) {
    let (p, s, n) = (port.to_string(), size.to_string(), iters.to_string());
    let server_args = ["-R", "-p", &p, "-s", &s, "-n", &n];
    let start = |extra: &[&str]| {
        Command::new(program)
            .args(server_args)
            .args(extra)
            .env("LD_LIBRARY_PATH", lib)
            .env("RNIC_SIM_DESIGN", &args.design)
            .env("RNIC_VERBS_STATS", "1")
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .unwrap_or_else(|e| fail(format!("cannot run {program} (apt-get install perftest): {e}"), 2))
    };
    let deadline = Instant::now() + Duration::from_secs(600);
    let server = start(&[]);
    while !listening(port) {
        if Instant::now() > deadline {
            fail(format!("the {program} server did not listen on port {port}"), 1);
        }
        std::thread::sleep(Duration::from_millis(20));
    }
    let client = start(&["127.0.0.1"]);
    let (stdout, stderr) = finish(client, deadline, &format!("{program} client"));
    finish(server, deadline, &format!("{program} server"));
    let ran = Ran::parse(&stderr).unwrap_or_else(|| fail(format!("{program}: no RNIC_VERBS_STATS line:\n{stderr}"), 1));
    (stdout, ran)
}

/// The numbers of the client's result row for `size` and `iters`.
fn row(stdout: &str, program: &str, size: u32, iters: u32) -> Vec<f64> {
    let key = [size.to_string(), iters.to_string()];
    stdout
        .lines()
        .map(|l| l.split_whitespace().collect::<Vec<_>>())
        .find(|w| w.len() > 4 && w[0] == key[0] && w[1] == key[1])
        .map(|w| w.iter().filter_map(|x| x.parse().ok()).collect())
        .unwrap_or_else(|| fail(format!("{program}: no result row for {size} octets, {iters} iterations"), 1))
}

fn main() {
    let args = Args::parse();
    let lib = library(args.lib.clone());
    let runs: [(&str, u32, Kind); 6] = [
        ("ib_write_bw", 4096, Kind::Bandwidth),
        ("ib_write_bw", 64, Kind::Bandwidth),
        ("ib_read_bw", 4096, Kind::Bandwidth),
        ("ib_atomic_bw", 8, Kind::Bandwidth),
        ("ib_send_lat", 64, Kind::Latency),
        ("ib_write_lat", 64, Kind::Latency),
    ];
    println!(
        "perftest_verbs: Debian's perftest with -R, server and client on two simulated {} over 127.0.0.1; \
         converted at {ROUTED_FMAX_MHZ} MHz (the 16-QP core's routed Fmax)",
        args.design
    );
    let mut table = Table::new(&[
        "program",
        "size",
        "iterations",
        "perftest (simulation's wall clock)",
        "sim cycles/s",
        "in cycles",
        &format!("at {ROUTED_FMAX_MHZ} MHz"),
    ]);
    for (i, &(program, size, kind)) in runs.iter().enumerate() {
        let iters = if kind == Kind::Latency { args.lat_iters } else { args.iters };
        let (stdout, ran) = run(&args, &lib, args.port + i as u16, program, size, iters);
        let numbers = row(&stdout, program, size, iters);
        let rate = ran.cycles_per_second;
        let (wall, cycles, at_fmax) = match kind {
            Kind::Bandwidth => {
                let mpps = numbers[4];
                let per_cycle = mpps * 1e6 / rate;
                let gbps = per_cycle * f64::from(size) * 8.0 * ROUTED_FMAX_MHZ / 1e3;
                (
                    format!("{:.0} messages/s", mpps * 1e6),
                    format!("{per_cycle:.4} messages/cycle"),
                    format!("{:.3} M messages/s, {gbps:.3} Gb/s", per_cycle * ROUTED_FMAX_MHZ),
                )
            }
            Kind::Latency => {
                let mean_us = numbers[5];
                let cycles = mean_us * rate / 1e6;
                (
                    format!("{mean_us:.0} µs mean"),
                    format!("{cycles:.0} cycles"),
                    format!("{:.1} µs", cycles / ROUTED_FMAX_MHZ),
                )
            }
        };
        table.row(vec![
            program.to_string(),
            size.to_string(),
            iters.to_string(),
            wall,
            format!("{rate:.0}"),
            cycles,
            at_fmax,
        ]);
    }
    print!("{}", table.render());
}
