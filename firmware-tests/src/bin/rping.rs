//! `rping (--connect HOST:PORT | --listen ADDR:PORT | --probe-fetch-add HOST:PORT)
//! [--count N] [--size N] [--no-crc] [--markers] [--p2p] [--mpa-rev 1|2]`: rdma-core's rping on one simulated RNIC whose stream runs
//! over kernel TCP (MPA set up by the driver, the stream carried by a socket bridge), so
//! that it pings a real `rping` on Linux soft-iWARP, or another of itself. Prints each
//! ping's text; exits 1 if a ping fails or its data comes back different.
use std::net::SocketAddr;
use std::time::Duration;

use clap::Parser;

#[derive(Parser)]
#[command(about = "rdma-core's rping on a simulated RNIC over kernel TCP")]
struct Args {
    /// Act as the rping client, connecting here.
    #[arg(long, conflicts_with_all = ["listen", "probe_fetch_add"], required_unless_present_any = ["listen", "probe_fetch_add"])]
    connect: Option<SocketAddr>,
    /// Connect here and send one RFC 7306 FetchAdd (add 0) instead of pinging (the probe of
    /// RFC 7306 §1.1): prints how the peer answered.
    #[arg(long, conflicts_with = "listen")]
    probe_fetch_add: Option<SocketAddr>,
    /// Act as the rping server, listening here.
    #[arg(long)]
    listen: Option<SocketAddr>,
    /// Pings.
    #[arg(long, default_value_t = 3)]
    count: u32,
    /// Buffer size (rping -S).
    #[arg(long, default_value_t = 64, value_parser = clap::value_parser!(u32).range(32..=65536))]
    size: u32,
    /// Do not ask for MPA CRCs.
    #[arg(long)]
    no_crc: bool,
    /// Ask the peer for markers.
    #[arg(long)]
    markers: bool,
    /// Offer (client) or accept (server) MPA peer-to-peer mode with a zero-length RDMA
    /// Write as RTR (RFC 6581 §9.2).
    #[arg(long)]
    p2p: bool,
    /// MPA revision to propose.
    #[arg(long, default_value_t = 2, value_parser = clap::value_parser!(u8).range(1..=2))]
    mpa_rev: u8,
    /// Write the connection (MPA frames and every FPDU, both ways) to FILE as a packet
    /// capture that Wireshark and tshark decode.
    #[arg(long, value_name = "FILE")]
    pcap: Option<std::path::PathBuf>,
    /// Seconds before giving up.
    #[arg(long, default_value_t = 60)]
    timeout: u64,
}

fn main() {
    let args = Args::parse();
    #[cfg(feature = "sim")]
    {
        use rnic_firmware_tests::rping::{run, Role, RpingConfig};
        let role = match (args.connect, args.listen, args.probe_fetch_add) {
            (Some(addr), _, _) => Role::Client(addr),
            (_, Some(addr), _) => Role::Server(addr),
            (_, _, Some(addr)) => Role::ProbeFetchAdd(addr),
            _ => unreachable!("clap requires one"),
        };
        let mpa = rnic_driver::cm::MpaConfig {
            crc: !args.no_crc,
            markers: args.markers,
            rev: args.mpa_rev,
            ird: 1,
            ord: 1,
            peer_to_peer: args.p2p,
            timeout: Duration::from_secs(args.timeout),
            ..Default::default()
        };
        let config = RpingConfig {
            role,
            count: args.count,
            size: args.size as usize,
            mpa,
            timeout: Duration::from_secs(args.timeout),
            pcap: args.pcap,
        };
        match run(&config) {
            Ok(lines) => lines.iter().for_each(|l| println!("{l}")),
            Err(e) => rnic_firmware_tests::cli::fail("rping", e),
        }
    }
    #[cfg(not(feature = "sim"))]
    {
        let _ = (args, Duration::ZERO);
        eprintln!("rping: runs on the simulated RNIC, which this build leaves out (`--no-default-features`)");
        std::process::exit(2);
    }
}
