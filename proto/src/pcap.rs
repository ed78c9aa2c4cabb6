//! Packet captures of iWARP connections (libpcap format, Ethernet/IPv4/TCP) that Wireshark
//! and tshark decode with their MPA, DDP and RDMAP dissectors.
//!
//! A [`TcpCapture`] turns byte streams into frames with real TCP sequence numbers: each
//! connection opens with a three-way handshake and then the MPA Request and Reply, which is
//! what the dissectors need to recognise the stream as MPA and learn whether it carries
//! CRCs and markers; after that every call to [`TcpCapture::data`] is one or more TCP
//! segments of the FPDUs it is given. Markers are placed by the framer relative to the first
//! octet after the Reply, as RFC 5044 §4.3 counts them from the start of Full Operation.
//! Checksums (IPv4 header, TCP) are computed.
use crate::cm::MpaFrame;

/// libpcap: magic (microsecond timestamps), version 2.4, snap length, link type Ethernet.
const PCAP_MAGIC: u32 = 0xA1B2_C3D4;
const SNAPLEN: u32 = 65_535;
const LINKTYPE_ETHERNET: u32 = 1;
/// The largest TCP payload of one frame (an Ethernet MTU of 1500).
pub const MSS: usize = 1460;
const TCP_SYN: u8 = 0x02;
const TCP_ACK: u8 = 0x10;
const TCP_PSH: u8 = 0x08;

/// One end of a connection: IPv4 address and TCP port.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Endpoint {
    /// IPv4 address.
    pub ip: [u8; 4],
    /// TCP port.
    pub port: u16,
}

/// A connection being captured: its ends and next sequence numbers.
#[derive(Clone, Debug)]
struct Connection {
    ends: [Endpoint; 2],
    next_seq: [u32; 2],
}

/// A capture being built in memory.
#[derive(Clone, Debug)]
pub struct TcpCapture {
    out: Vec<u8>,
    connections: Vec<Connection>,
}

/// A connection of a [`TcpCapture`].
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct ConnId(usize);

/// Which end sends: the one that connected (and sent the MPA Request) or the one that
/// accepted.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Side {
    /// Connected, sent the MPA Request.
    Initiator,
    /// Accepted, sent the MPA Reply.
    Responder,
}

impl Default for TcpCapture {
    fn default() -> Self {
        Self::new()
    }
}

impl TcpCapture {
    /// An empty capture (the file header only).
    pub fn new() -> Self {
        let mut out = PCAP_MAGIC.to_le_bytes().to_vec();
        out.extend_from_slice(&[2, 0, 4, 0]); // version 2.4
        for word in [0, 0, SNAPLEN, LINKTYPE_ETHERNET] {
            out.extend_from_slice(&word.to_le_bytes()); // time zone, accuracy, snap length, link
        }
        TcpCapture { out, connections: Vec::new() }
    }

    /// Opens a connection from `initiator` to `responder` at time `time_us`: SYN, SYN-ACK,
    /// ACK, then `request` from the initiator and `reply` from the responder.
    pub fn connect(
        &mut self,
        initiator: Endpoint,
        responder: Endpoint,
        request: &MpaFrame,
        reply: &MpaFrame,
        time_us: u64,
    ) -> ConnId {
        // Initial sequence numbers vary per connection so that streams are told apart.
        let n = self.connections.len() as u32;
        let isn = [0x1000_0000u32.wrapping_add(n.wrapping_mul(0x0101_0000)), 0x8000_0000u32.wrapping_add(n << 20)];
        let id = ConnId(self.connections.len());
        self.connections.push(Connection { ends: [initiator, responder], next_seq: isn });
        self.segment(id, Side::Initiator, TCP_SYN, &[], time_us);
        self.segment(id, Side::Responder, TCP_SYN | TCP_ACK, &[], time_us);
        self.segment(id, Side::Initiator, TCP_ACK, &[], time_us);
        // Encoding a frame fails only for private data over 512 octets.
        self.data(id, Side::Initiator, &request.encode().expect("an MPA Request that encodes"), time_us);
        self.data(id, Side::Responder, &reply.encode().expect("an MPA Reply that encodes"), time_us);
        id
    }

