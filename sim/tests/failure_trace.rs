//! `trace::on_failure`: a failing test is run again with tracing on, and the trace it leaves
//! is bounded: a long failing run sets its file aside as `<name>.earlier.vcd` each time it
//! passes the bound, so the disk holds at most two stretches per model, the newest ending at
//! the failure. Runs the Verilated `common/skid_buffer`.
use std::panic::{self, AssertUnwindSafe};

use rnic_sim::{trace, Model};

const DESIGN: &str = "rnic_common_skid_buffer";
const TEST: &str = "failure_trace_is_bounded_and_ends_at_the_failure";
/// The bound this test sets: small, so the run passes it several times (this design's
/// trace grows by about 400 bytes a cycle).
const LIMIT: u64 = 1 << 20;
/// Cycles the failing body runs before it panics.
const CYCLES: u64 = 20_000;

/// Streams changing words through the slice for `CYCLES` cycles, then fails.
fn failing_run() {
    let mut m = Model::new(DESIGN).expect("model");
    m.reset_for(2);
    let (s_valid, s_data, m_ready) = (m.port("s_valid"), m.port("s_data"), m.port("m_ready"));
    m.set_bit(s_valid, true);
    m.set_bit(m_ready, true);
    for cycle in 0..CYCLES {
        let word = cycle.wrapping_mul(0x9e37_79b9_7f4a_7c15).to_le_bytes();
        m.set_bytes(s_data, &[&word[..], &[cycle as u8]].concat());
        m.tick();
    }
    panic!("the failure this test provokes, after {CYCLES} cycles");
}

#[test]
fn failure_trace_is_bounded_and_ends_at_the_failure() {
    trace::set_failure_trace_limit(LIMIT);
    let path = trace::waves_dir().join(format!("{TEST}.vcd"));
    let earlier = trace::waves_dir().join(format!("{TEST}.earlier.vcd"));
    let _ = std::fs::remove_file(&path);
    let _ = std::fs::remove_file(&earlier);

    let outcome = panic::catch_unwind(AssertUnwindSafe(|| trace::on_failure(TEST, failing_run)));
    let message = outcome.expect_err("the body fails, and on_failure passes the failure on");
    let text = message.downcast_ref::<String>().map(String::as_str).unwrap_or("");
    assert!(text.contains("the failure this test provokes"), "the first run's panic is resumed: {text:?}");

    // Bytes a file can grow past the bound between two size checks (1024 cycles apart).
    let slack = LIMIT / 2;
    let size = |p: &std::path::Path| std::fs::metadata(p).map(|m| m.len()).unwrap_or(0);
    let (newest, older) = (size(&path), size(&earlier));
    assert!(older > LIMIT, "a run past the bound leaves its earlier stretch ({older} bytes) in {}", earlier.display());
    assert!(older <= LIMIT + slack, "the earlier stretch is bounded: {older} bytes of {LIMIT}");
    assert!(newest > 0 && newest <= LIMIT + slack, "the newest stretch is bounded: {newest} bytes of {LIMIT}");
    // The newest stretch ends at the failure: it holds the last cycle's time stamp.
    let vcd = std::fs::read_to_string(&path).expect("the newest trace reads back");
    let last_time = vcd.lines().filter_map(|l| l.strip_prefix('#')).filter_map(|t| t.parse::<u64>().ok()).max();
    assert!(
        last_time.is_some_and(|t| t + 4 >= 2 * (CYCLES + 2)),
        "the newest trace reaches the failing cycle: {last_time:?}"
    );
    let _ = std::fs::remove_file(&path);
    let _ = std::fs::remove_file(&earlier);
}
