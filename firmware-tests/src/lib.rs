//! Host test programs for the RNIC. Each takes `--backend` and runs the same driver code
//! against whichever backend it names: the fake platform, the Verilated RTL (`sim`, two
//! RNICs linked stream to stream in one process, or one looped back into itself with
//! `--loopback`; feature `sim`), a PCIe card through VFIO (`vfio --device <BDF>`) and the
//! board build through its UART bridge (`serial --port <PATH>`, `selftest` only).
//!
//! Programs: `selftest` (the platform contract the driver relies on, then every operation
//! once on one RNIC in loopback, [`loopback`]); `pingpong` (Send/Recv
//! latency), `write_bw` and `read_bw` (bandwidth, `--sweep` plots it against message
//! size), `read_lat` (RDMA Read latency), `atomic_bw` and `atomic_lat` (RFC 7306
//! atomics, `--op fadd|cswap`, `--contended`, `--device-memory`), `atomic_responder` (the
//! responder alone, fed by a raw peer at link rate), `imm_pingpong` (Immediate Data latency) and
//! `sequencer` (a demo: QPs taking tickets from one counter), and `rping` (rdma-core's
//! rping protocol over kernel TCP, for Linux soft-iWARP). Each prints a summary table or
//! its pings and checks every octet it moved.
#[cfg(feature = "sim")]
pub mod atomics;
pub mod cli;
pub mod loopback;
#[cfg(feature = "sim")]
pub mod pair;
#[cfg(feature = "sim")]
pub mod perf;
#[cfg(feature = "sim")]
pub mod programs;
pub mod report;
#[cfg(feature = "sim")]
pub mod responder;
#[cfg(feature = "sim")]
pub mod rping;

use std::time::Duration;

use clap::ValueEnum;
use rnic_driver::fake::FakeHal;
use rnic_driver::serial::{NativePort, SerialHal};
use rnic_driver::Hal;

/// Where a program runs.
#[derive(Clone, Copy, Debug, PartialEq, Eq, ValueEnum)]
pub enum Backend {
    /// Plain memory: registers, DMA and interrupts without a device.
    Fake,
    /// The Verilated RNIC.
    Sim,
    /// A PCIe card bound to vfio-pci.
    Vfio,
    /// The board build through its UART bridge.
    Serial,
}

/// Opens the platform of a backend without a simulator behind it, or says clearly why it
/// cannot. `device` is the card's PCI address (`vfio`) or the board's serial port
/// (`serial`, at [`rnic_driver::serial::DEFAULT_BAUD`]).
pub fn open(backend: Backend, device: Option<&str>) -> Result<Box<dyn Hal>, String> {
    match backend {
        Backend::Fake => Ok(Box::new(FakeHal::new(4))),
        Backend::Sim => Err("a simulated RNIC comes with its link (two linked, or one looped back): the \
                             programs open it themselves"
            .into()),
        Backend::Vfio => open_vfio(device),
        Backend::Serial => {
            Ok(Box::new(open_serial(device, rnic_driver::serial::DEFAULT_BAUD, rnic_driver::serial::RESPONSE_TIMEOUT)?))
        }
    }
}

/// Opens the board's UART bridge on serial port `port` at `baud`; the error names the fix.
pub fn open_serial(port: Option<&str>, baud: u32, timeout: Duration) -> Result<SerialHal<NativePort>, String> {
    let port = port.ok_or("--backend serial needs --port <PATH>, e.g. --port /dev/ttyUSB0")?;
    SerialHal::open_with_timeout(port, baud, timeout).map_err(|e| e.to_string())
}

/// Opens the card at `device` through VFIO; the error names the fix.
#[cfg(target_os = "linux")]
fn open_vfio(device: Option<&str>) -> Result<Box<dyn Hal>, String> {
    let device = device.ok_or("--backend vfio needs --device <PCI address>, e.g. --device 0000:01:00.0")?;
    let hal = rnic_driver::vfio::VfioHal::open(device).map_err(|e| e.to_string())?;
    Ok(Box::new(hal))
}

#[cfg(not(target_os = "linux"))]
fn open_vfio(_device: Option<&str>) -> Result<Box<dyn Hal>, String> {
    Err("VFIO exists on Linux only".into())
}

/// Checks the platform contract the driver relies on: registers hold values, DMA memory
/// is zeroed, round-trips, and sits at distinct IOVAs. Returns what was checked.
pub fn platform_selftest(hal: &dyn Hal) -> Result<Vec<String>, String> {
    let mut done = Vec::new();
    // Two CMD_DATA words: read-write on the RNIC too, so the check holds on a card.
    let data = rnic_proto::host::regs::CMD_DATA;
    for (offset, value) in [(data, 0x1234_5678u32), (data + 4, 0xffff_0000)] {
        hal.write32(offset, value);
        let got = hal.read32(offset);
        if got != value {
            return Err(format!("register {offset:#x}: wrote {value:#x}, read {got:#x}"));
        }
    }
    done.push("BAR0 registers read back what was written".to_string());
    let a = hal.dma_alloc(4096).map_err(|e| e.to_string())?;
    let b = hal.dma_alloc(64).map_err(|e| e.to_string())?;
    let result = (|| {
        if a.read_u64(0) != 0 || b.read_u64(56) != 0 {
            return Err("DMA memory is not zeroed".to_string());
        }
        if a.iova() == b.iova() {
            return Err("two DMA regions share an IOVA".to_string());
        }
        a.write_u64(4088, 0x0102_0304_0506_0708);
        if a.read_u64(4088) != 0x0102_0304_0506_0708 {
            return Err("DMA memory does not round-trip".to_string());
        }
        Ok(())
    })();
    hal.dma_free(a);
    hal.dma_free(b);
    result?;
    done.push("DMA memory is zeroed, round-trips, and regions have distinct IOVAs".to_string());
    Ok(done)
}
