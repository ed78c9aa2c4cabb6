//! C programs on the RNIC's libibverbs, each on the simulated RNIC (the Verilated
//! `rnic_top`, one model per process):
//!
//! * `tests/c/verbs_selftest.c`, written against rdma-core's header and `rnicdv.h`;
//! * Debian's `ibv_devices` (ibverbs-utils), unmodified: built against Debian's
//!   libibverbs, it finds this one by `LD_LIBRARY_PATH` and the symbol versions it
//!   records;
//! * Debian's `rping` (rdmacm-utils), unmodified, server and client in two processes, each
//!   on its own simulated RNIC, connected by rdma_cm over 127.0.0.1 (this library is
//!   librdmacm.so.1 too).
//!
//! * Debian's perftest (`ib_write_bw`, `ib_read_bw`, `ib_send_lat`, `ib_write_lat`,
//!   `ib_atomic_bw`), unmodified, with `-R` (rdma_cm), the same way.
//!
//! Needs a C compiler, rdma-core's headers (libibverbs-dev), ibverbs-utils, rdmacm-utils
//! and perftest, which `scripts/setup-tools` installs.
use std::path::{Path, PathBuf};
use std::process::{Command, Output, Stdio};
use std::time::{Duration, Instant};

/// How long a program may run before it counts as hung.
const DEADLINE: Duration = Duration::from_secs(120);

/// The directory holding the built library as `libibverbs.so.1` (its soname) and
/// `libibverbs.so` (for `-libverbs`), next to the test's own build output. Made once per
/// test process (the tests run on threads of one process).
fn library_dir() -> PathBuf {
    static DIR: std::sync::OnceLock<PathBuf> = std::sync::OnceLock::new();
    DIR.get_or_init(|| {
        let exe = std::env::current_exe().expect("test path");
        let deps = exe.parent().expect("deps directory");
        let built = [deps.join("libibverbs.so"), deps.parent().expect("profile directory").join("libibverbs.so")]
            .into_iter()
            .find(|p| p.exists())
            .expect("libibverbs.so is built before the tests (the crate's cdylib)");
        let dir = deps.join("verbs-lib");
        std::fs::create_dir_all(&dir).expect("library directory");
        std::fs::copy(&built, dir.join("libibverbs.so.1")).expect("copy of the library");
        // The other names are links to the one file: librdmacm.so.1 is the same library,
        // and the loader keeps one copy of it for both names.
        for name in ["libibverbs.so", "librdmacm.so.1", "librdmacm.so"] {
            let link = dir.join(name);
            let _ = std::fs::remove_file(&link);
            std::os::unix::fs::symlink("libibverbs.so.1", &link).expect("library link");
        }
        // perftest also binds the mlx5 and EFA direct verbs (verbs/standins).
        let standins = Path::new(env!("CARGO_MANIFEST_DIR")).join("standins/build");
        let mut build = Command::new(standins);
        build.arg(&dir);
        assert!(run(build, "standins").status.success(), "the direct-verbs stand-ins do not build");
        dir
    })
    .clone()
}

/// Runs `cmd` to its end (killed at [`DEADLINE`]) and returns what it printed. Its output
/// is drained as it comes, so that a program that prints much never blocks on a full pipe.
fn run(mut cmd: Command, what: &str) -> Output {
    let mut child = cmd.stdout(Stdio::piped()).stderr(Stdio::piped()).spawn().unwrap_or_else(|e| panic!("{what}: {e}"));
    let drain = |mut pipe: Box<dyn std::io::Read + Send>| {
        std::thread::spawn(move || {
            let mut out = Vec::new();
            let _ = pipe.read_to_end(&mut out);
            out
        })
    };
    let stdout = drain(Box::new(child.stdout.take().expect("stdout")));
    let stderr = drain(Box::new(child.stderr.take().expect("stderr")));
    let start = Instant::now();
    let status = loop {
        if let Some(status) = child.try_wait().expect("wait") {
            break status;
        }
        if start.elapsed() > DEADLINE {
            let _ = child.kill();
        }
        std::thread::sleep(Duration::from_millis(20));
    };
    let out = Output { status, stdout: stdout.join().expect("stdout"), stderr: stderr.join().expect("stderr") };
    println!("{what}:\n{}{}", String::from_utf8_lossy(&out.stdout), String::from_utf8_lossy(&out.stderr));
    out
}

