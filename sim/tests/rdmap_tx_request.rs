//! `rdmap/tx_request` in Verilator against the reference model's local checks
//! (`rnic_proto::model::local_outcome`, `sq_cqe`): random WQEs of every opcode (and
//! undefined ones) on several QPs, lkeys that are right, stale, of another PD, without
//! LOCAL_WRITE or out of bounds, QPs in ERROR. Messages must carry exactly the reference's
//! fields (MSNs counted per QP and queue from 1, the Read and Atomic Request bodies,
//! Immediate Data), completions must
//! come in WQE order with the reference's CQEs — errors at once, signaled messages after
//! the segmenter reports them gone (Reads also once the bench, playing the receive side,
//! reports them placed) — and every local error must put its QP in ERROR, flushing what
//! follows.
use std::collections::VecDeque;

use rand::rngs::StdRng;
use rand::{Rng, SeedableRng};
use rnic_proto::host::context::{stag, MrAccess, MrContext, QpContext, QpState, MAX_READS};
use rnic_proto::host::desc::{Cqe, CqeStatus, SqOpcode, SqWqe, SQ_WQE_LEN};
use rnic_proto::model::wire::atomic_request_of;
use rnic_proto::model::{local_outcome, sq_cqe, Outcome};
use rnic_proto::rdmap::ReadRequest;
use rnic_sim::{trace, Model, Port};

const QPS: usize = 6;
const MRS: usize = 8;
const WQES: usize = 4_000;
const BATCH: usize = 40;

/// A message as the segmenter receives it.
#[derive(Clone, Debug, PartialEq, Eq)]
struct Job {
    tagged: bool,
    opcode: u64,
    stag: u64,
    to: Option<u64>,
    qn: u64,
    msn: u64,
    addr: Option<u64>,
    len: u64,
    inline: Vec<u8>,
    mulpdu: u64,
    conn: u64,
}

fn random_mrs(rng: &mut StdRng) -> Vec<MrContext> {
    (0..MRS)
        .map(|_| {
            let length = rng.gen_range(0..20_000);
            // Some regions end at 2^64 exactly (VA + LENGTH needs its 65th bit).
            let va = if rng.gen_bool(0.15) { u64::wrapping_neg(length) } else { rng.gen_range(0..1u64 << 40) };
            MrContext {
                key: rng.gen(),
                access: MrAccess {
                    local_write: rng.gen_bool(0.7),
                    remote_read: rng.gen(),
                    remote_write: rng.gen(),
                    remote_atomic: false,
                },
                valid: rng.gen_bool(0.85),
                pd: rng.gen_range(0..3),
                va,
                length,
                iova: rng.gen_range(0..1u64 << 44),
            }
        })
        .collect()
}

fn random_wqe(rng: &mut StdRng, mrs: &[MrContext], n: u64) -> SqWqe {
    let opcode = match rng.gen_range(0..20) {
        0 => rng.gen_range(0..=255),
        1 => [0x02, 0x07, 0x0B, 0x10][rng.gen_range(0..4)],
        2..=5 => 0x00,
        6..=8 => 0x01,
        9 => [0x08, 0x09][rng.gen_range(0..2)],
        10 => 0x0A,
        _ => [0x03, 0x04, 0x05, 0x06][rng.gen_range(0..4)],
    };
    let index = if rng.gen_bool(0.95) { rng.gen_range(0..MRS as u32) } else { rng.gen_range(MRS as u32..1 << 24) };
    let mr = mrs.get(index as usize).copied().unwrap_or_default();
    let key = if rng.gen_bool(0.9) { mr.key } else { rng.gen() };
    let length = match rng.gen_range(0..10) {
        0 => 0,
        1..=6 => rng.gen_range(1..4000),
        _ => rng.gen(),
    };
    // Mostly inside the region; sometimes just before it, straddling its end, ending at it
    // or an octet past it, or anywhere.
    let end = mr.va.wrapping_add(mr.length);
    let local_addr = match rng.gen_range(0..22) {
        0 => mr.va.wrapping_sub(rng.gen_range(1..64)),
        1 => end.wrapping_sub(u64::from(length.min(1 << 16)) / 2),
        2 => rng.gen(),
        3 => end.wrapping_sub(u64::from(length)),
        4 => end.wrapping_sub(u64::from(length)).wrapping_add(1),
        _ => mr.va.wrapping_add(rng.gen_range(0..mr.length.max(1))),
    };
    SqWqe {
        opcode,
        signaled: rng.gen_bool(0.7),
        fence: false,
        length,
        wr_id: n,
        local_addr,
        lkey: stag(index, key),
        remote_stag: rng.gen(),
        remote_to: rng.gen(),
        imm: rng.gen(),
        // Any AOpCode goes out as given (the responder refuses the unsupported ones).
        aopcode: [0, 2, 0, 2, 1, 15][rng.gen_range(0..6)],
        add_swap: rng.gen(),
        add_swap_mask: rng.gen(),
        compare: rng.gen(),
        compare_mask: rng.gen(),
    }
}

