//! DDP (RFC 5041): segmentation on transmit; on receive, ULPDUs held until their CRC is
//! known (placement itself is the RDMAP receive engine's, `rdmap::RdmapRx`).
pub mod rx_buffer;
mod tx_payload;
mod tx_segment;

pub use rx_buffer::RxBuffer;
pub use tx_payload::TxPayload;
pub use tx_segment::TxSegment;
