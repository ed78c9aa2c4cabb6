//! Building blocks shared by the protocol blocks.
pub mod pipe;

pub use pipe::Pipe;