struct P {
    s: [Port; 7],
    qp_we: Port,
    qp_reset: Port,
    qp_waddr: Port,
    qp_error: Port,
    qp_rts: Port,
    mr: [Port; 4],
    job: [Port; 15],
    done: Port,
    read_valid: Port,
    read_qpn: Port,
    order_qpn: Port,
    order_done: Port,
    cqe: [Port; 4],
    fail: [Port; 2],
}

fn ports(m: &Model) -> P {
    let q = |n: &str| m.port(n);
    P {
        s: ["s_valid", "s_ready", "s_wqe", "s_qpn", "s_ctx", "s_error", "s_ordered"].map(q),
        qp_error: q("qp_error"),
        qp_rts: q("qp_rts"),
        qp_we: q("qp_we"),
        qp_reset: q("qp_reset"),
        qp_waddr: q("qp_waddr"),
        mr: ["mr_we", "mr_waddr", "mr_wdata", "mr_valid"].map(q),
        job: [
            "m_job_valid",
            "m_job_ready",
            "m_job_tagged",
            "m_job_opcode",
            "m_job_stag",
            "m_job_to",
            "m_job_qn",
            "m_job_msn",
            "m_job_addr",
            "m_job_len",
            "m_job_inline",
            "m_job_inline_len",
            "m_job_mulpdu",
            "m_job_conn",
            "s_done_valid",
        ]
        .map(q),
        done: q("s_done_valid"),
        read_valid: q("m_read_valid"),
        read_qpn: q("m_read_qpn"),
        order_qpn: q("order_qpn"),
        order_done: q("order_done"),
        cqe: ["m_cqe_valid", "m_cqe_ready", "m_cqn", "m_cqe"].map(q),
        fail: ["m_fail", "m_fail_qp"].map(q),
    }
}

