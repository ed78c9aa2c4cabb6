//! The RNIC hardware, described with rust-hdl and generated to Verilog.
//!
//! Blocks are grouped by protocol layer, one block per file: [`mpa`] (CRC32c, FPDU framing
//! and deframing), [`atomic`] (the RFC 7306 ALU and atomic unit), [`ddp`] (segmentation), [`rdmap`] (work requests to messages) and
//! [`host`] (BAR0, contexts, DMA, CQs, SQ fetch, MR checks); [`board`] is the glue of FPGA
//! board builds (a UART bridge to BAR0 and host memory). [`designs`] lists every top-level
//! design that is generated into `hdl/verilog/`, and the `gen-verilog` binary writes them.
pub mod atomic;
pub mod board;
pub mod common;
pub mod ddp;
pub mod designs;
pub mod host;
pub mod mpa;
pub mod rdmap;
pub mod top;
