//! Connection setup: the MPA Request/Reply exchange (RFC 5044 §7.1, RFC 6581 revision 2
//! with IRD/ORD) on a kernel TCP connection, before the connection is handed to the RNIC
//! with what was negotiated.
//!
//! [`connect`] is the active side (it sends the Request), [`accept`] the passive side. Both
//! read exactly one frame, so FPDUs that follow it stay in the socket for the RNIC. CRCs
//! are used unless both sides decline them, markers per direction as the other side asks
//! (RFC 5044 §7.1.1), and IRD/ORD as RFC 6581 §9.1 sets them: neither side may have more
//! reads outstanding than the other can answer. Every wait is bounded by the timeout.
//!
//! Peer-to-peer mode (RFC 6581 §9.2): the initiator offers it with the A bit and a
//! zero-length RDMA Write as its ready-to-receive (RTR) message; the responder accepts by
//! echoing both. The initiator then sends the RTR, framed as negotiated, before anything
//! else, and the responder takes it off the stream (checking its CRC) before the RNIC sees
//! the stream. Only the Write RTR is spoken: a Send RTR would use up an MSN and a Read RTR
//! needs a Read Response, both of which belong to the RNIC. The RTR moves the marker
//! positions of the stream, so peer-to-peer mode with markers is refused.
use std::io::{ErrorKind, Read, Write};
use std::net::{SocketAddr, TcpListener, TcpStream};
use std::time::{Duration, Instant};

use rnic_proto::cm::{negotiate_framing, FrameKind, IrdOrd, MpaFrame, FRAME_HEADER_LEN};
use rnic_proto::host::context::MAX_READS;
use rnic_proto::mpa::{pad_len, Deframer, Framer, FramingConfig};
use rnic_proto::rdmap::{parse_ulpdu, Opcode, Segment};

/// What this end asks for.
#[derive(Clone, Debug)]
pub struct MpaConfig {
    /// Ask for CRCs (used unless both ends decline).
    pub crc: bool,
    /// Ask the peer to send markers.
    pub markers: bool,
    /// Read Requests this end answers at once (inbound read depth).
    pub ird: u16,
    /// Read Requests this end may have outstanding (outbound read depth).
    pub ord: u16,
    /// 1 (RFC 5044) or 2 (RFC 6581, with the IRD/ORD word).
    pub rev: u8,
    /// ULP private data (at most 508 octets with revision 2, 512 with 1).
    pub private_data: Vec<u8>,
    /// Bound on the whole exchange.
    pub timeout: Duration,
    /// How long the active side waits after the Reply before it hands the connection on.
    /// Linux soft-iWARP arms its receive path only after it has sent its Reply: an FPDU
    /// that arrives before then can lie unread until more data comes.
    pub settle: Duration,
    /// Offer (initiator) or accept (responder) peer-to-peer mode with a Write RTR.
    pub peer_to_peer: bool,
}

impl Default for MpaConfig {
    fn default() -> Self {
        MpaConfig {
            crc: true,
            markers: false,
            ird: MAX_READS as u16,
            ord: MAX_READS as u16,
            rev: 2,
            private_data: Vec::new(),
            timeout: Duration::from_secs(5),
            settle: Duration::from_millis(100),
            peer_to_peer: false,
        }
    }
}

/// A connection in Full Operation, ready for the RNIC.
#[derive(Debug)]
pub struct Established {
    pub stream: TcpStream,
    /// How this end frames what it sends.
    pub tx: FramingConfig,
    /// How the peer frames what this end receives.
    pub rx: FramingConfig,
    /// The negotiated IRD and ORD of this end.
    pub ird: u16,
    pub ord: u16,
    /// The peer's private data (without the IRD/ORD word) and revision.
    pub peer_private_data: Vec<u8>,
    pub peer_rev: u8,
    /// Peer-to-peer mode: the RTR has been sent (initiator) or received (responder).
    pub peer_to_peer: bool,
    /// The frames exchanged, Request then Reply (for captures and logs).
    pub frames: [MpaFrame; 2],
}

/// Whether the passive side accepts a Request.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Decision {
    Accept,
    /// Accept, with this private data in the Reply instead of the configured one (what
    /// the application gives only once it has seen the Request).
    AcceptWith(Vec<u8>),
    /// Reject, with private data for the peer (RFC 5044 §7.1.1: R = 1).
    Reject(Vec<u8>),
}

