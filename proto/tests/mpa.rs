//! MPA framing conformance (CHECKLIST §1, MPA-01 … MPA-25).

mod common;
use common::{drain, hex, send_ulpdu};
use rnic_proto::mpa::markers::fpdu_wire_len;
use rnic_proto::mpa::{
    build_fpdu, crc32c, crc_field, marker_at, mulpdu, pad_len, Deframer, Framer, FramingConfig, MpaError,
};
use rnic_proto::terminate::TermCode;

const V3: &str = "001741430000000000000000000000010000000048656c6c6f00000020f5b101";
const MARKERS_CRC: FramingConfig = FramingConfig::MARKERS_AND_CRC;

fn frame_all(cfg: FramingConfig, ulpdus: &[Vec<u8>]) -> Vec<u8> {
    let mut f = Framer::new(cfg);
    let mut out = Vec::new();
    for u in ulpdus {
        f.frame(u, &mut out).unwrap();
    }
    out
}

/// Replaces the CRC field of the FPDU covering `stream[begin..end]`
/// (end = one past its CRC) with the correct one.
fn fix_crc(stream: &mut [u8], begin: usize, end: usize) {
    let crc = crc_field(crc32c(&stream[begin..end - 4]));
    stream[end - 4..end].copy_from_slice(&crc);
}

#[test]
fn mpa_01_fpdu_format() {
    let fpdu = hex(V3);
    assert_eq!(fpdu.len(), 32);
    assert_eq!(&fpdu[..2], &[0x00, 0x17]);
    assert_eq!(&fpdu[25..28], &[0, 0, 0]);
    // The CRC field is present even with CRCs disabled: four zero octets.
    let ulpdu = fpdu[2..25].to_vec();
    let no_crc = frame_all(FramingConfig { markers: false, crc: false }, std::slice::from_ref(&ulpdu));
    assert_eq!(no_crc.len(), 32);
    assert_eq!(&no_crc[..28], &fpdu[..28]);
    assert_eq!(&no_crc[28..], &[0, 0, 0, 0]);
    assert_eq!(build_fpdu(&ulpdu), fpdu);
}

#[test]
fn mpa_02_ulpdu_length_excludes_markers() {
    // A 1200-octet ULPDU spans two markers; ULPDU_Length still says 1200.
    let stream = frame_all(MARKERS_CRC, &[send_ulpdu(1, 1182)]);
    assert_eq!(&stream[4..6], &1200u16.to_be_bytes());
    assert_eq!(stream.len(), 4 + 1204 + 4 + 4 + 4);
    let mut d = Deframer::new(MARKERS_CRC);
    d.push(&stream);
    assert_eq!(drain(&mut d), vec![Ok(send_ulpdu(1, 1182))]);
}

#[test]
fn mpa_03_pad_lengths() {
    // PAD = (-(2 + len)) mod 4. CHECKLIST MPA-03 test 1 lists 2, 1, 0, 3 for
    // 18..=21, which is (-len) mod 4 and forgets the 2-octet ULPDU_Length;
    // V3 (23 octets -> 3 PAD) and RFC 5044 Figs. 5/6 (42 -> 0) confirm the
    // formula, so the correct values are 0, 3, 2, 1.
    assert_eq!([18, 19, 20, 21].map(pad_len), [0, 3, 2, 1]);
    assert_eq!(pad_len(23), 3); // V3
    assert_eq!(pad_len(42), 0); // RFC 5044 Fig. 5
    for len in 0..64usize {
        assert_eq!((2 + len + pad_len(len)) % 4, 0);
        assert!(pad_len(len) < 4);
    }
}

#[test]
fn mpa_03_nonzero_pad_accepted_and_not_delivered() {
    let mut fpdu = hex(V3);
    fpdu[25..28].copy_from_slice(&[0xff, 0xff, 0xff]);
    fix_crc(&mut fpdu, 0, 32);
    let mut d = Deframer::new(FramingConfig::CRC_ONLY);
    d.push(&fpdu);
    let got = drain(&mut d);
    assert_eq!(got.len(), 1);
    let ulpdu = got[0].clone().unwrap();
    assert_eq!(ulpdu.len(), 23);
    assert_eq!(&ulpdu[18..], b"Hello");
}

