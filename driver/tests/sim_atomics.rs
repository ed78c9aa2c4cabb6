//! RFC 7306 between two Verilated RNICs (`rnic_top`) driven by the real driver: masked
//! FetchAdd and CmpSwap against `rnic_proto::atomic`, atomicity across QPs (on host memory
//! and on device memory), the §7 ordering rules, and Immediate Data (the wire vectors and
//! error cases: `sim_atomic_wire.rs`).
#![cfg(feature = "sim")]

mod common;

use std::time::Duration;

use common::{collect, linked_pair, Targets};
use rand::rngs::StdRng;
use rand::{Rng, SeedableRng};
use rnic_driver::sim::SimHal;
use rnic_driver::{
    CompletionQueue, CqeOpcode, CqeStatus, Device, DmaBuffer, Hal, MemoryRegion, MrAccess, ProtectionDomain, QpCaps,
    QueuePair, RecvRequest, WorkRequest,
};
use rnic_proto::atomic::{masked_cmp_swap, masked_fetch_add};

const ALL: MrAccess = MrAccess { local_write: true, remote_read: true, remote_write: true, remote_atomic: true };

fn caps(conn_id: u16) -> QpCaps {
    QpCaps {
        sq_log_size: 6,
        rq_log_size: 5,
        mulpdu: 1460,
        ird: 4,
        ord: 4,
        crc: true,
        markers_tx: false,
        markers_rx: false,
        conn_id,
    }
}

fn word(buf: &DmaBuffer<'_, SimHal>, offset: usize) -> u64 {
    u64::from_le_bytes(std::array::from_fn(|i| buf.read_u8(offset + i)))
}

fn set_word(buf: &DmaBuffer<'_, SimHal>, offset: usize, value: u64) {
    buf.write_bytes(offset, &value.to_le_bytes());
}

/// One side of a pair: a 64 KiB buffer with an MR of every right, a CQ, one QP in RTS.
struct Side<'d> {
    dev: &'d Device<SimHal>,
    buf: &'d DmaBuffer<'d, SimHal>,
    mr: MemoryRegion<'d, SimHal>,
    cq: &'d CompletionQueue<'d, SimHal>,
    qp: QueuePair<'d, SimHal>,
}

/// Runs `f` on A (the requester) and B (the responder), linked, their QPs connected.
fn with_pair(f: impl for<'d> FnOnce(Side<'d>, Side<'d>)) {
    let devs = linked_pair();
    let devs = [&devs.0, &devs.1];
    let pds = devs.map(|d| ProtectionDomain::new(d).expect("PD"));
    let bufs = devs.map(|d| d.alloc_dma(65536).expect("DMA"));
    let cqs = devs.map(|d| CompletionQueue::new(d, 8, 0).expect("CQ"));
    let mut sides = (0..2).map(|i| {
        let mut qp = QueuePair::new(devs[i], &pds[i], &cqs[i], &cqs[i], caps(0)).expect("QP");
        qp.ready().expect("RTS");
        let mr = MemoryRegion::register(&pds[i], &bufs[i], ALL).expect("MR");
        Side { dev: devs[i], buf: &bufs[i], mr, cq: &cqs[i], qp }
    });
    let (a, b) = (sides.next().expect("A"), sides.next().expect("B"));
    f(a, b);
}

