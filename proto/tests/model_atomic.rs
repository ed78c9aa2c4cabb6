//! The reference model's RFC 7306 support: atomics and Immediate Data end to
//! end, the vectors they must reproduce byte for byte (VECTORS V4–V8, V10,
//! V13, V14), and every check with its Terminate. Tests are named after the
//! CHECKLIST items they cover.

mod common;
use common::hex;
use rnic_proto::ddp::DdpHeader;
use rnic_proto::host::{
    stag, CqContext, Cqe, CqeOpcode, CqeStatus, MrAccess, MrContext, QpContext, QpState, RqWqe, SqOpcode, SqWqe,
    TermInfo,
};
use rnic_proto::model::{Expected, Fabric, RnicConfig, Side, TxClass, TxLog};
use rnic_proto::rdmap::{parse_ulpdu, AtomicRequest, AtomicResponse, Opcode, RdmapHeader, ReadRequest, Segment};
use rnic_proto::terminate::{TermCode, Terminate, TerminatedDdpHeader};

// ------------------------------------------------------------ the setup

const QA: u32 = 1;
const QB: u32 = 2;
const SEND_CQ: u32 = 0;
const RECV_CQ: u32 = 1;
const PD: u16 = 1;

const A_MEM: u64 = 0x10_0000;
const B_MEM: u64 = 0x20_0000;

/// A's MR 1: every right, 32 KiB.
const LA: u32 = stag(1, 0x11);
const LA_VA: u64 = 0xA000_0000;
const LA_LEN: u64 = 0x8000;
/// A's MR 2: no LOCAL_WRITE.
const LA_RO: u32 = stag(2, 0x12);
const LA_RO_VA: u64 = 0xA100_0000;

/// B's MR 1: every right, 32 KiB.
const RB: u32 = stag(1, 0x21);
const RB_VA: u64 = 0xB000_0000;
const RB_LEN: u64 = 0x8000;
/// B's MR 2: read and write, but no REMOTE_ATOMIC.
const RB_NOATOMIC: u32 = stag(2, 0x22);
const RB_NOATOMIC_VA: u64 = 0xB100_0000;
/// B's MR 3: every right, another PD.
const RB_PD2: u32 = stag(3, 0x23);
const RB_PD2_VA: u64 = 0xB200_0000;
/// B's MR 4: the last 4 KiB of the TO space.
const RB_TOP: u32 = stag(4, 0x24);
const RB_TOP_VA: u64 = u64::MAX - 0xFFF;
/// B's MR 5: an 8-aligned TO on an IOVA that is not.
const RB_SKEW: u32 = stag(5, 0x25);
const RB_SKEW_VA: u64 = 0xB400_0000;
const RB_SKEW_IOVA: u64 = B_MEM + 0xB004;
/// B's MR 6: an IOVA that is 8-aligned at a TO that is not.
const RB_SHIFT: u32 = stag(6, 0x26);
const RB_SHIFT_VA: u64 = 0xB500_0004;
const RB_SHIFT_IOVA: u64 = B_MEM + 0xC000;

fn mr(key: u8, access: MrAccess, pd: u16, va: u64, length: u64, iova: u64) -> MrContext {
    MrContext { key, access, valid: true, pd, va, length, iova }
}

fn qp_ctx() -> QpContext {
    QpContext {
        state: QpState::Rts,
        pd: PD,
        mulpdu: 1024,
        send_cq: SEND_CQ as u16,
        recv_cq: RECV_CQ as u16,
        sq_log_size: 6,
        rq_log_size: 6,
        ird: 4,
        ord: 4,
        sq_base: 0x1000,
        rq_base: 0x3000,
        ..QpContext::default()
    }
}

/// QP `QA` on A connected to `QB` on B, both in RTS, with 64 KiB of host
/// memory each and CQ 0 for sends, 1 for receives; no MRs.
fn fabric(config: RnicConfig) -> Fabric {
    let mut f = Fabric::new(config);
    for (side, qpn, mem) in [(Side::A, QA, A_MEM), (Side::B, QB, B_MEM)] {
        let r = f.rnic_mut(side);
        r.mem.add_region(mem, 0x1_0000).unwrap();
        let cq = CqContext { log_size: 8, enable: true, vector: 0, base: 0x8000 };
        r.write_cq(SEND_CQ, &cq).unwrap();
        r.write_cq(RECV_CQ, &cq).unwrap();
        r.write_qp(qpn, &qp_ctx()).unwrap();
    }
    f.connect(QA, QB).unwrap();
    f
}

/// The default fabric with the MRs above.
fn setup() -> Fabric {
    let mut f = fabric(RnicConfig::default());
    let all = MrAccess::ALL;
    let no_local_write = MrAccess { local_write: false, ..all };
    let no_atomic = MrAccess { remote_atomic: false, ..all };
    let a = f.rnic_mut(Side::A);
    a.write_mr(1, &mr(0x11, all, PD, LA_VA, LA_LEN, A_MEM)).unwrap();
    a.write_mr(2, &mr(0x12, no_local_write, PD, LA_RO_VA, 0x1000, A_MEM + 0x8000)).unwrap();
    let b = f.rnic_mut(Side::B);
    let mrs = [
        (1, mr(0x21, all, PD, RB_VA, RB_LEN, B_MEM)),
        (2, mr(0x22, no_atomic, PD, RB_NOATOMIC_VA, 0x1000, B_MEM + 0x8000)),
        (3, mr(0x23, all, 2, RB_PD2_VA, 0x1000, B_MEM + 0x9000)),
        (4, mr(0x24, all, PD, RB_TOP_VA, 0x1000, B_MEM + 0xA000)),
        (5, mr(0x25, all, PD, RB_SKEW_VA, 0x100, RB_SKEW_IOVA)),
        (6, mr(0x26, all, PD, RB_SHIFT_VA, 0x100, RB_SHIFT_IOVA)),
    ];
    for (index, ctx) in mrs {
        b.write_mr(index, &ctx).unwrap();
    }
    f
}

/// The ULPDU inside a vector's FPDU: after the 2-octet MPA length, before
/// pad and CRC.
fn ulpdu_of(fpdu: &str) -> Vec<u8> {
    let w = hex(fpdu);
    let len = usize::from(u16::from_be_bytes([w[0], w[1]]));
    w[2..2 + len].to_vec()
}

fn qpn(side: Side) -> u32 {
    match side {
        Side::A => QA,
        Side::B => QB,
    }
}

fn word(f: &Fabric, side: Side, iova: u64) -> u64 {
    let b = f.rnic(side).mem.read(iova, 8).unwrap();
    u64::from_le_bytes(b.try_into().unwrap())
}

fn set_word(f: &mut Fabric, side: Side, iova: u64, value: u64) {
    f.rnic_mut(side).mem.write(iova, &value.to_le_bytes()).unwrap();
}

fn cqes(f: &Fabric, side: Side, cqn: u32) -> Vec<Cqe> {
    f.rnic(side).cq(cqn).unwrap().cqes()
}

fn tx(f: &Fabric, side: Side) -> &TxLog {
    f.rnic(side).qp(qpn(side)).unwrap().tx()
}

