//! Device memory: the RNIC's on-chip RAM, handed out in pieces that are registered as MRs
//! like host memory ([`crate::MemoryRegion::register_device`]).
//!
//! The device decodes an IOVA window (`DM_BASE_*`, `DM_SIZE`) in front of its DMA master:
//! what the MR table maps there is served by the RAM, so a Read, a Write or an atomic on
//! such a region never crosses PCIe (RFC 7306 atomics on it run at the atomic unit's own
//! rate). The host reaches the same octets through the BAR0 window at
//! `regs::DEVICE_MEMORY`, 32 bits at a time: that is how the driver fills and reads it.
use std::cell::RefCell;

use rnic_proto::host::regs;

use crate::error::DriverError;
use crate::{Device, Hal};

/// Pieces start on this boundary: every atomic target in a piece can be 8-aligned, and a
/// piece's first octet never shares a word with another piece's.
const PIECE_ALIGN: u32 = 64;

/// The free and used parts of device memory (offsets from its start).
#[derive(Debug, Default)]
pub(crate) struct DmAllocator {
    size: u32,
    /// Pieces in use as (offset, length), sorted by offset.
    used: RefCell<Vec<(u32, u32)>>,
}

impl DmAllocator {
    /// `size` octets, of which the BAR0 window reaches all that is handed out.
    pub(crate) fn new(size: u32) -> Self {
        DmAllocator { size: size.min(regs::DEVICE_MEMORY_WINDOW), used: RefCell::new(Vec::new()) }
    }

    /// First fit: the offset of a free piece of `len` octets.
    fn alloc(&self, len: u32) -> Option<u32> {
        let rounded = len.checked_next_multiple_of(PIECE_ALIGN)?;
        let mut used = self.used.borrow_mut();
        let mut start = 0;
        let mut slot = used.len();
        for (i, &(offset, length)) in used.iter().enumerate() {
            if offset - start >= rounded {
                slot = i;
                break;
            }
            start = (offset + length).next_multiple_of(PIECE_ALIGN);
        }
        if slot == used.len() && self.size.checked_sub(start)? < rounded {
            return None;
        }
        used.insert(slot, (start, len));
        Some(start)
    }

    fn free(&self, offset: u32) {
        self.used.borrow_mut().retain(|&(o, _)| o != offset);
    }

    /// Octets not in use (some may be lost to alignment).
    pub(crate) fn free_octets(&self) -> u32 {
        self.size - self.used.borrow().iter().map(|&(_, l)| l).sum::<u32>()
    }
}

/// A piece of device memory, zeroed when allocated, freed when dropped.
pub struct DeviceMemory<'d, H: Hal> {
    dev: &'d Device<H>,
    offset: u32,
    len: u32,
}

impl<'d, H: Hal> DeviceMemory<'d, H> {
    /// `len` octets of device memory, zeroed.
    pub(crate) fn alloc(dev: &'d Device<H>, len: usize) -> Result<Self, DriverError> {
        let available = dev.dm().free_octets();
        let piece = u32::try_from(len).ok().filter(|&l| l > 0).and_then(|l| dev.dm().alloc(l).map(|o| (o, l)));
        let Some((offset, len)) = piece else {
            return Err(DriverError::OutOfDeviceMemory { len: len as u64, available: available.into() });
        };
        let memory = DeviceMemory { dev, offset, len };
        for word in (0..len).step_by(4) {
            memory.store_word(word, 0);
        }
        Ok(memory)
    }

    /// The IOVA of the first octet: what its MR maps to.
    pub fn iova(&self) -> u64 {
        self.dev.info().dm_base + u64::from(self.offset)
    }

    /// Length in octets.
    pub fn len(&self) -> usize {
        self.len as usize
    }

    /// Whether it has no octets (never: allocations are at least one octet).
    pub fn is_empty(&self) -> bool {
        self.len == 0
    }

    /// Copies `data` in at `offset`.
    pub fn write_bytes(&self, offset: usize, data: &[u8]) -> Result<(), DriverError> {
        self.check(offset, data.len())?;
        // Whole words are written as they are; a word only partly covered is read first.
        let (first, end) = (offset as u32, (offset + data.len()) as u32);
        for word in (first & !3..end).step_by(4) {
            let mut octets = self.load_word(word).to_le_bytes();
            for (i, octet) in octets.iter_mut().enumerate() {
                let at = word + i as u32;
                if (first..end).contains(&at) {
                    *octet = data[(at - first) as usize];
                }
            }
            self.store_word(word, u32::from_le_bytes(octets));
        }
        Ok(())
    }

    /// Copies `out.len()` octets out from `offset`.
    pub fn read_bytes(&self, offset: usize, out: &mut [u8]) -> Result<(), DriverError> {
        self.check(offset, out.len())?;
        let (first, end) = (offset as u32, (offset + out.len()) as u32);
        for word in (first & !3..end).step_by(4) {
            for (i, octet) in self.load_word(word).to_le_bytes().into_iter().enumerate() {
                let at = word + i as u32;
                if (first..end).contains(&at) {
                    out[(at - first) as usize] = octet;
                }
            }
        }
        Ok(())
    }

