//! The reference model: each operation's effect, each validation failure
//! (memory untouched, the right Terminate, flushes), zero-length messages,
//! segmentation at MULPDU, Send with Invalidate, and the CQ checker.

use rnic_proto::ddp::{DdpHeader, TaggedHeader, UntaggedHeader};
use rnic_proto::host::regs::{self, CmdOpcode, CmdResult};
use rnic_proto::host::{
    stag, CqContext, Cqe, CqeOpcode, CqeStatus, MrAccess, MrContext, QpContext, QpState, QpStatus, RqWqe, SqOpcode,
    SqWqe, TermInfo,
};
use rnic_proto::model::wire::{segment_count, tagged_ulpdus, untagged_ulpdus};
use rnic_proto::model::{Expected, Fabric, ModelError, Queue, RnicConfig, Side, TxLog};
use rnic_proto::rdmap::{parse_ulpdu, Opcode, RdmapHeader, ReadRequest, Segment};
use rnic_proto::terminate::{TermCode, Terminate, TerminatedDdpHeader};

// ------------------------------------------------------------ the setup

/// QP numbers differ on the two sides so that a mixed-up QPN shows.
const QA: u32 = 1;
const QB: u32 = 2;
const SEND_CQ: u32 = 0;
const RECV_CQ: u32 = 1;
const PD: u16 = 1;

/// Host memory: one 64 KiB region per side.
const A_MEM: u64 = 0x10_0000;
const B_MEM: u64 = 0x20_0000;

/// A's MR 1: everything but remote atomics, 32 KiB at TO 0xA000_0000.
const LA: u32 = stag(1, 0x11);
const LA_VA: u64 = 0xA000_0000;
/// A's MR 2: remote read only (no LOCAL_WRITE), 4 KiB.
const LA_RO: u32 = stag(2, 0x12);
const LA_RO_VA: u64 = 0xA100_0000;
/// A's MR 3: another PD.
const LA_PD2: u32 = stag(3, 0x13);
const LA_PD2_VA: u64 = 0xA200_0000;

/// B's MR 1: every right, 32 KiB at TO 0xB000_0000.
const RB: u32 = stag(1, 0x21);
const RB_VA: u64 = 0xB000_0000;
const RB_LEN: u64 = 0x8000;
/// B's MR 2: no REMOTE_WRITE.
const RB_NOWRITE: u32 = stag(2, 0x22);
const RB_NOWRITE_VA: u64 = 0xB100_0000;
/// B's MR 3: REMOTE_WRITE only (no REMOTE_READ, no LOCAL_WRITE).
const RB_WO: u32 = stag(3, 0x23);
const RB_WO_VA: u64 = 0xB200_0000;
/// B's MR 4: every right, another PD.
const RB_PD2: u32 = stag(4, 0x24);
const RB_PD2_VA: u64 = 0xB300_0000;
/// B's MR 5: the last 4 KiB of the TO space.
const RB_TOP: u32 = stag(5, 0x25);
const RB_TOP_VA: u64 = u64::MAX - 0xFFF;

fn mr(key: u8, access: MrAccess, pd: u16, va: u64, length: u64, iova: u64) -> MrContext {
    MrContext { key, access, valid: true, pd, va, length, iova }
}

fn rights(local_write: bool, remote_read: bool, remote_write: bool) -> MrAccess {
    MrAccess { local_write, remote_read, remote_write, remote_atomic: false }
}