#[test]
fn mpa_05_crc_disabled_field_not_checked() {
    let mut fpdu = hex(V3);
    fpdu[28..].copy_from_slice(&[0xde, 0xad, 0xbe, 0xef]);
    let mut d = Deframer::new(FramingConfig { markers: false, crc: false });
    d.push(&fpdu);
    assert_eq!(drain(&mut d).len(), 1);
    // The same FPDU is rejected when CRCs are on.
    let mut d = Deframer::new(FramingConfig::CRC_ONLY);
    d.push(&fpdu);
    assert!(matches!(drain(&mut d)[..], [Err(MpaError::Crc { .. })]));
}

#[test]
fn mpa_06_marker_after_pad_covered_by_this_crc() {
    // Leading marker (4) + 508 octets of content end exactly at 512: the
    // marker at 512 sits between PAD and CRC and points back to this FPDU.
    let ulpdu = send_ulpdu(1, 506 - 18);
    let stream = frame_all(MARKERS_CRC, std::slice::from_ref(&ulpdu));
    assert_eq!(stream.len(), 4 + 508 + 4 + 4);
    assert_eq!(&stream[512..516], &[0, 0, 0x01, 0xfc]); // FPDUPTR 508
    assert_eq!(&stream[516..], &crc_field(crc32c(&stream[..516])));
    let mut d = Deframer::new(MARKERS_CRC);
    d.push(&stream);
    assert_eq!(drain(&mut d), vec![Ok(ulpdu)]);
}

#[test]
fn mpa_06_marker_between_fpdus_belongs_to_next() {
    // First FPDU: marker (4) + content 504 + CRC 4 = 512 octets exactly.
    let first = send_ulpdu(1, 502 - 18);
    let second = send_ulpdu(2, 6);
    let stream = frame_all(MARKERS_CRC, &[first.clone(), second.clone()]);
    assert_eq!(&stream[508..512], &crc_field(crc32c(&stream[..508])));
    assert_eq!(&stream[512..516], &[0, 0, 0, 0]); // FPDUPTR 0
    assert_eq!(&stream[516..518], &24u16.to_be_bytes());
    // The second CRC starts at the marker's first octet.
    let end = stream.len();
    assert_eq!(&stream[end - 4..], &crc_field(crc32c(&stream[512..end - 4])));
    let mut d = Deframer::new(MARKERS_CRC);
    d.push(&stream);
    assert_eq!(drain(&mut d), vec![Ok(first), Ok(second)]);
}

#[test]
fn mpa_08_no_delivery_after_crc_error() {
    let ulpdus: Vec<Vec<u8>> = (1..=5).map(|m| send_ulpdu(m, 5)).collect();
    let mut stream = frame_all(FramingConfig::CRC_ONLY, &ulpdus);
    stream[20] ^= 0x01; // a payload bit of the first FPDU
    let mut d = Deframer::new(FramingConfig::CRC_ONLY);
    d.push(&stream);
    let got = drain(&mut d);
    assert_eq!(got.len(), 1);
    let err = got[0].clone().unwrap_err();
    assert!(matches!(err, MpaError::Crc { .. }));
    assert_eq!(err.terminate_code(), Some(2));
    assert_eq!(err.term_code(), Some(TermCode::MPA_CRC));
    assert_eq!(TermCode::MPA_CRC.control_word(false, false, false), 0x2002_0000);
    // Later valid FPDUs are never delivered.
    d.push(&frame_all(FramingConfig::CRC_ONLY, &ulpdus));
    assert_eq!(d.pop(), None);
    assert!(d.has_failed());
}

#[test]
fn mpa_09_crc_octet_order() {
    let mut fpdu = hex(V3);
    assert_eq!(&fpdu[28..], &[0x20, 0xf5, 0xb1, 0x01]);
    fpdu[28..].copy_from_slice(&[0x01, 0xb1, 0xf5, 0x20]); // network order: wrong
    let mut d = Deframer::new(FramingConfig::CRC_ONLY);
    d.push(&fpdu);
    assert_eq!(d.pop(), Some(Err(MpaError::Crc { computed: 0x01b1_f520, received: 0x20f5_b101 })));
}

