//! RFC 7306 on the wire of one `rnic_top`, against a raw peer on its streams: the Atomic
//! Requests and Immediate Data it sends are the byte-exact vectors V5, V6 and V8 of the
//! CHECKLIST's VECTORS.md; the V7 response completes its FetchAdd; as a responder it
//! answers FetchAdds in order and refuses a misaligned one with the exact V10 Terminate,
//! and the other bad requests with their codes, leaving memory byte-identical.
#![cfg(feature = "sim")]

mod common;

use common::{frame, raw_device, run_until, terminate_code, ulpdu_of, Targets};
use rnic_driver::{
    CompletionQueue, CqeOpcode, CqeStatus, MemoryRegion, MrAccess, ProtectionDomain, QpCaps, QpState, QueuePair,
    RecvRequest, RemoteBuf, WorkRequest,
};
use rnic_proto::ddp::DdpHeader;
use rnic_proto::host::context::MAX_READS;
use rnic_proto::rdmap::{parse_ulpdu, AtomicRequest, AtomicResponse, Opcode, RdmapHeader, ReadRequest, Segment};

const ALL: MrAccess = MrAccess { local_write: true, remote_read: true, remote_write: true, remote_atomic: true };

/// VECTORS.md V5: FetchAdd, QN 1, MSN 2, Request Identifier 1, STag 0x12345678, TO 0x1000, +1.
const V5: &str = "0046414a000000000000000100000002000000000000000000000001123456780000000000001000000000000000000100000000000000000000000000000000ffffffffffffffff87bacb87";
/// V6: masked CmpSwap, MSN 3, Request Identifier 2, TO 0x2008.
const V6: &str = "0046414a000000000000000100000003000000000000000200000002123456780000000000002008123456781234567800000000ffffffffaaaa0000ffffffffffffffff00000000332d92ae";
/// V7: the Atomic Response to V5 (QN 3, MSN 1), original value 0x29.
const V7: &str = "001e414b00000000000000030000000100000000000000010000000000000029ebf3f1db";
/// V8: Immediate Data 01..08, MSN 2, and the same with SE, MSN 3.
const V8: &str = "001a4148000000000000000000000002000000000102030405060708a98a5e54";
const V8_SE: &str = "001a41490000000000000000000000030000000001020304050607085179b84a";
/// V10: Terminate 0/2/0x07 for a misaligned Atomic Request with MSN 4.
const V10: &str = "002a4147000000000000000200000001000000000207c0000046414a000000000000000100000004000000009a790102";

fn hex(s: &str) -> Vec<u8> {
    (0..s.len()).step_by(2).map(|i| u8::from_str_radix(&s[i..i + 2], 16).expect("hex")).collect()
}

/// Every FPDU here carries a CRC.
fn frame_crc(ulpdu: &[u8]) -> Vec<u8> {
    frame(ulpdu, true)
}

fn caps(conn_id: u16) -> QpCaps {
    QpCaps {
        sq_log_size: 4,
        rq_log_size: 4,
        mulpdu: 1024,
        ird: 4,
        ord: 4,
        crc: true,
        markers_tx: false,
        markers_rx: false,
        conn_id,
    }
}

