//! `sequencer --backend sim [--qps N] [--iters N]`: a distributed sequencer, the classic use
//! of FetchAdd. Each of A's QPs takes `iters` tickets from one counter in B's memory with
//! FetchAdd(+1), all at once; the counter must end at `qps · iters` and every ticket
//! `0..qps · iters` must have been handed out exactly once, with each QP's own tickets
//! rising. Exits 1 otherwise, 2 if the backend cannot run.
use clap::Parser;
use rnic_firmware_tests::cli::PerfArgs;

#[derive(Parser)]
#[command(about = "QPs taking tickets from one FetchAdd counter: every ticket exactly once")]
struct Args {
    #[command(flatten)]
    perf: PerfArgs,
}

fn main() {
    let args = Args::parse();
    args.perf.require_pair_backend("sequencer");
    #[cfg(feature = "sim")]
    rnic_firmware_tests::programs::sequencer_program(&args.perf);
}
