//! Prints the cycle-level throughput of every block at every width: bytes/cycle through
//! the MPA framer and deframer for 64 B, 1 KiB and 4 KiB ULPDUs, CRC32c bytes/cycle, ALU
//! operations/cycle, the atomic unit's ops/cycle and latency, DMA bytes/cycle, and how
//! many simulated cycles per second Verilator managed (also for the whole RNIC,
//! `rnic_top`, on its own). `--blocks` picks sections.
//!
//! `cargo run --release -p rnic-sim --bin bench-blocks [-- --update-docs]`
//! `cargo run --release -p rnic-sim --bin bench-blocks -- --blocks atomic-unit`
use std::fmt::Write as _;
use std::path::PathBuf;

use clap::Parser;
use rnic_proto::mpa::FramingConfig;
use rnic_sim::bench;

#[derive(Parser)]
#[command(about = "Cycle-level throughput of the RNIC blocks in Verilator")]
struct Args {
    /// Datapath widths in byte lanes.
    #[arg(long, value_delimiter = ',', default_values_t = [8, 16, 32, 64])]
    widths: Vec<usize>,
    /// ULPDU sizes in octets.
    #[arg(long, value_delimiter = ',', default_values_t = [64, 1024, 4096])]
    sizes: Vec<usize>,
    /// Sections to run (all by default).
    #[arg(long, value_delimiter = ',', default_values_t = BLOCKS.map(String::from))]
    blocks: Vec<String>,
    /// Rewrite the bench-blocks section of docs/PERFORMANCE.md with the results (all
    /// sections only).
    #[arg(long)]
    update_docs: bool,
}

/// The sections, in the order they are printed.
const BLOCKS: [&str; 6] = ["mpa", "crc", "alu", "atomic-unit", "dma", "top"];

const BEGIN: &str = "<!-- bench-blocks:begin -->";
const END: &str = "<!-- bench-blocks:end -->";