#[test]
fn atom_01_09_10_11_fetch_add_and_cmp_swap_return_the_original_and_change_memory_in_place() {
    with_pair(|mut a, b| {
        // ATOM-11 / V7: memory 29 00 .. 00, FetchAdd +1 -> 2a 00 .. 00, original 0x29.
        set_word(b.buf, 0x1000, 0x29);
        // V13 row 1: two 32-bit fields.
        set_word(b.buf, 0x1008, 0x0000_0001_FFFF_FFFF);
        // V14 row 1: a masked compare that matches, a masked swap.
        set_word(b.buf, 0x1010, 0xAAAA_0000_BBBB_0000);
        // V14 row 3: a compare that fails leaves memory.
        set_word(b.buf, 0x1018, 0x1111);
        // ATOM-01: the capability probe, FetchAdd with Add Data 0.
        set_word(b.buf, 0x1020, 0x0123_4567_89AB_CDEF);
        a.buf.write_bytes(0, &[0xEE; 64]);
        let fa = |wr_id, at: u64, add, add_mask| WorkRequest::FetchAdd {
            wr_id,
            local: a.mr.sge(wr_id * 8, 8).unwrap(),
            remote: b.mr.remote(at).unwrap(),
            add,
            add_mask,
            signaled: true,
        };
        let cs = |wr_id, at: u64, compare, compare_mask, swap, swap_mask| WorkRequest::CmpSwap {
            wr_id,
            local: a.mr.sge(wr_id * 8, 8).unwrap(),
            remote: b.mr.remote(at).unwrap(),
            compare,
            compare_mask,
            swap,
            swap_mask,
            signaled: true,
        };
        a.qp.post_send_batch(&[
            fa(0, 0x1000, 1, 0),
            fa(1, 0x1008, 1, 0x8000_0000_8000_0000),
            cs(2, 0x1010, 0xAAAA_0000_FFFF_FFFF, 0xFFFF_FFFF_0000_0000, 0x1234_5678_1234_5678, 0x0000_0000_FFFF_FFFF),
            cs(3, 0x1018, 0x1112, u64::MAX, 0x2222, u64::MAX),
            fa(4, 0x1020, 0, 0),
        ])
        .expect("post");
        let done = collect(a.dev, a.cq, 5);
        let got: Vec<_> = done.iter().map(|c| (c.wr_id, c.opcode, c.status, c.byte_len)).collect();
        let want: Vec<_> = (0..5).map(|i| (i, CqeOpcode::Atomic, CqeStatus::Success, 8)).collect();
        assert_eq!(got, want, "every atomic completes, in order");
        let originals: Vec<u64> = (0..5).map(|i| word(a.buf, i * 8)).collect();
        assert_eq!(originals, [0x29, 0x0000_0001_FFFF_FFFF, 0xAAAA_0000_BBBB_0000, 0x1111, 0x0123_4567_89AB_CDEF]);
        let after: Vec<u64> = (0..5).map(|i| word(b.buf, 0x1000 + i * 8)).collect();
        assert_eq!(after, [0x2a, 0x0000_0001_0000_0000, 0xAAAA_0000_1234_5678, 0x1111, 0x0123_4567_89AB_CDEF]);
        assert_eq!(word(a.buf, 40), 0xEEEE_EEEE_EEEE_EEEE, "nothing past the result buffers");
        b.dev.hal().run_idle(2_000);
        assert!(b.cq.poll().expect("CQE").is_none(), "atomics complete nothing at the responder");
    });
}

/// ATOM-09, ATOM-10, ATOM-12 at scale: random masked FetchAdds and CmpSwaps from four QPs
/// on a few shared words, each original value and the final memory equal to applying the
/// `rnic_proto` functions in the order the responder saw them (each QP's own order is
/// kept; the interleaving is found from the returned originals).
#[test]
fn atom_09_10_12_random_masked_atomics_from_four_qps_equal_the_reference() {
    random_masked_atomics(false);
}

/// The same on words of the responder's device memory.
#[test]
fn atom_09_10_12_random_masked_atomics_on_device_memory_equal_the_reference() {
    random_masked_atomics(true);
}

