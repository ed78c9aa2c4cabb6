//! The bodies of the measuring programs (`src/bin/*` parse flags and call these): run,
//! print the setup line and the summary table, exit 1 on any failure.
use std::path::Path;

use rnic_proto::host::context::MAX_READS;

use crate::atomics::{atomic_bandwidth, atomic_latency, imm_pingpong, sequencer, AtomicKind};
use crate::cli::{fail, PerfArgs};
use crate::pair::{with_pair, PairConfig};
use crate::perf::{bandwidth, pingpong, read_latency, Bandwidth, Direction, Latency};
use crate::report::{plot_sweep, Curve, Table, ROUTED_FMAX_MHZ};
use crate::responder::{atomic_responder, ResponderConfig};

/// Message sizes of a sweep: 64 octets to 64 KiB, doubling.
pub const SWEEP: [u32; 11] = [64, 128, 256, 512, 1024, 2048, 4096, 8192, 16384, 32768, 65536];

/// The datapath: octets per cycle.
const W: f64 = 8.0;

fn config(args: &PerfArgs, max_size: u32) -> PairConfig {
    PairConfig {
        qps: args.qps,
        max_size,
        mulpdu: args.mulpdu,
        ord: args.ord,
        dma_latency: args.dma_latency,
        crc: !args.no_crc,
        markers: args.markers,
        device_memory: false,
        pcap: args.pcap.clone(),
        loopback: args.loopback,
    }
}

/// Where an atomic program's targets live, for its setup line.
fn memory_name(device_memory: bool) -> &'static str {
    if device_memory {
        "B's device memory"
    } else {
        "B's host memory"
    }
}

/// `write_bw` and `read_bw`: one size, or the sweep with its plot written to `svg`.
pub fn bandwidth_program(program: &str, direction: Direction, args: &PerfArgs, svg: Option<&Path>) {
    let sizes: Vec<u32> = if svg.is_some() { SWEEP.to_vec() } else { vec![args.size] };
    let max_size = *sizes.iter().max().expect("a size");
    let runs = with_pair(config(args, max_size), |pair| {
        sizes
            .iter()
            .map(|&size| bandwidth(pair, direction, size, args.iters))
            .collect::<Result<Vec<Bandwidth>, String>>()
    })
    .unwrap_or_else(|e| fail(program, e));
    let what = match direction {
        Direction::Write => "RDMA Writes, A to B".to_string(),
        Direction::Read => "RDMA Reads by A from B".to_string(),
    };
    println!("{program}: {what}, {} per QP; {}", args.iters, args.setup());
    let mut table = Table::new(&[
        "size",
        "messages",
        "cycles",
        "bytes/cycle",
        "wire bytes/cycle",
        "messages/cycle",
        "A's DMA read beats/message",
        "sim cycles/s",
    ]);
    for r in &runs {
        table.row(vec![
            r.size.to_string(),
            r.messages.to_string(),
            r.cycles.to_string(),
            format!("{:.3}", r.bytes_per_cycle()),
            format!("{:.3}", r.wire_bytes_per_cycle()),
            format!("{:.4}", r.messages_per_cycle()),
            format!("{:.1}", r.a_read_beats_per_message()),
            format!("{:.0}", r.sim_cycles_per_second()),
        ]);
    }
    print!("{}", table.render());
    println!("data checked: every sink equals its source");
    if let Some(path) = svg {
        let curves = [
            Curve { name: "payload bytes/cycle", points: runs.iter().map(|r| (r.size, r.bytes_per_cycle())).collect() },
            Curve {
                name: "wire bytes/cycle (MPA FPDUs)",
                points: runs.iter().map(|r| (r.size, r.wire_bytes_per_cycle())).collect(),
            },
        ];
        let title = format!("{program}: {what}, {} QP(s), MULPDU {}", args.qps, args.mulpdu);
        plot_sweep(path, &title, &curves, W).unwrap_or_else(|e| fail(program, e));
        println!("plot written to {}", path.display());
    }
}

/// Prints a latency summary; `size` is the octets each operation carries.
fn latency_table(program: &str, what: &str, args: &PerfArgs, size: u32, latency: &Latency) {
    println!("{program}: {what}; {}", args.setup());
    let mut table = Table::new(&["size", "samples", "min", "median", "mean", "max"]);
    table.row(vec![
        size.to_string(),
        latency.count().to_string(),
        latency.min().to_string(),
        latency.median().to_string(),
        format!("{:.1}", latency.mean()),
        latency.max().to_string(),
    ]);
    print!("{}", table.render());
    println!("latencies in cycles; data checked: every message equals what was sent");
}

/// `pingpong`: Send/Recv, one way, doorbell to the peer's receive completion.
pub fn pingpong_program(args: &PerfArgs) {
    let latency = with_pair(config(args, args.size), |pair| pingpong(pair, args.size, args.iters))
        .unwrap_or_else(|e| fail("pingpong", e));
    latency_table(
        "pingpong",
        "Send/Recv on QP 0, one way: sender's doorbell to the receiver's CQE",
        args,
        args.size,
        &latency,
    );
}

/// `read_lat`: one RDMA Read at a time, doorbell to its completion.
pub fn read_lat_program(args: &PerfArgs) {
    let latency = with_pair(config(args, args.size), |pair| read_latency(pair, args.size, args.iters))
        .unwrap_or_else(|e| fail("read_lat", e));
    latency_table(
        "read_lat",
        "RDMA Read on QP 0, one at a time: doorbell to the Read's CQE",
        args,
        args.size,
        &latency,
    );
}