#[test]
fn atom_02_03_05_13_requests_leave_as_v5_v6_and_the_v7_response_completes_the_fetch_add() {
    let (dev, peer) = raw_device();
    let pd = ProtectionDomain::new(&dev).expect("PD");
    let buf = dev.alloc_dma(4096).expect("DMA");
    buf.write_bytes(0, &[0xEE; 4096]);
    let mr = MemoryRegion::register(&pd, &buf, ALL).expect("MR");
    let cq = CompletionQueue::new(&dev, 6, 0).expect("CQ");
    let mut qp = QueuePair::new(&dev, &pd, &cq, &cq, caps(5)).expect("QP");
    qp.ready().expect("RTS");
    // ATOM-13: a Read takes QN 1 MSN 1, the atomics MSNs 2 and 3 (the peer's STag and TOs
    // are those of the vectors; a requester does not check them).
    let target = RemoteBuf { stag: 0x1234_5678, to: 0x1000 };
    let read = WorkRequest::Read { wr_id: 1, local: mr.sge(0, 8).unwrap(), remote: target, signaled: true };
    let fetch_add = WorkRequest::FetchAdd {
        wr_id: 2,
        local: mr.sge(8, 8).unwrap(),
        remote: target,
        add: 1,
        add_mask: 0,
        signaled: true,
    };
    let cmp_swap = WorkRequest::CmpSwap {
        wr_id: 3,
        local: mr.sge(16, 8).unwrap(),
        remote: RemoteBuf { stag: 0x1234_5678, to: 0x2008 },
        compare: 0xAAAA_0000_FFFF_FFFF,
        compare_mask: 0xFFFF_FFFF_0000_0000,
        swap: 0x1234_5678_1234_5678,
        swap_mask: 0x0000_0000_FFFF_FFFF,
        signaled: true,
    };
    qp.post_send_batch(&[read, fetch_add, cmp_swap]).expect("post");
    run_until(&dev, || peer.sent_count() >= 3);
    let sent = peer.sent();
    assert_eq!(sent.len(), 3, "a Read Request and two Atomic Requests");
    assert_eq!(sent[1].0, hex(V5), "V5 byte for byte");
    assert_eq!(sent[2].0, hex(V6), "V6 byte for byte");
    assert!(sent.iter().all(|(_, conn)| *conn == 5));

    // The peer answers in order: the Read Response, V7, then the CmpSwap's response.
    let Ok(Segment { header: RdmapHeader::ReadRequest(rr), .. }) = parse_ulpdu(ulpdu_of(&sent[0].0)) else {
        panic!("a Read Request first");
    };
    let data = 0x0102_0304_0506_0708_u64.to_le_bytes();
    peer.send(&frame_crc(&Segment::read_response(rr.sink_stag, rr.sink_to, &data).to_vec()), qp.qpn().into());
    peer.send(&hex(V7), qp.qpn().into());
    let second = AtomicResponse { request_id: 2, original: 0xAAAA_0000_BBBB_0000 };
    peer.send(&frame_crc(&Segment::atomic_response(2, second).to_vec()), qp.qpn().into());
    let mut done = Vec::new();
    run_until(&dev, || {
        while let Some(c) = cq.poll().expect("CQE") {
            done.push(c);
        }
        done.len() >= 3
    });
    let got: Vec<_> = done.iter().map(|c| (c.wr_id, c.opcode, c.status, c.byte_len)).collect();
    assert_eq!(
        got,
        [
            (1, CqeOpcode::RdmaRead, CqeStatus::Success, 8),
            (2, CqeOpcode::Atomic, CqeStatus::Success, 8),
            (3, CqeOpcode::Atomic, CqeStatus::Success, 8)
        ]
    );
    let word = |at: usize| u64::from_le_bytes(std::array::from_fn(|i| buf.read_u8(at + i)));
    assert_eq!((word(0), word(8), word(16)), (0x0102_0304_0506_0708, 0x29, 0xAAAA_0000_BBBB_0000));
    assert_eq!(word(24), 0xEEEE_EEEE_EEEE_EEEE, "nothing past the result buffers");
}

#[test]
fn imm_01_immediate_data_leaves_as_v8() {
    let (dev, peer) = raw_device();
    let pd = ProtectionDomain::new(&dev).expect("PD");
    let buf = dev.alloc_dma(4096).expect("DMA");
    let mr = MemoryRegion::register(&pd, &buf, ALL).expect("MR");
    let cq = CompletionQueue::new(&dev, 6, 0).expect("CQ");
    let mut qp = QueuePair::new(&dev, &pd, &cq, &cq, caps(6)).expect("QP");
    qp.ready().expect("RTS");
    let data = [1, 2, 3, 4, 5, 6, 7, 8];
    qp.post_send_batch(&[
        WorkRequest::Send {
            wr_id: 1,
            local: mr.sge(0, 10).unwrap(),
            solicited: false,
            invalidate: None,
            signaled: true,
        },
        WorkRequest::Immediate { wr_id: 2, data, solicited: false, signaled: true },
        WorkRequest::Immediate { wr_id: 3, data, solicited: true, signaled: true },
    ])
    .expect("post");
    run_until(&dev, || peer.sent_count() >= 3);
    let sent = peer.sent();
    assert_eq!(sent.len(), 3);
    assert_eq!(sent[1].0, hex(V8), "V8 byte for byte");
    assert_eq!(sent[2].0, hex(V8_SE), "V8 with SE byte for byte");
}

/// One responder QP per bad request (each ends its QP in ERROR), against two adjacent
/// regions whose memory must stay byte-identical.
#[test]
fn atom_04_07_08_bad_atomic_requests_get_their_terminate_and_leave_memory_alone() {
    bad_atomic_requests(false);
}

/// The same checks on regions in device memory.
#[test]
fn atom_04_07_08_bad_atomic_requests_on_device_memory_get_their_terminate_and_leave_it_alone() {
    bad_atomic_requests(true);
}

