//! The host side of the RNIC: BAR0 (AXI4-Lite), the command unit that keeps the QP, CQ
//! and MR contexts, and (to come) the DMA master, the doorbell-driven schedulers and the
//! completion writer.
mod axi_window;
mod axil_slave;
mod burst_split;
mod cmd;
mod cq_writer;
mod ctrl;
mod dev_mem;
mod dma;
mod dma_fence;
mod dma_read;
mod dma_read_arb;
mod dma_write;
mod dma_write_arb;
mod mr_check;
mod regs;
mod ring_regs;
mod rq_fetch;
mod sq_fetch;
mod stream_rx_ring;
mod stream_tx_ring;

pub use axi_window::AxiWindow;
pub use axil_slave::AxilSlave;
pub use burst_split::BurstSplit;
pub use cmd::Cmd;
pub use cq_writer::CqWriter;
pub use ctrl::HostCtrl;
pub use dev_mem::DevMem;
pub use dma::Dma;
pub use dma_fence::DmaFence;
pub use dma_read::DmaRead;
pub use dma_read_arb::DmaReadArb;
pub use dma_write::DmaWrite;
pub use dma_write_arb::DmaWriteArb;
pub use mr_check::{
    MrCheck, MrEntry, ACCESS_BOUNDS, ACCESS_INVALID_STAG, ACCESS_NO_RIGHT, ACCESS_OK, ACCESS_OTHER_PD, ACCESS_TO_WRAP,
    MR_ENTRY_BITS, RIGHT_LOCAL_READ, RIGHT_LOCAL_WRITE, RIGHT_REMOTE_ATOMIC, RIGHT_REMOTE_READ, RIGHT_REMOTE_WRITE,
};
pub use regs::{Regs, DB_CQ_ARM, DB_CQ_CI, DB_RQ, DB_SQ};
pub use ring_regs::RingRegs;
pub use rq_fetch::RqFetch;
pub use sq_fetch::SqFetch;
pub use stream_rx_ring::StreamRxRing;
pub use stream_tx_ring::StreamTxRing;