fn state(f: &Fabric, side: Side) -> QpState {
    f.rnic(side).qp(qpn(side)).unwrap().state()
}

/// The one Terminate `side` sent, parsed.
fn terminate_sent(f: &Fabric, side: Side) -> Terminate {
    let log = tx(f, side);
    assert_eq!(log.terminates.len(), 1, "{side:?} Terminates");
    match parse_ulpdu(&log.terminates[0]).unwrap().header {
        RdmapHeader::Terminate(t) => t,
        h => panic!("not a Terminate: {h:?}"),
    }
}

/// The Terminate for `ulpdu` carrying its DDP header only (M = D = 1, R = 0).
fn ddp_only(code: TermCode, ulpdu: &[u8]) -> Terminate {
    let h = TerminatedDdpHeader::from_segment(ulpdu).unwrap();
    Terminate::new(code).with_ddp(ulpdu.len() as u16, h)
}

fn success(wr_id: u64, side: Side, opcode: CqeOpcode, byte_len: u32) -> Cqe {
    let mut c = Cqe::new(wr_id, qpn(side) as u16, opcode, CqeStatus::Success);
    c.byte_len = byte_len;
    c
}

fn failed(wr_id: u64, side: Side, opcode: CqeOpcode, status: CqeStatus) -> Cqe {
    Cqe::new(wr_id, qpn(side) as u16, opcode, status)
}

fn atomic_ok(wr_id: u64) -> Cqe {
    success(wr_id, Side::A, CqeOpcode::Atomic, 8)
}

fn recv_imm(wr_id: u64, data: [u8; 8], solicited: bool) -> Cqe {
    let mut c = success(wr_id, Side::B, CqeOpcode::RecvImm, 8);
    c.imm = u64::from_le_bytes(data);
    c.imm_valid = true;
    c.solicited = solicited;
    c
}

/// A FetchAdd from A into the word at `to` of B's MR 1, its result to A's
/// word at `result`.
fn fetch_add(wr_id: u64, to: u64, add: u64, mask: u64, result: u64) -> SqWqe {
    SqWqe::fetch_add(wr_id, add, mask).local(LA, result, 8).remote(RB, to)
}

/// The request fields of a parsed Atomic Request ULPDU, with its QN 1 MSN.
fn atomic_request(ulpdu: &[u8]) -> (u32, AtomicRequest) {
    let seg = parse_ulpdu(ulpdu).unwrap();
    match (seg.ddp, seg.header) {
        (DdpHeader::Untagged(h), RdmapHeader::AtomicRequest(r)) => {
            assert_eq!(h.qn, 1);
            (h.msn, r)
        }
        other => panic!("not an Atomic Request: {other:?}"),
    }
}

fn assert_both_in_error(f: &Fabric, sender: Side, code: TermCode) {
    assert_eq!((state(f, Side::A), state(f, Side::B)), (QpState::Error, QpState::Error));
    let info = |side: Side| f.rnic(side).qp(qpn(side)).unwrap().terminate();
    assert_eq!(info(sender), Some(TermInfo { code, received: false }));
    assert_eq!(info(sender.peer()), Some(TermInfo { code, received: true }));
}

// ------------------------------------------------------------ the vectors

const V4: &str =
    "002e414100000000000000010000000100000000000102030000000000004000000010000a0b0c0d000000000001000019760a62";
const V5: &str = "0046414a000000000000000100000002000000000000000000000001123456780000000000001000000000000000000100000000000000000000000000000000ffffffffffffffff87bacb87";
const V6: &str = "0046414a000000000000000100000003000000000000000200000002123456780000000000002008123456781234567800000000ffffffffaaaa0000ffffffffffffffff00000000332d92ae";
const V7: &str = "001e414b00000000000000030000000100000000000000010000000000000029ebf3f1db";
const V8: &str = "001a4148000000000000000000000002000000000102030405060708a98a5e54";
const V8_SE: &str = "001a41490000000000000000000000030000000001020304050607085179b84a";
const V10: &str = "002a4147000000000000000200000001000000000207c0000046414a000000000000000100000004000000009a790102";

/// ATOM-02, ATOM-03, ATOM-05, ATOM-07, ATOM-11, ATOM-13: a Read, a
/// FetchAdd, a CmpSwap and a misaligned FetchAdd posted on one QP put V4,
/// V5, V6 on the wire, are answered with V7 and V10, and leave the V6/V7
/// memory values. The STags of the vectors need a large MR table.
#[test]
fn atom_02_03_05_07_13_one_qp_reproduces_v4_v5_v6_v7_v10() {
    let config = RnicConfig { num_mrs: 0x12_3457, ..RnicConfig::default() };
    let mut f = fabric(config);
    let sink = stag(0x00_0102, 0x03);
    let source = stag(0x0A_0B0C, 0x0D);
    let target = stag(0x12_3456, 0x78);
    let local_write = MrAccess { local_write: true, ..MrAccess::default() };
    let remote_read = MrAccess { remote_read: true, ..MrAccess::default() };
    let remote_atomic = MrAccess { remote_atomic: true, ..MrAccess::default() };
    f.rnic_mut(Side::A).write_mr(0x00_0102, &mr(0x03, local_write, PD, 0x4000, 0x2000, A_MEM)).unwrap();
    let b = f.rnic_mut(Side::B);
    b.write_mr(0x0A_0B0C, &mr(0x0D, remote_read, PD, 0x1_0000, 0x1000, B_MEM)).unwrap();
    b.write_mr(0x12_3456, &mr(0x78, remote_atomic, PD, 0x1000, 0x1010, B_MEM + 0x2000)).unwrap();
    let word_at = |to: u64| B_MEM + 0x2000 + (to - 0x1000);
    set_word(&mut f, Side::B, word_at(0x1000), 0x29);
    set_word(&mut f, Side::B, word_at(0x2008), 0xAAAA_0000_BBBB_0000);

    let read = SqWqe::new(SqOpcode::RdmaRead, 1).local(sink, 0x4000, 4096).remote(source, 0x1_0000);
    // Compare fields a FetchAdd does not use go out as 0 / all ones (ATOM-03).
    let add = SqWqe { compare: 0xDEAD, compare_mask: 0x0F0F, ..SqWqe::fetch_add(2, 1, 0) }
        .local(sink, 0x5000, 8)
        .remote(target, 0x1000);
    let swap =
        SqWqe::cmp_swap(3, 0xAAAA_0000_FFFF_FFFF, 0xFFFF_FFFF_0000_0000, 0x1234_5678_1234_5678, 0x0000_0000_FFFF_FFFF)
            .local(sink, 0x5008, 8)
            .remote(target, 0x2008);
    let misaligned = SqWqe::fetch_add(4, 1, 0).local(sink, 0x5010, 8).remote(target, 0x1004);
    for w in [read, add, swap, misaligned] {
        f.post_send(Side::A, QA, w).unwrap();
    }
    f.run().unwrap();

    let sent = &tx(&f, Side::A).requests;
    assert_eq!(sent.len(), 4);
    assert_eq!(sent[0], ulpdu_of(V4), "V4");
    assert_eq!(sent[1], ulpdu_of(V5), "V5");
    assert_eq!(sent[2], ulpdu_of(V6), "V6");
    let responses = &tx(&f, Side::B).atomic_responses;
    let swapped = AtomicResponse { request_id: 2, original: 0xAAAA_0000_BBBB_0000 };
    assert_eq!(*responses, [ulpdu_of(V7), Segment::atomic_response(2, swapped).to_vec()], "V7, then the V6 response");
    assert_eq!(tx(&f, Side::B).terminates, [ulpdu_of(V10)], "V10");

    // Memory: V7's 0x2a, V6's swap, and nothing from the misaligned request.
    assert_eq!(word(&f, Side::B, word_at(0x1000)), 0x2A);
    assert_eq!(word(&f, Side::B, word_at(0x2008)), 0xAAAA_0000_1234_5678);
    assert_eq!(word(&f, Side::A, A_MEM + 0x1000), 0x29);
    assert_eq!(word(&f, Side::A, A_MEM + 0x1008), 0xAAAA_0000_BBBB_0000);
    assert_eq!(word(&f, Side::A, A_MEM + 0x1010), 0);
    assert_eq!(
        cqes(&f, Side::A, SEND_CQ),
        [
            success(1, Side::A, CqeOpcode::RdmaRead, 4096),
            atomic_ok(2),
            atomic_ok(3),
            failed(4, Side::A, CqeOpcode::Atomic, CqeStatus::RemoteOperation),
        ]
    );
}