fn bad_atomic_requests(device_memory: bool) {
    let (dev, peer) = raw_device();
    let pd = ProtectionDomain::new(&dev).expect("PD");
    // Two regions of 4096 octets: one with every right, one without REMOTE_ATOMIC.
    let bufs = [Targets::new(&dev, device_memory, 4096), Targets::new(&dev, device_memory, 4096)];
    let pattern: Vec<u8> = (0..8192).map(|i| (i * 7 + 3) as u8).collect();
    bufs[0].write_bytes(0, &pattern[..4096]);
    bufs[1].write_bytes(0, &pattern[4096..]);
    let mr = bufs[0].register(&pd, ALL);
    let mr_plain = bufs[1].register(&pd, MrAccess { remote_atomic: false, ..ALL });
    let cq = CompletionQueue::new(&dev, 6, 0).expect("CQ");
    let mut qps: Vec<_> = (0..5).map(|i| QueuePair::new(&dev, &pd, &cq, &cq, caps(20 + i)).expect("QP")).collect();
    for qp in &mut qps {
        qp.ready().expect("RTS");
    }
    let fa = |id, stag, to| AtomicRequest::fetch_add(id, stag, to, 1, 0);
    // QP 0 (ATOM-07, V10): three good FetchAdds on word 0, then MSN 4 at base + 4.
    let qp0 = qps[0].qpn().into();
    for msn in 1..=3 {
        peer.send(&frame_crc(&Segment::atomic_request(msn, fa(msn, mr.rkey(), mr.va())).to_vec()), qp0);
    }
    peer.send(&frame_crc(&Segment::atomic_request(4, fa(4, mr.rkey(), mr.va() + 4)).to_vec()), qp0);
    // QP 1 (ATOM-04): AOpCode 1, the draft's Swap, on word 8.
    let swap = AtomicRequest { aopcode: 1, ..AtomicRequest::cmp_swap(1, mr.rkey(), mr.va() + 8, 0, u64::MAX, 0, 0) };
    peer.send(&frame_crc(&Segment::atomic_request(1, swap).to_vec()), qps[1].qpn().into());
    // QP 2 (ATOM-08): the last 4 octets of the region.
    peer.send(&frame_crc(&Segment::atomic_request(1, fa(1, mr.rkey(), mr.va() + 4092)).to_vec()), qps[2].qpn().into());
    // QP 3 (ATOM-08): a region without REMOTE_ATOMIC.
    peer.send(
        &frame_crc(&Segment::atomic_request(1, fa(1, mr_plain.rkey(), mr_plain.va())).to_vec()),
        qps[3].qpn().into(),
    );
    // QP 4 (SEC-01 for atomics): an STag that names no region.
    peer.send(&frame_crc(&Segment::atomic_request(1, fa(1, 0x00BB_0000 | 0x42, 0)).to_vec()), qps[4].qpn().into());
    run_until(&dev, || peer.sent_count() >= 8);
    let sent = peer.sent();
    let to = |i: usize| -> Vec<&Vec<u8>> {
        let conn = u64::from(20 + i as u16);
        sent.iter().filter(|(_, c)| *c == conn).map(|(f, _)| f).collect()
    };
    // QP 0: the three responses, MSNs 1..3, Request Identifiers echoed, originals 0x..
    let first = u64::from_le_bytes(pattern[0..8].try_into().unwrap());
    let qp0_sent = to(0);
    assert_eq!(qp0_sent.len(), 4, "three responses and a Terminate");
    for (n, fpdu) in qp0_sent[..3].iter().enumerate() {
        let seg = parse_ulpdu(ulpdu_of(fpdu)).expect("an Atomic Response");
        let RdmapHeader::AtomicResponse(resp) = seg.header else { panic!("{seg:?}") };
        let DdpHeader::Untagged(ddp) = seg.ddp else { panic!("{seg:?}") };
        assert_eq!((ddp.qn, ddp.msn), (3, n as u32 + 1), "QN 3, MSN in order");
        assert_eq!(resp, AtomicResponse { request_id: n as u32 + 1, original: first + n as u64 });
    }
    assert_eq!(*qp0_sent[3], hex(V10), "V10 byte for byte");
    let codes: Vec<u32> = (1..5)
        .map(|i| {
            let t = to(i);
            assert_eq!(t.len(), 1, "QP {i}: only a Terminate");
            terminate_code(t[0])
        })
        .collect();
    assert_eq!(codes, [0x0206_C000, 0x0101_C000, 0x0102_C000, 0x0100_C000], "AOpCode 1, bounds, rights, invalid STag");
    let mut expected = pattern.clone();
    expected[0..8].copy_from_slice(&(first + 3).to_le_bytes());
    let memory = [bufs[0].bytes(0, 4096), bufs[1].bytes(0, 4096)].concat();
    assert!(memory == expected, "only the three good FetchAdds changed memory");
    for qp in &qps {
        assert_eq!(qp.query().expect("query").0.state, QpState::Error);
    }
}