fn random_masked_atomics(device_memory: bool) {
    let (a, b) = linked_pair();
    let (pda, pdb) = (ProtectionDomain::new(&a).expect("PD"), ProtectionDomain::new(&b).expect("PD"));
    const PER_QP: usize = 2500;
    let bufa = a.alloc_dma(4 * PER_QP * 8).expect("DMA");
    let bufb = Targets::new(&b, device_memory, 4096);
    let mra = MemoryRegion::register(&pda, &bufa, ALL).expect("MR");
    let mrb = bufb.register(&pdb, ALL);
    let (cqa, cqb) = (CompletionQueue::new(&a, 12, 0).expect("CQ"), CompletionQueue::new(&b, 8, 0).expect("CQ"));
    let mut qpas = Vec::new();
    let mut qpbs = Vec::new();
    for q in 0..4u16 {
        let mut qa = QueuePair::new(&a, &pda, &cqa, &cqa, caps(q)).expect("QP");
        let mut qb = QueuePair::new(&b, &pdb, &cqb, &cqb, caps(q)).expect("QP");
        qa.ready().expect("RTS");
        qb.ready().expect("RTS");
        qpas.push(qa);
        qpbs.push(qb);
    }
    let mut rng = StdRng::seed_from_u64(7306);
    const WORDS: usize = 3;
    let mut memory: Vec<u64> = (0..WORDS).map(|_| rng.gen()).collect();
    for (i, v) in memory.iter().enumerate() {
        bufb.set_word(i * 8, *v);
    }
    // Each QP's operations, posted in windows the SQ holds.
    let mut ops: Vec<Vec<(usize, WorkRequest)>> = vec![Vec::new(); 4];
    for (q, list) in ops.iter_mut().enumerate() {
        for i in 0..PER_QP {
            let id = (q * PER_QP + i) as u64;
            let target = rng.gen_range(0..WORDS);
            let local = mra.sge(id * 8, 8).unwrap();
            let remote = mrb.remote(target as u64 * 8).unwrap();
            let mask = |rng: &mut StdRng| match rng.gen_range(0..4) {
                0 => 0,
                1 => u64::MAX,
                _ => rng.gen::<u64>() & rng.gen::<u64>(),
            };
            let wr = if rng.gen() {
                WorkRequest::FetchAdd {
                    wr_id: id,
                    local,
                    remote,
                    add: rng.gen(),
                    add_mask: mask(&mut rng),
                    signaled: true,
                }
            } else {
                // Compares that match about half of the time: the compare mask is narrow.
                let compare_mask = if rng.gen() { 0 } else { 1 << rng.gen_range(0..64) };
                WorkRequest::CmpSwap {
                    wr_id: id,
                    local,
                    remote,
                    compare: rng.gen(),
                    compare_mask,
                    swap: rng.gen(),
                    swap_mask: mask(&mut rng),
                    signaled: true,
                }
            };
            list.push((target, wr));
        }
    }
    let mut posted = [0usize; 4];
    let mut completed = 0usize;
    let mut outstanding = [0usize; 4];
    for _ in 0..1_000_000 {
        for q in 0..4 {
            while posted[q] < PER_QP && outstanding[q] < 32 {
                qpas[q].post_send(&ops[q][posted[q]].1).expect("post");
                posted[q] += 1;
                outstanding[q] += 1;
            }
        }
        while let Some(c) = cqa.poll().expect("CQE") {
            assert_eq!((c.opcode, c.status), (CqeOpcode::Atomic, CqeStatus::Success), "{c:?}");
            outstanding[c.wr_id as usize / PER_QP] -= 1;
            completed += 1;
        }
        if completed == 4 * PER_QP {
            break;
        }
        a.hal().run_idle(20);
    }
    assert_eq!(completed, 4 * PER_QP, "every atomic completes");
    // Replay each word in an order the responder could have used: each QP's operations
    // on it in their own order, the next one being one whose returned original is the
    // word's current value. Operations that leave the word unchanged go first (a failed
    // CmpSwap and a FetchAdd that returned the same value: the CmpSwap came first, or it
    // would have seen the sum).
    let originals: Vec<u64> = (0..4 * PER_QP).map(|i| word(&bufa, i * 8)).collect();
    let apply = |wr: &WorkRequest, v: u64| match *wr {
        WorkRequest::FetchAdd { add, add_mask, .. } => masked_fetch_add(v, add, add_mask),
        WorkRequest::CmpSwap { compare, compare_mask, swap, swap_mask, .. } => {
            masked_cmp_swap(v, swap, swap_mask, compare, compare_mask)
        }
        _ => unreachable!(),
    };
    for (w, value) in memory.iter_mut().enumerate() {
        // Per QP: (returned original, request) of its operations on word w, in order.
        let lists: Vec<Vec<(u64, &WorkRequest)>> = (0..4)
            .map(|q| {
                let on_w = ops[q].iter().enumerate().filter(|(_, (t, _))| *t == w);
                on_w.map(|(i, (_, wr))| (originals[q * PER_QP + i], wr)).collect()
            })
            .collect();
        let mut next = [0usize; 4];
        let total: usize = lists.iter().map(Vec::len).sum();
        while next.iter().sum::<usize>() < total {
            let matching = |q: usize, next: &[usize; 4], v: u64| lists[q].get(next[q]).filter(|(orig, _)| *orig == v);
            let mut applied = false;
            for q in 0..4 {
                while let Some((_, wr)) = matching(q, &next, *value) {
                    if apply(wr, *value) != *value {
                        break;
                    }
                    next[q] += 1;
                    applied = true;
                }
            }
            if !applied {
                let q = (0..4).find(|&q| matching(q, &next, *value).is_some());
                let q = q
                    .unwrap_or_else(|| panic!("word {w}: no QP's next atomic returned the value {value:#x}: {next:?}"));
                *value = apply(lists[q][next[q]].1, *value);
                next[q] += 1;
            }
        }
    }
    for (i, v) in memory.iter().enumerate() {
        assert_eq!(bufb.word(i * 8), *v, "word {i} ends as the reference");
    }
}