/// ATOM-05, ATOM-11 (V7): the responder updates its little-endian word
/// 0x29 to 0x2a and returns 0x29 big-endian; the requester stores it
/// little-endian and completes ATOMIC with 8 octets, whatever the WQE's
/// length says.
#[test]
fn atom_05_11_fetch_add_response_matches_v7_and_memory_is_little_endian() {
    let mut f = setup();
    f.rnic_mut(Side::B).mem.write(B_MEM + 0x40, &[0x29, 0, 0, 0, 0, 0, 0, 0]).unwrap();
    let w = fetch_add(7, RB_VA + 0x40, 1, 0, LA_VA + 0x80).local(LA, LA_VA + 0x80, 4096);
    f.post_send(Side::A, QA, w).unwrap();
    f.run().unwrap();

    assert_eq!(tx(&f, Side::B).atomic_responses, [ulpdu_of(V7)]);
    assert_eq!(f.rnic(Side::B).mem.read(B_MEM + 0x40, 8).unwrap(), [0x2A, 0, 0, 0, 0, 0, 0, 0]);
    assert_eq!(
        f.rnic(Side::A).mem.read(A_MEM + 0x80, 16).unwrap(),
        [0x29, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0],
        "8 octets, not the WQE length"
    );
    assert_eq!(cqes(&f, Side::A, SEND_CQ), [atomic_ok(7)]);
    assert!(cqes(&f, Side::B, SEND_CQ).is_empty() && cqes(&f, Side::B, RECV_CQ).is_empty());
    let qp_b = f.rnic(Side::B).qp(QB).unwrap();
    assert_eq!(qp_b.msns().atomic_response, 2);
    assert_eq!((state(&f, Side::A), state(&f, Side::B)), (QpState::Rts, QpState::Rts));
    // Atomic Responses are a class of their own in the transmit log.
    assert_eq!(TxClass::of(&ulpdu_of(V7)), TxClass::AtomicResponse);
    let log = tx(&f, Side::B);
    assert_eq!(TxLog::from_stream(log.atomic_responses.clone()), *log);
}

/// IMM-01, IMM-04 (V8): after a Send, Immediate Data and Immediate Data
/// with SE go out as V8 with QN 0 MSNs 2 and 3; the local buffer fields of
/// an IMM WQE are never checked.
#[test]
fn imm_01_04_v8_immediate_data_and_with_se_after_a_send() {
    let mut f = setup();
    let data = [1, 2, 3, 4, 5, 6, 7, 8];
    for i in 0..3 {
        f.post_recv(Side::B, QB, RqWqe::new(10 + i, RB, RB_VA + 0x100 * i, 64)).unwrap();
    }
    let send = SqWqe::new(SqOpcode::Send, 1).local(LA, LA_VA, 5);
    let garbage = |w: SqWqe| w.local(stag(99, 9), u64::MAX, 0xFFFF_FFFF);
    f.post_send(Side::A, QA, send).unwrap();
    f.post_send(Side::A, QA, garbage(SqWqe::immediate(2, data, false))).unwrap();
    f.post_send(Side::A, QA, garbage(SqWqe::immediate(3, data, true))).unwrap();
    f.run().unwrap();

    let sent = &tx(&f, Side::A).requests;
    assert_eq!(sent[1..], [ulpdu_of(V8), ulpdu_of(V8_SE)]);
    assert_eq!(
        cqes(&f, Side::A, SEND_CQ),
        [
            success(1, Side::A, CqeOpcode::Send, 5),
            success(2, Side::A, CqeOpcode::Send, 8),
            success(3, Side::A, CqeOpcode::Send, 8),
        ]
    );
    let recv = cqes(&f, Side::B, RECV_CQ);
    assert_eq!(recv[1..], [recv_imm(11, data, false), recv_imm(12, data, true)], "SOLICITED only for 0x9");
    // The sender's u64 round-trips: the CQE holds the wire octets.
    assert_eq!(recv[1].imm, SqWqe::immediate(0, data, false).imm);
    assert_eq!(recv[1].imm.to_le_bytes(), data);
}

/// IMM-02, IMM-05: Immediate Data consumes one receive and one QN 0 MSN in
/// the Send sequence, writes nothing into the receive buffer (not even a
/// checked one), and finds an earlier Write placed.
#[test]
fn imm_02_05_consumes_receives_in_order_between_sends() {
    let mut f = setup();
    let x: Vec<u8> = (0..4096u32).map(|i| (i * 7) as u8).collect();
    f.rnic_mut(Side::A).mem.write(A_MEM + 0x1000, &x).unwrap();
    f.rnic_mut(Side::A).mem.write(A_MEM, b"first!last").unwrap();
    f.rnic_mut(Side::B).mem.write(B_MEM + 0x100, &[0xEE; 16]).unwrap();
    f.post_recv(Side::B, QB, RqWqe::new(20, RB, RB_VA, 16)).unwrap();
    // A receive whose buffer would fail its checks: never looked at.
    f.post_recv(Side::B, QB, RqWqe::new(21, stag(77, 1), 0, 0)).unwrap();
    f.post_recv(Side::B, QB, RqWqe::new(22, RB, RB_VA + 0x100, 16)).unwrap();
    let wqes = [
        SqWqe::new(SqOpcode::Send, 1).local(LA, LA_VA, 6),
        SqWqe::new(SqOpcode::RdmaWrite, 2).local(LA, LA_VA + 0x1000, 4096).remote(RB, RB_VA + 0x1000),
        SqWqe::immediate(3, *b"IMM-02!!", false),
        SqWqe::new(SqOpcode::Send, 4).local(LA, LA_VA + 6, 4),
    ];
    for w in wqes {
        f.post_send(Side::A, QA, w).unwrap();
    }
    f.run().unwrap();

    assert_eq!(
        cqes(&f, Side::B, RECV_CQ),
        [
            success(20, Side::B, CqeOpcode::Recv, 6),
            recv_imm(21, *b"IMM-02!!", false),
            success(22, Side::B, CqeOpcode::Recv, 4),
        ]
    );
    let msns: Vec<u32> = tx(&f, Side::A)
        .requests
        .iter()
        .filter_map(|u| match parse_ulpdu(u).unwrap().ddp {
            DdpHeader::Untagged(h) => Some(h.msn),
            DdpHeader::Tagged(_) => None,
        })
        .collect();
    assert_eq!(msns, [1, 2, 3]);
    assert_eq!(f.rnic(Side::B).mem.read(B_MEM + 0x1000, 4096).unwrap(), x);
    assert_eq!(f.rnic(Side::B).mem.read(B_MEM + 0x100, 4).unwrap(), b"last");
    assert_eq!(f.rnic(Side::B).mem.read(B_MEM + 0x104, 12).unwrap(), [0xEE; 12]);
    assert_eq!(f.rnic(Side::B).qp(QB).unwrap().msns().recv, 4);
}