/// IMM-03: Immediate Data of 7 or 9 octets is refused with 0/2/0xFF and completes nothing
/// successfully; 8 octets complete the receive.
#[test]
fn imm_03_immediate_data_must_be_exactly_eight_octets() {
    let (dev, peer) = raw_device();
    let pd = ProtectionDomain::new(&dev).expect("PD");
    let buf = dev.alloc_dma(4096).expect("DMA");
    let mr = MemoryRegion::register(&pd, &buf, ALL).expect("MR");
    let cq = CompletionQueue::new(&dev, 6, 0).expect("CQ");
    let mut qps: Vec<_> = (0..3).map(|i| QueuePair::new(&dev, &pd, &cq, &cq, caps(30 + i)).expect("QP")).collect();
    for (i, qp) in qps.iter_mut().enumerate() {
        qp.ready().expect("RTS");
        qp.post_recv(&RecvRequest { wr_id: i as u64, local: mr.sge(i as u64 * 64, 64).unwrap() }).expect("recv");
    }
    let imm_ulpdu = |len: usize| {
        let mut u = Segment::immediate(1, [9; 8], false).to_vec();
        u.resize(18 + len, 9);
        u
    };
    for (qp, len) in qps.iter().zip([7, 9, 8]) {
        peer.send(&frame_crc(&imm_ulpdu(len)), qp.qpn().into());
    }
    run_until(&dev, || peer.sent_count() >= 2);
    dev.hal().run_idle(2000);
    let mut codes: Vec<(u64, u32)> = peer.sent().iter().map(|(f, c)| (*c, terminate_code(f))).collect();
    codes.sort();
    assert_eq!(codes, [(30, 0x02FF_C000), (31, 0x02FF_C000)], "7 and 9 octets: Terminate 0/2/0xFF with the DDP header");
    let mut done = Vec::new();
    while let Some(c) = cq.poll().expect("CQE") {
        done.push((c.wr_id, c.opcode, c.status, c.imm));
    }
    done.sort_by_key(|d| d.0);
    assert_eq!(
        done,
        [
            (0, CqeOpcode::Recv, CqeStatus::Flushed, None),
            (1, CqeOpcode::Recv, CqeStatus::Flushed, None),
            (2, CqeOpcode::RecvImm, CqeStatus::Success, Some([9; 8]))
        ],
        "the 8-octet one completes; the receives of the two QPs it failed on are flushed"
    );
}

/// ATOM-06, ATOM-16: a response with the wrong QN 3 MSN gives 1/2/0x03, an unsolicited one
/// (no atomic outstanding) 0/2/0xFF, one with the right MSN but another Request Identifier
/// 0/2/0xFF; none completes anything successfully or writes memory.
#[test]
fn atom_06_16_responses_that_match_no_request_are_refused() {
    let (dev, peer) = raw_device();
    let pd = ProtectionDomain::new(&dev).expect("PD");
    let buf = dev.alloc_dma(4096).expect("DMA");
    buf.write_bytes(0, &[0x5C; 4096]);
    let mr = MemoryRegion::register(&pd, &buf, ALL).expect("MR");
    let cq = CompletionQueue::new(&dev, 6, 0).expect("CQ");
    let mut qps: Vec<_> = (0..3).map(|i| QueuePair::new(&dev, &pd, &cq, &cq, caps(40 + i)).expect("QP")).collect();
    for qp in &mut qps {
        qp.ready().expect("RTS");
    }
    // QP 0 has one FetchAdd outstanding; its response comes with MSN 2.
    let target = RemoteBuf { stag: 0x0000_0100, to: 0 };
    qps[0]
        .post_send(&WorkRequest::FetchAdd {
            wr_id: 1,
            local: mr.sge(0, 8).unwrap(),
            remote: target,
            add: 1,
            add_mask: 0,
            signaled: true,
        })
        .expect("post");
    run_until(&dev, || peer.sent_count() >= 1);
    let wrong_msn = AtomicResponse { request_id: 1, original: 7 };
    peer.send(&frame_crc(&Segment::atomic_response(2, wrong_msn).to_vec()), qps[0].qpn().into());
    // QP 1 has none.
    peer.send(
        &frame_crc(&Segment::atomic_response(1, AtomicResponse { request_id: 1, original: 7 }).to_vec()),
        qps[1].qpn().into(),
    );
    // QP 2 has one outstanding too; its response has MSN 1 and Request Identifier 2.
    qps[2]
        .post_send(&WorkRequest::FetchAdd {
            wr_id: 3,
            local: mr.sge(16, 8).unwrap(),
            remote: target,
            add: 1,
            add_mask: 0,
            signaled: true,
        })
        .expect("post");
    run_until(&dev, || peer.sent_count() >= 4);
    peer.send(
        &frame_crc(&Segment::atomic_response(1, AtomicResponse { request_id: 2, original: 7 }).to_vec()),
        qps[2].qpn().into(),
    );
    run_until(&dev, || peer.sent_count() >= 5);
    dev.hal().run_idle(1000);
    let mut codes: Vec<(u64, u32)> = peer
        .sent()
        .iter()
        .filter_map(|(f, c)| match parse_ulpdu(ulpdu_of(f)).expect("an FPDU").header {
            RdmapHeader::Terminate(t) => Some((*c, t.control_word())),
            _ => None,
        })
        .collect();
    codes.sort();
    assert_eq!(codes, [(40, 0x1203_C000), (41, 0x02FF_C000), (42, 0x02FF_C000)]);
    assert_eq!(peer.sent_count(), 5, "two Atomic Requests and three Terminates");
    while let Some(c) = cq.poll().expect("CQE") {
        assert_ne!(c.status, CqeStatus::Success, "nothing completes successfully: {c:?}");
    }
    assert!((0..4096).all(|i| buf.read_u8(i) == 0x5C), "nothing placed");
}

