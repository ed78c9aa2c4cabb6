//! `atomic_lat --backend sim [--op fadd|cswap] [--device-memory] [--iters N] [--dma-latency N]`:
//! RFC 7306 atomic latency, one at a time on QP 0 (on a word of B's host memory, or of its
//! device memory with `--device-memory`), in cycles from the doorbell to the
//! completion (the original value is in A's memory then, and is checked). Exits 1 if a run
//! fails, 2 if the backend cannot run.
use clap::Parser;
use rnic_firmware_tests::cli::{AtomicKind, PerfArgs};

#[derive(Parser)]
#[cfg_attr(not(feature = "sim"), allow(dead_code))]
#[command(about = "RFC 7306 atomic latency, one at a time, in cycles")]
struct Args {
    #[command(flatten)]
    perf: PerfArgs,
    /// The operation.
    #[arg(long, value_enum, default_value = "fadd")]
    op: AtomicKind,
    /// The target in B's device memory (on-chip RAM) instead of its host memory.
    #[arg(long)]
    device_memory: bool,
}

fn main() {
    let args = Args::parse();
    args.perf.require_pair_backend("atomic_lat");
    #[cfg(feature = "sim")]
    rnic_firmware_tests::programs::atomic_lat_program(&args.perf, args.op, args.device_memory);
}
