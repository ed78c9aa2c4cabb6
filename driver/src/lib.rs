//! Userspace driver for the RNIC.
//!
//! Everything the driver needs from the platform goes through the small [`Hal`] trait:
//! 32-bit register access to BAR0, DMA memory that the device can reach (a CPU pointer,
//! or a [`RemoteMemory`] where the CPU cannot address it, and an IOVA), and interrupt
//! waits. Backends implement it: [`fake::FakeHal`] (plain memory, for unit tests),
//! `sim::SimHal` (the Verilated RTL, with the `sim` feature), [`vfio::VfioHal`] (a PCIe
//! card through the kernel's VFIO) and [`serial::SerialHal`] (the board build through its
//! UART bridge), driven by the same driver code.
//!
//! On top of it sits a verbs-shaped API, one module per object:
//!
//! * [`cm`]: MPA connection setup on a kernel TCP connection, before it is handed to the
//!   RNIC with the negotiated options;
//! * [`Device`]: opens the RNIC, enables it, runs commands, numbers the objects;
//! * [`ProtectionDomain`] and [`MemoryRegion`]: memory the device may reach, by STag,
//!   in the host or in the device's own RAM ([`DeviceMemory`]);
//! * [`CompletionQueue`]: completions, polled by the phase rule or waited for;
//! * [`QueuePair`]: the SQ and RQ, posted with [`WorkRequest`]s and [`RecvRequest`]s.
//!
//! Objects borrow the device (and a QP its PD and CQs), so the borrow checker keeps
//! everything the hardware may still use alive; dropping an object tells the device to
//! stop using it before its memory goes back to the backend.
//!
//! DMA memory is shared with hardware, so the driver never forms Rust references into it:
//! [`DmaRegion`] only offers volatile reads and writes at checked offsets.
pub mod bridge;
pub mod cm;
pub mod cq;
pub mod device;
pub mod dm;
pub mod dma;
pub mod error;
pub mod fake;
pub mod hal;
pub mod mr;
pub mod pd;
mod pool;
pub mod qp;
mod ring;
pub mod serial;
#[cfg(feature = "sim")]
pub mod sim;
pub mod stream;
#[cfg(test)]
mod testing;
#[cfg(target_os = "linux")]
pub mod vfio;
pub mod wr;

pub use cq::{Completion, CompletionQueue};
pub use device::{Device, DeviceInfo, DeviceStatus, Features};
pub use dm::DeviceMemory;
pub use dma::{DmaBuffer, DmaRegion, RemoteMemory};
pub use error::{DriverError, QpError, Rejection, Resource, WorkQueue};
pub use hal::{Hal, HalError};
pub use mr::MemoryRegion;
pub use pd::ProtectionDomain;
pub use qp::{Connection, QpCaps, QueuePair};
pub use ring::MAX_QUEUE_LOG_SIZE;
pub use rnic_proto::host::{CqeOpcode, CqeStatus, MrAccess, QpState};
pub use rnic_proto::terminate::TermCode;
pub use wr::{RecvRequest, RemoteBuf, Sge, WorkRequest};
