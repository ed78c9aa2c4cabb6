//! `host/sq_fetch` in Verilator: WQEs posted to several QPs' SQ rings, SQ_PI doorbells, a
//! DMA read engine played by the bench (random latency, in order, errors on request) and
//! a consumer with random back-pressure.
//!
//! The bench checks every read as it is requested: one slot's first 96 octets (its 32
//! reserved octets never read), the next slot that QP has not had read, nothing at or
//! beyond its producer index. A batch is the reads requested back to back (`m_req_valid`
//! held between them): consecutive slots of one QP, never past the ring's last slot. The
//! tests check what comes out: every QP's WQEs once each, in ring order, with the QP's
//! context and index; QPs not in RTS or ERROR left alone; batches taking turns; a QP reset
//! with WQEs queued or in flight never hands any of them on; DMA errors mark the WQEs they
//! touch; a cleared ENABLE holds everything; and QUERY's `ci` counts WQEs taken.
use std::collections::{HashMap, VecDeque};
use std::ops::Range;

use rand::rngs::StdRng;
use rand::{Rng, SeedableRng};
use rnic_proto::host::context::{QpContext, QpState};
use rnic_proto::host::desc::{sq_wqe_fields, SqOpcode, SQ_WQE_LEN, SQ_WQE_SLOT_LEN};
use rnic_sim::{trace, Model, Port};

const QPS: usize = 8;
const SLOT: u64 = SQ_WQE_SLOT_LEN as u64;
/// Slots a read may cover at most.
const BATCH: u32 = 8;

/// A WQE handed on.
#[derive(Clone, Debug)]
struct Taken {
    qpn: usize,
    index: u32,
    wqe: Vec<u8>,
    /// Word 1 of the context that came with it.
    word1: u32,
    error: bool,
}

/// A read the bench's DMA engine serves: its octets, when they may start, the beat from
/// which they carry the error bit.
struct Read {
    data: Vec<u8>,
    due: u64,
    error_from: Option<usize>,
}

/// A batch as requested, read by read: QP, index of its first slot, slots.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
struct Request {
    qpn: usize,
    first: u32,
    count: u32,
}

struct Bench {
    m: Model,
    p: HashMap<&'static str, Port>,
    rng: StdRng,
    /// Host memory: WQE images (the octets fetched) by slot address.
    memory: HashMap<u64, [u8; SQ_WQE_LEN]>,
    /// Per QP: its ring (base, log2 slots) once written.
    rings: Vec<Option<(u64, u8)>>,
    /// Per QP: the producer index last rung, the next index it must read, and the next
    /// one before its last reset with the reads still allowed there (a batch decided just
    /// before a reset may still go out).
    pi: Vec<u32>,
    next_fetch: Vec<u32>,
    stale_fetch: Vec<Option<(u32, u32)>>,
    reads: VecDeque<Read>,
    beat: usize,
    requests: Vec<Request>,
    /// Reads requested, and whether `m_req_valid` was low since the last one (the next
    /// read starts a batch).
    read_count: usize,
    req_gap: bool,
    /// Read number → the beat from which it fails.
    errors: HashMap<usize, usize>,
    latency: Range<u64>,
    req_ready_p: f64,
    force_req_ready: Option<bool>,
    ready_p: f64,
    force_ready: Option<bool>,
    out: Vec<Taken>,
    /// WQEs taken per QP since its last reset, up to the cycle before last (`ci` counts a
    /// take from the cycle after it: `taken_now` holds this cycle's), and QUERY's check:
    /// the QP asked last cycle and its count then.
    taken: Vec<u32>,
    taken_now: Vec<usize>,
    status_expect: Option<(usize, u32)>,
    cycle: u64,
}

const PORTS: [&str; 30] = [
    "enable",
    "db_valid",
    "db_kind",
    "db_index",
    "db_value",
    "qp_we",
    "qp_waddr",
    "qp_wdata",
    "qp_reset",
    "qp_rts",
    "qp_error",
    "m_req_valid",
    "m_req_ready",
    "m_req_addr",
    "m_req_len",
    "s_rd_tdata",
    "s_rd_tlast",
    "s_rd_tuser",
    "s_rd_tvalid",
    "s_rd_tready",
    "m_valid",
    "m_ready",
    "m_wqe",
    "m_qpn",
    "m_ctx",
    "m_index",
    "m_error",
    "m_ordered",
    "status_qpn",
    "status_ci",
];

impl Bench {
    fn new(seed: u64) -> Bench {
        let mut m = Model::new("rnic_host_sq_fetch").expect("rnic_host_sq_fetch model");
        let p: HashMap<&'static str, Port> = PORTS.iter().map(|&n| (n, m.port(n))).collect();
        m.reset_for(4);
        m.set_bit(p["enable"], true);
        Bench {
            m,
            p,
            rng: StdRng::seed_from_u64(seed),
            memory: HashMap::new(),
            rings: vec![None; QPS],
            pi: vec![0; QPS],
            next_fetch: vec![0; QPS],
            stale_fetch: vec![None; QPS],
            reads: VecDeque::new(),
            beat: 0,
            requests: Vec::new(),
            read_count: 0,
            req_gap: true,
            errors: HashMap::new(),
            latency: 5..80,
            req_ready_p: 0.5,
            force_req_ready: None,
            ready_p: 0.4,
            force_ready: None,
            out: Vec::new(),
            taken: vec![0; QPS],
            taken_now: Vec::new(),
            status_expect: None,
            cycle: 0,
        }
    }