/// ATOM-13 test 2: with ORD 1, a Read and an atomic posted together leave one at a time:
/// the Atomic Request only once the Read Response has come back, and both complete.
#[test]
fn atom_13_with_ord_one_a_read_and_an_atomic_go_out_one_at_a_time() {
    let (dev, peer) = raw_device();
    let pd = ProtectionDomain::new(&dev).expect("PD");
    let buf = dev.alloc_dma(4096).expect("DMA");
    let mr = MemoryRegion::register(&pd, &buf, ALL).expect("MR");
    let cq = CompletionQueue::new(&dev, 6, 0).expect("CQ");
    let mut qp = QueuePair::new(&dev, &pd, &cq, &cq, QpCaps { ord: 1, ..caps(6) }).expect("QP");
    qp.ready().expect("RTS");
    let target = RemoteBuf { stag: 0x1234_5678, to: 0x1000 };
    let read = WorkRequest::Read { wr_id: 1, local: mr.sge(0, 8).unwrap(), remote: target, signaled: true };
    let fetch_add = WorkRequest::FetchAdd {
        wr_id: 2,
        local: mr.sge(8, 8).unwrap(),
        remote: target,
        add: 1,
        add_mask: 0,
        signaled: true,
    };
    qp.post_send_batch(&[read, fetch_add]).expect("post");
    run_until(&dev, || peer.sent_count() >= 2);
    let sent = peer.sent();
    assert_eq!(sent.len(), 1, "only the Read Request while it is outstanding");
    let Ok(Segment { header: RdmapHeader::ReadRequest(rr), .. }) = parse_ulpdu(ulpdu_of(&sent[0].0)) else {
        panic!("a Read Request first: {:02x?}", sent[0].0);
    };
    let data = 0x0102_0304_0506_0708_u64.to_le_bytes();
    peer.send(&frame_crc(&Segment::read_response(rr.sink_stag, rr.sink_to, &data).to_vec()), qp.qpn().into());
    run_until(&dev, || peer.sent_count() >= 2);
    let sent = peer.sent();
    assert_eq!(sent.len(), 2, "the Atomic Request once the Read is answered");
    let Ok(Segment { header: RdmapHeader::AtomicRequest(req), ddp: DdpHeader::Untagged(ddp), .. }) =
        parse_ulpdu(ulpdu_of(&sent[1].0))
    else {
        panic!("an Atomic Request second: {:02x?}", sent[1].0);
    };
    assert_eq!((ddp.qn, ddp.msn, req.request_id), (1, 2, 1), "QN 1 MSN 2 after the Read's MSN 1");
    let response = AtomicResponse { request_id: req.request_id, original: 7 };
    peer.send(&frame_crc(&Segment::atomic_response(1, response).to_vec()), qp.qpn().into());
    let mut done = Vec::new();
    run_until(&dev, || {
        while let Some(c) = cq.poll().expect("CQE") {
            done.push((c.wr_id, c.opcode, c.status));
        }
        done.len() >= 2
    });
    assert_eq!(done, [(1, CqeOpcode::RdmaRead, CqeStatus::Success), (2, CqeOpcode::Atomic, CqeStatus::Success)]);
    assert_eq!(buf.read_u64(8), 7, "the original value placed");
}

