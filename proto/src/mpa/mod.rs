//! MPA Full Operation Phase: FPDU framing (RFC 5044 §4).
//!
//! An FPDU is `ULPDU_Length (2) | ULPDU | PAD (0–3) | CRC (4)`, with a 4-octet
//! marker inserted at every 512th octet of the stream when markers are
//! enabled for that direction. The pieces live in small files:
//!
//! * this file: CRC32c, PAD and MULPDU arithmetic, configuration, errors;
//! * [`markers`]: marker format and placement arithmetic (§4.2, §4.3);
//! * [`framing`]: the transmit side, [`Framer`] (§4.1, §4.3, §4.4);
//! * [`deframing`]: the receive side, [`Deframer`] (§4.4, §5.2, §8).

pub mod deframing;
pub mod framing;
pub mod markers;

pub use deframing::Deframer;
pub use framing::{build_fpdu, Framer};
pub use markers::{marker_at, Marker, MARKER_INTERVAL};

use crate::terminate::TermCode;

/// Largest ULPDU an FPDU can carry: ULPDU_Length is a 16-bit field (§4.1).
pub const MAX_ULPDU_LEN: usize = u16::MAX as usize;

/// Octets of FPDU overhead without markers: ULPDU_Length (2) + CRC (4).
pub const FPDU_OVERHEAD: usize = 6;

/// Lower bound for MULPDU: RFC 5044 §4.5 forbids a MULPDU below 128 octets.
pub const MIN_MULPDU: usize = 128;

/// CRC32c (Castagnoli, reflected, init and final XOR 0xFFFFFFFF), the iSCSI
/// digest algorithm required by RFC 5044 §4.4 (CHECKLIST MPA-07).
pub fn crc32c(data: &[u8]) -> u32 {
    ::crc32c::crc32c(data)
}

/// The four octets of the MPA CRC field for a CRC value.
///
/// The field carries the value least significant octet first, exactly like
/// an iSCSI digest: 0x8A9136AA goes on the wire as `aa 36 91 8a`
/// (CHECKLIST MPA-09). This is the only multi-octet field of the stack that
/// is not big-endian.
pub fn crc_field(crc: u32) -> [u8; 4] {
    crc.to_le_bytes()
}

/// Reads a CRC value back from the four octets of an MPA CRC field.
pub fn crc_from_field(field: [u8; 4]) -> u32 {
    u32::from_le_bytes(field)
}

/// PAD length for a ULPDU: makes `2 + len + PAD` a multiple of 4
/// (RFC 5044 §4.1, CHECKLIST MPA-03).
pub fn pad_len(ulpdu_len: usize) -> usize {
    (4 - (ulpdu_len + 2) % 4) % 4
}

/// Maximum ULPDU size for an effective MSS (RFC 5044 §4.5, CHECKLIST MPA-15).
///
/// With markers: `EMSS − (6 + 4·⌈EMSS/512⌉ + EMSS mod 4)`; without markers:
/// `EMSS − (6 + EMSS mod 4)`. The result never goes below 128: when EMSS
/// shrinks that far, §4.5 waives the segmentation rules rather than allow a
/// smaller MULPDU.
pub fn mulpdu(emss: usize, markers: bool) -> usize {
    let marker_space = if markers { 4 * emss.div_ceil(MARKER_INTERVAL as usize) } else { 0 };
    let overhead = FPDU_OVERHEAD + marker_space + emss % 4;
    emss.saturating_sub(overhead).max(MIN_MULPDU)
}

/// What was negotiated for one direction of an MPA connection
/// (RFC 5044 §7.1.1: M and C bits of the Request/Reply frames).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Default)]
pub struct FramingConfig {
    /// Markers are inserted every 512 octets in this direction (CHECKLIST MPA-14).
    pub markers: bool,
    /// CRCs are generated and checked (CHECKLIST MPA-05). When false the
    /// transmitter writes four zero octets and the receiver ignores the field.
    pub crc: bool,
}

impl FramingConfig {
    /// CRCs on, markers off: the usual modern configuration.
    pub const CRC_ONLY: FramingConfig = FramingConfig { markers: false, crc: true };
    /// CRCs and markers on.
    pub const MARKERS_AND_CRC: FramingConfig = FramingConfig { markers: true, crc: true };
}

/// Errors of the MPA framing layer (RFC 5044 §8).
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum MpaError {
    /// The received CRC field does not match the CRC computed over the FPDU
    /// (MPA error 2). `received` is the value decoded from the LSB-first field.
    #[error("MPA CRC mismatch: computed {computed:#010x}, received {received:#010x}")]
    Crc {
        /// CRC32c computed over the received FPDU.
        computed: u32,
        /// CRC value carried in the FPDU's CRC field.
        received: u32,
    },
    /// A marker's FPDUPTR disagrees with the FPDU start derived from
    /// ULPDU_Length (MPA error 3). `fpduptr` is the raw received value.
    #[error("MPA marker at stream position {position} has FPDUPTR {fpduptr:#06x}, expected {expected:#06x}")]
    Marker {
        /// Stream position of the marker's first octet (octets since the first marker).
        position: u64,
        /// FPDUPTR as received (low bits not cleared).
        fpduptr: u16,
        /// FPDUPTR implied by the FPDU's ULPDU_Length position.
        expected: u16,
    },
    /// A ULPDU longer than ULPDU_Length can express was handed to the framer.
    #[error("ULPDU of {0} octets does not fit in a 16-bit ULPDU_Length")]
    UlpduTooLong(usize),
    /// A packet of a stream cut at FPDU boundaries is not exactly the FPDU that starts
    /// it ([`Deframer::pop_packet`]): the packet and the stream are out of step, a local
    /// failure of whoever cut it (MPA error 5, local catastrophic, RFC 6581 §8). `fpdu` is
    /// the FPDU's length on the wire, `None` when the packet is too short to say.
    #[error("a packet of {packet} octets holds an FPDU of {fpdu:?} octets: out of step")]
    OutOfStep {
        /// Octets in the packet.
        packet: usize,
        /// Octets of the FPDU its ULPDU_Length announces, markers included.
        fpdu: Option<usize>,
    },
}

impl MpaError {
    /// The MPA error code of RFC 5044 §8 and RFC 6581 §8 (Terminate layer 2,
    /// type 0): 2 for a CRC mismatch, 3 for a marker disagreement, 5 for a
    /// packet out of step. Transmit-side errors have no Terminate code.
    pub fn terminate_code(&self) -> Option<u8> {
        match self {
            MpaError::Crc { .. } => Some(TermCode::MPA_CRC.code),
            MpaError::Marker { .. } => Some(TermCode::MPA_MARKER.code),
            MpaError::OutOfStep { .. } => Some(TermCode::MPA_LOCAL_CATASTROPHIC.code),
            MpaError::UlpduTooLong(_) => None,
        }
    }

    /// The full Layer/EType/Code triplet of the Terminate this error causes.
    pub fn term_code(&self) -> Option<TermCode> {
        self.terminate_code().map(|code| TermCode::new(TermCode::LAYER_LLP, 0, code))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn pad_cycles_through_all_values() {
        assert_eq!([pad_len(0), pad_len(1), pad_len(2), pad_len(3)], [2, 1, 0, 3]);
    }

    #[test]
    fn mulpdu_never_below_floor() {
        for emss in 0..200 {
            assert!(mulpdu(emss, true) >= MIN_MULPDU);
            assert!(mulpdu(emss, false) >= MIN_MULPDU);
        }
    }
}
