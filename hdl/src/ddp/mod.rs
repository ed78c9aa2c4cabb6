//! DDP (RFC 5041): segmentation on transmit; parsing and placement on receive (to come).
mod tx_segment;

pub use tx_segment::TxSegment;