#[test]
fn mpa_10_marker_reserved_and_low_bits_ignored() {
    let first = send_ulpdu(1, 464);
    let second = send_ulpdu(2, 24);
    let mut stream = frame_all(MARKERS_CRC, &[first.clone(), second.clone()]);
    stream[0x200..0x204].copy_from_slice(&[0xff, 0xff, 0x00, 0x17]);
    let end = stream.len();
    fix_crc(&mut stream, 0x1ec, end);
    let mut d = Deframer::new(MARKERS_CRC);
    d.push(&stream);
    assert_eq!(drain(&mut d), vec![Ok(first), Ok(second)]);
}

#[test]
fn mpa_11_marker_placement_seq_start_11() {
    for seq in [11u32, 523, 1035] {
        assert!(marker_at(11, seq));
    }
    for seq in [12u32, 522, 524, 1034] {
        assert!(!marker_at(11, seq));
    }
}

#[test]
fn mpa_11_marker_placement_sequence_wrap() {
    assert!(marker_at(0xffff_ff00, 0xffff_ff00));
    assert!(marker_at(0xffff_ff00, 0x0000_0100));
    assert!(!marker_at(0xffff_ff00, 0x0000_0000));
}

#[test]
fn mpa_11_markers_every_512_octets_of_stream() {
    let ulpdus: Vec<Vec<u8>> = (0..40).map(|i| send_ulpdu(i, (i as usize * 37) % 300)).collect();
    let stream = frame_all(MARKERS_CRC, &ulpdus);
    // Walk the FPDUs and check that the octets at every multiple of 512 are a
    // marker whose FPDUPTR points at the ULPDU_Length of the FPDU holding it.
    let mut pos = 0usize;
    let mut checked = 0;
    for u in &ulpdus {
        let content = 2 + u.len() + pad_len(u.len());
        let wire = fpdu_wire_len(pos as u64, content, true);
        let start = if pos & 511 == 0 { pos + 4 } else { pos };
        assert_eq!(&stream[start..start + 2], &(u.len() as u16).to_be_bytes());
        for m in (pos..pos + wire).filter(|p| p % 512 == 0) {
            let ptr = u16::from_be_bytes([stream[m + 2], stream[m + 3]]) as usize;
            assert_eq!(&stream[m..m + 2], &[0, 0]);
            assert_eq!(ptr, if m == pos { 0 } else { m - start });
            checked += 1;
        }
        pos += wire;
    }
    assert_eq!(pos, stream.len());
    assert_eq!(checked, stream.len().div_ceil(512));
}

#[test]
fn mpa_11_first_octets_are_zero_marker() {
    let stream = frame_all(MARKERS_CRC, &[send_ulpdu(1, 100)]);
    assert_eq!(&stream[..4], &[0, 0, 0, 0]);
}

#[test]
fn mpa_12_fpduptr_two_markers_in_one_fpdu() {
    // A 36-octet first FPDU, then a 1200-octet Send starting at 36 that holds
    // the markers at 512 and 1024.
    let first = send_ulpdu(1, 5);
    let second = send_ulpdu(2, 1182);
    let stream = frame_all(MARKERS_CRC, &[first.clone(), second.clone()]);
    let start = 4 + 32;
    assert_eq!(&stream[start..start + 2], &1200u16.to_be_bytes());
    let p1 = u16::from_be_bytes([stream[514], stream[515]]) as usize;
    let p2 = u16::from_be_bytes([stream[1026], stream[1027]]) as usize;
    assert_eq!(512 - p1, start);
    assert_eq!(1024 - p2, start);
    assert_eq!(p2 - p1, 512);
    let mut d = Deframer::new(MARKERS_CRC);
    d.push(&stream);
    assert_eq!(drain(&mut d), vec![Ok(first), Ok(second)]);
}

