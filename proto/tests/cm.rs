//! MPA Request/Reply frame conformance (CHECKLIST MPA-04, -05, -14, -17 … -21,
//! MPA2-01 … MPA2-08).

mod common;
use common::hex;
use rnic_proto::cm::{negotiate_framing, CmError, FrameKind, IrdOrd, MpaFrame, KEY_REP, KEY_REQ, MAX_PRIVATE_DATA};
use rnic_proto::mpa::FramingConfig;

const REQ_V1: &str = "4d504120494420526571204672616d65 40 01 0000";

fn frame_with(flags: u8, rev: u8, pd: &[u8]) -> Vec<u8> {
    let mut v = KEY_REQ.to_vec();
    v.push(flags);
    v.push(rev);
    v.extend_from_slice(&(pd.len() as u16).to_be_bytes());
    v.extend_from_slice(pd);
    v
}

#[test]
fn mpa_04_default_frame_requests_crc() {
    for kind in [FrameKind::Request, FrameKind::Reply] {
        let f = MpaFrame::new(kind);
        assert!(f.crc);
        assert_eq!(f.encode().unwrap()[16] & 0x40, 0x40);
    }
}

#[test]
fn mpa_05_crc_negotiation() {
    let req = MpaFrame { crc: false, ..MpaFrame::new(FrameKind::Request) };
    let rep = MpaFrame::new(FrameKind::Reply);
    let n = negotiate_framing(&req, &rep);
    assert!(n.initiator_to_responder.crc && n.responder_to_initiator.crc);
    let rep_off = MpaFrame { crc: false, ..rep };
    let n = negotiate_framing(&req, &rep_off);
    assert!(!n.initiator_to_responder.crc && !n.responder_to_initiator.crc);
}

#[test]
fn mpa_14_markers_per_direction() {
    let req = MpaFrame { markers: true, ..MpaFrame::new(FrameKind::Request) };
    let rep = MpaFrame::new(FrameKind::Reply);
    let n = negotiate_framing(&req, &rep);
    assert_eq!(n.responder_to_initiator, FramingConfig { markers: true, crc: true });
    assert_eq!(n.initiator_to_responder, FramingConfig { markers: false, crc: true });
}

#[test]
fn mpa_17_frame_layout() {
    assert_eq!(KEY_REQ.to_vec(), hex("4D 50 41 20 49 44 20 52 65 71 20 46 72 61 6D 65"));
    assert_eq!(KEY_REP.to_vec(), hex("4D 50 41 20 49 44 20 52 65 70 20 46 72 61 6D 65"));
    let wire = MpaFrame::new(FrameKind::Request).encode().unwrap();
    assert_eq!(wire, hex(REQ_V1));
    // Octets after the frame (e.g. the first FPDU) are left alone.
    let mut buf = wire.clone();
    buf.extend_from_slice(&[0, 0, 0, 0]);
    let (f, used) = MpaFrame::decode(&buf).unwrap();
    assert_eq!(used, 20);
    assert_eq!(f, MpaFrame::new(FrameKind::Request));
}

#[test]
fn mpa_18_wrong_role_detected() {
    let req = hex(REQ_V1);
    let err = MpaFrame::decode_as(&req, FrameKind::Reply).unwrap_err();
    assert_eq!(err, CmError::WrongKind { expected: FrameKind::Reply, got: FrameKind::Request });
    assert_eq!(err.mpa_error_code(), Some(4));
    assert!(MpaFrame::decode_as(&req, FrameKind::Request).is_ok());
}

#[test]
fn mpa_18_key_octet_changed() {
    for i in 0..16 {
        let mut f = hex(REQ_V1);
        f[i] ^= 0x80; // (^0x01 at octet 9 would turn "Req" into the valid "Rep")
        assert_eq!(MpaFrame::decode(&f), Err(CmError::BadKey), "octet {i}");
    }
}

#[test]
fn mpa_19_rev3_not_misparsed() {
    let f = frame_with(0x40, 3, b"abc");
    let (frame, used) = MpaFrame::decode(&f).unwrap();
    assert_eq!(used, f.len());
    assert_eq!(frame.rev, 3);
    assert_eq!(frame.ird_ord, None);
    assert_eq!(frame.private_data, b"abc");
}

#[test]
fn mpa_19_rev1_s_bit_is_reserved() {
    // Rev 1 does not know S: the bit is reserved and the private data stays ULP data.
    let f = frame_with(0x50, 1, &[0x80, 0x10, 0x40, 0x10]);
    let (frame, _) = MpaFrame::decode(&f).unwrap();
    assert_eq!(frame.ird_ord, None);
    assert_eq!(frame.private_data, vec![0x80, 0x10, 0x40, 0x10]);
}

#[test]
fn mpa_20_pd_length_over_512_rejected() {
    let f = frame_with(0x40, 1, &[0u8; 513]);
    assert_eq!(MpaFrame::decode(&f), Err(CmError::PrivateDataTooLong(513)));
    // Rejected from the header alone, without waiting for the data.
    assert_eq!(MpaFrame::frame_len(&f[..20]), Err(CmError::PrivateDataTooLong(513)));
    let big = MpaFrame { private_data: vec![0; 513], ..MpaFrame::new(FrameKind::Request) };
    assert_eq!(big.encode(), Err(CmError::PrivateDataTooLong(513)));
    // With S = 1 the IRD/ORD word counts: 509 octets of ULP data is too much.
    let v2 = MpaFrame { private_data: vec![0; 509], ..MpaFrame::new(FrameKind::Request) }.enhanced(IrdOrd::new(1, 1));
    assert_eq!(v2.encode(), Err(CmError::PrivateDataTooLong(513)));
}

