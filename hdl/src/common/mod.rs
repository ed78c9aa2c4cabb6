//! Building blocks shared by the protocol blocks.
pub mod bit_fifo;
pub mod bswap;
pub mod fifo;
pub mod pipe;
pub mod ram_fifo;
pub mod reg_ram;
pub mod round_robin;
pub mod rr_arbiter;
pub mod skid_buffer;

pub use bit_fifo::BitFifo;
pub use bswap::{Bswap32, Bswap64};
pub use fifo::SmallFifo;
pub use pipe::Pipe;
pub use ram_fifo::RamFifo;
pub use reg_ram::RegRam;
pub use round_robin::RoundRobin;
pub use rr_arbiter::RrArbiter;
pub use skid_buffer::SkidBuffer;

use rust_hdl::prelude::{Bits, Constant, ToBits};

/// A constant of any width, for the values blocks take from `rnic_proto` when generated.
pub fn constant<const N: usize>(value: u64) -> Constant<Bits<N>> {
    Constant::new(value.to_bits())
}