/// The verbs program, compiled against rdma-core's header and linked with this library:
/// once per run of the tests (under a lock, so that a test never runs a program while
/// another test writes it).
fn compile(source: &Path, lib: &Path) -> PathBuf {
    static COMPILED: std::sync::Mutex<std::collections::BTreeMap<PathBuf, PathBuf>> =
        std::sync::Mutex::new(std::collections::BTreeMap::new());
    let mut compiled = COMPILED.lock().unwrap_or_else(std::sync::PoisonError::into_inner);
    if let Some(exe) = compiled.get(source) {
        return exe.clone();
    }
    assert!(
        Path::new("/usr/include/infiniband/verbs.h").exists(),
        "rdma-core's headers are missing: apt-get install libibverbs-dev (scripts/setup-tools does)"
    );
    let manifest = Path::new(env!("CARGO_MANIFEST_DIR"));
    let exe = lib.join(source.file_stem().expect("name"));
    let mut cc = Command::new("cc");
    cc.args(["-std=c11", "-D_GNU_SOURCE", "-O1", "-Wall", "-Werror", "-pthread", "-o"])
        .arg(&exe)
        .arg(source)
        .arg("-I")
        .arg(manifest.join("include"))
        .arg("-I")
        .arg(manifest.join("tests/c"))
        .arg("-L")
        .arg(lib)
        .arg("-libverbs");
    let out = run(cc, "cc");
    assert!(out.status.success(), "{} does not compile", source.display());
    compiled.insert(source.to_path_buf(), exe.clone());
    exe
}

/// A command running on this library, on the simulated RNIC.
fn on_rnic(exe: impl AsRef<std::ffi::OsStr>, lib: &Path) -> Command {
    let mut cmd = Command::new(exe);
    cmd.env("LD_LIBRARY_PATH", lib).env("RNIC_BACKEND", "sim").env("RNIC_VERBS_DEBUG", "1");
    cmd
}

/// The streams through the stream rings in host memory, moved by the library between
/// them and the sockets (and looped back for QPs of one device), as on a card.
const RINGS: (&str, &str) = ("RNIC_SIM_STREAMS", "rings");

#[test]
fn a_verbs_program_runs_rdma_write_with_immediate_and_masked_atomics_on_malloced_memory() {
    verbs_selftest(&[]);
}

#[test]
fn a_verbs_program_runs_with_the_streams_through_host_memory_rings_as_on_a_card() {
    verbs_selftest(&[RINGS]);
}

#[test]
fn verbs_run_from_three_threads_at_once() {
    let lib = library_dir();
    let source = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/c/verbs_threads.c");
    let exe = compile(&source, &lib);
    let out = run(on_rnic(&exe, &lib), "verbs_threads");
    assert!(out.status.success(), "verbs_threads failed");
    let oks = String::from_utf8_lossy(&out.stdout).lines().filter(|l| l.starts_with("ok: ")).count();
    assert_eq!(oks, 3, "both senders and the churn thread finished");
}

/// `verbs_selftest.c`, with `env` set, passes every check.
fn verbs_selftest(env: &[(&str, &str)]) {
    let lib = library_dir();
    let source = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/c/verbs_selftest.c");
    let exe = compile(&source, &lib);
    let mut cmd = on_rnic(&exe, &lib);
    cmd.env("RNIC_VERBS_STATS", "1").envs(env.iter().copied());
    let out = run(cmd, "verbs_selftest");
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(out.status.success(), "verbs_selftest failed");
    let oks = stdout.lines().filter(|l| l.starts_with("ok: ")).count();
    assert_eq!(oks, 21, "every check of the program passed");
    // RNIC_VERBS_STATS: once the last QP is gone, how far the model ran (what
    // `perftest_verbs` converts perftest's figures with).
    let stderr = String::from_utf8_lossy(&out.stderr);
    let ran: Vec<u64> = stderr
        .lines()
        .filter(|l| l.contains("while QPs existed"))
        .filter_map(|l| l.split_whitespace().skip_while(|w| *w != "ran").nth(1)?.parse().ok())
        .collect();
    assert!(!ran.is_empty() && ran.iter().all(|&c| c > 0), "no RNIC_VERBS_STATS line with cycles: {stderr}");
}

#[test]
fn debians_ibv_devices_lists_the_rnic_unmodified() {
    let lib = library_dir();
    let Some(path) = which("ibv_devices") else {
        panic!("ibv_devices is missing: apt-get install ibverbs-utils (scripts/setup-tools does)");
    };
    let out = run(on_rnic(path, &lib), "ibv_devices");
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(out.status.success(), "ibv_devices failed");
    let row = stdout.lines().find(|l| l.split_whitespace().next() == Some("rnic0")).expect("rnic0 listed");
    assert_eq!(row.split_whitespace().nth(1), Some("020000fffe000001"), "the node GUID, big-endian");
}

/// A TCP port nothing listens on now.
fn free_port() -> u16 {
    std::net::TcpListener::bind("127.0.0.1:0").expect("bind").local_addr().expect("address").port()
}

/// Whether something listens on TCP `port` (IPv4), from /proc/net/tcp (a test connection
/// would be a connection request to rping).
fn listening(port: u16) -> bool {
    const LISTEN: &str = "0A";
    let table = std::fs::read_to_string("/proc/net/tcp").unwrap_or_default();
    table.lines().skip(1).any(|l| {
        let f: Vec<&str> = l.split_whitespace().collect();
        f.len() > 3 && f[3] == LISTEN && f[1].rsplit(':').next() == Some(&format!("{port:04X}"))
    })
}

