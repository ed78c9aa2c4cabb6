//! The rping protocol of rdma-core's librdmacm examples, on one simulated RNIC whose stream
//! runs over a kernel TCP connection: MPA setup by `rnic_driver::cm`, the RNIC's stream by
//! a socket bridge. It talks to a real `rping` on Linux soft-iWARP, or to itself.
//!
//! One ping, as rping does it: the client fills its start buffer with
//! `"rdma-ping-<n>: "` and a rotating run of letters and sends its address, STag and size
//! (`struct rping_rdma_info`: be64 address, be32 rkey, be32 size); the server RDMA Reads
//! it and answers with a Send; the client sends where its RDMA buffer is; the server RDMA
//! Writes the text there (`strlen + 1` octets) and answers with a Send; the client checks
//! that the two buffers hold the same text.
use std::cell::RefCell;
use std::net::{SocketAddr, TcpListener};
use std::rc::Rc;
use std::time::{Duration, Instant};

use rnic_driver::cm::{accept, connect, Decision, Established, MpaConfig};
use rnic_driver::sim::{SimHal, SocketBridge};
use rnic_driver::{
    Completion, CompletionQueue, CqeOpcode, CqeStatus, Device, DmaBuffer, MemoryRegion, MrAccess, ProtectionDomain,
    QpCaps, QueuePair, RecvRequest, RemoteBuf, WorkRequest,
};
use rnic_proto::host::context::MAX_READS;
use rnic_proto::pcap::{Endpoint, Side, TcpCapture};

const ALL: MrAccess = MrAccess { local_write: true, remote_read: true, remote_write: true, remote_atomic: false };
/// `struct rping_rdma_info`.
const INFO_LEN: usize = 16;
/// The bridge's connection id (CONN_ID) of the one connection.
const CONN_ID: u16 = 1;

/// Which end of rping this is.
#[derive(Clone, Copy, Debug)]
pub enum Role {
    Client(SocketAddr),
    Server(SocketAddr),
    /// Connect, then send one RFC 7306 FetchAdd (add 0) instead of pinging: the probe of
    /// RFC 7306 §1.1. A peer without the extension must answer with a Terminate, which
    /// must surface as the QP's error, not a hang.
    ProbeFetchAdd(SocketAddr),
}

/// How to run.
#[derive(Clone, Debug)]
pub struct RpingConfig {
    pub role: Role,
    /// Pings (the client's count; the server answers as many).
    pub count: u32,
    /// Buffer size (rping `-S`), at least 32.
    pub size: usize,
    pub mpa: MpaConfig,
    /// Give up after this long.
    pub timeout: Duration,
    /// Write the connection's FPDUs, both ways, with its MPA frames, to this packet
    /// capture (whether the run succeeds or not).
    pub pcap: Option<std::path::PathBuf>,
}

/// Buffer layout in one DMA region: start buffer, RDMA buffer, receive and send info.
struct Layout {
    size: usize,
}

impl Layout {
    fn start(&self) -> usize {
        0
    }
    fn rdma(&self) -> usize {
        self.size.next_multiple_of(64)
    }
    fn recv(&self) -> usize {
        2 * self.size.next_multiple_of(64)
    }
    fn send(&self) -> usize {
        self.recv() + 64
    }
    fn len(&self) -> usize {
        self.send() + 64
    }
}

/// The text rping puts in its start buffer for ping `n` (`start` is the first letter).
pub fn ping_text(n: u32, start: u8, size: usize) -> Vec<u8> {
    let mut text = format!("rdma-ping-{n}: ").into_bytes();
    let mut c = start;
    while text.len() < size {
        text.push(c);
        c = if c >= 122 { 65 } else { c + 1 };
    }
    text.truncate(size);
    text[size - 1] = 0;
    text
}

/// One end: the device, its bridge, memory, queue pair.
struct End<'d> {
    dev: &'d Device<SimHal>,
    bridge: &'d SocketBridge,
    buf: &'d DmaBuffer<'d, SimHal>,
    mr: MemoryRegion<'d, SimHal>,
    cq: &'d CompletionQueue<'d, SimHal>,
    qp: QueuePair<'d, SimHal>,
    layout: Layout,
    deadline: Instant,
    next_wr: u64,
}

