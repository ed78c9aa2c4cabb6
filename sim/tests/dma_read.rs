//! `host/dma_read` (in `rnic_host_dma`) in Verilator behind the IOMMU host-memory model: random requests (any
//! start octet, lengths 0..9000, across 4 KiB pages) with random bus latency, AXI
//! back-pressure and output back-pressure; every stream packet must be exactly the
//! memory's octets, lane 0 first, in request order, with its tag.
use std::collections::VecDeque;

use rand::rngs::StdRng;
use rand::{Rng, SeedableRng};
use rnic_sim::axi::AxiSlave;
use rnic_sim::axis::AxisSink;
use rnic_sim::host_memory::HostMemory;
use rnic_sim::{trace, Model, Port};

const REQUESTS: usize = 2_000;
const REGION: usize = 64 * 1024;

struct Bench {
    model: Model,
    bus: AxiSlave,
    out: AxisSink,
    valid: Port,
    ready: Port,
    addr: Port,
    len: Port,
    tag: Port,
}

impl Bench {
    fn new(memory: HostMemory) -> Bench {
        let mut model = Model::new("rnic_host_dma").expect("rnic_host_dma model");
        let bus = AxiSlave::new(&model, "m_axi", memory);
        let out = AxisSink::new(&model, "m_rd_axis");
        let p = |n: &str| model.port(n);
        let (valid, ready, addr, len, tag) =
            (p("s_rd_req_valid"), p("s_rd_req_ready"), p("s_rd_req_addr"), p("s_rd_req_len"), p("s_rd_req_tag"));
        model.reset_for(4);
        Bench { model, bus, out, valid, ready, addr, len, tag }
    }
}

/// Runs `requests` (IOVA, length) through the engine; returns the packets in order.
fn run(
    seed: u64,
    requests: &[(u64, u32)],
    latency: u64,
    rates: (f64, f64, f64),
    memory: HostMemory,
) -> Vec<(u64, Vec<u8>)> {
    let mut rng = StdRng::seed_from_u64(seed);
    let mut b = Bench::new(memory);
    b.bus.core.read_latency = latency;
    b.bus.core.ready_rate = rates.0;
    b.bus.core.valid_rate = rates.1;
    b.out.ready_rate = rates.2;
    let mut pending: VecDeque<(usize, u64, u32)> = requests.iter().enumerate().map(|(i, &(a, l))| (i, a, l)).collect();
    let mut packets = Vec::new();
    let budget = 200 * requests.len() as u64 + requests.iter().map(|r| u64::from(r.1)).sum::<u64>() + 10_000;
    for _ in 0..budget {
        let offer = pending.front().copied().filter(|_| rng.gen_bool(0.7));
        b.model.set_bit(b.valid, offer.is_some());
        if let Some((i, addr, len)) = offer {
            b.model.set(b.addr, addr);
            b.model.set(b.len, len.into());
            b.model.set(b.tag, (i % 256) as u64);
        }
        b.bus.drive(&mut b.model, &mut rng);
        b.out.drive(&mut b.model, &mut rng);
        b.model.eval();
        if offer.is_some() && b.model.get_bit(b.ready) {
            pending.pop_front();
        }
        b.bus.observe(&b.model);
        b.out.observe(&b.model);
        b.model.tick();
        while let Some(p) = b.out.pop_packet() {
            packets.push((p.user(), p.bytes()));
        }
        if packets.len() == requests.len() {
            return packets;
        }
    }
    panic!("only {} of {} requests answered within {budget} cycles", packets.len(), requests.len());
}

fn random_requests(rng: &mut StdRng, base: u64, n: usize) -> Vec<(u64, u32)> {
    (0..n)
        .map(|_| {
            let len = match rng.gen_range(0..10) {
                0 => 0,
                1..=4 => rng.gen_range(1..64),
                5..=7 => rng.gen_range(64..2048),
                _ => rng.gen_range(2048..9000),
            };
            let start = rng.gen_range(0..=(REGION as u32 - len)) as u64;
            (base + start, len)
        })
        .collect()
}

#[test]
fn dma_read_returns_memory_octets_in_order() {
    trace::on_failure("dma_read_returns_memory_octets_in_order", || {
        let mut rng = StdRng::seed_from_u64(0xd3a);
        let mut memory = HostMemory::new();
        let (_, base) = memory.alloc(REGION);
        let content: Vec<u8> = (0..REGION).map(|_| rng.gen()).collect();
        memory.poke(base, &content);
        let requests = random_requests(&mut rng, base, REQUESTS);
        let packets = run(1, &requests, 200, (0.8, 0.8, 0.7), memory);
        for (i, ((addr, len), (user, bytes))) in requests.iter().zip(&packets).enumerate() {
            let start = (addr - base) as usize;
            assert_eq!(*user, (i % 256) as u64, "request {i}: tag (error bit clear)");
            assert_eq!(bytes.len(), *len as usize, "request {i} at {addr:#x}: length");
            assert!(
                bytes[..] == content[start..start + *len as usize],
                "request {i} at {addr:#x} len {len}: octets differ"
            );
        }
    });
}

