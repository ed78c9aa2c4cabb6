//! The host interface layouts: registers, contexts and descriptors, byte by
//! byte against hand-computed values, round trips, and garbage.

mod common;
use common::hex;
use proptest::prelude::*;
use rnic_proto::host::context::{
    cq_fields, mr_fields, qp_fields, ContextError, CqContext, CqStatus, MrAccess, MrContext, QpContext, QpState,
    QpStatus, TermInfo, MAX_READS,
};
use rnic_proto::host::desc::{
    cqe_fields, cqe_phase, rq_wqe_fields, slot_addr, sq_wqe_fields, Cqe, CqeOpcode, CqeStatus, DescError, RqWqe,
    SqOpcode, SqWqe, CQE_LEN, RQ_WQE_LEN, SQ_WQE_LEN, SQ_WQE_SLOT_LEN,
};
use rnic_proto::host::regs::{self, CmdOpcode, CmdResult, Register};
use rnic_proto::host::{stag, stag_index, stag_key, Field};
use rnic_proto::rdmap::Opcode;
use rnic_proto::terminate::TermCode;

// ------------------------------------------------------------ registers

#[test]
fn register_offsets_match_the_spec() {
    let fixed = [
        (regs::ID, 0x000),
        (regs::VERSION, 0x004),
        (regs::DATAPATH_BYTES, 0x008),
        (regs::NUM_QPS, 0x00C),
        (regs::NUM_CQS, 0x010),
        (regs::NUM_MRS, 0x014),
        (regs::FEATURES, 0x018),
        (regs::CONTROL, 0x020),
        (regs::STATUS, 0x024),
        (regs::CMD, 0x030),
        (regs::CMD_STATUS, 0x034),
        (regs::CMD_DATA, 0x040),
        (regs::cmd_data(15), 0x07C),
    ];
    for (got, want) in fixed {
        assert_eq!(got, want);
    }
    assert_eq!(regs::sq_pi(0), 0x1000);
    assert_eq!(regs::rq_pi(0), 0x1004);
    assert_eq!(regs::sq_pi(5), 0x1028);
    assert_eq!(regs::rq_pi(63), 0x11FC);
    assert_eq!(regs::cq_ci(0), 0x2000);
    assert_eq!(regs::cq_arm(0), 0x2004);
    assert_eq!(regs::cq_arm(7), 0x203C);
    assert_eq!(regs::ID_VALUE.to_be_bytes(), *b"RNIC");
    assert_eq!(regs::VERSION_VALUE, 0x0001_0000);
}

#[test]
fn register_decode_agrees_with_the_offset_functions() {
    let (qps, cqs) = (64, 64);
    for n in 0..qps {
        assert_eq!(Register::decode(regs::sq_pi(n), qps, cqs), Some(Register::SqPi(n)));
        assert_eq!(Register::decode(regs::rq_pi(n), qps, cqs), Some(Register::RqPi(n)));
    }
    for n in 0..cqs {
        assert_eq!(Register::decode(regs::cq_ci(n), qps, cqs), Some(Register::CqCi(n)));
        assert_eq!(Register::decode(regs::cq_arm(n), qps, cqs), Some(Register::CqArm(n)));
    }
    for i in 0..16 {
        assert_eq!(Register::decode(regs::cmd_data(i), qps, cqs), Some(Register::CmdData(i)));
    }
    for i in [0, 1, regs::DEVICE_MEMORY_WINDOW / 4 - 1] {
        assert_eq!(Register::decode(regs::DEVICE_MEMORY + 4 * i, qps, cqs), Some(Register::DeviceMemory(i)));
    }
    // Everything else in BAR0 is unmapped.
    let mapped = (0..regs::BAR0_LEN).filter(|&o| Register::decode(o, qps, cqs).is_some()).count();
    let fixed = regs::REGISTERS.len() - 1; // CMD_DATA is counted as its 16 words
    let window = (regs::DEVICE_MEMORY_WINDOW / 4) as usize;
    assert_eq!(mapped, fixed + 16 + 2 * qps as usize + 2 * cqs as usize + window);
}