#[test]
fn mpa_20_pd_length_short_data_is_incomplete() {
    let mut f = frame_with(0x40, 1, &[1, 2, 3, 4]);
    f[19] = 10;
    assert_eq!(MpaFrame::decode(&f), Err(CmError::Incomplete { needed: 30, got: 24 }));
    assert_eq!(CmError::Incomplete { needed: 30, got: 24 }.mpa_error_code(), None);
    assert_eq!(MpaFrame::decode(&f[..7]), Err(CmError::Incomplete { needed: 20, got: 7 }));
}

#[test]
fn mpa_20_pd_length_512_accepted() {
    let pd: Vec<u8> = (0..MAX_PRIVATE_DATA).map(|i| i as u8).collect();
    let f = frame_with(0x40, 1, &pd);
    let (frame, used) = MpaFrame::decode(&f).unwrap();
    assert_eq!(used, 20 + 512);
    assert_eq!(frame.private_data, pd);
    assert_eq!(frame.encode().unwrap(), f);
}

#[test]
fn mpa_21_res_bits_ignored() {
    // Res = 01111b under RFC 5044 (S = 0, Res(4) = 1111b).
    let f = frame_with(0x4f, 1, &[]);
    let (frame, _) = MpaFrame::decode(&f).unwrap();
    assert_eq!(frame, MpaFrame::new(FrameKind::Request));
    // Written back with Res = 0.
    assert_eq!(frame.encode().unwrap(), hex(REQ_V1));
}

#[test]
fn mpa_21_reject_reply_carries_private_data() {
    let wire = hex("4d504120494420526570204672616d65 60 01 0002 6e6f");
    let (frame, _) = MpaFrame::decode_as(&wire, FrameKind::Reply).unwrap();
    assert!(frame.reject);
    assert_eq!(frame.private_data, b"no");
}

#[test]
fn mpa2_01_s_bit_and_ird_ord_word() {
    let w = IrdOrd { peer_to_peer: true, ird: 16, read_rtr: true, ord: 16, ..IrdOrd::default() };
    let wire = MpaFrame::new(FrameKind::Request).enhanced(w).encode().unwrap();
    assert_eq!(&wire[16..], &hex("50 02 00 04 80 10 40 10")[..]);
    assert_eq!(IrdOrd::from_bytes([0x80, 0x10, 0x40, 0x10]), w);
    // ULP private data follows the word.
    let with_pd = MpaFrame { private_data: b"xy".to_vec(), ..MpaFrame::new(FrameKind::Reply) }.enhanced(w);
    let wire = with_pd.encode().unwrap();
    assert_eq!(&wire[18..20], &[0, 6]);
    assert_eq!(&wire[24..], b"xy");
    assert_eq!(MpaFrame::decode(&wire).unwrap().0, with_pd);
}

#[test]
fn mpa2_01_all_flag_bits() {
    let all = IrdOrd { peer_to_peer: true, send_rtr: true, ird: 0x1234, write_rtr: true, read_rtr: true, ord: 0x0567 };
    assert_eq!(all.to_bytes().unwrap(), [0xd2, 0x34, 0xc5, 0x67]);
    assert_eq!(IrdOrd::from_bytes([0xd2, 0x34, 0xc5, 0x67]), all);
}

#[test]
fn mpa2_02_unenhanced_rev2_request() {
    let f = frame_with(0x40, 2, &[]);
    let (frame, _) = MpaFrame::decode(&f).unwrap();
    assert_eq!(frame.rev, 2);
    assert_eq!(frame.ird_ord, None);
}

#[test]
fn mpa2_04_no_negotiation_value() {
    let wire = hex("4d504120494420526570204672616d65 50 02 0004 3fff3fff");
    let (frame, _) = MpaFrame::decode(&wire).unwrap();
    assert_eq!(frame.ird_ord, Some(IrdOrd::new(0x3fff, 0x3fff)));
}

#[test]
fn mpa2_06_client_server_ignores_bcd() {
    let w = IrdOrd::from_bytes([0x40, 0x04, 0xc0, 0x08]); // A=0, B=1, C=1, D=1
    assert!(!w.peer_to_peer && w.send_rtr && w.write_rtr && w.read_rtr);
    let e = w.effective();
    assert!(!e.send_rtr && !e.write_rtr && !e.read_rtr);
    assert_eq!((e.ird, e.ord), (4, 8));
}

#[test]
fn mpa2_08_input_sanity() {
    assert_eq!(IrdOrd::new(0x4000, 1).to_bytes(), Err(CmError::IrdOrdRange(0x4000)));
    let bad = MpaFrame::new(FrameKind::Request).enhanced(IrdOrd::new(1, 0xffff));
    assert_eq!(bad.encode(), Err(CmError::IrdOrdRange(0xffff)));
    // S = 1, Rev 2, but only 2 octets of private data.
    let f = frame_with(0x50, 2, &[0x00, 0x04]);
    assert_eq!(MpaFrame::decode(&f), Err(CmError::MissingIrdOrd(2)));
}
