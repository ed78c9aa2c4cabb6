//! Two Verilated RNICs (`rnic_top`) connected stream to stream, driven by the real driver
//! through `SimHal`: Sends land in posted receives, RDMA Writes in the peer's MR, RDMA
//! Reads bring the peer's memory back, byte for byte; zero-length messages are one
//! segment each and checked only as far as the RFCs allow; a Write past the end of its
//! MR is refused with the exact Terminate and places nothing.
#![cfg(feature = "sim")]

mod common;

use common::{collect, linked_pair, linked_pair_recorded, ulpdu_of};
use rand::rngs::StdRng;
use rand::{Rng, SeedableRng};
use rnic_driver::sim::SimHal;
use rnic_driver::{
    CompletionQueue, CqeOpcode, CqeStatus, DmaBuffer, MemoryRegion, MrAccess, ProtectionDomain, QpCaps, QpState,
    QueuePair, RecvRequest, RemoteBuf, WorkRequest,
};
use rnic_proto::rdmap::{parse_ulpdu, Opcode, RdmapHeader};

const BUFFER: usize = 64 * 1024;
const ALL: MrAccess = MrAccess { local_write: true, remote_read: true, remote_write: true, remote_atomic: false };

fn caps(peer_qpn: u16) -> QpCaps {
    QpCaps {
        sq_log_size: 5,
        rq_log_size: 5,
        mulpdu: 1460,
        ird: 4,
        ord: 4,
        crc: true,
        markers_tx: false,
        markers_rx: false,
        conn_id: peer_qpn,
    }
}

fn read_all(buf: &DmaBuffer<'_, SimHal>, offset: usize, len: usize) -> Vec<u8> {
    (offset..offset + len).map(|i| buf.read_u8(i)).collect()
}

#[test]
fn rdmap_send_write_read_between_two_rnics() {
    let (a, b) = linked_pair();
    let (pda, pdb) = (ProtectionDomain::new(&a).expect("PD"), ProtectionDomain::new(&b).expect("PD"));
    let (bufa, bufb) = (a.alloc_dma(BUFFER).expect("DMA"), b.alloc_dma(BUFFER).expect("DMA"));
    let mut rng = StdRng::seed_from_u64(1);
    let content: Vec<u8> = (0..BUFFER).map(|_| rng.gen()).collect();
    bufa.write_bytes(0, &content);
    let peer: Vec<u8> = (0..BUFFER).map(|_| rng.gen()).collect();
    bufb.write_bytes(0, &peer);
    let mra = MemoryRegion::register(&pda, &bufa, ALL).expect("MR");
    let mrb = MemoryRegion::register(&pdb, &bufb, ALL).expect("MR");
    let (cqa, cqb) = (CompletionQueue::new(&a, 6, 0).expect("CQ"), CompletionQueue::new(&b, 6, 0).expect("CQ"));
    let mut qpa = QueuePair::new(&a, &pda, &cqa, &cqa, caps(0)).expect("QP");
    let mut qpb = QueuePair::new(&b, &pdb, &cqb, &cqb, caps(0)).expect("QP");
    qpa.ready().expect("RTS");
    qpb.ready().expect("RTS");

    // A Send of 3000 octets into B's receive at 40 000.
    qpb.post_recv(&RecvRequest { wr_id: 77, local: mrb.sge(40_000, 4096).unwrap() }).expect("recv");
    qpa.post_send(&WorkRequest::Send {
        wr_id: 1,
        local: mra.sge(100, 3000).unwrap(),
        solicited: true,
        invalidate: None,
        signaled: true,
    })
    .expect("send");
    let cb = collect(&b, &cqb, 1);
    assert_eq!(cb.len(), 1, "B's receive completes");
    assert_eq!(
        (cb[0].wr_id, cb[0].opcode, cb[0].status, cb[0].byte_len),
        (77, CqeOpcode::Recv, CqeStatus::Success, 3000)
    );
    assert!(cb[0].solicited);
    assert_eq!(read_all(&bufb, 40_000, 3000), content[100..3100]);
    assert_eq!(read_all(&bufb, 43_000, 1096), peer[43_000..44_096], "past the message");

    // A Write of 5000 octets to B at 1000.
    qpa.post_send(&WorkRequest::Write {
        wr_id: 2,
        local: mra.sge(7, 5000).unwrap(),
        remote: mrb.remote(1000).unwrap(),
        signaled: true,
    })
    .expect("write");
    // A Read of 7000 octets of B at 20 000 into A at 30 000.
    qpa.post_send(&WorkRequest::Read {
        wr_id: 3,
        local: mra.sge(30_000, 7000).unwrap(),
        remote: mrb.remote(20_000).unwrap(),
        signaled: true,
    })
    .expect("read");
    let ca = collect(&a, &cqa, 3);
    let ids: Vec<_> = ca.iter().map(|c| (c.wr_id, c.opcode, c.status, c.byte_len)).collect();
    assert_eq!(
        ids,
        [
            (1, CqeOpcode::Send, CqeStatus::Success, 3000),
            (2, CqeOpcode::RdmaWrite, CqeStatus::Success, 5000),
            (3, CqeOpcode::RdmaRead, CqeStatus::Success, 7000)
        ]
    );
    assert_eq!(read_all(&bufb, 1000, 5000), content[7..5007]);
    assert_eq!(read_all(&bufa, 30_000, 7000), peer[20_000..27_000]);
    assert_eq!(read_all(&bufa, 37_000, 100), content[37_000..37_100], "past the Read");
}