#[test]
fn command_and_status_words() {
    assert_eq!(CmdOpcode::WriteQp.word(3), Some(0x0000_0301));
    assert_eq!(CmdOpcode::InvalidateMr.word(0xFF_FFFF), Some(0xFFFF_FF07));
    assert_eq!(CmdResult::BadIndex.status_word(), 0x0000_0200);
    for (op, _) in CmdOpcode::ALL {
        assert_eq!(CmdOpcode::try_from(op.code()), Ok(op));
    }
    for v in [0u8, 8, 0xFF] {
        assert_eq!(CmdOpcode::try_from(v), Err(v));
    }
    for (r, _) in CmdResult::ALL {
        assert_eq!(CmdResult::try_from(r.code()), Ok(r));
    }
    let mut w = [0u32];
    regs::cq_arm_bits::SOLICITED.set_word(&mut w, 1);
    assert_eq!(w[0], 0b10);
}

// ------------------------------------------------------------ field tables

/// Checks a layout: names unique, no two fields overlap, all inside `bits`.
fn check_table(name: &str, fields: &[Field], bits: u32) {
    for (i, a) in fields.iter().enumerate() {
        assert!(a.width >= 1 && a.width <= 64, "{name}.{}", a.name);
        assert!(a.msb() < bits, "{name}.{} ends at bit {}", a.name, a.msb());
        for b in &fields[i + 1..] {
            assert_ne!(a.name, b.name, "{name}: duplicate name");
            let disjoint = a.msb() < b.lsb || b.msb() < a.lsb;
            assert!(disjoint, "{name}: {} overlaps {}", a.name, b.name);
        }
    }
}

#[test]
fn layouts_are_disjoint_and_fit() {
    let qp: Vec<Field> = qp_fields::CONTEXT.iter().chain(qp_fields::STATUS).copied().collect();
    check_table("qp", &qp, 12 * 32);
    check_table("qp context", qp_fields::CONTEXT, 8 * 32);
    let cq: Vec<Field> = cq_fields::CONTEXT.iter().chain(cq_fields::STATUS).copied().collect();
    check_table("cq", &cq, 6 * 32);
    check_table("cq context", cq_fields::CONTEXT, 4 * 32);
    check_table("mr", mr_fields::CONTEXT, 7 * 32);
    check_table("sq wqe", sq_wqe_fields::ALL, SQ_WQE_LEN as u32 * 8);
    check_table("rq wqe", rq_wqe_fields::ALL, RQ_WQE_LEN as u32 * 8);
    check_table("cqe", cqe_fields::ALL, CQE_LEN as u32 * 8);
    for reg in ["VERSION", "FEATURES", "CONTROL", "STATUS", "CMD", "CMD_STATUS", "CQ_ARM"] {
        let fields: Vec<Field> = regs::REGISTER_FIELDS.iter().filter(|(r, _)| *r == reg).map(|(_, f)| *f).collect();
        check_table(reg, &fields, 32);
    }
}

#[test]
fn field_numbers_for_the_hdl_generator() {
    // A few positions spelled out, as the generator reads them.
    assert_eq!((qp_fields::PD.word(), qp_fields::PD.shift(), qp_fields::PD.width), (0, 16, 16));
    assert_eq!((qp_fields::ORD.word(), qp_fields::ORD.shift()), (3, 24));
    assert_eq!((qp_fields::RQ_BASE.word(), qp_fields::RQ_BASE.width), (6, 64));
    assert_eq!((qp_fields::TERM_VALID.word(), qp_fields::TERM_VALID.shift()), (10, 31));
    assert_eq!((mr_fields::VALID.word(), mr_fields::VALID.shift()), (0, 15));
    assert_eq!(mr_fields::IOVA.lsb, 160);
    assert_eq!((cq_fields::BASE.word(), cq_fields::BASE.lsb), (1, 32));
    assert_eq!((sq_wqe_fields::REMOTE_TO.byte(), sq_wqe_fields::REMOTE_TO.lsb), (32, 256));
    assert_eq!((cqe_fields::INVALIDATED.byte(), cqe_fields::INVALIDATED.lsb), (31, 251));
    assert_eq!(regs::cmd::INDEX.mask(), 0xFF_FFFF);
}

