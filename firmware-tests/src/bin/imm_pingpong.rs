//! `imm_pingpong --backend sim [--iters N] [--dma-latency N]`:
//! RFC 7306 Immediate Data ping-pong latency between two RNICs, one way, in cycles from the
//! doorbell to the peer's receive completion, which must carry the 8 octets sent. Exits 1
//! if a run fails, 2 if the backend cannot run.
use clap::Parser;
use rnic_firmware_tests::cli::PerfArgs;

#[derive(Parser)]
#[command(about = "Immediate Data ping-pong latency between two RNICs, in cycles")]
struct Args {
    #[command(flatten)]
    perf: PerfArgs,
}

fn main() {
    let args = Args::parse();
    args.perf.require_pair_backend("imm_pingpong");
    #[cfg(feature = "sim")]
    rnic_firmware_tests::programs::imm_pingpong_program(&args.perf);
}