#[test]
fn rdmap_tx_request_matches_the_local_checks() {
    trace::on_failure("rdmap_tx_request_matches_the_local_checks", || {
        let mut rng = StdRng::seed_from_u64(0x7e9);
        let mut m = Model::new("rnic_rdmap_tx_request").expect("rnic_rdmap_tx_request model");
        let p = ports(&m);
        m.reset_for(4);

        // The MR table, written as the command unit would.
        let mrs = random_mrs(&mut rng);
        let mut valid_bits = vec![0u8; 32];
        for (i, mr) in mrs.iter().enumerate() {
            let bytes: Vec<u8> = mr.to_words()[..7].iter().flat_map(|w| w.to_le_bytes()).collect();
            m.set_bit(p.mr[0], true);
            m.set(p.mr[1], i as u64);
            m.set_bytes(p.mr[2], &bytes);
            m.eval();
            m.tick();
            if mr.valid {
                valid_bits[i / 8] |= 1 << (i % 8);
            }
        }
        m.set_bit(p.mr[0], false);
        m.set_bytes(p.mr[3], &valid_bits);
        let ctxs: Vec<QpContext> = (0..QPS)
            .map(|n| QpContext {
                state: QpState::Rts,
                pd: rng.gen_range(0..3),
                conn_id: 0x300 + n as u16,
                mulpdu: rng.gen_range(128..4000),
                send_cq: rng.gen_range(0..64),
                ord: 4,
                ..QpContext::default()
            })
            .collect();

        // The reference, WQE by WQE.
        let mut in_error = [false; QPS];
        in_error[5] = true; // QP 5 starts in ERROR: everything on it is flushed
        let mut msns = [(0u64, 0u64); QPS];
        // Atomic Requests per QP: the next one's Request Identifier is one more.
        let mut atomics = [0u32; QPS];
        let wqes: Vec<(usize, SqWqe)> =
            (0..WQES).map(|n| (rng.gen_range(0..QPS), random_wqe(&mut rng, &mrs, n as u64))).collect();
        let (mut jobs, mut cqes, mut fails) = (Vec::new(), Vec::new(), Vec::new());
        // Every BATCH WQEs the host brings failed QPs back (RESET, then RTS; QP 5 stays in
        // ERROR), so that failures keep meeting live QPs: (before WQE, QPs, CQEs so far).
        let mut recoveries: Vec<(usize, Vec<usize>, usize)> = Vec::new();
        for (n, (qpn, wqe)) in wqes.iter().enumerate() {
            if n % BATCH == 0 && n > 0 {
                let failed: Vec<usize> = (0..QPS - 1).filter(|&q| in_error[q]).collect();
                for &q in &failed {
                    in_error[q] = false;
                    msns[q] = (0, 0);
                    atomics[q] = 0;
                }
                recoveries.push((n, failed, cqes.len()));
            }
            let (qpn, ctx) = (*qpn, &ctxs[*qpn]);
            let cq = u64::from(ctx.send_cq);
            if in_error[qpn] {
                cqes.push((cq, sq_cqe(qpn as u32, wqe, CqeStatus::Flushed)));
                continue;
            }
            let outcome = local_outcome(&mrs, ctx, wqe);
            let Outcome::Transmit { op, source } = outcome else {
                let Outcome::Fail(status) = outcome else { panic!("ORD is never 0 here") };
                cqes.push((cq, sq_cqe(qpn as u32, wqe, status)));
                fails.push(qpn as u64);
                in_error[qpn] = true;
                continue;
            };
            let read = op == SqOpcode::RdmaRead;
            let atomic = op == SqOpcode::Atomic;
            let (qn, msn) = if read || atomic {
                msns[qpn].1 += 1;
                (1, msns[qpn].1)
            } else if op == SqOpcode::RdmaWrite {
                (0, msns[qpn].0 + 1)
            } else {
                msns[qpn].0 += 1;
                (0, msns[qpn].0)
            };
            let inline = if read {
                ReadRequest {
                    sink_stag: wqe.lkey,
                    sink_to: wqe.local_addr,
                    size: wqe.length,
                    src_stag: wqe.remote_stag,
                    src_to: wqe.remote_to,
                }
                .to_bytes()
                .to_vec()
            } else if atomic {
                atomics[qpn] += 1;
                atomic_request_of(wqe, atomics[qpn]).to_bytes().to_vec()
            } else if matches!(op, SqOpcode::Imm | SqOpcode::ImmSe) {
                wqe.imm.to_le_bytes().to_vec()
            } else {
                Vec::new()
            };
            let invalidates = matches!(op, SqOpcode::SendInv | SqOpcode::SendSeInv);
            jobs.push(Job {
                tagged: op == SqOpcode::RdmaWrite,
                opcode: wqe.opcode.into(),
                stag: if op == SqOpcode::RdmaWrite || invalidates { wqe.remote_stag.into() } else { 0 },
                to: (op == SqOpcode::RdmaWrite).then_some(wqe.remote_to),
                qn,
                msn: if op == SqOpcode::RdmaWrite { 0 } else { msn },
                addr: source,
                // Reads, atomics and Immediate Data carry no payload from host memory.
                len: if read || atomic || matches!(op, SqOpcode::Imm | SqOpcode::ImmSe) {
                    0
                } else {
                    wqe.length.into()
                },
                inline,
                mulpdu: ctx.mulpdu.into(),
                conn: ctx.conn_id.into(),
            });
            if wqe.signaled {
                cqes.push((cq, sq_cqe(qpn as u32, wqe, CqeStatus::Success)));
            }
        }

        // Run: offer WQEs, play the segmenter (done after a delay, in order) and the CQ writer.
        let [s_valid, s_ready, s_wqe, s_qpn, s_ctx, s_error, s_ordered] = p.s;
        let [job_valid, job_ready, tagged, opcode, jstag, jto, qn, msn, addr, len, inline, inline_len, mulpdu, conn, _] =
            p.job;
        let [cqe_valid, cqe_ready, cqn, cqe_port] = p.cqe;
        let mut error_bits = 1u64 << 5;
        let (mut next, mut got_jobs, mut got_cqes, mut got_fails) = (0, Vec::new(), Vec::new(), Vec::new());
        let mut dones: VecDeque<u64> = VecDeque::new();
        let mut recovery = recoveries.iter().peekable();
        // The receive side, played here: every Read completes as soon as it is sent, so
        // completions behind a Read wait only for its request.
        let mut reads_done = [0u64; 64];
        for cycle in 0..2_000_000u64 {
            // At a batch boundary: wait until everything before it has completed, then
            // reset the failed QPs as the command unit would (MSNs cleared, ERROR gone).
            let at_boundary = recovery.peek().is_some_and(|r| r.0 == next);
            if let Some((_, failed, cqes_before)) =
                recovery.peek().filter(|r| at_boundary && dones.is_empty() && got_cqes.len() == r.2)
            {
                let _ = cqes_before;
                for &q in failed {
                    m.set_bit(p.qp_we, true);
                    m.set_bit(p.qp_reset, true);
                    m.set(p.qp_waddr, q as u64);
                    reads_done[q] = 0;
                    m.eval();
                    m.tick();
                    error_bits &= !(1 << q);
                }
                m.set_bit(p.qp_we, false);
                m.set_bit(p.qp_reset, false);
                recovery.next();
                continue;
            }
            let offer = next < wqes.len() && !at_boundary && rng.gen_bool(0.7);
            m.set_bit(s_valid, offer);
            if offer {
                let (qpn, wqe) = &wqes[next];
                m.set_bytes(s_wqe, &wqe.encode()[..SQ_WQE_LEN]);
                m.set_bit(s_ordered, wqe.op().is_some_and(SqOpcode::takes_ord_slot));
                m.set(s_qpn, *qpn as u64);
                let ctx: Vec<u8> = ctxs[*qpn].to_words()[..8].iter().flat_map(|w| w.to_le_bytes()).collect();
                m.set_bytes(s_ctx, &ctx);
                m.set_bit(s_error, false);
            }
            m.set(p.qp_error, error_bits);
            m.set(p.qp_rts, !error_bits);
            let (jr, cr) = (rng.gen_bool(0.6), rng.gen_bool(0.6));
            m.set_bit(job_ready, jr);
            m.set_bit(cqe_ready, cr);
            let done = dones.front().is_some_and(|&t| t <= cycle);
            m.set_bit(p.done, done);
            if done {
                dones.pop_front();
            }
            m.eval();
            let order_qpn = m.get(p.order_qpn) as usize;
            // (The port's width wraps the count, as RdmapRx's does.)
            m.set(p.order_done, reads_done[order_qpn]);
            m.eval();
            if m.get_bit(p.read_valid) {
                reads_done[m.get(p.read_qpn) as usize] += 1;
            }
            if offer && m.get_bit(s_ready) {
                next += 1;
            }
            if jr && m.get_bit(job_valid) {
                let mut body = vec![0; 52];
                m.get_bytes(inline, &mut body);
                let n = m.get(inline_len) as usize;
                let is_tagged = m.get_bit(tagged);
                let length = m.get(len);
                got_jobs.push(Job {
                    tagged: is_tagged,
                    opcode: m.get(opcode),
                    stag: m.get(jstag),
                    to: is_tagged.then(|| m.get(jto)),
                    qn: m.get(qn),
                    msn: if is_tagged { 0 } else { m.get(msn) },
                    addr: (length > 0).then(|| m.get(addr)),
                    len: length,
                    inline: body[..n].to_vec(),
                    mulpdu: m.get(mulpdu),
                    conn: m.get(conn),
                });
                let at = dones.back().copied().unwrap_or(cycle).max(cycle) + rng.gen_range(1..30);
                dones.push_back(at);
            }
            if cr && m.get_bit(cqe_valid) {
                let mut bytes = [0u8; 32];
                m.get_bytes(cqe_port, &mut bytes);
                got_cqes.push((m.get(cqn), Cqe::decode(&bytes).expect("CQE")));
            }
            if m.get_bit(p.fail[0]) {
                let qpn = m.get(p.fail[1]);
                got_fails.push(qpn);
                error_bits |= 1 << qpn; // as the command unit does
            }
            m.tick();
            if next == wqes.len() && dones.is_empty() && got_cqes.len() >= cqes.len() && cycle > 100 {
                break;
            }
        }
        assert_eq!(got_fails, fails, "QPs put in ERROR");
        assert_eq!(got_jobs.len(), jobs.len(), "number of messages");
        for (i, (g, w)) in got_jobs.iter().zip(&jobs).enumerate() {
            assert_eq!(g, w, "message {i}");
        }
        assert_eq!(got_cqes.len(), cqes.len(), "number of completions");
        for (i, (g, w)) in got_cqes.iter().zip(&cqes).enumerate() {
            assert_eq!(g, w, "completion {i}");
        }
        // Every kind of outcome was exercised, failures on live QPs many times.
        assert!(fails.len() > 100, "only {} local failures", fails.len());
        for status in [CqeStatus::Success, CqeStatus::Flushed, CqeStatus::BadOpcode, CqeStatus::LocalProtection] {
            assert!(cqes.iter().any(|(_, c)| c.status == status), "no {status:?} completion in the mix");
        }
    });
}