    fn cycle(&mut self) {
        let req_ready = self.force_req_ready.unwrap_or_else(|| self.rng.gen_bool(self.req_ready_p));
        let ready = self.force_ready.unwrap_or_else(|| self.rng.gen_bool(self.ready_p));
        let status_qpn = self.rng.gen_range(0..QPS);
        let p = &self.p;
        // The DMA read engine keeps 32 reads in flight.
        let req_ready = req_ready && self.reads.len() < 32;
        self.m.set_bit(p["m_req_ready"], req_ready);
        self.m.set_bit(p["m_ready"], ready);
        self.m.set(p["status_qpn"], status_qpn as u64);
        // Eight octets a beat, reads in order, after their latency.
        let due = self.reads.front().filter(|r| r.due <= self.cycle).is_some();
        let present = due && self.rng.gen_bool(0.7);
        self.m.set_bit(p["s_rd_tvalid"], present);
        if present {
            let read = self.reads.front().expect("a read");
            self.m.set_bytes(p["s_rd_tdata"], &read.data[self.beat * 8..self.beat * 8 + 8]);
            self.m.set_bit(p["s_rd_tlast"], (self.beat + 1) * 8 == read.data.len());
            let bad = read.error_from.is_some_and(|b| self.beat >= b);
            self.m.set(p["s_rd_tuser"], u64::from(bad) << 8);
        }
        self.m.eval();
        if let Some((q, ci)) = self.status_expect.take() {
            assert_eq!(self.m.get(p["status_ci"]) as u32, ci, "QUERY: ci of QP {q}");
        }
        self.status_expect = Some((status_qpn, self.taken[status_qpn]));
        for q in self.taken_now.drain(..) {
            self.taken[q] += 1;
        }
        if !self.m.get_bit(p["m_req_valid"]) {
            self.req_gap = true;
        } else if req_ready {
            let (addr, len) = (self.m.get(p["m_req_addr"]), self.m.get(p["m_req_len"]));
            self.request(addr, len);
        }
        if present && self.m.get_bit(self.p["s_rd_tready"]) {
            self.beat += 1;
            if self.beat * 8 == self.reads[0].data.len() {
                self.beat = 0;
                self.reads.pop_front();
            }
        }
        let p = &self.p;
        if ready && self.m.get_bit(p["m_valid"]) {
            let mut wqe = vec![0; SQ_WQE_LEN];
            self.m.get_bytes(p["m_wqe"], &mut wqe);
            let mut ctx = [0u8; 32];
            self.m.get_bytes(p["m_ctx"], &mut ctx);
            let word1 = u32::from_le_bytes(ctx[4..8].try_into().expect("4 octets"));
            let qpn = self.m.get(p["m_qpn"]) as usize;
            let (index, error) = (self.m.get(p["m_index"]) as u32, self.m.get_bit(p["m_error"]));
            // Every WQE handed on says whether its opcode takes an ORD slot.
            let opcode = sq_wqe_fields::OPCODE.get(&wqe) as u8;
            let ordered = SqOpcode::try_from(opcode).is_ok_and(SqOpcode::takes_ord_slot);
            assert_eq!(self.m.get_bit(p["m_ordered"]), ordered, "QP {qpn}: WQE {index} (opcode {opcode:#04x}) ordered");
            self.taken_now.push(qpn);
            self.out.push(Taken { qpn, index, wqe, word1, error });
        }
        self.m.tick();
        self.cycle += 1;
    }

    /// Checks a read request against the rings and queues its octets.
    fn request(&mut self, addr: u64, len: u64) {
        assert_eq!(len, SQ_WQE_LEN as u64, "read of {len} octets at {addr:#x}: not a slot's WQE");
        let (qpn, base, log) = (0..QPS)
            .find_map(|q| self.rings[q].filter(|&(b, l)| (b..b + (SLOT << l)).contains(&addr)).map(|(b, l)| (q, b, l)))
            .unwrap_or_else(|| panic!("read at {addr:#x}: in no ring"));
        let (size, slot) = (1u32 << log, ((addr - base) / SLOT) as u32);
        assert_eq!((addr - base) % SLOT, 0, "read at {addr:#x}: not at a slot");
        // A batch decided just before its QP's reset may still go out, at the old indices.
        let current = self.next_fetch[qpn] % size == slot && self.next_fetch[qpn] < self.pi[qpn];
        let index = if current {
            self.next_fetch[qpn] += 1;
            self.next_fetch[qpn] - 1
        } else {
            let stale = self.stale_fetch[qpn].take();
            assert!(
                stale.is_some_and(|(s, left)| s % size == slot && left > 0),
                "QP {qpn}: read of slot {slot}; expected index {}, producer index {}",
                self.next_fetch[qpn],
                self.pi[qpn]
            );
            let (s, left) = stale.unwrap_or_default();
            self.stale_fetch[qpn] = Some((s + 1, left - 1));
            s
        };
        let batch = self.requests.last_mut().filter(|r| !self.req_gap && r.qpn == qpn);
        match batch {
            Some(r) => {
                assert_eq!(r.first + r.count, index, "QP {qpn}: batch {r:?} goes on at index {index}");
                assert!(r.count < BATCH, "QP {qpn}: batch {r:?} longer than {BATCH}");
                assert!((r.first % size) + r.count < size, "QP {qpn}: batch {r:?} runs past the ring's {size} slots");
                r.count += 1;
            }
            None => self.requests.push(Request { qpn, first: index, count: 1 }),
        }
        self.req_gap = false;
        let data = self.memory.get(&addr).unwrap_or_else(|| panic!("WQE read at {addr:#x}, where nothing was posted"));
        let error_from = self.errors.get(&self.read_count).copied();
        self.read_count += 1;
        let due = self.cycle + self.rng.gen_range(self.latency.clone());
        self.reads.push_back(Read { data: data.to_vec(), due, error_from });
    }

