//! The host-side bus models without Verilator: the AXI4 slave core (host memory as DMA
//! target) against a behavioural AXI master, and the AXI-Lite master core (BAR0 access)
//! against a behavioural register file, with random gaps and back-pressure on both sides;
//! latencies, streaming rate, IOMMU faults and protocol checks.
use std::collections::{HashMap, VecDeque};
use std::ops::Range;

use rand::rngs::StdRng;
use rand::{Rng, SeedableRng};
use rnic_sim::axi::{
    AxiAddr, AxiMasterSignals, AxiSlaveCore, AxiSlaveSignals, BResp, RBeat, WBeat, BURST_INCR, RESP_DECERR, RESP_OKAY,
    RESP_SLVERR,
};
use rnic_sim::axil::{AxilMasterCore, AxilMasterSignals, AxilOp, AxilSlaveSignals};
use rnic_sim::axis::lane_mask;
use rnic_sim::host_memory::{Dir, FaultKind, HostMemory, PAGE};

const LANES: usize = 8;

fn coin(rng: &mut impl Rng, p: f64) -> bool {
    p >= 1.0 || (p > 0.0 && rng.gen_bool(p))
}

/// An INCR request of `beats` full-width beats at `addr`.
fn req(id: u64, addr: u64, beats: usize) -> AxiAddr {
    AxiAddr { id, addr, len: (beats - 1) as u8, size: LANES.trailing_zeros() as u8, burst: BURST_INCR }
}

/// Where a burst's beats lie: from its start rounded down to a beat.
fn span(req: &AxiAddr) -> Range<u64> {
    let base = req.addr & !(LANES as u64 - 1);
    base..base + (req.beats() * LANES) as u64
}

/// A behavioural AXI master obeying the rules: queued requests and beats are presented
/// with random gaps and held until taken, responses taken with random back-pressure and
/// checked (IDs, order, `rlast`, and read data where the test knows it).
#[derive(Default)]
struct TestMaster {
    valid_rate: f64,
    ready_rate: f64,
    aw: VecDeque<AxiAddr>,
    w: VecDeque<WBeat>,
    ar: VecDeque<AxiAddr>,
    out: AxiMasterSignals,
    /// Writes from queueing to their B.
    writes: VecDeque<AxiAddr>,
    /// Reads from queueing to their last beat: request, expected data, beats received.
    reads: VecDeque<(AxiAddr, Option<Vec<u8>>, usize)>,
    /// Cycles of AR handshakes and last-W handshakes; cycle and content of every B and R
    /// beat taken.
    ar_log: Vec<u64>,
    w_last_log: Vec<u64>,
    w_log: Vec<u64>,
    b_log: Vec<(u64, BResp)>,
    r_log: Vec<(u64, RBeat)>,
}

impl TestMaster {
    fn new(valid_rate: f64, ready_rate: f64) -> Self {
        TestMaster { valid_rate, ready_rate, ..Default::default() }
    }

    fn write(&mut self, req: AxiAddr, data: &[u8], strb: &[u64]) {
        assert_eq!(data.len(), req.beats() * LANES);
        self.aw.push_back(req);
        for (i, chunk) in data.chunks(LANES).enumerate() {
            self.w.push_back(WBeat { data: chunk.to_vec(), strb: strb[i], last: i + 1 == req.beats() });
        }
        self.writes.push_back(req);
    }

    fn read(&mut self, req: AxiAddr, expect: Option<Vec<u8>>) {
        self.ar.push_back(req);
        self.reads.push_back((req, expect, 0));
    }

    fn idle(&self) -> bool {
        self.writes.is_empty() && self.reads.is_empty()
    }

    /// Whether `range` overlaps an outstanding access the other way: AXI does not order
    /// reads against writes, so the shadow copy could not say what such a read returns.
    fn conflicts(&self, write: bool, range: &Range<u64>) -> bool {
        let overlaps = |r: &AxiAddr| {
            let s = span(r);
            s.start < range.end && range.start < s.end
        };
        if write {
            self.reads.iter().any(|(r, _, _)| overlaps(r))
        } else {
            self.writes.iter().any(overlaps)
        }
    }