/// B receives `ulpdu` from a hand-built peer with one receive posted.
fn peer_sends(ulpdu: &[u8]) -> Fabric {
    let mut f = setup();
    f.post_recv(Side::B, QB, RqWqe::new(1, RB, RB_VA, 64)).unwrap();
    f.deliver(Side::B, QB, ulpdu).unwrap();
    f
}

/// An Immediate Data segment with any payload, L and MO.
fn immediate_segment(msn: u32, payload: &[u8], last: bool, mo: u32) -> Vec<u8> {
    let h = RdmapHeader::None;
    Segment::untagged(Opcode::ImmediateData, last, 0, msn, mo, h, payload).to_vec()
}

/// IMM-03: 7 or 9 octets are refused with 0/2/0xFF and the DDP header; the
/// receive is flushed, never completed. So is a split 8-octet message at
/// its first segment (a known deviation from the CHECKLIST's Rec.).
#[test]
fn imm_03_not_exactly_8_octets_in_one_segment_gives_0x02ffc000() {
    let split = immediate_segment(1, &[1, 2, 3, 4], false, 0);
    for (what, ulpdu) in [
        ("7 octets", immediate_segment(1, &[7; 7], true, 0)),
        ("9 octets", immediate_segment(1, &[9; 9], true, 0)),
        ("first of two segments", split),
    ] {
        let f = peer_sends(&ulpdu);
        let t = terminate_sent(&f, Side::B);
        let want = ddp_only(TermCode::RDMA_OP_UNSPECIFIED, &ulpdu);
        assert_eq!((t, t.control_word()), (want, 0x02FF_C000), "{what}");
        assert_eq!(cqes(&f, Side::B, RECV_CQ), [failed(1, Side::B, CqeOpcode::Recv, CqeStatus::Flushed)], "{what}");
        assert_eq!(f.rnic(Side::B).mem.read(B_MEM, 64).unwrap(), [0; 64]);
    }
    // The same 8 octets in one segment are accepted.
    let f = peer_sends(&immediate_segment(1, &[8; 8], true, 0));
    assert_eq!(cqes(&f, Side::B, RECV_CQ), [recv_imm(1, [8; 8], false)]);
}

/// IMM-02: the message needs the next QN 0 MSN (`1/2/0x03`) and a posted
/// receive (`1/2/0x02`), in that order.
#[test]
fn imm_02_needs_the_next_msn_then_a_receive() {
    let wrong_msn = Segment::immediate(2, [0; 8], false).to_vec();
    let f = peer_sends(&wrong_msn);
    let t = terminate_sent(&f, Side::B);
    assert_eq!((t, t.control_word()), (ddp_only(TermCode::DDP_UNTAGGED_MSN_RANGE, &wrong_msn), 0x1203_C000));

    let mut f = setup();
    let first = Segment::immediate(1, [0; 8], true).to_vec();
    f.deliver(Side::B, QB, &first).unwrap();
    let t = terminate_sent(&f, Side::B);
    assert_eq!(t.control_word(), 0x1202_C000);
    assert!(cqes(&f, Side::B, RECV_CQ).is_empty());

    let mut f = setup();
    f.deliver(Side::B, QB, &wrong_msn).unwrap();
    assert_eq!(terminate_sent(&f, Side::B).control_word(), 0x1203_C000, "MSN first");

    let mut f = setup();
    let split = immediate_segment(1, &[1, 2, 3, 4], false, 0);
    f.deliver(Side::B, QB, &split).unwrap();
    assert_eq!(terminate_sent(&f, Side::B).control_word(), 0x1202_C000, "then the receive");

    // It cannot continue a half-received Send, whose receive then fails.
    let first_half = Segment::untagged(Opcode::Send, false, 0, 1, 0, RdmapHeader::None, b"ab");
    for msn in [1, 2] {
        let mut f = peer_sends(&first_half.to_vec());
        f.deliver(Side::B, QB, &Segment::immediate(msn, [0; 8], false).to_vec()).unwrap();
        assert_eq!(terminate_sent(&f, Side::B).control_word(), 0x1203_C000);
        let status = CqeStatus::RemoteOperation;
        assert_eq!(cqes(&f, Side::B, RECV_CQ), [failed(1, Side::B, CqeOpcode::Recv, status)]);
    }
}

// ------------------------------------------------------------ responder checks

/// Posts `w` on A, runs, and checks that B refused it with `code` (DDP
/// header only), left its memory alone and sent no response, and that A's
/// atomic completed with `status`.
fn assert_refused(mut f: Fabric, w: SqWqe, code: TermCode, control: u32, status: CqeStatus) {
    let before = f.rnic(Side::B).mem.clone();
    f.post_send(Side::A, QA, w).unwrap();
    f.run().unwrap();
    let request = tx(&f, Side::A).requests[0].clone();
    let t = terminate_sent(&f, Side::B);
    assert_eq!((t, t.control_word()), (ddp_only(code, &request), control));
    assert_eq!(t.rdma_header, None);
    assert_eq!(f.rnic(Side::B).mem, before, "target unchanged");
    assert!(tx(&f, Side::B).atomic_responses.is_empty());
    assert_both_in_error(&f, Side::B, code);
    assert_eq!(cqes(&f, Side::A, SEND_CQ), [failed(w.wr_id, Side::A, CqeOpcode::Atomic, status)]);
    assert_eq!(word(&f, Side::A, A_MEM), 0, "no original value stored");
}