/// Atomics of several QPs back to back, the segmenter taking each message after a random
/// wait while the next WQEs (of other QPs) are already offered: every Atomic Request
/// carries its own QP's Request Identifier, 1, 2, 3... per QP. (The identifier is the
/// QP's count read with the WQE; read later, the count has moved on and the RAM's address
/// follows the WQE on offer.)
/// The model, reset, with one MR (index 0, key 0x5a, PD 1, LOCAL_WRITE, 1 MiB at VA
/// 0x1000) and QPs 0..`qps` in RTS.
fn one_mr_model(qps: usize) -> (Model, P, MrContext) {
    let mut m = Model::new("rnic_rdmap_tx_request").expect("rnic_rdmap_tx_request model");
    let p = ports(&m);
    m.reset_for(4);
    let access = MrAccess { local_write: true, remote_read: false, remote_write: false, remote_atomic: false };
    let mr = MrContext { key: 0x5a, access, valid: true, pd: 1, va: 0x1000, length: 1 << 20, iova: 0x10_0000 };
    let bytes: Vec<u8> = mr.to_words()[..7].iter().flat_map(|w| w.to_le_bytes()).collect();
    m.set_bit(p.mr[0], true);
    m.set(p.mr[1], 0);
    m.set_bytes(p.mr[2], &bytes);
    m.eval();
    m.tick();
    m.set_bit(p.mr[0], false);
    let mut valid_bits = vec![0u8; 32];
    valid_bits[0] = 1;
    m.set_bytes(p.mr[3], &valid_bits);
    m.set(p.qp_rts, (1 << qps) - 1);
    m.set(p.qp_error, 0);
    (m, p, mr)
}

