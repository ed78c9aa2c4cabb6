//! The stream rings of `rnic_top` (BAR0 0x3000) at the register level, on the Verilated
//! RTL: bad RX records stop the ring before anything past `RXR_PI` is read, a restart
//! clears the stop, and a failed DMA write stops the TX ring and shows in its STATUS and
//! in the driver's error. The rings carrying real traffic are in `sim_socket.rs`.
#![cfg(feature = "sim")]

use rnic_driver::sim::SimHal;
use rnic_driver::stream::StreamRings;
use rnic_driver::{
    CompletionQueue, Device, DmaBuffer, DriverError, Hal, MemoryRegion, MrAccess, ProtectionDomain, QpCaps, QueuePair,
    WorkRequest,
};
use rnic_proto::host::regs::{self, ring};
use rnic_sim::host_memory::Dir;

fn device() -> Device<SimHal> {
    let dev = Device::open(SimHal::open("rnic_top").expect("rnic_top model")).expect("RNIC");
    dev.enable();
    dev
}

/// Turns the RX ring on over `buf` (4 KiB) and logs DMA accesses from here on.
fn rx_ring_on(dev: &Device<SimHal>, buf: &DmaBuffer<'_, SimHal>) {
    let hal = dev.hal();
    hal.write32(regs::RX_RING + ring::BASE_LO, buf.iova() as u32);
    hal.write32(regs::RX_RING + ring::BASE_HI, (buf.iova() >> 32) as u32);
    hal.write32(regs::RX_RING + ring::SIZE_LOG2, 12);
    hal.with_memory(|m| m.log_accesses(true));
}

fn header(len: u32, qpn: u16) -> [u8; 8] {
    let mut h = [0; 8];
    h[..4].copy_from_slice(&len.to_le_bytes());
    h[4..6].copy_from_slice(&qpn.to_le_bytes());
    h
}

/// The ring's octets the device read, as (offset, length).
fn ring_reads(dev: &Device<SimHal>, buf: &DmaBuffer<'_, SimHal>) -> Vec<(u64, usize)> {
    let accesses = dev.hal().with_memory(|m| m.take_accesses());
    let ring = buf.iova()..buf.iova() + 4096;
    accesses
        .iter()
        .filter(|a| a.dir == Dir::Read && ring.contains(&a.iova))
        .map(|a| (a.iova - buf.iova(), a.len))
        .collect()
}

#[test]
fn rx_ring_a_record_of_length_0_stops_the_ring_after_its_header() {
    let dev = device();
    let buf = dev.alloc_dma(4096).expect("DMA");
    rx_ring_on(&dev, &buf);
    buf.write_bytes(0, &header(0, 0));
    dev.hal().write32(regs::RX_RING + ring::PI, 8);
    dev.hal().run_idle(500);
    assert_eq!(dev.hal().read32(regs::RX_RING + ring::STATUS), 1, "stopped");
    assert_eq!(dev.hal().read32(regs::RX_RING + ring::CI), 0, "the record was not taken");
    assert_eq!(ring_reads(&dev, &buf), [(0, 8)], "only the header was read");
}

#[test]
fn rx_ring_a_record_reaching_past_pi_stops_the_ring_and_nothing_past_pi_is_read() {
    let dev = device();
    let buf = dev.alloc_dma(4096).expect("DMA");
    rx_ring_on(&dev, &buf);
    // The header says 100 octets; the host published 64 of the record.
    buf.write_bytes(0, &header(100, 0));
    dev.hal().write32(regs::RX_RING + ring::PI, 64);
    dev.hal().run_idle(500);
    assert_eq!(dev.hal().read32(regs::RX_RING + ring::STATUS), 1, "stopped");
    assert_eq!(dev.hal().read32(regs::RX_RING + ring::CI), 0);
    assert_eq!(ring_reads(&dev, &buf), [(0, 8)], "only the header was read");
    // More published later does not restart it.
    dev.hal().write32(regs::RX_RING + ring::PI, 112);
    dev.hal().run_idle(500);
    assert_eq!(ring_reads(&dev, &buf), [], "stopped for good");
    // Writing the size restarts it from position 0, cleared.
    dev.hal().write32(regs::RX_RING + ring::SIZE_LOG2, 12);
    assert_eq!([ring::STATUS, ring::PI, ring::CI].map(|r| dev.hal().read32(regs::RX_RING + r)), [0, 0, 0], "restarted");
}

#[test]
fn rx_ring_a_well_formed_record_is_read_whole_and_its_space_handed_back() {
    let dev = device();
    let buf = dev.alloc_dma(4096).expect("DMA");
    rx_ring_on(&dev, &buf);
    // 28 octets for QP 63 (no such connection: the deframer takes it and drops it).
    buf.write_bytes(0, &header(28, 63));
    dev.hal().write32(regs::RX_RING + ring::PI, 40);
    dev.hal().run_idle(500);
    assert_eq!(dev.hal().read32(regs::RX_RING + ring::STATUS), 0);
    assert_eq!(dev.hal().read32(regs::RX_RING + ring::CI), 40, "8 + 28 rounded up to 32");
    assert_eq!(ring_reads(&dev, &buf), [(0, 8), (8, 32)]);
}

#[test]
fn tx_ring_a_failed_dma_write_stops_the_ring_and_the_driver_says_so() {
    let dev = device();
    let mut rings = StreamRings::new(dev.hal(), 12, 12).expect("rings");
    // Point the TX ring at IOVAs nothing maps.
    dev.hal().write32(regs::TX_RING + ring::BASE_HI, 0x7000);
    dev.hal().write32(regs::TX_RING + ring::SIZE_LOG2, 12);
    dev.hal().with_memory(|m| m.fail_on_fault(false));
    let pd = ProtectionDomain::new(&dev).expect("PD");
    let buf = dev.alloc_dma(4096).expect("DMA");
    let mr = MemoryRegion::register(&pd, &buf, MrAccess { local_write: true, ..MrAccess::default() }).expect("MR");
    let cq = CompletionQueue::new(&dev, 4, 0).expect("CQ");
    let mut qp = QueuePair::new(&dev, &pd, &cq, &cq, QpCaps { conn_id: 3, ..QpCaps::default() }).expect("QP");
    qp.ready().expect("RTS");
    let send = WorkRequest::Send {
        wr_id: 1,
        local: mr.sge(0, 64).expect("sge"),
        solicited: false,
        invalidate: None,
        signaled: true,
    };
    qp.post_send_batch(&[send]).expect("Send");
    dev.hal().run_idle(2_000);
    assert_eq!(dev.hal().read32(regs::TX_RING + ring::STATUS), 1, "stopped");
    assert_eq!(dev.hal().read32(regs::TX_RING + ring::PI), 0, "nothing published");
    let faults = dev.hal().with_memory(|m| m.faults().to_vec());
    assert!(!faults.is_empty() && faults.iter().all(|f| f.iova >> 32 == 0x7000), "{faults:?}");
    assert!(matches!(rings.take_tx(), Err(DriverError::RingStopped { ring: "TX", status: 1 })));
}