// ------------------------------------------------------------ contexts

fn qp_ctx() -> QpContext {
    QpContext {
        state: QpState::Rts,
        crc_enable: true,
        markers_tx: false,
        markers_rx: true,
        pd: 0xBEEF,
        conn_id: 0x0102,
        mulpdu: 1448,
        send_cq: 3,
        recv_cq: 4,
        sq_log_size: 6,
        rq_log_size: 7,
        ird: 2,
        ord: 4,
        sq_base: 0x1234_5678_9ABC_DE80,
        rq_base: 0x0000_0001_0000_0020,
    }
}

#[test]
fn qp_context_words_by_hand() {
    let w = qp_ctx().to_words();
    assert_eq!(w[0], 0xBEEF_0501);
    assert_eq!(w[1], (1448 << 16) | 0x0102);
    assert_eq!(w[2], 0x0004_0003);
    assert_eq!(w[3], 0x0402_0706);
    assert_eq!((w[4], w[5]), (0x9ABC_DE80, 0x1234_5678));
    assert_eq!((w[6], w[7]), (0x0000_0020, 0x0000_0001));
    assert!(w[8..].iter().all(|&x| x == 0));
    assert_eq!(QpContext::from_words(&w), Ok(qp_ctx()));
}

#[test]
fn qp_status_words_by_hand() {
    let status = QpStatus {
        sq_ci: 7,
        rq_ci: 9,
        terminate: Some(TermInfo { code: TermCode::DDP_TAGGED_INVALID_STAG, received: true }),
    };
    let mut w = [0u32; 16];
    status.write_words(&mut w);
    assert_eq!(&w[8..12], &[7, 9, 0xC101_0000, 0]);
    assert_eq!(QpStatus::from_words(&w), status);
    let sent = QpStatus {
        terminate: Some(TermInfo { code: TermCode::RDMA_PROT_CANNOT_INVALIDATE, received: false }),
        ..status
    };
    sent.write_words(&mut w);
    assert_eq!(w[10], 0x8001_0900);
    QpStatus::default().write_words(&mut w);
    assert_eq!(&w[8..12], &[0; 4]);
}

#[test]
fn qp_context_errors() {
    let mut w = qp_ctx().to_words();
    w[0] = (w[0] & !0xF) | 3;
    assert_eq!(QpContext::from_words(&w), Err(ContextError::QpState(3)));
    let bad = |f: fn(&mut QpContext)| {
        let mut c = qp_ctx();
        f(&mut c);
        QpContext::from_words(&c.to_words())
    };
    assert!(matches!(bad(|c| c.sq_log_size = 32), Err(ContextError::LogSize { field: "sq_log_size", value: 32 })));
    assert!(matches!(bad(|c| c.rq_log_size = 255), Err(ContextError::LogSize { .. })));
    assert!(matches!(bad(|c| c.sq_base = 0x40), Err(ContextError::Misaligned { align: 128, .. })));
    assert!(matches!(bad(|c| c.rq_base = 0x10), Err(ContextError::Misaligned { align: 32, .. })));
    assert_eq!(bad(|c| c.mulpdu = 127), Err(ContextError::Mulpdu(127)));
    assert_eq!(bad(|c| c.ird = MAX_READS + 1), Err(ContextError::ReadDepth { field: "ird", value: MAX_READS + 1 }));
    assert_eq!(bad(|c| c.ord = MAX_READS + 1), Err(ContextError::ReadDepth { field: "ord", value: MAX_READS + 1 }));
    assert_eq!(bad(|c| c.ord = 255), Err(ContextError::ReadDepth { field: "ord", value: 255 }));
    assert_eq!(bad(|c| (c.ird, c.ord) = (MAX_READS, MAX_READS)).map(|c| (c.ird, c.ord)), Ok((MAX_READS, MAX_READS)));
    assert!(matches!(bad(|c| c.sq_base = !127), Err(ContextError::Wraps { .. })));
    // A RESET context may be all zeros.
    assert_eq!(QpContext::from_words(&[0; 16]), Ok(QpContext::default()));
    assert_eq!(bad(|c| c.sq_log_size = 31).map(|c| c.sq_log_size), Ok(31));
    // Reserved bits and the query words are ignored.
    let mut w = qp_ctx().to_words();
    w[0] |= 0x0000_F8F0;
    w[8] = 0xFFFF_FFFF;
    assert_eq!(QpContext::from_words(&w), Ok(qp_ctx()));
}