#[test]
fn rdmap_tx_request_atomic_ids_hold_while_the_segmenter_waits() {
    trace::on_failure("rdmap_tx_request_atomic_ids_hold_while_the_segmenter_waits", || {
        const N: usize = 4;
        let mut rng = StdRng::seed_from_u64(0xa70);
        let (mut m, p, mr) = one_mr_model(N);
        let ctxs: Vec<QpContext> = (0..N)
            .map(|n| QpContext {
                state: QpState::Rts,
                pd: 1,
                conn_id: n as u16,
                mulpdu: 1024,
                ord: 4,
                ..QpContext::default()
            })
            .collect();
        let mut counts = [0u32; N];
        let (mut wqes, mut want) = (Vec::new(), Vec::new());
        for n in 0..400u64 {
            let qpn = rng.gen_range(0..N);
            let wqe = SqWqe {
                opcode: SqOpcode::Atomic as u8,
                signaled: false,
                fence: false,
                length: 8,
                wr_id: n,
                local_addr: 0x1000 + 8 * n,
                lkey: stag(0, mr.key),
                remote_stag: rng.gen(),
                remote_to: rng.gen::<u64>() & !7,
                imm: 0,
                aopcode: [0, 2][rng.gen_range(0..2)],
                add_swap: rng.gen(),
                add_swap_mask: rng.gen(),
                compare: rng.gen(),
                compare_mask: rng.gen(),
            };
            counts[qpn] += 1;
            want.push(atomic_request_of(&wqe, counts[qpn]).to_bytes().to_vec());
            wqes.push((qpn, wqe));
        }
        let [s_valid, s_ready, s_wqe, s_qpn, s_ctx, s_error, s_ordered] = p.s;
        let [job_valid, job_ready, _, opcode, .., inline, inline_len, _, _, _] = p.job;
        let (mut next, mut got) = (0, Vec::new());
        let mut dones: VecDeque<u64> = VecDeque::new();
        let mut reads_done = [0u64; 64];
        let mut stall = 0u32;
        m.set_bit(p.cqe[1], true);
        for cycle in 0..200_000u64 {
            let offer = next < wqes.len();
            m.set_bit(s_valid, offer);
            if offer {
                let (qpn, wqe) = &wqes[next];
                m.set_bytes(s_wqe, &wqe.encode()[..SQ_WQE_LEN]);
                m.set_bit(s_ordered, wqe.op().is_some_and(SqOpcode::takes_ord_slot));
                m.set(s_qpn, *qpn as u64);
                let ctx: Vec<u8> = ctxs[*qpn].to_words()[..8].iter().flat_map(|w| w.to_le_bytes()).collect();
                m.set_bytes(s_ctx, &ctx);
                m.set_bit(s_error, false);
            }
            // The segmenter: busy for up to 20 cycles at a time.
            if stall == 0 && rng.gen_bool(0.3) {
                stall = rng.gen_range(1..20);
            }
            let jr = stall == 0;
            stall = stall.saturating_sub(1);
            m.set_bit(job_ready, jr);
            let done = dones.front().is_some_and(|&t| t <= cycle);
            m.set_bit(p.done, done);
            if done {
                dones.pop_front();
            }
            m.eval();
            let order_qpn = m.get(p.order_qpn) as usize;
            // (The port's width wraps the count, as RdmapRx's does.)
            m.set(p.order_done, reads_done[order_qpn]);
            m.eval();
            if m.get_bit(p.read_valid) {
                reads_done[m.get(p.read_qpn) as usize] += 1;
            }
            if offer && m.get_bit(s_ready) {
                next += 1;
            }
            if jr && m.get_bit(job_valid) {
                assert_eq!(m.get(opcode), 10, "an Atomic Request");
                let mut body = vec![0; 52];
                m.get_bytes(inline, &mut body);
                body.truncate(m.get(inline_len) as usize);
                got.push(body);
                dones.push_back(cycle + rng.gen_range(1..10));
            }
            assert!(!m.get_bit(p.fail[0]), "a QP failed");
            m.tick();
            if got.len() == want.len() {
                break;
            }
        }
        assert_eq!(got.len(), want.len(), "Atomic Requests sent");
        for (i, (g, w)) in got.iter().zip(&want).enumerate() {
            assert_eq!(g, w, "Atomic Request {i} (QP {})", wqes[i].0);
        }
    });
}

