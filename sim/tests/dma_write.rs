//! `host/dma_write` (in `rnic_host_dma`) in Verilator behind the IOMMU host-memory model:
//! random requests (any start octet, lengths 0..9000, across 4 KiB pages, overlapping
//! each other) with random bus latency and back-pressure. Host memory must end up exactly
//! as if the requests were applied in order — no octet outside a request touched — and each
//! completion must come in order, only once its octets are in memory.
use std::collections::VecDeque;

use rand::rngs::StdRng;
use rand::{Rng, SeedableRng};
use rnic_sim::axi::AxiSlave;
use rnic_sim::axis::{packet_beats, AxisSource};
use rnic_sim::host_memory::HostMemory;
use rnic_sim::{trace, Model, Port};

const REQUESTS: usize = 1_500;
const REGION: usize = 64 * 1024;

struct Bench {
    model: Model,
    bus: AxiSlave,
    data: AxisSource,
    valid: Port,
    ready: Port,
    addr: Port,
    len: Port,
    tag: Port,
    done: Port,
    done_tag: Port,
    done_error: Port,
}

impl Bench {
    fn new(memory: HostMemory) -> Bench {
        let mut model = Model::new("rnic_host_dma").expect("rnic_host_dma model");
        let bus = AxiSlave::new(&model, "m_axi", memory);
        let data = AxisSource::new(&model, "s_wr_axis");
        let p = |n: &str| model.port(n);
        let (valid, ready, addr, len, tag) =
            (p("s_wr_req_valid"), p("s_wr_req_ready"), p("s_wr_req_addr"), p("s_wr_req_len"), p("s_wr_req_tag"));
        let (done, done_tag, done_error) = (p("m_wr_done_valid"), p("m_wr_done_tag"), p("m_wr_done_error"));
        model.reset_for(4);
        Bench { model, bus, data, valid, ready, addr, len, tag, done, done_tag, done_error }
    }
}

struct Request {
    addr: u64,
    data: Vec<u8>,
}

/// Runs the requests; calls `on_done(index, error, memory)` at each completion, in order
/// of arrival, and returns the number of cycles taken.
fn run(
    seed: u64,
    requests: &[Request],
    latency: u64,
    rates: (f64, f64, f64),
    b: &mut Bench,
    mut on_done: impl FnMut(usize, bool, &HostMemory),
) -> u64 {
    let mut rng = StdRng::seed_from_u64(seed);
    b.bus.core.write_latency = latency;
    b.bus.core.ready_rate = rates.0;
    b.bus.core.valid_rate = rates.1;
    b.data.valid_rate = rates.2;
    let mut pending: VecDeque<usize> = (0..requests.len()).collect();
    let mut completed = 0;
    let budget = 300 * requests.len() as u64 + requests.iter().map(|r| r.data.len() as u64).sum::<u64>() + 10_000;
    for cycle in 0..budget {
        let offer = pending.front().copied().filter(|_| rng.gen_bool(0.7));
        b.model.set_bit(b.valid, offer.is_some());
        if let Some(i) = offer {
            b.model.set(b.addr, requests[i].addr);
            b.model.set(b.len, requests[i].data.len() as u64);
            b.model.set(b.tag, (i % 256) as u64);
        }
        b.bus.drive(&mut b.model, &mut rng);
        b.data.drive(&mut b.model, &mut rng);
        b.model.eval();
        if let Some(i) = offer.filter(|_| b.model.get_bit(b.ready)) {
            pending.pop_front();
            if !requests[i].data.is_empty() {
                b.data.push(packet_beats(&requests[i].data, 8, 0));
            }
        }
        if b.model.get_bit(b.done) {
            let tag = b.model.get(b.done_tag) as usize;
            assert_eq!(tag, completed % 256, "completion {completed}: out of order");
            on_done(completed, b.model.get_bit(b.done_error), b.bus.core.memory());
            completed += 1;
        }
        b.bus.observe(&b.model);
        b.data.observe(&b.model);
        b.model.tick();
        b.data.advance();
        if completed == requests.len() {
            return cycle + 1;
        }
    }
    panic!("only {completed} of {} requests completed within {budget} cycles", requests.len());
}

