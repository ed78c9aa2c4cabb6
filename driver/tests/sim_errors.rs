//! Errors on one `rnic_top` (against a raw peer) and on two linked ones: a refused Read
//! Request gets exactly its Terminate (with the Read Request header) and no response; every
//! segment of a Send with Invalidate is checked; and whatever puts a QP in ERROR — a
//! failing Send, a peer's Terminate, the driver tearing the stream down under load — every
//! work request completes exactly once (verbs flush semantics), nothing stays in the rings,
//! and the QP can be reset and used again.
#![cfg(feature = "sim")]

mod common;

use std::collections::HashMap;

use common::{collect, frame, linked_pair, raw_device, run_until, terminate_code, ulpdu_of};
use rand::rngs::StdRng;
use rand::{Rng, SeedableRng};
use rnic_driver::sim::SimHal;
use rnic_driver::{
    Completion, CompletionQueue, CqeOpcode, CqeStatus, Device, MemoryRegion, MrAccess, ProtectionDomain, QpCaps,
    QpState, QueuePair, RecvRequest, WorkRequest,
};
use rnic_proto::rdmap::{AtomicRequest, Opcode, RdmapHeader, ReadRequest, Segment};
use rnic_proto::terminate::{TermCode, Terminate};

const ALL: MrAccess = MrAccess { local_write: true, remote_read: true, remote_write: true, remote_atomic: true };
const LOCAL: MrAccess = MrAccess { local_write: true, remote_read: false, remote_write: false, remote_atomic: false };

fn caps(conn_id: u16) -> QpCaps {
    QpCaps {
        sq_log_size: 6,
        rq_log_size: 6,
        mulpdu: 1024,
        ird: 4,
        ord: 4,
        crc: true,
        markers_tx: false,
        markers_rx: false,
        conn_id,
    }
}

/// A QP of `pd` in RTS completing into `cq`, its peer on connection 1.
fn qp_in_rts<'d>(
    dev: &'d Device<SimHal>,
    pd: &'d ProtectionDomain<'d, SimHal>,
    cq: &'d CompletionQueue<'d, SimHal>,
) -> QueuePair<'d, SimHal> {
    let mut qp = QueuePair::new(dev, pd, cq, cq, caps(1)).expect("QP");
    qp.ready().expect("RTS");
    qp
}

fn hex(s: &str) -> Vec<u8> {
    (0..s.len()).step_by(2).map(|i| u8::from_str_radix(&s[i..i + 2], 16).expect("hex")).collect()
}

fn bytes(buf: &rnic_driver::DmaBuffer<'_, SimHal>, offset: usize, len: usize) -> Vec<u8> {
    (offset..offset + len).map(|i| buf.read_u8(i)).collect()
}

/// The opcodes of everything the device sent to the raw peer.
fn opcodes(peer: &rnic_driver::sim::RawPeer) -> Vec<Opcode> {
    peer.sent()
        .iter()
        .map(|(f, _)| rnic_proto::rdmap::parse_ulpdu(ulpdu_of(f)).expect("an FPDU that parses").opcode)
        .collect()
}

/// Polls until the QP's rings are empty as the device sees them, then checks that they are.
/// `peer` got one FPDU, an MPA Terminate of control word `word` alone (no headers), and
/// `qp` recorded it as its own and is in ERROR.
fn assert_only_an_mpa_terminate(peer: &rnic_driver::sim::RawPeer, qp: &QueuePair<'_, SimHal>, word: u32) {
    let sent = peer.sent();
    assert_eq!(sent.len(), 1, "one Terminate: {:?}", opcodes(peer));
    assert_eq!(ulpdu_of(&sent[0].0).len(), 18 + 4, "the control word alone");
    assert_eq!(terminate_code(&sent[0].0), word);
    let (ctx, status) = qp.query().expect("query");
    let info = status.terminate.expect("recorded");
    assert_eq!((info.received, info.code, ctx.state), (false, TermCode::from_control_word(word).0, QpState::Error));
}

fn assert_rings_drained(dev: &Device<SimHal>, qp: &QueuePair<'_, SimHal>, sq_posted: u32, rq_posted: u32) {
    run_until(dev, || qp.query().map(|(_, s)| s.sq_ci == sq_posted && s.rq_ci == rq_posted).unwrap_or(false));
    let (_, status) = qp.query().expect("query");
    assert_eq!((status.sq_ci, status.rq_ci), (sq_posted, rq_posted), "QP {}: every WQE taken from its rings", qp.qpn());
}

/// CHECKLIST RDMAP-08 test 2, VECTORS.md V11: a Read Request whose source STag 0x0BADBEEF is
/// invalid gets exactly V11 (0/1/0x00, M = D = R = 1, its DDP header and its 28-octet Read
/// Request header), and no Read Response: nothing of the memory it names leaves.
#[test]
fn rdmap_08_refused_read_request_gets_exactly_v11_and_no_read_response() {
    /// V4 with Data Source STag 0x0BADBEEF (the request V11 answers).
    const REQUEST: &str = "002e41410000000000000001000000010000000000010203000000000000400000001000\
                           0badbeef0000000000010000";
    const V11: &str = "00464147000000000000000200000001000000000100e000002e41410000000000000001000000010000\
                       0000000102030000000000004000000010000badbeef0000000000010000ce43db61";
    let (dev, peer) = raw_device();
    let pd = ProtectionDomain::new(&dev).expect("PD");
    let buf = dev.alloc_dma(4096).expect("DMA");
    let _mr = MemoryRegion::register(&pd, &buf, ALL).expect("MR");
    let cq = CompletionQueue::new(&dev, 4, 0).expect("CQ");
    let qp = qp_in_rts(&dev, &pd, &cq);
    let request = hex(REQUEST);
    peer.send(&frame(&request[2..], true), qp.qpn().into());
    dev.hal().run_idle(3_000);
    let sent = peer.sent();
    assert_eq!(sent.len(), 1, "only the Terminate: {:?}", opcodes(&peer));
    assert_eq!(sent[0].0, hex(V11), "V11 byte for byte");
    assert_eq!(qp.query().expect("query").0.state, QpState::Error);
}

/// RDMAP-12 / SEC-06: the Invalidate STag of every segment of a Send with Invalidate is
/// checked, not only the first one's; the last segment's names an MR of another PD with a
/// wrong key, so the Send is refused (0/1/0x00) and that MR stays valid.
#[test]
fn rdmap_12_sec_06_every_segment_of_a_send_with_invalidate_is_checked() {
    let (dev, peer) = raw_device();
    let (pd, other_pd) = (ProtectionDomain::new(&dev).expect("PD"), ProtectionDomain::new(&dev).expect("PD"));
    let buf = dev.alloc_dma(4096).expect("DMA");
    let recv = MemoryRegion::register_range(&pd, &buf, 0, 1024, LOCAL).expect("MR");
    let mine = MemoryRegion::register_range(&pd, &buf, 1024, 64, ALL).expect("MR");
    let theirs = MemoryRegion::register_range(&other_pd, &buf, 2048, 64, ALL).expect("MR");
    let cq = CompletionQueue::new(&dev, 4, 0).expect("CQ");
    let mut qp = qp_in_rts(&dev, &pd, &cq);
    qp.post_recv(&RecvRequest { wr_id: 1, local: recv.sge(0, 512).expect("in the MR") }).expect("receive");
    let wrong_key = (theirs.rkey() & !0xFF) | (theirs.rkey().wrapping_add(1) & 0xFF);
    for (last, inv, mo) in [(false, mine.rkey(), 0), (true, wrong_key, 32)] {
        let seg = Segment::untagged(Opcode::SendInvalidate, last, inv, 1, mo, RdmapHeader::None, &[7; 32]);
        peer.send(&frame(&seg.to_vec(), true), qp.qpn().into());
    }
    dev.hal().run_idle(3_000);
    assert_eq!(terminate_code(&peer.sent()[0].0), 0x0100_C000, "0/1/0x00 with the DDP header");
    assert!(dev.query_mr(theirs.index()).expect("query").valid, "the other PD's MR is still valid");
    assert!(dev.query_mr(mine.index()).expect("query").valid, "nothing was invalidated");
    let c = collect(&dev, &cq, 1);
    assert_eq!(c.iter().map(|c| (c.wr_id, c.status)).collect::<Vec<_>>(), [(1, CqeStatus::RemoteAccess)]);
}

