//! RDMAP (RFC 5040, RFC 7306): the requester's transmit side (work requests to messages)
//! and the receive engine (placement, the Read responder, Terminates).
mod rx;
mod tx_request;

pub use rx::{RdmapRx, DONE_BITS, READ_SLOTS, SLOT_BITS};
pub use tx_request::TxRequest;
