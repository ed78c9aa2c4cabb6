//! The device behind an opened context: which backend (`RNIC_BACKEND`), how its time
//! passes, and how its streams reach the connections.
//!
//! * `sim` (the default): the Verilated RNIC in this process. Its time passes only when
//!   the device thread runs it. Its streams leave through the model's stream ports, which
//!   the simulator switches to sockets (`RNIC_SIM_STREAMS=ports`, the default), or through
//!   the stream rings in host memory, as on a card (`RNIC_SIM_STREAMS=rings`).
//! * `vfio`: a card at `RNIC_VFIO_DEVICE` (a PCI address) bound to vfio-pci, its memory
//!   the program's own pages mapped with VFIO_IOMMU_MAP_DMA. Its streams go through the
//!   stream rings (the card has no TCP engine), which the device thread moves between the
//!   rings and the sockets.
//! * `serial` is refused: the serial bridge reaches 64 KiB of the board's memory, not the
//!   program's, so no buffer of the program could be registered over it.
use std::net::TcpStream;
use std::time::Duration;

use rnic_driver::bridge::RingBridge;
use rnic_driver::sim::{SimHal, SocketBridge};
use rnic_driver::stream::StreamRings;
use rnic_driver::vfio::VfioHal;

use crate::engine::{DynHal, Pinned};

/// Log2 of the octets of each stream ring: room for many records of the largest FPDU.
const RING_LOG2: u32 = 16;

/// Which backend, from the environment.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) enum Config {
    /// `RNIC_SIM_DESIGN` (default `rnic_top`); `rings`: streams through the stream rings.
    Sim { design: String, rings: bool },
    /// `RNIC_VFIO_DEVICE`.
    Vfio { device: String },
}

impl Config {
    /// The backend the environment names, or why there is none.
    pub(crate) fn from_env() -> Result<Config, String> {
        let var = |name: &str| std::env::var(name).ok();
        Self::from_vars(var("RNIC_BACKEND"), var("RNIC_SIM_DESIGN"), var("RNIC_SIM_STREAMS"), var("RNIC_VFIO_DEVICE"))
    }

    fn from_vars(
        backend: Option<String>,
        design: Option<String>,
        streams: Option<String>,
        device: Option<String>,
    ) -> Result<Config, String> {
        match backend.as_deref().unwrap_or("sim") {
            "sim" => {
                let rings = match streams.as_deref().unwrap_or("ports") {
                    "ports" => false,
                    "rings" => true,
                    other => return Err(format!("RNIC_SIM_STREAMS={other}: ports or rings")),
                };
                Ok(Config::Sim { design: design.unwrap_or_else(|| "rnic_top".into()), rings })
            }
            "vfio" => match device {
                Some(device) => Ok(Config::Vfio { device }),
                None => Err("RNIC_BACKEND=vfio needs RNIC_VFIO_DEVICE=<PCI address of the card, e.g. \
                             0000:01:00.0, bound to vfio-pci>"
                    .into()),
            },
            "serial" => Err("RNIC_BACKEND=serial: the serial bridge reaches 64 KiB of the board's memory, not \
                             this program's, so no buffer could be registered; run `selftest --backend serial` \
                             to check a board"
                .into()),
            other => Err(format!("RNIC_BACKEND={other}: sim or vfio")),
        }
    }
}

/// The backend itself, kept at a fixed address: the device borrows it.
pub(crate) enum Hardware {
    Sim(Pinned<SimHal>),
    Vfio(Pinned<VfioHal>),
}

impl Hardware {
    /// Opens the backend; for the simulator, also the switch of its stream ports (unless
    /// its streams go through the rings).
    pub(crate) fn open(config: &Config) -> Result<(Hardware, Option<SocketBridge>), String> {
        match config {
            Config::Sim { design, rings } => {
                let sim = SimHal::open(design).map_err(|e| format!("cannot open the simulated RNIC: {e}"))?;
                let ports = (!rings).then(|| sim.attach_switch());
                // A device access outside what is mapped is an IOMMU fault: recorded and
                // dropped, as an IOMMU blocks it, not a panic of the program's process.
                sim.with_memory(|m| m.fail_on_fault(false));
                Ok((Hardware::Sim(Pinned::new(sim)), ports))
            }
            Config::Vfio { device } => {
                let card = VfioHal::open(device).map_err(|e| format!("cannot open the card at {device}: {e}"))?;
                Ok((Hardware::Vfio(Pinned::new(card)), None))
            }
        }
    }

