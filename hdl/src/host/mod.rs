//! The host side of the RNIC: BAR0 (AXI4-Lite), the command unit that keeps the QP, CQ
//! and MR contexts, and (to come) the DMA master, the doorbell-driven schedulers and the
//! completion writer.
mod axil_slave;
mod cmd;
mod ctrl;
mod dma_read;
mod regs;

pub use axil_slave::AxilSlave;
pub use cmd::Cmd;
pub use ctrl::HostCtrl;
pub use dma_read::DmaRead;
pub use regs::{Regs, DB_CQ_ARM, DB_CQ_CI, DB_RQ, DB_SQ};