/// DDP-11 test 4 and RDMAP-20: the receive a failing Send claimed completes with the status
/// of the failure (a 64-octet Send into a 16-octet receive: 1/2/0x05, LOCAL_LENGTH), the
/// receives behind it FLUSHED, in RQ order, once each; receives posted while the QP is in
/// ERROR are flushed too; after RESET the QP takes Sends again.
#[test]
fn ddp_11_rdmap_20_failing_send_completes_its_receive_and_the_rest_are_flushed_once() {
    let (dev, peer) = raw_device();
    let pd = ProtectionDomain::new(&dev).expect("PD");
    let buf = dev.alloc_dma(8192).expect("DMA");
    let mr = MemoryRegion::register(&pd, &buf, LOCAL).expect("MR");
    let cq = CompletionQueue::new(&dev, 6, 0).expect("CQ");
    let mut qp = qp_in_rts(&dev, &pd, &cq);
    let recv = |id: u64, len: u32| RecvRequest { wr_id: id, local: mr.sge(id * 64, len).expect("in the MR") };
    qp.post_recv_batch(&[recv(7, 16), recv(8, 64), recv(9, 64)]).expect("receives");
    peer.send(&frame(&Segment::send(1, &[1; 64]).to_vec(), true), qp.qpn().into());
    let got = collect(&dev, &cq, 3);
    assert_eq!(terminate_code(&peer.sent()[0].0), 0x1205_C000, "1/2/0x05");
    let seen: Vec<_> = got.iter().map(|c| (c.wr_id, c.opcode, c.status)).collect();
    assert_eq!(
        seen,
        [
            (7, CqeOpcode::Recv, CqeStatus::LocalLength),
            (8, CqeOpcode::Recv, CqeStatus::Flushed),
            (9, CqeOpcode::Recv, CqeStatus::Flushed)
        ]
    );
    assert!(bytes(&buf, 7 * 64, 16).iter().all(|&b| b == 0), "nothing of the Send placed");

    // Posted while in ERROR: flushed as well, and nothing else completes.
    qp.post_recv_batch(&[recv(10, 64), recv(11, 64)]).expect("receives in ERROR");
    let later = collect(&dev, &cq, 3);
    assert_eq!(
        later.iter().map(|c| (c.wr_id, c.status)).collect::<Vec<_>>(),
        [(10, CqeStatus::Flushed), (11, CqeStatus::Flushed)]
    );
    assert_rings_drained(&dev, &qp, 0, 5);

    // Reset and reuse.
    qp.modify(QpState::Reset).expect("RESET");
    qp.ready().expect("RTS");
    qp.post_recv(&recv(12, 64)).expect("receive");
    peer.send(&frame(&Segment::send(1, b"again").to_vec(), true), qp.qpn().into());
    let again = collect(&dev, &cq, 1);
    assert_eq!(
        again.iter().map(|c| (c.wr_id, c.status, c.byte_len)).collect::<Vec<_>>(),
        [(12, CqeStatus::Success, 5)]
    );
    assert_eq!(bytes(&buf, 12 * 64, 5), b"again");
}

/// RDMAP-13 and RDMAP-20 test 1: a Terminate from the peer puts the QP in ERROR with the
/// peer's code, and every posted receive and send completes once, FLUSHED.
#[test]
fn rdmap_13_20_a_received_terminate_flushes_every_posted_request_once() {
    let (dev, peer) = raw_device();
    let pd = ProtectionDomain::new(&dev).expect("PD");
    let buf = dev.alloc_dma(8192).expect("DMA");
    let mr = MemoryRegion::register(&pd, &buf, LOCAL).expect("MR");
    let cq = CompletionQueue::new(&dev, 6, 0).expect("CQ");
    let mut qp = qp_in_rts(&dev, &pd, &cq);
    let recvs: Vec<_> = (0..6).map(|i| RecvRequest { wr_id: 100 + i, local: mr.sge(i * 64, 64).unwrap() }).collect();
    qp.post_recv_batch(&recvs).expect("receives");
    let term = Terminate::new(TermCode::RDMA_OP_UNEXPECTED_OPCODE);
    let seg = Segment::untagged(Opcode::Terminate, true, 0, 1, 0, RdmapHeader::Terminate(term), &[]);
    peer.send(&frame(&seg.to_vec(), true), qp.qpn().into());
    let got = collect(&dev, &cq, 6);
    let (_, status) = qp.query().expect("query");
    let info = status.terminate.expect("the Terminate is recorded");
    assert!(info.received, "received from the peer");
    assert_eq!(info.code, TermCode::RDMA_OP_UNEXPECTED_OPCODE);
    assert_eq!(
        got.iter().map(|c| (c.wr_id, c.status)).collect::<Vec<_>>(),
        (100..106).map(|i| (i, CqeStatus::Flushed)).collect::<Vec<_>>()
    );
    // Sends posted now are flushed too, and nothing is sent to the peer after the Terminate.
    let wrs: Vec<_> = (0..3)
        .map(|i| WorkRequest::Send {
            wr_id: 200 + i,
            local: mr.sge(0, 8).unwrap(),
            solicited: false,
            invalidate: None,
            signaled: true,
        })
        .collect();
    qp.post_send_batch(&wrs).expect("sends in ERROR");
    let sends = collect(&dev, &cq, 3);
    assert_eq!(
        sends.iter().map(|c| (c.wr_id, c.status)).collect::<Vec<_>>(),
        (200..203).map(|i| (i, CqeStatus::Flushed)).collect::<Vec<_>>()
    );
    assert!(peer.sent().is_empty(), "nothing sent after the peer's Terminate: {:?}", opcodes(&peer));
    assert_rings_drained(&dev, &qp, 3, 6);
}

/// What one side of the kill test posted, by wr_id.
#[derive(Default)]
struct Ledger {
    posted: HashMap<u64, &'static str>,
    completed: HashMap<u64, usize>,
}

impl Ledger {
    fn take(&mut self, who: &str, completions: Vec<Completion>) {
        for c in completions {
            assert!(self.posted.contains_key(&c.wr_id), "{who}: completion for wr_id {} never posted: {c:?}", c.wr_id);
            *self.completed.entry(c.wr_id).or_default() += 1;
        }
    }
}

