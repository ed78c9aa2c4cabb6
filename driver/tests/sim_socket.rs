//! Two simulated RNICs over real kernel TCP on loopback: the driver sets each connection up
//! with MPA (`rnic_driver::cm`: Request/Reply, CRC and marker negotiation, IRD/ORD), each
//! device gets the options negotiated, and a `SocketBridge` carries its streams over the
//! socket. Sends, RDMA Writes and RDMA Reads of 64 octets and 64 KiB then cross the
//! kernel's TCP and are checked octet for octet: once with the streams on the model's
//! stream ports (the simulator's `SocketBridge`), once through the stream rings in host
//! memory (`StreamRings` and `RingBridge`, the code a card without a TCP engine runs).
#![cfg(feature = "sim")]

use std::net::TcpListener;
use std::time::{Duration, Instant};

use rnic_driver::bridge::RingBridge;
use rnic_driver::cm::{accept, connect, Decision, Established, MpaConfig};
use rnic_driver::sim::{SimHal, SocketBridge};
use rnic_driver::stream::StreamRings;
use rnic_driver::{
    Completion, CompletionQueue, CqeStatus, Device, MemoryRegion, MrAccess, ProtectionDomain, QpCaps, QueuePair,
    RecvRequest, WorkRequest,
};

const ALL: MrAccess = MrAccess { local_write: true, remote_read: true, remote_write: true, remote_atomic: true };
const BIG: usize = 64 * 1024;
/// Each end's buffer: what it sends at 0, what it receives at BIG.
const BUF: usize = 2 * BIG;

/// Sets a connection up: the passive end on a thread, the active one here.
fn establish(active: MpaConfig, passive: MpaConfig) -> (Established, Established) {
    let listener = TcpListener::bind("127.0.0.1:0").expect("bind");
    let addr = listener.local_addr().expect("address");
    let server = std::thread::spawn(move || accept(&listener, &passive, |_| Decision::Accept));
    let a = connect(addr, &active).expect("active side");
    (a, server.join().expect("passive thread").expect("passive side"))
}

/// Rings of 4 KiB: a record of the largest FPDU here (1 460 octets) fits twice, so the
/// rings wrap every few FPDUs and fill up often.
const RING_LOG2: u32 = 12;

/// How a device's streams reach its sockets.
enum Carrier<'h> {
    /// The model's stream ports, bridged by the simulator (every 32 cycles).
    Ports(SocketBridge),
    /// The stream rings in host memory, bridged by the driver.
    Rings(StreamRings<'h, SimHal>, RingBridge),
}

impl<'h> Carrier<'h> {
    fn new(dev: &'h Device<SimHal>, ports: Option<SocketBridge>) -> Self {
        match ports {
            Some(bridge) => Carrier::Ports(bridge),
            None => {
                Carrier::Rings(StreamRings::new(dev.hal(), RING_LOG2, RING_LOG2).expect("rings"), RingBridge::new())
            }
        }
    }

    fn add(&mut self, stream: std::net::TcpStream, qpn: u32, conn_id: u16, rx_markers: bool) {
        match self {
            Carrier::Ports(b) => b.add(stream, qpn, conn_id, rx_markers),
            Carrier::Rings(_, b) => b.add(stream, qpn, conn_id, rx_markers),
        }
        .expect("bridge");
    }

    fn pump(&mut self) {
        if let Carrier::Rings(rings, bridge) = self {
            bridge.pump(rings).expect("ring bridge");
        }
    }

    /// Why `conn_id` ended, if it did, and octets not yet written to any socket.
    fn state(&self, conn_id: u16) -> (Option<String>, usize) {
        match self {
            Carrier::Ports(b) => (b.ended(conn_id), b.unsent()),
            Carrier::Rings(_, b) => {
                assert_eq!(b.unrouted(), 0, "every TX record had its connection");
                (b.ended(conn_id), b.unsent())
            }
        }
    }
}

/// A device, with its stream ports bridged to sockets unless it is to use the rings.
fn device(rings: bool) -> (Device<SimHal>, Option<SocketBridge>) {
    let hal = SimHal::open("rnic_top").expect("rnic_top model");
    let bridge = (!rings).then(|| hal.attach_socket_bridge());
    let dev = Device::open(hal).expect("RNIC");
    dev.enable();
    (dev, bridge)
}

