//! Per-QP MPA options of `rnic_top`, against a raw peer on its streams: each QP's
//! CRC_ENABLE decides whether its FPDUs carry a CRC and whether received FPDUs have theirs
//! checked (MPA-05), and its MARKERS_TX / MARKERS_RX whether the FPDUs it sends /
//! receives have markers, at positions of its own stream (MPA-11, MPA-12, MPA-14):
//! connections with different options share the device.
#![cfg(feature = "sim")]

mod common;

use common::{frame, raw_device, run_until};
use rnic_driver::sim::SimHal;
use rnic_driver::{
    CompletionQueue, CqeStatus, Device, MemoryRegion, MrAccess, ProtectionDomain, QpCaps, QpState, QueuePair,
    RecvRequest, WorkRequest,
};
use rnic_proto::model::wire::untagged_ulpdus;
use rnic_proto::mpa::{crc32c, crc_field, Framer, FramingConfig};
use rnic_proto::rdmap::Opcode;

const ALL: MrAccess = MrAccess { local_write: true, remote_read: true, remote_write: true, remote_atomic: false };

/// A one-segment Send with MSN 1, framed with or without a CRC.
fn send_fpdu(payload: &[u8], crc: bool) -> Vec<u8> {
    let ulpdu = untagged_ulpdus(Opcode::Send, 1, 0, payload, 1024).remove(0);
    frame(&ulpdu, crc)
}

#[test]
fn mpa_05_crc_is_per_qp_generated_and_checked_only_where_enabled() {
    let hal = SimHal::open("rnic_top").expect("rnic_top model");
    let peer = hal.attach_raw_peer();
    let dev = Device::open(hal).expect("RNIC");
    dev.enable();
    let pd = ProtectionDomain::new(&dev).expect("PD");
    let buf = dev.alloc_dma(8192).expect("DMA");
    buf.write_bytes(0, &[0xAB; 8192]);
    let mr = MemoryRegion::register(&pd, &buf, ALL).expect("MR");
    let cq = CompletionQueue::new(&dev, 6, 0).expect("CQ");
    let base = QpCaps {
        sq_log_size: 4,
        rq_log_size: 4,
        mulpdu: 1024,
        ird: 4,
        ord: 4,
        crc: true,
        markers_tx: false,
        markers_rx: false,
        conn_id: 0,
    };
    let mut with_crc = QueuePair::new(&dev, &pd, &cq, &cq, QpCaps { conn_id: 10, ..base }).expect("QP");
    let mut without = QueuePair::new(&dev, &pd, &cq, &cq, QpCaps { crc: false, conn_id: 11, ..base }).expect("QP");
    with_crc.ready().expect("RTS");
    without.ready().expect("RTS");

    // Transmit: a Send on each QP. The CRC QP's FPDU carries CRC32c over everything before
    // the field; the other one's field is zero.
    for qp in [&mut with_crc, &mut without] {
        qp.post_send(&WorkRequest::Send {
            wr_id: 1,
            local: mr.sge(0, 100).unwrap(),
            solicited: false,
            invalidate: None,
            signaled: false,
        })
        .expect("send");
    }
    run_until(&dev, || peer.sent_count() >= 2);
    let sent = peer.sent();
    assert_eq!(sent.len(), 2, "one FPDU per Send");
    for (fpdu, conn) in &sent {
        let (body, field) = fpdu.split_at(fpdu.len() - 4);
        match conn {
            10 => assert_eq!(field, crc_field(crc32c(body)), "CRC QP: a real CRC"),
            11 => assert_eq!(field, [0; 4], "QP without CRC: a zero field"),
            other => panic!("FPDU for connection {other}"),
        }
    }

    // Receive. Without CRCs, a field of de ad be ef is accepted (MPA-05 Test 2); with
    // CRCs, a correct FPDU is placed and a corrupted one is not.
    for (qp, at) in [(&mut with_crc, 1000_u64), (&mut without, 2000)] {
        qp.post_recv(&RecvRequest { wr_id: at, local: mr.sge(at, 200).unwrap() }).expect("recv");
    }
    let payload: Vec<u8> = (0..64).collect();
    let mut bogus = send_fpdu(&payload, false);
    let n = bogus.len();
    bogus[n - 4..].copy_from_slice(&[0xde, 0xad, 0xbe, 0xef]);
    peer.send(&bogus, without.qpn().into());
    peer.send(&send_fpdu(&payload, true), with_crc.qpn().into());
    let mut done = Vec::new();
    run_until(&dev, || {
        while let Some(c) = cq.poll().expect("CQE") {
            done.push(c);
        }
        done.len() >= 2
    });
    let mut got: Vec<_> = done.iter().map(|c| (c.wr_id, c.status, c.byte_len)).collect();
    got.sort_by_key(|c| c.0);
    assert_eq!(got, [(1000, CqeStatus::Success, 64), (2000, CqeStatus::Success, 64)]);
    for at in [1000, 2000] {
        assert_eq!((at..at + 64).map(|i| buf.read_u8(i)).collect::<Vec<_>>(), payload, "placed at {at}");
    }

    with_crc.post_recv(&RecvRequest { wr_id: 3000, local: mr.sge(3000, 200).unwrap() }).expect("recv");
    let mut corrupted = send_fpdu(&payload, true);
    corrupted[10] ^= 1;
    peer.send(&corrupted, with_crc.qpn().into());
    dev.hal().run_idle(3_000);
    let c = cq.poll().expect("CQE").map(|c| (c.wr_id, c.status));
    assert_eq!(
        c,
        Some((3000, CqeStatus::Flushed)),
        "a corrupted FPDU completes nothing: its QP fails, the receive is flushed"
    );
    assert!((3000..3200).all(|i| buf.read_u8(i) == 0xAB), "and places nothing");
}

