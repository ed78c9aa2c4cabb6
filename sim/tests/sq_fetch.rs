//! `host/sq_fetch` in Verilator: WQEs posted to several QPs' SQ rings at random times, SQ_PI
//! doorbells, a DMA read engine played by the bench (random latency, in order) and a
//! consumer with random back-pressure. Every QP's WQEs must come out once each, in ring
//! order, with the QP's context and index; nothing beyond the producer index is read; QPs
//! not in RTS or ERROR are left alone; with every QP loaded, QPs take turns.
use std::collections::{HashMap, VecDeque};

use rand::rngs::StdRng;
use rand::{Rng, SeedableRng};
use rnic_proto::host::context::{QpContext, QpState};
use rnic_proto::host::desc::{SQ_WQE_LEN, SQ_WQE_SLOT_LEN};
use rnic_sim::{trace, Model, Port};

const QPS: usize = 8;

struct Bench {
    m: Model,
    p: HashMap<&'static str, Port>,
    rng: StdRng,
    /// Host memory: WQE images (the octets fetched) by address.
    memory: HashMap<u64, [u8; SQ_WQE_LEN]>,
    /// Read requests taken: address, when the data may start.
    reads: VecDeque<(u64, u64)>,
    beat: usize,
    /// WQEs delivered: QP, index, the octets, context word 1.
    out: Vec<(usize, u32, Vec<u8>, u32)>,
    cycle: u64,
}

const PORTS: [&str; 24] = [
    "enable", "db_valid", "db_kind", "db_index", "db_value", "qp_we", "qp_waddr", "qp_wdata", "qp_reset", "qp_rts",
    "qp_error", "m_req_valid", "m_req_ready", "m_req_addr", "m_req_len", "s_rd_tdata", "s_rd_tlast", "s_rd_tuser",
    "s_rd_tvalid", "s_rd_tready", "m_valid", "m_ready", "m_wqe", "m_qpn",
];

impl Bench {
    fn new(seed: u64) -> Bench {
        let mut m = Model::new("rnic_host_sq_fetch").expect("rnic_host_sq_fetch model");
        let mut p: HashMap<&'static str, Port> = PORTS.iter().map(|&n| (n, m.port(n))).collect();
        for n in ["m_ctx", "m_index", "m_error"] {
            p.insert(n, m.port(n));
        }
        m.reset_for(4);
        m.set_bit(p["enable"], true);
        Bench { m, p, rng: StdRng::seed_from_u64(seed), memory: HashMap::new(), reads: VecDeque::new(), beat: 0, out: Vec::new(), cycle: 0 }
    }

    fn cycle(&mut self) {
        let (req_ready, ready) = (self.rng.gen_bool(0.5), self.rng.gen_bool(0.4));
        let p = &self.p;
        self.m.set_bit(p["m_req_ready"], req_ready);
        self.m.set_bit(p["m_ready"], ready);
        // The DMA read engine: eight octets a beat, reads in order, after their latency.
        let due = self.reads.front().filter(|r| r.1 <= self.cycle).map(|r| r.0);
        let present = due.is_some() && self.rng.gen_bool(0.7);
        self.m.set_bit(p["s_rd_tvalid"], present);
        if let Some(addr) = due.filter(|_| present) {
            let wqe = self.memory.get(&addr).unwrap_or_else(|| panic!("WQE read at {addr:#x}, where nothing was posted"));
            self.m.set_bytes(p["s_rd_tdata"], &wqe[self.beat * 8..self.beat * 8 + 8]);
            self.m.set_bit(p["s_rd_tlast"], self.beat == SQ_WQE_LEN / 8 - 1);
            self.m.set(p["s_rd_tuser"], 0);
        }
        self.m.eval();
        if req_ready && self.m.get_bit(p["m_req_valid"]) {
            assert_eq!(self.m.get(p["m_req_len"]), SQ_WQE_LEN as u64, "a WQE fetch reads the WQE's first 96 octets");
            let latency = self.rng.gen_range(5..80);
            self.reads.push_back((self.m.get(p["m_req_addr"]), self.cycle + latency));
        }
        if present && self.m.get_bit(p["s_rd_tready"]) {
            self.beat += 1;
            if self.beat == SQ_WQE_LEN / 8 {
                self.beat = 0;
                self.reads.pop_front();
            }
        }
        if ready && self.m.get_bit(p["m_valid"]) {
            let mut wqe = vec![0; SQ_WQE_LEN];
            self.m.get_bytes(p["m_wqe"], &mut wqe);
            let mut ctx = [0u8; 32];
            self.m.get_bytes(p["m_ctx"], &mut ctx);
            assert!(!self.m.get_bit(p["m_error"]));
            let word1 = u32::from_le_bytes(ctx[4..8].try_into().expect("4 octets"));
            self.out.push((self.m.get(p["m_qpn"]) as usize, self.m.get(p["m_index"]) as u32, wqe, word1));
        }
        self.m.tick();
        self.cycle += 1;
    }

