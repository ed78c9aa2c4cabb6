//! `read_lat --backend sim [--size N] [--iters N] [--mulpdu N] [--dma-latency N]`:
//! RDMA Read latency, one Read at a time, in cycles, from the doorbell to the completion; every message is checked.
//! Exits 1 if a run fails or moves a wrong octet, 2 if the backend cannot run.
use clap::Parser;
use rnic_firmware_tests::cli::PerfArgs;

#[derive(Parser)]
#[command(about = "RDMA Read latency, one Read at a time, in cycles")]
struct Args {
    #[command(flatten)]
    perf: PerfArgs,
}

fn main() {
    let args = Args::parse();
    args.perf.require_pair_backend("read_lat");
    #[cfg(feature = "sim")]
    rnic_firmware_tests::programs::read_lat_program(&args.perf);
}