/// ATOM-04: AOpCode 1 (Reserved; Swap in the draft), 3 and 0xF go out as
/// posted and are refused with 0/2/0x06; the target is unchanged.
#[test]
fn atom_04_unsupported_aopcode_gives_0x0206c000_and_leaves_memory() {
    for aopcode in [1u8, 3, 0xF] {
        let mut f = setup();
        set_word(&mut f, Side::B, B_MEM, 0x1111);
        let draft_swap = SqWqe { aopcode, ..fetch_add(1, RB_VA, 0x2222, u64::MAX, LA_VA) };
        let code = TermCode::RDMA_OP_UNEXPECTED_OPCODE;
        let status = CqeStatus::RemoteOperation;
        let mut g = f.clone();
        assert_refused(f, draft_swap, code, 0x0206_C000, status);
        g.post_send(Side::A, QA, draft_swap).unwrap();
        g.run().unwrap();
        let (_, sent) = atomic_request(&tx(&g, Side::A).requests[0]);
        assert_eq!(sent.aopcode, aopcode, "sent unchanged");
        assert_eq!(word(&g, Side::B, B_MEM), 0x1111);
    }
}

/// ATOM-07 (V10): a target whose IOVA is not 8-aligned is refused with
/// 0/2/0x07 — also when the TO is aligned and the IOVA is not — and one
/// whose IOVA is aligned is served even at a TO that is not.
#[test]
fn atom_07_misaligned_target_gives_0x0207c000_and_leaves_memory() {
    let code = TermCode::RDMA_OP_CATASTROPHIC_STREAM;
    let status = CqeStatus::RemoteOperation;
    let plus_4 = fetch_add(1, RB_VA + 4, 1, 0, LA_VA);
    assert_refused(setup(), plus_4, code, 0x0207_C000, status);
    let skewed = fetch_add(1, RB_SKEW_VA, 1, 0, LA_VA).remote(RB_SKEW, RB_SKEW_VA);
    assert_refused(setup(), skewed, code, 0x0207_C000, status);

    let mut f = setup();
    set_word(&mut f, Side::B, RB_SHIFT_IOVA, 41);
    let shifted = fetch_add(1, 0, 1, 0, LA_VA).remote(RB_SHIFT, RB_SHIFT_VA);
    f.post_send(Side::A, QA, shifted).unwrap();
    f.run().unwrap();
    assert_eq!(RB_SHIFT_VA % 8, 4);
    assert_eq!(word(&f, Side::B, RB_SHIFT_IOVA), 42);
    assert_eq!(cqes(&f, Side::A, SEND_CQ), [atomic_ok(1)]);
}

/// ATOM-08: the target STag, its PD, REMOTE_ATOMIC, TO wrap and the bounds
/// of the 8 octets, with the CHECKLIST's codes and DDP header only.
#[test]
fn atom_08_target_stag_rights_and_bounds() {
    use TermCode as T;
    let cases = [
        ("invalid STag", stag(60, 0), RB_VA, T::RDMA_PROT_INVALID_STAG, 0x0100_C000),
        ("other PD", RB_PD2, RB_PD2_VA, T::RDMA_PROT_STAG_NOT_ASSOCIATED, 0x0103_C000),
        ("no REMOTE_ATOMIC", RB_NOATOMIC, RB_NOATOMIC_VA, T::RDMA_PROT_ACCESS_RIGHTS, 0x0102_C000),
        ("TO wrap", RB_TOP, u64::MAX - 3, T::RDMA_PROT_TO_WRAP, 0x0104_C000),
        ("last 4 octets", RB, RB_VA + RB_LEN - 4, T::RDMA_PROT_BASE_BOUNDS, 0x0101_C000),
        ("past the end", RB, RB_VA + RB_LEN, T::RDMA_PROT_BASE_BOUNDS, 0x0101_C000),
    ];
    for (what, rkey, to, code, control) in cases {
        println!("{what}");
        let w = fetch_add(1, 0, 1, 0, LA_VA).remote(rkey, to);
        assert_refused(setup(), w, code, control, CqeStatus::RemoteAccess);
    }
}

/// The first of several failing checks of an Atomic Request decides the
/// Terminate: MSN, IRD, AOpCode, target, alignment (bounds before
/// alignment: see ATOM-08's last 4 octets).
#[test]
fn atom_15_responder_checks_run_in_order() {
    let ird0 = QpContext { ird: 0, ..qp_ctx() };
    let reserved = |to| SqWqe { aopcode: 1, ..fetch_add(1, to, 1, 0, LA_VA) };
    let invalid = stag(60, 0);
    let reserved_invalid = reserved(0).remote(invalid, 0);
    let invalid_misaligned = fetch_add(1, 0, 1, 0, LA_VA).remote(invalid, 4);
    let no_right_misaligned = fetch_add(1, 0, 1, 0, LA_VA).remote(RB_NOATOMIC, RB_NOATOMIC_VA + 4);
    let cases = [
        ("IRD 0, Reserved AOpCode", Some(ird0), reserved(RB_VA), 0x1202_C000),
        ("Reserved AOpCode, invalid STag", None, reserved_invalid, 0x0206_C000),
        ("invalid STag, misaligned", None, invalid_misaligned, 0x0100_C000),
        ("no REMOTE_ATOMIC, misaligned", None, no_right_misaligned, 0x0102_C000),
    ];
    for (what, ctx, w, control) in cases {
        let mut f = setup();
        if let Some(ctx) = ctx {
            f.rnic_mut(Side::B).write_qp(QB, &ctx).unwrap();
        }
        f.post_send(Side::A, QA, w).unwrap();
        f.run().unwrap();
        assert_eq!(terminate_sent(&f, Side::B).control_word(), control, "{what}");
    }
    // A wrong MSN comes before the missing IRD slot.
    let mut f = setup();
    f.rnic_mut(Side::B).write_qp(QB, &ird0).unwrap();
    let request = Segment::atomic_request(2, AtomicRequest::fetch_add(1, RB, RB_VA, 1, 0));
    f.deliver(Side::B, QB, &request.to_vec()).unwrap();
    assert_eq!(terminate_sent(&f, Side::B).control_word(), 0x1203_C000);
}

/// ATOM-13: with IRD 0 the responder has no slot for an Atomic Request
/// (`1/2/0x02`); with ORD 0 the requester never sends one and the SQ
/// stops there, until ORD is raised.
#[test]
fn atom_13_ird_and_ord_zero() {
    let mut f = setup();
    let ird0 = QpContext { ird: 0, ..qp_ctx() };
    f.rnic_mut(Side::B).write_qp(QB, &ird0).unwrap();
    let w = fetch_add(1, RB_VA, 1, 0, LA_VA);
    assert_refused(f, w, TermCode::DDP_UNTAGGED_NO_BUFFER, 0x1202_C000, CqeStatus::RemoteOperation);

    let mut f = setup();
    let ord0 = QpContext { ord: 0, ..qp_ctx() };
    f.rnic_mut(Side::A).write_qp(QA, &ord0).unwrap();
    f.post_send(Side::A, QA, fetch_add(1, RB_VA, 5, 0, LA_VA)).unwrap();
    f.post_send(Side::A, QA, SqWqe::immediate(2, [0; 8], false)).unwrap();
    f.run().unwrap();
    assert_eq!(f.rnic(Side::A).qp(QA).unwrap().pending_sends(), 2);
    assert!(tx(&f, Side::A).requests.is_empty());
    f.rnic_mut(Side::A).write_qp(QA, &qp_ctx()).unwrap();
    f.post_recv(Side::B, QB, RqWqe::new(9, RB, RB_VA, 8)).unwrap();
    f.run().unwrap();
    assert_eq!(cqes(&f, Side::A, SEND_CQ), [atomic_ok(1), success(2, Side::A, CqeOpcode::Send, 8)]);
    assert_eq!(word(&f, Side::B, B_MEM), 5);
}

