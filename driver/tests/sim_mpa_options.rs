//! Per-QP MPA options of `rnic_top`, against a raw peer on its streams: each QP's
//! CRC_ENABLE decides whether its FPDUs carry a CRC and whether received FPDUs have theirs
//! checked (MPA-05), so connections with and without CRCs share the device; markers,
//! which the top does not build yet, are not offered in FEATURES and the driver refuses
//! a QP that asks for them.
#![cfg(feature = "sim")]

use std::cell::RefCell;
use std::collections::VecDeque;
use std::rc::Rc;

use rnic_driver::sim::{Phase, SimHal};
use rnic_driver::{
    CompletionQueue, CqeStatus, Device, DriverError, MemoryRegion, MrAccess, ProtectionDomain, QpCaps, QueuePair,
    RecvRequest, WorkRequest,
};
use rnic_proto::model::wire::untagged_ulpdus;
use rnic_proto::mpa::{crc32c, crc_field, Framer, FramingConfig};
use rnic_proto::rdmap::Opcode;

const ALL: MrAccess = MrAccess { local_write: true, remote_read: true, remote_write: true, remote_atomic: false };

/// One FPDU as the stream carries it: its octets and `tuser`.
type Packet = (Vec<u8>, u64);

/// The raw peer: records every FPDU the device sends and feeds it queued FPDUs.
struct Peer {
    sent: Rc<RefCell<Vec<Packet>>>,
    to_send: Rc<RefCell<VecDeque<(u64, u64, bool, u64)>>>,
}

fn attach_peer(hal: &SimHal) -> Peer {
    let tx = hal.with_model(|m| ["tdata", "tkeep", "tlast", "tvalid", "tready", "tuser"].map(|f| m.port(&format!("m_axis_tx_{f}"))));
    let rx = hal.with_model(|m| ["tdata", "tkeep", "tlast", "tvalid", "tready", "tuser"].map(|f| m.port(&format!("s_axis_rx_{f}"))));
    let peer = Peer { sent: Rc::default(), to_send: Rc::default() };
    let (sent, to_send) = (Rc::clone(&peer.sent), Rc::clone(&peer.to_send));
    let mut current = Vec::new();
    hal.on_cycle(move |m, phase| match phase {
        Phase::Drive => {
            m.set_bit(tx[4], true);
            match to_send.borrow().front() {
                Some(&(data, keep, last, user)) => {
                    m.set(rx[0], data);
                    m.set(rx[1], keep);
                    m.set_bit(rx[2], last);
                    m.set_bit(rx[3], true);
                    m.set(rx[5], user);
                }
                None => m.set_bit(rx[3], false),
            }
        }
        Phase::Observe => {
            if m.get_bit(tx[3]) {
                let (data, keep) = (m.get(tx[0]).to_le_bytes(), m.get(tx[1]));
                current.extend((0..8).filter(|i| keep >> i & 1 == 1).map(|i| data[i]));
                if m.get_bit(tx[2]) {
                    sent.borrow_mut().push((std::mem::take(&mut current), m.get(tx[5])));
                }
            }
            if m.get_bit(rx[4]) && !to_send.borrow().is_empty() {
                to_send.borrow_mut().pop_front();
            }
        }
    });
    peer
}

impl Peer {
    /// Queues one FPDU for the device's QP `qpn`, in beats of 8 octets.
    fn send(&self, fpdu: &[u8], qpn: u32) {
        let chunks: Vec<&[u8]> = fpdu.chunks(8).collect();
        for (i, chunk) in chunks.iter().enumerate() {
            let mut beat = [0u8; 8];
            beat[..chunk.len()].copy_from_slice(chunk);
            let keep = (1u64 << chunk.len()) - 1;
            self.to_send.borrow_mut().push_back((u64::from_le_bytes(beat), keep, i + 1 == chunks.len(), qpn.into()));
        }
    }
}

/// A one-segment Send with MSN 1, framed with or without a CRC.
fn send_fpdu(payload: &[u8], crc: bool) -> Vec<u8> {
    let ulpdu = untagged_ulpdus(Opcode::Send, 1, 0, payload, 1024).remove(0);
    let mut fpdu = Vec::new();
    Framer::new(FramingConfig { markers: false, crc }).frame(&ulpdu, &mut fpdu).expect("frame");
    fpdu
}

fn run_until(dev: &Device<SimHal>, mut done: impl FnMut() -> bool) {
    for _ in 0..400 {
        if done() {
            return;
        }
        dev.hal().run_idle(50);
    }
}

#[test]
fn mpa_05_crc_is_per_qp_generated_and_checked_only_where_enabled() {
    let hal = SimHal::open("rnic_top").expect("rnic_top model");
    let peer = attach_peer(&hal);
    let dev = Device::open(hal).expect("RNIC");
    dev.enable();
    let pd = ProtectionDomain::new(&dev).expect("PD");
    let buf = dev.alloc_dma(8192).expect("DMA");
    buf.write_bytes(0, &[0xAB; 8192]);
    let mr = MemoryRegion::register(&pd, &buf, ALL).expect("MR");
    let cq = CompletionQueue::new(&dev, 6, 0).expect("CQ");
    let base = QpCaps { sq_log_size: 4, rq_log_size: 4, mulpdu: 1024, ird: 4, ord: 4, crc: true, markers: false, conn_id: 0 };
    let mut with_crc = QueuePair::new(&dev, &pd, &cq, &cq, QpCaps { conn_id: 10, ..base }).expect("QP");
    let mut without = QueuePair::new(&dev, &pd, &cq, &cq, QpCaps { crc: false, conn_id: 11, ..base }).expect("QP");
    with_crc.ready().expect("RTS");
    without.ready().expect("RTS");

    // Transmit: a Send on each QP. The CRC QP's FPDU carries CRC32c over everything before
    // the field; the other one's field is zero.
    for qp in [&mut with_crc, &mut without] {
        qp.post_send(&WorkRequest::Send { wr_id: 1, local: mr.sge(0, 100).unwrap(), solicited: false, invalidate: None, signaled: false })
            .expect("send");
    }
    run_until(&dev, || peer.sent.borrow().len() >= 2);
    let sent = peer.sent.borrow().clone();
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
    peer.send(&bogus, without.qpn());
    peer.send(&send_fpdu(&payload, true), with_crc.qpn());
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
    peer.send(&corrupted, with_crc.qpn());
    dev.hal().run_idle(3_000);
    assert!(cq.poll().expect("CQE").is_none(), "a corrupted FPDU completes nothing");
    assert!((3000..3200).all(|i| buf.read_u8(i) == 0xAB), "and places nothing");
}

#[test]
fn markers_are_not_offered_and_a_qp_asking_for_them_is_refused() {
    let dev = Device::open(SimHal::open("rnic_top").expect("rnic_top model")).expect("RNIC");
    assert!(dev.info().features.crc);
    assert!(!dev.info().features.markers);
    let pd = ProtectionDomain::new(&dev).expect("PD");
    let cq = CompletionQueue::new(&dev, 4, 0).expect("CQ");
    let caps = QpCaps { markers: true, ..QpCaps::default() };
    assert!(matches!(QueuePair::new(&dev, &pd, &cq, &cq, caps), Err(DriverError::Unsupported("MPA markers"))));
}
