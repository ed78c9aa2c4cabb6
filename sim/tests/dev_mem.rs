//! `host/dev_mem` (`rnic_host_dev_mem`, 4096 words) in Verilator, driven by the AXI master
//! model and a host-port driver, against a Rust copy of the memory:
//! - random bursts (any start octet, 1..=256 beats within 4 KiB, random strobes and random
//!   high address bits, which must not matter), reads and writes interleaved with random
//!   gaps and RREADY/BREADY back-pressure, random host 32-bit reads and writes (offsets
//!   past 32 KiB wrap): every read that no write raced returns exactly the copy's words,
//!   every host read answers the next cycle and holds, and the whole memory matches at
//!   the end;
//! - rates: long and short back-to-back bursts at full rate stream one beat per cycle;
//! - latencies: the first R beat 3 cycles after AR (R from registers), B the cycle after
//!   the last W beat.
use std::collections::VecDeque;

use rand::rngs::StdRng;
use rand::{Rng, SeedableRng};
use rnic_sim::axi::AxiAddr;
use rnic_sim::axi_master::AxiMaster;
use rnic_sim::{trace, Model, Port};

/// Words of the design (`DevMem::<12>`).
const WORDS: usize = 4096;
/// Octet offsets used of an address.
const SPAN: u64 = WORDS as u64 * 8;

struct Bench {
    model: Model,
    axi: AxiMaster,
    rng: StdRng,
    h_wr_en: Port,
    h_wr_addr: Port,
    h_wr_data: Port,
    h_wr_strb: Port,
    h_rd_en: Port,
    h_rd_addr: Port,
    h_rd_data: Port,
}

/// One host-port access: octet offset, and for a write its data and strobes.
#[derive(Clone, Copy, Debug)]
struct HostWrite {
    addr: u16,
    data: u32,
    strb: u8,
}

impl Bench {
    fn new(seed: u64) -> Bench {
        let mut model = Model::new("rnic_host_dev_mem").expect("rnic_host_dev_mem model");
        let axi = AxiMaster::new(&model, "s_axi");
        let p = |n: &str| model.port(n);
        let (h_wr_en, h_wr_addr, h_wr_data) = (p("h_wr_en"), p("h_wr_addr"), p("h_wr_data"));
        let (h_wr_strb, h_rd_en, h_rd_addr, h_rd_data) = (p("h_wr_strb"), p("h_rd_en"), p("h_rd_addr"), p("h_rd_data"));
        model.reset_for(4);
        let rng = StdRng::seed_from_u64(seed);
        Bench { model, axi, rng, h_wr_en, h_wr_addr, h_wr_data, h_wr_strb, h_rd_en, h_rd_addr, h_rd_data }
    }

    /// Runs until the master has nothing in flight; panics after `limit` cycles.
    fn drain(&mut self, limit: u64) {
        let start = self.axi.cycle();
        while !self.axi.idle() {
            assert!(self.axi.cycle() - start < limit, "requests still in flight after {limit} cycles");
            self.cycle(None, None, |_| {});
        }
    }

    /// One clock cycle with these host accesses; `between` runs after the AXI master has
    /// seen the cycle's handshakes. Returns `h_rd_data` as it was during the cycle.
    fn cycle(&mut self, wr: Option<HostWrite>, rd: Option<u16>, between: impl FnOnce(&mut AxiMaster)) -> u32 {
        let m = &mut self.model;
        m.set_bit(self.h_wr_en, wr.is_some());
        if let Some(w) = wr {
            m.set(self.h_wr_addr, w.addr.into());
            m.set(self.h_wr_data, w.data.into());
            m.set(self.h_wr_strb, w.strb.into());
        }
        m.set_bit(self.h_rd_en, rd.is_some());
        m.set(self.h_rd_addr, rd.unwrap_or(0).into());
        self.axi.drive(m, &mut self.rng);
        m.eval();
        let h_rd_data = m.get(self.h_rd_data) as u32;
        self.axi.observe(m);
        between(&mut self.axi);
        m.tick();
        h_rd_data
    }
}