/// WQE `n` of `opcode`: 64 octets, signaled, its own slot of the MR's buffer, to a fixed
/// remote buffer.
fn small_wqe(opcode: SqOpcode, n: u64, mr: &MrContext) -> SqWqe {
    SqWqe {
        opcode: opcode as u8,
        signaled: true,
        length: 64,
        wr_id: n,
        local_addr: 0x1000 + 64 * n,
        lkey: stag(0, mr.key),
        remote_stag: 0x77,
        remote_to: 0x2000,
        ..SqWqe::default()
    }
}

/// How many WQEs of `opcode` (on QPs 0..4 in turn) the requester takes while the segmenter
/// takes every job but reports none gone and no Read is placed: its completions pending.
fn taken_with_nothing_done(opcode: SqOpcode) -> usize {
    const N: usize = 4;
    let (mut m, p, mr) = one_mr_model(N);
    let [s_valid, s_ready, s_wqe, s_qpn, s_ctx, s_error, s_ordered] = p.s;
    m.set_bit(p.job[1], true);
    m.set_bit(p.done, false);
    m.set(p.order_done, 0);
    m.set_bit(p.cqe[1], true);
    let mut taken = 0;
    for _ in 0..2_000 {
        let qpn = taken % N;
        let ctx =
            QpContext { state: QpState::Rts, pd: 1, conn_id: qpn as u16, mulpdu: 1024, ord: 4, ..QpContext::default() };
        let wqe = small_wqe(opcode, taken as u64, &mr);
        m.set_bit(s_valid, true);
        m.set_bytes(s_wqe, &wqe.encode()[..SQ_WQE_LEN]);
        m.set_bit(s_ordered, wqe.op().is_some_and(SqOpcode::takes_ord_slot));
        m.set(s_qpn, qpn as u64);
        let ctx: Vec<u8> = ctx.to_words()[..8].iter().flat_map(|w| w.to_le_bytes()).collect();
        m.set_bytes(s_ctx, &ctx);
        m.set_bit(s_error, false);
        m.eval();
        if m.get_bit(s_ready) {
            taken += 1;
        }
        assert!(!m.get_bit(p.cqe[0]), "a completion before its message was reported gone");
        m.tick();
    }
    taken
}

/// Enough in flight for small messages across a 200-cycle payload read: 32 completions
/// pending, Reads (and so atomics, which share their ORD slots and count) as many as the
/// others: only their QPs' ORD limits them (the receive side's full flags, held low here).
#[test]
fn rdmap_tx_request_keeps_32_completions_pending_reads_too() {
    trace::on_failure("rdmap_tx_request_keeps_32_completions_pending_reads_too", || {
        assert_eq!(taken_with_nothing_done(SqOpcode::RdmaWrite), 32, "Writes taken with none reported gone");
        assert_eq!(taken_with_nothing_done(SqOpcode::RdmaRead), 32, "Reads taken with none placed");
    });
}

/// A Send waits for its message; behind it on its QP come 31 Reads, each placed at once
/// (the receive side's count runs 31 ahead of what the Send waits for). When the messages
/// are reported gone, all 32 complete in WQE order, each exactly as the model's CQE. With
/// the count wrapping at 32 or less, "31 ahead" reads as "not yet" and the queue stops.
#[test]
fn rdmap_tx_request_completes_a_send_with_31_later_reads_already_placed() {
    trace::on_failure("rdmap_tx_request_completes_a_send_with_31_later_reads_already_placed", || {
        const READS: usize = 31;
        let (mut m, p, mr) = one_mr_model(1);
        let [s_valid, s_ready, s_wqe, s_qpn, s_ctx, s_error, s_ordered] = p.s;
        let [_, cqe_ready, _, cqe_port] = p.cqe;
        let ctx = QpContext { state: QpState::Rts, pd: 1, mulpdu: 1024, ord: 4, ..QpContext::default() };
        let ctx: Vec<u8> = ctx.to_words()[..8].iter().flat_map(|w| w.to_le_bytes()).collect();
        let wqes: Vec<SqWqe> = (0..=READS)
            .map(|n| small_wqe(if n == 0 { SqOpcode::Send } else { SqOpcode::RdmaRead }, n as u64, &mr))
            .collect();
        m.set_bit(p.job[1], true);
        m.set_bit(cqe_ready, true);
        let (mut taken, mut placed, mut gone, mut got) = (0, 0u64, 0, Vec::new());
        for cycle in 0..2_000 {
            m.set_bit(s_valid, taken < wqes.len());
            if let Some(wqe) = wqes.get(taken) {
                m.set_bytes(s_wqe, &wqe.encode()[..SQ_WQE_LEN]);
                m.set_bit(s_ordered, wqe.op().is_some_and(SqOpcode::takes_ord_slot));
                m.set(s_qpn, 0);
                m.set_bytes(s_ctx, &ctx);
                m.set_bit(s_error, false);
            }
            // Every message is reported gone once all are taken and their Reads placed.
            let done = taken == wqes.len() && placed == READS as u64 && gone < wqes.len() && cycle % 2 == 0;
            m.set_bit(p.done, done);
            gone += usize::from(done);
            m.eval();
            m.set(p.order_done, placed);
            m.eval();
            if m.get_bit(p.read_valid) {
                placed += 1;
            }
            if taken < wqes.len() && m.get_bit(s_ready) {
                taken += 1;
            }
            if m.get_bit(p.cqe[0]) {
                assert!(got.len() < gone, "completion {} before its message was reported gone", got.len());
                let mut bytes = [0u8; 32];
                m.get_bytes(cqe_port, &mut bytes);
                got.push(Cqe::decode(&bytes).expect("CQE"));
            }
            m.tick();
        }
        assert_eq!((taken, placed), (READS + 1, READS as u64), "WQEs taken, Reads placed");
        let want: Vec<Cqe> = wqes.iter().map(|w| sq_cqe(0, w, CqeStatus::Success)).collect();
        assert_eq!(got, want, "the completions, in WQE order");
    });
}