/// `atomic_bw`: atomics from every QP of A on B's memory, as many in flight as each QP
/// allows (its ORD, `--ord`, on the wire; 32 posted).
pub fn atomic_bw_program(args: &PerfArgs, kind: AtomicKind, contended: bool, device_memory: bool) {
    let config = PairConfig { device_memory, ..config(args, args.iters * 8) };
    let run = with_pair(config, |pair| atomic_bandwidth(pair, kind, contended, args.iters))
        .unwrap_or_else(|e| fail("atomic_bw", e));
    let target = if contended { "all on one word" } else { "each QP on a word of its own" };
    let memory = memory_name(device_memory);
    println!("atomic_bw: {kind:?}, {} per QP, {target} in {memory}; {}", args.iters, args.setup());
    let mops = format!("Mops at {ROUTED_FMAX_MHZ} MHz (routed)");
    let mut table = Table::new(&["op", "atomics", "cycles", "ops/cycle", &mops, "sim cycles/s"]);
    table.row(vec![
        format!("{kind:?}").to_lowercase(),
        run.ops.to_string(),
        run.cycles.to_string(),
        format!("{:.4}", run.ops_per_cycle()),
        format!("{:.2}", run.ops_per_cycle() * ROUTED_FMAX_MHZ),
        format!("{:.0}", run.cycles as f64 / run.seconds),
    ]);
    print!("{}", table.render());
    println!("results checked: every original value returned once and the target holds what they add up to");
}

/// `atomic_responder`: one RNIC answering a raw peer's FetchAdds at link rate.
pub fn atomic_responder_program(args: &PerfArgs, contended: bool, device_memory: bool) {
    let config = ResponderConfig {
        qps: args.qps,
        iters: args.iters,
        contended,
        device_memory,
        dma_latency: args.dma_latency,
        crc: !args.no_crc,
    };
    let run = atomic_responder(config).unwrap_or_else(|e| fail("atomic_responder", e));
    let target = if contended { "all on one word" } else { "each QP on a word of its own" };
    println!(
        "atomic_responder: FetchAdd(+1) from a raw peer at link rate, IRD {MAX_READS} per QP kept full, {} per QP, {target} in {}; {}",
        args.iters,
        memory_name(device_memory).replace("B's", "the RNIC's"),
        args.setup()
    );
    let mops = format!("Mops at {ROUTED_FMAX_MHZ} MHz (routed)");
    let mut table = Table::new(&["atomics", "cycles", "ops/cycle", "link bound ops/cycle", "of the bound", &mops]);
    table.row(vec![
        run.ops.to_string(),
        run.cycles.to_string(),
        format!("{:.4}", run.ops_per_cycle()),
        format!("{:.4}", run.link_bound()),
        format!("{:.0}%", 100.0 * run.ops_per_cycle() / run.link_bound()),
        format!("{:.2}", run.ops_per_cycle() * ROUTED_FMAX_MHZ),
    ]);
    print!("{}", table.render());
    println!(
        "results checked: every response on QN 3 in order with its Request Identifier; the originals are 0..n once each; {} octets per request FPDU",
        run.request_octets
    );
}

/// `atomic_lat`: one atomic at a time, doorbell to its completion.
pub fn atomic_lat_program(args: &PerfArgs, kind: AtomicKind, device_memory: bool) {
    let config = PairConfig { device_memory, ..config(args, 64) };
    let samples =
        with_pair(config, |pair| atomic_latency(pair, kind, args.iters)).unwrap_or_else(|e| fail("atomic_lat", e));
    let memory = memory_name(device_memory);
    let what = format!("{kind:?} on QP 0 on a word of {memory}, one at a time: doorbell to the atomic's CQE");
    latency_table("atomic_lat", &what, args, 8, &Latency::from_samples(samples));
}

/// `imm_pingpong`: Immediate Data, one way, doorbell to the peer's receive completion.
pub fn imm_pingpong_program(args: &PerfArgs) {
    let samples =
        with_pair(config(args, 64), |pair| imm_pingpong(pair, args.iters)).unwrap_or_else(|e| fail("imm_pingpong", e));
    latency_table(
        "imm_pingpong",
        "Immediate Data on QP 0, one way: sender's doorbell to the receiver's CQE",
        args,
        8,
        &Latency::from_samples(samples),
    );
}

/// `sequencer`: every QP takes `iters` tickets from one counter at B.
pub fn sequencer_program(args: &PerfArgs) {
    let run = with_pair(config(args, args.iters * 8), |pair| sequencer(pair, args.iters))
        .unwrap_or_else(|e| fail("sequencer", e));
    println!(
        "sequencer: {} QP(s) of A take {} tickets each from one counter in B's memory; {}",
        args.qps,
        args.iters,
        args.setup()
    );
    let mut table = Table::new(&["QP", "tickets", "first", "last"]);
    for (q, mine) in run.originals.iter().enumerate() {
        table.row(vec![q.to_string(), mine.len().to_string(), mine[0].to_string(), mine[mine.len() - 1].to_string()]);
    }
    print!("{}", table.render());
    println!(
        "counter at {}: tickets 0..{} each handed out once, each QP's rising; {} FetchAdds in {} cycles ({:.4}/cycle)",
        run.ops,
        run.ops,
        run.ops,
        run.cycles,
        run.ops_per_cycle()
    );
}