fn qp_ctx(mulpdu: u16) -> QpContext {
    QpContext {
        state: QpState::Rts,
        pd: PD,
        mulpdu,
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

/// QP `QA` on A connected to `QB` on B, both in RTS with `mulpdu`, CQ 0 for
/// sends and 1 for receives on each side, and the MRs above.
fn setup(mulpdu: u16) -> Fabric {
    let mut f = Fabric::new(RnicConfig::default());
    for (side, qpn, mem) in [(Side::A, QA, A_MEM), (Side::B, QB, B_MEM)] {
        let r = f.rnic_mut(side);
        r.mem.add_region(mem, 0x1_0000).unwrap();
        let cq = CqContext { log_size: 8, enable: true, vector: 0, base: 0x8000 };
        r.write_cq(SEND_CQ, &cq).unwrap();
        r.write_cq(RECV_CQ, &cq).unwrap();
        r.write_qp(qpn, &qp_ctx(mulpdu)).unwrap();
    }
    let all = rights(true, true, true);
    let a = f.rnic_mut(Side::A);
    a.write_mr(1, &mr(0x11, all, PD, LA_VA, 0x8000, A_MEM)).unwrap();
    a.write_mr(2, &mr(0x12, rights(false, true, false), PD, LA_RO_VA, 0x1000, A_MEM + 0x8000)).unwrap();
    a.write_mr(3, &mr(0x13, all, 2, LA_PD2_VA, 0x1000, A_MEM + 0x9000)).unwrap();
    let b = f.rnic_mut(Side::B);
    b.write_mr(1, &mr(0x21, all, PD, RB_VA, RB_LEN, B_MEM)).unwrap();
    b.write_mr(2, &mr(0x22, rights(true, true, false), PD, RB_NOWRITE_VA, 0x1000, B_MEM + 0x8000)).unwrap();
    b.write_mr(3, &mr(0x23, rights(false, false, true), PD, RB_WO_VA, 0x1000, B_MEM + 0x9000)).unwrap();
    b.write_mr(4, &mr(0x24, all, 2, RB_PD2_VA, 0x1000, B_MEM + 0xA000)).unwrap();
    b.write_mr(5, &mr(0x25, all, PD, RB_TOP_VA, 0x1000, B_MEM + 0xB000)).unwrap();
    f.connect(QA, QB).unwrap();
    f
}

/// Deterministic, position-dependent test data.
fn pattern(len: usize, seed: u8) -> Vec<u8> {
    (0..len).map(|i| (i as u8).wrapping_mul(31).wrapping_add(seed)).collect()
}

fn fill(f: &mut Fabric, side: Side, iova: u64, data: &[u8]) {
    f.rnic_mut(side).mem.write(iova, data).unwrap();
}

fn mem(f: &Fabric, side: Side, iova: u64, len: usize) -> Vec<u8> {
    f.rnic(side).mem.read(iova, len).unwrap().to_vec()
}

fn qpn(side: Side) -> u32 {
    match side {
        Side::A => QA,
        Side::B => QB,
    }
}

fn cqes(f: &Fabric, side: Side, cqn: u32) -> Vec<Cqe> {
    f.rnic(side).cq(cqn).unwrap().cqes()
}

fn state(f: &Fabric, side: Side) -> QpState {
    f.rnic(side).qp(qpn(side)).unwrap().state()
}

fn tx(f: &Fabric, side: Side) -> &TxLog {
    f.rnic(side).qp(qpn(side)).unwrap().tx()
}

/// The one Terminate `side` sent, parsed.
fn terminate_sent(f: &Fabric, side: Side) -> Terminate {
    let log = tx(f, side);
    assert_eq!(log.terminates.len(), 1, "{side:?} sent {} Terminates", log.terminates.len());
    let seg = parse_ulpdu(&log.terminates[0]).unwrap();
    match seg.header {
        RdmapHeader::Terminate(t) => t,
        h => panic!("not a Terminate: {h:?}"),
    }
}

fn success(wr_id: u64, side: Side, opcode: CqeOpcode, byte_len: u32) -> Cqe {
    let mut c = Cqe::new(wr_id, qpn(side) as u16, opcode, CqeStatus::Success);
    c.byte_len = byte_len;
    c
}

fn failed(wr_id: u64, side: Side, opcode: CqeOpcode, status: CqeStatus) -> Cqe {
    Cqe::new(wr_id, qpn(side) as u16, opcode, status)
}

fn send(wr_id: u64, addr: u64, len: u32) -> SqWqe {
    SqWqe::new(SqOpcode::Send, wr_id).local(LA, addr, len)
}

fn write(wr_id: u64, addr: u64, len: u32, rkey: u32, to: u64) -> SqWqe {
    SqWqe::new(SqOpcode::RdmaWrite, wr_id).local(LA, addr, len).remote(rkey, to)
}

fn read(wr_id: u64, addr: u64, len: u32, rkey: u32, to: u64) -> SqWqe {
    SqWqe::new(SqOpcode::RdmaRead, wr_id).local(LA, addr, len).remote(rkey, to)
}

/// Both QPs in ERROR, A having received what B sent.
fn assert_both_in_error(f: &Fabric, code: TermCode) {
    assert_eq!(state(f, Side::A), QpState::Error);
    assert_eq!(state(f, Side::B), QpState::Error);
    let b = f.rnic(Side::B).qp(QB).unwrap().terminate();
    let a = f.rnic(Side::A).qp(QA).unwrap().terminate();
    assert_eq!(b, Some(TermInfo { code, received: false }));
    assert_eq!(a, Some(TermInfo { code, received: true }));
}

// ------------------------------------------------------------ Sends

#[test]
fn send_places_data_and_completes_on_both_sides() {
    let mut f = setup(1024);
    let data = pattern(40, 7);
    fill(&mut f, Side::A, A_MEM + 0x100, &data);
    f.post_recv(Side::B, QB, RqWqe::new(100, RB, RB_VA + 0x10, 64)).unwrap();
    f.post_send(Side::A, QA, send(1, LA_VA + 0x100, 40)).unwrap();
    f.run().unwrap();

    assert_eq!(mem(&f, Side::B, B_MEM + 0x10, 40), data);
    assert_eq!(mem(&f, Side::B, B_MEM + 0x10 + 40, 24), vec![0; 24]);
    assert_eq!(cqes(&f, Side::A, SEND_CQ), [success(1, Side::A, CqeOpcode::Send, 40)]);
    assert_eq!(cqes(&f, Side::B, RECV_CQ), [success(100, Side::B, CqeOpcode::Recv, 40)]);
    assert!(cqes(&f, Side::A, RECV_CQ).is_empty() && cqes(&f, Side::B, SEND_CQ).is_empty());
    assert_eq!(tx(&f, Side::A).requests, [Segment::send(1, &data).to_vec()]);
    assert_eq!((state(&f, Side::A), state(&f, Side::B)), (QpState::Rts, QpState::Rts));
    let qp_a = f.rnic(Side::A).qp(QA).unwrap();
    let qp_b = f.rnic(Side::B).qp(QB).unwrap();
    assert_eq!((qp_a.msns().send, qp_b.msns().recv), (2, 2));
    assert_eq!((qp_a.status().sq_ci, qp_b.status().rq_ci), (1, 1));
}

#[test]
fn ddp_08_send_segmentation_at_mulpdu() {
    // MULPDU 128: 110 payload octets per untagged segment.
    for (len, segments) in [(110usize, 1usize), (111, 2), (220, 2), (221, 3), (1000, 10)] {
        let mut f = setup(128);
        let data = pattern(len, len as u8);
        fill(&mut f, Side::A, A_MEM, &data);
        f.post_recv(Side::B, QB, RqWqe::new(1, RB, RB_VA, 4096)).unwrap();
        f.post_send(Side::A, QA, send(2, LA_VA, len as u32)).unwrap();
        f.run().unwrap();

        let sent = &tx(&f, Side::A).requests;
        assert_eq!(*sent, untagged_ulpdus(Opcode::Send, 1, 0, &data, 128));
        assert_eq!(sent.len(), segments, "{len} octets");
        assert_eq!(segment_count(len, 128, UntaggedHeader::LEN), segments);
        for (i, u) in sent.iter().enumerate() {
            assert!(u.len() <= 128);
            let seg = parse_ulpdu(u).unwrap();
            let DdpHeader::Untagged(h) = seg.ddp else { panic!("tagged") };
            assert_eq!((h.qn, h.msn, h.mo, h.last), (0, 1, 110 * i as u32, i + 1 == segments));
            assert_eq!(seg.payload, &data[110 * i..(110 * (i + 1)).min(len)]);
        }
        assert_eq!(mem(&f, Side::B, B_MEM, len), data);
        assert_eq!(cqes(&f, Side::B, RECV_CQ), [success(1, Side::B, CqeOpcode::Recv, len as u32)]);
    }
}

#[test]
fn ddp_09_rdmap_11_zero_length_send_consumes_a_receive() {
    let mut f = setup(1024);
    // Neither lkey is checked: a zero-length message touches no memory.
    f.post_recv(Side::B, QB, RqWqe::new(7, stag(200, 0), 0, 0)).unwrap();
    f.post_recv(Side::B, QB, RqWqe::new(8, RB, RB_VA, 16)).unwrap();
    f.post_send(Side::A, QA, SqWqe::new(SqOpcode::Send, 3).local(stag(99, 9), 0, 0)).unwrap();
    f.run().unwrap();

    assert_eq!(tx(&f, Side::A).requests, [Segment::send(1, &[]).to_vec()]);
    assert_eq!(tx(&f, Side::A).requests[0].len(), UntaggedHeader::LEN);
    assert_eq!(cqes(&f, Side::A, SEND_CQ), [success(3, Side::A, CqeOpcode::Send, 0)]);
    assert_eq!(cqes(&f, Side::B, RECV_CQ), [success(7, Side::B, CqeOpcode::Recv, 0)]);
    assert_eq!(f.rnic(Side::B).qp(QB).unwrap().pending_recvs(), 1);
    assert_eq!(state(&f, Side::B), QpState::Rts);
}

#[test]
fn rdmap_11_solicited_event_flag() {
    let mut f = setup(1024);
    fill(&mut f, Side::A, A_MEM, b"abcd");
    for i in 0..2 {
        f.post_recv(Side::B, QB, RqWqe::new(10 + i, RB, RB_VA, 16)).unwrap();
    }
    f.post_send(Side::A, QA, SqWqe::new(SqOpcode::SendSe, 1).local(LA, LA_VA, 4)).unwrap();
    f.post_send(Side::A, QA, send(2, LA_VA, 4)).unwrap();
    f.run().unwrap();

    let mut se = success(10, Side::B, CqeOpcode::Recv, 4);
    se.solicited = true;
    assert_eq!(cqes(&f, Side::B, RECV_CQ), [se, success(11, Side::B, CqeOpcode::Recv, 4)]);
    assert_eq!(tx(&f, Side::A).requests[0][1], 0x45, "RDMAP control octet of Send with SE");
}

// ------------------------------------------------------------ Send with Invalidate

#[test]
fn rdmap_12_send_with_invalidate_invalidates_before_the_cqe() {
    for (op, solicited) in [(SqOpcode::SendInv, false), (SqOpcode::SendSeInv, true)] {
        let mut f = setup(1024);
        fill(&mut f, Side::A, A_MEM, b"bye");
        f.post_recv(Side::B, QB, RqWqe::new(5, RB, RB_VA, 16)).unwrap();
        f.post_send(Side::A, QA, SqWqe::new(op, 1).local(LA, LA_VA, 3).remote(RB_NOWRITE, 0)).unwrap();
        f.run().unwrap();

        let mut recv = success(5, Side::B, CqeOpcode::Recv, 3);
        recv.invalidated = Some(RB_NOWRITE);
        recv.solicited = solicited;
        assert_eq!(cqes(&f, Side::B, RECV_CQ), [recv]);
        assert!(!f.rnic(Side::B).mrs()[2].valid);
        assert_eq!(mem(&f, Side::B, B_MEM, 3), b"bye");
        let seg = parse_ulpdu(&tx(&f, Side::A).requests[0]).unwrap();
        assert_eq!(seg.invalidate_stag(), Some(RB_NOWRITE));
        assert_eq!(seg.opcode.code(), op.code());
    }
}

#[test]
fn rdmap_12_write_to_an_invalidated_stag_is_refused() {
    let mut f = setup(1024);
    fill(&mut f, Side::A, A_MEM, b"data");
    f.post_recv(Side::B, QB, RqWqe::new(5, RB_NOWRITE, RB_NOWRITE_VA, 16)).unwrap();
    f.post_send(Side::A, QA, SqWqe::new(SqOpcode::SendInv, 1).local(LA, LA_VA, 4).remote(RB, 0)).unwrap();
    f.run().unwrap();
    assert!(!f.rnic(Side::B).mrs()[1].valid);
    let before = f.rnic(Side::B).mem.clone();
    f.post_send(Side::A, QA, write(2, LA_VA, 4, RB, RB_VA)).unwrap();
    f.run().unwrap();
    assert_eq!(f.rnic(Side::B).mem, before);
    assert_eq!(terminate_sent(&f, Side::B).control_word(), 0x1100_C000);
}

#[test]
fn rdmap_12_send_with_invalidate_refused() {
    for (inv, code, word) in [
        (RB_PD2, TermCode::RDMA_PROT_CANNOT_INVALIDATE, 0x0109_C000),
        (stag(77, 1), TermCode::RDMA_PROT_INVALID_STAG, 0x0100_C000),
        (stag(1, 0x99), TermCode::RDMA_PROT_INVALID_STAG, 0x0100_C000),
    ] {
        let mut f = setup(1024);
        fill(&mut f, Side::A, A_MEM, b"data");
        f.post_recv(Side::B, QB, RqWqe::new(5, RB, RB_VA, 16)).unwrap();
        f.post_recv(Side::B, QB, RqWqe::new(6, RB, RB_VA, 16)).unwrap();
        let before = f.rnic(Side::B).mem.clone();
        f.post_send(Side::A, QA, SqWqe::new(SqOpcode::SendInv, 1).local(LA, LA_VA, 4).remote(inv, 0)).unwrap();
        f.run().unwrap();

        let t = terminate_sent(&f, Side::B);
        assert_eq!((t.code, t.control_word()), (code, word));
        let sent = &tx(&f, Side::A).requests[0];
        assert_eq!(t.ddp_header, TerminatedDdpHeader::from_segment(sent));
        assert_eq!(usize::from(t.segment_length), sent.len());
        assert_eq!(f.rnic(Side::B).mem, before, "nothing placed");
        assert!(f.rnic(Side::B).mrs()[4].valid && f.rnic(Side::B).mrs()[1].valid);
        assert_both_in_error(&f, code);
        assert_eq!(cqes(&f, Side::A, SEND_CQ), [success(1, Side::A, CqeOpcode::Send, 4)]);
        assert_eq!(
            cqes(&f, Side::B, RECV_CQ),
            [
                failed(5, Side::B, CqeOpcode::Recv, CqeStatus::RemoteAccess),
                failed(6, Side::B, CqeOpcode::Recv, CqeStatus::Flushed)
            ]
        );
    }
}

#[test]
fn rdmap_05_invalidate_stag_of_a_plain_send_is_ignored() {
    let mut f = setup(1024);
    f.post_recv(Side::B, QB, RqWqe::new(5, RB, RB_VA, 16)).unwrap();
    let plain = Segment::untagged(Opcode::Send, true, RB, 1, 0, RdmapHeader::None, b"x").to_vec();
    f.deliver(Side::B, QB, &plain).unwrap();
    assert!(f.rnic(Side::B).mrs()[1].valid);
    assert_eq!(cqes(&f, Side::B, RECV_CQ), [success(5, Side::B, CqeOpcode::Recv, 1)]);
}

// ------------------------------------------------------------ RDMA Write

#[test]
fn rdmap_06_write_places_without_a_target_completion() {
    let mut f = setup(128);
    let data = pattern(300, 3);
    fill(&mut f, Side::A, A_MEM + 0x40, &data);
    f.post_recv(Side::B, QB, RqWqe::new(9, RB, RB_VA, 16)).unwrap();
    f.post_send(Side::A, QA, write(1, LA_VA + 0x40, 300, RB, RB_VA + 0x100)).unwrap();
    f.run().unwrap();

    assert_eq!(mem(&f, Side::B, B_MEM + 0x100, 300), data);
    assert_eq!(cqes(&f, Side::A, SEND_CQ), [success(1, Side::A, CqeOpcode::RdmaWrite, 300)]);
    assert!(cqes(&f, Side::B, RECV_CQ).is_empty());
    assert_eq!(f.rnic(Side::B).qp(QB).unwrap().pending_recvs(), 1);
    // MULPDU 128: 114 octets per tagged segment, TO advancing.
    let want = tagged_ulpdus(Opcode::RdmaWrite, RB, RB_VA + 0x100, &data, 128);
    assert_eq!(tx(&f, Side::A).requests, want);
    let tos: Vec<(u64, bool, usize)> = want
        .iter()
        .map(|u| {
            let h = TaggedHeader::from_bytes(u[..14].try_into().unwrap());
            (h.to, h.last, u.len())
        })
        .collect();
    let to = RB_VA + 0x100;
    assert_eq!(tos, [(to, false, 128), (to + 114, false, 128), (to + 228, true, 14 + 72)]);
}

#[test]
fn ddp_08_tagged_segment_count_at_the_boundary() {
    for (len, n) in [(0usize, 1usize), (1, 1), (114, 1), (115, 2), (228, 2), (229, 3)] {
        let mut f = setup(128);
        f.post_send(Side::A, QA, write(1, LA_VA, len as u32, RB, RB_VA)).unwrap();
        f.run().unwrap();
        assert_eq!(tx(&f, Side::A).requests.len(), n, "{len}");
        assert_eq!(segment_count(len, 128, TaggedHeader::LEN), n);
    }
}

#[test]
fn ddp_09_zero_length_write_is_not_checked() {
    let mut f = setup(1024);
    let w = SqWqe::new(SqOpcode::RdmaWrite, 1).remote(0xFFFF_FFFF, u64::MAX);
    f.post_send(Side::A, QA, w).unwrap();
    f.run().unwrap();
    assert_eq!(tx(&f, Side::A).requests, [Segment::write(0xFFFF_FFFF, u64::MAX, &[]).to_vec()]);
    assert!(tx(&f, Side::B).terminates.is_empty());
    assert_eq!((state(&f, Side::A), state(&f, Side::B)), (QpState::Rts, QpState::Rts));
    assert_eq!(cqes(&f, Side::A, SEND_CQ), [success(1, Side::A, CqeOpcode::RdmaWrite, 0)]);
}

#[test]
fn ddp_12_write_validation_failures() {
    let cases = [
        ("invalid STag", 0xDEAD_BEEF, RB_VA, TermCode::DDP_TAGGED_INVALID_STAG, 0x1100_C000),
        ("bounds", RB, RB_VA + RB_LEN - 8, TermCode::DDP_TAGGED_BASE_BOUNDS, 0x1101_C000),
        ("before the base", RB, RB_VA - 1, TermCode::DDP_TAGGED_BASE_BOUNDS, 0x1101_C000),
        ("other PD", RB_PD2, RB_PD2_VA, TermCode::DDP_TAGGED_STAG_NOT_ASSOCIATED, 0x1102_C000),
        ("TO wrap", RB_TOP, u64::MAX - 7, TermCode::DDP_TAGGED_TO_WRAP, 0x1103_C000),
        ("no REMOTE_WRITE", RB_NOWRITE, RB_NOWRITE_VA, TermCode::DDP_TAGGED_INVALID_STAG, 0x1100_C000),
    ];
    for (what, rkey, to, code, word) in cases {
        let mut f = setup(1024);
        fill(&mut f, Side::A, A_MEM, &pattern(16, 1));
        f.post_recv(Side::B, QB, RqWqe::new(50, RB, RB_VA, 64)).unwrap();
        let before = f.rnic(Side::B).mem.clone();
        f.post_send(Side::A, QA, write(1, LA_VA, 16, rkey, to)).unwrap();
        f.run().unwrap();

        assert_eq!(f.rnic(Side::B).mem, before, "{what}: nothing placed");
        let bad = Segment::write(rkey, to, &pattern(16, 1)).to_vec();
        let want = Terminate::new(code).with_ddp(30, TerminatedDdpHeader::from_segment(&bad).unwrap());
        let t = terminate_sent(&f, Side::B);
        assert_eq!((t, t.control_word()), (want, word), "{what}");
        assert_eq!(tx(&f, Side::B).terminates[0], Segment::terminate(1, want).to_vec());
        assert_both_in_error(&f, code);
        // The Write went out before the Terminate came back.
        assert_eq!(cqes(&f, Side::A, SEND_CQ), [success(1, Side::A, CqeOpcode::RdmaWrite, 16)]);
        assert_eq!(cqes(&f, Side::B, RECV_CQ), [failed(50, Side::B, CqeOpcode::Recv, CqeStatus::Flushed)]);
    }
}

#[test]
fn ddp_13_failing_segment_and_later_ones_are_not_placed() {
    // 200 octets at 150 before the end of the region, 114 per segment: the
    // first segment fits and is placed, the second one does not.
    let mut f = setup(128);
    let data = pattern(200, 9);
    fill(&mut f, Side::A, A_MEM, &data);
    let to = RB_VA + RB_LEN - 150;
    f.post_send(Side::A, QA, write(1, LA_VA, 200, RB, to)).unwrap();
    f.run().unwrap();

    let at = B_MEM + RB_LEN - 150;
    assert_eq!(mem(&f, Side::B, at, 114), &data[..114]);
    assert_eq!(mem(&f, Side::B, at + 114, 36), vec![0; 36]);
    let t = terminate_sent(&f, Side::B);
    assert_eq!(t.code, TermCode::DDP_TAGGED_BASE_BOUNDS);
    let second = &tx(&f, Side::A).requests[1];
    assert_eq!(t.ddp_header, TerminatedDdpHeader::from_segment(second));
    assert_eq!(usize::from(t.segment_length), second.len());
}

// ------------------------------------------------------------ RDMA Read

#[test]
fn rdmap_08_read_returns_the_remote_data() {
    let mut f = setup(128);
    let data = pattern(300, 5);
    fill(&mut f, Side::B, B_MEM + 0x200, &data);
    f.post_send(Side::A, QA, read(1, LA_VA + 0x10, 300, RB, RB_VA + 0x200)).unwrap();
    f.run().unwrap();

    assert_eq!(mem(&f, Side::A, A_MEM + 0x10, 300), data);
    assert_eq!(cqes(&f, Side::A, SEND_CQ), [success(1, Side::A, CqeOpcode::RdmaRead, 300)]);
    assert!(cqes(&f, Side::B, SEND_CQ).is_empty() && cqes(&f, Side::B, RECV_CQ).is_empty());
    let rr = ReadRequest { sink_stag: LA, sink_to: LA_VA + 0x10, size: 300, src_stag: RB, src_to: RB_VA + 0x200 };
    assert_eq!(tx(&f, Side::A).requests, [Segment::read_request(1, rr).to_vec()]);
    assert_eq!(tx(&f, Side::A).requests[0].len(), 46);
    let responses = &tx(&f, Side::B).read_responses;
    assert_eq!(*responses, tagged_ulpdus(Opcode::ReadResponse, LA, LA_VA + 0x10, &data, 128));
    assert_eq!(responses.len(), 3);
    assert!(tx(&f, Side::B).requests.is_empty());
}

#[test]
fn rdmap_08_zero_length_read_is_answered_unchecked() {
    let mut f = setup(1024);
    let w = SqWqe::new(SqOpcode::RdmaRead, 4).local(stag(9, 9), 0x1234, 0).remote(0, 0);
    f.post_send(Side::A, QA, w).unwrap();
    f.run().unwrap();

    let response = Segment::read_response(stag(9, 9), 0x1234, &[]).to_vec();
    assert_eq!(tx(&f, Side::B).read_responses, [response]);
    assert_eq!(cqes(&f, Side::A, SEND_CQ), [success(4, Side::A, CqeOpcode::RdmaRead, 0)]);
    assert_eq!((state(&f, Side::A), state(&f, Side::B)), (QpState::Rts, QpState::Rts));
}

#[test]
fn rdmap_08_read_validation_failures() {
    let cases = [
        ("invalid STag", stag(60, 0), RB_VA, TermCode::RDMA_PROT_INVALID_STAG, 0x0100_E000),
        ("other PD", RB_PD2, RB_PD2_VA, TermCode::RDMA_PROT_STAG_NOT_ASSOCIATED, 0x0103_E000),
        ("no REMOTE_READ", RB_WO, RB_WO_VA, TermCode::RDMA_PROT_ACCESS_RIGHTS, 0x0102_E000),
        ("bounds", RB, RB_VA + RB_LEN - 8, TermCode::RDMA_PROT_BASE_BOUNDS, 0x0101_E000),
        ("TO wrap", RB_TOP, u64::MAX - 7, TermCode::RDMA_PROT_TO_WRAP, 0x0104_E000),
    ];
    for (what, rkey, to, code, word) in cases {
        let mut f = setup(1024);
        let before = f.rnic(Side::A).mem.clone();
        f.post_send(Side::A, QA, read(1, LA_VA, 16, rkey, to)).unwrap();
        f.run().unwrap();

        let request = tx(&f, Side::A).requests[0].clone();
        let rr = ReadRequest { sink_stag: LA, sink_to: LA_VA, size: 16, src_stag: rkey, src_to: to };
        let want =
            Terminate::new(code).with_ddp(46, TerminatedDdpHeader::from_segment(&request).unwrap()).with_rdma(rr);
        let t = terminate_sent(&f, Side::B);
        assert_eq!((t, t.control_word()), (want, word), "{what}");
        assert!(tx(&f, Side::B).read_responses.is_empty());
        assert_eq!(f.rnic(Side::A).mem, before, "{what}: sink untouched");
        assert_both_in_error(&f, code);
        let status = CqeStatus::RemoteAccess;
        assert_eq!(cqes(&f, Side::A, SEND_CQ), [failed(1, Side::A, CqeOpcode::RdmaRead, status)]);
    }
}

#[test]
fn rdmap_10_read_request_with_ird_zero_is_refused() {
    let mut f = setup(1024);
    let ctx = QpContext { ird: 0, ..qp_ctx(1024) };
    f.rnic_mut(Side::B).write_qp(QB, &ctx).unwrap();
    f.post_send(Side::A, QA, read(1, LA_VA, 16, RB, RB_VA)).unwrap();
    f.run().unwrap();

    let t = terminate_sent(&f, Side::B);
    assert_eq!((t.code, t.control_word()), (TermCode::DDP_UNTAGGED_NO_BUFFER, 0x1202_C000));
    let status = CqeStatus::RemoteOperation;
    assert_eq!(cqes(&f, Side::A, SEND_CQ), [failed(1, Side::A, CqeOpcode::RdmaRead, status)]);
}

#[test]
fn read_with_ord_zero_stalls_the_send_queue() {
    let mut f = setup(1024);
    f.rnic_mut(Side::A).write_qp(QA, &QpContext { ord: 0, ..qp_ctx(1024) }).unwrap();
    fill(&mut f, Side::B, B_MEM, b"remote");
    f.post_recv(Side::B, QB, RqWqe::new(9, RB, RB_VA + 0x100, 16)).unwrap();
    f.post_send(Side::A, QA, read(1, LA_VA, 6, RB, RB_VA)).unwrap();
    f.post_send(Side::A, QA, send(2, LA_VA, 6)).unwrap();
    f.run().unwrap();
    assert_eq!(f.rnic(Side::A).qp(QA).unwrap().pending_sends(), 2);
    assert!(tx(&f, Side::A).requests.is_empty() && cqes(&f, Side::A, SEND_CQ).is_empty());

    // Raising ORD (allowed in RTS) lets the SQ go on, in order.
    f.rnic_mut(Side::A).write_qp(QA, &qp_ctx(1024)).unwrap();
    f.run().unwrap();
    assert_eq!(
        cqes(&f, Side::A, SEND_CQ),
        [success(1, Side::A, CqeOpcode::RdmaRead, 6), success(2, Side::A, CqeOpcode::Send, 6)]
    );
    assert_eq!(mem(&f, Side::B, B_MEM + 0x100, 6), b"remote");
}

// ------------------------------------------------------------ local errors

#[test]
fn local_protection_errors_stop_the_requester() {
    let cases = [
        ("invalid lkey", send(1, LA_VA, 8).local(stag(40, 0), LA_VA, 8)),
        ("wrong key", send(1, LA_VA, 8).local(stag(1, 0x99), LA_VA, 8)),
        ("other PD", send(1, LA_VA, 8).local(LA_PD2, LA_PD2_VA, 8)),
        ("bounds", send(1, LA_VA + 0x7FFC, 8)),
        ("TO wrap", send(1, u64::MAX - 3, 8)),
        ("Read sink without LOCAL_WRITE", read(1, LA_RO_VA, 8, RB, RB_VA).local(LA_RO, LA_RO_VA, 8)),
        ("Write source out of bounds", write(1, LA_VA - 1, 8, RB, RB_VA)),
    ];
    for (what, wqe) in cases {
        let mut f = setup(1024);
        f.post_recv(Side::B, QB, RqWqe::new(70, RB, RB_VA, 64)).unwrap();
        f.post_send(Side::A, QA, wqe.unsignaled()).unwrap();
        f.post_send(Side::A, QA, send(2, LA_VA, 8)).unwrap();
        f.run().unwrap();

        let op = wqe.op().unwrap().cqe_opcode();
        assert_eq!(
            cqes(&f, Side::A, SEND_CQ),
            [
                failed(1, Side::A, op, CqeStatus::LocalProtection),
                failed(2, Side::A, CqeOpcode::Send, CqeStatus::Flushed)
            ],
            "{what}"
        );
        assert!(tx(&f, Side::A).requests.is_empty(), "{what}: nothing sent");
        let t = terminate_sent(&f, Side::A);
        assert_eq!((t, t.control_word()), (Terminate::new(TermCode::RDMA_LOCAL_CATASTROPHIC), 0));
        assert_eq!(state(&f, Side::B), QpState::Error);
        let code = TermCode::RDMA_LOCAL_CATASTROPHIC;
        let b = f.rnic(Side::B).qp(QB).unwrap().terminate();
        assert_eq!(b, Some(TermInfo { code, received: true }));
        assert_eq!(cqes(&f, Side::B, RECV_CQ), [failed(70, Side::B, CqeOpcode::Recv, CqeStatus::Flushed)]);
        // The flush is exact: the transmitter stopped at the failing WQE.
        assert!(f.rnic(Side::A).cq(SEND_CQ).unwrap().expected().iter().all(|e| matches!(e, Expected::Exact(_))));
    }
}

#[test]
fn unsupported_opcodes_complete_with_bad_opcode() {
    for opcode in [0x02u8, 0x07, 0x0B, SqOpcode::WriteImm.code(), 0xFF] {
        let mut f = setup(1024);
        let bad = SqWqe { opcode, ..send(1, LA_VA, 4).unsignaled() };
        f.post_send(Side::A, QA, bad).unwrap();
        f.post_send(Side::A, QA, write(2, LA_VA, 4, RB, RB_VA)).unwrap();
        f.run().unwrap();
        let op = bad.op().map_or(CqeOpcode::Send, SqOpcode::cqe_opcode);
        assert_eq!(
            cqes(&f, Side::A, SEND_CQ),
            [
                failed(1, Side::A, op, CqeStatus::BadOpcode),
                failed(2, Side::A, CqeOpcode::RdmaWrite, CqeStatus::Flushed)
            ],
            "opcode {opcode:#x}"
        );
        assert_eq!(terminate_sent(&f, Side::A).code, TermCode::RDMA_LOCAL_CATASTROPHIC);
        assert!(tx(&f, Side::A).requests.is_empty());
    }
}

// ------------------------------------------------------------ receive errors

#[test]
fn ddp_11_send_larger_than_the_receive_buffer() {
    let mut f = setup(1024);
    fill(&mut f, Side::A, A_MEM, &pattern(100, 2));
    f.post_recv(Side::B, QB, RqWqe::new(60, RB, RB_VA, 64)).unwrap();
    f.post_recv(Side::B, QB, RqWqe::new(61, RB, RB_VA, 4096)).unwrap();
    let before = f.rnic(Side::B).mem.clone();
    f.post_send(Side::A, QA, send(1, LA_VA, 100)).unwrap();
    f.run().unwrap();

    assert_eq!(f.rnic(Side::B).mem, before);
    let t = terminate_sent(&f, Side::B);
    assert_eq!((t.code, t.control_word()), (TermCode::DDP_UNTAGGED_TOO_LONG, 0x1205_C000));
    assert_eq!(usize::from(t.segment_length), 118);
    assert_both_in_error(&f, TermCode::DDP_UNTAGGED_TOO_LONG);
    assert_eq!(
        cqes(&f, Side::B, RECV_CQ),
        [
            failed(60, Side::B, CqeOpcode::Recv, CqeStatus::LocalLength),
            failed(61, Side::B, CqeOpcode::Recv, CqeStatus::Flushed)
        ]
    );
}

#[test]
fn ddp_11_too_long_is_found_at_the_segment_that_overflows() {
    // 110 octets per segment: the first fits a 150-octet buffer, the second not.
    let mut f = setup(128);
    let data = pattern(200, 4);
    fill(&mut f, Side::A, A_MEM, &data);
    f.post_recv(Side::B, QB, RqWqe::new(60, RB, RB_VA, 150)).unwrap();
    f.post_send(Side::A, QA, send(1, LA_VA, 200)).unwrap();
    f.run().unwrap();

    assert_eq!(mem(&f, Side::B, B_MEM, 110), &data[..110]);
    assert_eq!(mem(&f, Side::B, B_MEM + 110, 90), vec![0; 90]);
    let t = terminate_sent(&f, Side::B);
    assert_eq!(t.code, TermCode::DDP_UNTAGGED_TOO_LONG);
    assert_eq!(t.ddp_header, TerminatedDdpHeader::from_segment(&tx(&f, Side::A).requests[1]));
}

#[test]
fn ddp_11_send_without_a_posted_receive() {
    let mut f = setup(1024);
    f.post_send(Side::A, QA, send(1, LA_VA, 10)).unwrap();
    f.run().unwrap();
    let t = terminate_sent(&f, Side::B);
    assert_eq!((t.code, t.control_word()), (TermCode::DDP_UNTAGGED_NO_BUFFER, 0x1202_C000));
    assert_both_in_error(&f, TermCode::DDP_UNTAGGED_NO_BUFFER);
}

#[test]
fn receive_buffer_failing_its_own_checks() {
    for (what, rq) in [
        ("no LOCAL_WRITE", RqWqe::new(60, RB_WO, RB_WO_VA, 64)),
        ("invalid lkey", RqWqe::new(60, stag(90, 1), 0, 64)),
        ("other PD", RqWqe::new(60, RB_PD2, RB_PD2_VA, 64)),
        ("past the region", RqWqe::new(60, RB, RB_VA + RB_LEN - 4, 64)),
    ] {
        let mut f = setup(1024);
        fill(&mut f, Side::A, A_MEM, &pattern(8, 2));
        f.post_recv(Side::B, QB, rq).unwrap();
        let before = f.rnic(Side::B).mem.clone();
        f.post_send(Side::A, QA, send(1, LA_VA, 8)).unwrap();
        f.run().unwrap();

        assert_eq!(f.rnic(Side::B).mem, before, "{what}");
        let t = terminate_sent(&f, Side::B);
        let want = Terminate::new(TermCode::DDP_LOCAL_CATASTROPHIC);
        assert_eq!((t, t.control_word()), (want, 0x1000_0000), "{what}");
        let status = CqeStatus::LocalProtection;
        assert_eq!(cqes(&f, Side::B, RECV_CQ), [failed(60, Side::B, CqeOpcode::Recv, status)]);
    }
}

// ------------------------------------------------------------ a misbehaving peer

/// B receives `ulpdu` from a peer that built it by hand; returns B's Terminate.
fn peer_sends(ulpdu: &[u8]) -> (Fabric, Terminate) {
    let mut f = setup(1024);
    f.post_recv(Side::B, QB, RqWqe::new(1, RB, RB_VA, 64)).unwrap();
    f.deliver(Side::B, QB, ulpdu).unwrap();
    let t = terminate_sent(&f, Side::B);
    (f, t)
}

#[test]
fn ddp_11_invalid_qn_and_msn_from_the_peer() {
    let mut bad_qn = Segment::send(1, b"hi").to_vec();
    bad_qn[6..10].copy_from_slice(&5u32.to_be_bytes());
    let (f, t) = peer_sends(&bad_qn);
    assert_eq!(t.control_word(), 0x1201_C000);
    assert_eq!(t.ddp_header, TerminatedDdpHeader::from_segment(&bad_qn));
    assert_both_in_error(&f, TermCode::DDP_UNTAGGED_INVALID_QN);

    let (_, t) = peer_sends(&Segment::send(1001, b"hi").to_vec());
    assert_eq!(t.control_word(), 0x1203_C000);

    let mid = Segment::untagged(Opcode::Send, true, 0, 1, 4, RdmapHeader::None, b"hi").to_vec();
    let (f, t) = peer_sends(&mid);
    assert_eq!(t.control_word(), 0x1204_C000);
    let status = CqeStatus::RemoteOperation;
    assert_eq!(cqes(&f, Side::B, RECV_CQ), [failed(1, Side::B, CqeOpcode::Recv, status)]);
}

#[test]
fn rdmap_02_03_bad_version_and_opcodes_from_the_peer() {
    let mut v = Segment::send(1, b"x").to_vec();
    v[1] = 0x83;
    assert_eq!(peer_sends(&v).1.control_word(), 0x0205_C000);
    let mut unknown = Segment::send(1, b"x").to_vec();
    unknown[1] = 0x4C;
    assert_eq!(peer_sends(&unknown).1.control_word(), 0x0206_C000);
    let resp = Segment::read_response(LA, 0, b"unasked").to_vec();
    assert_eq!(peer_sends(&resp).1.control_word(), 0x0206_C000);
}

#[test]
fn rdmap_13_only_the_first_terminate_counts() {
    let mut f = setup(1024);
    f.post_send(Side::A, QA, write(1, LA_VA, 4, 0xDEAD_BEEF, 0)).unwrap();
    f.run().unwrap();
    let first = f.rnic(Side::A).qp(QA).unwrap().terminate();
    let again = Segment::terminate(2, Terminate::new(TermCode::MPA_CRC)).to_vec();
    f.deliver(Side::A, QA, &again).unwrap();
    assert_eq!(f.rnic(Side::A).qp(QA).unwrap().terminate(), first);
    assert_eq!(first.map(|t| t.code), Some(TermCode::DDP_TAGGED_INVALID_STAG));
    assert!(tx(&f, Side::A).terminates.is_empty(), "A never answers a Terminate");
}

// ------------------------------------------------------------ ordering

#[test]
fn rdmap_18_write_then_send_then_read_back() {
    let mut f = setup(256);
    let x = pattern(1000, 11);
    fill(&mut f, Side::A, A_MEM, &x);
    fill(&mut f, Side::A, A_MEM + 0x2000, b"done");
    f.post_recv(Side::B, QB, RqWqe::new(8, RB, RB_VA + 0x4000, 16)).unwrap();
    f.post_send(Side::A, QA, write(1, LA_VA, 1000, RB, RB_VA).unsignaled()).unwrap();
    f.post_send(Side::A, QA, send(2, LA_VA + 0x2000, 4)).unwrap();
    f.post_send(Side::A, QA, read(3, LA_VA + 0x1000, 1000, RB, RB_VA)).unwrap();
    f.run().unwrap();

    assert_eq!(mem(&f, Side::B, B_MEM, 1000), x);
    assert_eq!(mem(&f, Side::A, A_MEM + 0x1000, 1000), x);
    assert_eq!(
        cqes(&f, Side::A, SEND_CQ),
        [success(2, Side::A, CqeOpcode::Send, 4), success(3, Side::A, CqeOpcode::RdmaRead, 1000)]
    );
    // MSNs per queue start at 1: the Send on QN 0, the Read Request on QN 1.
    let msns: Vec<(u32, u32)> = tx(&f, Side::A)
        .requests
        .iter()
        .filter_map(|u| match parse_ulpdu(u).unwrap().ddp {
            DdpHeader::Untagged(h) => Some((h.qn, h.msn)),
            DdpHeader::Tagged(_) => None,
        })
        .collect();
    assert_eq!(msns, [(0, 1), (1, 1)]);
}

#[test]
fn both_directions_at_once() {
    let mut f = setup(1024);
    fill(&mut f, Side::A, A_MEM, b"from A");
    fill(&mut f, Side::B, B_MEM + 0x100, b"from B");
    f.post_recv(Side::A, QA, RqWqe::new(1, LA, LA_VA + 0x100, 16)).unwrap();
    f.post_recv(Side::B, QB, RqWqe::new(2, RB, RB_VA, 16)).unwrap();
    let b_send = SqWqe::new(SqOpcode::Send, 20).local(RB, RB_VA + 0x100, 6);
    f.post_send(Side::B, QB, b_send).unwrap();
    f.post_send(Side::A, QA, send(10, LA_VA, 6)).unwrap();
    f.run().unwrap();
    assert_eq!(mem(&f, Side::A, A_MEM + 0x100, 6), b"from B");
    assert_eq!(mem(&f, Side::B, B_MEM, 6), b"from A");
    assert_eq!(cqes(&f, Side::A, RECV_CQ), [success(1, Side::A, CqeOpcode::Recv, 6)]);
    assert_eq!(cqes(&f, Side::B, SEND_CQ), [success(20, Side::B, CqeOpcode::Send, 6)]);
}

// ------------------------------------------------------------ the CQ checker

#[test]
fn cq_check_accepts_any_interleaving_of_qps_and_queues() {
    let mut f = setup(1024);
    // A second connection whose QP on A shares A's send CQ.
    let ctx = qp_ctx(1024);
    f.rnic_mut(Side::A).write_qp(5, &QpContext { recv_cq: SEND_CQ as u16, ..ctx }).unwrap();
    f.rnic_mut(Side::B).write_qp(6, &ctx).unwrap();
    f.connect(5, 6).unwrap();
    fill(&mut f, Side::B, B_MEM, b"xx");
    for i in 0..3 {
        f.post_recv(Side::B, QB, RqWqe::new(100 + i, RB, RB_VA, 8)).unwrap();
        f.post_recv(Side::B, 6, RqWqe::new(200 + i, RB, RB_VA, 8)).unwrap();
        f.post_recv(Side::A, 5, RqWqe::new(300 + i, LA, LA_VA, 8)).unwrap();
        f.post_send(Side::A, QA, send(i, LA_VA, 2)).unwrap();
        f.post_send(Side::A, 5, send(10 + i, LA_VA, 2)).unwrap();
        f.post_send(Side::B, 6, SqWqe::new(SqOpcode::Send, 400 + i).local(RB, RB_VA, 2)).unwrap();
    }
    f.run().unwrap();
    let cq = f.rnic(Side::A).cq(SEND_CQ).unwrap();
    let model = cq.cqes();
    assert_eq!(model.len(), 9);
    cq.check(&model).unwrap();
    assert_eq!(cq.expected_for(5, Queue::Recv).len(), 3);

    // Another interleaving: QP 5's receives first, then its sends, then QA.
    let mut other: Vec<Cqe> = model.iter().filter(|c| c.qpn == 5 && c.opcode == CqeOpcode::Recv).copied().collect();
    other.extend(model.iter().filter(|c| c.qpn == 5 && c.opcode == CqeOpcode::Send));
    other.extend(model.iter().filter(|c| c.qpn == QA as u16));
    // The hardware's PHASE bits do not matter.
    other[0].phase = true;
    cq.check(&other).unwrap();

    // Reordering within one QP and queue is a mismatch.
    let mut swapped = model.clone();
    let (i, j) =
        (0, model.iter().skip(1).position(|c| c.qpn == model[0].qpn && c.opcode == model[0].opcode).unwrap() + 1);
    swapped.swap(i, j);
    let e = cq.check(&swapped).unwrap_err();
    assert_eq!((e.qpn, e.position), (model[0].qpn, 0));
    // A missing and an extra completion are mismatches too.
    assert!(cq.check(&model[1..]).is_err());
    let mut extra = model.clone();
    extra.push(success(99, Side::A, CqeOpcode::Send, 2));
    let e = cq.check(&extra).unwrap_err();
    assert_eq!((e.expected, e.observed.map(|c| c.wr_id)), (None, Some(99)));
}

#[test]
fn cq_check_tolerates_work_that_beat_the_terminate() {
    let mut f = setup(1024);
    f.post_send(Side::A, QA, write(1, LA_VA, 4, 0xDEAD_BEEF, 0)).unwrap();
    f.post_send(Side::A, QA, send(2, LA_VA, 4)).unwrap();
    f.post_send(Side::A, QA, write(3, LA_VA, 4, RB, RB_VA).unsignaled()).unwrap();
    f.post_send(Side::A, QA, read(4, LA_VA, 4, RB, RB_VA)).unwrap();
    f.post_send(Side::A, QA, send(5, LA_VA, 4).local(stag(33, 0), 0, 4)).unwrap();
    f.post_send(Side::A, QA, send(6, LA_VA, 4)).unwrap();
    f.run().unwrap();

    let ok = |id, op, len| success(id, Side::A, op, len);
    let fl = |id, op| failed(id, Side::A, op, CqeStatus::Flushed);
    let cq = f.rnic(Side::A).cq(SEND_CQ).unwrap();
    assert_eq!(
        cq.expected(),
        [
            Expected::Exact(ok(1, CqeOpcode::RdmaWrite, 4)),
            Expected::FlushedOrSent { flushed: fl(2, CqeOpcode::Send), sent: Some(ok(2, CqeOpcode::Send, 4)) },
            Expected::FlushedOrSent { flushed: fl(3, CqeOpcode::RdmaWrite), sent: None },
            Expected::Exact(fl(4, CqeOpcode::RdmaRead)),
            Expected::FlushedOrSent {
                flushed: fl(5, CqeOpcode::Send),
                sent: Some(failed(5, Side::A, CqeOpcode::Send, CqeStatus::LocalProtection)),
            },
            Expected::Exact(fl(6, CqeOpcode::Send)),
        ]
    );
    // What the model did, and what faster hardware may do.
    cq.check(&cq.cqes()).unwrap();
    let sent_first = [
        ok(1, CqeOpcode::RdmaWrite, 4),
        ok(2, CqeOpcode::Send, 4),
        fl(4, CqeOpcode::RdmaRead),
        failed(5, Side::A, CqeOpcode::Send, CqeStatus::LocalProtection),
        fl(6, CqeOpcode::Send),
    ];
    cq.check(&sent_first).unwrap();
    // A Read that completes, or a second Write completion, is wrong.
    let mut read_ok = cq.cqes();
    read_ok[3] = ok(4, CqeOpcode::RdmaRead, 4);
    assert!(cq.check(&read_ok).is_err());
    let mut unsignaled_success = cq.cqes();
    unsignaled_success[2] = ok(3, CqeOpcode::RdmaWrite, 4);
    assert!(cq.check(&unsignaled_success).is_err());
}

// ------------------------------------------------------------ commands

#[test]
fn commands_write_and_query_contexts() {
    let mut f = Fabric::new(RnicConfig::default());
    let r = f.rnic_mut(Side::A);
    assert_eq!(r.identity_register(regs::ID), Some(0x524E_4943));
    assert_eq!(r.identity_register(regs::NUM_MRS), Some(256));
    assert_eq!(r.identity_register(regs::FEATURES), Some(0b1_1111));
    assert_eq!(r.identity_register(regs::DM_SIZE), Some(32 * 1024));
    assert_eq!(r.identity_register(regs::DM_BASE_HI), Some(1 << 30));
    assert_eq!(r.identity_register(regs::CONTROL), None);

    let cq = CqContext { log_size: 4, enable: true, vector: 3, base: 0x4000 };
    assert_eq!(r.command(CmdOpcode::WriteCq.code(), 2, &cq.to_words()).0, CmdResult::Ok);
    let qp = qp_ctx(1460);
    let (res, _) = r.command(CmdOpcode::WriteQp.code(), 7, &qp.to_words());
    assert_eq!(res, CmdResult::Ok);
    let (res, out) = r.command(CmdOpcode::QueryQp.code(), 7, &[0; 16]);
    assert_eq!((res, QpContext::from_words(&out)), (CmdResult::Ok, Ok(qp)));
    assert_eq!(QpStatus::from_words(&out), QpStatus::default());
    let (res, out) = r.command(CmdOpcode::QueryCq.code(), 2, &[0; 16]);
    assert_eq!((res, CqContext::from_words(&out), out[4], out[5]), (CmdResult::Ok, Ok(cq), 0, 0));

    let m = mr(0x5A, rights(true, false, true), 9, 0x1000, 0x2000, 0x9000);
    assert_eq!(r.command(CmdOpcode::WriteMr.code(), 255, &m.to_words()).0, CmdResult::Ok);
    let (res, out) = r.command(CmdOpcode::QueryMr.code(), 255, &[0; 16]);
    assert_eq!((res, MrContext::from_words(&out)), (CmdResult::Ok, Ok(m)));

    // Errors.
    for op in [0x00, 0x08, 0xFF] {
        assert_eq!(r.command(op, 0, &[0; 16]).0, CmdResult::BadOpcode);
    }
    assert_eq!(r.command(CmdOpcode::WriteQp.code(), 64, &qp.to_words()).0, CmdResult::BadIndex);
    assert_eq!(r.command(CmdOpcode::QueryCq.code(), 64, &[0; 16]).0, CmdResult::BadIndex);
    assert_eq!(r.command(CmdOpcode::WriteMr.code(), 256, &m.to_words()).0, CmdResult::BadIndex);
    let mut bad_state = qp.to_words();
    bad_state[0] |= 0xF;
    assert_eq!(r.command(CmdOpcode::WriteQp.code(), 7, &bad_state).0, CmdResult::BadValue);
    let no_cq = QpContext { send_cq: 64, ..qp };
    assert_eq!(r.write_qp(7, &no_cq), Err(CmdResult::BadValue));
    let moved = QpContext { sq_base: 0x8000, ..qp };
    assert_eq!(r.write_qp(7, &moved), Err(CmdResult::BadState), "bases change only in RESET");
    let err = QpContext { state: QpState::Error, ..qp };
    assert_eq!(r.write_qp(7, &err), Ok(()));
    assert_eq!(r.write_qp(7, &qp), Err(CmdResult::BadState), "ERROR goes to RTS only through RESET");
    assert_eq!(r.write_qp(7, &QpContext { state: QpState::Reset, ..qp }), Ok(()));
    assert_eq!(r.write_qp(7, &moved), Ok(()));

    // INVALIDATE_MR wants the key of a valid MR.
    let inv = CmdOpcode::InvalidateMr.code();
    assert_eq!(r.command(inv, 255, &[0x5B; 16]).0, CmdResult::BadState);
    assert_eq!(r.command(inv, 255, &[0x5A; 16]).0, CmdResult::Ok);
    assert!(!r.mrs()[255].valid);
    assert_eq!(r.command(inv, 255, &[0x5A; 16]).0, CmdResult::BadState);
    assert_eq!(r.command(inv, 256, &[0x5A; 16]).0, CmdResult::BadIndex);
}

#[test]
fn query_qp_reports_indices_and_the_terminate() {
    let mut f = setup(1024);
    f.post_send(Side::A, QA, write(1, LA_VA, 4, 0xDEAD_BEEF, 0)).unwrap();
    f.run().unwrap();
    let out = f.rnic(Side::A).query_qp(QA).unwrap();
    assert_eq!(out[8], 1, "sq_ci");
    assert_eq!(out[10], 0xC101_0000, "valid, received, 1/1/0x00");
    let out = f.rnic(Side::B).query_qp(QB).unwrap();
    assert_eq!(out[10], 0x8101_0000, "valid, sent, 1/1/0x00");
    assert_eq!(QpContext::from_words(&out).map(|c| c.state), Ok(QpState::Error));
}

#[test]
fn reset_clears_queues_indices_and_msns() {
    let mut f = setup(1024);
    f.post_recv(Side::B, QB, RqWqe::new(1, RB, RB_VA, 8)).unwrap();
    f.post_send(Side::A, QA, send(1, LA_VA, 8)).unwrap();
    f.run().unwrap();
    f.post_recv(Side::B, QB, RqWqe::new(2, RB, RB_VA, 8)).unwrap();
    let reset = QpContext { state: QpState::Reset, ..qp_ctx(1024) };
    f.rnic_mut(Side::B).write_qp(QB, &reset).unwrap();
    let qp = f.rnic(Side::B).qp(QB).unwrap();
    assert_eq!((qp.msns().recv, qp.status().rq_ci, qp.pending_recvs()), (1, 0, 0));
    assert_eq!(cqes(&f, Side::B, RECV_CQ).len(), 1, "RESET writes no CQEs");
    assert_eq!(
        f.post_recv(Side::B, QB, RqWqe::new(3, RB, RB_VA, 8)),
        Err(ModelError::InReset { side: Side::B, qpn: QB })
    );
}

#[test]
fn host_written_error_flushes_without_a_terminate() {
    let mut f = setup(1024);
    f.post_recv(Side::A, QA, RqWqe::new(1, LA, LA_VA, 8)).unwrap();
    f.post_send(Side::A, QA, send(2, LA_VA, 8).unsignaled()).unwrap();
    f.rnic_mut(Side::A).write_qp(QA, &QpContext { state: QpState::Error, ..qp_ctx(1024) }).unwrap();
    f.run().unwrap();
    assert_eq!(cqes(&f, Side::A, SEND_CQ), [failed(2, Side::A, CqeOpcode::Send, CqeStatus::Flushed)]);
    assert_eq!(cqes(&f, Side::A, RECV_CQ), [failed(1, Side::A, CqeOpcode::Recv, CqeStatus::Flushed)]);
    assert!(tx(&f, Side::A).terminates.is_empty());
    assert_eq!(state(&f, Side::B), QpState::Rts);

    // Work posted to a QP in ERROR is flushed by the next run.
    f.post_send(Side::A, QA, read(3, LA_VA, 8, RB, RB_VA)).unwrap();
    f.post_recv(Side::A, QA, RqWqe::new(4, LA, LA_VA, 8)).unwrap();
    f.run().unwrap();
    assert_eq!(cqes(&f, Side::A, SEND_CQ)[1], failed(3, Side::A, CqeOpcode::RdmaRead, CqeStatus::Flushed));
    assert_eq!(cqes(&f, Side::A, RECV_CQ)[1], failed(4, Side::A, CqeOpcode::Recv, CqeStatus::Flushed));

    // B's Send to the ERROR QP completes at B (handed on) and is dropped at A.
    fill(&mut f, Side::B, B_MEM, b"lost");
    f.post_send(Side::B, QB, SqWqe::new(SqOpcode::Send, 9).local(RB, RB_VA, 4)).unwrap();
    f.run().unwrap();
    assert_eq!(cqes(&f, Side::B, SEND_CQ), [success(9, Side::B, CqeOpcode::Send, 4)]);
    assert_eq!(cqes(&f, Side::A, RECV_CQ).len(), 2);
}

#[test]
fn harness_mistakes_are_model_errors() {
    let mut f = setup(1024);
    assert_eq!(f.post_send(Side::A, 99, send(1, 0, 0)), Err(ModelError::NoQp { side: Side::A, qpn: 99 }));
    assert_eq!(f.connect(QA, 3), Err(ModelError::Connected { side: Side::A, qpn: QA }));
    f.rnic_mut(Side::A).write_qp(3, &qp_ctx(1024)).unwrap();
    assert_eq!(f.post_send(Side::A, 3, send(1, 0, 0)), Err(ModelError::NotConnected { side: Side::A, qpn: 3 }));
    for i in 0..64 {
        f.post_recv(Side::B, QB, RqWqe::new(i, RB, RB_VA, 8)).unwrap();
    }
    assert!(matches!(
        f.post_recv(Side::B, QB, RqWqe::new(64, RB, RB_VA, 8)),
        Err(ModelError::QueueFull { queue: "RQ", .. })
    ));
    // An MR over unbacked IOVAs is the harness's fault, found at the access.
    f.rnic_mut(Side::A).write_mr(9, &mr(9, rights(true, true, true), PD, 0, 64, 0xDEAD_0000)).unwrap();
    f.post_send(Side::A, QA, send(1, 0, 8).local(stag(9, 9), 0, 8)).unwrap();
    assert!(matches!(f.run(), Err(ModelError::Memory(_))));
}

#[test]
fn disabled_cq_drops_completions() {
    let mut f = setup(1024);
    let off = CqContext { log_size: 8, enable: false, vector: 0, base: 0x8000 };
    f.rnic_mut(Side::A).write_cq(SEND_CQ, &off).unwrap();
    f.post_send(Side::A, QA, write(1, LA_VA, 4, RB, RB_VA)).unwrap();
    f.run().unwrap();
    let cq = f.rnic(Side::A).cq(SEND_CQ).unwrap();
    assert_eq!((cq.cqes().len(), cq.dropped()), (0, 1));
}

#[test]
fn tx_log_from_stream_sorts_by_class() {
    let mut f = setup(128);
    fill(&mut f, Side::B, B_MEM, &pattern(200, 1));
    f.post_recv(Side::A, QA, RqWqe::new(1, LA, LA_VA, 8)).unwrap();
    f.post_send(Side::A, QA, read(1, LA_VA, 200, RB, RB_VA)).unwrap();
    let b_write = SqWqe::new(SqOpcode::RdmaWrite, 2).local(RB, RB_VA, 150).remote(LA, LA_VA + 0x1000);
    f.post_send(Side::B, QB, b_write).unwrap();
    f.post_send(Side::B, QB, SqWqe::new(SqOpcode::Send, 3).local(RB, RB_VA, 4)).unwrap();
    f.run().unwrap();
    // A peer segment on a queue that does not exist makes B terminate.
    let mut bad_qn = Segment::send(1, b"").to_vec();
    bad_qn[9] = 9;
    f.deliver(Side::B, QB, &bad_qn).unwrap();

    let log = tx(&f, Side::B);
    assert_eq!((log.requests.len(), log.read_responses.len(), log.terminates.len()), (3, 2, 1));
    // Any interleaving of the classes sorts back to the same log.
    let mut stream: Vec<Vec<u8>> = log.terminates.clone();
    stream.extend(log.read_responses.iter().cloned());
    stream.extend(log.requests.iter().cloned());
    assert_eq!(TxLog::from_stream(stream), *log);
}