/// RDMAP-18 (§5.5 rules 12, 17): a Read Request is served only once every Write before it
/// is placed, so a Read of octets a Write just wrote returns them, also when the
/// responder's memory answers reads after 1 cycle and acknowledges writes after 64 (AXI
/// orders neither channel after the other; the bus model stores write data at its B).
#[test]
fn rdmap_18_a_read_after_a_write_returns_the_written_octets_when_reads_overtake_writes() {
    let (a, b) = linked_pair();
    b.hal()
        .with_dma_timing(|t| (t.read_latency, t.write_latency) = (1, 64))
        .expect("B's memory is on the AXI bus model");
    let (pda, pdb) = (ProtectionDomain::new(&a).expect("PD"), ProtectionDomain::new(&b).expect("PD"));
    let (bufa, bufb) = (a.alloc_dma(BUFFER).expect("DMA"), b.alloc_dma(BUFFER).expect("DMA"));
    let mut rng = StdRng::seed_from_u64(18);
    let old: Vec<u8> = (0..BUFFER).map(|_| rng.gen()).collect();
    bufb.write_bytes(0, &old);
    let mra = MemoryRegion::register(&pda, &bufa, ALL).expect("MR");
    let mrb = MemoryRegion::register(&pdb, &bufb, ALL).expect("MR");
    let (cqa, cqb) = (CompletionQueue::new(&a, 6, 0).expect("CQ"), CompletionQueue::new(&b, 6, 0).expect("CQ"));
    let mut qpa = QueuePair::new(&a, &pda, &cqa, &cqa, caps(0)).expect("QP");
    let mut qpb = QueuePair::new(&b, &pdb, &cqb, &cqb, caps(0)).expect("QP");
    qpa.ready().expect("RTS");
    qpb.ready().expect("RTS");
    // Each round: Write 256 octets to B at `at`, then Read 256 octets of B at `at + 128`
    // (the Write's second half, then B's old octets) into A at 32 768 + `at`.
    for round in 0..12usize {
        let at = round * 2048;
        let new: Vec<u8> = (0..256).map(|_| rng.gen()).collect();
        bufa.write_bytes(at, &new);
        let write = WorkRequest::Write {
            wr_id: 1,
            local: mra.sge(at as u64, 256).unwrap(),
            remote: mrb.remote(at as u64).unwrap(),
            signaled: true,
        };
        let read = WorkRequest::Read {
            wr_id: 2,
            local: mra.sge(32_768 + at as u64, 256).unwrap(),
            remote: mrb.remote(at as u64 + 128).unwrap(),
            signaled: true,
        };
        qpa.post_send_batch(&[write, read]).expect("post");
        let done: Vec<_> = collect(&a, &cqa, 2).iter().map(|c| (c.wr_id, c.status, c.byte_len)).collect();
        assert_eq!(done, [(1, CqeStatus::Success, 256), (2, CqeStatus::Success, 256)], "round {round}");
        let mut expected = new[128..].to_vec();
        expected.extend_from_slice(&old[at + 256..at + 384]);
        assert_eq!(read_all(&bufa, 32_768 + at, 256), expected, "round {round}: the Read saw the Write before it");
    }
}

