//! Waveform traces: on request (`RNIC_TRACE=<file.vcd>`) and for failing tests.
//!
//! A test body wrapped in [`on_failure`] runs untraced (full speed). If it panics, it is run
//! again on the same thread with every model it creates tracing into
//! `target/waves/<test>[-<design>-<n>].vcd`, and the original panic is resumed with the
//! file named. Test benches are deterministic (seeded), so the second run fails the same
//! way; benches call [`crate::Model::trace_restart`] at each case so the file holds the
//! failing case, not the whole run. A failure trace is also bounded in size: once its file
//! passes [`FAILURE_TRACE_BYTES`] it is renamed `<name>.earlier.vcd` and a new one begins, so
//! a failing long run leaves at most twice that per model, ending at the failure.
use std::cell::{Cell, RefCell};
use std::panic::{self, AssertUnwindSafe};
use std::path::{Path, PathBuf};

thread_local! {
    static FAILURE_TRACE: RefCell<Option<PathBuf>> = const { RefCell::new(None) };
    static TRACED_MODELS: Cell<usize> = const { Cell::new(0) };
    static FAILURE_TRACE_LIMIT: Cell<u64> = const { Cell::new(FAILURE_TRACE_BYTES) };
}

/// The size past which a failure trace's file is set aside and a new one begun.
pub const FAILURE_TRACE_BYTES: u64 = 256 << 20;

/// Sets this thread's failure-trace bound (bytes per file; [`FAILURE_TRACE_BYTES`] unless set).
pub fn set_failure_trace_limit(bytes: u64) {
    FAILURE_TRACE_LIMIT.set(bytes);
}

/// Where a new model traces to, and whether that trace is size-bounded.
pub(crate) struct TracePlan {
    pub path: PathBuf,
    /// `Some(bytes)` for a failure trace; a trace asked for with `RNIC_TRACE` is whole.
    pub limit: Option<u64>,
}

/// Where a new model of `design` should trace to, if anywhere.
pub(crate) fn path_for(design: &str) -> Option<TracePlan> {
    let (base, limit) = match FAILURE_TRACE.with(|t| t.borrow().clone()) {
        Some(path) => (path, Some(FAILURE_TRACE_LIMIT.get())),
        None => (PathBuf::from(std::env::var_os("RNIC_TRACE")?), None),
    };
    // The first traced model takes the name as given, later ones get a suffix.
    let n = TRACED_MODELS.replace(TRACED_MODELS.get() + 1);
    let path = if n == 0 { base } else { with_suffix(&base, &format!("-{design}-{n}")) };
    Some(TracePlan { path, limit })
}

/// The file a bounded trace's earlier stretch is moved to.
pub(crate) fn earlier_path(path: &Path) -> PathBuf {
    with_suffix(path, ".earlier")
}

fn with_suffix(path: &Path, suffix: &str) -> PathBuf {
    let stem = path.file_stem().map(|s| s.to_string_lossy().into_owned()).unwrap_or_default();
    let ext = path.extension().map(|e| e.to_string_lossy().into_owned()).unwrap_or("vcd".into());
    path.with_file_name(format!("{stem}{suffix}.{ext}"))
}

/// Where failure traces go: `<target dir>/waves/`.
pub fn waves_dir() -> PathBuf {
    std::env::var_os("CARGO_TARGET_DIR")
        .map(PathBuf::from)
        .unwrap_or_else(|| Path::new(env!("CARGO_MANIFEST_DIR")).join("../target"))
        .join("waves")
}

/// Runs `body`; if it panics, runs it once more with tracing on, then resumes the panic
/// after naming the waveform file.
pub fn on_failure<R>(test: &str, body: impl Fn() -> R) -> R {
    match panic::catch_unwind(AssertUnwindSafe(&body)) {
        Ok(r) => r,
        Err(first) => {
            let path = waves_dir().join(format!("{test}.vcd"));
            TRACED_MODELS.set(0);
            FAILURE_TRACE.with(|t| *t.borrow_mut() = Some(path.clone()));
            let _ = panic::catch_unwind(AssertUnwindSafe(&body));
            FAILURE_TRACE.with(|t| *t.borrow_mut() = None);
            eprintln!("waveform of the failing run: {}", path.display());
            panic::resume_unwind(first)
        }
    }
}
