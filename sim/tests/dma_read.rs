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

#[test]
fn dma_read_keeps_the_bus_busy() {
    // Back-to-back 4 KiB reads with the 200-cycle latency: the queue of requests in flight
    // must hide the latency (one beat per cycle once the pipe is full).
    let mut memory = HostMemory::new();
    let (_, base) = memory.alloc(REGION);
    let requests: Vec<(u64, u32)> = (0..16).map(|i| (base + (i % 16) * 4096, 4096)).collect();
    let mut rng = StdRng::seed_from_u64(7);
    let mut b = Bench::new(memory);
    let (mut next, mut received, mut cycles) = (0, 0usize, 0u64);
    while received < requests.len() && cycles < 100_000 {
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
        b.bus.observe(&b.model);
        b.out.observe(&b.model);
        b.model.tick();
        cycles += 1;
        while b.out.pop_packet().is_some() {
            received += 1;
        }
    }
    let beats = 16 * 4096 / 8;
    assert_eq!(received, requests.len());
    // The first data comes after the latency; then at most a few idle cycles per request.
    assert!(cycles < 200 + beats as u64 + 16 * 8, "{cycles} cycles for {beats} beats");
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