/// Why a connection could not be set up.
#[derive(Debug, thiserror::Error)]
pub enum CmError {
    #[error("TCP: {0}")]
    Io(#[from] std::io::Error),
    #[error("no MPA frame from the peer within {0:?}")]
    Timeout(Duration),
    #[error("the peer closed the connection during MPA setup")]
    Closed,
    #[error("invalid MPA frame (MPA error 4): {0}")]
    Frame(#[from] rnic_proto::cm::CmError),
    #[error("the peer rejected the connection (private data {private_data:02x?})")]
    Rejected { private_data: Vec<u8> },
    #[error("this end rejected the connection")]
    RejectedHere,
    #[error("peer-to-peer mode: {0}")]
    PeerToPeer(String),
}

/// Connects to `addr` and sends the Request; returns the connection once the Reply
/// accepted it.
pub fn connect(addr: SocketAddr, config: &MpaConfig) -> Result<Established, CmError> {
    let deadline = Instant::now() + config.timeout;
    let mut stream = TcpStream::connect_timeout(&addr, config.timeout)?;
    stream.set_nodelay(true)?;
    let request = frame(FrameKind::Request, config, config.ird, config.ord);
    stream.write_all(&request.encode()?)?;
    let reply = read_frame(&mut stream, FrameKind::Reply, deadline, config.timeout)?;
    if reply.reject {
        return Err(CmError::Rejected { private_data: reply.private_data });
    }
    let framing = negotiate_framing(&request, &reply);
    std::thread::sleep(config.settle);
    // The responder's IRD bounds our ORD and its ORD our IRD.
    let (ird, ord) = match reply.ird_ord {
        Some(w) => (config.ird.min(w.ord), config.ord.min(w.ird)),
        None => (config.ird, config.ord),
    };
    let peer_to_peer = reply.ird_ord.is_some_and(|w| w.effective().peer_to_peer);
    if peer_to_peer {
        let w = reply.ird_ord.expect("peer-to-peer comes in the IRD/ORD word");
        if !config.peer_to_peer || !w.write_rtr {
            return Err(CmError::PeerToPeer(format!("the responder chose an RTR this end did not offer: {w:?}")));
        }
        let tx = framing.initiator_to_responder;
        if tx.markers || framing.responder_to_initiator.markers {
            return Err(CmError::PeerToPeer("markers with an RTR are not supported".into()));
        }
        let mut rtr = Vec::new();
        Framer::new(tx).frame(&Segment::write(0, 0, &[]).to_vec(), &mut rtr).expect("a zero-length Write frames");
        stream.write_all(&rtr)?;
    }
    Ok(Established {
        stream,
        tx: framing.initiator_to_responder,
        rx: framing.responder_to_initiator,
        ird,
        ord,
        peer_private_data: reply.private_data.clone(),
        peer_rev: reply.rev,
        peer_to_peer,
        frames: [request, reply],
    })
}

/// Accepts one connection on `listener`, reads its Request and answers it as `decide`
/// says (a rejection is sent, then reported as [`CmError::RejectedHere`]).
pub fn accept(
    listener: &TcpListener,
    config: &MpaConfig,
    decide: impl FnOnce(&MpaFrame) -> Decision,
) -> Result<Established, CmError> {
    let deadline = Instant::now() + config.timeout;
    listener.set_nonblocking(true)?;
    let stream = loop {
        match listener.accept() {
            Ok((stream, _)) => break stream,
            Err(e) if e.kind() == ErrorKind::WouldBlock && Instant::now() < deadline => {
                std::thread::sleep(Duration::from_millis(2))
            }
            Err(e) if e.kind() == ErrorKind::WouldBlock => return Err(CmError::Timeout(config.timeout)),
            Err(e) => return Err(e.into()),
        }
    };
    listener.set_nonblocking(false)?;
    answer(stream, deadline, config, decide)
}

/// The passive side on a TCP connection already accepted: reads its Request and answers
/// it as `decide` says, as [`accept`] does.
pub fn accept_on(
    stream: TcpStream,
    config: &MpaConfig,
    decide: impl FnOnce(&MpaFrame) -> Decision,
) -> Result<Established, CmError> {
    answer(stream, Instant::now() + config.timeout, config, decide)
}

/// Reads the Request on `stream` and answers it.
fn answer(
    mut stream: TcpStream,
    deadline: Instant,
    config: &MpaConfig,
    decide: impl FnOnce(&MpaFrame) -> Decision,
) -> Result<Established, CmError> {
    stream.set_nonblocking(false)?;
    stream.set_nodelay(true)?;
    let request = read_frame(&mut stream, FrameKind::Request, deadline, config.timeout)?;
    // Answer no more reads than the initiator may issue, and issue no more than it answers.
    let (ird, ord) = match request.ird_ord {
        Some(w) => (config.ird.min(w.ord), config.ord.min(w.ird)),
        None => (config.ird, config.ord),
    };
    let mut reply = frame(FrameKind::Reply, config, ird, ord);
    reply.rev = reply.rev.min(request.rev.max(1));
    if reply.rev < 2 {
        reply.ird_ord = None;
    }
    // Peer-to-peer when both want it and the initiator offers the Write RTR.
    let offered = request.ird_ord.map(|w| w.effective()).filter(|w| w.peer_to_peer && w.write_rtr);
    let peer_to_peer = config.peer_to_peer && offered.is_some() && !config.markers && !request.markers;
    if let (true, Some(w)) = (peer_to_peer, reply.ird_ord.as_mut()) {
        (w.peer_to_peer, w.write_rtr) = (true, true);
    }
    match decide(&request) {
        Decision::Accept => {}
        Decision::AcceptWith(private_data) => reply.private_data = private_data,
        Decision::Reject(private_data) => {
            reply.reject = true;
            reply.private_data = private_data;
            stream.write_all(&reply.encode()?)?;
            return Err(CmError::RejectedHere);
        }
    }
    stream.write_all(&reply.encode()?)?;
    let framing = negotiate_framing(&request, &reply);
    if peer_to_peer {
        read_rtr(&mut stream, framing.initiator_to_responder.crc, deadline, config.timeout)?;
    }
    Ok(Established {
        stream,
        tx: framing.responder_to_initiator,
        rx: framing.initiator_to_responder,
        ird,
        ord,
        peer_private_data: request.private_data.clone(),
        peer_rev: request.rev,
        peer_to_peer,
        frames: [request, reply],
    })
}

/// Takes the initiator's RTR, a zero-length RDMA Write FPDU without markers, off the
/// stream (exactly its octets, so what follows stays for the RNIC) and deframes it,
/// checking its CRC when CRCs are on.
fn read_rtr(stream: &mut TcpStream, crc: bool, deadline: Instant, timeout: Duration) -> Result<(), CmError> {
    let mut fpdu = vec![0; 2];
    read_exact_by(stream, &mut fpdu, deadline, timeout)?;
    let ulpdu_len = usize::from(u16::from_be_bytes([fpdu[0], fpdu[1]]));
    fpdu.resize(2 + ulpdu_len + pad_len(ulpdu_len) + 4, 0);
    read_exact_by(stream, &mut fpdu[2..], deadline, timeout)?;
    let mut deframer = Deframer::new(FramingConfig { crc, markers: false });
    deframer.push(&fpdu);
    let ulpdu = match deframer.pop() {
        Some(Ok(ulpdu)) => ulpdu,
        other => return Err(CmError::PeerToPeer(format!("the RTR does not deframe: {other:?}"))),
    };
    match parse_ulpdu(&ulpdu) {
        Ok(seg) if seg.opcode == Opcode::RdmaWrite && seg.payload.is_empty() => Ok(()),
        other => Err(CmError::PeerToPeer(format!("expected a zero-length RDMA Write as RTR, got {other:?}"))),
    }
}

fn frame(kind: FrameKind, config: &MpaConfig, ird: u16, ord: u16) -> MpaFrame {
    let frame = MpaFrame {
        markers: config.markers,
        crc: config.crc,
        private_data: config.private_data.clone(),
        ..MpaFrame::new(kind)
    };
    // The initiator offers peer-to-peer mode here; the responder sets the bits it accepts.
    let offer = kind == FrameKind::Request && config.peer_to_peer;
    match config.rev {
        1 => frame,
        _ => frame.enhanced(IrdOrd { ird, ord, peer_to_peer: offer, write_rtr: offer, ..IrdOrd::default() }),
    }
}

/// Reads exactly one frame of `kind`, by `deadline`.
fn read_frame(
    stream: &mut TcpStream,
    kind: FrameKind,
    deadline: Instant,
    timeout: Duration,
) -> Result<MpaFrame, CmError> {
    let mut buf = vec![0; FRAME_HEADER_LEN];
    read_exact_by(stream, &mut buf, deadline, timeout)?;
    let total = MpaFrame::frame_len(&buf)?;
    buf.resize(total, 0);
    read_exact_by(stream, &mut buf[FRAME_HEADER_LEN..], deadline, timeout)?;
    Ok(MpaFrame::decode_as(&buf, kind)?.0)
}

fn read_exact_by(
    stream: &mut TcpStream,
    mut buf: &mut [u8],
    deadline: Instant,
    timeout: Duration,
) -> Result<(), CmError> {
    while !buf.is_empty() {
        let left = deadline.saturating_duration_since(Instant::now());
        if left.is_zero() {
            return Err(CmError::Timeout(timeout));
        }
        stream.set_read_timeout(Some(left))?;
        match stream.read(buf) {
            Ok(0) => return Err(CmError::Closed),
            Ok(n) => buf = &mut buf[n..],
            Err(e) if matches!(e.kind(), ErrorKind::WouldBlock | ErrorKind::TimedOut) => {
                return Err(CmError::Timeout(timeout))
            }
            Err(e) if e.kind() == ErrorKind::Interrupted => {}
            Err(e) => return Err(e.into()),
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Runs `accept` on a thread and `connect` here.
    fn exchange(
        active: MpaConfig,
        passive: MpaConfig,
        decision: Decision,
    ) -> (Result<Established, CmError>, Result<Established, CmError>) {
        let listener = TcpListener::bind("127.0.0.1:0").expect("bind");
        let addr = listener.local_addr().expect("addr");
        let server = std::thread::spawn(move || accept(&listener, &passive, |_| decision));
        let client = connect(addr, &active);
        (client, server.join().expect("the passive side"))
    }

    #[test]
    fn mpa_05_14_crc_unless_both_decline_and_markers_per_direction() {
        let (a, b) = exchange(
            MpaConfig { crc: false, markers: true, ..MpaConfig::default() },
            MpaConfig { crc: true, markers: false, ..MpaConfig::default() },
            Decision::Accept,
        );
        let (a, b) = (a.expect("active"), b.expect("passive"));
        // The active end asked for markers: the passive one sends them.
        assert_eq!(
            (a.tx, a.rx),
            (FramingConfig { crc: true, markers: false }, FramingConfig { crc: true, markers: true })
        );
        assert_eq!((b.tx, b.rx), (a.rx, a.tx));
        let (a, _) = exchange(
            MpaConfig { crc: false, ..MpaConfig::default() },
            MpaConfig { crc: false, ..MpaConfig::default() },
            Decision::Accept,
        );
        assert!(!a.expect("active").tx.crc, "both declined");
    }

    #[test]
    fn mpa2_ird_ord_never_exceed_what_the_other_side_answers() {
        let (a, b) = exchange(
            MpaConfig { ird: 8, ord: 2, ..MpaConfig::default() },
            MpaConfig { ird: 1, ord: 16, ..MpaConfig::default() },
            Decision::Accept,
        );
        let (a, b) = (a.expect("active"), b.expect("passive"));
        assert_eq!((a.ird, a.ord), (8, 1), "the active end reads at most what the passive answers");
        assert_eq!((b.ird, b.ord), (1, 8));
        assert_eq!((a.peer_rev, b.peer_rev), (2, 2));
    }

    #[test]
    fn private_data_crosses_and_a_rejection_carries_its_own() {
        let (a, b) = exchange(
            MpaConfig { private_data: b"hello".to_vec(), ..MpaConfig::default() },
            MpaConfig { private_data: b"welcome".to_vec(), ..MpaConfig::default() },
            Decision::Accept,
        );
        assert_eq!(a.expect("active").peer_private_data, b"welcome");
        assert_eq!(b.expect("passive").peer_private_data, b"hello");
        let (a, b) = exchange(MpaConfig::default(), MpaConfig::default(), Decision::Reject(b"busy".to_vec()));
        assert!(matches!(a, Err(CmError::Rejected { ref private_data }) if private_data == b"busy"), "{a:?}");
        assert!(matches!(b, Err(CmError::RejectedHere)));
    }

    #[test]
    fn mpa2_peer_to_peer_the_write_rtr_is_sent_and_taken_off_the_stream() {
        let p2p = MpaConfig { peer_to_peer: true, ..MpaConfig::default() };
        let (a, b) = exchange(p2p.clone(), p2p.clone(), Decision::Accept);
        let (mut a, mut b) = (a.expect("active"), b.expect("passive"));
        assert!(a.peer_to_peer && b.peer_to_peer);
        // The RTR is gone from the stream: the next octets are the first the active end sends.
        a.stream.write_all(b"FPDU").expect("write");
        let mut next = [0; 4];
        b.stream.read_exact(&mut next).expect("read");
        assert_eq!(&next, b"FPDU");
        // Offered but not wanted: plain client/server mode, no RTR.
        let (a, b) = exchange(p2p, MpaConfig::default(), Decision::Accept);
        assert!(!a.expect("active").peer_to_peer && !b.expect("passive").peer_to_peer);
    }

    #[test]
    fn mpa2_a_bad_rtr_is_refused() {
        let listener = TcpListener::bind("127.0.0.1:0").expect("bind");
        let addr = listener.local_addr().expect("addr");
        let p2p = MpaConfig { peer_to_peer: true, ..MpaConfig::default() };
        let server = std::thread::spawn(move || accept(&listener, &p2p, |_| Decision::Accept));
        let mut s = TcpStream::connect(addr).expect("connect");
        let request = frame(FrameKind::Request, &MpaConfig { peer_to_peer: true, ..MpaConfig::default() }, 4, 4);
        s.write_all(&request.encode().expect("encode")).expect("request");
        let mut rtr = Vec::new();
        Framer::new(FramingConfig { crc: true, markers: false })
            .frame(&Segment::write(0, 0, &[]).to_vec(), &mut rtr)
            .expect("frame");
        let n = rtr.len();
        rtr[n - 1] ^= 1;
        s.write_all(&rtr).expect("rtr");
        let got = server.join().expect("thread");
        assert!(matches!(got, Err(CmError::PeerToPeer(ref why)) if why.contains("Crc")), "{got:?}");
    }

    #[test]
    fn a_revision_1_peer_gets_a_revision_1_reply() {
        let (a, b) = exchange(MpaConfig { rev: 1, ..MpaConfig::default() }, MpaConfig::default(), Decision::Accept);
        assert_eq!((a.expect("active").peer_rev, b.expect("passive").peer_rev), (1, 1));
    }

    #[test]
    fn a_silent_peer_times_out_and_a_closing_one_is_reported() {
        let listener = TcpListener::bind("127.0.0.1:0").expect("bind");
        let addr = listener.local_addr().expect("addr");
        let start = Instant::now();
        let config = MpaConfig { timeout: Duration::from_millis(300), ..MpaConfig::default() };
        // The kernel completes the TCP handshake; nobody answers the Request.
        let silent = connect(addr, &config);
        assert!(matches!(silent, Err(CmError::Timeout(_))), "{silent:?}");
        assert!(start.elapsed() < Duration::from_secs(3), "bounded by the timeout");
        let closer = std::thread::spawn(move || {
            let (mut s, _) = listener.accept().expect("accept");
            let mut request = [0; 24];
            s.read_exact(&mut request).expect("the Request");
        });
        let closed = connect(addr, &config);
        closer.join().expect("closer");
        assert!(matches!(closed, Err(CmError::Closed | CmError::Io(_))), "{closed:?}");
    }

    #[test]
    fn mpa_18_a_request_where_a_reply_belongs_is_an_invalid_frame() {
        let listener = TcpListener::bind("127.0.0.1:0").expect("bind");
        let addr = listener.local_addr().expect("addr");
        let impostor = std::thread::spawn(move || {
            let (mut s, _) = listener.accept().expect("accept");
            let mut request = [0; 24];
            s.read_exact(&mut request).expect("the Request");
            s.write_all(&MpaFrame::new(FrameKind::Request).encode().expect("frame")).expect("write");
        });
        let got = connect(addr, &MpaConfig::default());
        impostor.join().expect("impostor");
        assert!(matches!(got, Err(CmError::Frame(rnic_proto::cm::CmError::WrongKind { .. }))), "{got:?}");
    }
}
