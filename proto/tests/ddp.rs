//! DDP header conformance (CHECKLIST DDP-01 … DDP-11).

mod common;
use common::{hex, send_ulpdu};
use rnic_proto::ddp::{ddp_ctrl, DdpError, DdpHeader, TaggedHeader, UntaggedHeader};
use rnic_proto::rdmap::{parse_ulpdu, Opcode, RdmapError, RdmapHeader, Segment};
use rnic_proto::terminate::TermCode;

#[test]
fn ddp_01_control_field() {
    assert_eq!(Segment::send(1, b"").to_vec()[0], 0x41);
    assert_eq!(Segment::write(1, 0, b"").to_vec()[0], 0xc1);
    // Rsvd = 1111b is accepted, in both models.
    let mut send = send_ulpdu(1, 4);
    send[0] = 0x41 | 0x3c;
    let seg = parse_ulpdu(&send).unwrap();
    assert_eq!(seg.opcode, Opcode::Send);
    assert!(seg.ddp.last());
    let mut write = Segment::write(7, 8, b"data").to_vec();
    write[0] = 0xc1 | 0x3c;
    assert_eq!(parse_ulpdu(&write).unwrap(), Segment::write(7, 8, b"data"));
}

#[test]
fn ddp_02_invalid_version() {
    let mut send = send_ulpdu(1, 4);
    for dv in [0u8, 2, 3] {
        send[0] = 0x40 | dv;
        let err = parse_ulpdu(&send).unwrap_err();
        assert_eq!(err, RdmapError::Ddp(DdpError::Version { dv, tagged: false }));
        assert_eq!(err.term_code(), TermCode::DDP_UNTAGGED_INVALID_VERSION);
    }
    assert_eq!(TermCode::DDP_UNTAGGED_INVALID_VERSION.control_word(true, true, false), 0x1206_c000);
    let mut write = Segment::write(1, 0, b"x").to_vec();
    write[0] = 0xc2;
    let err = DdpHeader::parse(&write).unwrap_err();
    assert_eq!(err, DdpError::Version { dv: 2, tagged: true });
    assert_eq!(err.term_code(), TermCode::DDP_TAGGED_INVALID_VERSION);
    assert_eq!(err.term_code().control_word(true, true, false), 0x1104_c000);
}

#[test]
fn ddp_03_last_flag() {
    assert_eq!(ddp_ctrl(false, false), 0x01);
    assert_eq!(ddp_ctrl(true, false), 0x81);
    let first = Segment::untagged(Opcode::Send, false, 0, 1, 0, RdmapHeader::None, &[0; 1482]);
    let last = Segment::untagged(Opcode::Send, true, 0, 1, 1482, RdmapHeader::None, &[0; 566]);
    let a = first.to_vec();
    let b = last.to_vec();
    assert_eq!(&a[..2], &[0x01, 0x43]);
    assert_eq!(&b[..2], &[0x41, 0x43]);
    assert_eq!(parse_ulpdu(&a).unwrap(), first);
    assert_eq!(parse_ulpdu(&b).unwrap(), last);
}

#[test]
fn ddp_04_tagged_header() {
    let seg = Segment::tagged(Opcode::RdmaWrite, false, 0x1234_5678, 16384, &[0xaa; 1486]);
    let wire = seg.to_vec();
    assert_eq!(&wire[..14], &hex("81 40 12345678 0000000000004000")[..]);
    assert_eq!(wire.len(), 14 + 1486);
    let next = Segment::tagged(Opcode::RdmaWrite, true, 0x1234_5678, 17870, &[0xaa; 562]);
    let parsed = parse_ulpdu(&next.to_vec()).unwrap().ddp;
    assert_eq!(parsed, DdpHeader::Tagged(TaggedHeader { last: true, ulp_ctrl: 0x40, stag: 0x1234_5678, to: 17870 }));
}

#[test]
fn ddp_05_untagged_header() {
    let v3_ulpdu = hex("41430000000000000000000000010000000048656c6c6f");
    let h = DdpHeader::parse(&v3_ulpdu).unwrap();
    let expected = UntaggedHeader { last: true, ulp_ctrl: 0x43, inv_stag: 0, qn: 0, msn: 1, mo: 0 };
    assert_eq!(h, DdpHeader::Untagged(expected));
    assert_eq!(h.len(), 18);
    assert_eq!(expected.to_bytes().to_vec(), v3_ulpdu[..18].to_vec());
    let all = UntaggedHeader {
        last: false,
        ulp_ctrl: 0xff,
        inv_stag: 0x0102_0304,
        qn: 0x0506_0708,
        msn: 0x090a_0b0c,
        mo: 0x0d0e_0f10,
    };
    assert_eq!(all.to_bytes().to_vec(), hex("01 ff 01020304 05060708 090a0b0c 0d0e0f10"));
    assert_eq!(UntaggedHeader::from_bytes(&all.to_bytes()), all);
}

#[test]
fn ddp_06_msn_wraps() {
    for msn in [0xffff_fffe, 0xffff_ffff, 0] {
        let seg = Segment::send(msn, b"abc");
        assert_eq!(parse_ulpdu(&seg.to_vec()).unwrap(), seg);
    }
}

#[test]
fn ddp_09_zero_length_tagged_fields_not_checked() {
    let seg = Segment::write(0xffff_ffff, u64::MAX, &[]);
    let wire = seg.to_vec();
    assert_eq!(wire.len(), 14);
    assert_eq!(parse_ulpdu(&wire).unwrap(), seg);
    let zero_send = Segment::send(1, &[]);
    assert_eq!(parse_ulpdu(&zero_send.to_vec()).unwrap().payload.len(), 0);
}

#[test]
fn ddp_11_invalid_qn() {
    let mut send = send_ulpdu(1, 8);
    send[6..10].copy_from_slice(&5u32.to_be_bytes());
    let err = parse_ulpdu(&send).unwrap_err();
    assert_eq!(err, RdmapError::InvalidQn(5));
    assert_eq!(err.term_code().control_word(true, true, false), 0x1201_c000);
}

#[test]
fn ddp_truncated_headers() {
    assert_eq!(DdpHeader::parse(&[]), Err(DdpError::Truncated { needed: 14, got: 0 }));
    let send = send_ulpdu(1, 0);
    for n in 1..18 {
        assert_eq!(DdpHeader::parse(&send[..n]), Err(DdpError::Truncated { needed: 18, got: n }));
    }
    let write = Segment::write(1, 2, &[]).to_vec();
    for n in 1..14 {
        assert_eq!(DdpHeader::parse(&write[..n]), Err(DdpError::Truncated { needed: 14, got: n }));
    }
}
