//! Receive side of MPA: recovering ULPDUs from the octet stream
//! (RFC 5044 §4.4, §5.2, §8).
//!
//! The receiver is in-order: it finds each FPDU from the previous one's
//! ULPDU_Length (§5.2), waits until the whole FPDU is present (CHECKLIST
//! MPA-16), checks the CRC over exactly the octets the sender covered
//! (markers included), strips the markers and checks their FPDUPTR. After the
//! first error it delivers nothing more on this half-connection (§8,
//! CHECKLIST MPA-08 and MPA-25).

use super::markers::{fpdu_wire_len, is_marker_pos, room_before_marker, Marker, MARKER_LEN};
use super::{crc32c, crc_from_field, pad_len, FramingConfig, MpaError};

/// Drop already-consumed octets once this many have accumulated, so the
/// buffer does not grow with the life of the connection.
const COMPACT_THRESHOLD: usize = 64 * 1024;

/// Reassembles ULPDUs from stream octets pushed in any chunking.
#[derive(Clone, Debug)]
pub struct Deframer {
    cfg: FramingConfig,
    buf: Vec<u8>,
    /// Index in `buf` of the first octet not yet consumed.
    head: usize,
    /// Stream position of `buf[head]`.
    pos: u64,
    /// Set by the first error: nothing is delivered afterwards.
    failed: bool,
}

impl Deframer {
    /// A deframer at the start of Full Operation (stream position 0).
    pub fn new(cfg: FramingConfig) -> Self {
        Deframer { cfg, buf: Vec::new(), head: 0, pos: 0, failed: false }
    }

    /// A deframer whose next FPDU starts at stream position `position` (octets since the
    /// start of Full Operation: where its markers fall).
    pub fn at(cfg: FramingConfig, position: u64) -> Self {
        Deframer { pos: position, ..Deframer::new(cfg) }
    }

    /// Stream position of the next octet to be parsed.
    pub fn position(&self) -> u64 {
        self.pos
    }

    /// Octets received but not yet consumed by a complete FPDU.
    pub fn buffered(&self) -> usize {
        self.buf.len() - self.head
    }

    /// True once an error has been reported; the half-connection is then dead.
    pub fn has_failed(&self) -> bool {
        self.failed
    }

    /// Appends received stream octets. Ignored after an error.
    pub fn push(&mut self, bytes: &[u8]) {
        if self.failed {
            return;
        }
        if self.head == self.buf.len() {
            self.buf.clear();
            self.head = 0;
        } else if self.head >= COMPACT_THRESHOLD {
            self.buf.drain(..self.head);
            self.head = 0;
        }
        self.buf.extend_from_slice(bytes);
    }

    /// The next ULPDU, `None` when more octets are needed (or after an error).
    ///
    /// A CRC mismatch is reported before a marker mismatch, because a bad CRC
    /// means the marker octets themselves cannot be trusted.
    pub fn pop(&mut self) -> Option<Result<Vec<u8>, MpaError>> {
        if self.failed {
            return None;
        }
        let avail = &self.buf[self.head..];
        let markers = self.cfg.markers;
        let lead = if markers && is_marker_pos(self.pos) { MARKER_LEN } else { 0 };
        let len_octets = avail.get(lead..lead + 2)?;
        let ulpdu_len = usize::from(u16::from_be_bytes([len_octets[0], len_octets[1]]));
        let content_len = 2 + ulpdu_len + pad_len(ulpdu_len);
        let wire = fpdu_wire_len(self.pos, content_len, markers);
        let fpdu = avail.get(..wire)?;

        let result = check_crc(self.cfg, fpdu).and_then(|()| strip_markers(self.pos, markers, fpdu, content_len)).map(
            |mut content| {
                content.truncate(2 + ulpdu_len);
                content.drain(..2);
                content
            },
        );
        match result {
            Ok(ulpdu) => {
                self.head += wire;
                self.pos = self.pos.wrapping_add(wire as u64);
                Some(Ok(ulpdu))
            }
            Err(e) => {
                self.failed = true;
                self.buf = Vec::new();
                self.head = 0;
                Some(Err(e))
            }
        }
    }
}

