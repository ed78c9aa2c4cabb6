//! Carrying a device's streams over kernel TCP connections, for a device without a TCP
//! engine: each FPDU the device sends goes to the socket of its CONN_ID, and the octets a
//! socket receives are cut at the FPDU boundaries their ULPDU_Lengths (and markers) give,
//! each FPDU handed to the device whole, for the connection's QP.
//!
//! [`SocketConn`] is one connection's socket side. [`RingBridge`] moves FPDUs between
//! sockets and the device's [`StreamRings`] (a card, or the simulated RTL with its rings
//! on); the simulator's `SocketBridge` does the same on the model's stream ports.
use std::collections::VecDeque;
use std::io::{ErrorKind, Read, Write};
use std::net::TcpStream;

use crate::stream::StreamRings;
use crate::{DriverError, Hal};

/// What a bridged connection has carried so far.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct BridgeCounts {
    /// Octets written to the socket, and FPDUs the device sent.
    pub octets_out: u64,
    pub fpdus_out: u64,
    /// Octets read from the socket, and FPDUs cut from them for the device.
    pub octets_in: u64,
    pub fpdus_in: u64,
}

/// One connection's socket, non-blocking: FPDUs out, whole FPDUs in.
pub struct SocketConn {
    stream: TcpStream,
    /// Whether received FPDUs carry markers, and the stream position of `inbox[0]`.
    rx_markers: bool,
    rx_pos: u64,
    inbox: Vec<u8>,
    outbox: VecDeque<u8>,
    /// What ended the connection, if it ended.
    ended: Option<String>,
    counts: BridgeCounts,
    /// Where socket reads land before they join `inbox` (kept, not zeroed per read).
    scratch: Vec<u8>,
}

impl SocketConn {
    /// Takes over `stream` in Full Operation from its next octet; `rx_markers` says
    /// whether the peer sends markers.
    pub fn new(stream: TcpStream, rx_markers: bool) -> std::io::Result<Self> {
        stream.set_nonblocking(true)?;
        stream.set_nodelay(true)?;
        Ok(SocketConn {
            stream,
            rx_markers,
            rx_pos: 0,
            inbox: Vec::new(),
            outbox: VecDeque::new(),
            ended: None,
            counts: BridgeCounts::default(),
            scratch: vec![0; 16 * 1024],
        })
    }

    /// Why the connection ended (closed by the peer, a socket error), if it did.
    pub fn ended(&self) -> Option<&str> {
        self.ended.as_deref()
    }

    /// What it has carried, and the octets received that do not make a whole FPDU yet.
    pub fn counts(&self) -> (BridgeCounts, usize) {
        (self.counts, self.inbox.len())
    }

    /// Octets queued for the socket that it has not taken yet.
    pub fn unsent(&self) -> usize {
        self.outbox.len()
    }

    /// Queues an FPDU the device sent; [`SocketConn::flush`] writes it.
    pub fn send(&mut self, fpdu: &[u8]) {
        self.outbox.extend(fpdu);
        self.counts.fpdus_out += 1;
    }

    /// Writes what the socket takes of the queued octets.
    pub fn flush(&mut self) {
        while self.ended.is_none() && !self.outbox.is_empty() {
            let (front, _) = self.outbox.as_slices();
            match self.stream.write(front) {
                Ok(n) => {
                    self.outbox.drain(..n);
                    self.counts.octets_out += n as u64;
                }
                Err(e) if e.kind() == ErrorKind::WouldBlock => break,
                Err(e) => self.ended = Some(format!("write: {e}")),
            }
        }
    }

    /// Reads what the socket has (one read); false if it had nothing or has ended.
    pub fn read(&mut self) -> bool {
        if self.ended.is_some() {
            return false;
        }
        match self.stream.read(&mut self.scratch) {
            Ok(0) => {
                self.ended = Some("closed by the peer".into());
                false
            }
            Ok(n) => {
                self.inbox.extend_from_slice(&self.scratch[..n]);
                self.counts.octets_in += n as u64;
                true
            }
            Err(e) if e.kind() == ErrorKind::WouldBlock => false,
            Err(e) => {
                self.ended = Some(format!("read: {e}"));
                false
            }
        }
    }

    /// The FPDU at the front of what was received, once all of it is there.
    pub fn next_fpdu(&self) -> Option<&[u8]> {
        // FPDUs are multiples of 4 octets, so a marker never splits ULPDU_Length.
        let at = if self.rx_markers && self.rx_pos.is_multiple_of(512) { 4 } else { 0 };
        let length = usize::from(u16::from_be_bytes([*self.inbox.get(at)?, *self.inbox.get(at + 1)?]));
        let content = 2 + length + rnic_proto::mpa::pad_len(length);
        let wire = rnic_proto::mpa::markers::fpdu_wire_len(self.rx_pos, content, self.rx_markers);
        self.inbox.get(..wire)
    }