    fn write_qp(&mut self, qpn: usize, ctx: &QpContext) {
        let bytes: Vec<u8> = ctx.to_words()[..8].iter().flat_map(|w| w.to_le_bytes()).collect();
        let reset = ctx.state == QpState::Reset;
        let p = &self.p;
        self.m.set_bit(p["qp_we"], true);
        self.m.set_bit(p["qp_reset"], reset);
        self.m.set(p["qp_waddr"], qpn as u64);
        self.m.set_bytes(p["qp_wdata"], &bytes);
        self.cycle();
        let p = &self.p;
        self.m.set_bit(p["qp_we"], false);
        self.m.set_bit(p["qp_reset"], false);
        self.rings[qpn] = Some((ctx.sq_base, ctx.sq_log_size));
        if reset {
            self.stale_fetch[qpn] = Some((self.next_fetch[qpn], BATCH));
            self.pi[qpn] = 0;
            self.next_fetch[qpn] = 0;
            self.taken[qpn] = 0;
        }
    }

    /// `write_qp` with a doorbell in the same cycle (forgotten if it is for the QP reset).
    fn write_qp_ringing(&mut self, qpn: usize, ctx: &QpContext, (dbq, pi): (usize, u32)) {
        let p = &self.p;
        self.m.set_bit(p["db_valid"], true);
        self.m.set(p["db_kind"], 0);
        self.m.set(p["db_index"], dbq as u64);
        self.m.set(p["db_value"], pi.into());
        self.write_qp(qpn, ctx);
        self.m.set_bit(self.p["db_valid"], false);
        if dbq != qpn || ctx.state != QpState::Reset {
            self.pi[dbq] = pi;
        }
    }

    fn doorbell(&mut self, qpn: usize, pi: u32) {
        let p = &self.p;
        self.m.set_bit(p["db_valid"], true);
        self.m.set(p["db_kind"], 0);
        self.m.set(p["db_index"], qpn as u64);
        self.m.set(p["db_value"], pi.into());
        self.cycle();
        self.m.set_bit(self.p["db_valid"], false);
        self.pi[qpn] = pi;
    }

    /// Writes `wqe` into QP `qpn`'s slot for index `index`.
    fn post(&mut self, qpn: usize, index: u32, wqe: [u8; SQ_WQE_LEN]) {
        let (base, log) = self.rings[qpn].expect("the QP's ring");
        self.memory.insert(base + u64::from(index & ((1 << log) - 1)) * SLOT, wqe);
    }

    fn set_states(&mut self, rts: u64, error: u64) {
        self.m.set(self.p["qp_rts"], rts);
        self.m.set(self.p["qp_error"], error);
    }

    fn set_enable(&mut self, on: bool) {
        self.m.set_bit(self.p["enable"], on);
    }

    fn run(&mut self, cycles: u64) {
        for _ in 0..cycles {
            self.cycle();
        }
    }

    /// Runs until `done`, failing after `limit` cycles.
    fn run_until(&mut self, limit: u64, what: &str, done: impl Fn(&Bench) -> bool) {
        for _ in 0..limit {
            if done(self) {
                return;
            }
            self.cycle();
        }
        panic!("{what}: not after {limit} cycles");
    }

    fn taken_by(&self, qpn: usize) -> Vec<&Taken> {
        self.out.iter().filter(|o| o.qpn == qpn).collect()
    }
}

fn context(qpn: usize, log_size: u8) -> QpContext {
    QpContext {
        state: QpState::Reset,
        conn_id: 0x100 + qpn as u16,
        mulpdu: 1024,
        sq_log_size: log_size,
        sq_base: 0x100_0000 * (qpn as u64 + 1),
        ..QpContext::default()
    }
}

/// A WQE whose octets say which QP and index it is for, and the rest random.
fn wqe(rng: &mut StdRng, qpn: usize, index: u32) -> [u8; SQ_WQE_LEN] {
    let mut w: [u8; SQ_WQE_LEN] = std::array::from_fn(|_| rng.gen());
    w[0] = qpn as u8;
    w[1..5].copy_from_slice(&index.to_le_bytes());
    w
}

