//! The transmit path of the assembled top (`rnic_top`) driven by the real driver through
//! `SimHal`: Sends (all four kinds, empty ones too), RDMA Writes and RDMA Read Requests
//! posted on a QP go out on the TX stream as FPDUs (CRC on, markers off) whose ULPDUs
//! equal `rnic_proto::model::wire::request_ulpdus` for the same WQEs, with MSNs counted
//! from 1; Sends and Writes before the first Read complete in order with their lengths
//! once sent (those behind it wait for a Read Response no peer sends), and the
//! payload is read from registered host memory through the IOMMU model (a stray read
//! fails the test).
#![cfg(feature = "sim")]

use std::cell::RefCell;
use std::rc::Rc;

use rand::rngs::StdRng;
use rand::{Rng, SeedableRng};
use rnic_driver::sim::{Phase, SimHal};
use rnic_driver::{
    CompletionQueue, CqeOpcode, CqeStatus, Device, MemoryRegion, MrAccess, ProtectionDomain, QpCaps, QueuePair,
    RemoteBuf, WorkRequest,
};
use rnic_proto::model::wire::request_ulpdus;
use rnic_proto::mpa::{Deframer, FramingConfig};

const CAPS: QpCaps = QpCaps {
    sq_log_size: 4,
    rq_log_size: 2,
    mulpdu: 700,
    ird: 4,
    ord: 4,
    crc: true,
    markers_tx: false,
    markers_rx: false,
    conn_id: 7,
};
const MESSAGES: usize = 60;
const BUFFER: usize = 16 * 1024;

/// Takes the TX stream with random back-pressure; returns the octets so far.
fn tx_sink(hal: &SimHal, seed: u64) -> Rc<RefCell<Vec<u8>>> {
    let [data, keep, valid, ready] = hal.with_model(|m| {
        ["m_axis_tx_tdata", "m_axis_tx_tkeep", "m_axis_tx_tvalid", "m_axis_tx_tready"].map(|n| m.port(n))
    });
    let octets = Rc::new(RefCell::new(Vec::new()));
    let out = Rc::clone(&octets);
    let mut rng = StdRng::seed_from_u64(seed);
    let mut taking = false;
    hal.on_cycle(move |m, phase| match phase {
        Phase::Drive => {
            taking = rng.gen_bool(0.8);
            m.set_bit(ready, taking);
        }
        Phase::Observe => {
            if taking && m.get_bit(valid) {
                let mut beat = [0u8; 8];
                m.get_bytes(data, &mut beat);
                let k = m.get(keep);
                out.borrow_mut().extend((0..8).filter(|i| k >> i & 1 == 1).map(|i| beat[i]));
            }
        }
    });
    octets
}