    /// Drops the front FPDU ([`SocketConn::next_fpdu`]) once the device has it.
    pub fn consume_fpdu(&mut self) {
        if let Some(len) = self.next_fpdu().map(<[u8]>::len) {
            self.inbox.drain(..len);
            self.rx_pos += len as u64;
            self.counts.fpdus_in += 1;
        }
    }
}

/// Moves FPDUs between the device's stream rings and its connections' sockets.
#[derive(Default)]
pub struct RingBridge {
    conns: Vec<RingConn>,
    /// TX records whose CONN_ID no connection has.
    unrouted: u64,
    /// Whether such records go back into the RX ring for the QP their CONN_ID names (a
    /// connection between two QPs of the device), and those waiting for room there.
    loop_back: bool,
    looped: VecDeque<(u16, Vec<u8>)>,
}

struct RingConn {
    socket: SocketConn,
    qpn: u16,
    conn_id: u16,
}

impl RingBridge {
    /// A bridge with no connections.
    pub fn new() -> Self {
        RingBridge::default()
    }

    /// A bridge that also loops back: a record whose CONN_ID no socket has goes into the RX
    /// ring for the QP that CONN_ID names, so QPs of the device connected to each other
    /// (each one's CONN_ID the other's number) talk inside it, as the simulator's switch
    /// does on its stream ports.
    pub fn with_loop_back() -> Self {
        RingBridge { loop_back: true, ..RingBridge::default() }
    }

    /// Stops carrying connection `conn_id` and closes its socket (the peer sees the TCP
    /// connection end). Whether it was there.
    pub fn remove(&mut self, conn_id: u16) -> bool {
        let before = self.conns.len();
        self.conns.retain(|c| c.conn_id != conn_id);
        self.conns.len() != before
    }

    /// Carries QP `qpn` (whose CONN_ID is `conn_id`) over `stream`, in Full Operation
    /// from its next octet; `rx_markers` says whether the peer sends markers.
    pub fn add(&mut self, stream: TcpStream, qpn: u32, conn_id: u16, rx_markers: bool) -> std::io::Result<()> {
        let qpn = u16::try_from(qpn).map_err(|_| std::io::Error::other(format!("QP {qpn} has no 16-bit number")))?;
        self.conns.push(RingConn { socket: SocketConn::new(stream, rx_markers)?, qpn, conn_id });
        Ok(())
    }

    /// One round: the TX ring's records to their sockets, then from each socket as many
    /// whole FPDUs as the RX ring takes (reading more only when none is left waiting, so
    /// TCP's flow control reaches a peer the device is slower than). Returns the FPDUs
    /// moved; a stopped ring is an error.
    pub fn pump<H: Hal + ?Sized>(&mut self, rings: &mut StreamRings<'_, H>) -> Result<usize, DriverError> {
        let mut moved = 0;
        for record in rings.take_tx()? {
            match self.conns.iter_mut().find(|c| c.conn_id == record.conn_id) {
                Some(c) => c.socket.send(&record.fpdu),
                None if self.loop_back => self.looped.push_back((record.conn_id, record.fpdu)),
                None => self.unrouted += 1,
            }
            moved += 1;
        }
        while let Some((qpn, fpdu)) = self.looped.front() {
            if !rings.push_rx(*qpn, fpdu)? {
                break;
            }
            self.looped.pop_front();
        }
        for c in &mut self.conns {
            c.socket.flush();
            loop {
                while let Some(fpdu) = c.socket.next_fpdu() {
                    if !rings.push_rx(c.qpn, fpdu)? {
                        break;
                    }
                    c.socket.consume_fpdu();
                    moved += 1;
                }
                if c.socket.next_fpdu().is_some() || !c.socket.read() {
                    break;
                }
            }
        }
        // (Also how a stopped RX ring shows, before it fills.)
        rings.rx_pending()?;
        Ok(moved)
    }

    fn conn(&self, conn_id: u16) -> Option<&SocketConn> {
        self.conns.iter().find(|c| c.conn_id == conn_id).map(|c| &c.socket)
    }

    /// Why connection `conn_id` ended, if it did.
    pub fn ended(&self, conn_id: u16) -> Option<String> {
        self.conn(conn_id).and_then(|c| c.ended().map(str::to_string))
    }

    /// What connection `conn_id` has carried, and the octets received that do not make a
    /// whole FPDU yet.
    pub fn counts(&self, conn_id: u16) -> Option<(BridgeCounts, usize)> {
        self.conn(conn_id).map(SocketConn::counts)
    }

    /// Octets the device sent that wait for their socket, over all connections.
    pub fn unsent(&self) -> usize {
        self.conns.iter().map(|c| c.socket.unsent()).sum()
    }

    /// TX records that named a CONN_ID no connection has (dropped, unless looped back).
    pub fn unrouted(&self) -> u64 {
        self.unrouted
    }
}
