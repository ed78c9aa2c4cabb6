//! Stream rings: the RNIC's TX and RX streams through host memory, for a card without a
//! TCP engine (`docs/REGISTERS.md`, "Stream rings").
//!
//! The device writes every FPDU it sends into the TX ring as a record (an 8-octet header:
//! length, CONN_ID; then the FPDU, padded to 8 octets) and moves `TXR_PI` once the record
//! is in memory; the host takes records and moves `TXR_CI`. The host writes every FPDU it
//! received into the RX ring the same way, with the QP number for the id, and moves
//! `RXR_PI`; the device reads them and moves `RXR_CI`. [`StreamRings`] is that host side,
//! through the [`Hal`] alone, so the same code runs on a card and on the simulated RTL;
//! [`RingBridge`](crate::bridge::RingBridge) carries the records over kernel sockets.
use std::sync::atomic::{fence, Ordering};

use rnic_proto::host::regs::{self, ring};

use crate::{DmaBuffer, DriverError, Hal};

/// Octets of a record's header.
const HEADER: usize = ring::RECORD_HEADER;

/// The host side of both stream rings of a device. Dropping it turns the rings off
/// before their memory is freed.
pub struct StreamRings<'h, H: Hal + ?Sized> {
    hal: &'h H,
    tx: DmaBuffer<'h, H>,
    rx: DmaBuffer<'h, H>,
    /// The host's free-running positions: TX records taken, RX records written; and the
    /// device's RX consumer position as last read.
    tx_ci: u32,
    rx_pi: u32,
    rx_ci: u32,
}

/// One record taken from the TX ring.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct TxRecord {
    /// The CONN_ID of the QP that sent it.
    pub conn_id: u16,
    /// The FPDU, as it goes on the wire.
    pub fpdu: Vec<u8>,
}

fn ring_len(log2: u32) -> Result<usize, DriverError> {
    if !(ring::MIN_SIZE_LOG2..=ring::MAX_SIZE_LOG2).contains(&log2) {
        return Err(DriverError::BadRingSize { log2, min: ring::MIN_SIZE_LOG2, max: ring::MAX_SIZE_LOG2 });
    }
    Ok(1 << log2)
}

/// A record's octets in the ring: header and FPDU padded to 8.
fn record_len(fpdu_len: usize) -> usize {
    HEADER + fpdu_len.next_multiple_of(8)
}

impl<'h, H: Hal + ?Sized> StreamRings<'h, H> {
    /// Allocates a TX ring of `2^tx_log2` and an RX ring of `2^rx_log2` octets and turns
    /// both on: from now on the device's streams go through them, not its stream ports.
    /// Each ring must hold the largest record (an FPDU of the largest MULPDU, plus 8).
    pub fn new(hal: &'h H, tx_log2: u32, rx_log2: u32) -> Result<Self, DriverError> {
        let tx = DmaBuffer::new(hal, ring_len(tx_log2)?)?;
        let rx = DmaBuffer::new(hal, ring_len(rx_log2)?)?;
        for (page, buf, log2) in [(regs::TX_RING, &tx, tx_log2), (regs::RX_RING, &rx, rx_log2)] {
            hal.write32(page + ring::BASE_LO, buf.iova() as u32);
            hal.write32(page + ring::BASE_HI, (buf.iova() >> 32) as u32);
            hal.write32(page + ring::SIZE_LOG2, log2);
        }
        Ok(StreamRings { hal, tx, rx, tx_ci: 0, rx_pi: 0, rx_ci: 0 })
    }

    fn check(&self, page: u32, name: &'static str) -> Result<(), DriverError> {
        match self.hal.read32(page + ring::STATUS) {
            0 => Ok(()),
            status => Err(DriverError::RingStopped { ring: name, status }),
        }
    }

    /// Takes every record the device has completed, oldest first, and hands its space
    /// back (`TXR_CI`).
    pub fn take_tx(&mut self) -> Result<Vec<TxRecord>, DriverError> {
        let pi = self.hal.read32(regs::TX_RING + ring::PI);
        // The records behind PI are complete: read them only after reading it.
        fence(Ordering::Acquire);
        let size = self.tx.len();
        let mut records = Vec::new();
        while self.tx_ci != pi {
            let at = self.tx_ci;
            let available = pi.wrapping_sub(at) as usize;
            let bad = |what: String| DriverError::MalformedRecord { position: at, what };
            if available < HEADER || available > size {
                return Err(bad(format!("TXR_PI {pi:#x} is {available} octets ahead")));
            }
            let mut header = [0; HEADER];
            read_wrapped(&self.tx, at, &mut header);
            let len = u32::from_le_bytes(header[..4].try_into().expect("4 octets")) as usize;
            if len == 0 || record_len(len) > available {
                return Err(bad(format!("length {len} with {available} octets published")));
            }
            let mut fpdu = vec![0; len];
            read_wrapped(&self.tx, at.wrapping_add(HEADER as u32), &mut fpdu);
            records.push(TxRecord { conn_id: u16::from_le_bytes([header[4], header[5]]), fpdu });
            self.tx_ci = at.wrapping_add(record_len(len) as u32);
        }
        if !records.is_empty() {
            self.hal.write32(regs::TX_RING + ring::CI, self.tx_ci);
        }
        self.check(regs::TX_RING, "TX")?;
        Ok(records)
    }