impl Deframer {
    /// The ULPDU of one packet of a stream cut at FPDU boundaries, one packet per FPDU
    /// (the stream contract of `rnic_top`'s RX port, kept by whoever cuts the stream: the
    /// socket bridge, a TCP engine). The packet must be exactly the FPDU that starts at
    /// the current position (its length, markers included, from its ULPDU_Length), else
    /// it is out of step ([`MpaError::OutOfStep`]); then its CRC is checked and its
    /// markers, as [`Deframer::pop`] does. This is the order of `rnic_top`'s deframer: out
    /// of step first (the CRC and markers were not where it read them), then CRC, then
    /// markers. After an error nothing more is delivered (`None`), as on a stream.
    ///
    /// Not for a deframer that was also [`push`](Deframer::push)ed octets.
    pub fn pop_packet(&mut self, packet: &[u8]) -> Option<Result<Vec<u8>, MpaError>> {
        if self.failed {
            return None;
        }
        debug_assert_eq!(self.buffered(), 0, "a deframer fed packets is not also fed octets");
        let lead = if self.cfg.markers && is_marker_pos(self.pos) { MARKER_LEN } else { 0 };
        let fpdu = packet.get(lead..lead + 2).map(|l| {
            let ulpdu_len = usize::from(u16::from_be_bytes([l[0], l[1]]));
            fpdu_wire_len(self.pos, 2 + ulpdu_len + pad_len(ulpdu_len), self.cfg.markers)
        });
        if fpdu != Some(packet.len()) {
            self.failed = true;
            return Some(Err(MpaError::OutOfStep { packet: packet.len(), fpdu }));
        }
        self.push(packet);
        self.pop()
    }
}

/// Compares the CRC field with the CRC of everything before it (§4.4).
fn check_crc(cfg: FramingConfig, fpdu: &[u8]) -> Result<(), MpaError> {
    if !cfg.crc {
        // "MUST NOT be checked" when CRCs are off (§4.1).
        return Ok(());
    }
    let split = fpdu.len() - 4;
    let (covered, field) = fpdu.split_at(split);
    let received = crc_from_field([field[0], field[1], field[2], field[3]]);
    let computed = crc32c(covered);
    if computed == received {
        Ok(())
    } else {
        Err(MpaError::Crc { computed, received })
    }
}

/// Walks the FPDU exactly as the transmitter laid it out, returning the
/// content (ULPDU_Length | ULPDU | PAD) with the markers removed.
fn strip_markers(pos: u64, markers: bool, fpdu: &[u8], content_len: usize) -> Result<Vec<u8>, MpaError> {
    let mut content = Vec::with_capacity(content_len);
    if !markers {
        content.extend_from_slice(&fpdu[..content_len]);
        return Ok(content);
    }
    let mut cur = pos;
    let mut i = 0usize;
    if is_marker_pos(cur) {
        check_marker(cur, &fpdu[i..i + MARKER_LEN], 0)?;
        i += MARKER_LEN;
        cur = cur.wrapping_add(MARKER_LEN as u64);
    }
    let start = cur;
    while content.len() < content_len {
        if is_marker_pos(cur) {
            check_marker(cur, &fpdu[i..i + MARKER_LEN], cur.wrapping_sub(start) as u16)?;
            i += MARKER_LEN;
            cur = cur.wrapping_add(MARKER_LEN as u64);
        }
        let take = room_before_marker(cur).min(content_len - content.len());
        content.extend_from_slice(&fpdu[i..i + take]);
        i += take;
        cur = cur.wrapping_add(take as u64);
    }
    if is_marker_pos(cur) {
        check_marker(cur, &fpdu[i..i + MARKER_LEN], cur.wrapping_sub(start) as u16)?;
    }
    Ok(content)
}

/// Checks one marker's FPDUPTR; reserved bits and the two low FPDUPTR bits
/// are ignored (§4.2, §4.3, CHECKLIST MPA-10).
fn check_marker(position: u64, octets: &[u8], expected: u16) -> Result<(), MpaError> {
    let marker = Marker::from_bytes([octets[0], octets[1], octets[2], octets[3]]);
    if marker.effective_fpduptr() == expected & !3 {
        Ok(())
    } else {
        Err(MpaError::Marker { position, fpduptr: marker.fpduptr, expected })
    }
}