#[test]
fn sq_fetch_delivers_every_posted_wqe_in_ring_order() {
    trace::on_failure("sq_fetch_delivers_every_posted_wqe_in_ring_order", || {
        let mut b = Bench::new(1);
        let mut rng = StdRng::seed_from_u64(0x5f);
        let ctxs: Vec<QpContext> = (0..QPS).map(|n| context(n, rng.gen_range(1..4))).collect();
        for (n, c) in ctxs.iter().enumerate() {
            b.write_qp(n, c);
        }
        // QPs 0-5 in RTS, 6 in ERROR (fetched for flushing), 7 in RESET (never fetched).
        b.set_states(0b0011_1111, 0b0100_0000);
        let mut pi = [0u32; QPS];
        let mut posted: Vec<Vec<Vec<u8>>> = vec![Vec::new(); QPS];
        for _ in 0..2_000 {
            let n = rng.gen_range(0..QPS);
            let size = 1u32 << ctxs[n].sq_log_size;
            // Post only into free slots: the ring holds `size` WQEs not yet taken.
            let taken = b.out.iter().filter(|o| o.qpn == n).count();
            if pi[n] - taken as u32 >= size || n == 7 && pi[n] >= size {
                for _ in 0..rng.gen_range(0..20) {
                    b.cycle();
                }
                continue;
            }
            let wqe: [u8; SQ_WQE_LEN] = std::array::from_fn(|_| rng.gen());
            b.post(n, pi[n], wqe);
            posted[n].push(wqe.to_vec());
            pi[n] += 1;
            b.doorbell(n, pi[n]);
            for _ in 0..rng.gen_range(0..30) {
                b.cycle();
            }
        }
        b.run(20_000);
        for n in 0..QPS {
            let got = b.taken_by(n);
            if n == 7 {
                assert!(got.is_empty(), "QP 7 is in RESET and must not be fetched");
                continue;
            }
            assert_eq!(got.len(), posted[n].len(), "QP {n}: WQEs delivered");
            for (i, (o, want)) in got.iter().zip(&posted[n]).enumerate() {
                assert_eq!(o.index, i as u32, "QP {n}: index of WQE {i}");
                assert_eq!(&o.wqe, want, "QP {n}: WQE {i} octets");
                assert_eq!(o.word1, ctxs[n].to_words()[1], "QP {n}: context with the WQE");
                assert!(!o.error, "QP {n}: WQE {i} marked in error");
            }
        }
        let total: usize = posted.iter().map(Vec::len).sum();
        assert!(total > 300, "only {total} WQEs posted");
        // Doorbells one WQE at a time mostly find one WQE to read, but not always.
        assert!(b.requests.iter().any(|r| r.count > 1), "no read covered more than one slot");
    });
}

/// With every QP loaded, each gets up to one batch (eight WQEs) per round.
#[test]
fn sq_fetch_takes_turns_between_busy_qps() {
    let mut b = Bench::new(2);
    let ctxs: Vec<QpContext> = (0..4).map(|n| context(n, 4)).collect();
    for (n, c) in ctxs.iter().enumerate() {
        b.write_qp(n, c);
    }
    b.set_states(0b1111, 0);
    for n in 0..4 {
        for i in 0..16 {
            b.post(n, i, [n as u8; SQ_WQE_LEN]);
        }
    }
    for n in 0..4 {
        b.doorbell(n, 16);
    }
    b.run(20_000);
    let order: Vec<usize> = b.out.iter().map(|o| o.qpn).collect();
    assert_eq!(order.len(), 64);
    // Runs of one QP: eight WQEs each, and every four runs serve four different QPs.
    let runs: Vec<usize> = order.chunk_by(|a, b| a == b).map(|r| r[0]).collect();
    assert!(order.chunk_by(|a, b| a == b).all(|r| r.len() == 8), "batches of eight: {order:?}");
    for w in runs.chunks(4) {
        let mut seen = w.to_vec();
        seen.sort();
        seen.dedup();
        assert_eq!(seen.len(), w.len(), "round robin broken: runs {runs:?}");
    }
    assert!(b.requests.iter().all(|r| r.count == BATCH), "reads: {:?}", b.requests);
}

#[test]
fn sq_fetch_forgets_a_qp_written_in_reset() {
    let mut b = Bench::new(3);
    let c = context(0, 2);
    b.write_qp(0, &c);
    b.post(0, 0, [1; SQ_WQE_LEN]);
    b.post(0, 1, [2; SQ_WQE_LEN]);
    b.doorbell(0, 2);
    // Not in RTS yet: nothing moves.
    b.run(500);
    assert!(b.out.is_empty());
    // Reset again: the doorbell is forgotten; after RTS a new doorbell starts from slot 0.
    b.write_qp(0, &c);
    b.set_states(1, 0);
    b.run(500);
    assert!(b.out.is_empty(), "a reset QP keeps no producer index");
    b.doorbell(0, 1);
    b.run(500);
    assert_eq!(b.out.len(), 1);
    assert_eq!((b.out[0].index, b.out[0].wqe[0]), (0, 1));
}