/// Clocks both devices until `cq` of each has given `want` completions, within bounds.
fn run_until(
    devs: [&Device<SimHal>; 2],
    carriers: &mut [Carrier<'_>; 2],
    cqs: [&CompletionQueue<'_, SimHal>; 2],
    want: [usize; 2],
) -> [Vec<Completion>; 2] {
    let (mut got, start) = ([Vec::new(), Vec::new()], Instant::now());
    for _ in 0..200_000 {
        for side in 0..2 {
            devs[side].hal().run_idle(64);
            carriers[side].pump();
            while let Some(c) = cqs[side].poll().expect("a CQE") {
                got[side].push(c);
            }
        }
        if got[0].len() >= want[0] && got[1].len() >= want[1] {
            return got;
        }
        assert!(start.elapsed() < Duration::from_secs(120), "no progress: {got:?}");
    }
    panic!("not all completions arrived: {got:?}");
}

fn transfer(active: MpaConfig, passive: MpaConfig, rings: bool) {
    let (ea, eb) = establish(active, passive);
    assert_eq!((ea.tx, ea.rx), (eb.rx, eb.tx), "both ends agree on the framing");
    let ((da, ba), (db, bb)) = (device(rings), device(rings));
    let mut carriers = [Carrier::new(&da, ba), Carrier::new(&db, bb)];
    let (pa, pb) = (ProtectionDomain::new(&da).expect("PD"), ProtectionDomain::new(&db).expect("PD"));
    let (bufa, bufb) = (da.alloc_dma(BUF).expect("DMA"), db.alloc_dma(BUF).expect("DMA"));
    let pattern = |seed: u8| (0..BUF).map(|i| (i as u8).wrapping_mul(31).wrapping_add(seed)).collect::<Vec<u8>>();
    bufa.write_bytes(0, &pattern(1)[..BIG]);
    bufb.write_bytes(0, &pattern(2)[..BIG]);
    let (mra, mrb) =
        (MemoryRegion::register(&pa, &bufa, ALL).expect("MR"), MemoryRegion::register(&pb, &bufb, ALL).expect("MR"));
    let (cqa, cqb) = (CompletionQueue::new(&da, 6, 0).expect("CQ"), CompletionQueue::new(&db, 6, 0).expect("CQ"));
    let caps = |e: &Established, conn_id| QpCaps {
        mulpdu: 1460 - 24,
        ird: e.ird as u8,
        ord: e.ord as u8,
        crc: e.tx.crc,
        markers_tx: e.tx.markers,
        markers_rx: e.rx.markers,
        conn_id,
        ..QpCaps::default()
    };
    let mut qpa = QueuePair::new(&da, &pa, &cqa, &cqa, caps(&ea, 11)).expect("QP");
    let mut qpb = QueuePair::new(&db, &pb, &cqb, &cqb, caps(&eb, 22)).expect("QP");
    qpa.ready().expect("RTS");
    qpb.ready().expect("RTS");
    let rx_markers = [ea.rx.markers, eb.rx.markers];
    carriers[0].add(ea.stream, qpa.qpn(), 11, rx_markers[0]);
    carriers[1].add(eb.stream, qpb.qpn(), 22, rx_markers[1]);

    // A Send of 64 octets into a receive at B, a 64 KiB Write to B, a 64 KiB Read from B.
    qpb.post_recv(&RecvRequest { wr_id: 1, local: mrb.sge(BIG as u64, 64).expect("sge") }).expect("receive");
    let send = WorkRequest::Send {
        wr_id: 2,
        local: mra.sge(0, 64).expect("sge"),
        solicited: false,
        invalidate: None,
        signaled: true,
    };
    let write = WorkRequest::Write {
        wr_id: 3,
        local: mra.sge(0, BIG as u32).expect("sge"),
        remote: mrb.remote(BIG as u64).expect("remote"),
        signaled: true,
    };
    let read = WorkRequest::Read {
        wr_id: 4,
        local: mra.sge(BIG as u64, BIG as u32).expect("sge"),
        remote: mrb.remote(0).expect("remote"),
        signaled: true,
    };
    qpa.post_send_batch(&[send]).expect("Send");
    let got = run_until([&da, &db], &mut carriers, [&cqa, &cqb], [1, 1]);
    assert!(got.iter().flatten().all(|c| c.status == CqeStatus::Success), "{got:?}");
    let mut received = vec![0; 64];
    bufb.read_bytes(BIG, &mut received);
    assert_eq!(received, pattern(1)[..64], "the Send arrived");

    qpa.post_send_batch(&[write, read]).expect("Write and Read");
    let got = run_until([&da, &db], &mut carriers, [&cqa, &cqb], [2, 0]);
    assert_eq!(
        got[0].iter().map(|c| (c.wr_id, c.status)).collect::<Vec<_>>(),
        [(3, CqeStatus::Success), (4, CqeStatus::Success)]
    );
    let (mut written, mut read_back) = (vec![0; BIG], vec![0; BIG]);
    bufb.read_bytes(BIG, &mut written);
    bufa.read_bytes(BIG, &mut read_back);
    assert!(written == pattern(1)[..BIG], "the 64 KiB Write arrived whole");
    assert!(read_back == pattern(2)[..BIG], "the 64 KiB Read came back whole");
    assert_eq!((carriers[0].state(11), carriers[1].state(22)), ((None, 0), (None, 0)));
}

#[test]
fn mpa_05_send_write_and_read_cross_kernel_tcp_with_crcs() {
    transfer(MpaConfig::default(), MpaConfig::default(), false);
}

#[test]
fn mpa_05_send_write_and_read_cross_kernel_tcp_through_the_stream_rings() {
    transfer(MpaConfig::default(), MpaConfig::default(), true);
}

#[test]
fn mpa_14_markers_in_one_direction_and_no_crc() {
    // The active end asks for markers (the passive one sends them); neither wants CRCs.
    transfer(
        MpaConfig { crc: false, markers: true, ..MpaConfig::default() },
        MpaConfig { crc: false, ..MpaConfig::default() },
        false,
    );
}

#[test]
fn mpa_14_markers_in_one_direction_and_no_crc_through_the_stream_rings() {
    transfer(
        MpaConfig { crc: false, markers: true, ..MpaConfig::default() },
        MpaConfig { crc: false, ..MpaConfig::default() },
        true,
    );
}