    fn drive(&mut self, rng: &mut impl Rng) -> AxiMasterSignals {
        if self.out.aw.is_none() && !self.aw.is_empty() && coin(rng, self.valid_rate) {
            self.out.aw = self.aw.front().copied();
        }
        if self.out.w.is_none() && !self.w.is_empty() && coin(rng, self.valid_rate) {
            self.out.w = self.w.front().cloned();
        }
        if self.out.ar.is_none() && !self.ar.is_empty() && coin(rng, self.valid_rate) {
            self.out.ar = self.ar.front().copied();
        }
        self.out.bready = coin(rng, self.ready_rate);
        self.out.rready = coin(rng, self.ready_rate);
        self.out.clone()
    }

    fn edge(&mut self, s: &AxiSlaveSignals, cycle: u64) {
        if self.out.aw.is_some() && s.awready {
            self.out.aw = None;
            self.aw.pop_front();
        }
        if self.out.w.is_some() && s.wready {
            let beat = self.out.w.take().expect("presented");
            self.w.pop_front();
            self.w_log.push(cycle);
            if beat.last {
                self.w_last_log.push(cycle);
            }
        }
        if self.out.ar.is_some() && s.arready {
            self.out.ar = None;
            self.ar.pop_front();
            self.ar_log.push(cycle);
        }
        if let Some(b) = s.b.filter(|_| self.out.bready) {
            let req = self.writes.pop_front().expect("B with no write outstanding");
            assert_eq!(b.id, req.id, "B out of order at cycle {cycle}");
            self.b_log.push((cycle, b));
        }
        if let Some(r) = s.r.as_ref().filter(|_| self.out.rready) {
            let (req, expect, got) = self.reads.front_mut().expect("R with no read outstanding");
            assert_eq!(r.id, req.id, "R out of order at cycle {cycle}");
            assert_eq!(r.last, *got + 1 == req.beats(), "rlast on beat {got} of {req:?}");
            if let Some(expect) = expect.as_ref().filter(|_| r.resp == RESP_OKAY) {
                assert_eq!(r.data, expect[*got * LANES..][..LANES], "beat {got} of {req:?} at cycle {cycle}");
            }
            *got += 1;
            if r.last {
                self.reads.pop_front();
            }
            self.r_log.push((cycle, r.clone()));
        }
    }
}

/// One clock of slave and master.
fn step(slave: &mut AxiSlaveCore, master: &mut TestMaster, rng: &mut StdRng) {
    let cycle = slave.cycle();
    let s = slave.drive(rng).clone();
    let m = master.drive(rng);
    master.edge(&s, cycle);
    slave.edge(&m);
}

/// Clocks until the master has every response; panics after `limit` cycles.
fn run_until_idle(slave: &mut AxiSlaveCore, master: &mut TestMaster, rng: &mut StdRng, limit: u64) {
    for _ in 0..limit {
        if master.idle() {
            return;
        }
        step(slave, master, rng);
    }
    panic!("bus still busy after {limit} cycles");
}

/// Host memory with `count` regions of `pages` pages; returns their IOVAs.
fn memory_with(count: usize, pages: u64) -> (HostMemory, Vec<u64>) {
    let mut memory = HostMemory::new();
    let iovas = (0..count).map(|_| memory.alloc((pages * PAGE) as usize).1).collect();
    (memory, iovas)
}

fn peek(slave: &AxiSlaveCore, iova: u64, len: usize) -> Vec<u8> {
    let mut out = vec![0; len];
    slave.memory().peek(iova, &mut out);
    out
}

/// What host memory should hold: each region's bytes, kept by the test as it issues
/// writes (no read of the same bytes is outstanding then, see `TestMaster::conflicts`).
struct Shadow {
    regions: Vec<(u64, Vec<u8>)>,
}

impl Shadow {
    fn byte(&mut self, addr: u64) -> &mut u8 {
        let (start, bytes) =
            self.regions.iter_mut().find(|(s, b)| (*s..*s + b.len() as u64).contains(&addr)).expect("mapped");
        &mut bytes[(addr - *start) as usize]
    }
}