    /// The backend as the device holds it.
    ///
    /// # Safety
    ///
    /// The device (and everything that borrows it) must be gone before [`Hardware::free`].
    pub(crate) unsafe fn hal(&self) -> DynHal {
        // SAFETY: passed on from the caller.
        unsafe {
            match self {
                Hardware::Sim(sim) => Box::new(sim.borrow()),
                Hardware::Vfio(card) => Box::new(card.borrow()),
            }
        }
    }

    /// The simulator, if it is one.
    pub(crate) fn sim(&self) -> Option<&SimHal> {
        match self {
            Hardware::Sim(sim) => Some(sim.get()),
            Hardware::Vfio(_) => None,
        }
    }

    /// Lets time pass: `cycles` of the model, or a moment of the card's own clock.
    pub(crate) fn run(&self, cycles: u64) {
        match self {
            Hardware::Sim(sim) => sim.get().run_idle(cycles),
            Hardware::Vfio(_) => std::thread::sleep(Duration::from_micros(20)),
        }
    }

    /// Frees the backend.
    ///
    /// # Safety
    ///
    /// Nothing may borrow it any more (see [`Hardware::hal`]).
    pub(crate) unsafe fn free(self) {
        // SAFETY: passed on from the caller.
        unsafe {
            match self {
                Hardware::Sim(sim) => sim.free(),
                Hardware::Vfio(card) => card.free(),
            }
        }
    }
}

/// How the device's streams reach the connections rdma_cm made (and, for QPs connected
/// to QPs of the same device, loop back into it).
pub(crate) enum Streams {
    /// The simulator's stream ports, switched by the simulator as it runs.
    Ports(SocketBridge),
    /// The stream rings in host memory, moved by the device thread.
    Rings { rings: StreamRings<'static, DynHal>, bridge: RingBridge },
}

impl Streams {
    /// The simulator's switch, or stream rings turned on at `hal`.
    pub(crate) fn new(ports: Option<SocketBridge>, hal: &'static DynHal) -> Result<Streams, String> {
        Ok(match ports {
            Some(bridge) => Streams::Ports(bridge),
            None => Streams::Rings {
                rings: StreamRings::new(hal, RING_LOG2, RING_LOG2)
                    .map_err(|e| format!("cannot turn the stream rings on: {e}"))?,
                bridge: RingBridge::with_loop_back(),
            },
        })
    }

    /// Carries QP `qpn` (CONN_ID `conn_id`) over `stream`.
    pub(crate) fn add(&mut self, stream: TcpStream, qpn: u32, conn_id: u16, rx_markers: bool) -> std::io::Result<()> {
        match self {
            Streams::Ports(b) => b.add(stream, qpn, conn_id, rx_markers),
            Streams::Rings { bridge, .. } => bridge.add(stream, qpn, conn_id, rx_markers),
        }
    }

    /// Stops carrying `conn_id`, closing its socket.
    pub(crate) fn remove(&mut self, conn_id: u16) {
        match self {
            Streams::Ports(b) => b.remove(conn_id),
            Streams::Rings { bridge, .. } => bridge.remove(conn_id),
        };
    }

    /// Why `conn_id` ended, if it did.
    pub(crate) fn ended(&self, conn_id: u16) -> Option<String> {
        match self {
            Streams::Ports(b) => b.ended(conn_id),
            Streams::Rings { bridge, .. } => bridge.ended(conn_id),
        }
    }

    /// Moves what the rings hold (the simulator's switch moves its ports itself).
    pub(crate) fn pump(&mut self) {
        if let Streams::Rings { rings, bridge } = self {
            if let Err(e) = bridge.pump(rings) {
                crate::debug!("stream rings: {e}");
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn config(backend: Option<&str>, streams: Option<&str>, device: Option<&str>) -> Result<Config, String> {
        let s = |v: Option<&str>| v.map(str::to_string);
        Config::from_vars(s(backend), None, s(streams), s(device))
    }

    #[test]
    fn the_environment_names_the_backend_and_what_is_missing() {
        assert_eq!(config(None, None, None), Ok(Config::Sim { design: "rnic_top".into(), rings: false }));
        assert_eq!(
            config(Some("sim"), Some("rings"), None),
            Ok(Config::Sim { design: "rnic_top".into(), rings: true })
        );
        assert_eq!(
            config(Some("vfio"), None, Some("0000:01:00.0")),
            Ok(Config::Vfio { device: "0000:01:00.0".into() })
        );
        assert!(config(Some("vfio"), None, None).is_err_and(|e| e.contains("RNIC_VFIO_DEVICE")));
        assert!(config(Some("serial"), None, None).is_err_and(|e| e.contains("selftest --backend serial")));
        assert!(config(Some("sim"), Some("wires"), None).is_err());
    }
}