fn random_requests(rng: &mut StdRng, base: u64, n: usize) -> Vec<Request> {
    (0..n)
        .map(|_| {
            let len = match rng.gen_range(0..10) {
                0 => 0,
                1..=4 => rng.gen_range(1..64),
                5..=7 => rng.gen_range(64..2048),
                _ => rng.gen_range(2048..9000),
            };
            let start = rng.gen_range(0..=(REGION - len)) as u64;
            Request { addr: base + start, data: (0..len).map(|_| rng.gen()).collect() }
        })
        .collect()
}

#[test]
fn dma_write_places_exactly_the_octets_in_order() {
    trace::on_failure("dma_write_places_exactly_the_octets_in_order", || {
        let mut rng = StdRng::seed_from_u64(0x3717e);
        let mut memory = HostMemory::new();
        let (_, base) = memory.alloc(REGION);
        let background: Vec<u8> = (0..REGION).map(|_| rng.gen()).collect();
        memory.poke(base, &background);
        let requests = random_requests(&mut rng, base, REQUESTS);
        // Memory after each request, in order.
        let mut shadow = background.clone();
        let mut after = Vec::with_capacity(requests.len());
        for r in &requests {
            let at = (r.addr - base) as usize;
            shadow[at..at + r.data.len()].copy_from_slice(&r.data);
            after.push(shadow.clone());
        }
        let mut b = Bench::new(memory);
        run(1, &requests, 200, (0.8, 0.8, 0.8), &mut b, |i, error, memory| {
            assert!(!error, "request {i}: error completion");
            // Its octets are in memory, except where a later request in flight may
            // already have written over them.
            let r = &requests[i];
            let at = (r.addr - base) as usize;
            let mut now = vec![0; r.data.len()];
            memory.peek(r.addr, &mut now);
            let later = &requests[i + 1..requests.len().min(i + 10)];
            for (k, (&got, &want)) in now.iter().zip(&after[i][at..at + r.data.len()]).enumerate() {
                let address = r.addr + k as u64;
                let overwritten = later.iter().any(|l| (l.addr..l.addr + l.data.len() as u64).contains(&address));
                assert!(overwritten || got == want, "request {i}: octet {k} not in memory at its completion");
            }
        });
        let mut end = vec![0; REGION];
        b.bus.core.memory().peek(base, &mut end);
        let first_difference = end.iter().zip(&shadow).position(|(a, b)| a != b);
        assert_eq!(first_difference, None, "memory differs from the requests applied in order");
    });
}

#[test]
fn dma_write_streams_at_a_beat_per_cycle() {
    // Sixteen aligned 4 KiB writes with the 200-cycle response latency: the W beats go
    // out back to back; only the last response's latency is added.
    let mut memory = HostMemory::new();
    let (_, base) = memory.alloc(REGION);
    let requests: Vec<Request> =
        (0..16).map(|i| Request { addr: base + i * 4096, data: vec![i as u8; 4096] }).collect();
    let mut b = Bench::new(memory);
    let cycles = run(2, &requests, 200, (1.0, 1.0, 1.0), &mut b, |_, error, _| assert!(!error));
    let beats = 16 * 4096 / 8;
    // The requests are offered with 70% probability per cycle, at most a request's worth
    // of idle cycles each, so allow a small margin.
    assert!(cycles < beats + 200 + 16 * 8, "{cycles} cycles for {beats} beats");
}

#[test]
fn dma_write_reports_a_fault_and_writes_nothing_there() {
    let mut memory = HostMemory::new();
    memory.fail_on_fault(false);
    let (_, base) = memory.alloc(8192);
    // The first request runs past the region into the unmapped guard.
    let requests =
        vec![Request { addr: base + 8192 - 16, data: vec![1; 64] }, Request { addr: base, data: vec![2; 64] }];
    let mut b = Bench::new(memory);
    let mut errors = Vec::new();
    run(3, &requests, 20, (1.0, 1.0, 1.0), &mut b, |_, error, _| errors.push(error));
    assert_eq!(errors, vec![true, false]);
    let mut head = vec![0; 64];
    b.bus.core.memory().peek(base, &mut head);
    assert_eq!(head, vec![2; 64]);
}