/// MPA-11/MPA-12 per connection, MPA-14 per direction: each QP's FPDUs carry markers at
/// every 512th octet of its own stream (from 0, the first FPDU of Full Operation), with
/// FPDUPTR pointing back at their FPDU, or none; received FPDUs are read the same way.
/// Four QPs share the device: markers and CRCs, CRCs only, markers only, and markers on
/// what it sends but not on what it receives. Their FPDUs go out and come in interleaved,
/// and each stream must equal what `rnic_proto`'s framer makes of the same ULPDUs.
#[test]
fn mpa_11_12_14_markers_are_kept_per_qp_stream_and_per_direction() {
    let hal = SimHal::open("rnic_top").expect("rnic_top model");
    let peer = hal.attach_raw_peer();
    let dev = Device::open(hal).expect("RNIC");
    dev.enable();
    assert!(dev.info().features.markers, "FEATURES offers markers");
    let pd = ProtectionDomain::new(&dev).expect("PD");
    let buf = dev.alloc_dma(64 * 1024).expect("DMA");
    let content: Vec<u8> = (0..64 * 1024).map(|i| (i * 7 + i / 251) as u8).collect();
    buf.write_bytes(0, &content);
    let mr = MemoryRegion::register(&pd, &buf, ALL).expect("MR");
    let cq = CompletionQueue::new(&dev, 6, 0).expect("CQ");
    let base = QpCaps {
        sq_log_size: 4,
        rq_log_size: 4,
        mulpdu: 1024,
        ird: 4,
        ord: 4,
        crc: true,
        markers_tx: true,
        markers_rx: true,
        conn_id: 0,
    };
    // (what the QP sends, what it receives)
    let framing = |markers, crc| FramingConfig { markers, crc };
    let configs = [
        (framing(true, true), framing(true, true)),
        (framing(false, true), framing(false, true)),
        (framing(true, false), framing(true, false)),
        (framing(true, true), framing(false, true)),
    ];
    let mut qps: Vec<_> = configs
        .iter()
        .enumerate()
        .map(|(i, (tx, rx))| {
            let caps =
                QpCaps { markers_tx: tx.markers, markers_rx: rx.markers, crc: tx.crc, conn_id: 20 + i as u16, ..base };
            QueuePair::new(&dev, &pd, &cq, &cq, caps).expect("QP")
        })
        .collect();
    for qp in &mut qps {
        qp.ready().expect("RTS");
    }
    let sizes = [100_usize, 700, 1300, 37, 900, 2000];

    // Transmit: the same six Sends on every QP, posted round robin.
    for (n, &size) in sizes.iter().enumerate() {
        for qp in &mut qps {
            let local = mr.sge(64 * n as u64, size as u32).unwrap();
            qp.post_send(&WorkRequest::Send {
                wr_id: n as u64,
                local,
                solicited: false,
                invalidate: None,
                signaled: false,
            })
            .expect("send");
        }
    }
    let expected: Vec<Vec<u8>> = sizes
        .iter()
        .enumerate()
        .flat_map(|(n, &size)| untagged_ulpdus(Opcode::Send, n as u32 + 1, 0, &content[64 * n..64 * n + size], 1024))
        .collect();
    let fpdus = expected.len() * qps.len();
    run_until(&dev, || peer.sent_count() >= fpdus);
    let sent = peer.sent();
    assert_eq!(sent.len(), fpdus, "every FPDU sent");
    for (i, (config, _)) in configs.iter().enumerate() {
        let stream: Vec<u8> = sent.iter().filter(|(_, c)| *c == 20 + i as u64).flat_map(|(f, _)| f.clone()).collect();
        let mut reference = Vec::new();
        let mut framer = Framer::new(*config);
        for ulpdu in &expected {
            framer.frame(ulpdu, &mut reference).expect("frame");
        }
        assert_eq!(stream.len(), reference.len(), "QP {i} ({config:?}): stream length");
        assert!(stream == reference, "QP {i} ({config:?}): the stream differs from the reference framing");
    }

    // Receive: each QP's stream from the reference framer, FPDUs interleaved round robin.
    for (i, qp) in qps.iter_mut().enumerate() {
        for n in 0..sizes.len() {
            let at = 16 * 1024 + (i * sizes.len() + n) as u64 * 2048;
            qp.post_recv(&RecvRequest { wr_id: (i * 100 + n) as u64, local: mr.sge(at, 2048).unwrap() }).expect("recv");
        }
    }
    let packets: Vec<Vec<Vec<u8>>> = configs
        .iter()
        .map(|(_, config)| {
            let mut framer = Framer::new(*config);
            expected
                .iter()
                .map(|ulpdu| {
                    let mut fpdu = Vec::new();
                    framer.frame(ulpdu, &mut fpdu).expect("frame");
                    fpdu
                })
                .collect()
        })
        .collect();
    for k in 0..expected.len() {
        for (qp, fpdus) in qps.iter().zip(&packets) {
            peer.send(&fpdus[k], qp.qpn().into());
        }
    }
    let mut done = Vec::new();
    run_until(&dev, || {
        while let Some(c) = cq.poll().expect("CQE") {
            done.push(c);
        }
        done.len() >= qps.len() * sizes.len()
    });
    assert_eq!(done.len(), qps.len() * sizes.len(), "every receive completes");
    for c in &done {
        let (i, n) = (c.wr_id as usize / 100, c.wr_id as usize % 100);
        assert_eq!((c.status, c.byte_len as usize), (CqeStatus::Success, sizes[n]), "receive {} of QP {i}", c.wr_id);
        let at = 16 * 1024 + (i * sizes.len() + n) * 2048;
        let placed: Vec<u8> = (at..at + sizes[n]).map(|a| buf.read_u8(a)).collect();
        assert!(placed == content[64 * n..64 * n + sizes[n]], "receive {} of QP {i}: data", c.wr_id);
    }
}

