//! Verilator models of the RNIC hardware, driven from Rust.
//!
//! `build.rs` verilates every design checked in under `hdl/verilog/`; [`Model`] opens one
//! by name and gives safe access to its ports, its clock and a waveform trace. Set
//! `RNIC_TRACE=<file.vcd>` to trace every model a run creates; tests wrapped in
//! [`trace::on_failure`] re-run a failing case with tracing on and name the file.
//!
//! Bus models play the other end of a design's interfaces: [`axis`] for streams, [`axi`]
//! for the host memory (a [`host_memory::HostMemory`] behind an IOMMU) that the DMA master
//! reaches, [`axi_master`] for the DMA master itself in front of blocks that sit behind it,
//! and [`axil`] for the host CPU's register accesses.
pub mod alu;
pub mod atomic_unit;
pub mod axi;
pub mod axi_master;
pub mod axil;
pub mod axis;
pub mod bench;
pub mod crc;
mod ffi;
pub mod host_ctrl;
pub mod host_memory;
pub mod model;
pub mod mpa;
pub mod trace;
pub mod uart;

pub use model::{Model, Port, SimError};

/// Names of the compiled models (one per file in `hdl/verilog/`).
pub mod models {
    include!(concat!(env!("OUT_DIR"), "/models.rs"));
}
