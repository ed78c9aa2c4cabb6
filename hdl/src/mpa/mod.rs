//! MPA (RFC 5044): CRC32c, FPDU framing (TX) and deframing (RX).
pub mod crc32c;
pub mod crc_matrix;

pub use crc32c::Crc32c;
