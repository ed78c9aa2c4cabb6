//! Two RNICs linked stream to stream in one process (the `sim` backend): A and B, each
//! with one protection domain, one DMA buffer registered with every right, one CQ, and
//! `qps` QPs in RTS, QP `n` of A connected to QP `n` of B.
//!
//! Buffer layout, the same on both sides: QP `n` sends from (and is read at) `source(n)`,
//! and receives into (is written at, reads into) `sink(n)`; each slot holds one message.
//! With `device_memory`, each end also has 4 KiB of its RNIC's on-chip memory registered
//! with every right ([`End::dm`]): atomic targets can live there.
use std::cell::RefCell;
use std::path::PathBuf;
use std::rc::Rc;

use rnic_driver::sim::{LinkCapture, LinkConfig, SimHal};
use rnic_driver::{
    CompletionQueue, Device, DeviceMemory, DmaBuffer, MemoryRegion, MrAccess, ProtectionDomain, QpCaps, QueuePair,
};

/// QP count and queue sizes, per side.
#[derive(Clone, Debug)]
pub struct PairConfig {
    pub qps: u16,
    /// The largest message a slot holds (octets).
    pub max_size: u32,
    /// MULPDU of every QP: the largest ULPDU the peer accepts.
    pub mulpdu: u16,
    /// ORD and IRD of every QP, both ends.
    pub ord: u8,
    /// Cycles from a DMA request to its answer in the host memory model.
    pub dma_latency: u64,
    /// MPA CRCs, and markers both ways, on every connection.
    pub crc: bool,
    pub markers: bool,
    /// Each end gets [`DM_LEN`] octets of device memory as an MR too.
    pub device_memory: bool,
    /// Write the link's streams to this file as a packet capture (one TCP connection
    /// per QP pair, with its MPA handshake), when the run ends.
    pub pcap: Option<PathBuf>,
    /// A and B are one RNIC whose stream is looped back into itself: A's QP `n` and B's
    /// QP `n` are QPs of the same device, each one's CONN_ID the other's number, as on
    /// the board. Each end still has its own PD, buffer, MR and CQ.
    pub loopback: bool,
}

/// Octets of device memory per end, with `device_memory`.
pub const DM_LEN: usize = 4096;

/// An end's device memory and its MR.
pub struct DeviceTarget<'d> {
    pub memory: &'d DeviceMemory<'d, SimHal>,
    pub mr: MemoryRegion<'d, SimHal>,
}

/// Work requests a QP may have posted and not completed: as many as its SQ holds, and
/// perftest's default `--tx-depth`. With one QP, 64 B Writes need more than 64 in flight
/// to cover their round trip (doorbell to completion, two 200-cycle DMA reads among it).
pub const DEPTH: u32 = 128;
const SQ_LOG_SIZE: u8 = 7;
/// One CQ per side takes every QP's completions: `qps · DEPTH` at most (8192 with 64 QPs,
/// half the ring).
const CQ_LOG_SIZE: u8 = 14;
const ALL: MrAccess = MrAccess { local_write: true, remote_read: true, remote_write: true, remote_atomic: true };

/// One side of the pair.
pub struct End<'d> {
    pub dev: &'d Device<SimHal>,
    pub buf: &'d DmaBuffer<'d, SimHal>,
    pub mr: MemoryRegion<'d, SimHal>,
    pub cq: &'d CompletionQueue<'d, SimHal>,
    pub qps: Vec<QueuePair<'d, SimHal>>,
    pub dm: Option<DeviceTarget<'d>>,
    slot: u64,
    count: u64,
}

impl End<'_> {
    /// Where QP `qp` sends from, and is read at.
    pub fn source(&self, qp: usize) -> u64 {
        qp as u64 * self.slot
    }

    /// Where QP `qp` receives, is written, and places what it reads.
    pub fn sink(&self, qp: usize) -> u64 {
        (self.count + qp as u64) * self.slot
    }

    pub fn hal(&self) -> &SimHal {
        self.dev.hal()
    }

    /// `len` octets of the buffer from `offset`.
    pub fn bytes(&self, offset: u64, len: u32) -> Vec<u8> {
        let mut out = vec![0; len as usize];
        self.buf.read_bytes(offset as usize, &mut out);
        out
    }
}

/// A and B.
pub struct Pair<'d> {
    pub a: End<'d>,
    pub b: End<'d>,
    pub config: PairConfig,
}

fn err(what: &str) -> impl Fn(rnic_driver::DriverError) -> String + '_ {
    move |e| format!("{what}: {e}")
}