    fn write_qp(&mut self, qpn: usize, ctx: &QpContext) {
        let bytes: Vec<u8> = ctx.to_words()[..8].iter().flat_map(|w| w.to_le_bytes()).collect();
        let p = &self.p;
        self.m.set_bit(p["qp_we"], true);
        self.m.set_bit(p["qp_reset"], ctx.state == QpState::Reset);
        self.m.set(p["qp_waddr"], qpn as u64);
        self.m.set_bytes(p["qp_wdata"], &bytes);
        self.cycle();
        let p = &self.p;
        self.m.set_bit(p["qp_we"], false);
        self.m.set_bit(p["qp_reset"], false);
    }

    fn doorbell(&mut self, qpn: usize, pi: u32) {
        let p = &self.p;
        self.m.set_bit(p["db_valid"], true);
        self.m.set(p["db_kind"], 0);
        self.m.set(p["db_index"], qpn as u64);
        self.m.set(p["db_value"], pi.into());
        self.cycle();
        self.m.set_bit(self.p["db_valid"], false);
    }

    fn set_states(&mut self, rts: u64, error: u64) {
        self.m.set(self.p["qp_rts"], rts);
        self.m.set(self.p["qp_error"], error);
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
        let mut taken_by_qp = [0usize; QPS];
        for _ in 0..2_000 {
            let n = rng.gen_range(0..QPS);
            let size = 1u32 << ctxs[n].sq_log_size;
            // Post only into free slots: the ring holds `size` WQEs not yet taken.
            let taken = b.out.iter().filter(|o| o.0 == n).count();
            taken_by_qp[n] = taken;
            if pi[n] - taken as u32 >= size || n == 7 && pi[n] >= size {
                for _ in 0..rng.gen_range(0..20) {
                    b.cycle();
                }
                continue;
            }
            let wqe: [u8; SQ_WQE_LEN] = std::array::from_fn(|_| rng.gen());
            let addr = ctxs[n].sq_base + u64::from(pi[n] & (size - 1)) * SQ_WQE_SLOT_LEN as u64;
            b.memory.insert(addr, wqe);
            posted[n].push(wqe.to_vec());
            pi[n] += 1;
            b.doorbell(n, pi[n]);
            for _ in 0..rng.gen_range(0..30) {
                b.cycle();
            }
        }
        for _ in 0..20_000 {
            b.cycle();
        }
        for n in 0..QPS {
            let got: Vec<&(usize, u32, Vec<u8>, u32)> = b.out.iter().filter(|o| o.0 == n).collect();
            if n == 7 {
                assert!(got.is_empty(), "QP 7 is in RESET and must not be fetched");
                continue;
            }
            assert_eq!(got.len(), posted[n].len(), "QP {n}: WQEs delivered");
            for (i, (o, want)) in got.iter().zip(&posted[n]).enumerate() {
                assert_eq!(o.1, i as u32, "QP {n}: index of WQE {i}");
                assert_eq!(&o.2, want, "QP {n}: WQE {i} octets");
                assert_eq!(o.3, ctxs[n].to_words()[1], "QP {n}: context with the WQE");
            }
        }
        let total: usize = posted.iter().map(Vec::len).sum();
        assert!(total > 300, "only {total} WQEs posted");
    });
}

#[test]
fn sq_fetch_takes_turns_between_busy_qps() {
    let mut b = Bench::new(2);
    let ctxs: Vec<QpContext> = (0..4).map(|n| context(n, 3)).collect();
    for (n, c) in ctxs.iter().enumerate() {
        b.write_qp(n, c);
    }
    b.set_states(0b1111, 0);
    for (n, c) in ctxs.iter().enumerate() {
        for i in 0..8u64 {
            b.memory.insert(c.sq_base + i * SQ_WQE_SLOT_LEN as u64, [n as u8; SQ_WQE_LEN]);
        }
    }
    for n in 0..4 {
        b.doorbell(n, 8);
    }
    for _ in 0..20_000 {
        b.cycle();
    }
    let order: Vec<usize> = b.out.iter().map(|o| o.0).collect();
    assert_eq!(order.len(), 32);
    // After the first round, each window of four deliveries serves four different QPs.
    for w in order[4..].chunks(4) {
        let mut seen = w.to_vec();
        seen.sort();
        seen.dedup();
        assert_eq!(seen.len(), w.len(), "round robin broken: {order:?}");
    }
}

#[test]
fn sq_fetch_forgets_a_qp_written_in_reset() {
    let mut b = Bench::new(3);
    let c = context(0, 2);
    b.write_qp(0, &c);
    b.memory.insert(c.sq_base, [1; SQ_WQE_LEN]);
    b.memory.insert(c.sq_base + 128, [2; SQ_WQE_LEN]);
    b.doorbell(0, 2);
    // Not in RTS yet: nothing moves.
    for _ in 0..500 {
        b.cycle();
    }
    assert!(b.out.is_empty());
    // Reset again: the doorbell is forgotten; after RTS a new doorbell starts from slot 0.
    b.write_qp(0, &c);
    b.set_states(1, 0);
    for _ in 0..500 {
        b.cycle();
    }
    assert!(b.out.is_empty(), "a reset QP keeps no producer index");
    b.doorbell(0, 1);
    for _ in 0..500 {
        b.cycle();
    }
    assert_eq!(b.out.len(), 1);
    assert_eq!((b.out[0].1, b.out[0].2[0]), (0, 1));
}