/// ATOM-12 (and the acceptance): four QPs each FetchAdd(+1) one word 10 000 times;
/// the word ends at exactly 40 000 and the 40 000 returned originals are 0..39 999, each once.
#[test]
fn atom_12_four_qps_fetch_add_one_counter_forty_thousand_times() {
    forty_thousand_tickets(false);
}

/// The same with the counter in the responder's device memory.
#[test]
fn atom_12_four_qps_fetch_add_one_counter_on_device_memory_forty_thousand_times() {
    forty_thousand_tickets(true);
}

fn forty_thousand_tickets(device_memory: bool) {
    let (a, b) = linked_pair();
    let (pda, pdb) = (ProtectionDomain::new(&a).expect("PD"), ProtectionDomain::new(&b).expect("PD"));
    const PER_QP: usize = 10_000;
    let bufa = a.alloc_dma(4 * PER_QP * 8).expect("DMA");
    let bufb = Targets::new(&b, device_memory, 4096);
    let mra = MemoryRegion::register(&pda, &bufa, ALL).expect("MR");
    let mrb = bufb.register(&pdb, ALL);
    let (cqa, cqb) = (CompletionQueue::new(&a, 12, 0).expect("CQ"), CompletionQueue::new(&b, 8, 0).expect("CQ"));
    let mut qps = Vec::new();
    for q in 0..4u16 {
        let mut qa = QueuePair::new(&a, &pda, &cqa, &cqa, caps(q)).expect("QP");
        let mut qb = QueuePair::new(&b, &pdb, &cqb, &cqb, caps(q)).expect("QP");
        qa.ready().expect("RTS");
        qb.ready().expect("RTS");
        qps.push((qa, qb));
    }
    bufb.set_word(64, 0);
    let mut posted = [0usize; 4];
    let mut outstanding = [0usize; 4];
    let mut completed = 0;
    for _ in 0..2_000_000 {
        for (q, (qa, _)) in qps.iter_mut().enumerate() {
            while posted[q] < PER_QP && outstanding[q] < 32 {
                let wr_id = (q * PER_QP + posted[q]) as u64;
                let local = mra.sge(wr_id * 8, 8).unwrap();
                let remote = mrb.remote(64).unwrap();
                qa.post_send(&WorkRequest::FetchAdd { wr_id, local, remote, add: 1, add_mask: 0, signaled: true })
                    .expect("post");
                posted[q] += 1;
                outstanding[q] += 1;
            }
        }
        while let Some(c) = cqa.poll().expect("CQE") {
            assert_eq!((c.opcode, c.status), (CqeOpcode::Atomic, CqeStatus::Success), "{c:?}");
            outstanding[c.wr_id as usize / PER_QP] -= 1;
            completed += 1;
        }
        if completed == 4 * PER_QP {
            break;
        }
        a.hal().run_idle(20);
    }
    assert_eq!(completed, 4 * PER_QP, "every FetchAdd completes");
    assert_eq!(bufb.word(64), 4 * PER_QP as u64, "the counter");
    let mut originals: Vec<u64> = (0..4 * PER_QP).map(|i| word(&bufa, i * 8)).collect();
    // Each QP sees its own values rise.
    for q in 0..4 {
        let mine = &originals[q * PER_QP..(q + 1) * PER_QP];
        assert!(mine.windows(2).all(|w| w[0] < w[1]), "QP {q}'s originals increase");
    }
    originals.sort_unstable();
    assert!(originals.iter().enumerate().all(|(i, &v)| v == i as u64), "the originals are 0..39 999, each once");
}