impl End<'_> {
    /// Clocks the device until a completion arrives; fails on an error status or the
    /// deadline.
    fn completion(&mut self) -> Result<Completion, String> {
        // Cycles left to finish what arrived before the peer closed the connection.
        let mut grace = 20_000u64;
        loop {
            if let Some(c) = self.cq.poll().map_err(|e| e.to_string())? {
                if c.status != CqeStatus::Success {
                    return Err(format!("a work request failed: {c:?} ({:?})", self.qp.error()));
                }
                return Ok(c);
            }
            if let Some(why) = self.bridge.ended(CONN_ID) {
                grace = grace.checked_sub(256).ok_or(format!("the connection ended: {why}"))?;
            }
            if Instant::now() > self.deadline {
                return Err(format!("timed out waiting for a completion ({})", self.state()));
            }
            self.dev.hal().run_idle(256);
        }
    }

    /// What the connection and the QP have done, for a report.
    fn state(&self) -> String {
        let qp = self
            .qp
            .query()
            .map(|(ctx, status)| format!("QP {:?}, SQ taken {}, RQ taken {}", ctx.state, status.sq_ci, status.rq_ci));
        format!(
            "bridge {:?}, {} octets unsent; {}",
            self.bridge.counts(CONN_ID),
            self.bridge.unsent(),
            qp.unwrap_or_else(|e| e.to_string())
        )
    }

    /// Clocks the device until the bridge has handed everything sent to the socket.
    fn flush(&mut self) -> Result<(), String> {
        while self.bridge.unsent() > 0 {
            if Instant::now() > self.deadline {
                return Err("timed out sending the last messages".into());
            }
            self.dev.hal().run_idle(256);
        }
        Ok(())
    }

    /// Waits until a completion of `opcode` arrives (others, such as Send completions,
    /// are taken on the way).
    fn wait_for(&mut self, opcode: CqeOpcode) -> Result<Completion, String> {
        loop {
            let c = self.completion()?;
            if c.opcode == opcode {
                return Ok(c);
            }
        }
    }

    fn post_recv(&mut self) -> Result<(), String> {
        let local = self.mr.sge(self.layout.recv() as u64, INFO_LEN as u32).map_err(|e| e.to_string())?;
        self.next_wr += 1;
        self.qp.post_recv(&RecvRequest { wr_id: self.next_wr, local }).map_err(|e| e.to_string())
    }

    fn post(&mut self, wr: WorkRequest) -> Result<(), String> {
        self.qp.post_send(&wr).map_err(|e| e.to_string())
    }

    fn wr_id(&mut self) -> u64 {
        self.next_wr += 1;
        self.next_wr
    }

    /// Sends `struct rping_rdma_info` for the buffer at `offset`.
    fn send_info(&mut self, offset: usize) -> Result<(), String> {
        let mut info = (self.mr.va() + offset as u64).to_be_bytes().to_vec();
        info.extend_from_slice(&self.mr.rkey().to_be_bytes());
        info.extend_from_slice(&(self.layout.size as u32).to_be_bytes());
        self.buf.write_bytes(self.layout.send(), &info);
        let (wr_id, local) =
            (self.wr_id(), self.mr.sge(self.layout.send() as u64, INFO_LEN as u32).map_err(|e| e.to_string())?);
        self.post(WorkRequest::Send { wr_id, local, solicited: false, invalidate: None, signaled: true })
    }

    /// The peer's `struct rping_rdma_info` just received.
    fn received_info(&self) -> RemoteBuf {
        let mut info = [0; INFO_LEN];
        self.buf.read_bytes(self.layout.recv(), &mut info);
        let (addr, rkey) =
            (u64::from_be_bytes(info[..8].try_into().unwrap()), u32::from_be_bytes(info[8..12].try_into().unwrap()));
        RemoteBuf { stag: rkey, to: addr }
    }

    fn received_len(&self) -> u32 {
        let mut info = [0; INFO_LEN];
        self.buf.read_bytes(self.layout.recv(), &mut info);
        u32::from_be_bytes(info[12..16].try_into().unwrap())
    }

    fn text(&self, offset: usize) -> Vec<u8> {
        let mut out = vec![0; self.layout.size];
        self.buf.read_bytes(offset, &mut out);
        out
    }
}

