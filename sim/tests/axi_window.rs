//! `host/axi_window` (`rnic_host_axi_window`: 32 KiB at 2^62) in Verilator between the AXI
//! master model and two AXI slave models, the host (`m_axi`) and the device memory
//! (`d_axi`), each with its own memory, random latencies, back-pressure and gaps:
//! - random reads and writes inside the window and in host regions around it (just
//!   below and above it, and at addresses that differ from it in one high bit): each side
//!   maps only its own regions, so a burst sent to the wrong side faults; every read that
//!   no write raced returns its side's octets, in request order, and both memories end
//!   exactly as the writes, applied in order, leave them;
//! - the window adds one cycle to a read (its address slice, which makes `arready` and
//!   `awready` registers) and streams alternating sides at one beat per cycle;
//! - it keeps 32 bursts in flight each way, alternating sides, so that a 200-cycle host
//!   memory answers small bursts at one per cycle (Little's law; eight, the depth it had,
//!   held 64-octet RDMA Writes to 0.024 messages per cycle).
use rand::rngs::StdRng;
use rand::{Rng, SeedableRng};
use rnic_sim::axi::AxiSlave;
use rnic_sim::axi_master::AxiMaster;
use rnic_sim::host_memory::HostMemory;
use rnic_sim::{trace, Model};

/// The design's window.
const BASE: u64 = 1 << 62;
const WINDOW: u64 = 1 << 15;

/// A region of one side's memory and what the test expects in it.
struct Region {
    device: bool,
    iova: u64,
    expected: Vec<u8>,
}

struct Bench {
    model: Model,
    master: AxiMaster,
    host: AxiSlave,
    dev: AxiSlave,
    rng: StdRng,
    regions: Vec<Region>,
}

impl Bench {
    /// The device side maps the window; the host side a region of its own and regions at
    /// the window's edges and one bit away from it. All hold random octets.
    fn new(seed: u64) -> Bench {
        let mut rng = StdRng::seed_from_u64(seed);
        let mut host_memory = HostMemory::new();
        let mut dev_memory = HostMemory::new();
        let mut regions = Vec::new();
        let mut add = |memory: &mut HostMemory, device: bool, iova: u64, len: usize| {
            let content: Vec<u8> = (0..len).map(|_| rng.gen()).collect();
            memory.poke(iova, &content);
            regions.push(Region { device, iova, expected: content });
        };
        dev_memory.alloc_at(BASE, WINDOW as usize);
        add(&mut dev_memory, true, BASE, WINDOW as usize);
        let (_, iova) = host_memory.alloc(16384);
        add(&mut host_memory, false, iova, 16384);
        for iova in [BASE - 4096, BASE + WINDOW, BASE ^ (1 << 40), BASE | (1 << 63), BASE ^ (1 << 62)] {
            host_memory.alloc_at(iova, 4096);
            add(&mut host_memory, false, iova, 4096);
        }
        let mut model = Model::new("rnic_host_axi_window").expect("rnic_host_axi_window model");
        let master = AxiMaster::new(&model, "s_axi");
        let host = AxiSlave::new(&model, "m_axi", host_memory);
        let dev = AxiSlave::new(&model, "d_axi", dev_memory);
        model.reset_for(4);
        Bench { model, master, host, dev, rng: StdRng::seed_from_u64(seed ^ 0xb0b), regions }
    }

    /// Runs until the master has nothing in flight; panics after `limit` cycles.
    fn drain(&mut self, limit: u64) {
        let start = self.master.cycle();
        while !self.master.idle() {
            assert!(self.master.cycle() - start < limit, "requests still in flight after {limit} cycles");
            self.cycle();
        }
    }

    fn cycle(&mut self) {
        self.master.drive(&mut self.model, &mut self.rng);
        self.host.drive(&mut self.model, &mut self.rng);
        self.dev.drive(&mut self.model, &mut self.rng);
        self.model.eval();
        self.master.observe(&self.model);
        self.host.observe(&self.model);
        self.dev.observe(&self.model);
        self.model.tick();
    }

    /// The region holding `addr` and the offset in it.
    fn locate(&mut self, addr: u64) -> (&mut Region, usize) {
        let r = self
            .regions
            .iter_mut()
            .find(|r| (r.iova..r.iova + r.expected.len() as u64).contains(&addr))
            .expect("address in a region");
        let offset = (addr - r.iova) as usize;
        (r, offset)
    }