/// RDMAP-20, DDP-13: 100 operations in flight on 4 QPs (Sends, Writes, Reads, FetchAdds, with
/// the peer's receives posted), then the stream is torn down mid-flight — the driver moves
/// both ends of every QP to ERROR, as the socket bridge does when its TCP connection dies.
/// Every work request on both sides completes exactly once (SUCCESS or an error status,
/// FLUSHED for what never ran), nothing stays in the rings, and each QP, reset, works again.
#[test]
fn rdmap_20_killing_the_stream_under_100_operations_on_4_qps_completes_each_exactly_once() {
    const QPS: usize = 4;
    const PER_QP: u64 = 25;
    for seed in 0..6u64 {
        let mut rng = StdRng::seed_from_u64(seed);
        let (a, b) = linked_pair();
        let (pda, pdb) = (ProtectionDomain::new(&a).expect("PD"), ProtectionDomain::new(&b).expect("PD"));
        let (bufa, bufb) = (a.alloc_dma(65536).expect("DMA"), b.alloc_dma(65536).expect("DMA"));
        let (mra, mrb) = (
            MemoryRegion::register(&pda, &bufa, ALL).expect("MR"),
            MemoryRegion::register(&pdb, &bufb, ALL).expect("MR"),
        );
        let (cqa, cqb) = (CompletionQueue::new(&a, 9, 0).expect("CQ"), CompletionQueue::new(&b, 9, 0).expect("CQ"));
        // Both devices number their QPs alike, so each QP's CONN_ID (its peer's number) is
        // its own.
        let mut qpas: Vec<_> =
            (0..QPS).map(|q| QueuePair::new(&a, &pda, &cqa, &cqa, caps(q as u16)).expect("QP")).collect();
        let mut qpbs: Vec<_> =
            (0..QPS).map(|q| QueuePair::new(&b, &pdb, &cqb, &cqb, caps(q as u16)).expect("QP")).collect();
        for (q, (qa, qb)) in qpas.iter_mut().zip(qpbs.iter_mut()).enumerate() {
            assert_eq!((qa.qpn(), qb.qpn()), (q as u32, q as u32));
            qa.ready().expect("RTS");
            qb.ready().expect("RTS");
        }
        let (mut la, mut lb) = (Ledger::default(), Ledger::default());
        for (q, (qa, qb)) in qpas.iter_mut().zip(qpbs.iter_mut()).enumerate() {
            let recvs: Vec<_> = (0..PER_QP)
                .map(|i| RecvRequest {
                    wr_id: 10_000 + 100 * q as u64 + i,
                    local: mrb.sge(4096 * q as u64 + 64 * i, 64).unwrap(),
                })
                .collect();
            recvs.iter().for_each(|r| {
                lb.posted.insert(r.wr_id, "receive");
            });
            qb.post_recv_batch(&recvs).expect("receives");
            let wrs: Vec<_> = (0..PER_QP)
                .map(|i| {
                    let wr_id = 100 * q as u64 + i;
                    let at = 16384 + 4096 * q as u64 + 128 * i;
                    let (kind, wr) = match rng.gen_range(0..4) {
                        0 => (
                            "send",
                            WorkRequest::Send {
                                wr_id,
                                local: mra.sge(at, 48).unwrap(),
                                solicited: false,
                                invalidate: None,
                                signaled: true,
                            },
                        ),
                        1 => (
                            "write",
                            WorkRequest::Write {
                                wr_id,
                                local: mra.sge(at, 512).unwrap(),
                                remote: mrb.remote(at).unwrap(),
                                signaled: true,
                            },
                        ),
                        2 => (
                            "read",
                            WorkRequest::Read {
                                wr_id,
                                local: mra.sge(at, 256).unwrap(),
                                remote: mrb.remote(at).unwrap(),
                                signaled: true,
                            },
                        ),
                        _ => (
                            "fetch-add",
                            WorkRequest::FetchAdd {
                                wr_id,
                                local: mra.sge(at, 8).unwrap(),
                                remote: mrb.remote(8 * q as u64).unwrap(),
                                add: 1,
                                add_mask: 0,
                                signaled: true,
                            },
                        ),
                    };
                    la.posted.insert(wr_id, kind);
                    wr
                })
                .collect();
            qa.post_send_batch(&wrs).expect("sends");
        }
        // Let part of it run, then tear every stream down on both sides.
        a.hal().run_idle(rng.gen_range(200..3_000));
        for qp in qpas.iter_mut().chain(qpbs.iter_mut()) {
            qp.modify(QpState::Error).expect("ERROR");
        }
        la.take("A", collect(&a, &cqa, la.posted.len()));
        lb.take("B", collect(&b, &cqb, lb.posted.len()));
        // Nothing more arrives later.
        a.hal().run_idle(5_000);
        la.take("A", collect(&a, &cqa, 0));
        lb.take("B", collect(&b, &cqb, 0));
        for (who, ledger) in [("A", &la), ("B", &lb)] {
            let missing: Vec<_> = ledger.posted.keys().filter(|id| !ledger.completed.contains_key(id)).collect();
            let twice: Vec<_> = ledger.completed.iter().filter(|(_, &n)| n != 1).collect();
            assert!(
                missing.is_empty() && twice.is_empty(),
                "seed {seed}, {who}: never completed {missing:?}, more than once {twice:?}"
            );
        }
        for qp in &qpas {
            assert_rings_drained(&a, qp, PER_QP as u32, 0);
        }
        for qp in &qpbs {
            assert_rings_drained(&b, qp, 0, PER_QP as u32);
        }
        // Reset both ends and run a Send on each QP again.
        for qp in qpas.iter_mut().chain(qpbs.iter_mut()) {
            qp.modify(QpState::Reset).expect("RESET");
            qp.ready().expect("RTS");
        }
        for (q, (qa, qb)) in qpas.iter_mut().zip(qpbs.iter_mut()).enumerate() {
            qb.post_recv(&RecvRequest { wr_id: 90 + q as u64, local: mrb.sge(60_000, 64).unwrap() }).expect("receive");
            qa.post_send(&WorkRequest::Send {
                wr_id: 80 + q as u64,
                local: mra.sge(0, 8).unwrap(),
                solicited: false,
                invalidate: None,
                signaled: true,
            })
            .expect("send");
        }
        let (ca, cb) = (collect(&a, &cqa, QPS), collect(&b, &cqb, QPS));
        assert!(
            ca.iter().chain(&cb).all(Completion::is_ok) && ca.len() == QPS && cb.len() == QPS,
            "seed {seed}: after reset {ca:?} {cb:?}"
        );
    }
}

