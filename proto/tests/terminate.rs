//! Terminate header conformance (CHECKLIST §0.3, RDMAP-13 … RDMAP-15).

mod common;
use common::send_header;
use rnic_proto::ddp::{DdpHeader, TaggedHeader, UntaggedHeader};
use rnic_proto::rdmap::{parse_ulpdu, RdmapError, RdmapHeader, ReadRequest, Segment};
use rnic_proto::terminate::{TermCode, Terminate, TerminatedDdpHeader};

fn tagged_hdr() -> TerminatedDdpHeader {
    TerminatedDdpHeader::from_header(&DdpHeader::Tagged(TaggedHeader {
        last: true,
        ulp_ctrl: 0x40,
        stag: 0xdead_beef,
        to: 0x10,
    }))
}

fn untagged_hdr() -> TerminatedDdpHeader {
    TerminatedDdpHeader::from_header(&DdpHeader::Untagged(UntaggedHeader {
        last: true,
        ulp_ctrl: 0x41,
        inv_stag: 0,
        qn: 1,
        msn: 7,
        mo: 0,
    }))
}

/// CHECKLIST §0.3: every named triplet and the control words the table gives.
#[test]
fn rdmap_13_terminate_code_table() {
    // (code, M, D, R, control word)
    let rows: [(TermCode, bool, bool, bool, u32); 33] = [
        (TermCode::new(0, 0, 0xcc), false, false, false, 0x00cc_0000),
        (TermCode::RDMA_PROT_INVALID_STAG, true, true, true, 0x0100_e000),
        (TermCode::RDMA_PROT_INVALID_STAG, true, true, false, 0x0100_c000),
        (TermCode::RDMA_PROT_BASE_BOUNDS, true, true, true, 0x0101_e000),
        (TermCode::RDMA_PROT_ACCESS_RIGHTS, true, true, true, 0x0102_e000),
        (TermCode::RDMA_PROT_STAG_NOT_ASSOCIATED, true, true, true, 0x0103_e000),
        (TermCode::RDMA_PROT_TO_WRAP, true, true, true, 0x0104_e000),
        (TermCode::RDMA_PROT_CANNOT_INVALIDATE, true, true, false, 0x0109_c000),
        (TermCode::RDMA_PROT_UNSPECIFIED, true, true, true, 0x01ff_e000),
        (TermCode::RDMA_OP_INVALID_VERSION, true, true, false, 0x0205_c000),
        (TermCode::RDMA_OP_UNEXPECTED_OPCODE, true, true, false, 0x0206_c000),
        (TermCode::RDMA_OP_CATASTROPHIC_STREAM, true, true, false, 0x0207_c000),
        (TermCode::RDMA_OP_CATASTROPHIC_GLOBAL, true, true, false, 0x0208_c000),
        (TermCode::RDMA_OP_CANNOT_INVALIDATE, true, true, false, 0x0209_c000),
        (TermCode::RDMA_OP_UNSPECIFIED, true, true, false, 0x02ff_c000),
        (TermCode::DDP_LOCAL_CATASTROPHIC, false, false, false, 0x1000_0000),
        (TermCode::DDP_TAGGED_INVALID_STAG, true, true, false, 0x1100_c000),
        (TermCode::DDP_TAGGED_BASE_BOUNDS, true, true, false, 0x1101_c000),
        (TermCode::DDP_TAGGED_STAG_NOT_ASSOCIATED, true, true, false, 0x1102_c000),
        (TermCode::DDP_TAGGED_TO_WRAP, true, true, false, 0x1103_c000),
        (TermCode::DDP_TAGGED_INVALID_VERSION, true, true, false, 0x1104_c000),
        (TermCode::DDP_UNTAGGED_INVALID_QN, true, true, false, 0x1201_c000),
        (TermCode::DDP_UNTAGGED_NO_BUFFER, true, true, false, 0x1202_c000),
        (TermCode::DDP_UNTAGGED_MSN_RANGE, true, true, false, 0x1203_c000),
        (TermCode::DDP_UNTAGGED_INVALID_MO, true, true, false, 0x1204_c000),
        (TermCode::DDP_UNTAGGED_TOO_LONG, true, true, false, 0x1205_c000),
        (TermCode::DDP_UNTAGGED_INVALID_VERSION, true, true, false, 0x1206_c000),
        (TermCode::MPA_CONNECTION_LOST, false, false, false, 0x2001_0000),
        (TermCode::MPA_CRC, false, false, false, 0x2002_0000),
        (TermCode::MPA_MARKER, false, false, false, 0x2003_0000),
        (TermCode::MPA_LOCAL_CATASTROPHIC, false, false, false, 0x2005_0000),
        (TermCode::MPA_INSUFFICIENT_IRD, false, false, false, 0x2006_0000),
        (TermCode::MPA_NO_MATCHING_RTR, false, false, false, 0x2007_0000),
    ];
    for (code, m, d, r, word) in rows {
        assert_eq!(code.control_word(m, d, r), word, "{code}");
        assert_eq!(TermCode::from_control_word(word), (code, m, d, r));
        assert!(code.is_known(), "{code}");
    }
    assert_eq!(TermCode::MPA_INVALID_FRAME, TermCode::new(2, 0, 4));
    assert_eq!(TermCode::ALL.len(), 33);
    assert_eq!(TermCode::DDP_UNTAGGED_TOO_LONG.to_string(), "1/2/0x05");
}