/// ATOM-13 and RDMAP-03: ORD keeps holding after many requests. With ORD 2, rounds of a
/// Read, an atomic and a Read posted together, past twice the wrap of the ring positions
/// (modulo `2 MAX_READS`): every round, two requests on the wire, the third only once the
/// first is answered. (The QP's ORD limit and its ring of outstanding requests share a word
/// in the receive side's table: a ring position that carried into the limit after 16
/// requests made it 3.)
#[test]
fn atom_13_ord_two_holds_for_every_request_past_the_ring_position_wrap() {
    let (dev, peer) = raw_device();
    let pd = ProtectionDomain::new(&dev).expect("PD");
    let buf = dev.alloc_dma(4096).expect("DMA");
    let mr = MemoryRegion::register(&pd, &buf, ALL).expect("MR");
    let cq = CompletionQueue::new(&dev, 6, 0).expect("CQ");
    let mut qp = QueuePair::new(&dev, &pd, &cq, &cq, QpCaps { ord: 2, ..caps(6) }).expect("QP");
    qp.ready().expect("RTS");
    let target = RemoteBuf { stag: 0x1234_5678, to: 0x1000 };
    let mut done = Vec::new();
    // Waits a while, then returns the requests sent since `before` (in order).
    let requests_after = |before: usize| {
        dev.hal().run_idle(3000);
        peer.sent()[before..]
            .iter()
            .map(|(f, _)| parse_ulpdu(ulpdu_of(f)).expect("a request").header)
            .collect::<Vec<_>>()
    };
    let rounds = 4 * u64::from(MAX_READS) / 3 + 1;
    for round in 0..rounds {
        let id = |i| 3 * round + i;
        let read = |i| WorkRequest::Read { wr_id: id(i), local: mr.sge(0, 8).unwrap(), remote: target, signaled: true };
        let fetch_add = WorkRequest::FetchAdd {
            wr_id: id(1),
            local: mr.sge(8, 8).unwrap(),
            remote: target,
            add: 1,
            add_mask: 0,
            signaled: true,
        };
        let before = peer.sent_count();
        qp.post_send_batch(&[read(0), fetch_add, read(2)]).expect("post");
        let sent = requests_after(before);
        let [RdmapHeader::ReadRequest(first), RdmapHeader::AtomicRequest(atomic)] = sent.as_slice() else {
            panic!("round {round}: the Read and the atomic, no more while both are outstanding: {sent:?}");
        };
        assert_eq!(atomic.request_id, round as u32 + 1, "round {round}: its Request Identifier");
        let data = round.to_le_bytes();
        peer.send(&frame_crc(&Segment::read_response(first.sink_stag, first.sink_to, &data).to_vec()), qp.qpn().into());
        let sent = requests_after(before + 2);
        let [RdmapHeader::ReadRequest(last)] = sent.as_slice() else {
            panic!("round {round}: the second Read once the first is answered, no more: {sent:?}");
        };
        let response = AtomicResponse { request_id: atomic.request_id, original: round };
        peer.send(&frame_crc(&Segment::atomic_response(atomic.request_id, response).to_vec()), qp.qpn().into());
        peer.send(&frame_crc(&Segment::read_response(last.sink_stag, last.sink_to, &data).to_vec()), qp.qpn().into());
        run_until(&dev, || {
            while let Some(c) = cq.poll().expect("CQE") {
                done.push((c.wr_id, c.status));
            }
            done.len() as u64 >= id(3)
        });
    }
    let want: Vec<(u64, CqeStatus)> = (0..3 * rounds).map(|wr_id| (wr_id, CqeStatus::Success)).collect();
    assert_eq!(done, want, "every request completes, in order");
}

/// RDMAP-10 at the limit: with ORD at its maximum, `MAX_READS`, that many Reads go on the
/// wire at once and no more; each Read Response answered (oldest first) lets exactly one
/// more go. Four times `MAX_READS` Reads in all, so that the receive side's counts of
/// Reads pushed and popped (modulo `2 MAX_READS`) wrap twice; every Read completes, in
/// order, with its own data.
#[test]
fn rdmap_10_ord_at_the_maximum_keeps_max_reads_outstanding_and_no_more() {
    let (dev, peer) = raw_device();
    let pd = ProtectionDomain::new(&dev).expect("PD");
    let buf = dev.alloc_dma(4096).expect("DMA");
    let mr = MemoryRegion::register(&pd, &buf, ALL).expect("MR");
    let cq = CompletionQueue::new(&dev, 7, 0).expect("CQ");
    let caps = QpCaps { sq_log_size: 7, ord: MAX_READS, ..caps(6) };
    let mut qp = QueuePair::new(&dev, &pd, &cq, &cq, caps).expect("QP");
    qp.ready().expect("RTS");
    let target = RemoteBuf { stag: 0x1234_5678, to: 0x1000 };
    let max = usize::from(MAX_READS);
    let total = 4 * max;
    // Each Read lands in an 8-octet slot of its own (the buffer holds 4096 / 8 of them).
    let read = |n: usize| WorkRequest::Read {
        wr_id: n as u64,
        local: mr.sge(8 * n as u64, 8).unwrap(),
        remote: RemoteBuf { to: target.to + 8 * n as u64, ..target },
        signaled: true,
    };
    // A few more posted than may go out, topped up as Reads are answered.
    let (mut posted, mut answered, mut done) = (0, 0, Vec::new());
    while answered < total {
        let want_posted = (answered + max + 4).min(total);
        let batch: Vec<WorkRequest> = (posted..want_posted).map(read).collect();
        qp.post_send_batch(&batch).expect("post");
        posted = want_posted;
        dev.hal().run_idle(3000);
        let sent = peer.sent();
        let outstanding = (posted - answered).min(max);
        assert_eq!(
            sent.len(),
            answered + outstanding,
            "{answered} answered, {posted} posted: {outstanding} Read Requests outstanding, no more"
        );
        let Ok(Segment { header: RdmapHeader::ReadRequest(rr), ddp: DdpHeader::Untagged(ddp), .. }) =
            parse_ulpdu(ulpdu_of(&sent[answered].0))
        else {
            panic!("Read Request {answered}: {:02x?}", sent[answered].0);
        };
        assert_eq!((ddp.qn, ddp.msn), (1, answered as u32 + 1), "Read Request {answered}: QN 1, its MSN");
        let data = (0xA000 + answered as u64).to_le_bytes();
        peer.send(&frame_crc(&Segment::read_response(rr.sink_stag, rr.sink_to, &data).to_vec()), qp.qpn().into());
        answered += 1;
        while let Some(c) = cq.poll().expect("CQE") {
            done.push((c.wr_id, c.opcode, c.status));
        }
    }
    run_until(&dev, || {
        while let Some(c) = cq.poll().expect("CQE") {
            done.push((c.wr_id, c.opcode, c.status));
        }
        done.len() >= total
    });
    let want: Vec<_> = (0..total as u64).map(|n| (n, CqeOpcode::RdmaRead, CqeStatus::Success)).collect();
    assert_eq!(done, want, "every Read completes, in order");
    for n in 0..total {
        assert_eq!(buf.read_u64(8 * n), 0xA000 + n as u64, "Read {n}'s data placed in its slot");
    }
}