/// MPA-08, MPA-25: one flipped bit in a Write's payload with CRCs on: the Write before it
/// is placed, nothing of it or of the Write after it; the QP sends Terminate 2/0/0x02
/// (`0x20020000`, no headers) and enters ERROR with that code, and its receives are
/// flushed.
#[test]
fn mpa_08_25_a_crc_error_sends_0x20020000_places_nothing_more_and_flushes_the_qp() {
    let (dev, peer) = raw_device();
    let pd = ProtectionDomain::new(&dev).expect("PD");
    let buf = dev.alloc_dma(4096).expect("DMA");
    let mr = MemoryRegion::register(&pd, &buf, ALL).expect("MR");
    let cq = CompletionQueue::new(&dev, 4, 0).expect("CQ");
    let mut qp = qp_in_rts(&dev, &pd, &cq);
    qp.post_recv(&RecvRequest { wr_id: 5, local: mr.sge(3000, 64).unwrap() }).expect("receive");
    let write = |at: u64, fill: u8| frame(&Segment::write(mr.rkey(), mr.va() + at, &[fill; 32]).to_vec(), true);
    let mut bad = write(100, 2);
    bad[30] ^= 0x10;
    for fpdu in [write(0, 1), bad, write(200, 3)] {
        peer.send(&fpdu, qp.qpn().into());
    }
    let got = collect(&dev, &cq, 1);
    assert_eq!(bytes(&buf, 0, 32), [1; 32], "the Write before is placed");
    assert!(bytes(&buf, 100, 132).iter().chain(&bytes(&buf, 200, 32)).all(|&b| b == 0), "nothing after it");
    assert_only_an_mpa_terminate(&peer, &qp, 0x2002_0000);
    assert_eq!(got.iter().map(|c| (c.wr_id, c.status)).collect::<Vec<_>>(), [(5, CqeStatus::Flushed)]);
}

#[test]
fn sec_05_an_mr_deregistered_in_the_middle_of_a_write_takes_no_more_of_it() {
    let (dev, peer) = raw_device();
    let pd = ProtectionDomain::new(&dev).expect("PD");
    let buf = dev.alloc_dma(8192).expect("DMA");
    let mr = MemoryRegion::register(&pd, &buf, ALL).expect("MR");
    let cq = CompletionQueue::new(&dev, 4, 0).expect("CQ");
    let qp = qp_in_rts(&dev, &pd, &cq);
    // One 8 KiB Write in eight 1 KiB segments; the MR goes after the fourth is placed.
    let (rkey, va) = (mr.rkey(), mr.va());
    let segment = |i: usize| {
        Segment::tagged(Opcode::RdmaWrite, i == 7, rkey, va + 1024 * i as u64, &[i as u8 + 1; 1024]).to_vec()
    };
    for i in 0..4 {
        peer.send(&frame(&segment(i), true), qp.qpn().into());
    }
    run_until(&dev, || bytes(&buf, 3 * 1024, 1024) == [4; 1024]);
    mr.deregister().expect("deregister");
    for i in 4..8 {
        peer.send(&frame(&segment(i), true), qp.qpn().into());
    }
    run_until(&dev, || !peer.sent().is_empty());
    dev.hal().run_idle(3_000);
    for i in 0..8 {
        let expected = if i < 4 { i as u8 + 1 } else { 0 };
        assert!(bytes(&buf, 1024 * i, 1024).iter().all(|&b| b == expected), "segment {i}");
    }
    let sent = peer.sent();
    assert_eq!(sent.len(), 1, "one Terminate: {:?}", opcodes(&peer));
    let refused = segment(4);
    let mut expected = 0x1100_C000u32.to_be_bytes().to_vec();
    expected.extend_from_slice(&(refused.len() as u16).to_be_bytes());
    expected.extend_from_slice(&refused[..14]);
    assert_eq!(&ulpdu_of(&sent[0].0)[18..], expected, "invalid STag, with the first refused segment's header");
    assert_eq!(qp.query().expect("query").0.state, QpState::Error);
}

#[test]
fn sec_09_an_overflowing_cq_stops_only_its_own_completions() {
    let (dev, peer) = raw_device();
    let pd = ProtectionDomain::new(&dev).expect("PD");
    let buf = dev.alloc_dma(8192).expect("DMA");
    let mr = MemoryRegion::register(&pd, &buf, ALL).expect("MR");
    let (small, other) = (CompletionQueue::new(&dev, 2, 0).expect("CQ"), CompletionQueue::new(&dev, 4, 0).expect("CQ"));
    let mut flooded = QueuePair::new(&dev, &pd, &small, &small, caps(1)).expect("QP");
    let mut spared = QueuePair::new(&dev, &pd, &other, &other, caps(2)).expect("QP");
    flooded.ready().expect("RTS");
    spared.ready().expect("RTS");
    // Twelve Sends into a CQ of four entries that nobody polls, then traffic for the other QP.
    for i in 0..12u32 {
        flooded
            .post_recv(&RecvRequest { wr_id: u64::from(i), local: mr.sge(64 * u64::from(i), 64).unwrap() })
            .expect("receive");
        peer.send(&frame(&Segment::send(i + 1, &[i as u8 + 1; 16]).to_vec(), true), flooded.qpn().into());
    }
    spared.post_recv(&RecvRequest { wr_id: 100, local: mr.sge(4096, 64).unwrap() }).expect("receive");
    peer.send(&frame(&Segment::send(1, &[0xAB; 16]).to_vec(), true), spared.qpn().into());
    peer.send(&frame(&Segment::write(mr.rkey(), mr.va() + 5000, &[0xCD; 16]).to_vec(), true), spared.qpn().into());
    let got = collect(&dev, &other, 1);
    dev.hal().run_idle(3_000);

    assert_eq!(got.iter().map(|c| (c.wr_id, c.status)).collect::<Vec<_>>(), [(100, CqeStatus::Success)]);
    assert_eq!((bytes(&buf, 4096, 16), bytes(&buf, 5000, 16)), (vec![0xAB; 16], vec![0xCD; 16]), "the other QP's data");
    for i in 0..12 {
        assert_eq!(bytes(&buf, 64 * i, 16), [i as u8 + 1; 16], "the flooded QP's Send {i} is placed");
    }
    let status = |cq: &CompletionQueue<'_, SimHal>| dev.query_cq(cq.cqn()).expect("QUERY_CQ").1;
    assert!(status(&small).overflow, "the small CQ reports its overflow");
    assert!(!status(&other).overflow, "the other CQ does not");
    assert!(peer.sent().is_empty(), "no Terminate: {:?}", opcodes(&peer));
}

/// The largest ULPDU the RX buffer (`ddp/rx_buffer.rs`) holds, and so checks before it
/// places anything.
const RX_BUFFER_OCTETS: usize = 16_384;

#[test]
fn rx_buffer_an_fpdu_longer_than_it_holds_sends_0x20050000_places_nothing_and_wedges_nothing() {
    let (dev, peer) = raw_device();
    let pd = ProtectionDomain::new(&dev).expect("PD");
    let buf = dev.alloc_dma(65536).expect("DMA");
    let mr = MemoryRegion::register(&pd, &buf, ALL).expect("MR");
    let cq = CompletionQueue::new(&dev, 4, 0).expect("CQ");
    let mut qp = qp_in_rts(&dev, &pd, &cq);
    qp.post_recv(&RecvRequest { wr_id: 5, local: mr.sge(60_000, 64).unwrap() }).expect("receive");
    let write = |at: usize, ulpdu_len: usize, fill: u8| {
        frame(&Segment::write(mr.rkey(), mr.va() + at as u64, &vec![fill; ulpdu_len - 14]).to_vec(), true)
    };
    // The largest ULPDU the buffer holds is placed; one octet more is not, nor what follows.
    let (largest, longer) = ((0, RX_BUFFER_OCTETS), (20_000, RX_BUFFER_OCTETS + 1));
    for fpdu in [write(largest.0, largest.1, 1), write(longer.0, longer.1, 2), write(40_000, 46, 3)] {
        peer.send(&fpdu, qp.qpn().into());
    }
    let got = collect(&dev, &cq, 1);
    assert_eq!(peer.pending(), 0, "the stream is still taken");
    assert!(bytes(&buf, 0, largest.1 - 14).iter().all(|&b| b == 1), "the largest ULPDU is placed");
    let rest = bytes(&buf, largest.1 - 14, 65536 - (largest.1 - 14));
    assert!(rest.iter().all(|&b| b == 0), "nothing of the longer one or after it");
    assert_only_an_mpa_terminate(&peer, &qp, 0x2005_0000);
    assert_eq!(got.iter().map(|c| (c.wr_id, c.status)).collect::<Vec<_>>(), [(5, CqeStatus::Flushed)]);
}