/// A batch stops at the ring's last slot and the next starts at slot 0; rings of one slot
/// are read a slot at a time.
#[test]
fn sq_fetch_batches_stop_at_the_ring_wrap() {
    trace::on_failure("sq_fetch_batches_stop_at_the_ring_wrap", || {
        let mut b = Bench::new(4);
        let mut rng = StdRng::seed_from_u64(4);
        let logs = [3u8, 0, 4];
        for (n, &log) in logs.iter().enumerate() {
            b.write_qp(n, &context(n, log));
        }
        b.set_states(0b111, 0);
        let mut posted: Vec<Vec<[u8; SQ_WQE_LEN]>> = vec![Vec::new(); 3];
        let mut post = |b: &mut Bench, n: usize, count: u32| {
            for _ in 0..count {
                let i = posted[n].len() as u32;
                let w = wqe(&mut rng, n, i);
                b.post(n, i, w);
                posted[n].push(w);
            }
            b.doorbell(n, posted[n].len() as u32);
        };
        // QP 0 (8 slots): 5, then 6 from slot 5; QP 2 (16 slots): 12, then 20 from slot 12.
        post(&mut b, 0, 5);
        post(&mut b, 2, 12);
        b.run_until(5_000, "the first WQEs", |b| b.out.len() == 17);
        post(&mut b, 0, 6);
        b.run_until(5_000, "QP 0's second WQEs", |b| b.taken_by(0).len() == 11);
        post(&mut b, 2, 4);
        b.run_until(5_000, "QP 2's second WQEs", |b| b.taken_by(2).len() == 16);
        post(&mut b, 2, 16);
        // QP 1 (one slot): one WQE at a time, each once its slot is free again.
        for k in 1..=4 {
            post(&mut b, 1, 1);
            b.run_until(5_000, "QP 1's WQE", |b| b.taken_by(1).len() == k);
        }
        b.run_until(5_000, "every WQE", |b| b.out.len() == 5 + 6 + 4 + 12 + 4 + 16);
        let reads = |n: usize| -> Vec<(u32, u32)> {
            b.requests.iter().filter(|r| r.qpn == n).map(|r| (r.first, r.count)).collect()
        };
        assert_eq!(reads(0), [(0, 5), (5, 3), (8, 3)]);
        assert_eq!(reads(1), [(0, 1), (1, 1), (2, 1), (3, 1)]);
        assert_eq!(reads(2), [(0, 8), (8, 4), (12, 4), (16, 8), (24, 8)]);
        for (n, posted) in posted.iter().enumerate().take(3) {
            let got = b.taken_by(n);
            assert_eq!(got.len(), posted.len(), "QP {n}: WQEs delivered");
            for (i, (o, want)) in got.iter().zip(posted).enumerate() {
                assert_eq!((o.index, &o.wqe[..]), (i as u32, &want[..]), "QP {n}: WQE {i}");
            }
        }
    });
}

/// A doorbell that lands while its QP is being picked, whatever the pick's stage, is not
/// lost: with the QP's last WQE being read as it rings, a missed doorbell would leave the
/// new WQE unfetched. Doorbells every cycle while batches are in flight lose nothing either.
#[test]
fn sq_fetch_keeps_doorbells_that_ring_during_a_batch() {
    trace::on_failure("sq_fetch_keeps_doorbells_that_ring_during_a_batch", || {
        for gap in 0..12 {
            let mut b = Bench::new(50 + gap);
            b.latency = 40..41;
            b.force_req_ready = Some(true);
            b.write_qp(0, &context(0, 4));
            b.set_states(1, 0);
            let mut rng = StdRng::seed_from_u64(gap);
            let (w0, w1) = (wqe(&mut rng, 0, 0), wqe(&mut rng, 0, 1));
            b.post(0, 0, w0);
            b.post(0, 1, w1);
            b.doorbell(0, 1);
            b.run(gap);
            b.doorbell(0, 2);
            b.run(2_000);
            let got: Vec<(u32, &[u8])> = b.out.iter().map(|o| (o.index, &o.wqe[..])).collect();
            assert_eq!(got, [(0, &w0[..]), (1, &w1[..])], "second doorbell {gap} cycles after the first");
        }

        let mut b = Bench::new(6);
        let mut rng = StdRng::seed_from_u64(6);
        b.latency = 60..200;
        b.ready_p = 0.1;
        b.write_qp(0, &context(0, 6));
        b.write_qp(1, &context(1, 2));
        b.set_states(0b11, 0);
        let mut posted = [Vec::new(), Vec::new()];
        for round in 0..6 {
            // Ten doorbells in ten cycles, some for QP 1, while earlier batches are read.
            for k in 0..10 {
                let n = usize::from(k % 3 == 2);
                let room = if n == 0 { 64 } else { 4 };
                if posted[n].len() - b.taken_by(n).len() < room {
                    let i = posted[n].len() as u32;
                    let w = wqe(&mut rng, n, i);
                    b.post(n, i, w);
                    posted[n].push(w);
                }
                b.doorbell(n, posted[n].len() as u32);
            }
            b.run(50 * round);
        }
        b.ready_p = 0.8;
        b.run(10_000);
        for (n, posted) in posted.iter().enumerate() {
            let got: Vec<(u32, &[u8])> = b.taken_by(n).iter().map(|o| (o.index, &o.wqe[..])).collect();
            let want: Vec<(u32, &[u8])> = posted.iter().enumerate().map(|(i, w)| (i as u32, &w[..])).collect();
            assert_eq!(got, want, "QP {n}");
        }
        assert!(b.requests.iter().any(|r| r.count == BATCH), "reads: {:?}", b.requests);
    });
}