    /// Octets `from` sends on `conn` at `time_us`, as TCP segments of at most [`MSS`].
    pub fn data(&mut self, conn: ConnId, from: Side, octets: &[u8], time_us: u64) {
        for chunk in octets.chunks(MSS) {
            self.segment(conn, from, TCP_ACK | TCP_PSH, chunk, time_us);
        }
    }

    /// The capture file's octets.
    pub fn bytes(&self) -> &[u8] {
        &self.out
    }

    fn segment(&mut self, conn: ConnId, from: Side, flags: u8, payload: &[u8], time_us: u64) {
        let (me, peer) = match from {
            Side::Initiator => (0, 1),
            Side::Responder => (1, 0),
        };
        let c = &mut self.connections[conn.0];
        let (src, dst) = (c.ends[me], c.ends[peer]);
        let seq = c.next_seq[me];
        // A SYN takes one sequence number; the other side's next octet is what we ack.
        let consumed = payload.len() as u32 + u32::from(flags & TCP_SYN != 0);
        c.next_seq[me] = seq.wrapping_add(consumed);
        let ack = if flags & TCP_ACK != 0 { c.next_seq[peer] } else { 0 };

        let mut tcp = Vec::with_capacity(20 + payload.len());
        tcp.extend_from_slice(&src.port.to_be_bytes());
        tcp.extend_from_slice(&dst.port.to_be_bytes());
        tcp.extend_from_slice(&seq.to_be_bytes());
        tcp.extend_from_slice(&ack.to_be_bytes());
        tcp.extend_from_slice(&[5 << 4, flags]);
        tcp.extend_from_slice(&u16::MAX.to_be_bytes()); // window
        tcp.extend_from_slice(&[0, 0, 0, 0]); // checksum, urgent pointer
        tcp.extend_from_slice(payload);
        let mut pseudo = Vec::with_capacity(12 + tcp.len());
        pseudo.extend_from_slice(&src.ip);
        pseudo.extend_from_slice(&dst.ip);
        pseudo.extend_from_slice(&[0, 6]);
        pseudo.extend_from_slice(&(tcp.len() as u16).to_be_bytes());
        pseudo.extend_from_slice(&tcp);
        let sum = checksum(&pseudo);
        tcp[16..18].copy_from_slice(&sum.to_be_bytes());

        let mut ip = vec![0x45, 0];
        ip.extend_from_slice(&((20 + tcp.len()) as u16).to_be_bytes());
        ip.extend_from_slice(&[0, 0, 0x40, 0, 64, 6, 0, 0]); // id, don't fragment, TTL, TCP
        ip.extend_from_slice(&src.ip);
        ip.extend_from_slice(&dst.ip);
        let sum = checksum(&ip);
        ip[10..12].copy_from_slice(&sum.to_be_bytes());

        let mac = |e: Endpoint| [0x02, 0, e.ip[0], e.ip[1], e.ip[2], e.ip[3]];
        let mut frame = Vec::with_capacity(14 + ip.len() + tcp.len());
        frame.extend_from_slice(&mac(dst));
        frame.extend_from_slice(&mac(src));
        frame.extend_from_slice(&0x0800u16.to_be_bytes());
        frame.extend_from_slice(&ip);
        frame.extend_from_slice(&tcp);

        let (secs, micros) = ((time_us / 1_000_000) as u32, (time_us % 1_000_000) as u32);
        for word in [secs, micros, frame.len() as u32, frame.len() as u32] {
            self.out.extend_from_slice(&word.to_le_bytes());
        }
        self.out.extend_from_slice(&frame);
    }
}

