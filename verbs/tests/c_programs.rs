//! C programs on the RNIC's libibverbs, each on the simulated RNIC (the Verilated
//! `rnic_top`, one model per process):
//!
//! * `tests/c/verbs_selftest.c`, written against rdma-core's header and `rnicdv.h`;
//! * Debian's `ibv_devices` (ibverbs-utils), unmodified: built against Debian's
//!   libibverbs, it finds this one by `LD_LIBRARY_PATH` and the symbol versions it
//!   records.
//!
//! Needs a C compiler, rdma-core's headers (libibverbs-dev) and ibverbs-utils, which
//! `scripts/setup-tools` installs.
use std::path::{Path, PathBuf};
use std::process::{Command, Output, Stdio};
use std::time::{Duration, Instant};

/// How long a program may run before it counts as hung.
const DEADLINE: Duration = Duration::from_secs(600);

/// The directory holding the built library as `libibverbs.so.1` (its soname) and
/// `libibverbs.so` (for `-libverbs`), next to the test's own build output.
fn library_dir() -> PathBuf {
    let exe = std::env::current_exe().expect("test path");
    let deps = exe.parent().expect("deps directory");
    let built = [deps.join("libibverbs.so"), deps.parent().expect("profile directory").join("libibverbs.so")]
        .into_iter()
        .find(|p| p.exists())
        .expect("libibverbs.so is built before the tests (the crate's cdylib)");
    let dir = deps.join("verbs-lib");
    std::fs::create_dir_all(&dir).expect("library directory");
    for name in ["libibverbs.so.1", "libibverbs.so"] {
        let to = dir.join(name);
        let _ = std::fs::remove_file(&to);
        std::fs::copy(&built, &to).expect("copy of the library");
    }
    dir
}

/// Runs `cmd` to its end (killed at [`DEADLINE`]) and returns what it printed.
fn run(mut cmd: Command, what: &str) -> Output {
    let mut child = cmd.stdout(Stdio::piped()).stderr(Stdio::piped()).spawn().unwrap_or_else(|e| panic!("{what}: {e}"));
    let start = Instant::now();
    while child.try_wait().expect("wait").is_none() {
        if start.elapsed() > DEADLINE {
            let _ = child.kill();
            break;
        }
        std::thread::sleep(Duration::from_millis(50));
    }
    let out = child.wait_with_output().expect("output");
    println!("{what}:\n{}{}", String::from_utf8_lossy(&out.stdout), String::from_utf8_lossy(&out.stderr));
    out
}

/// The verbs program, compiled against rdma-core's header and linked with this library.
fn compile(source: &Path, lib: &Path) -> PathBuf {
    assert!(
        Path::new("/usr/include/infiniband/verbs.h").exists(),
        "rdma-core's headers are missing: apt-get install libibverbs-dev (scripts/setup-tools does)"
    );
    let manifest = Path::new(env!("CARGO_MANIFEST_DIR"));
    let exe = lib.join(source.file_stem().expect("name"));
    let mut cc = Command::new("cc");
    cc.args(["-std=c11", "-D_GNU_SOURCE", "-O1", "-Wall", "-Werror", "-o"])
        .arg(&exe)
        .arg(source)
        .arg("-I")
        .arg(manifest.join("include"))
        .arg("-L")
        .arg(lib)
        .arg("-libverbs");
    let out = run(cc, "cc");
    assert!(out.status.success(), "{} does not compile", source.display());
    exe
}

/// A command running on this library, on the simulated RNIC.
fn on_rnic(exe: impl AsRef<std::ffi::OsStr>, lib: &Path) -> Command {
    let mut cmd = Command::new(exe);
    cmd.env("LD_LIBRARY_PATH", lib).env("RNIC_BACKEND", "sim");
    cmd
}

#[test]
fn a_verbs_program_runs_rdma_write_with_immediate_and_masked_atomics_on_malloced_memory() {
    let lib = library_dir();
    let source = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/c/verbs_selftest.c");
    let exe = compile(&source, &lib);
    let out = run(on_rnic(&exe, &lib), "verbs_selftest");
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(out.status.success(), "verbs_selftest failed");
    let oks = stdout.lines().filter(|l| l.starts_with("ok: ")).count();
    assert_eq!(oks, 14, "every check of the program passed");
}

#[test]
fn debians_ibv_devices_lists_the_rnic_unmodified() {
    let lib = library_dir();
    let Ok(path) = which("ibv_devices") else {
        panic!("ibv_devices is missing: apt-get install ibverbs-utils (scripts/setup-tools does)");
    };
    let out = run(on_rnic(path, &lib), "ibv_devices");
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(out.status.success(), "ibv_devices failed");
    let row = stdout.lines().find(|l| l.split_whitespace().next() == Some("rnic0")).expect("rnic0 listed");
    assert_eq!(row.split_whitespace().nth(1), Some("020000fffe000001"), "the node GUID, big-endian");
}

/// Where a program is on `PATH`.
fn which(name: &str) -> Result<PathBuf, ()> {
    std::env::var_os("PATH")
        .iter()
        .flat_map(std::env::split_paths)
        .map(|d| d.join(name))
        .find(|p| p.is_file())
        .ok_or(())
}
