//! `write_bw --backend sim [--size N] [--iters N] [--qps N] [--mulpdu N] [--sweep [--svg FILE]]`:
//! RDMA Write bandwidth: A writes into B's memory, up to 128 messages in flight per QP; prints bytes per cycle of payload and on
//! the wire, and messages per cycle. `--sweep` runs sizes from 64 octets to 64 KiB and
//! plots them. Exits 1 if a run fails or moves a wrong octet, 2 if the backend cannot run.
use std::path::PathBuf;

use clap::Parser;
use rnic_firmware_tests::cli::PerfArgs;

#[derive(Parser)]
#[command(about = "RDMA Write bandwidth: A writes into B's memory")]
struct Args {
    #[command(flatten)]
    perf: PerfArgs,
    /// Run every size from 64 octets to 64 KiB and write a plot.
    #[arg(long)]
    sweep: bool,
    /// Where the sweep's SVG plot goes.
    #[arg(long, default_value = "write_bw.svg")]
    svg: PathBuf,
}

fn main() {
    let args = Args::parse();
    args.perf.require_pair_backend("write_bw");
    #[cfg(feature = "sim")]
    rnic_firmware_tests::programs::bandwidth_program(
        "write_bw",
        rnic_firmware_tests::perf::Direction::Write,
        &args.perf,
        args.sweep.then_some(args.svg.as_path()),
    );
}