    /// Takes the finished requests: writes update the expected content, reads are checked
    /// against it unless a write raced them. Returns the reads checked.
    fn check(&mut self) -> usize {
        while let Some(w) = self.master.done_writes.pop_front() {
            assert_eq!(w.resp, 0, "write {} at {:#x}: BRESP", w.seq, w.req.addr);
            let (region, offset) = self.locate(w.req.addr & !7);
            for (k, (&data, &strb)) in w.data.iter().zip(&w.strb).enumerate() {
                for lane in (0..8).filter(|l| strb >> l & 1 != 0) {
                    region.expected[offset + 8 * k + lane] = (data >> (8 * lane)) as u8;
                }
            }
        }
        let mut checked = 0;
        while let Some(r) = self.master.done_reads.pop_front() {
            assert_eq!(r.resp, 0, "read {} at {:#x}: RRESP", r.seq, r.req.addr);
            if r.raced {
                continue;
            }
            let (region, offset) = self.locate(r.req.addr & !7);
            let side = if region.device { "device" } else { "host" };
            for (k, &got) in r.data.iter().enumerate() {
                let at = offset + 8 * k;
                let want = u64::from_le_bytes(region.expected[at..at + 8].try_into().expect("8 octets"));
                assert_eq!(
                    got,
                    want,
                    "read {} at {:#x} ({side} side, {} beats), beat {k}: {got:#018x}, expected {want:#018x}",
                    r.seq,
                    r.req.addr,
                    r.data.len()
                );
            }
            checked += 1;
        }
        checked
    }

    /// Every region of both memories holds what the test expects.
    fn check_memories(&self) {
        for r in &self.regions {
            let memory = if r.device { self.dev.core.memory() } else { self.host.core.memory() };
            let mut got = vec![0; r.expected.len()];
            memory.peek(r.iova, &mut got);
            if let Some(i) = (0..got.len()).find(|&i| got[i] != r.expected[i]) {
                panic!("memory at {:#x}: {:#04x}, expected {:#04x}", r.iova + i as u64, got[i], r.expected[i]);
            }
        }
    }
}

/// A random burst inside a random region (the window about half the time), within a page:
/// mostly short, some long, 30 % from an unaligned octet.
fn random_burst(rng: &mut StdRng, regions: &[Region]) -> (u64, usize) {
    let region = if rng.gen_bool(0.5) { &regions[0] } else { &regions[rng.gen_range(1..regions.len())] };
    let beats = match rng.gen_range(0..10) {
        0..=4 => rng.gen_range(1..=16),
        5..=7 => rng.gen_range(17..=64),
        _ => rng.gen_range(65..=256),
    };
    let page = rng.gen_range(0..region.expected.len() as u64 / 4096);
    let word = rng.gen_range(0..=512 - beats as u64);
    let lane = if rng.gen_bool(0.3) { rng.gen_range(0..8) } else { 0 };
    (region.iova + page * 4096 + word * 8 + lane, beats)
}

fn random_run(seed: u64, requests: usize) {
    let mut b = Bench::new(seed);
    let mut rng = StdRng::seed_from_u64(seed ^ 0x5eed);
    b.master.valid_rate = rng.gen_range(0.3..=1.0);
    b.master.ready_rate = rng.gen_range(0.3..=1.0);
    for side in [&mut b.host.core, &mut b.dev.core] {
        side.read_latency = rng.gen_range(1..=40);
        side.write_latency = rng.gen_range(1..=40);
        side.ready_rate = rng.gen_range(0.3..=1.0);
        side.valid_rate = rng.gen_range(0.3..=1.0);
    }
    let (mut reads, mut writes, mut checked, mut cycles) = (0, 0, 0, 0u64);
    while reads < requests || writes < requests || !b.master.idle() {
        cycles += 1;
        assert!(cycles < 1000 * requests as u64, "no progress: {reads} reads and {writes} writes issued");
        // Up to 12 bursts in flight each way: more than the window's route queues hold.
        if reads < requests && b.master.reads_pending() < 12 && rng.gen_bool(0.4) {
            let (addr, beats) = random_burst(&mut rng, &b.regions);
            b.master.read(addr, beats);
            reads += 1;
        }
        if writes < requests && b.master.writes_pending() < 12 && rng.gen_bool(0.4) {
            let (addr, beats) = random_burst(&mut rng, &b.regions);
            let data: Vec<u64> = (0..beats).map(|_| rng.gen()).collect();
            let mut strb: Vec<u8> = (0..beats).map(|_| if rng.gen_bool(0.5) { 0xFF } else { rng.gen() }).collect();
            strb[0] &= 0xFF << (addr % 8);
            b.master.write(addr, &data, &strb);
            writes += 1;
        }
        b.cycle();
        checked += b.check();
    }
    assert!(checked * 2 >= requests, "only {checked} of {requests} reads were free of races");
    assert_eq!(b.host.core.in_flight() + b.dev.core.in_flight(), 0, "bursts left in the slaves");
    b.check_memories();
}