#[test]
fn random_bursts_with_back_pressure_match_a_shadow_copy() {
    let mut rng = StdRng::seed_from_u64(7);
    let pages = 3;
    let (memory, regions) = memory_with(3, pages);
    let mut slave = AxiSlaveCore::new(memory, LANES);
    slave.read_latency = 9;
    slave.write_latency = 5;
    slave.ready_rate = 0.6;
    slave.valid_rate = 0.7;
    slave.max_outstanding = 4;
    let mut master = TestMaster::new(0.7, 0.6);
    let mut shadow = Shadow { regions: regions.iter().map(|&r| (r, vec![0; (pages * PAGE) as usize])).collect() };
    let (bursts, mut issued, mut waited) = (3000, 0, 0);
    while issued < bursts {
        waited += 1;
        assert!(waited < 2_000_000, "only {issued} of {bursts} bursts issued");
        if master.aw.len() + master.ar.len() < 6 {
            let page = regions[rng.gen_range(0..regions.len())] + rng.gen_range(0..pages) * PAGE;
            let addr = page + rng.gen_range(0..PAGE);
            let room = ((page + PAGE - (addr & !(LANES as u64 - 1))) / LANES as u64) as usize;
            let max = if rng.gen_bool(0.1) { 256 } else { 16 };
            let r = req(rng.gen_range(0..16), addr, rng.gen_range(1..=room.min(max)));
            let write = rng.gen_bool(0.5);
            if !master.conflicts(write, &span(&r)) {
                let s = span(&r);
                if write {
                    let data: Vec<u8> = (0..s.end - s.start).map(|_| rng.gen()).collect();
                    let mut strb: Vec<u64> = (0..r.beats()).map(|_| rng.gen::<u8>().into()).collect();
                    strb[0] &= !lane_mask((addr % LANES as u64) as usize);
                    for (i, &b) in data.iter().enumerate() {
                        if strb[i / LANES] >> (i % LANES) & 1 != 0 {
                            *shadow.byte(s.start + i as u64) = b;
                        }
                    }
                    master.write(r, &data, &strb);
                } else {
                    master.read(r, Some(s.clone().map(|a| *shadow.byte(a)).collect()));
                }
                issued += 1;
            }
        }
        step(&mut slave, &mut master, &mut rng);
    }
    run_until_idle(&mut slave, &mut master, &mut rng, 100_000);
    for (start, bytes) in &shadow.regions {
        assert!(peek(&slave, *start, bytes.len()) == *bytes, "region {start:#x} differs from the shadow copy");
    }
    assert!(master.b_log.iter().all(|(_, b)| b.resp == RESP_OKAY), "an error response to a mapped write");
    assert!(master.r_log.iter().all(|(_, r)| r.resp == RESP_OKAY), "an error response to a mapped read");
    let stats = slave.stats;
    assert_eq!(stats.read_bursts + stats.write_bursts, bursts);
    assert_eq!(stats.beats_read, master.r_log.len() as u64);
    assert_eq!(stats.beats_written, master.w_log.len() as u64);
    assert!(slave.memory().faults().is_empty());
}

#[test]
fn latency_from_request_to_response_is_as_configured() {
    for (read_latency, write_latency) in [(None, None), (Some(37), Some(53)), (Some(1), Some(1))] {
        let (memory, regions) = memory_with(1, 1);
        let mut slave = AxiSlaveCore::new(memory, LANES);
        slave.read_latency = read_latency.unwrap_or(slave.read_latency);
        slave.write_latency = write_latency.unwrap_or(slave.write_latency);
        let mut master = TestMaster::new(1.0, 1.0);
        let mut rng = StdRng::seed_from_u64(1);
        master.read(req(1, regions[0], 4), None);
        master.write(req(2, regions[0] + 64, 4), &[0xab; 4 * LANES], &[0xff; 4]);
        run_until_idle(&mut slave, &mut master, &mut rng, 1000);
        let (ar, first_r) = (master.ar_log[0], master.r_log[0].0);
        assert_eq!(first_r - ar, read_latency.unwrap_or(200), "AR to first R");
        assert_eq!(master.b_log[0].0 - master.w_last_log[0], write_latency.unwrap_or(200), "last W to B");
        let beats: Vec<u64> = master.r_log.iter().map(|(c, _)| c - first_r).collect();
        assert_eq!(beats, [0, 1, 2, 3], "R beats back to back");
    }
}