/// The word and half (0: lanes 0..3) a host offset reaches.
fn host_slot(addr: u16) -> (usize, u32) {
    ((usize::from(addr) >> 3) % WORDS, u32::from(addr >> 2) & 1)
}

/// The memory as it is once every write answered so far has landed.
struct Reference {
    words: Vec<u64>,
}

impl Reference {
    fn word_of(addr: u64) -> usize {
        ((addr % SPAN) >> 3) as usize
    }

    fn apply_axi(&mut self, addr: u64, data: &[u64], strb: &[u8]) {
        for (k, (&d, &s)) in data.iter().zip(strb).enumerate() {
            let w = &mut self.words[(Self::word_of(addr) + k) % WORDS];
            let mask = (0..8).filter(|l| s >> l & 1 != 0).fold(0u64, |m, l| m | 0xFF << (8 * l));
            *w = (*w & !mask) | (d & mask);
        }
    }

    fn apply_host(&mut self, h: HostWrite) {
        let (word, half) = host_slot(h.addr);
        let mask = (0..4).filter(|l| h.strb >> l & 1 != 0).fold(0u64, |m, l| m | 0xFF << (8 * l)) << (32 * half);
        let w = &mut self.words[word];
        *w = (*w & !mask) | ((u64::from(h.data) << (32 * half)) & mask);
    }

    fn host_half(&self, addr: u16) -> u32 {
        let (word, half) = host_slot(addr);
        (self.words[word] >> (32 * half)) as u32
    }
}

/// Whether a burst reaches `word`.
fn covers(req: &AxiAddr, word: usize) -> bool {
    (word + WORDS - Reference::word_of(req.addr)) % WORDS < req.beats()
}

/// A random burst that stays in its 4 KiB page: mostly short, some long, 30 % from an
/// unaligned octet; `high` is put in the address bits above the RAM's.
fn random_burst(rng: &mut StdRng, high: u64) -> (u64, usize) {
    let beats = match rng.gen_range(0..10) {
        0..=4 => rng.gen_range(1..=16),
        5..=7 => rng.gen_range(17..=64),
        _ => rng.gen_range(65..=256),
    };
    let page = rng.gen_range(0..SPAN / 4096);
    let word = rng.gen_range(0..=512 - beats as u64);
    let lane = if rng.gen_bool(0.3) { rng.gen_range(0..8) } else { 0 };
    (high | (page * 4096) | (word * 8) | lane, beats)
}

/// Write data and strobes for a burst at `addr`: lanes below an unaligned start off.
fn random_data(rng: &mut StdRng, addr: u64, beats: usize) -> (Vec<u64>, Vec<u8>) {
    let data = (0..beats).map(|_| rng.gen()).collect();
    let mut strb: Vec<u8> = (0..beats).map(|_| if rng.gen_bool(0.5) { 0xFF } else { rng.gen() }).collect();
    strb[0] &= 0xFF << (addr % 8);
    (data, strb)
}

/// Fills the memory with random words through the host port; returns the copy.
fn fill(b: &mut Bench) -> Reference {
    let words: Vec<u64> = (0..WORDS).map(|_| b.rng.gen()).collect();
    for (i, &w) in words.iter().enumerate() {
        for half in 0..2 {
            let h = HostWrite { addr: (i * 8 + half * 4) as u16, data: (w >> (32 * half)) as u32, strb: 0xF };
            b.cycle(Some(h), None, |_| {});
        }
    }
    Reference { words }
}

/// Reads every word over AXI (256-beat bursts) and through the host port, and compares.
fn check_all(b: &mut Bench, reference: &Reference) {
    for page in 0..WORDS / 256 {
        b.axi.read(page as u64 * 256 * 8, 256);
    }
    let mut last = None;
    for i in 0..WORDS * 2 + 1 {
        let rd = (i < WORDS * 2).then(|| (i * 4) as u16);
        let seen = b.cycle(None, rd, |_| {});
        if let Some(addr) = last {
            assert_eq!(seen, reference.host_half(addr), "host read of offset {addr:#x} after the run");
        }
        last = rd;
    }
    b.drain(100_000);
    for read in b.axi.done_reads.drain(..) {
        let first = Reference::word_of(read.req.addr);
        for (k, &got) in read.data.iter().enumerate() {
            let want = reference.words[first + k];
            assert_eq!(got, want, "word {} read over AXI after the run: {got:#018x}, expected {want:#018x}", first + k);
        }
    }
}

