//! MPA (RFC 5044): CRC32c, FPDU framing (TX) and deframing (RX).
//!
//! TX: [`tx_header`] → [`tx_markers`] (its beats planned by [`tx_plan`]) → CRC in [`tx`].
//! RX: [`rx_align`] (its beats planned by [`rx_plan`]) → [`rx_strip`], joined in [`rx`].
//! [`crc32c`] is shared; [`crc_matrix`] computes its XOR network. [`positions`] keeps each
//! connection's place on the marker grid where connections share a framer or deframer.
pub mod crc32c;
pub mod crc_matrix;
pub mod positions;
pub mod rx;
pub mod rx_align;
pub mod rx_plan;
pub mod rx_strip;
pub mod tx;
pub mod tx_header;
pub mod tx_markers;
pub mod tx_plan;

pub use crc32c::Crc32c;
pub use positions::Positions;
pub use rx::MpaRx;
pub use tx::MpaTx;
