//! `--pcap FILE` writes the streams between the two simulated RNICs as a packet capture
//! that Wireshark's dissectors read: every FPDU must decode as MPA with a good CRC (and as
//! DDP/RDMAP), with and without markers, whole or spread over several TCP segments. The
//! checker is shown to catch a bad CRC on a capture made to have one.
#![cfg(feature = "sim")]
use std::process::Command;

use rnic_proto::cm::{FrameKind, MpaFrame};
use rnic_proto::mpa::{Framer, FramingConfig};
use rnic_proto::pcap::{Endpoint, Side, TcpCapture};
use rnic_proto::rdmap::Segment;

/// What tshark makes of a capture: FPDUs, good and bad CRCs, and RDMAP messages.
#[derive(Debug, Default, PartialEq)]
struct Decoded {
    fpdus: usize,
    good_crc: usize,
    bad_crc: usize,
    rdmap: usize,
}

fn tshark(path: &std::path::Path) -> Decoded {
    let out = Command::new("tshark")
        .args(["-r", path.to_str().expect("path"), "-V", "-o", "tcp.desegment_tcp_streams:TRUE"])
        .output()
        .expect("tshark (apt tshark; scripts/setup-tools installs it)");
    assert!(out.status.success(), "tshark failed: {}", String::from_utf8_lossy(&out.stderr));
    let text = String::from_utf8_lossy(&out.stdout);
    let count = |needle: &str| text.lines().filter(|l| l.contains(needle)).count();
    Decoded {
        fpdus: text.lines().filter(|l| l.trim() == "FPDU").count(),
        good_crc: count("(Good CRC32)"),
        bad_crc: count("(Bad CRC32"),
        rdmap: count("RDMAP control field"),
    }
}

fn capture_of(program: &str, exe: &str, args: &[&str]) -> Decoded {
    let path = std::env::temp_dir().join(format!("rnic_{program}_{}.pcap", std::process::id()));
    let out =
        Command::new(exe).args(args).args(["--pcap", path.to_str().expect("path")]).output().expect("run the program");
    assert!(out.status.success(), "{program}: {}", String::from_utf8_lossy(&out.stderr));
    let decoded = tshark(&path);
    std::fs::remove_file(&path).ok();
    decoded
}

#[test]
fn every_fpdu_of_a_pingpong_capture_decodes_with_a_good_crc() {
    let d = capture_of("pingpong", env!("CARGO_BIN_EXE_pingpong"), &["--iters", "5", "--size", "300"]);
    // Five round trips: at least ten Sends, each one FPDU.
    assert!(d.fpdus >= 10, "{d:?}");
    assert_eq!((d.good_crc, d.bad_crc, d.rdmap), (d.fpdus, 0, d.fpdus), "{d:?}");
}

#[test]
fn markers_and_fpdus_over_several_segments_decode_too() {
    let d = capture_of(
        "write_bw",
        env!("CARGO_BIN_EXE_write_bw"),
        &["--iters", "4", "--size", "6000", "--mulpdu", "4096", "--markers", "--qps", "2"],
    );
    // 2 QPs x 4 Writes of 6000 octets, each two FPDUs of up to 4096 octets (three TCP
    // segments), and their completions' traffic.
    assert!(d.fpdus >= 16, "{d:?}");
    assert_eq!((d.good_crc, d.bad_crc, d.rdmap), (d.fpdus, 0, d.fpdus), "{d:?}");
}

#[test]
fn the_checker_sees_a_bad_crc() {
    let mut cap = TcpCapture::new();
    let ends = (Endpoint { ip: [10, 0, 0, 1], port: 49_152 }, Endpoint { ip: [10, 0, 0, 2], port: 4_000 });
    let conn = cap.connect(ends.0, ends.1, &MpaFrame::new(FrameKind::Request), &MpaFrame::new(FrameKind::Reply), 0);
    let mut framer = Framer::new(FramingConfig { markers: false, crc: true });
    for flip in [false, true] {
        let mut fpdu = Vec::new();
        framer.frame(&Segment::send(1 + u32::from(flip), &[7; 40]).to_vec(), &mut fpdu).expect("frame");
        if flip {
            fpdu[30] ^= 0x01;
        }
        cap.data(conn, Side::Initiator, &fpdu, 1);
    }
    let path = std::env::temp_dir().join(format!("rnic_bad_crc_{}.pcap", std::process::id()));
    std::fs::write(&path, cap.bytes()).expect("write");
    let d = tshark(&path);
    std::fs::remove_file(&path).ok();
    assert_eq!((d.fpdus, d.good_crc, d.bad_crc), (2, 1, 1), "{d:?}");
}