fn random_run(seed: u64, requests: usize) {
    let mut b = Bench::new(seed);
    let mut reference = fill(&mut b);
    let mut rng = StdRng::seed_from_u64(seed ^ 0x5eed);
    b.axi.valid_rate = rng.gen_range(0.3..=1.0);
    b.axi.ready_rate = rng.gen_range(0.3..=1.0);
    let host_rate = rng.gen_range(0.02..0.2);
    // Address bits the RAM does not use, set at random (the same for the whole run, so
    // that the master model sees which bursts overlap).
    let high = rng.gen::<u64>() & !(SPAN - 1);
    let (mut reads, mut writes, mut checked, mut host_reads, mut host_checked) = (0, 0, 0usize, 0usize, 0usize);
    // Host writes so far, (cycle, word), for telling which reads they raced; reads finish
    // in AR order, so those older than the last finished read's AR are dropped.
    let mut host_writes: VecDeque<(u64, usize)> = VecDeque::new();
    // The last host read: its offset and expected half (None if an AXI write raced it),
    // then the value it showed, which must hold until the next host read answers.
    let mut host_read: Option<(u16, Option<u32>)> = None;
    let mut host_held: Option<u32> = None;
    let mut cycles = 0u64;
    while reads < requests || writes < requests || !b.axi.idle() {
        cycles += 1;
        assert!(cycles < 400 * requests as u64 + 100_000, "no progress: {reads} reads and {writes} writes issued");
        if reads < requests && b.axi.reads_pending() < 4 && rng.gen_bool(0.3) {
            let (addr, beats) = random_burst(&mut rng, high);
            b.axi.read(addr, beats);
            reads += 1;
        }
        if writes < requests && b.axi.writes_pending() < 4 && rng.gen_bool(0.3) {
            let (addr, beats) = random_burst(&mut rng, high);
            let (data, strb) = random_data(&mut rng, addr, beats);
            b.axi.write(addr, &data, &strb);
            writes += 1;
        }
        // Host writes keep off words an AXI write in flight may still write: which of the
        // two lands last is not defined, and the copy could not follow.
        let wr = rng
            .gen_bool(host_rate)
            .then(|| HostWrite { addr: rng.gen(), data: rng.gen(), strb: rng.gen_range(0..16) })
            .filter(|h| !b.axi.writes_in_flight().any(|w| covers(w, host_slot(h.addr).0)));
        let rd = rng.gen_bool(host_rate).then(|| rng.gen::<u16>());
        host_reads += usize::from(rd.is_some());
        let mut this_read = None;
        let seen = b.cycle(wr, rd, |axi| {
            // Writes answered this cycle have landed; a host read of this cycle sees them
            // but not a host write of the same cycle (the RAM reads before it writes), and
            // an AXI write still in flight to its word may go either way.
            for w in axi.done_writes.drain(..) {
                assert_eq!(w.resp, 0, "write {}: BRESP", w.seq);
                reference.apply_axi(w.req.addr, &w.data, &w.strb);
            }
            if let Some(addr) = rd {
                let (word, _) = host_slot(addr);
                let raced = axi.writes_in_flight().any(|w| covers(w, word));
                this_read = Some((addr, (!raced).then(|| reference.host_half(addr))));
            }
            if let Some(h) = wr {
                reference.apply_host(h);
                host_writes.push_back((axi.cycle() - 1, host_slot(h.addr).0));
            }
            for r in axi.done_reads.drain(..) {
                assert_eq!(r.resp, 0, "read {}: RRESP", r.seq);
                while host_writes.front().is_some_and(|&(c, _)| c < r.start) {
                    host_writes.pop_front();
                }
                let first = Reference::word_of(r.req.addr);
                let words: Vec<usize> = (0..r.data.len()).map(|k| (first + k) % WORDS).collect();
                if r.raced || host_writes.iter().any(|&(c, w)| c <= r.end && words.contains(&w)) {
                    continue;
                }
                checked += 1;
                for (k, &got) in r.data.iter().enumerate() {
                    let want = reference.words[words[k]];
                    assert_eq!(
                        got,
                        want,
                        "read {} at {:#x} ({} beats, AR at cycle {}), beat {k} (word {}): {got:#018x}, \
                         expected {want:#018x}",
                        r.seq,
                        r.req.addr,
                        r.data.len(),
                        r.start,
                        words[k]
                    );
                }
            }
        });
        // The answer to the last cycle's host read, then held.
        if let Some((addr, want)) = host_read.take() {
            if let Some(want) = want {
                assert_eq!(seen, want, "host read of offset {addr:#x}: h_rd_data the next cycle");
                host_checked += 1;
            }
            host_held = Some(seen);
        } else if let Some(held) = host_held {
            assert_eq!(seen, held, "h_rd_data changed with no host read");
        }
        host_read = this_read;
    }
    // Most reads must have been checked, or the test proves little (about 3 in 4 are).
    assert!(checked * 2 >= requests, "only {checked} of {requests} reads were free of races");
    assert!(host_checked * 2 >= host_reads, "only {host_checked} of {host_reads} host reads were free of races");
    check_all(&mut b, &reference);
}