#[test]
fn axi_window_routes_in_order() {
    trace::on_failure("axi_window_routes_in_order", || {
        for seed in 0..8 {
            random_run(seed, 1000);
        }
    });
}

#[test]
fn axi_window_adds_one_cycle_and_streams() {
    let mut b = Bench::new(1);
    for side in [&mut b.host.core, &mut b.dev.core] {
        side.read_latency = 1;
        side.write_latency = 1;
    }
    // One read on each side, alone: the first beat comes a cycle after the slave would
    // send it to the master directly (the address slice).
    let host = b.regions[1].iova;
    for addr in [BASE, host] {
        b.master.read(addr, 1);
        b.drain(100);
        let r = b.master.done_reads.pop_front().expect("read done");
        assert_eq!(r.first - r.start, 2, "AR to R through the window at {addr:#x}");
    }
    // Back-to-back 256-beat bursts alternating between the sides, each way.
    let bursts = 16;
    for i in 0..bursts {
        let addr = if i % 2 == 0 { BASE + (i / 2) * 2048 } else { host + (i / 2) * 2048 };
        b.master.write(addr, &[i; 256], &[0xFF; 256]);
    }
    let t0 = b.master.cycle();
    b.drain(10_000);
    let write_cycles = b.master.cycle() - t0;
    b.check();
    for i in 0..bursts {
        let addr = if i % 2 == 0 { BASE + (i / 2) * 2048 } else { host + (i / 2) * 2048 };
        b.master.read(addr, 256);
    }
    let t0 = b.master.cycle();
    b.drain(10_000);
    let read_cycles = b.master.cycle() - t0;
    assert_eq!(b.check(), bursts as usize, "reads checked");
    let beats = bursts as f64 * 256.0;
    eprintln!("alternating sides: writes {write_cycles} cycles, reads {read_cycles} cycles for {beats} beats");
    assert!(beats / write_cycles as f64 >= 0.95, "writes: {beats} beats took {write_cycles} cycles");
    assert!(beats / read_cycles as f64 >= 0.95, "reads: {beats} beats took {read_cycles} cycles");
    b.check_memories();
}

#[test]
fn axi_window_keeps_32_bursts_in_flight_each_way() {
    trace::on_failure("axi_window_keeps_32_bursts_in_flight_each_way", || {
        const LATENCY: u64 = 200;
        const BURSTS: u64 = 32;
        let mut b = Bench::new(2);
        for side in [&mut b.host.core, &mut b.dev.core] {
            side.read_latency = LATENCY;
            side.write_latency = LATENCY;
            side.ready_rate = 1.0;
            side.valid_rate = 1.0;
        }
        let host = b.regions[1].iova;
        let addr = |i: u64| if i.is_multiple_of(2) { BASE + i * 64 } else { host + i * 64 };
        // Every burst is taken before the first answer: one latency and the bursts, not
        // one latency per eight of them.
        for i in 0..BURSTS {
            b.master.write(addr(i), &[i; 1], &[0xFF; 1]);
        }
        let t0 = b.master.cycle();
        b.drain(10 * LATENCY);
        let write_cycles = b.master.cycle() - t0;
        b.check();
        for i in 0..BURSTS {
            b.master.read(addr(i), 1);
        }
        let t0 = b.master.cycle();
        b.drain(10 * LATENCY);
        let read_cycles = b.master.cycle() - t0;
        assert_eq!(b.check(), BURSTS as usize, "reads checked");
        eprintln!("{BURSTS} one-beat bursts at latency {LATENCY}: writes {write_cycles} cycles, reads {read_cycles}");
        let bound = LATENCY + 2 * BURSTS + 10;
        assert!(write_cycles <= bound, "writes: {write_cycles} cycles, more than {bound}: bursts waited for room");
        assert!(read_cycles <= bound, "reads: {read_cycles} cycles, more than {bound}: bursts waited for room");
        b.check_memories();
    });
}
