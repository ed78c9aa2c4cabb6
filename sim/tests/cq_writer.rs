//! `host/cq_writer` in Verilator against a reference of the CQ rules in
//! `docs/DESCRIPTORS.md` and `docs/REGISTERS.md`: slot = pi mod size, PHASE from the lap
//! (`rnic_proto::host::desc::cqe_phase`), a full ring drops the CQE and latches OVERFLOW, a
//! disabled CQ drops it, CQ_CI frees slots, CQ_ARM gives one interrupt (any CQE, or a
//! solicited or failed one), raised only after the DMA engine reports the CQE written.
//!
//! The DMA write engine is played by the bench: it takes requests and beats with random
//! back-pressure and answers each after a random delay, in order.
use std::collections::VecDeque;

use rand::rngs::StdRng;
use rand::{Rng, SeedableRng};
use rnic_proto::host::context::CqContext;
use rnic_proto::host::desc::{cqe_fields, cqe_phase, Cqe, CqeOpcode, CqeStatus};
use rnic_proto::host::regs::cq_arm_bits;
use rnic_sim::{trace, Model, Port};

const CQS: usize = 6;
const ROUNDS: usize = 300;

struct Ports {
    s_valid: Port,
    s_ready: Port,
    s_cqn: Port,
    s_cqe: Port,
    cq_we: Port,
    cq_waddr: Port,
    cq_wdata: Port,
    db_valid: Port,
    db_kind: Port,
    db_index: Port,
    db_value: Port,
    req_valid: Port,
    req_ready: Port,
    req_addr: Port,
    req_len: Port,
    tdata: Port,
    tvalid: Port,
    tready: Port,
    tlast: Port,
    done: Port,
    irq_valid: Port,
    irq_ready: Port,
    irq_vector: Port,
    overflow: Port,
    settled: Port,
}

/// The bench: the model, and the DMA engine and interrupt controller it talks to.
struct Bench {
    m: Model,
    p: Ports,
    rng: StdRng,
    /// Requests taken, waiting for their beats: address, octets so far.
    receiving: VecDeque<(u64, Vec<u8>, u64)>,
    /// Written CQEs (address, octets), and when their done pulse is due.
    writes: Vec<(u64, Vec<u8>)>,
    done_at: VecDeque<u64>,
    irqs: Vec<u16>,
    cycle: u64,
    /// Each completion taken, in order: true if it is written (false: dropped).
    taken: Vec<bool>,
    /// Done pulses given.
    dones: usize,
}

impl Bench {
    fn new(seed: u64) -> Bench {
        let mut m = Model::new("rnic_host_cq_writer").expect("rnic_host_cq_writer model");
        let q = |n: &str| m.port(n);
        let p = Ports {
            s_valid: q("s_valid"),
            s_ready: q("s_ready"),
            s_cqn: q("s_cqn"),
            s_cqe: q("s_cqe"),
            cq_we: q("cq_we"),
            cq_waddr: q("cq_waddr"),
            cq_wdata: q("cq_wdata"),
            db_valid: q("db_valid"),
            db_kind: q("db_kind"),
            db_index: q("db_index"),
            db_value: q("db_value"),
            req_valid: q("m_req_valid"),
            req_ready: q("m_req_ready"),
            req_addr: q("m_req_addr"),
            req_len: q("m_req_len"),
            tdata: q("m_axis_tdata"),
            tvalid: q("m_axis_tvalid"),
            tready: q("m_axis_tready"),
            tlast: q("m_axis_tlast"),
            done: q("s_done_valid"),
            irq_valid: q("irq_valid"),
            irq_ready: q("irq_ready"),
            irq_vector: q("irq_vector"),
            overflow: q("overflow"),
            settled: q("settled"),
        };
        m.reset_for(4);
        Bench {
            m,
            p,
            rng: StdRng::seed_from_u64(seed),
            receiving: VecDeque::new(),
            writes: Vec::new(),
            done_at: VecDeque::new(),
            irqs: Vec::new(),
            cycle: 0,
            taken: Vec::new(),
            dones: 0,
        }
    }