/// Reads offered back to back on one QP whose ORD is `ord`, none ever answered: the bench
/// plays the receive side's table of outstanding Reads, whose full flag (`reads_full`) is
/// a register set the cycle after the push that fills the QP's ORD slots. Returns the
/// most Reads outstanding at once and the Reads pushed in all.
fn reads_pushed_against_a_full_flag_a_cycle_late(ord: usize) -> (usize, usize) {
    let (mut m, p, mr) = one_mr_model(1);
    let [s_valid, _, s_wqe, s_qpn, s_ctx, s_error, s_ordered] = p.s;
    let reads_full = m.port("reads_full");
    m.set_bit(p.job[1], true);
    m.set_bit(p.done, false);
    m.set(p.order_done, 0);
    m.set_bit(p.cqe[1], true);
    let ctx =
        QpContext { state: QpState::Rts, pd: 1, conn_id: 0, mulpdu: 1024, ord: ord as u8, ..QpContext::default() };
    let ctx: Vec<u8> = ctx.to_words()[..8].iter().flat_map(|w| w.to_le_bytes()).collect();
    let (mut outstanding, mut most, mut pushed, mut full) = (0, 0, 0, false);
    for n in 0..400_u64 {
        let wqe = small_wqe(SqOpcode::RdmaRead, n, &mr);
        m.set_bit(s_valid, true);
        m.set_bytes(s_wqe, &wqe.encode()[..SQ_WQE_LEN]);
        m.set_bit(s_ordered, wqe.op().is_some_and(SqOpcode::takes_ord_slot));
        m.set(s_qpn, 0);
        m.set_bytes(s_ctx, &ctx);
        m.set_bit(s_error, false);
        m.set(reads_full, full as u64);
        m.eval();
        if m.get_bit(p.read_valid) {
            assert_eq!(m.get(p.read_qpn), 0);
            outstanding += 1;
            pushed += 1;
            most = most.max(outstanding);
        }
        // (RdmapRx: `full` is set from the push that fills the QP's slots, a cycle later.)
        full = outstanding >= ord;
        m.tick();
    }
    (most, pushed)
}

/// The request reaches the receive side's table a cycle after its checks and the table's
/// full flag a cycle after that: the next Read of the QP must not be taken on the flag of
/// before. Never more Reads outstanding than ORD, and no fewer sent than ORD.
#[test]
fn rdmap_tx_request_sends_no_read_beyond_ord_while_the_full_flag_lags() {
    trace::on_failure("rdmap_tx_request_sends_no_read_beyond_ord_while_the_full_flag_lags", || {
        for ord in 1..=usize::from(MAX_READS) {
            assert_eq!(reads_pushed_against_a_full_flag_a_cycle_late(ord), (ord, ord), "ORD {ord}");
        }
    });
}