/// MPA-08, MPA-25, outside the stream contract (one packet per FPDU): a 40-octet packet for
/// a QP without CRC whose ULPDU_Length says 2000, then eight good packets for it and eight
/// for another QP, interleaved. The deframer reads each packet as the FPDU it is: the short
/// one fails its own QP with 2/0/0x05 (local catastrophic) and that QP drops the eight after
/// it; the other QP places all eight and stays in RTS.
#[test]
fn mpa_08_25_a_packet_out_of_step_with_its_fpdu_fails_its_own_qp_and_the_other_goes_on() {
    let (dev, peer) = raw_device();
    let pd = ProtectionDomain::new(&dev).expect("PD");
    let buf = dev.alloc_dma(4096).expect("DMA");
    let mr = MemoryRegion::register(&pd, &buf, ALL).expect("MR");
    let cq = CompletionQueue::new(&dev, 4, 0).expect("CQ");
    let mut bad_qp = QueuePair::new(&dev, &pd, &cq, &cq, QpCaps { crc: false, ..caps(1) }).expect("QP");
    let mut good_qp = QueuePair::new(&dev, &pd, &cq, &cq, QpCaps { crc: false, ..caps(2) }).expect("QP");
    bad_qp.ready().expect("RTS");
    good_qp.ready().expect("RTS");
    let write = |at: u64, fill: u8| frame(&Segment::write(mr.rkey(), mr.va() + at, &[fill; 8]).to_vec(), false);
    let mut long = write(0, 1);
    long[0..2].copy_from_slice(&2000u16.to_be_bytes());
    peer.send(&long, bad_qp.qpn().into());
    for i in 0..8 {
        peer.send(&write(64 + 8 * i, 2), bad_qp.qpn().into());
        peer.send(&write(1024 + 8 * i, 3), good_qp.qpn().into());
    }
    run_until(&dev, || peer.pending() == 0 && !peer.sent().is_empty());
    dev.hal().run_idle(2_000);
    assert_eq!(peer.pending(), 0, "the stream is taken");
    assert!(bytes(&buf, 0, 1024).iter().all(|&b| b == 0), "nothing placed for the failed QP");
    assert_eq!(bytes(&buf, 1024, 64), [3; 64], "every Write placed for the other");
    assert!(bytes(&buf, 1088, 4096 - 1088).iter().all(|&b| b == 0), "and nothing else");
    assert_only_an_mpa_terminate(&peer, &bad_qp, 0x2005_0000);
    let (ctx, status) = good_qp.query().expect("query");
    assert_eq!((ctx.state, status.terminate), (QpState::Rts, None), "the other QP goes on");
}

/// The memory regions an error case may name.
struct Regions<'a> {
    /// PD A, every right (the QP's PD).
    all: MemoryRegion<'a, SimHal>,
    /// PD A, REMOTE_READ only.
    read_only: MemoryRegion<'a, SimHal>,
    /// PD B, every right.
    other_pd: MemoryRegion<'a, SimHal>,
    /// PD A, LOCAL_WRITE only: the receive buffer.
    local: MemoryRegion<'a, SimHal>,
}