#[test]
fn mpa_13_marker_off_by_4_detected() {
    let mut stream = frame_all(MARKERS_CRC, &[send_ulpdu(1, 464), send_ulpdu(2, 24)]);
    stream[0x203] = 0x18; // FPDUPTR 0x14 + 4
    let end = stream.len();
    fix_crc(&mut stream, 0x1ec, end);
    let mut d = Deframer::new(MARKERS_CRC);
    d.push(&stream);
    assert_eq!(d.pop(), Some(Ok(send_ulpdu(1, 464))));
    let err = d.pop().unwrap().unwrap_err();
    assert_eq!(err, MpaError::Marker { position: 0x200, fpduptr: 0x18, expected: 0x14 });
    assert_eq!(err.terminate_code(), Some(3));
    assert_eq!(err.term_code().unwrap().control_word(false, false, false), 0x2003_0000);
    assert_eq!(d.pop(), None);
}

#[test]
fn mpa_13_crc_error_takes_precedence_over_marker() {
    let mut stream = frame_all(MARKERS_CRC, &[send_ulpdu(1, 464), send_ulpdu(2, 24)]);
    stream[0x203] = 0x18; // CRC not recomputed
    let mut d = Deframer::new(MARKERS_CRC);
    d.push(&stream);
    assert!(d.pop().unwrap().is_ok());
    assert!(matches!(d.pop(), Some(Err(MpaError::Crc { .. }))));
}

#[test]
fn mpa_13_marker_checked_without_crc() {
    let mut stream = frame_all(FramingConfig { markers: true, crc: false }, &[send_ulpdu(1, 464), send_ulpdu(2, 24)]);
    stream[0x203] = 0x10;
    let mut d = Deframer::new(FramingConfig { markers: true, crc: false });
    d.push(&stream);
    assert!(d.pop().unwrap().is_ok());
    assert!(matches!(d.pop(), Some(Err(MpaError::Marker { fpduptr: 0x10, .. }))));
}

#[test]
fn mpa_13_leading_marker_must_be_zero() {
    let mut stream = frame_all(MARKERS_CRC, &[send_ulpdu(1, 24)]);
    stream[3] = 0x04;
    fix_crc(&mut stream, 0, 52);
    let mut d = Deframer::new(MARKERS_CRC);
    d.push(&stream);
    assert_eq!(d.pop(), Some(Err(MpaError::Marker { position: 0, fpduptr: 4, expected: 0 })));
}

#[test]
fn mpa_15_mulpdu_table() {
    let table = [
        (1460, 1442, 1454),
        (1448, 1430, 1442),
        (1459, 1438, 1450),
        (536, 522, 530),
        (8960, 8882, 8954),
        (100, 128, 128),
    ];
    for (emss, with, without) in table {
        assert_eq!(mulpdu(emss, true), with, "EMSS {emss} with markers");
        assert_eq!(mulpdu(emss, false), without, "EMSS {emss} without markers");
    }
}

#[test]
fn mpa_15_mulpdu_fpdu_fits_emss() {
    // An FPDU carrying MULPDU octets fits in EMSS wherever it starts.
    for emss in [536usize, 1448, 1460, 1459, 9000] {
        for markers in [false, true] {
            let m = mulpdu(emss, markers);
            let content = 2 + m + pad_len(m);
            for start in (0..512u64).step_by(4) {
                assert!(fpdu_wire_len(start, content, markers) <= emss, "{emss} {markers} {start}");
            }
        }
    }
}

#[test]
fn mpa_16_fpdu_split_over_segments() {
    let fpdu = hex(V3);
    let mut d = Deframer::new(FramingConfig::CRC_ONLY);
    d.push(&fpdu[..1]);
    assert_eq!(d.pop(), None);
    d.push(&fpdu[1..3]);
    assert_eq!(d.pop(), None);
    d.push(&fpdu[3..]);
    assert_eq!(d.pop(), Some(Ok(fpdu[2..25].to_vec())));
    assert_eq!(d.pop(), None);
    assert_eq!(d.buffered(), 0);
}