/// The ready comes from registers, so whether the offered WQE must wait is decided a cycle
/// ahead, on the offer of that cycle. SQ fetch's head is withdrawn (its QP reset) and
/// replaced by a Read of a QP at its ORD. The Read must not be taken on the decision made
/// about the withdrawn head: it waits while its QP's `reads_full` bit is set, and goes
/// once the bit falls (`clear_at`). Returns the cycle, counted from the Read's first
/// offer, at which it was taken.
fn read_offered_after_a_withdrawn_offer(clear_at: u64) -> Option<u64> {
    let (mut m, p, mr) = one_mr_model(2);
    let [s_valid, s_ready, s_wqe, s_qpn, s_ctx, s_error, s_ordered] = p.s;
    let reads_full = m.port("reads_full");
    m.set_bit(p.job[1], true);
    m.set_bit(p.done, false);
    m.set(p.order_done, 0);
    m.set_bit(p.cqe[1], true);
    let ctx = QpContext { state: QpState::Rts, pd: 1, mulpdu: 1024, ord: 1, ..QpContext::default() };
    let ctx: Vec<u8> = ctx.to_words()[..8].iter().flat_map(|w| w.to_le_bytes()).collect();
    m.set_bytes(s_ctx, &ctx);
    m.set_bit(s_error, false);
    // QP 0 has its one ORD slot taken. SQ fetch's head is QP 1's Send, withdrawn in this
    // cycle (`s_valid` low while its QP is reset; the data still shows it).
    m.set(reads_full, 0b01);
    let send = small_wqe(SqOpcode::Send, 1, &mr);
    m.set_bytes(s_wqe, &send.encode()[..SQ_WQE_LEN]);
    m.set(s_qpn, 1);
    m.set_bit(s_ordered, false);
    m.set_bit(s_valid, false);
    m.tick();
    let read = small_wqe(SqOpcode::RdmaRead, 2, &mr);
    m.set_bytes(s_wqe, &read.encode()[..SQ_WQE_LEN]);
    m.set(s_qpn, 0);
    m.set_bit(s_ordered, true);
    m.set_bit(s_valid, true);
    for cycle in 0..20u64 {
        if cycle == clear_at {
            m.set(reads_full, 0);
        }
        m.eval();
        if m.get_bit(s_ready) {
            return Some(cycle);
        }
        m.tick();
    }
    None
}

#[test]
fn rdmap_tx_request_holds_a_read_at_ord_offered_after_a_withdrawn_offer() {
    trace::on_failure("rdmap_tx_request_holds_a_read_at_ord_offered_after_a_withdrawn_offer", || {
        for clear_at in [3, 8] {
            // The flag falls at `clear_at`; `held` has it a cycle later.
            assert_eq!(read_offered_after_a_withdrawn_offer(clear_at), Some(clear_at + 1), "slot freed at {clear_at}");
        }
        assert_eq!(read_offered_after_a_withdrawn_offer(u64::MAX), None, "the slot never freed");
    });
}

/// A Send's completion and its QP's reset, `k` cycles after the segmenter reports the
/// message gone. The CQE is handed over at most in the reset's own cycle, never after it
/// (the QP's work is dropped by the reset); and once the reset comes late enough, it was
/// handed over, once. Returns the cycles, counted from the report, at which it was.
fn cqe_cycles_around_a_reset(k: u64) -> Vec<u64> {
    let (mut m, p, mr) = one_mr_model(1);
    let [s_valid, s_ready, s_wqe, s_qpn, s_ctx, s_error, _] = p.s;
    let ctx = QpContext { state: QpState::Rts, pd: 1, mulpdu: 1024, ord: 4, ..QpContext::default() };
    let ctx: Vec<u8> = ctx.to_words()[..8].iter().flat_map(|w| w.to_le_bytes()).collect();
    m.set_bit(p.job[1], true);
    m.set_bit(p.cqe[1], true);
    m.set(p.order_done, 0);
    m.set_bit(s_valid, true);
    m.set_bytes(s_wqe, &small_wqe(SqOpcode::Send, 7, &mr).encode()[..SQ_WQE_LEN]);
    m.set(s_qpn, 0);
    m.set_bytes(s_ctx, &ctx);
    m.set_bit(s_error, false);
    // (The ready is from registers: an offer is taken from its second cycle on.)
    m.eval();
    assert!(!m.get_bit(s_ready), "no WQE taken in the cycle it is first offered");
    m.tick();
    m.eval();
    assert!(m.get_bit(s_ready), "the Send is taken");
    m.tick();
    m.set_bit(s_valid, false);
    for _ in 0..20 {
        m.eval();
        assert!(!m.get_bit(p.cqe[0]), "a completion before its message was reported gone");
        m.tick();
    }
    let mut cqes = Vec::new();
    for cycle in 0..20u64 {
        m.set_bit(p.done, cycle == 0);
        m.set_bit(p.qp_we, cycle == k);
        m.set_bit(p.qp_reset, cycle == k);
        m.set(p.qp_waddr, 0);
        m.eval();
        if m.get_bit(p.cqe[0]) {
            assert!(cycle <= k, "the CQE handed over at cycle {cycle}, after the QP's reset at {k}");
            cqes.push(cycle);
        }
        m.tick();
    }
    cqes
}

#[test]
fn rdmap_tx_request_hands_over_no_cqe_after_its_qps_reset() {
    trace::on_failure("rdmap_tx_request_hands_over_no_cqe_after_its_qps_reset", || {
        for k in 0..8 {
            let cqes = cqe_cycles_around_a_reset(k);
            assert!(cqes.len() <= 1, "reset at {k}: CQEs at {cqes:?}");
            if k >= 4 {
                assert_eq!(cqes.len(), 1, "reset at {k}, after the completion was due: its CQE");
            }
        }
    });
}