#[test]
fn ddp_12_write_past_the_mr_is_terminated_and_places_nothing() {
    let (a, b) = linked_pair();
    let (pda, pdb) = (ProtectionDomain::new(&a).expect("PD"), ProtectionDomain::new(&b).expect("PD"));
    let (bufa, bufb) = (a.alloc_dma(8192).expect("DMA"), b.alloc_dma(8192).expect("DMA"));
    bufa.write_bytes(0, &[0x5a; 8192]);
    bufb.write_bytes(0, &[0xc3; 8192]);
    let mra = MemoryRegion::register(&pda, &bufa, ALL).expect("MR");
    // B's MR covers 4096 octets of the 8192: the rest is its guard.
    let mrb = MemoryRegion::register_range(&pdb, &bufb, 0, 4096, ALL).expect("MR");
    let (cqa, cqb) = (CompletionQueue::new(&a, 6, 0).expect("CQ"), CompletionQueue::new(&b, 6, 0).expect("CQ"));
    let mut qpa = QueuePair::new(&a, &pda, &cqa, &cqa, caps(0)).expect("QP");
    let mut qpb = QueuePair::new(&b, &pdb, &cqb, &cqb, caps(0)).expect("QP");
    qpa.ready().expect("RTS");
    qpb.ready().expect("RTS");
    let remote = RemoteBuf { stag: mrb.rkey(), to: mrb.va() + 4000 };
    qpa.post_send(&WorkRequest::Write { wr_id: 9, local: mra.sge(0, 200).unwrap(), remote, signaled: true })
        .expect("write");
    collect(&a, &cqa, 1);
    b.hal().run_idle(3_000);
    assert_eq!(read_all(&bufb, 0, 8192), vec![0xc3; 8192], "nothing placed, guard intact");
    let (ctxb, sb) = qpb.query().expect("query B");
    assert_eq!(ctxb.state, QpState::Error);
    let tb = sb.terminate.expect("B terminated");
    assert_eq!((tb.code.layer, tb.code.etype, tb.code.code, tb.received), (1, 1, 0x01, false));
    let (_, sa) = qpa.query().expect("query A");
    let ta = sa.terminate.expect("A got B's Terminate");
    assert_eq!((ta.code.layer, ta.code.etype, ta.code.code, ta.received), (1, 1, 0x01, true));
}