#[test]
fn back_to_back_bursts_stream_at_one_beat_per_cycle() {
    let (memory, regions) = memory_with(1, 16);
    let mut slave = AxiSlaveCore::new(memory, LANES);
    let mut master = TestMaster::new(1.0, 1.0);
    let mut rng = StdRng::seed_from_u64(2);
    let (bursts, beats) = (64u64, 16usize);
    for i in 0..bursts {
        let r = req(i % 16, regions[0] + i * (beats * LANES) as u64, beats);
        let data: Vec<u8> = (0..beats * LANES).map(|b| (i as usize * 7 + b) as u8).collect();
        master.write(r, &data, &[0xff; 16]);
    }
    run_until_idle(&mut slave, &mut master, &mut rng, 10_000);
    let total = bursts * beats as u64;
    let (first_w, last_w) = (master.w_log[0], *master.w_log.last().expect("beats"));
    assert_eq!(last_w - first_w + 1, total, "write beats with bubbles");
    assert_eq!(master.b_log.last().expect("B").0, last_w + 200, "last B");

    for i in 0..bursts {
        let r = req(i % 16, regions[0] + i * (beats * LANES) as u64, beats);
        master.read(r, Some((0..beats * LANES).map(|b| (i as usize * 7 + b) as u8).collect()));
    }
    run_until_idle(&mut slave, &mut master, &mut rng, 10_000);
    let first_ar = master.ar_log[0];
    let last_r = master.r_log.last().expect("R").0;
    assert_eq!(last_r - first_ar, 200 + total - 1, "read beats with bubbles");
    let stats = slave.stats;
    assert_eq!((stats.beats_read, stats.beats_written), (total, total));
    assert_eq!((stats.read_bursts, stats.write_bursts), (bursts, bursts));
}

#[test]
fn host_memory_gives_zeroed_aligned_regions_at_guarded_iovas() {
    let mut memory = HostMemory::new();
    memory.fail_on_fault(false);
    let sizes = [1usize, 4096, 5000, 100];
    let regions: Vec<_> = sizes.iter().map(|&len| memory.alloc(len)).collect();
    for (&(ptr, iova), &len) in regions.iter().zip(&sizes) {
        let mapped = len.div_ceil(PAGE as usize);
        assert_eq!(ptr.as_ptr() as usize % PAGE as usize, 0, "CPU address not page aligned");
        assert_eq!(iova % PAGE, 0, "IOVA not page aligned");
        assert_ne!(iova, ptr.as_ptr() as u64, "IOVA is the CPU address");
        let mut bytes = vec![0xffu8; mapped * PAGE as usize];
        memory.peek(iova, &mut bytes);
        assert!(bytes.iter().all(|&b| b == 0), "memory not zeroed");
        // The pages on either side are guards.
        for guard in [iova - PAGE, iova + (mapped as u64) * PAGE] {
            assert_eq!(memory.dma_read(0, guard, &mut [0; 8]), Err(FaultKind::Unmapped), "{guard:#x} is mapped");
        }
    }
    assert_eq!(memory.regions(), sizes.len());
    memory.free(regions[1].1);
    assert_eq!(memory.dma_read(0, regions[1].1, &mut [0; 8]), Err(FaultKind::Unmapped), "freed region still mapped");
    assert_eq!(memory.regions(), sizes.len() - 1);
    assert_eq!(memory.faults().len(), 2 * sizes.len() + 1);
}

#[test]
fn dma_sees_what_the_cpu_wrote_through_the_pointer_and_back() {
    let mut memory = HostMemory::new();
    let (ptr, iova) = memory.alloc(64);
    // SAFETY: `ptr` is valid for 64 octets until `memory` frees it, and nothing else is
    // accessing the memory during these calls.
    unsafe { ptr.as_ptr().add(8).cast::<u64>().write_volatile(0x1122_3344_5566_7788u64.to_le()) };
    let mut out = [0; 8];
    memory.dma_read(0, iova + 8, &mut out).expect("mapped");
    assert_eq!(u64::from_le_bytes(out), 0x1122_3344_5566_7788);
    memory.dma_write(0, iova + 16, &[1, 2, 3, 4], &[true, false, true, true]).expect("mapped");
    // SAFETY: as above.
    let word = unsafe { ptr.as_ptr().add(16).cast::<u32>().read_volatile() };
    assert_eq!(u32::from_le(word), 0x0403_0001);
}

