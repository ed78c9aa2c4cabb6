//! Userspace driver for the RNIC.
//!
//! Everything the driver needs from the platform goes through the small [`Hal`] trait:
//! 32-bit register access to BAR0, DMA memory that the device can reach (a CPU pointer
//! and an IOVA), and interrupt waits. Backends implement it: [`fake::FakeHal`] (plain
//! memory, for unit tests) now; the Verilated RTL and VFIO on a PCIe card next, driven
//! by the same driver code.
//!
//! DMA memory is shared with hardware, so the driver never forms Rust references into it:
//! [`DmaRegion`] only offers volatile reads and writes at checked offsets.
pub mod dma;
pub mod fake;
pub mod hal;

pub use dma::DmaRegion;
pub use hal::{Hal, HalError};