    /// Writes `fpdu` for QP `qpn` into the RX ring and publishes it (`RXR_PI`). `Ok(false)`
    /// if the ring has no room for it now (the device has not read enough yet).
    pub fn push_rx(&mut self, qpn: u16, fpdu: &[u8]) -> Result<bool, DriverError> {
        let size = self.rx.len();
        let need = record_len(fpdu.len());
        if fpdu.is_empty() || need > size {
            return Err(DriverError::RecordSize { len: fpdu.len(), size });
        }
        if self.rx_pi.wrapping_sub(self.rx_ci) as usize + need > size {
            self.rx_ci = self.hal.read32(regs::RX_RING + ring::CI);
            self.check(regs::RX_RING, "RX")?;
            if self.rx_pi.wrapping_sub(self.rx_ci) as usize + need > size {
                return Ok(false);
            }
        }
        let mut header = [0; HEADER];
        header[..4].copy_from_slice(&(fpdu.len() as u32).to_le_bytes());
        header[4..6].copy_from_slice(&qpn.to_le_bytes());
        write_wrapped(&self.rx, self.rx_pi, &header);
        write_wrapped(&self.rx, self.rx_pi.wrapping_add(HEADER as u32), fpdu);
        self.rx_pi = self.rx_pi.wrapping_add(need as u32);
        // The record is in memory before the device can see PI move past it.
        fence(Ordering::Release);
        self.hal.write32(regs::RX_RING + ring::PI, self.rx_pi);
        Ok(true)
    }

    /// Octets written to the RX ring that the device has not read yet, as it last said.
    pub fn rx_pending(&mut self) -> Result<usize, DriverError> {
        self.rx_ci = self.hal.read32(regs::RX_RING + ring::CI);
        self.check(regs::RX_RING, "RX")?;
        Ok(self.rx_pi.wrapping_sub(self.rx_ci) as usize)
    }
}

impl<H: Hal + ?Sized> Drop for StreamRings<'_, H> {
    fn drop(&mut self) {
        self.hal.write32(regs::TX_RING + ring::SIZE_LOG2, 0);
        self.hal.write32(regs::RX_RING + ring::SIZE_LOG2, 0);
    }
}

/// Reads `out.len()` octets from free-running position `at` of a ring, across its end.
fn read_wrapped(ring: &DmaBuffer<'_, impl Hal + ?Sized>, at: u32, out: &mut [u8]) {
    let start = at as usize % ring.len();
    let first = out.len().min(ring.len() - start);
    let (head, tail) = out.split_at_mut(first);
    ring.read_bytes(start, head);
    ring.read_bytes(0, tail);
}