/// IMM-01, IMM-02, IMM-04, IMM-05: Immediate Data takes the next receive in the Send MSN
/// space and arrives in its completion (SOLICITED only for the SE opcode, and only that one
/// wakes a CQ armed for solicited events); a Write with Immediate completes at the peer
/// only once the Write's octets are in memory.
#[test]
fn imm_01_02_04_05_immediate_data_completes_receives_in_order_after_the_write_before_it() {
    with_pair(|mut a, mut b| {
        let mut rng = StdRng::seed_from_u64(8);
        let content: Vec<u8> = (0..4096).map(|_| rng.gen()).collect();
        a.buf.write_bytes(0, &content);
        b.buf.write_bytes(0, &[0x77; 16384]);
        for i in 0..4 {
            b.qp.post_recv(&RecvRequest { wr_id: 100 + i, local: b.mr.sge(8192 + i * 1024, 1024).unwrap() })
                .expect("recv");
        }
        b.cq.arm(true);
        let send = WorkRequest::Send {
            wr_id: 1,
            local: a.mr.sge(0, 100).unwrap(),
            solicited: false,
            invalidate: None,
            signaled: true,
        };
        let imm = WorkRequest::Immediate { wr_id: 2, data: [1, 2, 3, 4, 5, 6, 7, 8], solicited: false, signaled: true };
        a.qp.post_send_batch(&[send, imm]).expect("post");
        let cb = collect(b.dev, b.cq, 2);
        let got: Vec<_> = cb.iter().map(|c| (c.wr_id, c.opcode, c.status, c.byte_len, c.imm, c.solicited)).collect();
        assert_eq!(
            got,
            [
                (100, CqeOpcode::Recv, CqeStatus::Success, 100, None, false),
                (101, CqeOpcode::RecvImm, CqeStatus::Success, 8, Some([1, 2, 3, 4, 5, 6, 7, 8]), false)
            ]
        );
        assert_eq!(
            (9216..10240).map(|i| b.buf.read_u8(i)).collect::<Vec<_>>(),
            vec![0x77; 1024],
            "Immediate Data places nothing"
        );
        assert!(
            !b.dev.hal().wait_irq(0, Duration::from_micros(10)).unwrap(),
            "plain Immediate Data raises no solicited event"
        );

        // Write with Immediate with SE: when the receive completes, the 4 KiB are there.
        let wimm = WorkRequest::WriteWithImmediate {
            wr_id: 3,
            local: a.mr.sge(0, 4096).unwrap(),
            remote: b.mr.remote(0).unwrap(),
            data: *b"imm-data",
            solicited: true,
            signaled: true,
        };
        a.qp.post_send(&wimm).expect("post");
        let mut done = None;
        for _ in 0..5_000 {
            if let Some(c) = b.cq.poll().expect("CQE") {
                // Read memory at once: nothing may still be on its way.
                let placed: Vec<u8> = (0..4096).map(|i| b.buf.read_u8(i)).collect();
                done = Some((c, placed));
                break;
            }
            b.dev.hal().run_idle(10);
        }
        let (c, placed) = done.expect("the Write with Immediate completes at B");
        assert_eq!((c.wr_id, c.opcode, c.imm, c.solicited), (102, CqeOpcode::RecvImm, Some(*b"imm-data"), true));
        assert!(placed == content, "the Write was placed before the Immediate Data completed");
        assert!(
            b.dev.hal().wait_irq(0, Duration::from_micros(10)).unwrap(),
            "Immediate Data with SE raises the solicited event"
        );
        let ca = collect(a.dev, a.cq, 3);
        let got: Vec<_> = ca.iter().map(|c| (c.wr_id, c.opcode, c.status)).collect();
        assert_eq!(
            got,
            [
                (1, CqeOpcode::Send, CqeStatus::Success),
                (2, CqeOpcode::Send, CqeStatus::Success),
                (3, CqeOpcode::Send, CqeStatus::Success)
            ],
            "the sender completes each signaled request once (the Write of a Write with Immediate is unsignaled)"
        );
    });
}

