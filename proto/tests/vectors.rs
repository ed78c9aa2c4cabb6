//! Byte-exact reproduction of VECTORS.md V1–V14, encoded and parsed back.
//! The hex literals are copied from VECTORS.md.

mod common;
use common::{drain, hex, send_ulpdu};
use rnic_proto::cm::{FrameKind, IrdOrd, MpaFrame};
use rnic_proto::ddp::{DdpHeader, TaggedHeader, UntaggedHeader};
use rnic_proto::mpa::{build_fpdu, crc32c, crc_field, Deframer, Framer, FramingConfig};
use rnic_proto::rdmap::{parse_ulpdu, AtomicRequest, AtomicResponse, Opcode, RdmapHeader, ReadRequest, Segment};
use rnic_proto::terminate::{TermCode, Terminate, TerminatedDdpHeader};
use rnic_proto::{masked_cmp_swap, masked_fetch_add, masked_fetch_add_bit_serial};

/// Checks an FPDU (no markers, CRC on) in both directions: `seg` encodes to
/// the ULPDU inside `wire`, framing gives `wire`, and deframing + parsing
/// gives `seg` back.
fn fpdu_round_trip(wire: &[u8], seg: &Segment<'_>) {
    let ulpdu = seg.to_vec();
    assert_eq!(build_fpdu(&ulpdu), wire, "encode");
    let mut d = Deframer::new(FramingConfig::CRC_ONLY);
    d.push(wire);
    let got = drain(&mut d);
    assert_eq!(got.len(), 1);
    let got = got[0].clone().expect("valid FPDU");
    assert_eq!(got, ulpdu);
    assert_eq!(parse_ulpdu(&got).expect("valid ULPDU"), *seg, "parse");
}

// ---------------------------------------------------------------- V1