/// ATOM-13: Read and Atomic Requests share the QN 1 MSNs; the Request
/// Identifiers count the atomics alone.
#[test]
fn atom_13_reads_and_atomics_share_the_qn_1_msn() {
    let mut f = setup();
    let read = |wr_id| SqWqe::new(SqOpcode::RdmaRead, wr_id).local(LA, LA_VA + 0x100, 16).remote(RB, RB_VA + 0x100);
    let swap = SqWqe::cmp_swap(4, 0, 0, 9, u64::MAX).local(LA, LA_VA + 8, 8).remote(RB, RB_VA + 8);
    for w in [read(1), fetch_add(2, RB_VA, 1, 0, LA_VA), read(3), swap] {
        f.post_send(Side::A, QA, w).unwrap();
    }
    f.run().unwrap();

    let sent = &tx(&f, Side::A).requests;
    let rr = ReadRequest { sink_stag: LA, sink_to: LA_VA + 0x100, size: 16, src_stag: RB, src_to: RB_VA + 0x100 };
    assert_eq!(sent[0], Segment::read_request(1, rr).to_vec());
    assert_eq!(sent[2], Segment::read_request(3, rr).to_vec());
    let (msn, add) = atomic_request(&sent[1]);
    assert_eq!((msn, add.request_id), (2, 1));
    let (msn, cs) = atomic_request(&sent[3]);
    assert_eq!((msn, cs.request_id), (4, 2));
    let a = f.rnic(Side::A).qp(QA).unwrap().msns();
    let b = f.rnic(Side::B).qp(QB).unwrap().msns();
    assert_eq!((a.read_request, b.read_request_recv), (5, 5));
    assert_eq!((b.atomic_response, a.atomic_response_recv), (3, 3));
    assert_eq!(word(&f, Side::B, B_MEM + 8), 9);
    assert_eq!(cqes(&f, Side::A, SEND_CQ).len(), 4);
}

/// ATOM-06: three FetchAdds on one word are answered in order on QN 3 with
/// MSNs 1, 2, 3 and the requests' Identifiers, each returning the value
/// the one before left.
#[test]
fn atom_06_responses_come_in_order_with_msn_and_request_id() {
    let mut f = setup();
    set_word(&mut f, Side::B, B_MEM, 0x10);
    for i in 0..3u64 {
        f.post_send(Side::A, QA, fetch_add(i + 1, RB_VA, 1, 0, LA_VA + 8 * i)).unwrap();
    }
    f.run().unwrap();
    let want: Vec<Vec<u8>> = (1..=3u32)
        .map(|n| {
            let r = AtomicResponse { request_id: n, original: 0x0F + u64::from(n) };
            Segment::atomic_response(n, r).to_vec()
        })
        .collect();
    assert_eq!(tx(&f, Side::B).atomic_responses, want);
    assert_eq!(word(&f, Side::B, B_MEM), 0x13);
    let results: Vec<u64> = (0..3).map(|i| word(&f, Side::A, A_MEM + 8 * i)).collect();
    assert_eq!(results, [0x10, 0x11, 0x12]);
    assert_eq!(cqes(&f, Side::A, SEND_CQ), [atomic_ok(1), atomic_ok(2), atomic_ok(3)]);
}

// ------------------------------------------------------------ requester checks

/// Three FetchAdds issued, two answered; B's host then stops the QP (no
/// Terminate), so the third stays outstanding with QN 3 MSN 3 due.
fn third_atomic_outstanding() -> Fabric {
    let mut f = setup();
    set_word(&mut f, Side::B, B_MEM, 0x10);
    for i in 0..2u64 {
        f.post_send(Side::A, QA, fetch_add(i + 1, RB_VA, 1, 0, LA_VA + 8 * i)).unwrap();
    }
    f.run().unwrap();
    let error = QpContext { state: QpState::Error, ..qp_ctx() };
    f.rnic_mut(Side::B).write_qp(QB, &error).unwrap();
    f.post_send(Side::A, QA, fetch_add(3, RB_VA, 1, 0, LA_VA + 16)).unwrap();
    f.run().unwrap();
    assert_eq!(f.rnic(Side::A).qp(QA).unwrap().outstanding_reads(), 1);
    assert_eq!(tx(&f, Side::A).requests.len(), 3);
    f
}

fn response(msn: u32, request_id: u32, original: u64) -> Vec<u8> {
    let r = AtomicResponse { request_id, original };
    Segment::atomic_response(msn, r).to_vec()
}

/// Delivers an Atomic Response to A and checks that A refused it with
/// `word` (DDP header only), stored nothing and flushed the atomic.
fn assert_response_refused(mut f: Fabric, ulpdu: &[u8], code: TermCode, control: u32) {
    let before = f.rnic(Side::A).mem.clone();
    let done = cqes(&f, Side::A, SEND_CQ).len();
    f.deliver(Side::A, QA, ulpdu).unwrap();
    let t = terminate_sent(&f, Side::A);
    assert_eq!((t, t.control_word()), (ddp_only(code, ulpdu), control));
    assert_eq!(state(&f, Side::A), QpState::Error);
    assert_eq!(f.rnic(Side::A).mem, before, "nothing stored");
    let new = &cqes(&f, Side::A, SEND_CQ)[done..];
    assert!(new.iter().all(|c| c.status == CqeStatus::Flushed), "no completion but flushes: {new:?}");
}

/// ATOM-06: with three atomics issued, a response carrying QN 3 MSN 4 is
/// out of sequence (`1/2/0x03`); the right one completes the atomic.
#[test]
fn atom_06_response_with_msn_4_when_3_issued_gives_0x1203c000() {
    let f = third_atomic_outstanding();
    // Its Request Identifier is no match either: the MSN is checked first.
    let ahead = response(4, 4, 0x12);
    assert_response_refused(f.clone(), &ahead, TermCode::DDP_UNTAGGED_MSN_RANGE, 0x1203_C000);

    let mut f = f;
    f.deliver(Side::A, QA, &response(3, 3, 0x12)).unwrap();
    assert_eq!(word(&f, Side::A, A_MEM + 16), 0x12);
    assert_eq!(cqes(&f, Side::A, SEND_CQ), [atomic_ok(1), atomic_ok(2), atomic_ok(3)]);
    assert_eq!(state(&f, Side::A), QpState::Rts);
}