#[test]
fn ddp_09_zero_length_messages_are_one_segment_and_checked_as_the_rfc_says() {
    let (a, b) = linked_pair();
    let (pda, pdb) = (ProtectionDomain::new(&a).expect("PD"), ProtectionDomain::new(&b).expect("PD"));
    let (bufa, bufb) = (a.alloc_dma(8192).expect("DMA"), b.alloc_dma(8192).expect("DMA"));
    bufa.write_bytes(0, &[0x11; 8192]);
    bufb.write_bytes(0, &[0x22; 8192]);
    let mra = MemoryRegion::register(&pda, &bufa, ALL).expect("MR");
    let mrb = MemoryRegion::register(&pdb, &bufb, ALL).expect("MR");
    let (cqa, cqb) = (CompletionQueue::new(&a, 6, 0).expect("CQ"), CompletionQueue::new(&b, 6, 0).expect("CQ"));
    let mut qpa = QueuePair::new(&a, &pda, &cqa, &cqa, caps(0)).expect("QP");
    let mut qpb = QueuePair::new(&b, &pdb, &cqb, &cqb, caps(0)).expect("QP");
    qpa.ready().expect("RTS");
    qpb.ready().expect("RTS");

    // DDP-09 test 2 / RDMAP-11: a zero-length Send consumes exactly one receive; the
    // Send after it takes the next.
    qpb.post_recv(&RecvRequest { wr_id: 1, local: mrb.sge(0, 4096).unwrap() }).expect("recv");
    qpb.post_recv(&RecvRequest { wr_id: 2, local: mrb.sge(4096, 4096).unwrap() }).expect("recv");
    bufa.write_bytes(0, &[0x33; 100]);
    let empty = WorkRequest::Send {
        wr_id: 10,
        local: mra.sge(0, 0).unwrap(),
        solicited: false,
        invalidate: None,
        signaled: true,
    };
    let hundred = WorkRequest::Send {
        wr_id: 11,
        local: mra.sge(0, 100).unwrap(),
        solicited: false,
        invalidate: None,
        signaled: true,
    };
    qpa.post_send_batch(&[empty, hundred]).expect("sends");
    let cb = collect(&b, &cqb, 2);
    let got: Vec<_> = cb.iter().map(|c| (c.wr_id, c.opcode, c.status, c.byte_len)).collect();
    assert_eq!(got, [(1, CqeOpcode::Recv, CqeStatus::Success, 0), (2, CqeOpcode::Recv, CqeStatus::Success, 100)]);
    assert_eq!(read_all(&bufb, 0, 4096), vec![0x22; 4096], "the empty Send placed nothing");
    assert_eq!(read_all(&bufb, 4096, 100), vec![0x33; 100]);

    // DDP-09 test 1: a zero-length Write's STag and TO are not checked (all ones here).
    let nowhere = RemoteBuf { stag: 0xFFFF_FFFF, to: u64::MAX };
    qpa.post_send(&WorkRequest::Write { wr_id: 12, local: mra.sge(0, 0).unwrap(), remote: nowhere, signaled: true })
        .expect("write");
    // RDMAP-08 test 1: a zero-length Read with an invalid source STag (0) is answered
    // with a zero-length Read Response, not a Terminate; a Read after it still works.
    let invalid = RemoteBuf { stag: 0, to: 0 };
    qpa.post_send(&WorkRequest::Read { wr_id: 13, local: mra.sge(200, 0).unwrap(), remote: invalid, signaled: true })
        .expect("read");
    qpa.post_send(&WorkRequest::Read {
        wr_id: 14,
        local: mra.sge(300, 64).unwrap(),
        remote: mrb.remote(4096).unwrap(),
        signaled: true,
    })
    .expect("read");
    let ca = collect(&a, &cqa, 5);
    let got: Vec<_> = ca.iter().map(|c| (c.wr_id, c.opcode, c.status, c.byte_len)).collect();
    assert_eq!(
        got,
        [
            (10, CqeOpcode::Send, CqeStatus::Success, 0),
            (11, CqeOpcode::Send, CqeStatus::Success, 100),
            (12, CqeOpcode::RdmaWrite, CqeStatus::Success, 0),
            (13, CqeOpcode::RdmaRead, CqeStatus::Success, 0),
            (14, CqeOpcode::RdmaRead, CqeStatus::Success, 64),
        ]
    );
    assert_eq!(read_all(&bufa, 100, 200), vec![0x11; 200], "the empty Read placed nothing");
    assert_eq!(read_all(&bufa, 300, 64), vec![0x33; 64], "the Read after it");
    for (qp, side) in [(&qpa, "A"), (&qpb, "B")] {
        let (ctx, status) = qp.query().expect("query");
        assert_eq!((ctx.state, status.terminate), (QpState::Rts, None), "{side} stays in RTS");
    }
}

