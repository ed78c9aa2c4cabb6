//! Flags the measuring programs share (perftest's names where there is one).
use clap::{Args, ValueEnum};
use rnic_proto::host::context::MAX_READS;

use crate::Backend;

#[derive(Args, Clone, Debug)]
pub struct PerfArgs {
    /// Where to run: `sim` (two Verilated RNICs linked stream to stream) or `vfio`
    /// (`serial`, the board, runs `selftest` only).
    #[arg(long, value_enum, default_value = "sim")]
    pub backend: Backend,
    /// One RNIC instead of two: its stream looped back into itself, A's QPs and B's QPs
    /// on the same device (as on the board).
    #[arg(long)]
    pub loopback: bool,
    /// PCI address of the card for `--backend vfio`, e.g. 0000:01:00.0.
    #[arg(long)]
    pub device: Option<String>,
    /// Message size in octets.
    #[arg(long, default_value_t = 4096)]
    pub size: u32,
    /// Messages per QP (latency programs: round trips or operations).
    #[arg(long, default_value_t = 200, value_parser = clap::value_parser!(u32).range(1..))]
    pub iters: u32,
    /// QPs used at once (bandwidth programs).
    #[arg(long, default_value_t = 1, value_parser = clap::value_parser!(u16).range(1..=64))]
    pub qps: u16,
    /// MULPDU of every QP: the largest ULPDU, in octets (at most 16 KiB, the RNIC's
    /// receive buffer).
    #[arg(long, default_value_t = 1460, value_parser = clap::value_parser!(u16).range(64..=16384))]
    pub mulpdu: u16,
    /// ORD and IRD of every QP: the Reads and atomics each may have outstanding (at most
    /// `MAX_READS`, 16).
    #[arg(long, default_value_t = MAX_READS, value_parser = clap::value_parser!(u8).range(1..=i64::from(MAX_READS)))]
    pub ord: u8,
    /// Cycles the simulated host memory takes to answer a DMA request.
    #[arg(long, default_value_t = 200)]
    pub dma_latency: u64,
    /// MPA markers on every connection, both ways.
    #[arg(long)]
    pub markers: bool,
    /// MPA CRCs off on every connection.
    #[arg(long)]
    pub no_crc: bool,
    /// Write the streams between the RNICs to FILE as a packet capture (Ethernet/IPv4/TCP,
    /// with each connection's MPA handshake) that Wireshark and tshark decode.
    #[arg(long, value_name = "FILE")]
    pub pcap: Option<std::path::PathBuf>,
}

impl PerfArgs {
    /// Fails (exit status 2) unless the chosen backend can run these programs here.
    pub fn require_pair_backend(&self, program: &str) {
        let why = match self.backend {
            Backend::Sim if cfg!(feature = "sim") => return,
            Backend::Sim => {
                "the sim backend is not built in (built with `--no-default-features`): build without it".to_string()
            }
            Backend::Fake => "the fake backend has no RNIC behind it".to_string(),
            // The card is opened first, so that a setup mistake is what gets reported.
            Backend::Vfio => match crate::open(Backend::Vfio, self.device.as_deref()) {
                Err(e) => e,
                Ok(_) => "the card opened, but the measuring programs count the RNIC's clock cycles, which \
                          only the simulator gives, so they run on `--backend sim` (two RNICs, or one with \
                          --loopback); on the card, `selftest --backend vfio --device <BDF>` runs every \
                          operation once, its streams looped through the stream rings"
                    .to_string(),
            },
            Backend::Serial => "the measuring programs count the RNIC's clock cycles, which only the simulator \
                                gives, so they run on `--backend sim` (two RNICs, or one with --loopback); on the \
                                board, `selftest --backend serial --port PATH` runs every operation once, its \
                                streams looped by the board's shell"
                .to_string(),
        };
        eprintln!("{program}: cannot run on {:?}: {why}", self.backend);
        std::process::exit(2)
    }

    /// The setup line every program prints above its table.
    pub fn setup(&self) -> String {
        let on = |b: bool| if b { "on" } else { "off" };
        let rnics = if self.loopback { "one RNIC in loopback" } else { "two RNICs linked" };
        format!(
            "backend {:?}, {rnics}, {} QP(s), MULPDU {}, ORD/IRD {}, MPA CRC {}, markers {}, DMA latency {} cycles, datapath 8 octets/cycle",
            self.backend,
            self.qps,
            self.mulpdu,
            self.ord,
            on(!self.no_crc),
            on(self.markers),
            self.dma_latency
        )
    }
}

/// Reports a failed run and exits with status 1.
pub fn fail(program: &str, error: String) -> ! {
    eprintln!("{program}: FAILED: {error}");
    std::process::exit(1)
}

/// The atomic operation of `atomic_bw` and `atomic_lat`.
#[derive(Clone, Copy, Debug, PartialEq, Eq, ValueEnum)]
pub enum AtomicKind {
    /// FetchAdd(+1): a ticket counter.
    Fadd,
    /// CmpSwap that always matches (Compare Mask 0) and swaps in the operation's number.
    Cswap,
}
