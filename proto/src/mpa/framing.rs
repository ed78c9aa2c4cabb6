//! Transmit side of MPA: turning ULPDUs into FPDUs (RFC 5044 §4.1, §4.3, §4.4).

use super::markers::{is_marker_pos, room_before_marker, Marker, MARKER_LEN};
use super::{crc32c, crc_field, pad_len, FramingConfig, MpaError, MAX_ULPDU_LEN};

/// Frames ULPDUs for one half-connection.
///
/// The framer remembers the stream position (octets since the start of Full
/// Operation, i.e. since the first octet of the first FPDU or of the marker
/// that precedes it), because marker placement depends on where each FPDU
/// starts in the stream.
#[derive(Clone, Debug)]
pub struct Framer {
    cfg: FramingConfig,
    pos: u64,
}

impl Framer {
    /// A framer at the start of Full Operation (stream position 0).
    pub fn new(cfg: FramingConfig) -> Self {
        Framer { cfg, pos: 0 }
    }

    /// A framer whose next FPDU starts at stream position `position` (octets since the
    /// start of Full Operation: where its markers fall).
    pub fn at(cfg: FramingConfig, position: u64) -> Self {
        Framer { cfg, pos: position }
    }

    /// The configuration this framer was built with.
    pub fn config(&self) -> FramingConfig {
        self.cfg
    }

    /// Octets emitted so far, markers included.
    pub fn position(&self) -> u64 {
        self.pos
    }

    /// Appends to `out` the exact wire octets of one FPDU carrying `ulpdu`.
    ///
    /// With markers enabled this includes a marker that falls exactly before
    /// the FPDU (FPDUPTR 0, covered by this FPDU's CRC, §4.4 rule 2), every
    /// marker inside it, and a marker right after the PAD (covered by this
    /// CRC, §4.4 rule 1). With CRCs disabled the CRC field is four zero octets.
    pub fn frame(&mut self, ulpdu: &[u8], out: &mut Vec<u8>) -> Result<(), MpaError> {
        if ulpdu.len() > MAX_ULPDU_LEN {
            return Err(MpaError::UlpduTooLong(ulpdu.len()));
        }
        let len = ulpdu.len() as u16; // checked just above

        // ULPDU_Length | ULPDU | PAD: a multiple of 4 octets.
        let mut content = Vec::with_capacity(ulpdu.len() + 5);
        content.extend_from_slice(&len.to_be_bytes());
        content.extend_from_slice(ulpdu);
        content.resize(content.len() + pad_len(ulpdu.len()), 0);

        let crc_begin = out.len();
        if self.cfg.markers {
            self.frame_with_markers(&content, out);
        } else {
            out.extend_from_slice(&content);
            self.advance(content.len());
        }
        let field = if self.cfg.crc { crc_field(crc32c(&out[crc_begin..])) } else { [0; 4] };
        out.extend_from_slice(&field);
        self.advance(field.len());
        Ok(())
    }

    /// Emits the content with its markers and advances the position.
    fn frame_with_markers(&mut self, content: &[u8], out: &mut Vec<u8>) {
        if is_marker_pos(self.pos) {
            // Between FPDUs: the marker belongs to this FPDU, FPDUPTR 0.
            out.extend_from_slice(&Marker::new(0).to_bytes());
            self.advance(MARKER_LEN);
        }
        let start = self.pos; // position of ULPDU_Length
        let mut rest = content;
        while !rest.is_empty() {
            if is_marker_pos(self.pos) {
                self.put_marker(start, out);
            }
            let take = room_before_marker(self.pos).min(rest.len());
            out.extend_from_slice(&rest[..take]);
            self.advance(take);
            rest = &rest[take..];
        }
        if is_marker_pos(self.pos) {
            // Right after the PAD: still points at this FPDU.
            self.put_marker(start, out);
        }
    }

    fn put_marker(&mut self, fpdu_start: u64, out: &mut Vec<u8>) {
        // FPDUPTR is a 16-bit field: the distance is taken modulo 2^16.
        let ptr = self.pos.wrapping_sub(fpdu_start) as u16;
        out.extend_from_slice(&Marker::new(ptr).to_bytes());
        self.advance(MARKER_LEN);
    }

    fn advance(&mut self, n: usize) {
        self.pos = self.pos.wrapping_add(n as u64);
    }
}

/// One FPDU without markers and with a CRC, as the first FPDU of a stream
/// without markers looks (VECTORS.md V3).
///
/// # Panics
/// Panics if `ulpdu` is longer than 65535 octets; use [`Framer::frame`] to
/// get an error instead.
pub fn build_fpdu(ulpdu: &[u8]) -> Vec<u8> {
    let mut out = Vec::with_capacity(ulpdu.len() + 9);
    match Framer::new(FramingConfig::CRC_ONLY).frame(ulpdu, &mut out) {
        Ok(()) => out,
        Err(e) => panic!("build_fpdu: {e}"),
    }
}