/// RDMAP-13: every combination of M, D (tagged / untagged) and R.
#[test]
fn rdmap_13_terminate_layouts() {
    let rr = ReadRequest { sink_stag: 1, sink_to: 2, size: 3, src_stag: 4, src_to: 5 };
    let ddp_choices = [None, Some(tagged_hdr()), Some(untagged_hdr())];
    for m in [false, true] {
        for ddp in ddp_choices {
            for rdma in [None, Some(rr)] {
                let t = Terminate {
                    code: TermCode::RDMA_PROT_INVALID_STAG,
                    m,
                    segment_length: if m || ddp.is_some() { 0x1234 } else { 0 },
                    ddp_header: ddp,
                    rdma_header: rdma,
                };
                let wire = t.to_vec();
                let expected_len = 4
                    + if m || ddp.is_some() { 2 } else { 0 }
                    + ddp.map_or(0, |h| h.as_bytes().len())
                    + if rdma.is_some() { 28 } else { 0 };
                assert_eq!(wire.len(), expected_len);
                assert_eq!(t.encoded_len(), expected_len);
                let word = u32::from_be_bytes([wire[0], wire[1], wire[2], wire[3]]);
                assert_eq!(word & 0x8000 != 0, m);
                assert_eq!(word & 0x4000 != 0, ddp.is_some());
                assert_eq!(word & 0x2000 != 0, rdma.is_some());
                assert_eq!(word & 0x1fff, 0);
                assert_eq!(Terminate::parse_prefix(&wire), Ok((t, expected_len)));
                // As a whole Terminate message on QN 2.
                let seg = Segment::terminate(1, t);
                let ulpdu = seg.to_vec();
                assert_eq!(&ulpdu[..2], &[0x41, 0x47]);
                assert_eq!(&ulpdu[6..14], &[0, 0, 0, 2, 0, 0, 0, 1]);
                assert_eq!(parse_ulpdu(&ulpdu), Ok(seg));
            }
        }
    }
    assert_eq!(Terminate::MAX_LEN, 4 + 2 + 18 + 28);
}

/// RDMAP-14: reserved bits ignored, any segment length accepted, unknown
/// codes preserved, Local Catastrophic with any code, truncation an error.
#[test]
fn rdmap_14_terminate_liberal_parsing() {
    // Reserved 13 bits set.
    let t = Terminate::parse(&[0x11, 0x00, 0x1f, 0xff]).unwrap();
    assert_eq!(t, Terminate::new(TermCode::DDP_TAGGED_INVALID_STAG));
    // M=1, D=0: a segment length in either convention, or 0.
    for len in [0u16, 64, 78] {
        let mut w = TermCode::DDP_TAGGED_INVALID_STAG.control_word(true, false, false).to_be_bytes().to_vec();
        w.extend_from_slice(&len.to_be_bytes());
        let t = Terminate::parse(&w).unwrap();
        assert!(t.m && t.ddp_header.is_none());
        assert_eq!(t.segment_length, len);
    }
    // Unknown layer/type/code survive.
    let t = Terminate::parse(&[0x7e, 0x42, 0x00, 0x00]).unwrap();
    assert_eq!(t.code, TermCode::new(7, 0xe, 0x42));
    assert_eq!(t.code.name(), None);
    // Local Catastrophic accepts any code value.
    for code in [0u8, 0x01, 0xcc, 0xff] {
        assert_eq!(TermCode::new(0, 0, code).name(), Some("RDMA Local Catastrophic Error"));
    }
    // The terminated DDP header is kept even when it is itself malformed.
    let mut bad = send_header(3);
    bad[0] = 0x42; // DV = 2
    let mut w = TermCode::DDP_UNTAGGED_INVALID_VERSION.control_word(true, true, false).to_be_bytes().to_vec();
    w.extend_from_slice(&18u16.to_be_bytes());
    w.extend_from_slice(&bad);
    let t = Terminate::parse(&w).unwrap();
    let h = t.ddp_header.unwrap();
    assert_eq!(h.as_bytes(), &bad[..]);
    assert!(h.parse().is_err());
    // Truncated anywhere: an error, never a panic.
    let full = Terminate::new(TermCode::RDMA_PROT_INVALID_STAG)
        .with_ddp(46, untagged_hdr())
        .with_rdma(ReadRequest::default())
        .to_vec();
    for n in 0..full.len() {
        assert!(matches!(Terminate::parse(&full[..n]), Err(RdmapError::Truncated { .. })), "{n}");
    }
    // Octets after the header are left as the segment's payload.
    let mut seg = Segment::terminate(1, Terminate::new(TermCode::MPA_CRC)).to_vec();
    seg.extend_from_slice(b"xx");
    let parsed = parse_ulpdu(&seg).unwrap();
    assert_eq!(parsed.header, RdmapHeader::Terminate(Terminate::new(TermCode::MPA_CRC)));
    assert_eq!(parsed.payload, b"xx");
}

/// RDMAP-15: a Read Request failed after 2048 octets reports the remainder.
#[test]
fn rdmap_15_partial_read_request_update() {
    let rr = ReadRequest { sink_stag: 1, sink_to: 0x4000, size: 4096, src_stag: 2, src_to: 0x10000 };
    let upd = rr.advanced(2048);
    assert_eq!(upd, ReadRequest { sink_stag: 1, sink_to: 0x4800, size: 2048, src_stag: 2, src_to: 0x10800 });
    let t = Terminate::new(TermCode::RDMA_PROT_INVALID_STAG).with_ddp(46, untagged_hdr()).with_rdma(upd);
    assert_eq!(Terminate::parse(&t.to_vec()).unwrap().rdma_header, Some(upd));
}

#[test]
fn terminated_ddp_header_from_segment() {
    let write = Segment::write(0xdead_beef, 0x10, b"payload").to_vec();
    assert_eq!(TerminatedDdpHeader::from_segment(&write), Some(tagged_hdr()));
    assert_eq!(TerminatedDdpHeader::from_segment(&write[..13]), None);
    assert_eq!(TerminatedDdpHeader::from_segment(&[]), None);
}
