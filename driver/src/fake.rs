//! A backend made of plain memory, for testing driver logic without hardware: registers
//! are a map, DMA memory comes from the heap at IOVAs from a bump allocator, and tests
//! raise interrupts by hand.
use std::alloc::{self, Layout};
use std::cell::{Cell, RefCell};
use std::collections::{BTreeMap, VecDeque};
use std::ptr::NonNull;
use std::time::Duration;

use crate::{DmaRegion, Hal, HalError};

const PAGE: usize = 4096;
/// IOVAs start far from any heap address, so a bug that uses a CPU address as a device
/// address shows up.
const IOVA_BASE: u64 = 0x10_0000_0000;

/// The fake device.
pub struct FakeHal {
    registers: RefCell<BTreeMap<u32, u32>>,
    next_iova: Cell<u64>,
    live: RefCell<BTreeMap<u64, (NonNull<u8>, Layout)>>,
    pending_irqs: RefCell<VecDeque<u16>>,
    vectors: u16,
}

impl FakeHal {
    /// A fake device with `vectors` interrupt vectors.
    pub fn new(vectors: u16) -> Self {
        FakeHal {
            registers: RefCell::new(BTreeMap::new()),
            next_iova: Cell::new(IOVA_BASE),
            live: RefCell::new(BTreeMap::new()),
            pending_irqs: RefCell::new(VecDeque::new()),
            vectors,
        }
    }

    /// Makes interrupt `vector` pending, as the device would.
    pub fn raise_irq(&self, vector: u16) {
        self.pending_irqs.borrow_mut().push_back(vector);
    }

    /// DMA regions allocated and not yet freed.
    pub fn live_regions(&self) -> usize {
        self.live.borrow().len()
    }
}

impl Hal for FakeHal {
    fn read32(&self, offset: u32) -> u32 {
        self.registers.borrow().get(&offset).copied().unwrap_or(0)
    }

    fn write32(&self, offset: u32, value: u32) {
        self.registers.borrow_mut().insert(offset, value);
    }

    fn dma_alloc(&self, len: usize) -> Result<DmaRegion, HalError> {
        if len == 0 {
            return Err(HalError::EmptyDmaRequest);
        }
        let size = len.checked_next_multiple_of(PAGE).ok_or(HalError::OutOfDmaMemory(len))?;
        let layout = Layout::from_size_align(size, PAGE).map_err(|_| HalError::OutOfDmaMemory(len))?;
        // SAFETY: the layout has a non-zero size.
        let ptr = NonNull::new(unsafe { alloc::alloc_zeroed(layout) }).ok_or(HalError::OutOfDmaMemory(len))?;
        let iova = self.next_iova.get();
        self.next_iova.set(iova + size as u64);
        self.live.borrow_mut().insert(iova, (ptr, layout));
        // SAFETY: `ptr` is a fresh, page-aligned allocation of at least `len` octets that
        // stays alive until `dma_free` or drop.
        Ok(unsafe { DmaRegion::new(ptr, len, iova) })
    }

    fn dma_free(&self, region: DmaRegion) {
        if let Some((ptr, layout)) = self.live.borrow_mut().remove(&region.iova()) {
            // SAFETY: allocated by `dma_alloc` with this layout and freed once (removed
            // from the live table).
            unsafe { alloc::dealloc(ptr.as_ptr(), layout) }
        }
    }

    fn wait_irq(&self, vector: u16, _timeout: Duration) -> Result<bool, HalError> {
        if vector >= self.vectors {
            return Err(HalError::NoSuchVector(vector));
        }
        let mut pending = self.pending_irqs.borrow_mut();
        Ok(match pending.iter().position(|&v| v == vector) {
            Some(i) => pending.remove(i).is_some(),
            None => false,
        })
    }
}

impl Drop for FakeHal {
    fn drop(&mut self) {
        for (_, (ptr, layout)) in std::mem::take(&mut *self.live.borrow_mut()) {
            // SAFETY: each live allocation is freed exactly once.
            unsafe { alloc::dealloc(ptr.as_ptr(), layout) }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn registers_hold_what_was_written() {
        let hal = FakeHal::new(1);
        hal.write32(0x100, 0xdead_beef);
        assert_eq!(hal.read32(0x100), 0xdead_beef);
        assert_eq!(hal.read32(0x104), 0);
    }

    #[test]
    fn dma_regions_have_distinct_iovas_that_are_not_cpu_addresses() {
        let hal = FakeHal::new(1);
        let a = hal.dma_alloc(100).expect("alloc");
        let b = hal.dma_alloc(5000).expect("alloc");
        assert_ne!(a.iova(), b.iova());
        assert!(b.iova() >= a.iova() + PAGE as u64, "regions overlap in IOVA space");
        assert_ne!(a.iova(), a.as_ptr().as_ptr() as u64);
        assert_eq!(hal.live_regions(), 2);
        hal.dma_free(a);
        assert_eq!(hal.live_regions(), 1);
        hal.dma_free(b);
        assert_eq!(hal.dma_alloc(0).unwrap_err(), HalError::EmptyDmaRequest);
    }

    #[test]
    fn dma_memory_round_trips_little_endian() {
        let hal = FakeHal::new(1);
        let r = hal.dma_alloc(64).expect("alloc");
        r.write_u64(8, 0x0102_0304_0506_0708);
        let mut octets = [0u8; 8];
        r.read_bytes(8, &mut octets);
        assert_eq!(octets, [8, 7, 6, 5, 4, 3, 2, 1]);
        r.write_bytes(60, &[0xaa, 0xbb, 0xcc, 0xdd]);
        assert_eq!(r.read_u32(60), 0xddcc_bbaa);
        assert_eq!(r.read_u32(0), 0, "fresh DMA memory is zeroed");
        hal.dma_free(r);
    }

    #[test]
    #[should_panic(expected = "outside a 64-octet region")]
    fn dma_access_past_the_end_is_refused() {
        let hal = FakeHal::new(1);
        let r = hal.dma_alloc(64).expect("alloc");
        r.write_u32(64, 1);
    }

    #[test]
    fn interrupts_are_delivered_per_vector() {
        let hal = FakeHal::new(2);
        assert_eq!(hal.wait_irq(0, Duration::ZERO), Ok(false));
        hal.raise_irq(1);
        assert_eq!(hal.wait_irq(0, Duration::ZERO), Ok(false));
        assert_eq!(hal.wait_irq(1, Duration::ZERO), Ok(true));
        assert_eq!(hal.wait_irq(1, Duration::ZERO), Ok(false));
        assert_eq!(hal.wait_irq(2, Duration::ZERO), Err(HalError::NoSuchVector(2)));
    }
}
