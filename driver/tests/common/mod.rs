//! What the `rnic_top` integration tests share: two devices linked stream to stream, or one
//! device against a raw peer on its streams, and ways to wait on them and read their FPDUs.
#![allow(dead_code)] // each test file uses its own part

pub mod workload;
use std::cell::RefCell;
use std::rc::Rc;

use rnic_driver::sim::{LinkConfig, LinkTap, RawPeer, SimHal};
use rnic_driver::{
    Completion, CompletionQueue, Device, DeviceMemory, DmaBuffer, MemoryRegion, MrAccess, ProtectionDomain,
};
use rnic_proto::mpa::{Framer, FramingConfig};
use rnic_proto::rdmap::{parse_ulpdu, RdmapHeader};

/// Two `rnic_top` devices, linked stream to stream and enabled.
pub fn linked_pair() -> (Device<SimHal>, Device<SimHal>) {
    let (ha, hb) = (SimHal::open("rnic_top").expect("model"), SimHal::open("rnic_top").expect("model"));
    SimHal::connect(&ha, &hb, LinkConfig::default());
    let (a, b) = (Device::open(ha).expect("RNIC A"), Device::open(hb).expect("RNIC B"));
    a.enable();
    b.enable();
    (a, b)
}

/// [`linked_pair`], with every FPDU that crosses the link recorded whole: (from A, the
/// receiving QP, the FPDU's octets), in the order they crossed.
#[allow(clippy::type_complexity)]
pub fn linked_pair_recorded() -> (Device<SimHal>, Device<SimHal>, Rc<RefCell<Vec<(bool, u64, Vec<u8>)>>>) {
    let (ha, hb) = (SimHal::open("rnic_top").expect("model"), SimHal::open("rnic_top").expect("model"));
    let record: Rc<RefCell<Vec<(bool, u64, Vec<u8>)>>> = Rc::default();
    let log = Rc::clone(&record);
    let tap: LinkTap = Rc::new(RefCell::new(move |from_a: bool, qp: u64, fpdu: &mut Vec<u8>| {
        log.borrow_mut().push((from_a, qp, fpdu.clone()));
    }));
    SimHal::connect_tapped(&ha, &hb, LinkConfig::default(), tap);
    let (a, b) = (Device::open(ha).expect("RNIC A"), Device::open(hb).expect("RNIC B"));
    a.enable();
    b.enable();
    (a, b, record)
}

/// One enabled `rnic_top` whose streams a raw peer plays.
pub fn raw_device() -> (Device<SimHal>, RawPeer) {
    raw_device_on(SimHal::open("rnic_top").expect("rnic_top model"))
}

/// [`raw_device`] on the random-reset `rnic_top` (`rnic_top_x`): registers power up, and X
/// are assigned, with random values drawn from `seed`.
pub fn raw_device_random_reset(seed: u64) -> (Device<SimHal>, RawPeer) {
    raw_device_on(SimHal::open_random_reset("rnic_top", seed).expect("rnic_top_x model"))
}

fn raw_device_on(hal: SimHal) -> (Device<SimHal>, RawPeer) {
    let peer = hal.attach_raw_peer();
    let dev = Device::open(hal).expect("RNIC");
    dev.enable();
    (dev, peer)
}

/// Polls `cq` (clocking `dev`, and its peer if linked) until `n` completions arrived or
/// the budget ends.
pub fn collect(dev: &Device<SimHal>, cq: &CompletionQueue<'_, SimHal>, n: usize) -> Vec<Completion> {
    let mut got = Vec::new();
    for _ in 0..20_000 {
        while let Some(c) = cq.poll().expect("a CQE that decodes") {
            got.push(c);
        }
        if got.len() >= n {
            break;
        }
        dev.hal().run_idle(20);
    }
    got
}

/// Clocks `dev` until `done` holds, for at most 40 000 cycles.
pub fn run_until(dev: &Device<SimHal>, mut done: impl FnMut() -> bool) {
    for _ in 0..2000 {
        if done() {
            return;
        }
        dev.hal().run_idle(20);
    }
}

/// A ULPDU framed as one FPDU, with or without a CRC, no markers.
pub fn frame(ulpdu: &[u8], crc: bool) -> Vec<u8> {
    let mut fpdu = Vec::new();
    Framer::new(FramingConfig { markers: false, crc }).frame(ulpdu, &mut fpdu).expect("frame");
    fpdu
}

/// The ULPDU of an FPDU without markers: after ULPDU_Length, before PAD and CRC.
pub fn ulpdu_of(fpdu: &[u8]) -> &[u8] {
    let len = usize::from(u16::from_be_bytes([fpdu[0], fpdu[1]]));
    &fpdu[2..2 + len]
}

/// The control word of the Terminate an FPDU carries.
pub fn terminate_code(fpdu: &[u8]) -> u32 {
    let seg = parse_ulpdu(ulpdu_of(fpdu)).expect("a Terminate");
    let RdmapHeader::Terminate(term) = seg.header else { panic!("not a Terminate: {seg:?}") };
    term.control_word()
}

/// Memory a test targets: a host DMA buffer, or a piece of the device's own memory.
pub enum Targets<'d> {
    Host(DmaBuffer<'d, SimHal>),
    Device(DeviceMemory<'d, SimHal>),
}

impl<'d> Targets<'d> {
    /// `len` zeroed octets of `dev`'s device memory, or of host memory.
    pub fn new(dev: &'d Device<SimHal>, device_memory: bool, len: usize) -> Self {
        match device_memory {
            true => Targets::Device(dev.alloc_device_memory(len).expect("device memory")),
            false => Targets::Host(dev.alloc_dma(len).expect("DMA")),
        }
    }

    /// An MR over all of it.
    pub fn register(&'d self, pd: &'d ProtectionDomain<'d, SimHal>, access: MrAccess) -> MemoryRegion<'d, SimHal> {
        match self {
            Targets::Host(buf) => MemoryRegion::register(pd, buf, access).expect("MR"),
            Targets::Device(dm) => MemoryRegion::register_device(pd, dm, access).expect("device memory MR"),
        }
    }

    pub fn write_bytes(&self, offset: usize, data: &[u8]) {
        match self {
            Targets::Host(buf) => buf.write_bytes(offset, data),
            Targets::Device(dm) => dm.write_bytes(offset, data).expect("in the piece"),
        }
    }

    pub fn bytes(&self, offset: usize, len: usize) -> Vec<u8> {
        let mut out = vec![0; len];
        match self {
            Targets::Host(buf) => buf.read_bytes(offset, &mut out),
            Targets::Device(dm) => dm.read_bytes(offset, &mut out).expect("in the piece"),
        }
        out
    }

    /// The little-endian word at `offset`.
    pub fn word(&self, offset: usize) -> u64 {
        u64::from_le_bytes(self.bytes(offset, 8).try_into().expect("8 octets"))
    }

    pub fn set_word(&self, offset: usize, value: u64) {
        self.write_bytes(offset, &value.to_le_bytes())
    }
}