/// RDMAP-10 Test 2: B answers at most IRD Reads at once. With IRD 1, Reads one after
/// another all succeed (a sent response frees its slot); a second Read Request that
/// arrives while the first response is still going out gets Terminate 1/2/0x02
/// (`0x1202C000`) and no response: its sink stays as it was.
#[test]
fn rdmap_10_read_requests_beyond_ird_are_refused_and_sent_responses_free_their_slot() {
    let (a, b, link) = linked_pair_recorded();
    let (pda, pdb) = (ProtectionDomain::new(&a).expect("PD"), ProtectionDomain::new(&b).expect("PD"));
    let (bufa, bufb) = (a.alloc_dma(BUFFER).expect("DMA"), b.alloc_dma(BUFFER).expect("DMA"));
    let mut rng = StdRng::seed_from_u64(10);
    let peer: Vec<u8> = (0..BUFFER).map(|_| rng.gen()).collect();
    bufa.write_bytes(0, &[0x11; BUFFER]);
    bufb.write_bytes(0, &peer);
    let mra = MemoryRegion::register(&pda, &bufa, ALL).expect("MR");
    let mrb = MemoryRegion::register(&pdb, &bufb, ALL).expect("MR");
    let (cqa, cqb) = (CompletionQueue::new(&a, 6, 0).expect("CQ"), CompletionQueue::new(&b, 6, 0).expect("CQ"));
    let mut qpa = QueuePair::new(&a, &pda, &cqa, &cqa, caps(0)).expect("QP");
    let mut qpb = QueuePair::new(&b, &pdb, &cqb, &cqb, QpCaps { ird: 1, ..caps(0) }).expect("QP");
    qpa.ready().expect("RTS");
    qpb.ready().expect("RTS");

    for i in 0..3_u64 {
        let at = 2000 * i as usize;
        let read = WorkRequest::Read {
            wr_id: i,
            local: mra.sge(at as u64, 2000).unwrap(),
            remote: mrb.remote(at as u64).unwrap(),
            signaled: true,
        };
        qpa.post_send(&read).expect("read");
        let done = collect(&a, &cqa, 1);
        assert_eq!(done.len(), 1, "Read {i} completes");
        assert_eq!((done[0].wr_id, done[0].status, done[0].byte_len), (i, CqeStatus::Success, 2000));
        assert_eq!(read_all(&bufa, at, 2000), peer[at..at + 2000], "Read {i} data");
    }

    // Two Reads of 24 KiB at once: the second request finds the first response unsent.
    for (i, at) in [(10_u64, 8192_usize), (11, 8192 + 24 * 1024)] {
        let read = WorkRequest::Read {
            wr_id: i,
            local: mra.sge(at as u64, 24 * 1024).unwrap(),
            remote: mrb.remote(at as u64).unwrap(),
            signaled: true,
        };
        qpa.post_send(&read).expect("read");
    }
    collect(&a, &cqa, 2);
    a.hal().run_idle(5_000);
    let (ctxb, sb) = qpb.query().expect("query B");
    assert_eq!(ctxb.state, QpState::Error);
    let tb = sb.terminate.expect("B terminated");
    assert_eq!((tb.code.layer, tb.code.etype, tb.code.code, tb.received), (1, 2, 0x02, false));
    // On the wire, from B: the Read Responses of the answered Reads, then one Terminate,
    // 0x1202C000 with the refused Read Request's length and DDP header.
    let link = link.borrow();
    let from_b: Vec<&Vec<u8>> = link.iter().filter(|(from_a, _, _)| !from_a).map(|(_, _, f)| f).collect();
    let terminates: Vec<&[u8]> = from_b
        .iter()
        .map(|f| ulpdu_of(f))
        .filter(|u| matches!(parse_ulpdu(u).map(|s| s.header), Ok(RdmapHeader::Terminate(_))))
        .collect();
    assert_eq!(terminates.len(), 1, "one Terminate from B");
    let requests: Vec<&[u8]> = link
        .iter()
        .filter(|(from_a, _, _)| *from_a)
        .map(|(_, _, f)| ulpdu_of(f))
        .filter(|u| matches!(parse_ulpdu(u).map(|s| s.header), Ok(RdmapHeader::ReadRequest(_))))
        .collect();
    let refused = requests.last().expect("A's Read Requests");
    let mut expected = 0x1202_C000u32.to_be_bytes().to_vec();
    expected.extend_from_slice(&(refused.len() as u16).to_be_bytes());
    expected.extend_from_slice(&refused[..18]);
    assert_eq!(&terminates[0][18..], expected, "0x1202C000, the refused Read Request's length and DDP header");
    let opcodes: Vec<Opcode> = from_b.iter().map(|f| parse_ulpdu(ulpdu_of(f)).expect("an FPDU").opcode).collect();
    assert!(
        opcodes.iter().all(|&o| o == Opcode::ReadResponse || o == Opcode::Terminate),
        "B sent Read Responses and the Terminate only: {opcodes:?}"
    );
    let (_, sa) = qpa.query().expect("query A");
    let ta = sa.terminate.expect("A got B's Terminate");
    assert_eq!((ta.code.layer, ta.code.etype, ta.code.code, ta.received), (1, 2, 0x02, true));
    let second = 8192 + 24 * 1024;
    assert_eq!(read_all(&bufa, second, 24 * 1024), vec![0x11; 24 * 1024], "no response to the refused Read");
}