/// Debian's `program` (from `package`) between two processes, each on its own simulated
/// RNIC: the server with `server_args`, then, once it listens on `port`, the client with
/// `client_args`. Both must end well; returns what the client and the server printed.
fn server_and_client(
    program: &str,
    package: &str,
    port: u16,
    server_args: &[&str],
    client_args: &[&str],
    env: &[(&str, &str)],
) -> (Output, Output) {
    let lib = library_dir();
    let path = which(program).unwrap_or_else(|| panic!("{program} is missing: apt-get install {package}"));
    let mut server = on_rnic(&path, &lib);
    server.args(server_args).envs(env.iter().copied());
    let what = format!("{program} server");
    let server = std::thread::spawn(move || run(server, &what));
    let start = Instant::now();
    while !listening(port) {
        assert!(start.elapsed() < Duration::from_secs(60), "the {program} server did not listen");
        std::thread::sleep(Duration::from_millis(20));
    }
    let mut client = on_rnic(&path, &lib);
    client.args(client_args).envs(env.iter().copied());
    let client = run(client, &format!("{program} client"));
    let server = server.join().expect("server thread");
    assert!(
        client.status.success() && server.status.success(),
        "{program} failed (client {}, server {})",
        client.status,
        server.status
    );
    (client, server)
}

/// rping: `count` pings of `size` octets, verified by rping (`-V`) and counted here (`-v`),
/// with `env` set on both ends.
fn rping_pair(count: u32, size: u32, env: &[(&str, &str)]) {
    let port = free_port();
    let (p, c, s) = (port.to_string(), count.to_string(), size.to_string());
    let common = ["-a", "127.0.0.1", "-p", &p, "-C", &c, "-S", &s, "-V", "-v"];
    let with = |role: &'static str| [&[role][..], &common[..]].concat();
    let (client, server) = server_and_client("rping", "rdmacm-utils", port, &with("-s"), &with("-c"), env);
    let pings = |out: &Output, prefix: &str| {
        String::from_utf8_lossy(&out.stdout).lines().filter(|l| l.starts_with(prefix)).count()
    };
    assert_eq!(pings(&client, "ping data: rdma-ping-"), count as usize, "the client's pings");
    assert_eq!(pings(&server, "server ping data: rdma-ping-"), count as usize, "the server's pings");
}

/// A perftest program connected by rdma_cm (`-R`): both ends finish (perftest checks its
/// own completions) and the client reports its row of results for `size` octets and
/// `iterations`.
fn perftest_pair(program: &str, size: u32, iterations: u32) {
    let port = free_port();
    let (p, s, n) = (port.to_string(), size.to_string(), iterations.to_string());
    let server = ["-R", "-p", &p, "-s", &s, "-n", &n];
    let client = [&server[..], &["127.0.0.1"][..]].concat();
    let (client, _) = server_and_client(program, "perftest", port, &server, &client, &[]);
    let stdout = String::from_utf8_lossy(&client.stdout);
    let row = stdout.lines().any(|l| l.split_whitespace().take(2).eq([s.as_str(), n.as_str()]));
    assert!(row, "{program}: no result row for {size} octets and {iterations} iterations");
}

#[test]
fn debians_ib_write_bw_runs_between_two_simulated_rnics() {
    perftest_pair("ib_write_bw", 4096, 200);
}

#[test]
fn debians_ib_read_bw_runs_between_two_simulated_rnics() {
    perftest_pair("ib_read_bw", 4096, 200);
}

#[test]
fn debians_ib_send_lat_runs_between_two_simulated_rnics() {
    perftest_pair("ib_send_lat", 64, 200);
}

#[test]
fn debians_ib_write_lat_runs_between_two_simulated_rnics() {
    perftest_pair("ib_write_lat", 64, 200);
}

#[test]
fn debians_ib_atomic_bw_runs_between_two_simulated_rnics() {
    perftest_pair("ib_atomic_bw", 8, 200);
}

#[test]
fn debians_rping_runs_between_two_simulated_rnics() {
    rping_pair(50, 1000, &[]);
}

#[test]
fn debians_rping_runs_with_the_streams_through_host_memory_rings_as_on_a_card() {
    rping_pair(20, 16 * 1024, &[RINGS]);
}

#[test]
fn debians_rping_moves_messages_of_many_segments() {
    rping_pair(5, 16 * 1024, &[]);
}

/// Where a program is on `PATH`.
fn which(name: &str) -> Option<PathBuf> {
    std::env::var_os("PATH").iter().flat_map(std::env::split_paths).map(|d| d.join(name)).find(|p| p.is_file())
}
