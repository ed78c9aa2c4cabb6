//! `host/rq_fetch` in Verilator: receives posted to several QPs' RQ rings at random times
//! with RQ_PI doorbells, claims for random QPs, a DMA read engine played by the bench
//! (random latency). Every claim must answer exactly as a reference ring does: the next
//! posted receive's 32 octets and index, or "none posted" without consuming anything;
//! QUERY's status port must show each QP's consumer index; RESET forgets the indices.
use std::collections::{HashMap, VecDeque};

use rand::rngs::StdRng;
use rand::{Rng, SeedableRng};
use rnic_proto::host::context::{QpContext, QpState};
use rnic_proto::host::desc::RQ_WQE_LEN;
use rnic_sim::{trace, Model, Port};

const QPS: usize = 6;

struct Bench {
    m: Model,
    p: HashMap<&'static str, Port>,
    rng: StdRng,
    memory: HashMap<u64, [u8; 32]>,
    reads: VecDeque<(u64, u64)>,
    beat: usize,
    cycle: u64,
}

const PORTS: [&str; 29] = [
    "db_valid",
    "db_kind",
    "db_index",
    "db_value",
    "qp_we",
    "qp_waddr",
    "qp_wdata",
    "qp_reset",
    "s_valid",
    "s_ready",
    "s_qpn",
    "m_valid",
    "m_ready",
    "m_posted",
    "m_wqe",
    "m_index",
    "m_error",
    "m_req_valid",
    "m_req_ready",
    "m_req_addr",
    "m_req_len",
    "s_rd_tdata",
    "s_rd_tlast",
    "s_rd_tuser",
    "s_rd_tvalid",
    "s_rd_tready",
    "status_qpn",
    "status_ci",
    "reset",
];

/// One answer: posted, the WQE octets, index.
type Answer = (bool, Vec<u8>, u32);

impl Bench {
    fn new(seed: u64) -> Bench {
        let mut m = Model::new("rnic_host_rq_fetch").expect("rnic_host_rq_fetch model");
        let p: HashMap<&'static str, Port> = PORTS.iter().map(|&n| (n, m.port(n))).collect();
        m.reset_for(4);
        Bench {
            m,
            p,
            rng: StdRng::seed_from_u64(seed),
            memory: HashMap::new(),
            reads: VecDeque::new(),
            beat: 0,
            cycle: 0,
        }
    }

    /// One cycle, with the DMA engine's side played.
    fn cycle(&mut self) {
        let p = &self.p;
        let req_ready = self.rng.gen_bool(0.5);
        self.m.set_bit(p["m_req_ready"], req_ready);
        let due = self.reads.front().filter(|r| r.1 <= self.cycle).map(|r| r.0);
        let present = due.is_some() && self.rng.gen_bool(0.7);
        self.m.set_bit(p["s_rd_tvalid"], present);
        if let Some(addr) = due.filter(|_| present) {
            let wqe =
                self.memory.get(&addr).unwrap_or_else(|| panic!("RQ WQE read at {addr:#x}, where nothing was posted"));
            self.m.set_bytes(p["s_rd_tdata"], &wqe[self.beat * 8..self.beat * 8 + 8]);
            self.m.set_bit(p["s_rd_tlast"], self.beat == 3);
            self.m.set(p["s_rd_tuser"], 0);
        }
        self.m.eval();
        if req_ready && self.m.get_bit(p["m_req_valid"]) {
            assert_eq!(self.m.get(p["m_req_len"]), RQ_WQE_LEN as u64);
            let latency = self.rng.gen_range(3..60);
            self.reads.push_back((self.m.get(p["m_req_addr"]), self.cycle + latency));
        }
        if present && self.m.get_bit(p["s_rd_tready"]) {
            self.beat += 1;
            if self.beat == 4 {
                self.beat = 0;
                self.reads.pop_front();
            }
        }
        self.m.tick();
        self.cycle += 1;
    }

    fn pulse(&mut self, set: &[(&str, u64)], strobes: &[&str]) {
        for (n, v) in set {
            self.m.set(self.p[n], *v);
        }
        for n in strobes {
            self.m.set_bit(self.p[n], true);
        }
        self.cycle();
        for n in strobes {
            self.m.set_bit(self.p[n], false);
        }
    }