/// A context write (not RESET) to a QP while it is being picked restarts the pick, and the
/// QP stays pending: written in any cycle of the pick of its only batch, including the one
/// the batch would be issued in, every WQE still comes out.
#[test]
fn sq_fetch_keeps_a_qp_pending_when_its_context_is_written_during_its_pick() {
    trace::on_failure("sq_fetch_keeps_a_qp_pending_when_its_context_is_written_during_its_pick", || {
        for gap in 0..10 {
            let mut b = Bench::new(70 + gap);
            b.latency = 20..21;
            b.force_req_ready = Some(true);
            b.write_qp(0, &context(0, 4));
            b.set_states(1, 0);
            let mut rng = StdRng::seed_from_u64(gap);
            let (w0, w1) = (wqe(&mut rng, 0, 0), wqe(&mut rng, 0, 1));
            b.post(0, 0, w0);
            b.post(0, 1, w1);
            b.doorbell(0, 2);
            b.run(gap);
            b.write_qp(0, &QpContext { state: QpState::Rts, ..context(0, 4) });
            b.run(1_000);
            let got: Vec<(u32, &[u8])> = b.out.iter().map(|o| (o.index, &o.wqe[..])).collect();
            assert_eq!(got, [(0, &w0[..]), (1, &w1[..])], "context written {gap} cycles after the doorbell");
        }
    });
}

/// RESET with one batch queued (the consumer stalled, the head on offer as the reset is
/// written) and the next still being read: neither is handed on, other QPs go on, and the
/// QP starts again from index 0. A read still waiting for the bus when its QP is reset is
/// dropped as well.
#[test]
fn sq_fetch_drops_the_wqes_of_a_qp_reset_while_queued_or_in_flight() {
    trace::on_failure("sq_fetch_drops_the_wqes_of_a_qp_reset_while_queued_or_in_flight", || {
        let mut b = Bench::new(7);
        let mut rng = StdRng::seed_from_u64(7);
        let ctxs = [context(0, 4), context(1, 3), context(2, 3)];
        for (n, c) in ctxs.iter().enumerate() {
            b.write_qp(n, c);
        }
        b.set_states(0b111, 0);
        b.latency = 150..151;
        b.force_req_ready = Some(true);
        b.force_ready = Some(false);
        for i in 0..16 {
            b.post(0, i, wqe(&mut rng, 0, i));
        }
        b.doorbell(0, 16);
        b.run_until(100, "two reads of QP 0", |b| b.requests.len() == 2);
        // QP 1's WQEs are read into a batch slot of their own, queued behind QP 0's.
        let qp1: Vec<[u8; SQ_WQE_LEN]> = (0..4).map(|i| wqe(&mut rng, 1, i)).collect();
        for (i, w) in qp1.iter().enumerate() {
            b.post(1, i as u32, *w);
        }
        b.doorbell(1, 4);
        // QP 0's first batch arrives; its second is still on its way.
        b.run_until(1_000, "QP 0's first WQEs", |b| b.m.get_bit(b.p["m_valid"]));
        b.run(20);
        assert_eq!(b.requests.iter().map(|r| (r.qpn, r.first)).collect::<Vec<_>>(), [(0, 0), (0, 8), (1, 0)]);
        assert!(!b.reads.is_empty(), "QP 0's second read still in flight");
        assert_eq!(b.m.get(b.p["m_qpn"]), 0);
        // Taking freely from the reset's own cycle on, nothing of QP 0 comes out.
        b.force_ready = Some(true);
        b.write_qp(0, &ctxs[0]);
        b.set_states(0b110, 0);
        b.force_ready = None;
        b.run(1_000);
        assert!(b.taken_by(0).is_empty(), "QP 0 handed on after its reset: {:?}", b.taken_by(0));
        assert!(b.reads.is_empty());
        let got: Vec<&[u8]> = b.taken_by(1).iter().map(|o| &o.wqe[..]).collect();
        assert_eq!(got, qp1.iter().map(|w| &w[..]).collect::<Vec<_>>(), "QP 1 behind QP 0's dropped WQEs");
        // Back in RTS: new WQEs from index 0.
        b.set_states(0b111, 0);
        let fresh: Vec<[u8; SQ_WQE_LEN]> = (0..3).map(|i| wqe(&mut rng, 0, 100 + i)).collect();
        for (i, w) in fresh.iter().enumerate() {
            b.post(0, i as u32, *w);
        }
        b.doorbell(0, 3);
        b.run(1_000);
        let got: Vec<(u32, &[u8])> = b.taken_by(0).iter().map(|o| (o.index, &o.wqe[..])).collect();
        assert_eq!(got, fresh.iter().enumerate().map(|(i, w)| (i as u32, &w[..])).collect::<Vec<_>>());

        // QP 2's read decided, not yet on the bus, when the reset comes.
        b.force_req_ready = Some(false);
        for i in 0..4 {
            b.post(2, i, wqe(&mut rng, 2, i));
        }
        b.doorbell(2, 4);
        b.run_until(100, "QP 2's read request", |b| b.m.get_bit(b.p["m_req_valid"]));
        b.write_qp(2, &ctxs[2]);
        b.set_states(0b011, 0);
        b.force_req_ready = None;
        b.run(1_000);
        assert_eq!(b.requests.last().map(|r| (r.qpn, r.first)), Some((2, 0)), "the stale read went out");
        assert!(b.taken_by(2).is_empty(), "QP 2 handed on after its reset");
        assert!(b.reads.is_empty());
    });
}

