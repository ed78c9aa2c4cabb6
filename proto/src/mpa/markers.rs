//! MPA markers: format (RFC 5044 §4.2) and placement (§4.3).
//!
//! A marker is `RESERVED (16) | FPDUPTR (16)`. The first marker sits
//! immediately before the first FPDU of Full Operation, and another one starts
//! at every 512th octet after it. Positions in this crate are counted in
//! octets from the first octet of that first marker ("stream position"), so a
//! marker starts wherever `position % 512 == 0`. Because every FPDU is a
//! multiple of 4 octets and 512 is too, markers always land on 4-octet
//! boundaries of the FPDU content and never split a field.
//!
//! FPDUPTR is the distance back from the marker to the FPDU's ULPDU_Length
//! field. A marker exactly between two FPDUs belongs to the following FPDU
//! and has FPDUPTR 0; a marker right after the PAD (before the CRC) belongs to
//! the FPDU it sits in.

/// Markers start every 512 octets of the stream (RFC 5044 §4.3).
pub const MARKER_INTERVAL: u64 = 512;

/// Size of a marker on the wire.
pub const MARKER_LEN: usize = 4;

/// One MPA marker (RFC 5044 §4.2, Figure 3).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Default)]
pub struct Marker {
    /// Reserved: zero on transmit, ignored on receive except by the CRC.
    pub reserved: u16,
    /// Octets from the ULPDU_Length field to the first octet of this marker.
    pub fpduptr: u16,
}

impl Marker {
    /// A marker as a transmitter writes it: reserved zero, low bits clear.
    pub fn new(fpduptr: u16) -> Self {
        Marker { reserved: 0, fpduptr: fpduptr & !3 }
    }

    /// The four wire octets (both halves big-endian).
    pub fn to_bytes(self) -> [u8; 4] {
        let r = self.reserved.to_be_bytes();
        let p = self.fpduptr.to_be_bytes();
        [r[0], r[1], p[0], p[1]]
    }

    /// Reads a marker from its four wire octets, keeping every bit as received.
    pub fn from_bytes(b: [u8; 4]) -> Self {
        Marker { reserved: u16::from_be_bytes([b[0], b[1]]), fpduptr: u16::from_be_bytes([b[2], b[3]]) }
    }

    /// FPDUPTR as a receiver must use it: the two low bits are reserved and
    /// "MUST be treated as zero for computation" (§4.3, CHECKLIST MPA-10).
    pub fn effective_fpduptr(self) -> u16 {
        self.fpduptr & !3
    }
}

/// True when a marker starts at TCP sequence number `seq` for a connection
/// whose first marker started at `seq_start`. Sequence numbers wrap, so the
/// distance is taken modulo 2^32 (§4.3, CHECKLIST MPA-11).
pub fn marker_at(seq_start: u32, seq: u32) -> bool {
    u64::from(seq.wrapping_sub(seq_start)) % MARKER_INTERVAL == 0
}

/// True when a marker starts at this stream position.
pub(crate) fn is_marker_pos(pos: u64) -> bool {
    // MARKER_INTERVAL is a power of two.
    pos & (MARKER_INTERVAL - 1) == 0
}

/// Octets from `pos` to the next marker position (512 when `pos` is one).
pub(crate) fn room_before_marker(pos: u64) -> usize {
    // Always in 1..=512, so the cast cannot truncate.
    (MARKER_INTERVAL - pos % MARKER_INTERVAL) as usize
}

/// Wire size of one FPDU that starts at stream position `pos` and whose
/// content (ULPDU_Length + ULPDU + PAD) is `content_len` octets: the content,
/// every marker that belongs to it (leading, embedded, after the PAD) and the
/// CRC field.
pub fn fpdu_wire_len(pos: u64, content_len: usize, markers: bool) -> usize {
    let crc = 4;
    if !markers {
        return content_len + crc;
    }
    let mut cur = pos;
    let mut wire = 0usize;
    let mut left = content_len;
    if is_marker_pos(cur) {
        // Marker between FPDUs: belongs to this one.
        cur = cur.wrapping_add(MARKER_LEN as u64);
        wire += MARKER_LEN;
    }
    while left > 0 {
        if is_marker_pos(cur) {
            cur = cur.wrapping_add(MARKER_LEN as u64);
            wire += MARKER_LEN;
        }
        let take = room_before_marker(cur).min(left);
        cur = cur.wrapping_add(take as u64);
        wire += take;
        left -= take;
    }
    if is_marker_pos(cur) {
        // Marker right after the PAD, before the CRC.
        wire += MARKER_LEN;
    }
    wire + crc
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn marker_round_trip() {
        let m = Marker { reserved: 0xffff, fpduptr: 0x0017 };
        assert_eq!(Marker::from_bytes(m.to_bytes()), m);
        assert_eq!(m.effective_fpduptr(), 0x0014);
        assert_eq!(Marker::new(0x0017).to_bytes(), [0, 0, 0, 0x14]);
    }

    #[test]
    fn wire_len_counts_markers() {
        // RFC 5044 Fig. 5: leading marker + 44 content + CRC.
        assert_eq!(fpdu_wire_len(0, 44, true), 52);
        // Fig. 6: starts at 0x1ec, one embedded marker.
        assert_eq!(fpdu_wire_len(0x1ec, 44, true), 52);
        assert_eq!(fpdu_wire_len(0x1ec, 44, false), 48);
    }
}