    /// One clock: the DMA engine's and interrupt controller's side, then the edge.
    fn cycle(&mut self) {
        let (p, rng) = (&self.p, &mut self.rng);
        let req_ready = rng.gen_bool(0.6);
        let tready = rng.gen_bool(0.6);
        let irq_ready = rng.gen_bool(0.5);
        self.m.set_bit(p.req_ready, req_ready);
        self.m.set_bit(p.tready, tready);
        self.m.set_bit(p.irq_ready, irq_ready);
        let done = self.done_at.front().is_some_and(|&t| t <= self.cycle);
        self.m.set_bit(p.done, done);
        if done {
            self.done_at.pop_front();
            self.dones += 1;
        }
        self.m.eval();
        // `settled` counts in order: the writes among the first `settled` completions have
        // all been reported done (a drop never settles ahead of a write before it).
        let settled = self.m.get(p.settled) as usize;
        let writes = self.taken.iter().take(settled).filter(|&&w| w).count();
        assert!(
            settled <= self.taken.len() + 1 && writes <= self.dones,
            "settled {settled} of {:?} with {} done",
            self.taken,
            self.dones
        );
        if req_ready && self.m.get_bit(p.req_valid) {
            assert_eq!(self.m.get(p.req_len), 32, "CQE writes are 32 octets");
            self.receiving.push_back((self.m.get(p.req_addr), Vec::new(), 0));
        }
        if tready && self.m.get_bit(p.tvalid) {
            let (_, bytes, _) = self.receiving.front_mut().expect("CQE beats before their request");
            bytes.extend(self.m.get(p.tdata).to_le_bytes());
            if self.m.get_bit(p.tlast) {
                let (addr, bytes, _) = self.receiving.pop_front().expect("request");
                assert_eq!(bytes.len(), 32, "a CQE is four beats");
                self.writes.push((addr, bytes));
                let delay = self.rng.gen_range(1..60);
                let at = self.done_at.back().map_or(self.cycle + delay, |&t| t.max(self.cycle) + delay / 4);
                self.done_at.push_back(at);
            }
        }
        if irq_ready && self.m.get_bit(p.irq_valid) {
            // Never before the CQE it announces is written.
            assert!(self.writes.len() > self.irqs.len(), "interrupt before its CQE was reported written");
            self.irqs.push(self.m.get(p.irq_vector) as u16);
        }
        self.m.tick();
        self.cycle += 1;
    }

    fn write_cq(&mut self, cqn: usize, ctx: &CqContext) {
        let w = ctx.to_words();
        let data: Vec<u8> = w[..3].iter().flat_map(|x| x.to_le_bytes()).collect();
        self.m.set_bit(self.p.cq_we, true);
        self.m.set(self.p.cq_waddr, cqn as u64);
        self.m.set_bytes(self.p.cq_wdata, &data);
        self.cycle();
        self.m.set_bit(self.p.cq_we, false);
    }

    fn doorbell(&mut self, kind: u64, queue: usize, value: u32) {
        self.m.set_bit(self.p.db_valid, true);
        self.m.set(self.p.db_kind, kind);
        self.m.set(self.p.db_index, queue as u64);
        self.m.set(self.p.db_value, value.into());
        self.cycle();
        self.m.set_bit(self.p.db_valid, false);
    }

    fn complete(&mut self, cqn: usize, cqe: &Cqe) {
        self.m.set_bit(self.p.s_valid, true);
        self.m.set(self.p.s_cqn, cqn as u64);
        self.m.set_bytes(self.p.s_cqe, &cqe.encode());
        for _ in 0..100 {
            self.m.eval();
            let taken = self.m.get_bit(self.p.s_ready);
            self.cycle();
            if taken {
                self.m.set_bit(self.p.s_valid, false);
                return;
            }
        }
        panic!("completion not taken within 100 cycles");
    }