/// One malformed segment and what it must cause.
struct ErrorCase {
    name: &'static str,
    ulpdu: fn(&Regions<'_>) -> Vec<u8>,
    /// Whether the QP has a receive posted.
    receive: bool,
    /// The Terminate control word; the segment length and DDP header follow it when M/D,
    /// and the Read Request header when R.
    word: u32,
    /// The status the posted receive completes with.
    receive_status: CqeStatus,
}

/// An untagged ULPDU with its control octets and fields set by hand.
fn untagged(ddp_ctrl: u8, rdmap_ctrl: u8, inv: u32, qn: u32, msn: u32, mo: u32, payload: &[u8]) -> Vec<u8> {
    let mut u = vec![ddp_ctrl, rdmap_ctrl];
    for field in [inv, qn, msn, mo] {
        u.extend_from_slice(&field.to_be_bytes());
    }
    u.extend_from_slice(payload);
    u
}

/// A FetchAdd Request (MSN 1, Request Identifier 1) of 1 at `stag`/`to`.
fn atomic_request(stag: u32, to: u64) -> Vec<u8> {
    Segment::atomic_request(1, AtomicRequest::fetch_add(1, stag, to, 1, 0)).to_vec()
}

/// A Read Request (MSN 1) for `size` octets at the source `stag`/`to`.
fn read_request(stag: u32, to: u64, size: u32) -> Vec<u8> {
    Segment::read_request(1, ReadRequest { sink_stag: 0x1234, sink_to: 0x40, size, src_stag: stag, src_to: to })
        .to_vec()
}

const ERROR_CASES: &[ErrorCase] = &[
    ErrorCase {
        name: "DDP-02 untagged DV 2",
        ulpdu: |_| untagged(0x42, 0x43, 0, 0, 1, 0, &[1; 8]),
        receive: true,
        word: 0x1206_C000,
        receive_status: CqeStatus::Flushed,
    },
    ErrorCase {
        name: "DDP-02 tagged DV 2",
        ulpdu: |r| {
            let mut u = Segment::write(r.all.rkey(), r.all.va(), &[1; 8]).to_vec();
            u[0] = 0xC2;
            u
        },
        receive: true,
        word: 0x1104_C000,
        receive_status: CqeStatus::Flushed,
    },
    ErrorCase {
        name: "DDP-11 QN 5",
        ulpdu: |_| untagged(0x41, 0x43, 0, 5, 1, 0, &[1; 8]),
        receive: true,
        word: 0x1201_C000,
        receive_status: CqeStatus::Flushed,
    },
    ErrorCase {
        name: "DDP-11 no receive posted",
        ulpdu: |_| Segment::send(1, &[1; 8]).to_vec(),
        receive: false,
        word: 0x1202_C000,
        receive_status: CqeStatus::Flushed,
    },
    ErrorCase {
        name: "DDP-11 MSN out of range",
        ulpdu: |_| Segment::send(1001, &[1; 8]).to_vec(),
        receive: true,
        word: 0x1203_C000,
        receive_status: CqeStatus::Flushed,
    },
    ErrorCase {
        name: "DDP-11 MO 8 starting a message",
        ulpdu: |_| untagged(0x41, 0x43, 0, 0, 1, 8, &[1; 8]),
        receive: true,
        word: 0x1204_C000,
        receive_status: CqeStatus::RemoteOperation,
    },
    ErrorCase {
        name: "DDP-11 too long for the receive",
        ulpdu: |_| Segment::send(1, &[1; 128]).to_vec(),
        receive: true,
        word: 0x1205_C000,
        receive_status: CqeStatus::LocalLength,
    },
    ErrorCase {
        name: "DDP-12 invalid STag",
        ulpdu: |_| Segment::write(0xDEAD_BEEF, 0, &[1; 16]).to_vec(),
        receive: true,
        word: 0x1100_C000,
        receive_status: CqeStatus::Flushed,
    },
    ErrorCase {
        name: "DDP-12 bounds",
        ulpdu: |r| Segment::write(r.all.rkey(), r.all.va() + r.all.len() - 8, &[1; 16]).to_vec(),
        receive: true,
        word: 0x1101_C000,
        receive_status: CqeStatus::Flushed,
    },
    ErrorCase {
        name: "DDP-12 TO wrap",
        ulpdu: |r| Segment::write(r.all.rkey(), u64::MAX - 7, &[1; 16]).to_vec(),
        receive: true,
        word: 0x1103_C000,
        receive_status: CqeStatus::Flushed,
    },
    ErrorCase {
        name: "DDP-12 DDP-14 SEC-01 other PD",
        ulpdu: |r| Segment::write(r.other_pd.rkey(), r.other_pd.va(), &[1; 16]).to_vec(),
        receive: true,
        word: 0x1102_C000,
        receive_status: CqeStatus::Flushed,
    },
    ErrorCase {
        name: "SEC-04 Write to a read-only MR",
        ulpdu: |r| Segment::write(r.read_only.rkey(), r.read_only.va(), &[1; 16]).to_vec(),
        receive: true,
        word: 0x1100_C000,
        receive_status: CqeStatus::Flushed,
    },
    ErrorCase {
        name: "RDMAP-02 RV 2",
        ulpdu: |_| untagged(0x41, 0x83, 0, 0, 1, 0, &[1; 8]),
        receive: true,
        word: 0x0205_C000,
        receive_status: CqeStatus::Flushed,
    },
    ErrorCase {
        name: "RDMAP-03 opcode 0xC",
        ulpdu: |_| untagged(0x41, 0x4C, 0, 0, 1, 0, &[1; 8]),
        receive: true,
        word: 0x0206_C000,
        receive_status: CqeStatus::Flushed,
    },
    ErrorCase {
        name: "RDMAP-03 opcode 0xF",
        ulpdu: |_| untagged(0x41, 0x4F, 0, 0, 1, 0, &[1; 8]),
        receive: true,
        word: 0x0206_C000,
        receive_status: CqeStatus::Flushed,
    },
    ErrorCase {
        name: "RDMAP-04 Read Request on QN 0",
        ulpdu: |_| untagged(0x41, 0x41, 0, 0, 1, 0, &[0; 28]),
        receive: true,
        word: 0x0206_C000,
        receive_status: CqeStatus::Flushed,
    },
    ErrorCase {
        name: "RDMAP-04 tagged Send",
        ulpdu: |r| {
            let mut u = Segment::write(r.all.rkey(), r.all.va(), &[1; 8]).to_vec();
            u[1] = 0x43;
            u
        },
        receive: true,
        word: 0x0206_C000,
        receive_status: CqeStatus::Flushed,
    },
    ErrorCase {
        name: "RDMAP-12 SEC-06 Invalidate STag of another PD",
        ulpdu: |r| Segment::send_invalidate(1, r.other_pd.rkey(), &[1; 8]).to_vec(),
        receive: true,
        word: 0x0109_C000,
        receive_status: CqeStatus::RemoteAccess,
    },
    ErrorCase {
        name: "RDMAP-12 invalid Invalidate STag",
        ulpdu: |_| Segment::send_invalidate(1, 0xDEAD_BEEF, &[1; 8]).to_vec(),
        receive: true,
        word: 0x0100_C000,
        receive_status: CqeStatus::RemoteAccess,
    },
    ErrorCase {
        name: "RDMAP-08 invalid source STag",
        ulpdu: |r| read_request(r.all.rkey() ^ 0xFF, r.all.va(), 64),
        receive: true,
        word: 0x0100_E000,
        receive_status: CqeStatus::Flushed,
    },
    ErrorCase {
        name: "RDMAP-08 SEC-01 source of another PD",
        ulpdu: |r| read_request(r.other_pd.rkey(), r.other_pd.va(), 64),
        receive: true,
        word: 0x0103_E000,
        receive_status: CqeStatus::Flushed,
    },
    ErrorCase {
        name: "RDMAP-08 SEC-04 source without REMOTE_READ",
        ulpdu: |r| read_request(r.local.rkey(), r.local.va(), 64),
        receive: true,
        word: 0x0102_E000,
        receive_status: CqeStatus::Flushed,
    },
    ErrorCase {
        name: "RDMAP-08 SEC-03 source bounds",
        ulpdu: |r| read_request(r.all.rkey(), r.all.va() + r.all.len() - 8, 16),
        receive: true,
        word: 0x0101_E000,
        receive_status: CqeStatus::Flushed,
    },
    ErrorCase {
        name: "RDMAP-08 source TO wrap",
        ulpdu: |r| read_request(r.all.rkey(), u64::MAX - 7, 16),
        receive: true,
        word: 0x0104_E000,
        receive_status: CqeStatus::Flushed,
    },
    ErrorCase {
        name: "IMM-03 a piece of a split message, MSN out of range (DDP first)",
        ulpdu: |_| untagged(0x01, 0x49, 0, 0, 2, 0, &[1; 8]),
        receive: true,
        word: 0x1203_C000,
        receive_status: CqeStatus::Flushed,
    },
    ErrorCase {
        name: "IMM-03 the first piece of a split message",
        ulpdu: |_| untagged(0x01, 0x48, 0, 0, 1, 0, &[1; 4]),
        receive: true,
        word: 0x02FF_C000,
        receive_status: CqeStatus::Flushed,
    },
    ErrorCase {
        name: "IMM-03 the last piece of a split message",
        ulpdu: |_| untagged(0x41, 0x48, 0, 0, 1, 4, &[1; 4]),
        receive: true,
        word: 0x02FF_C000,
        receive_status: CqeStatus::Flushed,
    },
    ErrorCase {
        name: "SEC-01 SEC-12 atomic on another PD's STag",
        ulpdu: |r| atomic_request(r.other_pd.rkey(), r.other_pd.va()),
        receive: true,
        word: 0x0103_C000,
        receive_status: CqeStatus::Flushed,
    },
    ErrorCase {
        name: "SEC-12 atomic TO wrap",
        ulpdu: |r| atomic_request(r.all.rkey(), u64::MAX - 3),
        receive: true,
        word: 0x0104_C000,
        receive_status: CqeStatus::Flushed,
    },
    ErrorCase {
        name: "SEC-03 SEC-12 atomic past the end",
        ulpdu: |r| atomic_request(r.all.rkey(), r.all.va() + r.all.len() - 4),
        receive: true,
        word: 0x0101_C000,
        receive_status: CqeStatus::Flushed,
    },
    ErrorCase {
        name: "SEC-04 SEC-12 atomic without REMOTE_ATOMIC",
        ulpdu: |r| atomic_request(r.read_only.rkey(), r.read_only.va()),
        receive: true,
        word: 0x0102_C000,
        receive_status: CqeStatus::Flushed,
    },
    ErrorCase {
        name: "IMM-03 seven octets",
        ulpdu: |_| untagged(0x41, 0x48, 0, 0, 1, 0, &[1; 7]),
        receive: true,
        word: 0x02FF_C000,
        receive_status: CqeStatus::Flushed,
    },
];

/// DDP-02, DDP-11, DDP-12, DDP-13, DDP-14, RDMAP-02, RDMAP-03, RDMAP-04, RDMAP-08, RDMAP-12,
/// RDMAP-16, IMM-03, SEC-01, SEC-03, SEC-04, SEC-06, SEC-12: each malformed segment, sent alone to a
/// fresh QP, gets exactly its Terminate — the control word, then (M = D = 1) the segment
/// length and the segment's own DDP header, and for a Read Request (R = 1) its header — and
/// nothing else (no Read Response); memory is unchanged, the QP is in ERROR with that code,
/// and its posted receive completes with the status the failure gives it.
#[test]
fn ddp_02_11_12_rdmap_02_03_04_08_12_imm_03_sec_01_03_04_12_every_error_case_sends_its_exact_terminate() {
    every_error_case(raw_device);
}

/// The error cases on the random-reset `rnic_top` (`rnic_top_x`: registers power up, and X
/// are assigned, at random), a fresh device per case, reset seeds from 1.
#[test]
fn x_random_reset_every_error_case_sends_its_exact_terminate_seed_1() {
    let seed = std::cell::Cell::new(0);
    every_error_case(|| {
        seed.set(seed.get() + 1);
        common::raw_device_random_reset(seed.get())
    });
}

/// The same from reset seed 1001.
#[test]
fn x_random_reset_every_error_case_sends_its_exact_terminate_seed_2() {
    let seed = std::cell::Cell::new(1000);
    every_error_case(|| {
        seed.set(seed.get() + 1);
        common::raw_device_random_reset(seed.get())
    });
}

fn every_error_case(open: impl Fn() -> (Device<SimHal>, rnic_driver::sim::RawPeer)) {
    for case in ERROR_CASES {
        let (dev, peer) = open();
        let (pd, other_pd) = (ProtectionDomain::new(&dev).expect("PD"), ProtectionDomain::new(&dev).expect("PD"));
        let buf = dev.alloc_dma(4096).expect("DMA");
        buf.write_bytes(0, &[0x5E; 4096]);
        let regions = Regions {
            all: MemoryRegion::register_range(&pd, &buf, 0, 1024, ALL).expect("MR"),
            read_only: MemoryRegion::register_range(&pd, &buf, 1024, 1024, MrAccess { remote_read: true, ..LOCAL })
                .expect("MR"),
            other_pd: MemoryRegion::register_range(&other_pd, &buf, 2048, 1024, ALL).expect("MR"),
            local: MemoryRegion::register_range(&pd, &buf, 3072, 1024, LOCAL).expect("MR"),
        };
        let cq = CompletionQueue::new(&dev, 4, 0).expect("CQ");
        let mut qp = qp_in_rts(&dev, &pd, &cq);
        if case.receive {
            qp.post_recv(&RecvRequest { wr_id: 9, local: regions.local.sge(0, 64).unwrap() }).expect("receive");
        }
        let ulpdu = (case.ulpdu)(&regions);
        peer.send(&frame(&ulpdu, true), qp.qpn().into());
        dev.hal().run_idle(3_000);
        let completions = collect(&dev, &cq, usize::from(case.receive));
        let name = case.name;

        let sent = peer.sent();
        assert_eq!(sent.len(), 1, "{name}: the Terminate alone: {:?}", opcodes(&peer));
        let header_len = if ulpdu[0] & 0x80 != 0 { 14 } else { 18 };
        let mut expected = case.word.to_be_bytes().to_vec();
        expected.extend_from_slice(&(ulpdu.len() as u16).to_be_bytes());
        expected.extend_from_slice(&ulpdu[..header_len]);
        if case.word & 0x2000 != 0 {
            // R: the Read Request header as received.
            expected.extend_from_slice(&ulpdu[header_len..]);
        }
        assert_eq!(
            &ulpdu_of(&sent[0].0)[18..],
            expected,
            "{name}: control word {:#010x}, length, DDP header",
            case.word
        );
        assert!(bytes(&buf, 0, 4096).iter().all(|&b| b == 0x5E), "{name}: memory unchanged");
        let info = qp.query().expect("query").1.terminate.expect("recorded");
        assert_eq!(
            (info.received, info.code),
            (false, TermCode::from_control_word(case.word).0),
            "{name}: QP's Terminate"
        );
        let statuses: Vec<_> = completions.iter().map(|c| (c.wr_id, c.status)).collect();
        let wanted: Vec<_> = if case.receive { vec![(9, case.receive_status)] } else { vec![] };
        assert_eq!(statuses, wanted, "{name}: the receive's completion");
    }
}

/// RDMAP-16 (1): a request that fails the device's local checks is replaced on the wire by a
/// Terminate 0/0/0x00 alone (Local Catastrophic: no DDP or RDMA header), completes
/// LOCAL_PROTECTION, and the request behind it is flushed, not sent. (The source MR was
/// ended by the peer's Send with Invalidate, which the driver cannot know of, so only the
/// device refuses it.)
#[test]
fn rdmap_16_a_local_failure_sends_a_local_catastrophic_terminate_in_place_of_its_message() {
    let (dev, peer) = raw_device();
    let pd = ProtectionDomain::new(&dev).expect("PD");
    let buf = dev.alloc_dma(4096).expect("DMA");
    let mr = MemoryRegion::register_range(&pd, &buf, 0, 2048, ALL).expect("MR");
    let ended = MemoryRegion::register_range(&pd, &buf, 2048, 2048, ALL).expect("MR");
    let cq = CompletionQueue::new(&dev, 4, 0).expect("CQ");
    let mut qp = qp_in_rts(&dev, &pd, &cq);
    qp.post_recv(&RecvRequest { wr_id: 1, local: mr.sge(0, 64).unwrap() }).expect("receive");
    peer.send(&frame(&Segment::send_invalidate(1, ended.rkey(), &[7; 8]).to_vec(), true), qp.qpn().into());
    let got = collect(&dev, &cq, 1);
    assert_eq!(got.iter().map(|c| c.invalidated).collect::<Vec<_>>(), [Some(ended.rkey())], "the MR is ended");
    let send = |wr_id, local| WorkRequest::Send { wr_id, local, solicited: false, invalidate: None, signaled: true };
    qp.post_send_batch(&[send(2, ended.sge(0, 64).unwrap()), send(3, mr.sge(64, 64).unwrap())]).expect("post");
    let got = collect(&dev, &cq, 2);
    dev.hal().run_idle(2_000);
    let sent = peer.sent();
    assert_eq!(sent.len(), 1, "the Terminate alone: {:?}", opcodes(&peer));
    assert_eq!(&ulpdu_of(&sent[0].0)[18..], 0u32.to_be_bytes(), "control word 0/0/0x00, no headers");
    let statuses: Vec<_> = got.iter().map(|c| (c.wr_id, c.status)).collect();
    assert_eq!(statuses, [(2, CqeStatus::LocalProtection), (3, CqeStatus::Flushed)]);
    let (ctx, status) = qp.query().expect("query");
    let info = status.terminate.expect("recorded");
    assert_eq!((ctx.state, info.received, info.code), (QpState::Error, false, TermCode::RDMA_LOCAL_CATASTROPHIC));
}

/// RDMAP-16 (4) and DDP-13: two back-to-back Writes with different bad STags, then a Send:
/// one Terminate, quoting the first Write's DDP header (its STag); nothing of either Write
/// or of the Send placed, the Send's receive flushed.
#[test]
fn rdmap_16_ddp_13_the_first_failure_is_reported_and_nothing_after_it_is_placed() {
    let (dev, peer) = raw_device();
    let pd = ProtectionDomain::new(&dev).expect("PD");
    let buf = dev.alloc_dma(4096).expect("DMA");
    buf.write_bytes(0, &[0x5E; 4096]);
    let mr = MemoryRegion::register(&pd, &buf, ALL).expect("MR");
    let cq = CompletionQueue::new(&dev, 4, 0).expect("CQ");
    let mut qp = qp_in_rts(&dev, &pd, &cq);
    qp.post_recv(&RecvRequest { wr_id: 7, local: mr.sge(2048, 64).unwrap() }).expect("receive");
    let first = Segment::write(0xBAD0_0001, mr.va(), &[1; 16]).to_vec();
    let second = Segment::write(0xBAD0_0002, mr.va() + 64, &[2; 16]).to_vec();
    let good = Segment::write(mr.rkey(), mr.va() + 128, &[3; 16]).to_vec();
    for ulpdu in [&first, &second, &good, &Segment::send(1, &[4; 32]).to_vec()] {
        peer.send(&frame(ulpdu, true), qp.qpn().into());
    }
    let got = collect(&dev, &cq, 1);
    dev.hal().run_idle(2_000);
    let sent = peer.sent();
    assert_eq!(sent.len(), 1, "one Terminate: {:?}", opcodes(&peer));
    let mut expected = 0x1100_C000u32.to_be_bytes().to_vec();
    expected.extend_from_slice(&(first.len() as u16).to_be_bytes());
    expected.extend_from_slice(&first[..14]);
    assert_eq!(&ulpdu_of(&sent[0].0)[18..], expected, "0x1100C000 with the first Write's header");
    assert!(bytes(&buf, 0, 4096).iter().all(|&b| b == 0x5E), "nothing placed, not even the good Write after");
    assert_eq!(got.iter().map(|c| (c.wr_id, c.status)).collect::<Vec<_>>(), [(7, CqeStatus::Flushed)]);
}

/// RDMAP-13, RDMAP-14: a received Terminate puts the QP in ERROR with its code and sends
/// nothing back; a second one from the same peer is dropped (the first stays recorded). Any
/// header layout is read: M = D = 0 with the control word alone, and a Segment Length that
/// counts the payload only (Linux siw's reading) or is 0.
#[test]
fn rdmap_13_14_a_second_terminate_is_dropped_and_any_header_layout_is_read() {
    let (dev, peer) = raw_device();
    let pd = ProtectionDomain::new(&dev).expect("PD");
    let cq = CompletionQueue::new(&dev, 4, 0).expect("CQ");
    let mut qps: Vec<_> = (0..4).map(|i| QueuePair::new(&dev, &pd, &cq, &cq, caps(60 + i)).expect("QP")).collect();
    for qp in &mut qps {
        qp.ready().expect("RTS");
    }
    let write_header = Segment::write(0x1234, 0x40, &[0; 16]).to_vec()[..14].to_vec();
    let terminate = |word: u32, length: u16, header: &[u8]| {
        let mut t = word.to_be_bytes().to_vec();
        if word & 0xC000 != 0 {
            t.extend_from_slice(&length.to_be_bytes());
            t.extend_from_slice(header);
        }
        // The Terminate's own untagged DDP header: QN 2, MSN 1.
        frame(&untagged(0x41, 0x47, 0, 2, 1, 0, &t), true)
    };
    let cases: [(&[Vec<u8>], u32); 4] = [
        (&[terminate(0x1100_C000, 30, &write_header), terminate(0x0206_0000, 0, &[])], 0x1100_C000),
        (&[terminate(0x0100_0000, 0, &[])], 0x0100_0000),
        (&[terminate(0x1101_C000, 16, &write_header)], 0x1101_C000),
        (&[terminate(0x1102_C000, 0, &write_header)], 0x1102_C000),
    ];
    for (qp, (fpdus, _)) in qps.iter().zip(&cases) {
        for fpdu in fpdus.iter() {
            peer.send(fpdu, qp.qpn().into());
        }
    }
    dev.hal().run_idle(5_000);
    assert_eq!(peer.pending(), 0, "every Terminate taken");
    assert_eq!(peer.sent_count(), 0, "nothing sent back");
    for (i, (qp, (_, word))) in qps.iter().zip(&cases).enumerate() {
        let (ctx, status) = qp.query().expect("query");
        let info = status.terminate.expect("recorded");
        assert_eq!(
            (ctx.state, info.received, info.code),
            (QpState::Error, true, TermCode::from_control_word(*word).0),
            "QP {i}: in ERROR with the first Terminate's code"
        );
    }
}

/// RDMAP-12 test 1: a Send with Invalidate of an STag of the QP's PD ends it before the
/// Send's completion (which names it); an RDMA Write to it after gets 0x1100C000 (invalid
/// STag) and places nothing.
#[test]
fn rdmap_12_a_send_with_invalidate_ends_the_stag_and_a_write_to_it_is_refused() {
    let (dev, peer) = raw_device();
    let pd = ProtectionDomain::new(&dev).expect("PD");
    let buf = dev.alloc_dma(4096).expect("DMA");
    buf.write_bytes(0, &[0x5E; 4096]);
    let local = MemoryRegion::register_range(&pd, &buf, 0, 2048, ALL).expect("MR");
    let target = MemoryRegion::register_range(&pd, &buf, 2048, 2048, ALL).expect("MR");
    let cq = CompletionQueue::new(&dev, 4, 0).expect("CQ");
    let mut qp = qp_in_rts(&dev, &pd, &cq);
    qp.post_recv(&RecvRequest { wr_id: 3, local: local.sge(0, 64).unwrap() }).expect("receive");
    peer.send(&frame(&Segment::send_invalidate(1, target.rkey(), &[7; 16]).to_vec(), true), qp.qpn().into());
    let got = collect(&dev, &cq, 1);
    assert_eq!(
        got.iter().map(|c| (c.wr_id, c.status, c.invalidated)).collect::<Vec<_>>(),
        [(3, CqeStatus::Success, Some(target.rkey()))],
        "the receive completes naming the STag it ended"
    );
    let write = Segment::write(target.rkey(), target.va(), &[9; 16]).to_vec();
    peer.send(&frame(&write, true), qp.qpn().into());
    run_until(&dev, || peer.sent_count() >= 1);
    dev.hal().run_idle(2_000);
    let sent = peer.sent();
    assert_eq!(sent.len(), 1, "one Terminate: {:?}", opcodes(&peer));
    let mut expected = 0x1100_C000u32.to_be_bytes().to_vec();
    expected.extend_from_slice(&(write.len() as u16).to_be_bytes());
    expected.extend_from_slice(&write[..14]);
    assert_eq!(&ulpdu_of(&sent[0].0)[18..], expected, "0x1100C000 with the Write's header");
    assert_eq!(bytes(&buf, 0, 16), [7; 16], "the Send placed");
    assert!(bytes(&buf, 16, 4096 - 16).iter().all(|&b| b == 0x5E), "the Write placed nothing");
}