/// Runs rping; returns one line per ping.
pub fn run(config: &RpingConfig) -> Result<Vec<String>, String> {
    let deadline = Instant::now() + config.timeout;
    let established: Established = match config.role {
        Role::Client(addr) | Role::ProbeFetchAdd(addr) => {
            connect(addr, &config.mpa).map_err(|e| format!("connecting to {addr}: {e}"))?
        }
        Role::Server(addr) => {
            let listener = TcpListener::bind(addr).map_err(|e| format!("listening on {addr}: {e}"))?;
            accept(&listener, &config.mpa, |_| Decision::Accept).map_err(|e| format!("accepting on {addr}: {e}"))?
        }
    };
    let hal = SimHal::open("rnic_top").map_err(|e| format!("the rnic_top model: {e}"))?;
    let bridge = hal.attach_socket_bridge();
    let dev = Device::open(hal).map_err(|e| e.to_string())?;
    dev.enable();
    let layout = Layout { size: config.size.max(32) };
    let pd = ProtectionDomain::new(&dev).map_err(|e| e.to_string())?;
    let buf = dev.alloc_dma(layout.len()).map_err(|e| e.to_string())?;
    let mr = MemoryRegion::register(&pd, &buf, ALL).map_err(|e| e.to_string())?;
    let cq = CompletionQueue::new(&dev, 6, 0).map_err(|e| e.to_string())?;
    let caps = QpCaps {
        mulpdu: 1024,
        ird: established.ird.clamp(1, MAX_READS.into()) as u8,
        ord: established.ord.clamp(1, MAX_READS.into()) as u8,
        crc: established.tx.crc,
        markers_tx: established.tx.markers,
        markers_rx: established.rx.markers,
        conn_id: CONN_ID,
        ..QpCaps::default()
    };
    let mut qp = QueuePair::new(&dev, &pd, &cq, &cq, caps).map_err(|e| e.to_string())?;
    qp.ready().map_err(|e| e.to_string())?;
    let on = |b: bool| if b { "on" } else { "off" };
    let setup = format!(
        "connected: MPA revision {}, CRC {}, markers sent {} received {}, IRD {} ORD {}, peer-to-peer {}",
        established.peer_rev,
        on(established.tx.crc),
        on(established.tx.markers),
        on(established.rx.markers),
        caps.ird,
        caps.ord,
        on(established.peer_to_peer)
    );
    let capture = config.pcap.as_ref().map(|_| capture_of(&established, matches!(config.role, Role::Server(_))));
    bridge.add(established.stream, qp.qpn(), CONN_ID, established.rx.markers).map_err(|e| e.to_string())?;
    if let Some((capture, conn, side)) = &capture {
        bridge.capture(CONN_ID, Rc::clone(capture), *conn, *side);
    }
    let mut end = End { dev: &dev, bridge: &bridge, buf: &buf, mr, cq: &cq, qp, layout, deadline, next_wr: 0 };
    end.post_recv()?;
    let pings = match config.role {
        Role::Client(_) => client(&mut end, config.count),
        Role::Server(_) => server(&mut end, config.count),
        Role::ProbeFetchAdd(_) => probe_fetch_add(&mut end),
    };
    if let (Some(path), Some((capture, ..))) = (&config.pcap, &capture) {
        std::fs::write(path, capture.borrow().bytes()).map_err(|e| format!("writing {}: {e}", path.display()))?;
    }
    Ok(std::iter::once(setup).chain(pings?).collect())
}

/// A capture of the connection, opened with its MPA frames between its real addresses.
fn capture_of(established: &Established, server: bool) -> (Rc<RefCell<TcpCapture>>, rnic_proto::pcap::ConnId, Side) {
    // The capture is IPv4: another address family is shown as 0.0.0.0.
    let endpoint = |addr: std::io::Result<SocketAddr>| match addr {
        Ok(SocketAddr::V4(a)) => Endpoint { ip: a.ip().octets(), port: a.port() },
        Ok(a) => Endpoint { ip: [0; 4], port: a.port() },
        Err(_) => Endpoint { ip: [0; 4], port: 0 },
    };
    let (local, peer) = (endpoint(established.stream.local_addr()), endpoint(established.stream.peer_addr()));
    let (initiator, responder, side) =
        if server { (peer, local, Side::Responder) } else { (local, peer, Side::Initiator) };
    let mut capture = TcpCapture::new();
    let conn = capture.connect(initiator, responder, &established.frames[0], &established.frames[1], 0);
    (Rc::new(RefCell::new(capture)), conn, side)
}