#[test]
fn external_memory_is_mapped_by_whole_pages_and_unmapped_without_being_freed() {
    // A program's buffer, not page aligned, inside memory it owns (as `ibv_reg_mr` maps
    // it). The owner reaches it through the same raw pointer as the mapping.
    let mut owner = vec![0u8; 3 * PAGE as usize];
    let base = owner.as_mut_ptr();
    let (offset, len) = (100usize, PAGE as usize + 50);
    // SAFETY: `offset + len` is inside `owner`.
    let at = |i: usize| unsafe { base.add(offset + i) };
    let mut mem = HostMemory::new();
    mem.fail_on_fault(false);
    // SAFETY: `owner` outlives the mapping (freed below, before `owner` is dropped).
    let iova = unsafe { mem.map_external(std::ptr::NonNull::new(at(0)).expect("not null"), len) };
    assert_eq!(iova % PAGE, at(0) as u64 % PAGE, "the IOVA keeps the offset in the page");
    assert_ne!(iova, at(0) as u64, "an IOVA is never the CPU address");
    mem.dma_write(0, iova, &[1, 2, 3], &[true, false, true]).expect("mapped");
    // SAFETY: inside `owner`; no other access runs meanwhile.
    let written = unsafe { [at(0).read(), at(1).read(), at(2).read()] };
    assert_eq!(written, [1, 0, 3], "the device wrote the owner's octets, strobes obeyed");
    // SAFETY: as above.
    unsafe { at(len - 1).write(9) };
    let mut last = [0u8; 1];
    mem.dma_read(1, iova + len as u64 - 1, &mut last).expect("mapped");
    assert_eq!(last, [9], "the device reads what the owner wrote");
    let page_start = iova - iova % PAGE;
    assert_eq!(mem.dma_read(2, page_start - 1, &mut last), Err(FaultKind::Unmapped), "the guard page below");
    mem.free(iova);
    assert_eq!(mem.dma_read(3, iova, &mut last), Err(FaultKind::Unmapped), "unmapped after free");
    assert_eq!(mem.regions(), 0);
    drop(mem);
    owner[offset] = 7;
    assert_eq!(owner[offset], 7, "the owner's memory is still its own");
}

#[test]
fn the_access_log_records_what_reached_memory_by_runs_of_enabled_octets() {
    let mut memory = HostMemory::new();
    memory.fail_on_fault(false);
    let (_, iova) = memory.alloc(64);
    memory.dma_write(0, iova, &[9; 4], &[true; 4]).expect("mapped");
    assert!(memory.take_accesses().is_empty(), "nothing is logged unless asked");
    memory.log_accesses(true);
    memory.dma_write(7, iova + 8, &[1; 8], &[true, true, false, false, true, false, true, true]).expect("mapped");
    memory.dma_read(8, iova + 16, &mut [0; 8]).expect("mapped");
    assert_eq!(memory.dma_write(9, iova + PAGE, &[1], &[true]), Err(FaultKind::Unmapped));
    let log: Vec<_> = memory.take_accesses().iter().map(|a| (a.cycle, a.dir, a.iova - iova, a.len)).collect();
    assert_eq!(
        log,
        [(7, Dir::Write, 8, 2), (7, Dir::Write, 12, 1), (7, Dir::Write, 14, 2), (8, Dir::Read, 16, 8)],
        "write runs and the read; the faulting write reached nothing"
    );
    assert!(memory.take_accesses().is_empty(), "taken");
}

/// A slave in record-only fault mode over one region of `pages` pages.
fn faulting_slave(pages: u64) -> (AxiSlaveCore, u64) {
    let (mut memory, regions) = memory_with(1, pages);
    memory.fail_on_fault(false);
    let mut slave = AxiSlaveCore::new(memory, LANES);
    slave.read_latency = 3;
    slave.write_latency = 3;
    (slave, regions[0])
}

#[test]
fn write_to_a_guard_page_faults_and_writes_nothing() {
    let (mut slave, region) = faulting_slave(1);
    let mut master = TestMaster::new(1.0, 1.0);
    let mut rng = StdRng::seed_from_u64(3);
    let guard = region + PAGE;
    master.write(req(5, guard, 4), &[0x5a; 4 * LANES], &[0xff; 4]);
    // A good write after it still goes through.
    master.write(req(6, region, 1), &[0x77; LANES], &[0xff]);
    run_until_idle(&mut slave, &mut master, &mut rng, 1000);
    assert_eq!(master.b_log[0].1, BResp { id: 5, resp: RESP_DECERR });
    assert_eq!(master.b_log[1].1, BResp { id: 6, resp: RESP_OKAY });
    let fault = &slave.memory().faults()[0];
    assert_eq!((fault.dir, fault.iova, fault.len, fault.kind), (Dir::Write, guard, 32, FaultKind::Unmapped));
    assert_eq!(fault.region_below, Some((region, PAGE as usize)));
    assert_eq!(slave.memory().faults().len(), 1);
    let mut expect = vec![0u8; PAGE as usize];
    expect[..LANES].fill(0x77);
    assert!(peek(&slave, region, PAGE as usize) == expect, "the faulting write reached memory");
}