/// ATOM-14: Write(X to T) then FetchAdd(T): the original value returned is X's first word
/// (the atomic runs only once the Write is placed); Read after the atomic sees its result.
#[test]
fn atom_14_write_then_fetch_add_then_read_see_each_other_in_order() {
    with_pair(|mut a, b| {
        for round in 0..20u64 {
            let x = 0x1111_0000_0000_0000 | round << 8;
            set_word(a.buf, 0, x);
            set_word(b.buf, 0x800, 0xDEAD);
            let write = WorkRequest::Write {
                wr_id: 1,
                local: a.mr.sge(0, 8).unwrap(),
                remote: b.mr.remote(0x800).unwrap(),
                signaled: true,
            };
            let fa = WorkRequest::FetchAdd {
                wr_id: 2,
                local: a.mr.sge(64, 8).unwrap(),
                remote: b.mr.remote(0x800).unwrap(),
                add: 5,
                add_mask: 0,
                signaled: true,
            };
            let read = WorkRequest::Read {
                wr_id: 3,
                local: a.mr.sge(128, 8).unwrap(),
                remote: b.mr.remote(0x800).unwrap(),
                signaled: true,
            };
            a.qp.post_send_batch(&[write, fa, read]).expect("post");
            let done = collect(a.dev, a.cq, 3);
            assert_eq!(
                done.iter().map(|c| (c.wr_id, c.status)).collect::<Vec<_>>(),
                [(1, CqeStatus::Success), (2, CqeStatus::Success), (3, CqeStatus::Success)]
            );
            assert_eq!(word(a.buf, 64), x, "round {round}: the FetchAdd saw the Write");
            assert_eq!(word(a.buf, 128), x + 5, "round {round}: the Read saw the FetchAdd");
        }
    });
}

/// ATOM-14, §7 rows RDMA Read → Atomic and Atomic → RDMA Read: Read(T), FetchAdd(T, +5),
/// Read(T) in one batch; the first Read sees T before the atomic, the atomic returns that
/// same value, and the last Read sees the sum.
#[test]
fn atom_14_read_then_fetch_add_then_read_see_memory_in_order() {
    with_pair(|mut a, b| {
        for round in 0..20u64 {
            let t = 0x3333_0000_0000_0000 | round << 16;
            set_word(b.buf, 0x900, t);
            let remote = b.mr.remote(0x900).unwrap();
            let first = WorkRequest::Read { wr_id: 1, local: a.mr.sge(0, 8).unwrap(), remote, signaled: true };
            let local = a.mr.sge(64, 8).unwrap();
            let fa = WorkRequest::FetchAdd { wr_id: 2, local, remote, add: 5, add_mask: 0, signaled: true };
            let last = WorkRequest::Read { wr_id: 3, local: a.mr.sge(128, 8).unwrap(), remote, signaled: true };
            a.qp.post_send_batch(&[first, fa, last]).expect("post");
            let done = collect(a.dev, a.cq, 3);
            let got: Vec<_> = done.iter().map(|c| (c.wr_id, c.status)).collect();
            assert_eq!(got, [(1, CqeStatus::Success), (2, CqeStatus::Success), (3, CqeStatus::Success)]);
            assert_eq!(word(a.buf, 0), t, "round {round}: the first Read saw memory before the atomic");
            assert_eq!(word(a.buf, 64), t, "round {round}: the atomic's original");
            assert_eq!(word(a.buf, 128), t + 5, "round {round}: the last Read saw the atomic");
        }
    });
}