#[test]
fn cq_and_mr_context_words_by_hand() {
    let cq = CqContext { log_size: 10, enable: true, vector: 0x1234, base: 0xFFFF_0000_0000_1000 };
    let w = cq.to_words();
    assert_eq!(&w[..4], &[0x1234_010A, 0x0000_1000, 0xFFFF_0000, 0]);
    assert_eq!(CqContext::from_words(&w), Ok(cq));
    let mut s = [0u32; 16];
    CqStatus { pi: 0x8000_0001, overflow: true }.write_words(&mut s);
    assert_eq!(&s[4..6], &[0x8000_0001, 1]);
    assert_eq!(CqStatus::from_words(&s), CqStatus { pi: 0x8000_0001, overflow: true });
    assert!(matches!(
        CqContext::from_words(&CqContext { base: 0x10, ..cq }.to_words()),
        Err(ContextError::Misaligned { .. })
    ));

    let mr = MrContext {
        key: 0xA5,
        access: MrAccess { local_write: true, remote_read: false, remote_write: true, remote_atomic: false },
        valid: true,
        pd: 0x0042,
        va: 0x0000_7F00_0000_0000,
        length: 0x1_0000_0000,
        iova: 0x0000_0000_8000_0000,
    };
    let w = mr.to_words();
    assert_eq!(&w[..8], &[0x0042_85A5, 0, 0x7F00, 0, 1, 0x8000_0000, 0, 0]);
    assert_eq!(MrContext::from_words(&w), Ok(mr));
    let wrap = MrContext { va: u64::MAX, length: 2, ..mr };
    assert!(matches!(MrContext::from_words(&wrap.to_words()), Err(ContextError::Wraps { field: "va", .. })));
    let end = MrContext { va: u64::MAX, length: 1, ..mr };
    assert_eq!(MrContext::from_words(&end.to_words()), Ok(end));
    let iova = MrContext { iova: u64::MAX - 8, length: 16, ..mr };
    assert!(matches!(MrContext::from_words(&iova.to_words()), Err(ContextError::Wraps { field: "iova", .. })));
}

#[test]
fn stags_name_mr_index_and_key() {
    assert_eq!(stag(5, 0x3C), 0x0000_053C);
    assert_eq!(stag_index(0xDEAD_BEEF), 0xDE_ADBE);
    assert_eq!(stag_key(0xDEAD_BEEF), 0xEF);
}

// ------------------------------------------------------------ descriptors