    /// Runs until every CQE is written and its interrupt (if any) delivered.
    fn settle(&mut self) {
        for _ in 0..2_000 {
            self.cycle();
        }
        assert!(self.receiving.is_empty() && self.done_at.is_empty(), "CQE writes still in flight");
        assert_eq!(self.m.get(self.p.settled) as usize, self.taken.len(), "every completion settled");
    }
}

/// The reference CQ.
#[derive(Clone, Default)]
struct RefCq {
    ctx: CqContext,
    pi: u32,
    ci: u32,
    armed_next: bool,
    armed_solicited: bool,
    overflow: bool,
}

fn random_cqe(rng: &mut StdRng) -> Cqe {
    Cqe {
        wr_id: rng.gen(),
        byte_len: rng.gen(),
        qpn: rng.gen_range(0..64),
        opcode: CqeOpcode::Recv,
        status: if rng.gen_bool(0.1) { CqeStatus::Flushed } else { CqeStatus::Success },
        imm: rng.gen(),
        invalidated: rng.gen_bool(0.2).then(|| rng.gen()),
        phase: false,
        solicited: rng.gen_bool(0.3),
        imm_valid: rng.gen(),
    }
}

#[test]
fn cq_writer_matches_the_ring_rules() {
    trace::on_failure("cq_writer_matches_the_ring_rules", || {
        let mut rng = StdRng::seed_from_u64(0xc0);
        let mut b = Bench::new(1);
        let mut cqs = vec![RefCq::default(); CQS];
        let (mut expected_writes, mut expected_irqs) = (Vec::new(), Vec::new());
        for (n, cq) in cqs.iter_mut().enumerate() {
            cq.ctx = CqContext {
                log_size: rng.gen_range(1..4),
                enable: n != 5,
                vector: 100 + n as u16,
                base: 0x10_0000 * (n as u64 + 1),
            };
            b.write_cq(n, &cq.ctx);
        }
        for _ in 0..ROUNDS {
            // A batch of completions on random CQs.
            for _ in 0..rng.gen_range(0..6) {
                let n = rng.gen_range(0..CQS);
                let cqe = random_cqe(&mut rng);
                b.complete(n, &cqe);
                let cq = &mut cqs[n];
                let size = 1u32 << cq.ctx.log_size;
                let written = cq.ctx.enable && cq.pi.wrapping_sub(cq.ci) < size;
                b.taken.push(written);
                if !cq.ctx.enable {
                    continue;
                }
                if cq.pi.wrapping_sub(cq.ci) >= size {
                    cq.overflow = true;
                    continue;
                }
                let slot = u64::from(cq.pi & (size - 1));
                let mut written = cqe;
                written.phase = cqe_phase(cq.pi, cq.ctx.log_size);
                expected_writes.push((cq.ctx.base + slot * 32, written.encode().to_vec()));
                cq.pi += 1;
                if cq.armed_next || (cq.armed_solicited && (cqe.solicited || cqe.status != CqeStatus::Success)) {
                    expected_irqs.push(cq.ctx.vector);
                    cq.armed_next = false;
                    cq.armed_solicited = false;
                }
            }
            b.settle();
            // The host consumes some entries and arms some CQs.
            for (n, cq) in cqs.iter_mut().enumerate() {
                if rng.gen_bool(0.4) {
                    cq.ci = rng.gen_range(cq.ci..=cq.pi);
                    b.doorbell(2, n, cq.ci);
                }
                if rng.gen_bool(0.3) {
                    let (next, solicited) = (rng.gen_bool(0.5), rng.gen_bool(0.5));
                    let mut v = [0u32];
                    cq_arm_bits::NEXT.set_word(&mut v, next.into());
                    cq_arm_bits::SOLICITED.set_word(&mut v, solicited.into());
                    b.doorbell(3, n, v[0]);
                    cq.armed_next |= next;
                    cq.armed_solicited |= solicited;
                }
            }
        }
        assert_eq!(b.writes.len(), expected_writes.len(), "number of CQEs written");
        for (i, (got, want)) in b.writes.iter().zip(&expected_writes).enumerate() {
            assert_eq!(got, want, "CQE write {i} (address, octets)");
        }
        assert_eq!(b.irqs, expected_irqs, "interrupt vectors in order");
        let overflow = b.m.get(b.p.overflow);
        for (n, cq) in cqs.iter().enumerate() {
            assert_eq!(overflow >> n & 1 == 1, cq.overflow, "CQ {n} OVERFLOW");
        }
        // The mix must have reached the interesting cases.
        assert!(cqs.iter().any(|c| c.overflow) && expected_irqs.len() > 20 && expected_writes.len() > 300);
        // Every PHASE value appears, so laps were crossed.
        let phase_at = cqe_fields::PHASE.byte() as usize;
        assert!(
            b.writes.iter().any(|(_, w)| w[phase_at] & 1 == 0) && b.writes.iter().any(|(_, w)| w[phase_at] & 1 == 1)
        );
    });
}