/// ATOM-14, §7 rows Send → Atomic and Immediate Data → Atomic: the Atomic Response is not
/// generated until the message before it has completed at the responder. The target is in
/// device memory, so the atomic itself takes a few cycles and only the ordering rule holds
/// the response back until the receive's CQE is in host memory.
#[test]
fn atom_14_send_or_immediate_data_then_atomic_completes_the_receive_before_the_response() {
    let (dev, peer) = raw_device();
    let pd = ProtectionDomain::new(&dev).expect("PD");
    let buf = dev.alloc_dma(4096).expect("DMA");
    let mr = MemoryRegion::register(&pd, &buf, ALL).expect("MR");
    let dm = Targets::new(&dev, true, 64);
    let target = dm.register(&pd, ALL);
    dm.set_word(0, 5);
    let cq = CompletionQueue::new(&dev, 6, 0).expect("CQ");
    let mut qp = QueuePair::new(&dev, &pd, &cq, &cq, caps(7)).expect("QP");
    qp.ready().expect("RTS");
    for i in 0..2 {
        qp.post_recv(&RecvRequest { wr_id: 10 + i, local: mr.sge(1024 * i, 1024).unwrap() }).expect("recv");
    }
    let payload = [0x5Au8; 200];
    let first: [Vec<u8>; 2] =
        [Segment::send(1, &payload).to_vec(), Segment::immediate(2, *b"12345678", false).to_vec()];
    // Atomics that leave memory as it is (a FetchAdd of 0, a CmpSwap that fails) have no
    // write-back to wait for: nothing but the rule holds their responses.
    for (n, message) in first.iter().enumerate() {
        let msn = n as u32 + 1;
        let request = match n {
            0 => AtomicRequest::fetch_add(msn, target.rkey(), target.va(), 0, 0),
            _ => AtomicRequest::cmp_swap(msn, target.rkey(), target.va(), 6, u64::MAX, 9, u64::MAX),
        };
        peer.send(&frame_crc(message), qp.qpn().into());
        peer.send(&frame_crc(&Segment::atomic_request(msn, request).to_vec()), qp.qpn().into());
        // Clock one cycle at a time until the response leaves; the receive's CQE must be
        // in memory by then.
        let mut cycles = 0;
        while peer.sent_count() <= n && cycles < 20_000 {
            dev.hal().run_idle(1);
            cycles += 1;
        }
        assert_eq!(peer.sent_count(), n + 1, "message {n}: the Atomic Response left");
        let c = cq
            .poll()
            .expect("CQE")
            .unwrap_or_else(|| panic!("message {n}: the response left before the receive completed"));
        assert_eq!((c.wr_id, c.status), (10 + n as u64, CqeStatus::Success));
    }
    let sent = peer.sent();
    for (n, (fpdu, _)) in sent.iter().enumerate() {
        let Ok(Segment { header: RdmapHeader::AtomicResponse(resp), .. }) = parse_ulpdu(ulpdu_of(fpdu)) else {
            panic!("an Atomic Response: {fpdu:02x?}");
        };
        assert_eq!(resp, AtomicResponse { request_id: n as u32 + 1, original: 5 });
    }
    assert_eq!(dm.word(0), 5, "neither atomic changed the word");
}