#[test]
fn mpa_16_octet_at_a_time_with_markers() {
    let ulpdus: Vec<Vec<u8>> = (1..=6).map(|m| send_ulpdu(m, 300)).collect();
    let stream = frame_all(MARKERS_CRC, &ulpdus);
    let mut d = Deframer::new(MARKERS_CRC);
    let mut got = Vec::new();
    for b in &stream {
        d.push(std::slice::from_ref(b));
        while let Some(r) = d.pop() {
            got.push(r.unwrap());
        }
    }
    assert_eq!(got, ulpdus);
    assert_eq!(d.position(), stream.len() as u64);
}

#[test]
fn mpa_25_nothing_after_error() {
    let ulpdus: Vec<Vec<u8>> = (1..=11).map(|m| send_ulpdu(m, 40)).collect();
    let mut stream = frame_all(FramingConfig::CRC_ONLY, &ulpdus);
    stream[2 + 18 + 3] ^= 0x80;
    let mut d = Deframer::new(FramingConfig::CRC_ONLY);
    d.push(&stream);
    let got = drain(&mut d);
    assert_eq!(got.len(), 1);
    assert!(got[0].is_err());
}

#[test]
fn mpa_framer_rejects_ulpdu_over_65535() {
    let mut f = Framer::new(FramingConfig::CRC_ONLY);
    let mut out = Vec::new();
    assert_eq!(f.frame(&vec![0; 65536], &mut out), Err(MpaError::UlpduTooLong(65536)));
    assert!(out.is_empty());
    assert_eq!(f.position(), 0);
    f.frame(&vec![0; 65535], &mut out).unwrap();
    assert_eq!(out.len(), 2 + 65535 + 3 + 4);
    assert_eq!(MpaError::UlpduTooLong(1).terminate_code(), None);
}

/// A stream cut one packet per FPDU (the `rnic_top` contract): a packet that is exactly
/// its FPDU gives the ULPDU; one that is not (short, long, not whole words, too short to
/// hold ULPDU_Length) is out of step, MPA error 5, before its CRC is looked at; after an
/// error nothing more is delivered.
#[test]
fn mpa_16_packets_must_each_be_one_fpdu() {
    let ulpdu = send_ulpdu(1, 37);
    for cfg in [FramingConfig::CRC_ONLY, MARKERS_CRC] {
        for position in [0u64, 508, 512, 1000] {
            let mut fpdu = Vec::new();
            Framer::at(cfg, position).frame(&ulpdu, &mut fpdu).unwrap();
            assert_eq!(Deframer::at(cfg, position).pop_packet(&fpdu), Some(Ok(ulpdu.clone())), "{cfg:?} at {position}");
            let out_of_step = |packet: &[u8]| match Deframer::at(cfg, position).pop_packet(packet) {
                Some(Err(e @ MpaError::OutOfStep { .. })) => e.term_code() == Some(TermCode::MPA_LOCAL_CATASTROPHIC),
                _ => false,
            };
            let n = fpdu.len();
            assert!(out_of_step(&fpdu[..n - 4]), "a word short");
            assert!(out_of_step(&fpdu[..n - 1]), "an octet short (of the CRC field)");
            assert!(out_of_step(&[&fpdu[..], &[0; 4]].concat()), "a word long");
            assert!(out_of_step(&[&fpdu[..], &[0; 2]].concat()), "two octets long");
            assert!(out_of_step(&fpdu[..1]), "too short for ULPDU_Length");
            assert!(out_of_step(&[]), "empty");
            // Out of step comes first: the CRC field was not where it was read.
            let mut bad_crc_long = fpdu.clone();
            bad_crc_long[n - 1] ^= 1;
            bad_crc_long.extend([0; 4]);
            assert!(out_of_step(&bad_crc_long), "bad CRC in a long packet");
            // In step but a bad CRC: error 2; and nothing after it.
            let mut d = Deframer::at(cfg, position);
            let mut bad_crc = fpdu.clone();
            bad_crc[n - 1] ^= 1;
            assert_eq!(d.pop_packet(&bad_crc).and_then(|r| r.err()).and_then(|e| e.terminate_code()), Some(2));
            assert_eq!(d.pop_packet(&fpdu), None, "nothing after an error");
        }
    }
}