    fn write_qp(&mut self, qpn: usize, ctx: &QpContext) {
        let bytes: Vec<u8> = ctx.to_words()[..8].iter().flat_map(|w| w.to_le_bytes()).collect();
        self.m.set_bytes(self.p["qp_wdata"], &bytes);
        let reset = u64::from(ctx.state == QpState::Reset);
        self.pulse(&[("qp_waddr", qpn as u64), ("qp_reset", reset)], &["qp_we"]);
    }

    fn claim(&mut self, qpn: usize) -> Answer {
        self.m.set(self.p["s_qpn"], qpn as u64);
        self.m.set_bit(self.p["s_valid"], true);
        for _ in 0..1_000 {
            let ready = self.rng.gen_bool(0.5);
            self.m.set_bit(self.p["m_ready"], ready);
            self.m.eval();
            let taken = self.m.get_bit(self.p["s_ready"]);
            let answer = (ready && self.m.get_bit(self.p["m_valid"])).then(|| {
                let mut wqe = vec![0; 32];
                self.m.get_bytes(self.p["m_wqe"], &mut wqe);
                assert!(!self.m.get_bit(self.p["m_error"]));
                (self.m.get_bit(self.p["m_posted"]), wqe, self.m.get(self.p["m_index"]) as u32)
            });
            self.cycle();
            if taken {
                self.m.set_bit(self.p["s_valid"], false);
            }
            if let Some(a) = answer {
                self.m.set_bit(self.p["m_ready"], false);
                return a;
            }
        }
        panic!("claim for QP {qpn} not answered within 1000 cycles");
    }

    fn status_ci(&mut self, qpn: usize) -> u32 {
        self.m.set(self.p["status_qpn"], qpn as u64);
        self.cycle();
        self.m.eval();
        self.m.get(self.p["status_ci"]) as u32
    }
}

#[test]
fn rq_fetch_claims_receives_in_ring_order() {
    trace::on_failure("rq_fetch_claims_receives_in_ring_order", || {
        let mut b = Bench::new(1);
        let mut rng = StdRng::seed_from_u64(0x4f);
        let ctxs: Vec<QpContext> = (0..QPS)
            .map(|n| QpContext {
                rq_log_size: rng.gen_range(1..4),
                rq_base: 0x200_0000 * (n as u64 + 1),
                ..QpContext::default()
            })
            .collect();
        for (n, c) in ctxs.iter().enumerate() {
            b.write_qp(n, c);
        }
        let (mut pi, mut ci) = ([0u32; QPS], [0u32; QPS]);
        let mut rings: Vec<HashMap<u32, [u8; 32]>> = vec![HashMap::new(); QPS];
        let (mut claims, mut nones) = (0, 0);
        for _ in 0..3_000 {
            let n = rng.gen_range(0..QPS);
            let size = 1u32 << ctxs[n].rq_log_size;
            match rng.gen_range(0..10) {
                0..=3 if pi[n] - ci[n] < size => {
                    let wqe: [u8; 32] = std::array::from_fn(|_| rng.gen());
                    b.memory.insert(ctxs[n].rq_base + u64::from(pi[n] & (size - 1)) * 32, wqe);
                    rings[n].insert(pi[n], wqe);
                    pi[n] += 1;
                    b.pulse(&[("db_kind", 1), ("db_index", n as u64), ("db_value", pi[n].into())], &["db_valid"]);
                }
                4 => assert_eq!(b.status_ci(n), ci[n], "QP {n}: consumer index as QUERY_QP sees it"),
                5 if rng.gen_bool(0.05) => {
                    b.write_qp(n, &ctxs[n]);
                    (pi[n], ci[n]) = (0, 0);
                    rings[n].clear();
                }
                _ => {
                    let (posted, wqe, index) = b.claim(n);
                    claims += 1;
                    if ci[n] == pi[n] {
                        assert!(!posted, "QP {n}: a receive claimed where none was posted");
                        nones += 1;
                    } else {
                        assert!(posted, "QP {n}: receive {} posted but not found", ci[n]);
                        assert_eq!(index, ci[n], "QP {n}: index");
                        assert_eq!(wqe, rings[n][&ci[n]].to_vec(), "QP {n}: WQE {}", ci[n]);
                        ci[n] += 1;
                    }
                }
            }
        }
        assert!(claims > 1_000 && nones > 50 && claims - nones > 500, "{claims} claims, {nones} empty");
    });
}