/// An error on a read marks its WQE, whichever beat it comes on; the other reads of its
/// batch, before and after it, are clean.
#[test]
fn sq_fetch_marks_the_wqes_a_dma_error_touches() {
    trace::on_failure("sq_fetch_marks_the_wqes_a_dma_error_touches", || {
        let mut b = Bench::new(8);
        let mut rng = StdRng::seed_from_u64(8);
        b.write_qp(0, &context(0, 3));
        b.set_states(1, 0);
        // Read 2 fails from its ninth beat, read 11 from its first, read 17 (the last) on
        // its last.
        b.errors.insert(2, 8);
        b.errors.insert(11, 0);
        b.errors.insert(17, 11);
        let mut posted = Vec::new();
        for (from, count) in [(0u32, 8u32), (8, 8), (16, 2)] {
            for i in from..from + count {
                let w = wqe(&mut rng, 0, i);
                b.post(0, i, w);
                posted.push(w);
            }
            b.doorbell(0, from + count);
            b.run_until(5_000, "the WQEs", |b| b.out.len() == (from + count) as usize);
        }
        assert_eq!(b.requests.iter().map(|r| (r.first, r.count)).collect::<Vec<_>>(), [(0, 8), (8, 8), (16, 2)]);
        let errors: Vec<bool> = b.out.iter().map(|o| o.error).collect();
        let want: Vec<bool> = (0..18).map(|i| [2, 11, 17].contains(&i)).collect();
        assert_eq!(errors, want);
        for (i, (o, w)) in b.out.iter().zip(&posted).enumerate() {
            assert_eq!(o.index, i as u32);
            if !o.error {
                assert_eq!(o.wqe, w.to_vec(), "WQE {i}");
            }
        }
    });
}

/// Clearing ENABLE in the middle of a batch: nothing more is handed on, nothing new is
/// read even with a batch slot free and a QP rung, what is in flight still lands, and
/// QUERY shows what was taken (the bench checks it every cycle); set again, the rest
/// follows in order.
#[test]
fn sq_fetch_holds_everything_while_enable_is_clear() {
    trace::on_failure("sq_fetch_holds_everything_while_enable_is_clear", || {
        let mut b = Bench::new(9);
        let mut rng = StdRng::seed_from_u64(9);
        b.write_qp(0, &context(0, 5));
        b.write_qp(1, &context(1, 3));
        b.set_states(0b11, 0);
        b.force_ready = Some(true);
        b.latency = 100..101;
        let posted: Vec<[u8; SQ_WQE_LEN]> = (0..12).map(|i| wqe(&mut rng, 0, i)).collect();
        for (i, w) in posted.iter().enumerate() {
            b.post(0, i as u32, *w);
        }
        b.doorbell(0, 12);
        // Three of the first batch taken, the second (four WQEs) still being read.
        b.run_until(1_000, "three WQEs", |b| b.out.len() == 3);
        b.set_enable(false);
        assert!(!b.reads.is_empty(), "the second read in flight");
        b.run(1_000);
        assert_eq!(b.out.len(), 3, "handed on while ENABLE is clear");
        assert!(b.reads.is_empty(), "a read in flight not taken while ENABLE is clear");
        // Nine taken: the first batch slot is free; QP 1 rings and must wait.
        b.set_enable(true);
        b.run_until(1_000, "nine WQEs", |b| b.out.len() == 9);
        b.set_enable(false);
        let requested = b.requests.len();
        b.post(1, 0, wqe(&mut rng, 1, 0));
        b.doorbell(1, 1);
        b.run(1_000);
        assert_eq!(b.out.len(), 9, "handed on while ENABLE is clear");
        assert_eq!(b.requests.len(), requested, "read while ENABLE is clear");
        b.set_enable(true);
        b.run_until(5_000, "the rest", |b| b.out.len() == 13);
        let got: Vec<(u32, &[u8])> = b.taken_by(0).iter().map(|o| (o.index, &o.wqe[..])).collect();
        assert_eq!(got, posted.iter().enumerate().map(|(i, w)| (i as u32, &w[..])).collect::<Vec<_>>());
        assert_eq!(b.taken_by(1).len(), 1);
        assert_eq!(b.requests.len(), requested + 1);
    });
}

/// Random traffic on six QPs (rings of 1 to 16 slots), four seeds: WQEs posted in random
/// bursts with one doorbell or one each, random consumer back-pressure and bus readiness,
/// read latencies from 1 to 400 cycles that change as it runs, QPs moving between RTS and
/// ERROR, context rewrites and resets (some with a doorbell in the same cycle), ENABLE
/// pauses. Every WQE posted since its QP's last reset comes out once, in ring order, with
/// its index and the context as last written; nothing from before a reset comes out after
/// it; QUERY's `ci` follows (checked every cycle by the bench).
#[test]
fn sq_fetch_random_traffic() {
    for seed in 0..4 {
        trace::on_failure(&format!("sq_fetch_random_traffic_{seed}"), || random_traffic(seed));
    }
}