#[test]
fn burst_across_4k_faults_and_writes_nothing() {
    let (mut slave, region) = faulting_slave(2);
    let mut master = TestMaster::new(1.0, 1.0);
    let mut rng = StdRng::seed_from_u64(4);
    let start = region + PAGE - 16;
    master.write(req(1, start, 4), &[0x5a; 4 * LANES], &[0xff; 4]);
    master.read(req(2, start, 4), None);
    run_until_idle(&mut slave, &mut master, &mut rng, 1000);
    assert_eq!(master.b_log[0].1.resp, RESP_SLVERR);
    assert_eq!(master.r_log.len(), 4, "an error read still returns every beat");
    assert!(master.r_log.iter().all(|(_, r)| r.resp == RESP_SLVERR && r.data == [0; LANES]));
    // The read's data is due before the write's response, so its fault comes first.
    let kinds: Vec<_> = slave.memory().faults().iter().map(|f| (f.dir, f.iova, f.len, f.kind)).collect();
    let crossing = FaultKind::CrossesPage;
    assert_eq!(kinds, [(Dir::Read, start, 32, crossing), (Dir::Write, start, 32, crossing)]);
    assert!(peek(&slave, region, 2 * PAGE as usize).iter().all(|&b| b == 0), "the faulting write reached memory");
}

#[test]
fn read_of_a_freed_region_faults_on_every_beat() {
    let (mut slave, region) = faulting_slave(1);
    slave.memory_mut().free(region);
    let mut master = TestMaster::new(1.0, 1.0);
    let mut rng = StdRng::seed_from_u64(5);
    master.read(req(9, region, 3), None);
    run_until_idle(&mut slave, &mut master, &mut rng, 1000);
    let beats: Vec<_> = master.r_log.iter().map(|(_, r)| (r.id, r.resp, r.last)).collect();
    assert_eq!(beats, [(9, RESP_DECERR, false), (9, RESP_DECERR, false), (9, RESP_DECERR, true)]);
    assert_eq!(slave.memory().faults()[0].kind, FaultKind::Unmapped);
}

#[test]
#[should_panic(expected = "DMA write fault: 8 octets at IOVA")]
fn a_fault_panics_by_default() {
    let (memory, regions) = memory_with(1, 1);
    let mut slave = AxiSlaveCore::new(memory, LANES);
    let mut master = TestMaster::new(1.0, 1.0);
    master.write(req(0, regions[0] - PAGE, 1), &[1; LANES], &[0xff]);
    run_until_idle(&mut slave, &mut master, &mut StdRng::seed_from_u64(6), 1000);
}

/// Drives the slave core with hand-made master signals, one entry per cycle.
fn drive_by_hand(slave: &mut AxiSlaveCore, cycles: &[AxiMasterSignals]) {
    let mut rng = StdRng::seed_from_u64(0);
    for m in cycles {
        slave.drive(&mut rng);
        slave.edge(m);
    }
}

fn stalled_slave() -> AxiSlaveCore {
    let mut slave = AxiSlaveCore::new(HostMemory::new(), LANES);
    slave.ready_rate = 0.0;
    slave
}

#[test]
#[should_panic(expected = "AXI master, AW channel: payload changed while waiting for ready")]
fn aw_payload_change_before_ready_panics() {
    let first = AxiMasterSignals { aw: Some(req(0, 0x1000, 2)), ..Default::default() };
    let second = AxiMasterSignals { aw: Some(req(0, 0x1008, 2)), ..Default::default() };
    drive_by_hand(&mut stalled_slave(), &[first.clone(), first, second]);
}

#[test]
#[should_panic(expected = "AXI master, AR channel: valid dropped before ready")]
fn ar_valid_dropped_before_ready_panics() {
    let offer = AxiMasterSignals { ar: Some(req(0, 0x1000, 2)), ..Default::default() };
    drive_by_hand(&mut stalled_slave(), &[offer, AxiMasterSignals::default()]);
}

/// AW of `beats` beats, then its W beats with `wlast` on beat `last_on`.
fn write_with_wlast_on(beats: usize, last_on: usize) {
    let (memory, regions) = memory_with(1, 1);
    let mut slave = AxiSlaveCore::new(memory, LANES);
    let mut cycles = vec![AxiMasterSignals { aw: Some(req(0, regions[0], beats)), ..Default::default() }];
    cycles.extend((0..beats).map(|i| AxiMasterSignals {
        w: Some(WBeat { data: vec![0; LANES], strb: 0xff, last: i == last_on }),
        ..Default::default()
    }));
    drive_by_hand(&mut slave, &cycles);
}