/// RDMAP-10 at the limit, as a responder: with IRD at its maximum, `MAX_READS`, that many
/// Read Requests are accepted while none of their responses has been sent (the link holds
/// back the first, a 64 KiB one, and the others queue behind it): the QP stays in RTS. One
/// more is refused with Terminate 1/2/0x02. Once the link takes output again, the
/// `MAX_READS` responses leave in order, each with its own data, and then the Terminate.
#[test]
fn rdmap_10_ird_at_the_maximum_takes_max_reads_requests_and_refuses_one_more() {
    const LARGE: usize = 64 * 1024;
    let (dev, peer) = raw_device();
    let pd = ProtectionDomain::new(&dev).expect("PD");
    let max = usize::from(MAX_READS);
    let buf = dev.alloc_dma(LARGE + 8 * (max + 1)).expect("DMA");
    let large: Vec<u8> = (0..LARGE).map(|i| (i * 7 + i / 251) as u8).collect();
    buf.write_bytes(0, &large);
    // Read n > 0 is of 8 octets: its own word.
    let word = |n: usize| (0xB000 + n as u64).to_le_bytes();
    for n in 1..=max {
        buf.write_bytes(LARGE + 8 * n, &word(n));
    }
    let mr = MemoryRegion::register(&pd, &buf, ALL).expect("MR");
    let cq = CompletionQueue::new(&dev, 6, 0).expect("CQ");
    let mut qp = QueuePair::new(&dev, &pd, &cq, &cq, QpCaps { ird: MAX_READS, ..caps(6) }).expect("QP");
    qp.ready().expect("RTS");
    let held = peer.tx_hold();
    held.set(true);
    let source = mr.remote(0).expect("remote");
    let request = |n: usize| {
        let (src_to, size) = if n == 0 { (0, LARGE) } else { (LARGE + 8 * n, 8) };
        let rr = ReadRequest {
            sink_stag: 0x1234_5678,
            sink_to: 0x100_0000 * n as u64,
            size: size as u32,
            src_stag: source.stag,
            src_to: source.to + src_to as u64,
        };
        frame_crc(&Segment::read_request(n as u32 + 1, rr).to_vec())
    };
    for n in 0..max {
        peer.send(&request(n), qp.qpn().into());
    }
    dev.hal().run_idle(5000);
    assert_eq!(peer.sent_count(), 0, "the link took nothing");
    let (ctx, status) = qp.query().expect("query");
    assert_eq!((ctx.state, status.terminate), (QpState::Rts, None), "{max} Read Requests taken (IRD {max})");
    peer.send(&request(max), qp.qpn().into());
    dev.hal().run_idle(5000);
    let (ctx, status) = qp.query().expect("query");
    assert_eq!(ctx.state, QpState::Error, "one Read Request past IRD");
    let term = status.terminate.expect("a Terminate");
    assert_eq!((term.code.layer, term.code.etype, term.code.code, term.received), (1, 2, 0x02, false));
    held.set(false);
    let is_terminate = |f: &[u8]| matches!(parse_ulpdu(ulpdu_of(f)).map(|s| s.opcode), Ok(Opcode::Terminate));
    for _ in 0..100 {
        if peer.sent().last().is_some_and(|(f, _)| is_terminate(f)) {
            break;
        }
        dev.hal().run_idle(5000);
    }
    dev.hal().run_idle(3000);
    let sent = peer.sent();
    let (last, responses) = sent.split_last().expect("FPDUs sent");
    assert_eq!(terminate_code(&last.0), 0x1202_C000, "the refused request's Terminate, last");
    // The responses, segment by segment: the large one's (sink TO 0), then each small one.
    let mut by_read: Vec<Vec<u8>> = vec![Vec::new(); max];
    for (i, (fpdu, _)) in responses.iter().enumerate() {
        let Ok(Segment { opcode: Opcode::ReadResponse, ddp: DdpHeader::Tagged(t), payload, .. }) =
            parse_ulpdu(ulpdu_of(fpdu))
        else {
            panic!("FPDU {i} of {}: not a Read Response: {fpdu:02x?}", responses.len());
        };
        let n = (t.to / 0x100_0000) as usize;
        assert!(by_read[n + 1..].iter().all(Vec::is_empty), "FPDU {i}: Read {n}'s response after a later one's");
        by_read[n].extend_from_slice(payload);
    }
    assert!(by_read[0] == large, "Read 0's {LARGE} octets");
    for (n, got) in by_read.iter().enumerate().skip(1) {
        assert_eq!(got[..], word(n), "Read {n}'s data");
    }
}