/// Runs `requests` on an always-ready bus and output, offered back to back, and returns the
/// cycles from the first bus beat taken to the last output beat, both counted.
fn busy_span(requests: &[(u64, u32)], memory: HostMemory) -> u64 {
    let mut rng = StdRng::seed_from_u64(7);
    let mut b = Bench::new(memory);
    let (mut next, mut received, mut cycle) = (0, 0usize, 0u64);
    let (mut first_beat, mut last_out) = (None, 0u64);
    while received < requests.len() && cycle < 100_000 {
        b.model.set_bit(b.valid, next < requests.len());
        if let Some(&(addr, len)) = requests.get(next) {
            b.model.set(b.addr, addr);
            b.model.set(b.len, len.into());
        }
        b.bus.drive(&mut b.model, &mut rng);
        b.out.drive(&mut b.model, &mut rng);
        b.model.eval();
        if next < requests.len() && b.model.get_bit(b.ready) {
            next += 1;
        }
        let (beats_before, out_before) = (b.bus.core.stats.beats_read, b.out.received.len());
        b.bus.observe(&b.model);
        b.out.observe(&b.model);
        if first_beat.is_none() && b.bus.core.stats.beats_read > beats_before {
            first_beat = Some(cycle);
        }
        if b.out.received.len() > out_before {
            last_out = cycle;
        }
        b.model.tick();
        cycle += 1;
        while b.out.pop_packet().is_some() {
            received += 1;
        }
    }
    assert_eq!(received, requests.len(), "every request answered within {cycle} cycles");
    last_out - first_beat.expect("a bus beat") + 1
}

/// The cycles `busy_span` must take: one a bus beat, and one more for a request whose last
/// octets need an output beat of their own once its bus beats are in (a request starting
/// inside a beat whose output beats are as many as its bus beats) or that has no bus beat
/// (an empty one); plus the two cycles of the output register and the register slice behind
/// it (`Dma`'s `rd_out`).
fn busy_cycles(requests: &[(u64, u32)]) -> u64 {
    let cycles = |&(addr, len): &(u64, u32)| {
        let (skip, len) = (addr % 8, u64::from(len));
        if len == 0 {
            return 1;
        }
        let (bus, out) = ((skip + len).div_ceil(8), len.div_ceil(8));
        bus + u64::from(skip != 0 && out == bus)
    };
    requests.iter().map(cycles).sum::<u64>() + 2
}

#[test]
fn dma_read_keeps_the_bus_busy() {
    // With the 200-cycle latency hidden by the queue of requests in flight, the R side takes
    // a bus beat every cycle: one request's first beat comes the cycle after the last of the
    // one before, whatever their alignment.
    let memory = || {
        let mut memory = HostMemory::new();
        let (_, base) = memory.alloc(REGION);
        (memory, base)
    };
    let base = memory().1;
    // Sixteen aligned 4 KiB reads.
    let aligned: Vec<(u64, u32)> = (0..16).map(|i| (base + i * 4096, 4096)).collect();
    // The payload reads of eight 4 KiB Writes at MULPDU 1460, each message at an odd offset:
    // segments of 1442 (the tagged header's 18 octets less), the last one the rest.
    let segments: Vec<(u64, u32)> = (0..8u64)
        .flat_map(|m| {
            let start = base + m * 4100 + 3;
            [(start, 1442), (start + 1442, 1442), (start + 2884, 4096 - 2884)]
        })
        .collect();
    // Short reads of every alignment, an empty one among them, behind a 4 KiB read: the AR
    // side has issued them all by the time their data is due, so only the R side counts.
    let short: Vec<(u64, u32)> = std::iter::once((base + 0x8000, 4096))
        .chain((0..24u64).map(|i| (base + i * 37, if i == 11 { 0 } else { 1 + (i as u32 * 5) % 40 })))
        .collect();
    for (name, requests) in [("aligned 4 KiB", &aligned), ("segments", &segments), ("short", &short)] {
        let (memory, at) = memory();
        assert_eq!(at, base, "the same IOVAs in a new memory");
        assert_eq!(
            busy_span(requests, memory),
            busy_cycles(requests),
            "{name}: cycles from the first bus beat to the last output beat"
        );
    }
}

#[test]
fn dma_read_flags_a_fault_and_recovers() {
    let mut memory = HostMemory::new();
    memory.fail_on_fault(false);
    let (_, base) = memory.alloc(8192);
    memory.poke(base, &[0x5A; 64]);
    // Reaching past the region (into the unmapped guard) faults; the next request is fine.
    let requests = [(base + 8192 - 16, 64), (base, 64)];
    let packets = run(3, &requests, 20, (1.0, 1.0, 1.0), memory);
    assert_eq!(packets[0].0 & 0x100, 0x100, "error bit on the faulting request");
    assert_eq!(packets[1], (1, vec![0x5A; 64]));
}