#[test]
fn wlast_on_the_right_beat_is_accepted() {
    write_with_wlast_on(4, 3);
}

#[test]
#[should_panic(expected = "wlast true on beat 1 of a 4-beat burst")]
fn early_wlast_panics() {
    write_with_wlast_on(4, 1);
}

#[test]
#[should_panic(expected = "wlast false on beat 3 of a 4-beat burst")]
fn missing_wlast_panics() {
    write_with_wlast_on(4, 9);
}

#[test]
#[should_panic(expected = "only INCR bursts are supported")]
fn wrap_burst_panics() {
    let wrap = AxiAddr { burst: 2, ..req(0, 0x1000, 4) };
    let cycle = AxiMasterSignals { ar: Some(wrap), ..Default::default() };
    drive_by_hand(&mut AxiSlaveCore::new(HostMemory::new(), LANES), &[cycle]);
}

#[test]
#[should_panic(expected = "only full-width 8-octet beats are supported")]
fn narrow_beats_panic() {
    let narrow = AxiAddr { size: 2, ..req(0, 0x1000, 4) };
    let cycle = AxiMasterSignals { aw: Some(narrow), ..Default::default() };
    drive_by_hand(&mut AxiSlaveCore::new(HostMemory::new(), LANES), &[cycle]);
}

#[test]
#[should_panic(expected = "enables lanes below the unaligned start")]
fn strobes_below_an_unaligned_start_panic() {
    let cycles = [
        AxiMasterSignals { aw: Some(req(0, 0x1003, 1)), ..Default::default() },
        AxiMasterSignals { w: Some(WBeat { data: vec![0; LANES], strb: 0xfc, last: true }), ..Default::default() },
    ];
    drive_by_hand(&mut AxiSlaveCore::new(HostMemory::new(), LANES), &cycles);
}

/// A behavioural AXI-Lite register file: takes AW and W independently, with random
/// readiness, and answers after a random delay; offsets at 0x1000 and above answer SLVERR.
#[derive(Default)]
struct RegisterFile {
    regs: HashMap<u32, u32>,
    ready_rate: f64,
    valid_rate: f64,
    aw: Option<u32>,
    w: Option<(u32, u8)>,
    ar: Option<u32>,
    b: Option<u8>,
    r: Option<(u32, u8)>,
    /// Writes whose data came before their address.
    w_first: u32,
}

impl RegisterFile {
    /// One clock: the outputs for this cycle (independent of `m`), then the edge.
    fn cycle(&mut self, m: &AxilMasterSignals, rng: &mut impl Rng) -> AxilSlaveSignals {
        if let (None, Some(addr), Some((data, strb))) = (self.b, self.aw, self.w) {
            if coin(rng, self.valid_rate) {
                self.b = Some(if addr < 0x1000 { RESP_OKAY } else { RESP_SLVERR });
                let old = self.regs.get(&addr).copied().unwrap_or(0);
                let mask = (0..4).filter(|i| strb >> i & 1 != 0).fold(0u32, |m, i| m | 0xff << (8 * i));
                self.regs.insert(addr, old & !mask | data & mask);
            }
        }
        if let (None, Some(addr)) = (self.r, self.ar) {
            if coin(rng, self.valid_rate) {
                self.r = Some((self.regs.get(&addr).copied().unwrap_or(0), RESP_OKAY));
            }
        }
        let s = AxilSlaveSignals {
            awready: self.aw.is_none() && coin(rng, self.ready_rate),
            wready: self.w.is_none() && coin(rng, self.ready_rate),
            b: self.b,
            arready: self.ar.is_none() && coin(rng, self.ready_rate),
            r: self.r,
        };
        if s.awready && m.aw.is_some() {
            self.aw = m.aw;
        }
        if s.wready && m.w.is_some() {
            self.w_first += u32::from(self.aw.is_none());
            self.w = m.w;
        }
        if s.arready && m.ar.is_some() {
            self.ar = m.ar;
        }
        if s.b.is_some() && m.bready {
            (self.b, self.aw, self.w) = (None, None, None);
        }
        if s.r.is_some() && m.rready {
            (self.r, self.ar) = (None, None);
        }
        s
    }
}