/// Writes `data` at free-running position `at` of a ring, across its end.
fn write_wrapped(ring: &DmaBuffer<'_, impl Hal + ?Sized>, at: u32, data: &[u8]) {
    let start = at as usize % ring.len();
    let first = data.len().min(ring.len() - start);
    ring.write_bytes(start, &data[..first]);
    ring.write_bytes(0, &data[first..]);
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::fake::FakeHal;

    fn record(conn: u16, fpdu: &[u8]) -> Vec<u8> {
        let mut r = (fpdu.len() as u32).to_le_bytes().to_vec();
        r.extend(conn.to_le_bytes());
        r.extend([0, 0]);
        r.extend(fpdu);
        r.resize(record_len(fpdu.len()), 0xee);
        r
    }

    #[test]
    fn ring_sizes_outside_4_kib_to_256_mib_are_refused() {
        let hal = FakeHal::new(1);
        for log2 in [0, 11, 29] {
            assert!(matches!(StreamRings::new(&hal, log2, 12), Err(DriverError::BadRingSize { .. })), "{log2}");
            assert!(matches!(StreamRings::new(&hal, 12, log2), Err(DriverError::BadRingSize { .. })), "{log2}");
        }
        assert_eq!(hal.live_regions(), 0, "nothing left allocated");
    }

    #[test]
    fn new_programs_both_rings_and_drop_turns_them_off() {
        let hal = FakeHal::new(1);
        let rings = StreamRings::new(&hal, 12, 13).expect("rings");
        let (tx, rx) = (rings.tx.iova(), rings.rx.iova());
        assert_eq!(
            hal.take_writes(),
            [
                (regs::TX_RING + ring::BASE_LO, tx as u32),
                (regs::TX_RING + ring::BASE_HI, (tx >> 32) as u32),
                (regs::TX_RING + ring::SIZE_LOG2, 12),
                (regs::RX_RING + ring::BASE_LO, rx as u32),
                (regs::RX_RING + ring::BASE_HI, (rx >> 32) as u32),
                (regs::RX_RING + ring::SIZE_LOG2, 13),
            ]
        );
        drop(rings);
        assert_eq!(hal.take_writes(), [(regs::TX_RING + ring::SIZE_LOG2, 0), (regs::RX_RING + ring::SIZE_LOG2, 0)]);
        assert_eq!(hal.live_regions(), 0);
    }

    #[test]
    fn take_tx_reads_records_across_the_ring_end_and_hands_the_space_back() {
        let hal = FakeHal::new(1);
        let mut rings = StreamRings::new(&hal, 12, 12).expect("rings");
        // Start 24 octets before the end, so the second record's header and FPDU wrap.
        let start = 4096 * 3 - 24;
        rings.tx_ci = start;
        let fpdus: Vec<Vec<u8>> = vec![(0..13).collect(), (100..150).collect(), vec![7; 1460]];
        let mut at = start;
        for (i, f) in fpdus.iter().enumerate() {
            let r = record(i as u16 + 40, f);
            write_wrapped(&rings.tx, at, &r);
            at = at.wrapping_add(r.len() as u32);
        }
        hal.write32(regs::TX_RING + ring::PI, at);
        hal.take_writes();
        let got = rings.take_tx().expect("records");
        let want: Vec<TxRecord> =
            fpdus.iter().enumerate().map(|(i, f)| TxRecord { conn_id: i as u16 + 40, fpdu: f.clone() }).collect();
        assert_eq!(got, want);
        assert_eq!(hal.take_writes(), [(regs::TX_RING + ring::CI, at)]);
        assert_eq!(rings.take_tx().expect("none"), [], "nothing new: no CI write");
        assert_eq!(hal.take_writes(), []);
    }

    #[test]
    fn take_tx_refuses_a_record_the_device_did_not_publish_whole() {
        let hal = FakeHal::new(1);
        let mut rings = StreamRings::new(&hal, 12, 12).expect("rings");
        write_wrapped(&rings.tx, 0, &record(1, &[0; 64]));
        for (pi, what) in [(8, "length 64 with 8"), (0x2000, "8192 octets ahead"), (4, "4 octets ahead")] {
            hal.write32(regs::TX_RING + ring::PI, pi);
            match rings.take_tx() {
                Err(DriverError::MalformedRecord { position: 0, what: w }) => assert!(w.contains(what), "{w}"),
                other => panic!("PI {pi:#x}: {other:?}"),
            }
        }
        hal.write32(regs::TX_RING + ring::PI, 72);
        hal.write32(regs::TX_RING + ring::STATUS, 1);
        assert!(matches!(rings.take_tx(), Err(DriverError::RingStopped { ring: "TX", status: 1 })));
    }

    #[test]
    fn push_rx_writes_records_across_the_end_and_waits_for_room() {
        let hal = FakeHal::new(1);
        let mut rings = StreamRings::new(&hal, 12, 12).expect("rings");
        rings.rx_pi = 4096 - 16;
        rings.rx_ci = rings.rx_pi;
        hal.write32(regs::RX_RING + ring::CI, rings.rx_pi);
        let fpdu: Vec<u8> = (0..1500u32).map(|i| (i * 7) as u8).collect();
        assert!(rings.push_rx(5, &fpdu).expect("push"));
        assert!(rings.push_rx(6, &fpdu).expect("push"));
        assert!(!rings.push_rx(7, &fpdu).expect("push"), "a third does not fit 4 KiB");
        let mut back = vec![0; record_len(fpdu.len())];
        read_wrapped(&rings.rx, 4096 - 16, &mut back);
        assert_eq!(back[..8], record(5, &fpdu)[..8]);
        assert_eq!(back[8..8 + fpdu.len()], fpdu[..]);
        assert_eq!(hal.read32(regs::RX_RING + ring::PI), (4096 - 16 + 2 * back.len()) as u32);
        // The device reads the first record: the third now fits.
        hal.write32(regs::RX_RING + ring::CI, (4096 - 16 + back.len()) as u32);
        assert!(rings.push_rx(7, &fpdu).expect("push"));
        assert!(matches!(rings.push_rx(8, &[]), Err(DriverError::RecordSize { len: 0, .. })));
        assert!(matches!(rings.push_rx(8, &[0; 4089]), Err(DriverError::RecordSize { len: 4089, .. })));
        hal.write32(regs::RX_RING + ring::STATUS, 1);
        assert!(matches!(rings.push_rx(9, &fpdu), Err(DriverError::RingStopped { ring: "RX", status: 1 })));
    }
}