/// ATOM-16: a response naming another Request Identifier, one that answers
/// nothing, and one arriving while a Read is the oldest outstanding
/// request are refused with 0/2/0xFF and complete nothing.
#[test]
fn atom_16_unsolicited_or_mismatched_response_gives_0x02ffc000() {
    let code = TermCode::RDMA_OP_UNSPECIFIED;
    let wrong_id = response(3, 7, 0x12);
    assert_response_refused(third_atomic_outstanding(), &wrong_id, code, 0x02FF_C000);

    let unsolicited = response(1, 1, 5);
    let f = setup();
    assert_response_refused(f.clone(), &unsolicited, code, 0x02FF_C000);
    let mut g = f;
    g.deliver(Side::A, QA, &unsolicited).unwrap();
    assert!(cqes(&g, Side::A, SEND_CQ).is_empty(), "no completion");

    let mut f = setup();
    let error = QpContext { state: QpState::Error, ..qp_ctx() };
    f.rnic_mut(Side::B).write_qp(QB, &error).unwrap();
    let read = SqWqe::new(SqOpcode::RdmaRead, 1).local(LA, LA_VA, 8).remote(RB, RB_VA);
    f.post_send(Side::A, QA, read).unwrap();
    f.run().unwrap();
    assert_response_refused(f.clone(), &unsolicited, code, 0x02FF_C000);
    f.deliver(Side::A, QA, &unsolicited).unwrap();
    assert_eq!(cqes(&f, Side::A, SEND_CQ), [failed(1, Side::A, CqeOpcode::RdmaRead, CqeStatus::Flushed)]);
}

/// ATOM-13: while an atomic holds the oldest ORD slot, a Read Response
/// has nothing to continue (`0/2/0x06`, as with no Read at all).
#[test]
fn atom_13_read_response_while_an_atomic_is_outstanding_gives_0x0206c000() {
    let f = third_atomic_outstanding();
    let unasked = Segment::read_response(LA, LA_VA + 0x100, b"x").to_vec();
    let code = TermCode::RDMA_OP_UNEXPECTED_OPCODE;
    assert_response_refused(f, &unasked, code, 0x0206_C000);
}

/// ATOM-05: the requester checks its local buffer again when the response
/// arrives, with the Read Response sink's codes.
#[test]
fn atom_05_response_into_an_invalidated_buffer_gives_0x1100c000() {
    let mut f = third_atomic_outstanding();
    f.rnic_mut(Side::A).invalidate_mr(1, 0x11).unwrap();
    let ulpdu = response(3, 3, 0x12);
    let code = TermCode::DDP_TAGGED_INVALID_STAG;
    assert_response_refused(f.clone(), &ulpdu, code, 0x1100_C000);
    // The Request Identifier is checked before the buffer.
    let wrong_id = response(3, 2, 0x12);
    assert_response_refused(f, &wrong_id, TermCode::RDMA_OP_UNSPECIFIED, 0x02FF_C000);
}

/// ATOM-05: an Atomic Request ULPDU of other than 70 octets and an Atomic
/// Response of other than 30 fail the parse with 0/2/0xFF.
#[test]
fn atom_05_header_sizes_are_exact() {
    let request = Segment::atomic_request(1, AtomicRequest::fetch_add(1, RB, RB_VA, 1, 0)).to_vec();
    assert_eq!(request.len(), 70);
    let mut short = request.clone();
    short.pop();
    let mut long = request.clone();
    long.push(0);
    for ulpdu in [short, long] {
        let mut f = setup();
        f.deliver(Side::B, QB, &ulpdu).unwrap();
        let t = terminate_sent(&f, Side::B);
        assert_eq!(t.control_word(), 0x02FF_C000, "{} octets", ulpdu.len());
        assert_eq!(word(&f, Side::B, B_MEM), 0);
    }
    let good = response(3, 3, 0x12);
    assert_eq!(good.len(), 30);
    let mut short = good.clone();
    short.pop();
    let mut long = good.clone();
    long.push(0);
    for ulpdu in [short, long] {
        let mut f = third_atomic_outstanding();
        f.deliver(Side::A, QA, &ulpdu).unwrap();
        let t = terminate_sent(&f, Side::A);
        assert_eq!(t.control_word(), 0x02FF_C000, "{} octets", ulpdu.len());
        assert_eq!(word(&f, Side::A, A_MEM + 16), 0);
    }
}

/// ATOM-15: an atomic whose local buffer fails (lkey, LOCAL_WRITE, bounds
/// of 8 octets) completes LOCAL_PROTECTION and a Terminate 0/0/0x00 goes
/// out instead of the request; the WQE length plays no part.
#[test]
fn atom_15_local_errors_send_a_terminate_instead_of_the_request() {
    let cases = [
        ("invalid lkey", stag(40, 0), LA_VA),
        ("no LOCAL_WRITE", LA_RO, LA_RO_VA),
        ("last 4 octets", LA, LA_VA + LA_LEN - 4),
    ];
    for (what, lkey, addr) in cases {
        let mut f = setup();
        let w = fetch_add(1, RB_VA, 1, 0, 0).local(lkey, addr, 0);
        f.post_send(Side::A, QA, w).unwrap();
        f.run().unwrap();
        assert_eq!(
            cqes(&f, Side::A, SEND_CQ),
            [failed(1, Side::A, CqeOpcode::Atomic, CqeStatus::LocalProtection)],
            "{what}"
        );
        assert!(tx(&f, Side::A).requests.is_empty(), "{what}");
        let t = terminate_sent(&f, Side::A);
        assert_eq!(t, Terminate::new(TermCode::RDMA_LOCAL_CATASTROPHIC));
        assert_eq!(word(&f, Side::B, B_MEM), 0, "{what}");
    }
    // The last 8 octets are enough, whatever length the WQE gives.
    let mut f = setup();
    let w = fetch_add(1, RB_VA, 1, 0, 0).local(LA, LA_VA + LA_LEN - 8, 4096);
    f.post_send(Side::A, QA, w).unwrap();
    f.run().unwrap();
    assert_eq!(cqes(&f, Side::A, SEND_CQ), [atomic_ok(1)]);
}

// ------------------------------------------------------------ semantics

/// ATOM-09 (V13) through the model: each row on its own word, the result
/// in B's memory and the original value in A's.
#[test]
fn atom_09_v13_masked_fetch_add_end_to_end() {
    let m = u64::MAX;
    let rows: [(u64, u64, u64, u64); 11] = [
        (0xFF, 1, 0, 0x100),
        (m, 1, 0, 0),
        (m, 1, 1 << 63, 0),
        (0x0000_0001_FFFF_FFFF, 1, 0x8000_0000_8000_0000, 0x0000_0001_0000_0000),
        (0x0000_0001_FFFF_FFFF, 1, 0, 0x0000_0002_0000_0000),
        (0x0001_FFFF_7FFF_8000, 0x0001_0001_0001_0001, 0x8000_8000_8000_8000, 0x0002_0000_8000_8001),
        (0x00FF_7F80_FE01_FFFF, 0x0101_0101_0101_0101, 0x8080_8080_8080_8080, 0x0100_8081_FF02_0000),
        (0xFF, 1, 0x80, 0),
        (1, 1, 1, 0),
        (0xF0F0_F0F0_F0F0_F0F0, 0xFFFF_0000_FFFF_0000, m, 0x0F0F_F0F0_0F0F_F0F0),
        (0x0123_4567_89AB_CDEF, 0, 0, 0x0123_4567_89AB_CDEF),
    ];
    let mut f = setup();
    for (i, &(original, add, mask, _)) in rows.iter().enumerate() {
        let off = 8 * i as u64;
        set_word(&mut f, Side::B, B_MEM + off, original);
        f.post_send(Side::A, QA, fetch_add(i as u64, RB_VA + off, add, mask, LA_VA + off)).unwrap();
    }
    f.run().unwrap();
    for (i, &(original, _, _, result)) in rows.iter().enumerate() {
        let off = 8 * i as u64;
        assert_eq!(word(&f, Side::B, B_MEM + off), result, "row {i}");
        assert_eq!(word(&f, Side::A, A_MEM + off), original, "row {i}");
    }
    assert_eq!(cqes(&f, Side::A, SEND_CQ).len(), rows.len());
}