/// Opens two Verilated `rnic_top`s and links them (or one, looped back, with
/// `loopback`), sets both ends up as the module says, fills each buffer with its own
/// pattern, and runs `f` on the pair.
pub fn with_pair<R>(
    config: PairConfig,
    f: impl for<'d> FnOnce(&mut Pair<'d>) -> Result<R, String>,
) -> Result<R, String> {
    let open = || SimHal::open("rnic_top").map_err(|e| format!("cannot open the rnic_top model: {e}"));
    let capture = config.pcap.as_ref().map(|_| Rc::new(RefCell::new(LinkCapture::new())));
    let hals = match config.loopback {
        true if capture.is_some() => return Err("a packet capture needs two RNICs (not --loopback)".into()),
        true => {
            let hal = open()?;
            hal.loop_back(LinkConfig::default());
            vec![hal]
        }
        false => {
            let (ha, hb) = (open()?, open()?);
            SimHal::connect_captured(&ha, &hb, LinkConfig::default(), capture.clone());
            vec![ha, hb]
        }
    };
    for hal in &hals {
        hal.with_dma_timing(|t| {
            t.read_latency = config.dma_latency;
            t.write_latency = config.dma_latency;
        });
    }
    let names = ["RNIC A", "RNIC B"];
    let opened: Vec<Device<SimHal>> = hals
        .into_iter()
        .zip(names)
        .map(|(hal, name)| Device::open(hal).map_err(err(name)))
        .collect::<Result<_, _>>()?;
    // Each end's device: the same one twice in loopback.
    let devs = [&opened[0], opened.last().expect("a device")];
    let slot = u64::from(config.max_size.max(64)).next_multiple_of(64);
    let count = u64::from(config.qps);
    let len = (2 * count * slot) as usize;
    let pds = [ProtectionDomain::new(devs[0]).map_err(err("PD"))?, ProtectionDomain::new(devs[1]).map_err(err("PD"))?];
    let bufs = [devs[0].alloc_dma(len).map_err(err("DMA buffer"))?, devs[1].alloc_dma(len).map_err(err("DMA buffer"))?];
    for (side, buf) in bufs.iter().enumerate() {
        let pattern: Vec<u8> =
            (0..len).map(|i| (i as u32).wrapping_mul(2_654_435_761).rotate_right(side as u32 * 8 + 13) as u8).collect();
        buf.write_bytes(0, &pattern);
    }
    let dms = match config.device_memory {
        true => devs
            .iter()
            .map(|d| d.alloc_device_memory(DM_LEN))
            .collect::<Result<Vec<_>, _>>()
            .map_err(err("device memory"))?,
        false => Vec::new(),
    };
    let cqs = [
        CompletionQueue::new(devs[0], CQ_LOG_SIZE, 0).map_err(err("CQ"))?,
        CompletionQueue::new(devs[1], CQ_LOG_SIZE, 0).map_err(err("CQ"))?,
    ];
    let mut ends = Vec::new();
    for side in 0..2 {
        devs[side].enable();
        let mut qps = Vec::new();
        for _ in 0..config.qps {
            let caps = QpCaps {
                sq_log_size: SQ_LOG_SIZE,
                rq_log_size: SQ_LOG_SIZE,
                mulpdu: config.mulpdu,
                ird: config.ord,
                ord: config.ord,
                crc: config.crc,
                markers_tx: config.markers,
                markers_rx: config.markers,
                // Set below, once the peer QP has its number.
                conn_id: 0,
            };
            qps.push(QueuePair::new(devs[side], &pds[side], &cqs[side], &cqs[side], caps).map_err(err("QP"))?);
        }
        let mr = MemoryRegion::register(&pds[side], &bufs[side], ALL).map_err(err("MR"))?;
        let dm = match dms.get(side) {
            Some(memory) => Some(DeviceTarget {
                memory,
                mr: MemoryRegion::register_device(&pds[side], memory, ALL).map_err(err("device memory MR"))?,
            }),
            None => None,
        };
        ends.push(End { dev: devs[side], buf: &bufs[side], mr, cq: &cqs[side], qps, dm, slot, count });
    }
    let mut b = ends.pop().expect("two ends");
    let mut a = ends.pop().expect("two ends");
    for (qa, qb) in a.qps.iter_mut().zip(&mut b.qps) {
        let conn_id = |qp: &QueuePair<'_, SimHal>| u16::try_from(qp.qpn()).map_err(|_| "a QP number over 16 bits");
        let (na, nb) = (conn_id(qa)?, conn_id(qb)?);
        qa.set_conn_id(nb).map_err(err("CONN_ID"))?;
        qb.set_conn_id(na).map_err(err("CONN_ID"))?;
        qa.ready().map_err(err("QP to RTS"))?;
        qb.ready().map_err(err("QP to RTS"))?;
    }
    if let Some(capture) = &capture {
        for (qa, qb) in a.qps.iter().zip(&b.qps) {
            capture.borrow_mut().pair(qa.qpn(), qb.qpn(), config.crc, config.markers);
        }
    }
    let pcap = config.pcap.clone();
    let mut pair = Pair { a, b, config };
    let result = f(&mut pair);
    if let (Some(capture), Some(path)) = (capture, pcap) {
        let capture = capture.borrow();
        std::fs::write(&path, capture.bytes()).map_err(|e| format!("writing {}: {e}", path.display()))?;
        if capture.unpaired() > 0 {
            return Err(format!("{}: {} FPDUs of undeclared QP pairs are missing", path.display(), capture.unpaired()));
        }
    }
    result
}
