//! RDMAP (RFC 5040, RFC 7306): the requester's transmit side (work requests to messages);
//! the receive side, the responder and Terminates to come.
mod tx_request;

pub use tx_request::TxRequest;