/// ATOM-10 (V14) through the model.
#[test]
fn atom_10_v14_masked_cmp_swap_end_to_end() {
    let m = u64::MAX;
    // original, swap, swap mask, compare, compare mask, memory after
    let rows: [(u64, u64, u64, u64, u64, u64); 7] = [
        (0x1111, 0x2222, m, 0x1111, m, 0x2222),
        (0x1111, 0x2222, m, 0x1112, m, 0x1111),
        (
            0xAAAA_0000_BBBB_0000,
            0x1234_5678_1234_5678,
            0xFFFF_FFFF,
            0xAAAA_0000_FFFF_FFFF,
            0xFFFF_FFFF_0000_0000,
            0xAAAA_0000_1234_5678,
        ),
        (0xDEAD_BEEF_0000_0000, 0xFFFF, 0xFFFF, 0, 0, 0xDEAD_BEEF_0000_FFFF),
        (0x5555, 0xAAAA, 0, 0x5555, m, 0x5555),
        (0xF0, 1, 1, 0, 1, 0xF1),
        (0xF1, 1, 1, 0, 1, 0xF1),
    ];
    let mut f = setup();
    for (i, &(original, swap, swap_mask, compare, compare_mask, _)) in rows.iter().enumerate() {
        let off = 8 * i as u64;
        set_word(&mut f, Side::B, B_MEM + off, original);
        let w = SqWqe::cmp_swap(i as u64, compare, compare_mask, swap, swap_mask)
            .local(LA, LA_VA + off, 8)
            .remote(RB, RB_VA + off);
        f.post_send(Side::A, QA, w).unwrap();
    }
    f.run().unwrap();
    for (i, &(original, .., after)) in rows.iter().enumerate() {
        let off = 8 * i as u64;
        assert_eq!(word(&f, Side::B, B_MEM + off), after, "row {i}");
        assert_eq!(word(&f, Side::A, A_MEM + off), original, "row {i}");
    }
}

/// ATOM-01 (RFC 7306 §1.1): the probe, a FetchAdd of 0, returns the word
/// and leaves it as it was.
#[test]
fn atom_01_probe_fetch_add_of_zero_returns_the_word_unchanged() {
    let mut f = setup();
    set_word(&mut f, Side::B, B_MEM + 0x18, 0x0123_4567_89AB_CDEF);
    f.post_send(Side::A, QA, fetch_add(1, RB_VA + 0x18, 0, 0, LA_VA)).unwrap();
    f.run().unwrap();
    assert_eq!(word(&f, Side::B, B_MEM + 0x18), 0x0123_4567_89AB_CDEF);
    assert_eq!(word(&f, Side::A, A_MEM), 0x0123_4567_89AB_CDEF);
    assert_eq!(cqes(&f, Side::A, SEND_CQ), [atomic_ok(1)]);
}

/// ATOM-14: a FetchAdd after a Write to the same word returns the written
/// value.
#[test]
fn atom_14_write_then_fetch_add_returns_the_written_word() {
    let mut f = setup();
    let x = 0x0807_0605_0403_0201u64;
    set_word(&mut f, Side::A, A_MEM + 0x200, x);
    let write = SqWqe::new(SqOpcode::RdmaWrite, 1).local(LA, LA_VA + 0x200, 8).remote(RB, RB_VA + 0x300);
    f.post_send(Side::A, QA, write).unwrap();
    f.post_send(Side::A, QA, fetch_add(2, RB_VA + 0x300, 1, 0, LA_VA)).unwrap();
    f.run().unwrap();
    assert_eq!(word(&f, Side::A, A_MEM), x);
    assert_eq!(word(&f, Side::B, B_MEM + 0x300), x + 1);
}

// ------------------------------------------------------------ errors and flushes

/// A Terminate naming an outstanding atomic by its QN 1 MSN gives it the
/// status of its class; host-written ERROR flushes an outstanding atomic;
/// after a peer error a pending atomic is flushed exactly (its response
/// could never be placed) while pending Immediate Data may have gone out.
#[test]
fn atomics_complete_and_flush_like_reads() {
    let mut f = third_atomic_outstanding();
    let error = QpContext { state: QpState::Error, ..qp_ctx() };
    f.rnic_mut(Side::A).write_qp(QA, &error).unwrap();
    assert_eq!(
        cqes(&f, Side::A, SEND_CQ),
        [atomic_ok(1), atomic_ok(2), failed(3, Side::A, CqeOpcode::Atomic, CqeStatus::Flushed)]
    );

    let mut f = third_atomic_outstanding();
    let request = tx(&f, Side::A).requests[2].clone();
    let t = ddp_only(TermCode::RDMA_PROT_BASE_BOUNDS, &request);
    f.deliver(Side::A, QA, &Segment::terminate(1, t).to_vec()).unwrap();
    assert_eq!(cqes(&f, Side::A, SEND_CQ)[2], failed(3, Side::A, CqeOpcode::Atomic, CqeStatus::RemoteAccess));

    let mut f = setup();
    let bad_write = SqWqe::new(SqOpcode::RdmaWrite, 1).local(LA, LA_VA, 4).remote(stag(90, 0), 0);
    f.post_send(Side::A, QA, bad_write).unwrap();
    f.post_send(Side::A, QA, fetch_add(2, RB_VA, 1, 0, LA_VA)).unwrap();
    f.post_send(Side::A, QA, SqWqe::immediate(3, [3; 8], false)).unwrap();
    f.run().unwrap();
    let cq = f.rnic(Side::A).cq(SEND_CQ).unwrap();
    let flushed_imm = failed(3, Side::A, CqeOpcode::Send, CqeStatus::Flushed);
    assert_eq!(
        cq.expected(),
        [
            Expected::Exact(success(1, Side::A, CqeOpcode::RdmaWrite, 4)),
            Expected::Exact(failed(2, Side::A, CqeOpcode::Atomic, CqeStatus::Flushed)),
            Expected::FlushedOrSent { flushed: flushed_imm, sent: Some(success(3, Side::A, CqeOpcode::Send, 8)) },
        ]
    );
    assert_eq!(word(&f, Side::B, B_MEM), 0);
}