fn client(end: &mut End<'_>, count: u32) -> Result<Vec<String>, String> {
    let mut lines = Vec::new();
    for ping in 0..count {
        let text = ping_text(ping, 65 + (ping % 58) as u8, end.layout.size);
        end.buf.write_bytes(end.layout.start(), &text);
        end.buf.write_bytes(end.layout.rdma(), &vec![0; end.layout.size]);
        // Where to read; the server reads it, then says go on.
        end.send_info(end.layout.start())?;
        end.wait_for(CqeOpcode::Recv)?;
        end.post_recv()?;
        // Where to write; the server writes the text back, then says done.
        end.send_info(end.layout.rdma())?;
        end.wait_for(CqeOpcode::Recv)?;
        end.post_recv()?;
        let (sent, back) = (end.text(end.layout.start()), end.text(end.layout.rdma()));
        let len = sent.iter().position(|&b| b == 0).unwrap_or(sent.len()) + 1;
        if sent[..len] != back[..len] {
            return Err(format!("ping {ping}: the data came back different"));
        }
        lines.push(format!("ping data: {}", String::from_utf8_lossy(&sent[..len - 1])));
    }
    Ok(lines)
}

fn probe_fetch_add(end: &mut End<'_>) -> Result<Vec<String>, String> {
    let (wr_id, local) = (end.wr_id(), end.mr.sge(end.layout.send() as u64, 8).map_err(|e| e.to_string())?);
    let remote = RemoteBuf { stag: 0, to: 0 };
    end.post(WorkRequest::FetchAdd { wr_id, local, remote, add: 0, add_mask: 0, signaled: true })?;
    // The FetchAdd must end: completed (the peer has the extension) or flushed once the
    // peer's Terminate moved the QP to ERROR.
    loop {
        if Instant::now() > end.deadline {
            return Err(format!("the FetchAdd never completed ({})", end.state()));
        }
        end.dev.hal().run_idle(256);
        let Some(c) = end.cq.poll().map_err(|e| e.to_string())? else { continue };
        if c.wr_id != wr_id {
            continue;
        }
        let error = end.qp.error().map_err(|e| e.to_string())?;
        return Ok(vec![match (c.status, error) {
            (CqeStatus::Success, _) => "probe: the peer executed the FetchAdd: it has RFC 7306 atomics".into(),
            (status, Some(e)) => {
                format!("probe: the peer refused the FetchAdd: {e} (the FetchAdd completed {status:?})")
            }
            (status, None) => format!("probe: the FetchAdd completed {status:?}, the QP has no error"),
        }]);
    }
}

fn server(end: &mut End<'_>, count: u32) -> Result<Vec<String>, String> {
    let mut lines = Vec::new();
    for ping in 0..count {
        // The client's start buffer: read it into ours.
        end.wait_for(CqeOpcode::Recv)?;
        let (source, len) = (end.received_info(), end.received_len().min(end.layout.size as u32));
        end.post_recv()?;
        let (wr_id, local) = (end.wr_id(), end.mr.sge(end.layout.rdma() as u64, len).map_err(|e| e.to_string())?);
        end.post(WorkRequest::Read { wr_id, local, remote: source, signaled: true })?;
        end.wait_for(CqeOpcode::RdmaRead)?;
        end.send_info(end.layout.rdma())?;
        // Where to write it back.
        end.wait_for(CqeOpcode::Recv)?;
        let sink = end.received_info();
        end.post_recv()?;
        let text = end.text(end.layout.rdma());
        let strlen = text.iter().position(|&b| b == 0).unwrap_or(text.len()) + 1;
        let (wr_id, local) =
            (end.wr_id(), end.mr.sge(end.layout.rdma() as u64, strlen as u32).map_err(|e| e.to_string())?);
        end.post(WorkRequest::Write { wr_id, local, remote: sink, signaled: true })?;
        end.wait_for(CqeOpcode::RdmaWrite)?;
        end.send_info(end.layout.rdma())?;
        lines.push(format!("server ping {ping}: {}", String::from_utf8_lossy(&text[..strlen - 1])));
    }
    // The last Send must reach the socket before the connection goes.
    end.wait_for(CqeOpcode::Send)?;
    end.flush()?;
    Ok(lines)
}
