//! RDMAP and RFC 7306 message conformance (CHECKLIST RDMAP-01 … RDMAP-07,
//! ATOM-02 … ATOM-05, IMM-01, IMM-03).

mod common;
use common::send_ulpdu;
use rnic_proto::ddp::{DdpHeader, TaggedHeader, UntaggedHeader};
use rnic_proto::rdmap::{
    parse_ulpdu, AtomicRequest, AtomicResponse, Opcode, RdmapControl, RdmapError, RdmapHeader, ReadRequest, Segment,
    IMMEDIATE_DATA_LEN,
};
use rnic_proto::terminate::TermCode;
use rnic_proto::AtomicOp;

/// An untagged ULPDU with arbitrary fields, for malformed cases.
fn untagged(ctrl0: u8, ctrl1: u8, qn: u32, msn: u32, mo: u32, rest: &[u8]) -> Vec<u8> {
    let h = UntaggedHeader { last: ctrl0 & 0x40 != 0, ulp_ctrl: ctrl1, inv_stag: 0, qn, msn, mo };
    let mut v = h.to_bytes().to_vec();
    v[0] = ctrl0;
    v.extend_from_slice(rest);
    v
}

#[test]
fn rdmap_00_opcode_table() {
    // CHECKLIST §0.1: first two octets (L=1) and queue of every opcode.
    let table: [(Opcode, [u8; 2], Option<u32>); 12] = [
        (Opcode::RdmaWrite, [0xc1, 0x40], None),
        (Opcode::ReadRequest, [0x41, 0x41], Some(1)),
        (Opcode::ReadResponse, [0xc1, 0x42], None),
        (Opcode::Send, [0x41, 0x43], Some(0)),
        (Opcode::SendInvalidate, [0x41, 0x44], Some(0)),
        (Opcode::SendSolicited, [0x41, 0x45], Some(0)),
        (Opcode::SendSolicitedInvalidate, [0x41, 0x46], Some(0)),
        (Opcode::Terminate, [0x41, 0x47], Some(2)),
        (Opcode::ImmediateData, [0x41, 0x48], Some(0)),
        (Opcode::ImmediateDataSolicited, [0x41, 0x49], Some(0)),
        (Opcode::AtomicRequest, [0x41, 0x4a], Some(1)),
        (Opcode::AtomicResponse, [0x41, 0x4b], Some(3)),
    ];
    for (op, octets, qn) in table {
        assert_eq!(op.queue(), qn);
        assert_eq!(op.is_tagged(), qn.is_none());
        let seg = if op.is_tagged() {
            Segment::tagged(op, true, 0, 0, &[])
        } else {
            Segment::untagged(op, true, 0, 1, 0, RdmapHeader::None, &[])
        };
        assert_eq!(seg.to_vec()[..2], octets, "{op:?}");
        assert_eq!(Opcode::try_from(octets[1] & 0xf), Ok(op));
    }
}

#[test]
fn rdmap_01_control_field_rsv_ignored() {
    let mut send = send_ulpdu(1, 3);
    send[1] = 0x73; // RV=01, Rsv=11, Send
    assert_eq!(parse_ulpdu(&send).unwrap().opcode, Opcode::Send);
    assert_eq!(RdmapControl::new(Opcode::AtomicResponse).to_byte(), 0x4b);
}

#[test]
fn rdmap_02_invalid_version() {
    let mut send = send_ulpdu(1, 3);
    for (octet, rv) in [(0x83u8, 2u8), (0x03, 0), (0xc3, 3)] {
        send[1] = octet;
        let err = parse_ulpdu(&send).unwrap_err();
        assert_eq!(err, RdmapError::Version(rv));
        assert_eq!(err.term_code(), TermCode::RDMA_OP_INVALID_VERSION);
        assert_eq!(err.term_code().control_word(true, true, false), 0x0205_c000);
    }
}

#[test]
fn rdmap_03_unknown_opcodes() {
    for op in 0xc..=0xf {
        let mut send = send_ulpdu(1, 3);
        send[1] = 0x40 | op;
        let err = parse_ulpdu(&send).unwrap_err();
        assert_eq!(err, RdmapError::UnknownOpcode(op));
        assert_eq!(err.term_code().control_word(true, true, false), 0x0206_c000);
    }
}

