//! MPA (RFC 5044): CRC32c, FPDU framing (TX) and deframing (RX).
pub mod crc32c;
pub mod crc_matrix;
pub mod tx;
pub mod tx_header;
pub mod tx_markers;

pub use crc32c::Crc32c;
pub use tx::MpaTx;
