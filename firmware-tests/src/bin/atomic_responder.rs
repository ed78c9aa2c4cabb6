//! `atomic_responder --backend sim [--qps N] [--iters N] [--contended] [--device-memory] [--dma-latency N] [--no-crc]`:
//! the RFC 7306 responder's rate on its own. A raw peer on one RNIC's streams offers
//! FetchAdd(+1) requests on every QP as fast as the link takes them (each QP's IRD kept
//! full), on one word (`--contended`) or a word per QP, in host memory or device memory;
//! prints Atomic Responses per cycle next to the link's bound. Every response is checked.
//! Exits 1 if a run fails, 2 if the backend cannot run.
use clap::Parser;
use rnic_firmware_tests::cli::PerfArgs;

#[derive(Parser)]
#[cfg_attr(not(feature = "sim"), allow(dead_code))]
#[command(about = "RFC 7306 responder rate: Atomic Requests from a raw peer at link rate")]
struct Args {
    #[command(flatten)]
    perf: PerfArgs,
    /// Every QP on one word.
    #[arg(long)]
    contended: bool,
    /// The targets in device memory (on-chip RAM) instead of host memory.
    #[arg(long)]
    device_memory: bool,
}

fn main() {
    let args = Args::parse();
    args.perf.require_pair_backend("atomic_responder");
    #[cfg(feature = "sim")]
    rnic_firmware_tests::programs::atomic_responder_program(&args.perf, args.contended, args.device_memory);
}