#[test]
fn dev_mem_random_traffic_matches_the_reference() {
    trace::on_failure("dev_mem_random_traffic_matches_the_reference", || {
        for seed in 0..8 {
            random_run(seed, 2000);
        }
    });
}

/// Writes then reads the whole memory in back-to-back bursts of `beats` beats at full
/// rate, checking the data; returns the cycles each took, first request to last response.
fn stream(beats: usize) -> (u64, u64) {
    let mut b = Bench::new(9);
    let words: Vec<u64> = (0..WORDS).map(|_| b.rng.gen()).collect();
    for start in (0..WORDS).step_by(beats) {
        b.axi.write(start as u64 * 8, &words[start..start + beats], &vec![0xFF; beats]);
    }
    let t0 = b.axi.cycle();
    b.drain(10_000);
    let write_cycles = b.axi.cycle() - t0;
    for start in (0..WORDS).step_by(beats) {
        b.axi.read(start as u64 * 8, beats);
    }
    let t0 = b.axi.cycle();
    b.drain(10_000);
    let read_cycles = b.axi.cycle() - t0;
    let data: Vec<u64> = b.axi.done_reads.drain(..).flat_map(|r| r.data).collect();
    assert!(data == words, "data read back differs from the data written");
    (write_cycles, read_cycles)
}

#[test]
fn dev_mem_streams_one_beat_per_cycle() {
    for beats in [256, 16, 4, 1] {
        let (w, r) = stream(beats);
        let (w_rate, r_rate) = (WORDS as f64 / w as f64, WORDS as f64 / r as f64);
        eprintln!("{beats}-beat bursts: writes {w} cycles ({w_rate:.3} beats/cycle), reads {r} cycles ({r_rate:.3})");
        assert!(w_rate >= 0.95, "{beats}-beat write bursts: {WORDS} beats took {w} cycles");
        assert!(r_rate >= 0.95, "{beats}-beat read bursts: {WORDS} beats took {r} cycles");
    }
}

#[test]
fn dev_mem_latencies() {
    let mut b = Bench::new(3);
    b.axi.write(0x40, &[0x1122_3344_5566_7788], &[0xFF]);
    b.drain(10_000);
    let w = b.axi.done_writes.pop_front().expect("write done");
    // AW at `start`, W at `start + 1` (the burst starts the cycle after its AW), B next.
    assert_eq!(w.end - w.start, 2, "AW to B for a one-beat burst");
    b.axi.read(0x40, 1);
    b.drain(10_000);
    let r = b.axi.done_reads.pop_front().expect("read done");
    assert_eq!(r.first - r.start, 3, "AR to the first R beat");
    assert_eq!(r.data, [0x1122_3344_5566_7788]);
}