/// Every completion waited for through the CQ's interrupt, far more of them than the CQ
/// writer keeps interrupts in flight (16): the host backend takes each interrupt
/// (`irq_ready`), so none holds back the CQEs behind it.
#[test]
fn completions_waited_for_by_interrupt_keep_coming_past_the_interrupts_in_flight() {
    let (a, b) = linked_pair();
    let (pda, pdb) = (ProtectionDomain::new(&a).expect("PD"), ProtectionDomain::new(&b).expect("PD"));
    let (bufa, bufb) = (a.alloc_dma(4096).expect("DMA"), b.alloc_dma(4096).expect("DMA"));
    let (mra, mrb) =
        (MemoryRegion::register(&pda, &bufa, ALL).expect("MR"), MemoryRegion::register(&pdb, &bufb, ALL).expect("MR"));
    let (cqa, cqb) = (CompletionQueue::new(&a, 5, 1).expect("CQ"), CompletionQueue::new(&b, 5, 2).expect("CQ"));
    let mut qa = QueuePair::new(&a, &pda, &cqa, &cqa, caps(0)).expect("QP");
    let mut qb = QueuePair::new(&b, &pdb, &cqb, &cqb, caps(0)).expect("QP");
    qa.ready().expect("RTS");
    qb.ready().expect("RTS");
    for i in 0..48u64 {
        qb.post_recv(&RecvRequest { wr_id: i, local: mrb.sge(0, 64).expect("SGE") }).expect("recv");
        let send = WorkRequest::Send {
            wr_id: i,
            local: mra.sge(0, 64).expect("SGE"),
            solicited: false,
            invalidate: None,
            signaled: true,
        };
        qa.post_send(&send).expect("send");
        // Waits for the interrupt (wait arms, polls, waits), within a bounded number of tries.
        let done = (0..100).find_map(|_| cqa.wait(std::time::Duration::from_micros(200)).expect("wait"));
        let done = done.unwrap_or_else(|| panic!("send {i}: no completion through its interrupt"));
        assert_eq!((done.wr_id, done.status), (i, CqeStatus::Success), "send {i}");
        let got = (0..100).find_map(|_| cqb.wait(std::time::Duration::from_micros(200)).expect("wait"));
        assert_eq!(got.map(|c| (c.wr_id, c.opcode)), Some((i, CqeOpcode::Recv)), "receive {i}");
    }
}