fn main() {
    let args = Args::parse();
    if let Some(b) = args.blocks.iter().find(|b| !BLOCKS.contains(&b.as_str())) {
        fail(&format!("unknown block {b:?}; blocks: {}", BLOCKS.join(", ")));
    }
    if args.update_docs && BLOCKS.iter().any(|b| !args.blocks.iter().any(|a| a == b)) {
        fail(&"--update-docs rewrites every section: run all blocks");
    }
    let wanted = |block: &str| args.blocks.iter().any(|b| b == block);
    let mut report = String::new();
    let out = &mut report;
    let configs = [
        ("markers + CRC", FramingConfig { markers: true, crc: true }),
        ("CRC only", FramingConfig { markers: false, crc: true }),
    ];

    if wanted("mpa") {
        writeln!(out, "MPA framer (TX) and deframer (RX), streams at full rate:\n").unwrap();
        writeln!(out, "| block | W | ULPDU | framing | ULPDU bytes/cycle | of W | sim Mcycles/s |").unwrap();
        writeln!(out, "|---|---|---|---|---|---|---|").unwrap();
        for &lanes in &args.widths {
            for (block, run) in [("TX", bench::mpa_tx as Runner), ("RX", bench::mpa_rx as Runner)] {
                for (name, cfg) in configs {
                    for &size in &args.sizes {
                        let t = run(lanes, cfg, size, bench::ulpdus_for(size)).unwrap_or_else(|e| fail(&e));
                        writeln!(
                            out,
                            "| {block} | {lanes} | {size} | {name} | {:.2} | {:.3} | {:.2} |",
                            t.bytes_per_cycle(),
                            t.bytes_per_cycle() / lanes as f64,
                            t.cycles_per_second / 1e6
                        )
                        .unwrap();
                        eprintln!("  {block} W={lanes} {size} B {name}: {:.2} B/cycle", t.bytes_per_cycle());
                    }
                }
            }
        }
    }

    if wanted("crc") {
        writeln!(out, "\nCRC32c unit, one full beat per cycle:\n").unwrap();
        writeln!(out, "| W | bytes/cycle | sim Mcycles/s |").unwrap();
        writeln!(out, "|---|---|---|").unwrap();
        for &lanes in &args.widths {
            let t = bench::crc(lanes, 1_000_000).unwrap_or_else(|e| fail(&e));
            writeln!(out, "| {lanes} | {:.2} | {:.2} |", t.bytes_per_cycle(), t.cycles_per_second / 1e6).unwrap();
        }
    }

    if wanted("alu") {
        writeln!(out, "\nAtomic ALU, one operation issued per cycle:\n").unwrap();
        writeln!(out, "| operations | ops/cycle | latency (cycles) | sim Mcycles/s |").unwrap();
        writeln!(out, "|---|---|---|---|").unwrap();
        for (name, chained) in [("independent", false), ("chained on one word (contended)", true)] {
            let r = bench::alu(1_000_000, chained).unwrap_or_else(|e| fail(&e));
            writeln!(out, "| {name} | {:.3} | {} | {:.2} |", r.ops_per_cycle(), r.latency, r.cycles_per_second / 1e6)
                .unwrap();
        }
    }

    if wanted("atomic-unit") {
        writeln!(
            out,
            "\nAtomic unit, ops offered back to back, memory with a fixed read and write-ack latency, \
             no back-pressure; ops/cycle from the first op taken to the last result out, latency from \
             an op taken to its result valid:\n"
        )
        .unwrap();
        writeln!(out, "| memory latency | contended (one word) ops/cycle | uncontended (a word each) ops/cycle | single op latency | two ops on one word offered together (the second chained): from the first taken to the second's result | sim Mcycles/s |").unwrap();
        writeln!(out, "|---|---|---|---|---|---|").unwrap();
        for latency in [1, 200] {
            let contended = bench::atomic_unit(latency, true, 100_000).unwrap_or_else(|e| fail(&e));
            let uncontended = bench::atomic_unit(latency, false, if latency > 10 { 2_000 } else { 20_000 })
                .unwrap_or_else(|e| fail(&e));
            let (cold, chained) = bench::atomic_unit_latency(latency).unwrap_or_else(|e| fail(&e));
            writeln!(
                out,
                "| {latency} | {:.3} | {:.4} | {cold} | {chained} | {:.2} |",
                contended.ops_per_cycle(),
                uncontended.ops_per_cycle(),
                contended.cycles_per_second / 1e6
            )
            .unwrap();
            eprintln!(
                "  atomic unit, latency {latency}: contended {:.3}, uncontended {:.4} ops/cycle",
                contended.ops_per_cycle(),
                uncontended.ops_per_cycle()
            );
        }
    }

    if wanted("dma") {
        writeln!(
            out,
            "\nDMA master (AXI4, 64-bit data), host memory with a 200-cycle latency, requests back to back, \
             each starting 3 octets past an 8-octet boundary:\n"
        )
        .unwrap();
        writeln!(
            out,
            "| direction | request | bytes/cycle | first octet / completion after (cycles) | sim Mcycles/s |"
        )
        .unwrap();
        writeln!(out, "|---|---|---|---|---|").unwrap();
        for (name, write) in [("read", false), ("write", true)] {
            for size in [64, 1024, 4096] {
                let (t, latency) = bench::dma(write, size, (256 * 1024 / size).max(64)).unwrap_or_else(|e| fail(&e));
                writeln!(
                    out,
                    "| {name} | {size} | {:.2} | {latency} | {:.2} |",
                    t.bytes_per_cycle(),
                    t.cycles_per_second / 1e6
                )
                .unwrap();
                eprintln!("  DMA {name} {size} B: {:.2} B/cycle", t.bytes_per_cycle());
            }
        }
    }

    if wanted("top") {
        let speed = bench::top_idle(2_000_000).unwrap_or_else(|e| fail(&e));
        writeln!(out, "\nThe whole RNIC (`rnic_top`) idle, no bus models: {:.2} sim Mcycles/s", speed / 1e6).unwrap();
    }

    println!("{}", report.trim_start());
    if args.update_docs {
        let command = "cargo run --release -p rnic-sim --bin bench-blocks -- --update-docs";
        let section = format!("{BEGIN}\nMeasured with `{command}`.\n\n{report}{END}");
        update_docs(&section).unwrap_or_else(|e| fail(&e));
    }
}

type Runner = fn(usize, FramingConfig, usize, usize) -> Result<bench::Throughput, rnic_sim::SimError>;

fn update_docs(section: &str) -> std::io::Result<()> {
    let path = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../docs/PERFORMANCE.md");
    let text = std::fs::read_to_string(&path).unwrap_or_else(|_| "# Performance\n".into());
    let text = match (text.find(BEGIN), text.find(END)) {
        (Some(b), Some(e)) if b < e => format!("{}{section}{}", &text[..b], &text[e + END.len()..]),
        _ => format!("{}\n\n## Block throughput (simulation)\n\n{section}\n", text.trim_end()),
    };
    std::fs::write(&path, text)?;
    eprintln!("updated {}", path.display());
    Ok(())
}

fn fail(e: &dyn std::fmt::Display) -> ! {
    eprintln!("bench-blocks: {e}");
    std::process::exit(1)
}