fn random_traffic(seed: u64) {
    const N: usize = 6;
    let mut b = Bench::new(10 + seed);
    let mut rng = StdRng::seed_from_u64(0xa11 + seed);
    let mut ctxs: Vec<QpContext> = (0..N).map(|n| context(n, rng.gen_range(0..5))).collect();
    for (n, c) in ctxs.iter_mut().enumerate() {
        b.write_qp(n, c);
        c.state = QpState::Rts;
        b.write_qp(n, c);
    }
    let all = (1u64 << N) - 1;
    let mut error = 0u64;
    b.set_states(all, 0);
    // Per QP: WQEs posted since the last reset, how many of them were checked out.
    let mut posted: Vec<Vec<[u8; SQ_WQE_LEN]>> = vec![Vec::new(); N];
    let mut seen = 0usize;
    let mut checked = vec![0usize; N];
    let mut total = 0usize;
    let mut resets = 0;
    fn check(b: &Bench, seen: &mut usize, checked: &mut [usize], posted: &[Vec<[u8; SQ_WQE_LEN]>], ctxs: &[QpContext]) {
        for o in &b.out[*seen..] {
            let n = o.qpn;
            let i = checked[n];
            assert!(i < posted[n].len(), "QP {n}: WQE {} handed on, only {i} posted since its reset", o.index);
            assert_eq!((o.index, &o.wqe[..]), (i as u32, &posted[n][i][..]), "QP {n}: WQE {i}");
            assert_eq!(o.word1, ctxs[n].to_words()[1], "QP {n}: context with WQE {i}");
            assert!(!o.error);
            checked[n] += 1;
        }
        *seen = b.out.len();
    }
    for step in 0..10_000 {
        if step % 500 == 0 {
            let lo = [1, 20, 100, 200][rng.gen_range(0..4)];
            b.latency = lo..lo + rng.gen_range(1..200);
            b.ready_p = [0.05, 0.3, 0.7, 1.0][rng.gen_range(0..4)];
            b.req_ready_p = rng.gen_range(0.2..1.0);
        }
        let n = rng.gen_range(0..N);
        match rng.gen_range(0..200) {
            0..=2 => {
                // Reset (another QP may ring in the same cycle) and back to RTS.
                check(&b, &mut seen, &mut checked, &posted, &ctxs);
                ctxs[n].state = QpState::Reset;
                let m = rng.gen_range(0..N);
                if m != n && rng.gen_bool(0.5) {
                    total += post_some(&mut b, &mut rng, &mut posted[m], m, 0.0);
                    let pi = posted[m].len() as u32;
                    b.write_qp_ringing(n, &ctxs[n], (m, pi));
                } else {
                    b.write_qp(n, &ctxs[n]);
                }
                posted[n].clear();
                checked[n] = 0;
                resets += 1;
                check(&b, &mut seen, &mut checked, &posted, &ctxs);
                b.set_states(all & !error & !(1 << n), error & !(1 << n));
                b.run(rng.gen_range(0..20));
                ctxs[n].state = QpState::Rts;
                b.write_qp(n, &ctxs[n]);
                error &= !(1 << n);
                b.set_states(all & !error, error);
            }
            3..=5 => {
                // A context rewrite, with a doorbell (maybe its own) in the same cycle: the
                // WQEs handed on after it carry the new context.
                let new = QpContext { mulpdu: rng.gen_range(512..2048), ..ctxs[n] };
                check(&b, &mut seen, &mut checked, &posted, &ctxs);
                let m = rng.gen_range(0..N);
                total += post_some(&mut b, &mut rng, &mut posted[m], m, 0.0);
                let pi = posted[m].len() as u32;
                b.write_qp_ringing(n, &new, (m, pi));
                check(&b, &mut seen, &mut checked, &posted, &ctxs);
                ctxs[n] = new;
            }
            6..=8 => {
                // RTS <-> ERROR: both are fetched.
                error ^= 1 << n;
                b.set_states(all & !error, error);
            }
            9 => {
                b.set_enable(false);
                b.run(rng.gen_range(1..300));
                b.set_enable(true);
            }
            _ => {
                total += post_some(&mut b, &mut rng, &mut posted[n], n, 0.3);
                b.doorbell(n, posted[n].len() as u32);
                b.run(rng.gen_range(0..40));
            }
        }
        check(&b, &mut seen, &mut checked, &posted, &ctxs);
    }
    b.ready_p = 0.7;
    b.latency = 1..100;
    b.run(50_000);
    check(&b, &mut seen, &mut checked, &posted, &ctxs);
    for n in 0..N {
        assert_eq!(checked[n], posted[n].len(), "QP {n}: WQEs posted since its last reset, handed on");
    }
    assert!(total > 4_000 && resets > 60, "seed {seed}: {total} WQEs posted, {resets} resets");
    let reads = b.requests.len();
    let (full, several) =
        (b.requests.iter().filter(|r| r.count == BATCH).count(), b.requests.iter().filter(|r| r.count > 1).count());
    assert!(
        full > 0 && several * 5 > reads,
        "seed {seed}: {reads} reads, {several} of several slots, {full} of {BATCH}"
    );
}

/// Posts up to 12 WQEs to QP `n`, within the slots its ring has free, each rung on its own
/// with probability `ring_each`; returns how many.
fn post_some(b: &mut Bench, rng: &mut StdRng, posted: &mut Vec<[u8; SQ_WQE_LEN]>, n: usize, ring_each: f64) -> usize {
    let size = 1usize << b.rings[n].expect("the QP's ring").1;
    let room = size - (posted.len() - b.taken[n] as usize);
    let count = rng.gen_range(0..=room.min(12));
    for _ in 0..count {
        let i = posted.len() as u32;
        let w = wqe(rng, n, i);
        b.post(n, i, w);
        posted.push(w);
        if rng.gen_bool(ring_each) {
            b.doorbell(n, i + 1);
        }
    }
    count
}
