//! `atomic_bw --backend sim [--op fadd|cswap] [--device-memory] [--contended] [--iters N] [--qps N] [--dma-latency N]`:
//! RFC 7306 atomic rate: every QP of A runs `iters` atomics on B's memory, each QP on a
//! word of its own or, with `--contended`, all on one word, in B's host memory or, with
//! `--device-memory`, in B's on-chip memory; prints atomics per cycle.
//! Every original value returned is checked. Exits 1 if a run fails, 2 if the backend
//! cannot run.
use clap::Parser;
use rnic_firmware_tests::cli::{AtomicKind, PerfArgs};

#[derive(Parser)]
#[cfg_attr(not(feature = "sim"), allow(dead_code))]
#[command(about = "RFC 7306 atomics per cycle, A on B's memory")]
struct Args {
    #[command(flatten)]
    perf: PerfArgs,
    /// The operation.
    #[arg(long, value_enum, default_value = "fadd")]
    op: AtomicKind,
    /// The target in B's device memory (on-chip RAM) instead of its host memory.
    #[arg(long)]
    device_memory: bool,
    /// Every QP on one word (the responder serialises them).
    #[arg(long)]
    contended: bool,
}

fn main() {
    let args = Args::parse();
    args.perf.require_pair_backend("atomic_bw");
    #[cfg(feature = "sim")]
    rnic_firmware_tests::programs::atomic_bw_program(&args.perf, args.op, args.contended, args.device_memory);
}