/// MPA-11 and MPA-22 across a reset: a QP written in RESET and made ready again starts its
/// stream over, a zero marker first, even when its own FPDUs were the last the framer sent
/// before the reset (nothing of another QP between, so no other QP's position was loaded).
#[test]
fn mpa_11_22_a_qp_reset_and_made_ready_again_starts_its_marker_stream_over() {
    let (dev, peer) = raw_device();
    let pd = ProtectionDomain::new(&dev).expect("PD");
    let buf = dev.alloc_dma(16 * 1024).expect("DMA");
    let content: Vec<u8> = (0..16 * 1024).map(|i| (i * 5 + i / 241) as u8).collect();
    buf.write_bytes(0, &content);
    let mr = MemoryRegion::register(&pd, &buf, ALL).expect("MR");
    let cq = CompletionQueue::new(&dev, 6, 0).expect("CQ");
    let caps = QpCaps {
        sq_log_size: 4,
        rq_log_size: 4,
        mulpdu: 1024,
        crc: true,
        markers_tx: true,
        markers_rx: true,
        conn_id: 40,
        ..QpCaps::default()
    };
    let mut qp = QueuePair::new(&dev, &pd, &cq, &cq, caps).expect("QP");
    let config = FramingConfig { markers: true, crc: true };
    let mut sent_before = 0;
    for (round, sizes) in [[700_usize, 1300, 90], [300, 900, 2100]].iter().enumerate() {
        qp.ready().expect("RTS");
        for (n, &size) in sizes.iter().enumerate() {
            let local = mr.sge(64 * n as u64, size as u32).unwrap();
            let wr = WorkRequest::Send { wr_id: n as u64, local, solicited: false, invalidate: None, signaled: false };
            qp.post_send(&wr).expect("send");
        }
        // The stream of this connection: MSNs from 1, positions from 0.
        let mut framer = Framer::new(config);
        let mut reference = Vec::new();
        let mut fpdus = 0;
        for (n, &size) in sizes.iter().enumerate() {
            for ulpdu in untagged_ulpdus(Opcode::Send, n as u32 + 1, 0, &content[64 * n..64 * n + size], 1024) {
                framer.frame(&ulpdu, &mut reference).expect("frame");
                fpdus += 1;
            }
        }
        run_until(&dev, || peer.sent_count() >= sent_before + fpdus);
        let sent = peer.sent();
        assert_eq!(sent.len(), sent_before + fpdus, "round {round}: every FPDU sent");
        let stream: Vec<u8> = sent[sent_before..].iter().flat_map(|(f, _)| f.clone()).collect();
        assert!(stream == reference, "round {round}: the stream differs from a fresh connection's framing");
        sent_before = sent.len();
        qp.modify(QpState::Reset).expect("RTS -> RESET");
    }
}