#[test]
fn rdmap_06_07_11_rnic_top_transmits_what_the_reference_sends() {
    let hal = SimHal::open("rnic_top").expect("rnic_top model");
    let wire = tx_sink(&hal, 5);
    let dev = Device::open(hal).expect("rnic_top identifies as an RNIC");
    dev.enable();
    let pd = ProtectionDomain::new(&dev).expect("PD");
    let buffer = dev.alloc_dma(BUFFER).expect("DMA memory");
    let mut rng = StdRng::seed_from_u64(0x7a);
    let content: Vec<u8> = (0..BUFFER).map(|_| rng.gen()).collect();
    buffer.write_bytes(0, &content);
    let access = MrAccess { local_write: true, remote_read: false, remote_write: false, remote_atomic: false };
    let mr = MemoryRegion::register(&pd, &buffer, access).expect("MR");
    let cq = CompletionQueue::new(&dev, 7, 0).expect("CQ");
    let mut qp = QueuePair::new(&dev, &pd, &cq, &cq, CAPS).expect("QP");
    qp.ready().expect("RTS");

    // Random work, posted a few at a time as the SQ has room; the reference ULPDUs with it.
    let (mut expected_ulpdus, mut expected_cqes) = (Vec::new(), Vec::new());
    let (mut send_msn, mut read_msn) = (0u32, 0u32);
    let mut completions = Vec::new();
    let mut reads_posted = false;
    for n in 0..MESSAGES as u64 {
        let len = match rng.gen_range(0..8) {
            0 => 0,
            1..=4 => rng.gen_range(1..300),
            _ => rng.gen_range(300..3000),
        };
        let offset = rng.gen_range(0..(BUFFER - len) as u64);
        let local = mr.sge(offset, len as u32).expect("inside the MR");
        let remote = RemoteBuf { stag: rng.gen(), to: rng.gen() };
        let wr = match rng.gen_range(0..6) {
            0 => WorkRequest::Write { wr_id: n, local, remote, signaled: true },
            // Reads only at the end: nothing answers them, and completions behind them
            // wait (the requester holds four at most).
            1 if n + 3 >= MESSAGES as u64 => WorkRequest::Read { wr_id: n, local, remote, signaled: true },
            1 => WorkRequest::Write { wr_id: n, local, remote, signaled: true },
            k => WorkRequest::Send {
                wr_id: n,
                local,
                solicited: k % 2 == 0,
                invalidate: (k >= 4).then(|| rng.gen()),
                signaled: true,
            },
        };
        let wqe = wr.wqe();
        let msn = match wr {
            WorkRequest::Read { .. } => {
                read_msn += 1;
                read_msn
            }
            WorkRequest::Write { .. } => 0,
            WorkRequest::Send { .. } => {
                send_msn += 1;
                send_msn
            }
            _ => unreachable!("only Sends, Writes and Reads here"),
        };
        let payload = &content[offset as usize..offset as usize + len];
        expected_ulpdus.extend(request_ulpdus(&wqe, msn, payload, CAPS.mulpdu).expect("a supported opcode"));
        // A QP's completions stay in WQE order, and a Read completes only with its
        // response, which never comes here: nothing behind the first Read completes.
        if matches!(wr, WorkRequest::Read { .. }) {
            reads_posted = true;
        }
        if !reads_posted && !matches!(wr, WorkRequest::Read { .. }) {
            let opcode = if matches!(wr, WorkRequest::Write { .. }) { CqeOpcode::RdmaWrite } else { CqeOpcode::Send };
            expected_cqes.push((n, opcode, len as u32));
        }
        // Keep the SQ from filling: collect completions while posting.
        let mut posted = false;
        for _ in 0..200 {
            match qp.post_send(&wr) {
                Ok(()) => {
                    posted = true;
                    break;
                }
                Err(_) => {
                    dev.hal().run_idle(100);
                    while let Some(c) = cq.poll().expect("a CQE that decodes") {
                        completions.push(c);
                    }
                }
            }
        }
        assert!(posted, "work request {n} never found room in the SQ ({} completions so far)", completions.len());
    }
    for _ in 0..2_000 {
        dev.hal().run_idle(100);
        while let Some(c) = cq.poll().expect("a CQE that decodes") {
            completions.push(c);
        }
        if completions.len() == expected_cqes.len() {
            break;
        }
    }
    dev.hal().run_idle(2_000);

    // The wire: FPDUs back to back, CRC on, markers off.
    let mut deframer = Deframer::new(FramingConfig { markers: false, crc: true });
    deframer.push(&wire.borrow());
    let mut ulpdus = Vec::new();
    while let Some(u) = deframer.pop() {
        ulpdus.push(u.expect("a well-formed FPDU with a good CRC"));
    }
    assert_eq!(deframer.buffered(), 0, "octets left after the last FPDU");
    for (i, (got, want)) in ulpdus.iter().zip(&expected_ulpdus).enumerate() {
        assert_eq!(got, want, "ULPDU {i}");
    }
    assert_eq!(ulpdus.len(), expected_ulpdus.len(), "number of ULPDUs on the wire");
    let got: Vec<(u64, CqeOpcode, u32)> = completions
        .iter()
        .map(|c| {
            assert_eq!(c.status, CqeStatus::Success, "completion of {}", c.wr_id);
            (c.wr_id, c.opcode, c.byte_len)
        })
        .collect();
    assert_eq!(got, expected_cqes, "completions in order");
}