/// V1, MPA-07 / MPA-09: CRC32c known answers (RFC 3720 B.4) and wire order.
#[test]
fn v1_mpa_07_crc32c_known_answers() {
    let inc: Vec<u8> = (0u8..32).collect();
    let dec: Vec<u8> = (0u8..32).rev().collect();
    let iscsi = hex("01c00000000000000000000000000000 14000000000004000000001400000018
         28000000000000000200000000000000");
    let rows: [(&[u8], u32, &str); 6] = [
        (&[0u8; 32], 0x8a9136aa, "aa 36 91 8a"),
        (&[0xffu8; 32], 0x62a8ab43, "43 ab a8 62"),
        (&inc, 0x46dd794e, "4e 79 dd 46"),
        (&dec, 0x113fdb5c, "5c db 3f 11"),
        (&iscsi, 0xd9963a56, "56 3a 96 d9"),
        (b"123456789", 0xe3069283, "83 92 06 e3"),
    ];
    for (data, value, wire) in rows {
        assert_eq!(crc32c(data), value);
        assert_eq!(crc_field(value).to_vec(), hex(wire));
    }
}

// ---------------------------------------------------------------- V2

const V2_FIG5: &str = "
    00 00 00 00 00 2a 41 43 00 00 00 00 00 00 00 00
    00 00 00 01 00 00 00 00 00 00 00 00 00 00 00 00
    00 00 00 00 00 00 00 00 00 00 00 00 00 00 00 00
    52 23 99 83";

const V2_FIG6: &str = "
    00 2a 41 43 00 00 00 00 00 00 00 00 00 00 00 02
    00 00 00 00 00 00 00 14 00 00 00 00 00 00 00 00
    00 00 00 00 00 00 00 00 00 00 00 00 00 00 00 00
    84 92 58 98";

/// V2, MPA-06 / MPA-11: RFC 5044 Fig. 5, first FPDU with the leading marker.
#[test]
fn v2_mpa_06_rfc5044_figure5_framer() {
    let mut f = Framer::new(FramingConfig::MARKERS_AND_CRC);
    let mut out = Vec::new();
    f.frame(&send_ulpdu(1, 24), &mut out).unwrap();
    assert_eq!(out, hex(V2_FIG5));
    assert_eq!(f.position(), 52);
}

/// V2, MPA-02 / MPA-06 / MPA-12: RFC 5044 Fig. 6, the second FPDU at 0x1EC
/// with an embedded marker at 0x200 (FPDUPTR 0x0014).
#[test]
fn v2_mpa_12_rfc5044_figure6_framer() {
    let mut f = Framer::new(FramingConfig::MARKERS_AND_CRC);
    let mut stream = Vec::new();
    f.frame(&send_ulpdu(1, 464), &mut stream).unwrap();
    assert_eq!(stream.len(), 0x1ec, "first FPDU is 492 octets incl. its marker");
    f.frame(&send_ulpdu(2, 24), &mut stream).unwrap();
    assert_eq!(&stream[0x1ec..], &hex(V2_FIG6)[..]);
    assert_eq!(&stream[0x200..0x204], &[0, 0, 0x00, 0x14]);
    assert_eq!(&stream[stream.len() - 4..], &[0x84, 0x92, 0x58, 0x98]);
    // ULPDU_Length excludes the marker (MPA-02).
    assert_eq!(&stream[0x1ec..0x1ee], &[0x00, 0x2a]);
}

/// V2 via the Deframer: both figures are accepted and give the ULPDUs back.
#[test]
fn v2_mpa_16_rfc5044_figures_deframer() {
    let mut d = Deframer::new(FramingConfig::MARKERS_AND_CRC);
    d.push(&hex(V2_FIG5));
    assert_eq!(drain(&mut d), vec![Ok(send_ulpdu(1, 24))]);

    let mut f = Framer::new(FramingConfig::MARKERS_AND_CRC);
    let mut first = Vec::new();
    f.frame(&send_ulpdu(1, 464), &mut first).unwrap();
    let mut d = Deframer::new(FramingConfig::MARKERS_AND_CRC);
    d.push(&first);
    d.push(&hex(V2_FIG6));
    assert_eq!(drain(&mut d), vec![Ok(send_ulpdu(1, 464)), Ok(send_ulpdu(2, 24))]);
    for r in [send_ulpdu(1, 464), send_ulpdu(2, 24)] {
        assert_eq!(parse_ulpdu(&r).unwrap().opcode, Opcode::Send);
    }
}

// ---------------------------------------------------------------- V3

const V3: &str = "001741430000000000000000000000010000000048656c6c6f00000020f5b101";
const V3_MARKERS: &str = "
    00 00 00 00 00 17 41 43 00 00 00 00 00 00 00 00
    00 00 00 01 00 00 00 00 48 65 6c 6c 6f 00 00 00
    e3 04 e9 7c";

/// V3, MPA-01 / MPA-03: Send "Hello", 3 PAD octets, no markers.
#[test]
fn v3_mpa_01_small_send() {
    fpdu_round_trip(&hex(V3), &Segment::send(1, b"Hello"));
}

/// V3 as the first FPDU with markers: a leading zero marker covered by the CRC (MPA-22).
#[test]
fn v3_mpa_22_small_send_with_leading_marker() {
    let ulpdu = Segment::send(1, b"Hello").to_vec();
    let mut f = Framer::new(FramingConfig::MARKERS_AND_CRC);
    let mut out = Vec::new();
    f.frame(&ulpdu, &mut out).unwrap();
    assert_eq!(out, hex(V3_MARKERS));
    let mut d = Deframer::new(FramingConfig::MARKERS_AND_CRC);
    d.push(&out);
    assert_eq!(drain(&mut d), vec![Ok(ulpdu)]);
}

// ---------------------------------------------------------------- V4–V8

/// V4, RDMAP-07: RDMA Read Request (QN 1, MSN 1).
#[test]
fn v4_rdmap_07_read_request() {
    let rr =
        ReadRequest { sink_stag: 0x0001_0203, sink_to: 0x4000, size: 4096, src_stag: 0x0a0b_0c0d, src_to: 0x10000 };
    fpdu_round_trip(
        &hex(
            "002e414100000000000000010000000100000000000102030000000000004000000010000a0b0c0d000000000001000019760a62",
        ),
        &Segment::read_request(1, rr),
    );
}

/// V5, ATOM-02 / ATOM-03: Atomic Request FetchAdd (QN 1, MSN 2).
#[test]
fn v5_atom_02_atomic_request_fetch_add() {
    let req = AtomicRequest::fetch_add(1, 0x1234_5678, 0x1000, 1, 0);
    fpdu_round_trip(
        &hex("0046414a000000000000000100000002000000000000000000000001123456780000000000001000000000000000000100000000000000000000000000000000ffffffffffffffff87bacb87"),
        &Segment::atomic_request(2, req),
    );
}

/// V6, ATOM-03 / ATOM-10: Atomic Request masked CmpSwap (QN 1, MSN 3).
#[test]
fn v6_atom_03_atomic_request_cmp_swap() {
    let req = AtomicRequest::cmp_swap(
        2,
        0x1234_5678,
        0x2008,
        0x1234_5678_1234_5678,
        0x0000_0000_ffff_ffff,
        0xaaaa_0000_ffff_ffff,
        0xffff_ffff_0000_0000,
    );
    fpdu_round_trip(
        &hex("0046414a000000000000000100000003000000000000000200000002123456780000000000002008123456781234567800000000ffffffffaaaa0000ffffffffffffffff00000000332d92ae"),
        &Segment::atomic_request(3, req),
    );
    assert_eq!(req.apply(0xaaaa_0000_bbbb_0000), Ok(0xaaaa_0000_1234_5678));
}

/// V7, ATOM-05: Atomic Response (QN 3, MSN 1), a 12-octet header.
#[test]
fn v7_atom_05_atomic_response() {
    let resp = AtomicResponse { request_id: 1, original: 0x29 };
    let wire = hex("001e414b00000000000000030000000100000000000000010000000000000029ebf3f1db");
    fpdu_round_trip(&wire, &Segment::atomic_response(1, resp));
    assert_eq!(&wire[..2], &[0x00, 0x1e]);
    // The responder's memory after V5 applied to 0x29.
    assert_eq!(masked_fetch_add(0x29, 1, 0), 0x2a);
}

/// V8, IMM-01: Immediate Data and Immediate Data with SE.
#[test]
fn v8_imm_01_immediate_data() {
    let data = [1, 2, 3, 4, 5, 6, 7, 8];
    fpdu_round_trip(
        &hex("001a4148000000000000000000000002000000000102030405060708a98a5e54"),
        &Segment::immediate(2, data, false),
    );
    fpdu_round_trip(
        &hex("001a41490000000000000000000000030000000001020304050607085179b84a"),
        &Segment::immediate(3, data, true),
    );
}

// ---------------------------------------------------------------- V9–V11

/// V9, RDMAP-13 / DDP-12: Terminate 1/1/0x00 for an RDMA Write, M=D=1.
#[test]
fn v9_rdmap_13_terminate_ddp_invalid_stag() {
    let bad = TaggedHeader { last: true, ulp_ctrl: 0x40, stag: 0xdead_beef, to: 0 };
    let t = Terminate::new(TermCode::DDP_TAGGED_INVALID_STAG).with_ddp(78, TerminatedDdpHeader::Tagged(bad.to_bytes()));
    assert_eq!(t.control_word(), 0x1100_c000);
    fpdu_round_trip(
        &hex("00264147000000000000000200000001000000001100c000004ec140deadbeef000000000000000021c9e749"),
        &Segment::terminate(1, t),
    );
}

/// V10, ATOM-07 / RDMAP-13: Terminate 0/2/0x07 for a misaligned Atomic Request.
#[test]
fn v10_atom_07_terminate_misaligned_atomic() {
    let mis = UntaggedHeader { last: true, ulp_ctrl: 0x4a, inv_stag: 0, qn: 1, msn: 4, mo: 0 };
    let t = Terminate::new(TermCode::RDMA_OP_CATASTROPHIC_STREAM)
        .with_ddp(70, TerminatedDdpHeader::Untagged(mis.to_bytes()));
    assert_eq!(t.control_word(), 0x0207_c000);
    fpdu_round_trip(
        &hex("002a4147000000000000000200000001000000000207c0000046414a000000000000000100000004000000009a790102"),
        &Segment::terminate(1, t),
    );
}

/// V11, RDMAP-08 / RDMAP-13: Terminate 0/1/0x00 for a Read Request, M=D=R=1.
#[test]
fn v11_rdmap_13_terminate_read_request() {
    let rr_ddp = UntaggedHeader { last: true, ulp_ctrl: 0x41, inv_stag: 0, qn: 1, msn: 1, mo: 0 };
    let rr =
        ReadRequest { sink_stag: 0x0001_0203, sink_to: 0x4000, size: 4096, src_stag: 0x0bad_beef, src_to: 0x10000 };
    let t = Terminate::new(TermCode::RDMA_PROT_INVALID_STAG)
        .with_ddp(46, TerminatedDdpHeader::from_header(&DdpHeader::Untagged(rr_ddp)))
        .with_rdma(rr);
    assert_eq!(t.control_word(), 0x0100_e000);
    fpdu_round_trip(
        &hex("00464147000000000000000200000001000000000100e000002e414100000000000000010000000100000000000102030000000000004000000010000badbeef0000000000010000ce43db61"),
        &Segment::terminate(1, t),
    );
}

// ---------------------------------------------------------------- V12

/// V12, MPA-17 / MPA-21 / MPA2-01: the six MPA Request/Reply frames.
#[test]
fn v12_mpa_17_request_reply_frames() {
    let p2p = IrdOrd { peer_to_peer: true, ird: 16, read_rtr: true, ord: 16, ..IrdOrd::default() };
    let rows: [(MpaFrame, &str); 6] = [
        (MpaFrame::new(FrameKind::Request), "4d504120494420526571204672616d65 40 01 0000"),
        (MpaFrame::new(FrameKind::Reply), "4d504120494420526570204672616d65 40 01 0000"),
        (
            MpaFrame { reject: true, private_data: b"no".to_vec(), ..MpaFrame::new(FrameKind::Reply) },
            "4d504120494420526570204672616d65 60 01 0002 6e6f",
        ),
        (MpaFrame::new(FrameKind::Request).enhanced(p2p), "4d504120494420526571204672616d65 50 02 0004 80104010"),
        (MpaFrame::new(FrameKind::Reply).enhanced(p2p), "4d504120494420526570204672616d65 50 02 0004 80104010"),
        (
            MpaFrame::new(FrameKind::Request).enhanced(IrdOrd::new(0x3fff, 0x3fff)),
            "4d504120494420526571204672616d65 50 02 0004 3fff3fff",
        ),
    ];
    for (frame, wire) in rows {
        let wire = hex(wire);
        assert_eq!(frame.encode().unwrap(), wire);
        assert_eq!(MpaFrame::decode(&wire), Ok((frame, wire.len())));
    }
}

// ---------------------------------------------------------------- V13–V14

/// V13, ATOM-09: masked FetchAdd truth table (every row).
#[test]
fn v13_atom_09_masked_fetch_add_table() {
    let rows: [(u64, u64, u64, u64); 11] = [
        (0x00000000000000ff, 0x0000000000000001, 0x0000000000000000, 0x0000000000000100),
        (0xffffffffffffffff, 0x0000000000000001, 0x0000000000000000, 0x0000000000000000),
        (0xffffffffffffffff, 0x0000000000000001, 0x8000000000000000, 0x0000000000000000),
        (0x00000001ffffffff, 0x0000000000000001, 0x8000000080000000, 0x0000000100000000),
        (0x00000001ffffffff, 0x0000000000000001, 0x0000000000000000, 0x0000000200000000),
        (0x0001ffff7fff8000, 0x0001000100010001, 0x8000800080008000, 0x0002000080008001),
        (0x00ff7f80fe01ffff, 0x0101010101010101, 0x8080808080808080, 0x01008081ff020000),
        (0x00000000000000ff, 0x0000000000000001, 0x0000000000000080, 0x0000000000000000),
        (0x0000000000000001, 0x0000000000000001, 0x0000000000000001, 0x0000000000000000),
        (0xf0f0f0f0f0f0f0f0, 0xffff0000ffff0000, 0xffffffffffffffff, 0x0f0ff0f00f0ff0f0),
        (0x0123456789abcdef, 0x0000000000000000, 0x0000000000000000, 0x0123456789abcdef),
    ];
    for (o, a, m, r) in rows {
        assert_eq!(masked_fetch_add(o, a, m), r, "fast {o:#x} {a:#x} {m:#x}");
        assert_eq!(masked_fetch_add_bit_serial(o, a, m), r, "serial {o:#x} {a:#x} {m:#x}");
        let req = AtomicRequest::fetch_add(0, 0, 0, a, m);
        assert_eq!(req.apply(o), Ok(r));
    }
}

/// V14, ATOM-10: masked CmpSwap truth table (every row).
#[test]
fn v14_atom_10_masked_cmp_swap_table() {
    // (original, swap, swap mask, compare, compare mask, memory after)
    let rows: [(u64, u64, u64, u64, u64, u64); 7] = [
        (0x1111, 0x2222, u64::MAX, 0x1111, u64::MAX, 0x2222),
        (0x1111, 0x2222, u64::MAX, 0x1112, u64::MAX, 0x1111),
        (
            0xaaaa0000bbbb0000,
            0x1234567812345678,
            0x00000000ffffffff,
            0xaaaa0000ffffffff,
            0xffffffff00000000,
            0xaaaa000012345678,
        ),
        (0xdeadbeef00000000, 0xffff, 0xffff, 0, 0, 0xdeadbeef0000ffff),
        (0x5555, 0xaaaa, 0, 0x5555, u64::MAX, 0x5555),
        (0xf0, 1, 1, 0, 1, 0xf1),
        (0xf1, 1, 1, 0, 1, 0xf1),
    ];
    for (o, s, sm, c, cm, after) in rows {
        assert_eq!(masked_cmp_swap(o, s, sm, c, cm), after);
        let req = AtomicRequest::cmp_swap(0, 0, 0, s, sm, c, cm);
        assert_eq!(req.apply(o), Ok(after));
        // The response always returns the original value.
        let resp = AtomicResponse { request_id: 0, original: o };
        let seg = Segment::atomic_response(1, resp).to_vec();
        assert_eq!(parse_ulpdu(&seg).unwrap().header, RdmapHeader::AtomicResponse(resp));
    }
}