#[test]
fn cq_writer_empties_a_cq_written_disabled() {
    let mut b = Bench::new(2);
    let ctx = CqContext { log_size: 1, enable: true, vector: 7, base: 0x4000 };
    b.write_cq(0, &ctx);
    let mut rng = StdRng::seed_from_u64(3);
    for n in 0..3 {
        let cqe = random_cqe(&mut rng);
        b.complete(0, &cqe);
        b.taken.push(n < 2);
    }
    b.settle();
    assert_eq!(b.writes.len(), 2, "a ring of two takes two");
    assert_eq!(b.m.get(b.p.overflow) & 1, 1);
    // Disable (empties it), enable again: slot 0 again, first lap's phase, no OVERFLOW.
    b.write_cq(0, &CqContext { enable: false, ..ctx });
    b.write_cq(0, &ctx);
    assert_eq!(b.m.get(b.p.overflow) & 1, 0);
    let cqe = random_cqe(&mut rng);
    b.complete(0, &cqe);
    b.taken.push(true);
    b.settle();
    let (addr, bytes) = b.writes.last().expect("a write");
    assert_eq!(*addr, 0x4000);
    assert!(Cqe::decode(bytes).expect("CQE").phase);
}

/// The arm is looked at when a CQE is written, not when it was issued: a host that polls
/// an empty ring, arms, and sleeps is woken by a CQE that was already on its way when it
/// armed (docs/REGISTERS.md, CQ_ARM). Also for a solicited-only arm, by an urgent CQE only.
#[test]
fn cq_writer_wakes_a_cq_armed_while_its_cqe_is_in_flight() {
    let mut b = Bench::new(4);
    let ctx = CqContext { log_size: 3, enable: true, vector: 9, base: 0x8000 };
    b.write_cq(0, &ctx);
    let mut rng = StdRng::seed_from_u64(5);
    let arm = |next: bool, solicited: bool| {
        let mut v = [0u32];
        cq_arm_bits::NEXT.set_word(&mut v, next.into());
        cq_arm_bits::SOLICITED.set_word(&mut v, solicited.into());
        v[0]
    };
    let mut expected = Vec::new();
    for (next, solicited, urgent_cqe) in [(true, false, false), (false, true, false), (false, true, true)] {
        let mut cqe = random_cqe(&mut rng);
        cqe.solicited = urgent_cqe;
        cqe.status = CqeStatus::Success;
        b.complete(0, &cqe);
        b.taken.push(true);
        // The CQE is issued (its write requested) and not yet written when the arm comes.
        for _ in 0..3 {
            b.cycle();
        }
        let dones = b.dones;
        b.doorbell(3, 0, arm(next, solicited));
        assert_eq!(b.dones, dones, "the arm came before the CQE was written");
        b.settle();
        if next || urgent_cqe {
            expected.push(ctx.vector);
        }
        // (A solicited-only arm a plain CQE left standing is used by the next case's.)
        assert_eq!(b.irqs, expected, "arm NEXT {next}, SOLICITED {solicited}, solicited CQE {urgent_cqe}");
    }
    assert_eq!(b.writes.len(), 3);
}