#[test]
fn sq_wqe_bytes_by_hand() {
    let w = SqWqe {
        opcode: SqOpcode::SendSeInv.code(),
        signaled: true,
        fence: true,
        aopcode: 0xA,
        length: 0x0102_0304,
        wr_id: 0x1112_1314_1516_1718,
        local_addr: 0x2122_2324_2526_2728,
        lkey: 0x3132_3334,
        remote_stag: 0x4142_4344,
        remote_to: 0x5152_5354_5556_5758,
        imm: 0x6162_6364_6566_6768,
        add_swap: 0x7172_7374_7576_7778,
        add_swap_mask: 0x8182_8384_8586_8788,
        compare: 0x9192_9394_9596_9798,
        compare_mask: 0xA1A2_A3A4_A5A6_A7A8,
    };
    let b = w.encode();
    assert_eq!(b.len(), SQ_WQE_SLOT_LEN);
    let mut want = hex("06 03 0A 00 04 03 02 01  18 17 16 15 14 13 12 11
         28 27 26 25 24 23 22 21  34 33 32 31 44 43 42 41
         58 57 56 55 54 53 52 51  68 67 66 65 64 63 62 61
         00 00 00 00 00 00 00 00  00 00 00 00 00 00 00 00
         78 77 76 75 74 73 72 71  88 87 86 85 84 83 82 81
         98 97 96 95 94 93 92 91  A8 A7 A6 A5 A4 A3 A2 A1");
    want.resize(SQ_WQE_SLOT_LEN, 0);
    assert_eq!(b.to_vec(), want);
    assert_eq!(SqWqe::decode(&b), Ok(w));
    assert_eq!(SqWqe::decode(&b[..SQ_WQE_LEN]), Ok(w));
    assert_eq!(w.op(), Some(SqOpcode::SendSeInv));
    // Only the low 4 bits of octet 2 are the AOpCode.
    let mut high = b;
    high[2] = 0xF2;
    assert_eq!(SqWqe::decode(&high).map(|w| w.aopcode), Ok(2));
}

#[test]
fn rfc_7306_wqe_builders() {
    let fa = SqWqe::fetch_add(1, 0x29, 0x8000_0000).local(7, 0x100, 8).remote(9, 0x1000);
    assert_eq!(
        (fa.op(), fa.aopcode, fa.add_swap, fa.add_swap_mask, fa.signaled),
        (Some(SqOpcode::Atomic), 0, 0x29, 0x8000_0000, true)
    );
    assert_eq!((fa.compare, fa.compare_mask), (0, 0));
    let cs = SqWqe::cmp_swap(2, 0xC, 0xCC, 0x5, 0x55);
    assert_eq!((cs.aopcode, cs.compare, cs.compare_mask, cs.add_swap, cs.add_swap_mask), (2, 0xC, 0xCC, 0x5, 0x55));
    let imm = SqWqe::immediate(3, [1, 2, 3, 4, 5, 6, 7, 8], true);
    assert_eq!(imm.op(), Some(SqOpcode::ImmSe));
    // The octets sit in the WQE as they go on the wire.
    assert_eq!(imm.encode()[40..48], [1, 2, 3, 4, 5, 6, 7, 8]);
    assert_eq!(imm.imm.to_le_bytes(), [1, 2, 3, 4, 5, 6, 7, 8]);
    assert_eq!(SqWqe::immediate(3, [0; 8], false).op(), Some(SqOpcode::Imm));
    // The RFC 7306 WQEs complete with 8 octets whatever their length says.
    for w in [fa.local(7, 0x100, 4096), cs, imm.local(1, 2, 3)] {
        assert_eq!(w.completed_len(), 8, "{:?}", w.op());
    }
    assert_eq!(SqWqe::new(SqOpcode::Send, 4).local(1, 2, 3).completed_len(), 3);
}

#[test]
fn sq_opcodes_equal_rdmap_opcodes() {
    for (op, _) in SqOpcode::ALL {
        assert_eq!(SqOpcode::try_from(op.code()), Ok(op));
        if let Some(r) = op.rdmap_opcode() {
            if op != SqOpcode::RdmaRead {
                assert_eq!(r.code(), op.code(), "{op:?}");
            }
        }
    }
    let supported: Vec<u8> = SqOpcode::ALL.iter().filter(|(o, _)| o.is_supported()).map(|(o, _)| o.code()).collect();
    assert_eq!(supported, [0, 1, 3, 4, 5, 6, 8, 9, 0xA]);
    assert_eq!(SqOpcode::Atomic.rdmap_opcode(), Some(Opcode::AtomicRequest));
    assert_eq!(SqOpcode::WriteImm.rdmap_opcode(), None);
    assert_eq!(SqOpcode::try_from(0x02), Err(0x02));
    // An unknown opcode survives decoding: it must still complete (BAD_OPCODE).
    let mut b = [0u8; SQ_WQE_LEN];
    b[0] = 0x7F;
    assert_eq!(SqWqe::decode(&b).map(|w| (w.opcode, w.op())), Ok((0x7F, None)));
}

#[test]
fn rq_wqe_bytes_by_hand() {
    let w = RqWqe::new(0x0807_0605_0403_0201, 0x1C1B_1A19, 0x100F_0E0D_0C0B_0A09, 0x1817_1615);
    let b = w.encode();
    let want = hex("01 02 03 04 05 06 07 08  09 0A 0B 0C 0D 0E 0F 10
         15 16 17 18 19 1A 1B 1C  00 00 00 00 00 00 00 00");
    assert_eq!(b.to_vec(), want);
    assert_eq!(RqWqe::decode(&b), Ok(w));
}

#[test]
fn cqe_bytes_by_hand() {
    let c = Cqe {
        wr_id: 0x0807_0605_0403_0201,
        byte_len: 0x0C0B_0A09,
        qpn: 0x0E0D,
        opcode: CqeOpcode::Recv,
        status: CqeStatus::Success,
        imm: 0x1817_1615_1413_1211,
        invalidated: Some(0x1C1B_1A19),
        phase: true,
        solicited: true,
        imm_valid: false,
    };
    let b = c.encode();
    let want = hex("01 02 03 04 05 06 07 08  09 0A 0B 0C 0D 0E 03 00
         11 12 13 14 15 16 17 18  19 1A 1B 1C 00 00 00 0B");
    assert_eq!(b.to_vec(), want);
    assert_eq!(Cqe::decode(&b), Ok(c));
    // The invalidated STag is only meaningful with its flag.
    let mut no_flag = b;
    no_flag[31] &= !0x08;
    assert_eq!(Cqe::decode(&no_flag).map(|c| c.invalidated), Ok(None));
    // Status and opcode tables.
    let mut bad = b;
    bad[14] = 6;
    assert_eq!(Cqe::decode(&bad), Err(DescError::CqeOpcode(6)));
    bad[14] = 0;
    bad[15] = 8;
    assert_eq!(Cqe::decode(&bad), Err(DescError::CqeStatus(8)));
}

#[test]
fn truncated_descriptors() {
    assert_eq!(SqWqe::decode(&[0; 95]), Err(DescError::Truncated { what: "SQ WQE", needed: 96, got: 95 }));
    assert!(matches!(RqWqe::decode(&[0; 31]), Err(DescError::Truncated { needed: 32, .. })));
    assert!(matches!(Cqe::decode(&[]), Err(DescError::Truncated { needed: 32, got: 0, .. })));
}

// ------------------------------------------------------------ the ring rules

#[test]
fn phase_bit_of_the_spec() {
    // Lap k carries PHASE = !(k & 1): 1 on the first lap over a zeroed ring.
    for log in [0u8, 1, 4, 10] {
        let size = 1u32 << log;
        for i in 0..4 * size {
            assert_eq!(cqe_phase(i, log), (i / size).is_multiple_of(2), "index {i} log {log}");
        }
    }
    assert_eq!(slot_addr(0x8000, 0x1_0003, 4, CQE_LEN), 0x8000 + 3 * 32);
}

/// A producer writes CQEs with the phase rule into a ring, a consumer polls
/// with the same rule; the consumer sees every entry exactly once, and a
/// stale slot is never taken for a new one.
fn ring_round_trip(log: u8, start: u32, batches: &[u8]) -> Result<(), TestCaseError> {
    let size = 1u32 << log;
    let mut ring = vec![[0u8; CQE_LEN]; size as usize];
    // A zeroed ring that the consumer believes is at `start` must look empty:
    // start at a lap whose phase is 1 (even lap), as after a reset.
    let start = start & !((2 << log) - 1);
    let (mut pi, mut ci) = (start, start);
    let mut next_id = 0u64;
    let mut seen = 0u64;
    for &b in batches {
        // Produce at most the free slots.
        let n = u32::from(b).min(size - pi.wrapping_sub(ci));
        for _ in 0..n {
            let mut c = Cqe::new(next_id, 0, CqeOpcode::Send, CqeStatus::Success);
            c.phase = cqe_phase(pi, log);
            ring[(pi & (size - 1)) as usize] = c.encode();
            pi = pi.wrapping_add(1);
            next_id += 1;
        }
        // Consume everything whose phase says it is new.
        loop {
            let slot = Cqe::decode(&ring[(ci & (size - 1)) as usize]).unwrap();
            if slot.phase != cqe_phase(ci, log) {
                break;
            }
            prop_assert_eq!(slot.wr_id, seen);
            seen += 1;
            ci = ci.wrapping_add(1);
        }
        prop_assert_eq!(ci, pi);
    }
    prop_assert_eq!(seen, next_id);
    Ok(())
}

// ------------------------------------------------------------ properties

fn sq_wqe() -> impl Strategy<Value = SqWqe> {
    (
        any::<u8>(),
        any::<(bool, bool)>(),
        any::<u32>(),
        any::<(u64, u64, u32, u32, u64, u64)>(),
        (0u8..16, any::<(u64, u64, u64, u64)>()),
    )
        .prop_map(
            |(
                opcode,
                (signaled, fence),
                length,
                (wr_id, local_addr, lkey, remote_stag, remote_to, imm),
                (aopcode, (add_swap, add_swap_mask, compare, compare_mask)),
            )| SqWqe {
                opcode,
                signaled,
                fence,
                aopcode,
                length,
                wr_id,
                local_addr,
                lkey,
                remote_stag,
                remote_to,
                imm,
                add_swap,
                add_swap_mask,
                compare,
                compare_mask,
            },
        )
}

fn cqe() -> impl Strategy<Value = Cqe> {
    (any::<(u64, u32, u16, u64)>(), 0u8..6, 0u8..8, proptest::option::of(any::<u32>()), any::<(bool, bool, bool)>())
        .prop_map(|((wr_id, byte_len, qpn, imm), op, st, invalidated, (phase, solicited, imm_valid))| Cqe {
            wr_id,
            byte_len,
            qpn,
            opcode: CqeOpcode::try_from(op).unwrap(),
            status: CqeStatus::try_from(st).unwrap(),
            imm,
            invalidated,
            phase,
            solicited,
            imm_valid,
        })
}

fn valid_qp_context() -> impl Strategy<Value = QpContext> {
    (
        0u8..3,
        (any::<bool>(), any::<(bool, bool)>(), any::<u16>(), any::<u16>()),
        128u16..,
        (any::<u16>(), any::<u16>(), 0u8..=MAX_READS, 0u8..=MAX_READS),
        (0u8..=24, 0u8..=24),
        (any::<u32>(), any::<u32>()),
    )
        .prop_map(
            |(
                state,
                (crc, (markers_tx, markers_rx), pd, conn),
                mulpdu,
                (send_cq, recv_cq, ird, ord),
                (sq_log, rq_log),
                (sq, rq),
            )| QpContext {
                state: QpState::try_from(state).unwrap(),
                crc_enable: crc,
                markers_tx,
                markers_rx,
                pd,
                conn_id: conn,
                mulpdu,
                send_cq,
                recv_cq,
                sq_log_size: sq_log,
                rq_log_size: rq_log,
                ird,
                ord,
                sq_base: u64::from(sq) << 7,
                rq_base: u64::from(rq) << 5,
            },
        )
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(256))]

    #[test]
    fn sq_wqe_round_trip(w in sq_wqe()) {
        let b = w.encode();
        // Reserved: the high nibble of octet 2, octet 3, 48–63 and 96–127.
        let reserved = b[2] >> 4 == 0 && b[3] == 0;
        prop_assert!(reserved && b[48..64].iter().chain(&b[96..]).all(|&x| x == 0));
        prop_assert_eq!(SqWqe::decode(&b), Ok(w));
    }

    #[test]
    fn rq_wqe_round_trip(wr_id in any::<u64>(), lkey in any::<u32>(), addr in any::<u64>(), len in any::<u32>()) {
        let w = RqWqe::new(wr_id, lkey, addr, len);
        prop_assert_eq!(RqWqe::decode(&w.encode()), Ok(w));
    }

    #[test]
    fn cqe_round_trip(c in cqe()) {
        prop_assert_eq!(Cqe::decode(&c.encode()), Ok(c));
    }

    #[test]
    fn qp_context_round_trip(c in valid_qp_context(), sq_ci in any::<u32>(), rq_ci in any::<u32>(), term in proptest::option::of((0u8..16, 0u8..16, any::<u8>(), any::<bool>()))) {
        let mut w = c.to_words();
        prop_assert_eq!(QpContext::from_words(&w), Ok(c));
        let status = QpStatus {
            sq_ci,
            rq_ci,
            terminate: term.map(|(l, t, code, received)| TermInfo { code: TermCode::new(l, t, code), received }),
        };
        status.write_words(&mut w);
        prop_assert_eq!(QpContext::from_words(&w), Ok(c));
        prop_assert_eq!(QpStatus::from_words(&w), status);
    }

    #[test]
    fn mr_context_round_trip(key in any::<u8>(), bits in any::<[bool; 5]>(), pd in any::<u16>(), va in any::<u64>(), length in any::<u64>(), iova in any::<u64>()) {
        let length = length.min(u64::MAX - va).min(u64::MAX - iova);
        let mr = MrContext {
            key,
            access: MrAccess { local_write: bits[0], remote_read: bits[1], remote_write: bits[2], remote_atomic: bits[3] },
            valid: bits[4],
            pd,
            va,
            length,
            iova,
        };
        prop_assert_eq!(MrContext::from_words(&mr.to_words()), Ok(mr));
    }

    #[test]
    fn garbage_descriptors_never_panic(b in proptest::collection::vec(any::<u8>(), 0..200)) {
        if let Ok(w) = SqWqe::decode(&b) {
            // Reserved octets are dropped; every field survives.
            prop_assert_eq!(SqWqe::decode(&w.encode()), Ok(w));
            prop_assert_eq!(&w.encode()[4..48], &b[4..48]);
        }
        if let Ok(w) = RqWqe::decode(&b) {
            prop_assert_eq!(&w.encode()[..24], &b[..24]);
        }
        match Cqe::decode(&b) {
            Ok(c) => prop_assert_eq!(Cqe::decode(&c.encode()), Ok(c)),
            Err(DescError::Truncated { got, .. }) => prop_assert!(got < CQE_LEN),
            Err(DescError::CqeOpcode(v)) => prop_assert!(v >= 6),
            Err(DescError::CqeStatus(v)) => prop_assert!(v >= 8),
        }
    }

    #[test]
    fn garbage_contexts_never_panic(w in any::<[u32; 16]>()) {
        if let Ok(c) = QpContext::from_words(&w) {
            prop_assert_eq!(QpContext::from_words(&c.to_words()), Ok(c));
        }
        if let Ok(c) = CqContext::from_words(&w) {
            prop_assert_eq!(CqContext::from_words(&c.to_words()), Ok(c));
        }
        if let Ok(c) = MrContext::from_words(&w) {
            prop_assert_eq!(&c.to_words()[1..7], &w[1..7]);
        }
        let _ = QpStatus::from_words(&w);
    }

    #[test]
    fn cqe_ring_with_phase_bits(log in 0u8..6, start in any::<u32>(), batches in proptest::collection::vec(any::<u8>(), 1..40)) {
        ring_round_trip(log, start, &batches)?;
    }
}

#[test]
fn ring_phase_survives_the_index_wrap() {
    // Start two laps before the 32-bit wrap and run across it.
    ring_round_trip(3, u32::MAX - 15, &[5, 8, 8, 3, 8, 8, 8, 1]).unwrap();
}