/// The Internet checksum (RFC 1071) of `data`.
fn checksum(data: &[u8]) -> u16 {
    let mut sum: u32 = data.chunks(2).map(|c| u32::from(u16::from_be_bytes([c[0], *c.get(1).unwrap_or(&0)]))).sum();
    while sum > 0xFFFF {
        sum = (sum & 0xFFFF) + (sum >> 16);
    }
    !(sum as u16)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::cm::FrameKind;

    fn ends() -> (Endpoint, Endpoint) {
        (Endpoint { ip: [10, 0, 0, 1], port: 50_000 }, Endpoint { ip: [10, 0, 0, 2], port: 4_000 })
    }

    /// The frames of a capture: (timestamp µs, frame octets).
    fn frames(capture: &[u8]) -> Vec<(u64, Vec<u8>)> {
        let (mut at, mut out) = (24, Vec::new());
        while at < capture.len() {
            let word = |i: usize| u32::from_le_bytes(capture[at + i..at + i + 4].try_into().unwrap());
            let (time, len) = (u64::from(word(0)) * 1_000_000 + u64::from(word(4)), word(8) as usize);
            out.push((time, capture[at + 16..at + 16 + len].to_vec()));
            at += 16 + len;
        }
        out
    }

    #[test]
    fn a_connection_opens_with_the_handshake_and_mpa_frames_then_numbers_its_octets() {
        let (a, b) = ends();
        let mut cap = TcpCapture::new();
        assert_eq!(cap.bytes()[..8], [0xD4, 0xC3, 0xB2, 0xA1, 2, 0, 4, 0]);
        let (req, rep) = (MpaFrame::new(FrameKind::Request), MpaFrame::new(FrameKind::Reply));
        let conn = cap.connect(a, b, &req, &rep, 7);
        cap.data(conn, Side::Initiator, &vec![0xAB; 3000], 9);
        let f = frames(cap.bytes());
        assert_eq!(f.len(), 3 + 2 + 3, "handshake, Request, Reply, 3000 octets in 3 segments");
        let tcp = |i: usize| &f[i].1[34..];
        let seq = |i: usize| u32::from_be_bytes(tcp(i)[4..8].try_into().unwrap());
        let ack = |i: usize| u32::from_be_bytes(tcp(i)[8..12].try_into().unwrap());
        assert_eq!([tcp(0)[13], tcp(1)[13], tcp(2)[13]], [TCP_SYN, TCP_SYN | TCP_ACK, TCP_ACK]);
        assert_eq!(ack(1), seq(0).wrapping_add(1), "the SYN takes a sequence number");
        assert_eq!(seq(3), seq(0).wrapping_add(1), "the Request is the initiator's first octets");
        assert_eq!(&tcp(3)[20..36], b"MPA ID Req Frame");
        assert_eq!(&tcp(4)[20..36], b"MPA ID Rep Frame");
        assert_eq!(seq(5), seq(3).wrapping_add(20), "data follows the 20-octet Request");
        assert_eq!(seq(6), seq(5).wrapping_add(MSS as u32));
        assert_eq!(f[7].1.len(), 54 + 3000 - 2 * MSS);
        assert_eq!((f[0].0, f[7].0), (7, 9));
    }

    #[test]
    fn checksums_verify() {
        let (a, b) = ends();
        let mut cap = TcpCapture::new();
        let conn = cap.connect(a, b, &MpaFrame::new(FrameKind::Request), &MpaFrame::new(FrameKind::Reply), 0);
        cap.data(conn, Side::Responder, &[1, 2, 3], 0);
        for (_, frame) in frames(cap.bytes()) {
            assert_eq!(checksum(&frame[14..34]), 0, "IPv4 header");
            let tcp = &frame[34..];
            let mut pseudo = [&frame[26..34], &[0, 6], &(tcp.len() as u16).to_be_bytes()[..]].concat();
            pseudo.extend_from_slice(tcp);
            assert_eq!(checksum(&pseudo), 0, "TCP");
        }
    }
}