/// MPA-13 on the RNIC: in a stream with markers and no CRC, a marker whose FPDUPTR is off by
/// 4 fails its QP with `0x20030000` alone, after the Write before it is placed and with
/// nothing of its FPDU or after it placed; another QP's Writes around it are all placed and
/// that QP stays in RTS.
#[test]
fn mpa_13_a_marker_off_by_4_fails_its_qp_with_0x20030000_and_the_other_goes_on() {
    let hal = SimHal::open("rnic_top").expect("rnic_top model");
    let peer = hal.attach_raw_peer();
    let dev = Device::open(hal).expect("RNIC");
    dev.enable();
    let pd = ProtectionDomain::new(&dev).expect("PD");
    let buf = dev.alloc_dma(8192).expect("DMA");
    let mr = MemoryRegion::register(&pd, &buf, ALL).expect("MR");
    let cq = CompletionQueue::new(&dev, 6, 0).expect("CQ");
    let base = QpCaps { sq_log_size: 4, rq_log_size: 4, mulpdu: 1024, conn_id: 30, ..QpCaps::default() };
    let marked = QpCaps { crc: false, markers_tx: true, markers_rx: true, ..base };
    let plain = QpCaps { crc: true, markers_tx: false, markers_rx: false, conn_id: 31, ..base };
    let mut qps = [marked, plain].map(|caps| QueuePair::new(&dev, &pd, &cq, &cq, caps).expect("QP"));
    for qp in &mut qps {
        qp.ready().expect("RTS");
    }
    let write = |at: u64, fill: u8, len: usize| {
        rnic_proto::rdmap::Segment::write(mr.rkey(), mr.va() + at, &vec![fill; len]).to_vec()
    };
    // The marked stream: three 600-octet Writes; the second FPDU's marker is moved by 4.
    let mut framer = Framer::new(FramingConfig { markers: true, crc: false });
    let mut marked_fpdus: Vec<Vec<u8>> = (0..3)
        .map(|i| {
            let mut fpdu = Vec::new();
            framer.frame(&write(1024 * i, i as u8 + 1, 600), &mut fpdu).expect("frame");
            fpdu
        })
        .collect();
    let start = marked_fpdus[0].len();
    let end = start + marked_fpdus[1].len();
    let marker = (start..end).find(|p| p % 512 == 0).expect("a marker inside the second FPDU") - start;
    let pointer = u16::from_be_bytes([marked_fpdus[1][marker + 2], marked_fpdus[1][marker + 3]]);
    marked_fpdus[1][marker + 2..marker + 4].copy_from_slice(&(pointer + 4).to_be_bytes());
    for (i, fpdu) in marked_fpdus.iter().enumerate() {
        peer.send(fpdu, qps[0].qpn().into());
        peer.send(&frame(&write(4096 + 256 * i as u64, 0x10 + i as u8, 100), true), qps[1].qpn().into());
    }
    run_until(&dev, || peer.pending() == 0 && peer.sent_count() >= 1);
    dev.hal().run_idle(3_000);
    let mut memory = vec![0; 8192];
    buf.read_bytes(0, &mut memory);
    assert!(memory[..600].iter().all(|&b| b == 1), "the Write before the bad marker is placed");
    assert!(memory[600..4096].iter().all(|&b| b == 0), "nothing of the bad FPDU or after it");
    for i in 0..3 {
        let at = 4096 + 256 * i;
        assert!(memory[at..at + 100].iter().all(|&b| b == 0x10 + i as u8), "the other QP's Write {i}");
    }
    let sent = peer.sent();
    assert_eq!(sent.len(), 1, "one Terminate");
    assert_eq!(sent[0].1, 30, "from the marked QP's connection");
    // The QP's first FPDU: the leading marker, then the Terminate.
    assert_eq!(sent[0].0[..4], [0; 4], "the leading marker");
    let ulpdu = common::ulpdu_of(&sent[0].0[4..]);
    assert_eq!(&ulpdu[18..], 0x2003_0000u32.to_be_bytes(), "0x20030000, no headers");
    let states: Vec<_> = qps.iter().map(|qp| qp.query().expect("query").0.state).collect();
    assert_eq!(states, [rnic_driver::QpState::Error, rnic_driver::QpState::Rts]);
}