#[test]
fn axil_master_against_a_register_file_with_random_delays() {
    let mut rng = StdRng::seed_from_u64(8);
    let mut master = AxilMasterCore::new();
    master.valid_rate = 0.4;
    master.ready_rate = 0.5;
    let mut slave = RegisterFile { ready_rate: 0.5, valid_rate: 0.3, ..Default::default() };
    let mut shadow: HashMap<u32, u32> = HashMap::new();
    let mut expected = VecDeque::new();
    for _ in 0..2000 {
        let addr = 4 * rng.gen_range(0..16);
        let op = if rng.gen_bool(0.5) {
            AxilOp::Write { addr, data: rng.gen(), strb: rng.gen_range(0..16) }
        } else {
            AxilOp::Read { addr }
        };
        let want = match op {
            AxilOp::Read { addr } => shadow.get(&addr).copied().unwrap_or(0),
            AxilOp::Write { addr, data, strb } => {
                let mask = (0..4).filter(|i| strb >> i & 1 != 0).fold(0u32, |m, i| m | 0xff << (8 * i));
                let old = shadow.get(&addr).copied().unwrap_or(0);
                shadow.insert(addr, old & !mask | data & mask);
                0
            }
        };
        master.push(op);
        expected.push_back((op, want));
    }
    for _ in 0..1_000_000 {
        if expected.is_empty() {
            break;
        }
        let m = *master.drive(&mut rng);
        let s = slave.cycle(&m, &mut rng);
        master.edge(&s);
        while let Some(done) = master.pop_done() {
            let (op, want) = expected.pop_front().expect("a completion nobody asked for");
            assert_eq!((done.op, done.data, done.resp), (op, want, RESP_OKAY));
            assert!(done.finished > done.issued);
        }
    }
    assert!(expected.is_empty(), "{} accesses never completed", expected.len());
    assert!(master.idle());
    assert!(slave.w_first > 0, "W never went before AW");
}

#[test]
fn axil_blocking_run_completes_and_reports_errors() {
    let (mut rng, mut slave_rng) = (StdRng::seed_from_u64(9), StdRng::seed_from_u64(10));
    let mut master = AxilMasterCore::new();
    let mut slave = RegisterFile { ready_rate: 0.3, valid_rate: 0.3, ..Default::default() };
    let mut clock = |m: &AxilMasterSignals| slave.cycle(m, &mut slave_rng);
    let write = master.run(AxilOp::Write { addr: 0x40, data: 0xdead_beef, strb: 0xf }, &mut rng, 1000, &mut clock);
    assert_eq!(write.resp, RESP_OKAY);
    let read = master.run(AxilOp::Read { addr: 0x40 }, &mut rng, 1000, &mut clock);
    assert_eq!(read.data, 0xdead_beef);
    let bad = master.run(AxilOp::Write { addr: 0x2000, data: 1, strb: 0xf }, &mut rng, 1000, &mut clock);
    assert_eq!(bad.resp, RESP_SLVERR);
}

#[test]
#[should_panic(expected = "AXI-Lite read of 0x8 not complete after 50 cycles (read of 0x8: address taken false")]
fn axil_blocking_run_times_out() {
    let mut master = AxilMasterCore::new();
    let mut slave = RegisterFile::default(); // never ready
    let mut rng = StdRng::seed_from_u64(11);
    master.run(AxilOp::Read { addr: 8 }, &mut StdRng::seed_from_u64(12), 50, |m| slave.cycle(m, &mut rng));
}

#[test]
#[should_panic(expected = "AXI-Lite slave, B channel: BVALID before both the write's address and data were taken")]
fn axil_response_before_the_data_panics() {
    let mut master = AxilMasterCore::new();
    master.push(AxilOp::Write { addr: 0, data: 1, strb: 0xf });
    let mut rng = StdRng::seed_from_u64(13);
    master.drive(&mut rng);
    master.edge(&AxilSlaveSignals { awready: true, ..Default::default() });
    master.drive(&mut rng);
    master.edge(&AxilSlaveSignals { b: Some(RESP_OKAY), ..Default::default() });
}

#[test]
#[should_panic(expected = "AXI-Lite slave, R channel: valid dropped before ready")]
fn axil_read_data_dropped_before_ready_panics() {
    let mut master = AxilMasterCore::new();
    master.ready_rate = 0.0;
    master.push(AxilOp::Read { addr: 0 });
    let mut rng = StdRng::seed_from_u64(14);
    for s in [
        AxilSlaveSignals { arready: true, ..Default::default() },
        AxilSlaveSignals { r: Some((5, RESP_OKAY)), ..Default::default() },
        AxilSlaveSignals::default(),
    ] {
        master.drive(&mut rng);
        master.edge(&s);
    }
}