    /// The little-endian 64-bit value at `offset`.
    pub fn read_u64(&self, offset: usize) -> Result<u64, DriverError> {
        let mut octets = [0; 8];
        self.read_bytes(offset, &mut octets)?;
        Ok(u64::from_le_bytes(octets))
    }

    /// Stores `value` little-endian at `offset`.
    pub fn write_u64(&self, offset: usize, value: u64) -> Result<(), DriverError> {
        self.write_bytes(offset, &value.to_le_bytes())
    }

    fn check(&self, offset: usize, len: usize) -> Result<(), DriverError> {
        if offset.checked_add(len).is_none_or(|end| end > self.len()) {
            return Err(DriverError::OutOfBounds { offset: offset as u64, len: len as u64, size: self.len.into() });
        }
        Ok(())
    }

    /// The 32-bit word of device memory at `word` octets into this piece (4-aligned).
    fn load_word(&self, word: u32) -> u32 {
        self.dev.hal().read32(regs::DEVICE_MEMORY + self.offset + word)
    }

    fn store_word(&self, word: u32, value: u32) {
        self.dev.hal().write32(regs::DEVICE_MEMORY + self.offset + word, value)
    }
}

impl<H: Hal> Drop for DeviceMemory<'_, H> {
    fn drop(&mut self) {
        self.dev.dm().free(self.offset);
    }
}

#[cfg(test)]
mod tests {
    use rnic_proto::host::MrAccess;

    use super::*;
    use crate::testing::{model_device, model_device_features};
    use crate::{MemoryRegion, ProtectionDomain};

    #[test]
    fn octets_go_through_the_bar_window_whole_words_or_merged() {
        let dev = model_device();
        let _first = dev.alloc_device_memory(8).expect("first piece");
        let dm = dev.alloc_device_memory(16).expect("second piece");
        assert_eq!(dm.iova(), dev.info().dm_base + u64::from(PIECE_ALIGN));
        dm.write_bytes(0, &[0xAA; 16]).unwrap();
        dm.write_bytes(3, &[1, 2, 3, 4, 5, 6]).unwrap();
        let mut out = [0; 16];
        dm.read_bytes(0, &mut out).unwrap();
        assert_eq!(out, [0xAA, 0xAA, 0xAA, 1, 2, 3, 4, 5, 6, 0xAA, 0xAA, 0xAA, 0xAA, 0xAA, 0xAA, 0xAA]);
        let window = regs::DEVICE_MEMORY + PIECE_ALIGN;
        assert_eq!(dev.hal().read32(window + 4), u32::from_le_bytes([2, 3, 4, 5]));
        dm.write_u64(8, 0x0102_0304_0506_0708).unwrap();
        assert_eq!(dm.read_u64(8).unwrap(), 0x0102_0304_0506_0708);
        assert!(matches!(dm.write_bytes(12, &[0; 5]), Err(DriverError::OutOfBounds { .. })));
        assert!(matches!(dm.read_u64(9), Err(DriverError::OutOfBounds { .. })));
    }

    #[test]
    fn a_device_memory_mr_maps_its_tagged_offsets_to_device_memory_iovas() {
        let dev = model_device();
        let pd = ProtectionDomain::new(&dev).unwrap();
        let dm = dev.alloc_device_memory(64).unwrap();
        let rights = MrAccess { local_write: true, remote_read: true, remote_write: true, remote_atomic: true };
        let mr = MemoryRegion::register_device(&pd, &dm, rights).unwrap();
        let ctx = dev.query_mr(mr.index()).unwrap();
        assert_eq!((ctx.va, ctx.iova, ctx.length), (dm.iova(), dm.iova(), 64));
        assert_eq!(mr.remote(8).unwrap().to, dm.iova() + 8);
    }

    #[test]
    fn allocation_fails_cleanly_when_full_or_without_the_feature() {
        let dev = model_device();
        let size = dev.info().dm_size as usize;
        let all = dev.alloc_device_memory(size).expect("all of it");
        assert!(matches!(dev.alloc_device_memory(1), Err(DriverError::OutOfDeviceMemory { len: 1, available: 0 })));
        drop(all);
        assert!(dev.alloc_device_memory(size).is_ok(), "freed on drop");
        assert!(matches!(dev.alloc_device_memory(0), Err(DriverError::OutOfDeviceMemory { .. })));
        let plain = model_device_features(0b1111);
        assert!(matches!(plain.alloc_device_memory(8), Err(DriverError::Unsupported(_))));
    }

    #[test]
    fn pieces_are_aligned_first_fit_and_reused_after_free() {
        let dm = DmAllocator::new(256);
        assert_eq!(dm.alloc(8), Some(0));
        assert_eq!(dm.alloc(65), Some(64));
        assert_eq!(dm.alloc(64), Some(192));
        assert_eq!(dm.alloc(1), None, "full");
        dm.free(64);
        assert_eq!(dm.alloc(100), Some(64));
        assert_eq!(dm.free_octets(), 256 - 8 - 100 - 64);
        assert_eq!(DmAllocator::new(0).alloc(1), None);
    }

    #[test]
    fn the_allocator_never_hands_out_more_than_the_bar_window_reaches() {
        let dm = DmAllocator::new(u32::MAX);
        assert_eq!(dm.alloc(regs::DEVICE_MEMORY_WINDOW), Some(0));
        assert_eq!(dm.alloc(1), None);
    }
}