#[test]
fn rdmap_04_opcode_t_qn_consistency() {
    // Read Request on QN 0.
    let rr = Segment::read_request(1, ReadRequest::default()).to_vec();
    let mut on_qn0 = rr.clone();
    on_qn0[6..10].copy_from_slice(&0u32.to_be_bytes());
    let err = parse_ulpdu(&on_qn0).unwrap_err();
    assert_eq!(err, RdmapError::QueueMismatch { opcode: Opcode::ReadRequest, qn: 0 });
    assert_eq!(err.term_code(), TermCode::RDMA_OP_UNEXPECTED_OPCODE);
    // Send with T=1.
    let send_tagged = Segment::tagged(Opcode::Send, true, 1, 2, b"x").to_vec();
    assert_eq!(parse_ulpdu(&send_tagged), Err(RdmapError::TaggedMismatch { opcode: Opcode::Send, tagged: true }));
    // RDMA Write with T=0.
    let write_untagged = untagged(0x41, 0x40, 0, 1, 0, b"x");
    assert_eq!(
        parse_ulpdu(&write_untagged),
        Err(RdmapError::TaggedMismatch { opcode: Opcode::RdmaWrite, tagged: false })
    );
    // Draft-era peers: Immediate Data with SE or Atomic Response on QN 1.
    let imm_se = untagged(0x41, 0x49, 1, 1, 0, &[0; 8]);
    assert!(matches!(parse_ulpdu(&imm_se), Err(RdmapError::QueueMismatch { qn: 1, .. })));
    let resp = untagged(0x41, 0x4b, 1, 1, 0, &[0; 12]);
    assert!(matches!(parse_ulpdu(&resp), Err(RdmapError::QueueMismatch { qn: 1, .. })));
}

#[test]
fn rdmap_05_invalidate_stag_ignored_for_send() {
    let mut send = send_ulpdu(1, 3);
    send[2..6].copy_from_slice(&0x1234_5678u32.to_be_bytes());
    let seg = parse_ulpdu(&send).unwrap();
    assert_eq!(seg.invalidate_stag(), None);
    let inv = Segment::send_invalidate(1, 0x1234_5678, b"p").to_vec();
    assert_eq!(&inv[..6], &[0x41, 0x44, 0x12, 0x34, 0x56, 0x78]);
    assert_eq!(parse_ulpdu(&inv).unwrap().invalidate_stag(), Some(0x1234_5678));
}

#[test]
fn rdmap_07_read_request_header_length() {
    let rr = ReadRequest { sink_stag: 1, sink_to: 2, size: u32::MAX, src_stag: 4, src_to: 5 };
    let wire = Segment::read_request(1, rr).to_vec();
    assert_eq!(wire.len(), 18 + 28);
    assert_eq!(parse_ulpdu(&wire).unwrap().header, RdmapHeader::ReadRequest(rr));
    for len in [17 + 28, 18 + 29] {
        let mut w = wire.clone();
        w.resize(len, 0);
        assert!(matches!(parse_ulpdu(&w), Err(RdmapError::Length { opcode: Opcode::ReadRequest, expected: 28, .. })));
    }
}

#[test]
fn rdmap_07_fixed_headers_single_segment() {
    let mut rr = Segment::read_request(1, ReadRequest::default());
    if let DdpHeader::Untagged(h) = &mut rr.ddp {
        h.mo = 4;
    }
    let err = parse_ulpdu(&rr.to_vec()).unwrap_err();
    assert_eq!(err, RdmapError::NotSingleSegment { opcode: Opcode::ReadRequest, last: true, mo: 4 });
    let mut ar = Segment::atomic_request(1, AtomicRequest::default());
    if let DdpHeader::Untagged(h) = &mut ar.ddp {
        h.last = false;
    }
    assert!(matches!(parse_ulpdu(&ar.to_vec()), Err(RdmapError::NotSingleSegment { .. })));
}

#[test]
fn rdmap_09_read_response_uses_sink_stag_to() {
    let seg = Segment::read_response(0x0001_0203, 0x4000, b"data");
    let wire = seg.to_vec();
    assert_eq!(&wire[..2], &[0xc1, 0x42]);
    let parsed = parse_ulpdu(&wire).unwrap();
    assert_eq!(
        parsed.ddp,
        DdpHeader::Tagged(TaggedHeader { last: true, ulp_ctrl: 0x42, stag: 0x0001_0203, to: 0x4000 })
    );
    assert_eq!(parsed.payload, b"data");
}

#[test]
fn atom_02_atomic_request_message() {
    let req = AtomicRequest::fetch_add(9, 0x1234_5678, 0x1000, 1, 0);
    let wire = Segment::atomic_request(2, req).to_vec();
    assert_eq!(wire.len(), 70);
    assert_eq!(&wire[..2], &[0x41, 0x4a]);
    assert_eq!(&wire[6..10], &1u32.to_be_bytes());
    let seg = parse_ulpdu(&wire).unwrap();
    assert_eq!(seg.header, RdmapHeader::AtomicRequest(req));
    assert!(seg.payload.is_empty());
}

#[test]
fn atom_03_reserved_bits_and_unused_fields_ignored() {
    // Reserved bits of the AOpCode word set: ignored.
    let req = AtomicRequest::fetch_add(1, 2, 0x1000, 5, 0);
    let mut wire = Segment::atomic_request(1, req).to_vec();
    wire[18] = 0xff;
    wire[19] = 0xff;
    wire[20] = 0xff;
    wire[21] = 0xf0; // AOpCode still 0
    let parsed = match parse_ulpdu(&wire).unwrap().header {
        RdmapHeader::AtomicRequest(r) => r,
        other => panic!("unexpected {other:?}"),
    };
    assert_eq!(parsed, req);
    // A FetchAdd ignores non-zero Compare Data / Compare Mask.
    let odd = AtomicRequest { compare: 0xdead, compare_mask: 0, ..req };
    assert_eq!(odd.apply(10), Ok(15));
}

#[test]
fn atom_04_aopcode_values() {
    for code in 0u8..16 {
        let req = AtomicRequest { aopcode: code, ..AtomicRequest::default() };
        let wire = Segment::atomic_request(1, req).to_vec();
        // Parsing keeps the raw code; the operation is rejected afterwards.
        let parsed = match parse_ulpdu(&wire).unwrap().header {
            RdmapHeader::AtomicRequest(r) => r,
            other => panic!("unexpected {other:?}"),
        };
        assert_eq!(parsed.aopcode, code);
        match code {
            0 => assert_eq!(parsed.op(), Ok(AtomicOp::FetchAdd)),
            2 => assert_eq!(parsed.op(), Ok(AtomicOp::CmpSwap)),
            _ => {
                let err = parsed.apply(0x1234).unwrap_err();
                assert_eq!(err, RdmapError::UnsupportedAOpCode(code));
                assert_eq!(err.term_code(), TermCode::RDMA_OP_UNEXPECTED_OPCODE);
            }
        }
    }
}

#[test]
fn atom_05_response_is_12_octets() {
    let resp = AtomicResponse { request_id: 0xabcd, original: 0x29 };
    let wire = Segment::atomic_response(1, resp).to_vec();
    assert_eq!(wire.len(), 30);
    assert_eq!(parse_ulpdu(&wire).unwrap().header, RdmapHeader::AtomicResponse(resp));
    for len in [32usize, 52, 29] {
        let mut w = wire.clone();
        w.resize(len, 0);
        assert!(matches!(
            parse_ulpdu(&w),
            Err(RdmapError::Length { opcode: Opcode::AtomicResponse, expected: 12, .. })
        ));
    }
}

#[test]
fn imm_01_message_format() {
    for (solicited, op) in [(false, 0x48u8), (true, 0x49)] {
        let wire = Segment::immediate(1, *b"12345678", solicited).to_vec();
        assert_eq!(wire.len(), 26);
        assert_eq!(&wire[..2], &[0x41, op]);
        assert_eq!(&wire[6..10], &0u32.to_be_bytes());
        let seg = parse_ulpdu(&wire).unwrap();
        assert_eq!(seg.header, RdmapHeader::ImmediateData(*b"12345678"));
        assert_eq!(seg.opcode.is_solicited(), solicited);
    }
}

#[test]
fn imm_03_exact_length_check() {
    for n in [0usize, 7, 9, 16] {
        let wire = untagged(0x41, 0x48, 0, 1, 0, &vec![0; n]);
        let err = parse_ulpdu(&wire).unwrap_err();
        assert_eq!(err, RdmapError::ImmediateDataLength { message_len: n as u64 });
        assert_eq!(err.term_code(), TermCode::RDMA_OP_UNSPECIFIED);
    }
}

#[test]
fn imm_03_two_segments_accepted() {
    let first = untagged(0x01, 0x48, 0, 1, 0, b"1234");
    let last = untagged(0x41, 0x48, 0, 1, 4, b"5678");
    for (w, mo) in [(&first, 0u32), (&last, 4)] {
        let seg = parse_ulpdu(w).unwrap();
        assert_eq!(seg.header, RdmapHeader::None);
        assert_eq!(seg.payload.len(), 4);
        assert!(matches!(seg.ddp, DdpHeader::Untagged(h) if h.mo == mo));
    }
    // A fragment that would take the message past 8 octets is refused.
    let too_far = untagged(0x01, 0x48, 0, 1, 4, b"56789");
    assert_eq!(parse_ulpdu(&too_far), Err(RdmapError::ImmediateDataLength { message_len: 9 }));
    // A last fragment that ends short of 8 is refused.
    let short = untagged(0x41, 0x48, 0, 1, 4, b"567");
    assert_eq!(parse_ulpdu(&short), Err(RdmapError::ImmediateDataLength { message_len: 7 }));
    assert_eq!(IMMEDIATE_DATA_LEN, 8);
}

#[test]
fn rdmap_truncated_ulpdus_are_errors() {
    let segments = [
        Segment::read_request(1, ReadRequest::default()).to_vec(),
        Segment::atomic_request(1, AtomicRequest::default()).to_vec(),
        Segment::atomic_response(1, AtomicResponse::default()).to_vec(),
        Segment::immediate(1, [0; 8], false).to_vec(),
        Segment::write(1, 2, b"abc").to_vec(),
        Segment::send(1, b"abc").to_vec(),
    ];
    for wire in segments {
        for n in 0..wire.len() {
            let _ = parse_ulpdu(&wire[..n]);
        }
        assert!(parse_ulpdu(&wire).is_ok());
    }
}
