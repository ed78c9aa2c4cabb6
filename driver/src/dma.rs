//! DMA memory as the driver sees it: a device address (IOVA), a length, and accessors. No
//! Rust reference into the memory is ever handed out, because the device writes it behind
//! the compiler's back.
//!
//! The memory is reached in one of two ways:
//!
//! - **local** ([`DmaRegion::new`]): a CPU address, read and written with volatile accesses
//!   (the fake, simulator and VFIO backends);
//! - **remote** ([`DmaRegion::remote`]): memory outside the host's address space, reached through a
//!   [`RemoteMemory`] (the board build's on-board memory, over its UART bridge); every
//!   access is a call to it, a range of octets in one call so that the backend can batch it.
//!
//! A [`DmaRegion`] borrows the backend that allocated it (`'h`): backends free what is
//! still mapped when they are dropped, and the borrow makes a region that outlives its
//! memory a compile error instead of a use after free. [`DmaBuffer`] adds ownership: it
//! gives its region back to the backend when dropped.
use std::marker::PhantomData;
use std::mem::ManuallyDrop;
use std::ops::Deref;
use std::ptr::NonNull;

use crate::{Hal, HalError};

/// Memory the device reaches by DMA that the CPU cannot address: each access goes to the
/// backend, octets at a device address.
///
/// Accesses cannot fail here (as a load or store cannot): a backend that loses the memory
/// reads all-ones, drops writes, and reports the failure through its [`Hal`] methods.
pub trait RemoteMemory {
    /// Reads `out.len()` octets from device address `addr` into `out`.
    fn read(&self, addr: u64, out: &mut [u8]);
    /// Writes `data` at device address `addr`.
    fn write(&self, addr: u64, data: &[u8]);
}

/// How a region's octets are reached.
#[derive(Clone, Copy)]
enum Backing<'h> {
    /// A CPU address, valid for the region's length (see [`DmaRegion::new`]).
    Local(NonNull<u8>),
    /// A backend that reads and writes the memory at its device addresses (the IOVAs).
    Remote(&'h dyn RemoteMemory),
}

/// A block of memory the device can read and write by DMA, valid while the backend
/// that allocated it (`'h`) lives.
pub struct DmaRegion<'h> {
    backing: Backing<'h>,
    len: usize,
    iova: u64,
    _backend: PhantomData<&'h ()>,
}

impl std::fmt::Debug for DmaRegion<'_> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let mut d = f.debug_struct("DmaRegion");
        match self.backing {
            Backing::Local(ptr) => d.field("ptr", &ptr),
            Backing::Remote(_) => d.field("remote", &true),
        };
        d.field("len", &self.len).field("iova", &self.iova).finish()
    }
}

impl<'h> DmaRegion<'h> {
    /// Wraps memory that the device reaches at `iova` and the CPU only through `memory`,
    /// which is asked for octets at `iova + offset`.
    pub fn remote(memory: &'h dyn RemoteMemory, len: usize, iova: u64) -> Self {
        DmaRegion { backing: Backing::Remote(memory), len, iova, _backend: PhantomData }
    }
}

impl DmaRegion<'_> {
    /// Wraps memory a backend allocated and mapped, which the CPU reaches at `ptr`.
    ///
    /// # Safety
    /// `ptr` must be valid for reads and writes of `len` octets, aligned to 8, until the
    /// backend frees it (which it does not do while the region's lifetime lasts, except
    /// through [`Hal::dma_free`], which takes the region), and `iova` must be where the
    /// device sees it.
    pub unsafe fn new(ptr: NonNull<u8>, len: usize, iova: u64) -> Self {
        DmaRegion { backing: Backing::Local(ptr), len, iova, _backend: PhantomData }
    }

    /// Length in octets.
    pub fn len(&self) -> usize {
        self.len
    }

    /// Whether the region is empty (never, for regions from a backend).
    pub fn is_empty(&self) -> bool {
        self.len == 0
    }

    /// The address the device uses for octet 0.
    pub fn iova(&self) -> u64 {
        self.iova
    }

    /// The CPU address of octet 0, for backends that free the memory; `None` for remote
    /// memory, which has none.
    pub fn as_ptr(&self) -> Option<NonNull<u8>> {
        match self.backing {
            Backing::Local(ptr) => Some(ptr),
            Backing::Remote(_) => None,
        }
    }

    /// Whether the CPU reaches the memory only through a [`RemoteMemory`].
    pub fn is_remote(&self) -> bool {
        matches!(self.backing, Backing::Remote(_))
    }

    /// The device address of octet `offset` (in bounds: checked by the callers).
    fn device_addr(&self, offset: usize) -> u64 {
        self.iova.wrapping_add(offset as u64)
    }

    fn check(&self, offset: usize, len: usize, align: usize) {
        let end = offset.checked_add(len);
        assert!(
            end.is_some_and(|e| e <= self.len) && offset.is_multiple_of(align),
            "DMA access of {len} octets at offset {offset} outside a {}-octet region or misaligned",
            self.len
        );
    }

    /// Reads the octet at `offset`.
    pub fn read_u8(&self, offset: usize) -> u8 {
        self.check(offset, 1, 1);
        match self.backing {
            // SAFETY: in bounds (checked); the region is live (DmaRegion::new).
            Backing::Local(ptr) => unsafe { ptr.as_ptr().add(offset).read_volatile() },
            Backing::Remote(memory) => {
                let mut octet = [0u8; 1];
                memory.read(self.device_addr(offset), &mut octet);
                octet[0]
            }
        }
    }

    /// Reads the little-endian u32 at `offset` (4-aligned).
    pub fn read_u32(&self, offset: usize) -> u32 {
        self.check(offset, 4, 4);
        match self.backing {
            // SAFETY: in bounds and aligned (checked); the region is live (DmaRegion::new).
            Backing::Local(ptr) => u32::from_le(unsafe { ptr.as_ptr().add(offset).cast::<u32>().read_volatile() }),
            Backing::Remote(memory) => {
                let mut octets = [0u8; 4];
                memory.read(self.device_addr(offset), &mut octets);
                u32::from_le_bytes(octets)
            }
        }
    }

    /// Writes `value` little-endian at `offset` (4-aligned).
    pub fn write_u32(&self, offset: usize, value: u32) {
        self.check(offset, 4, 4);
        match self.backing {
            // SAFETY: as in `read_u32`.
            Backing::Local(ptr) => unsafe { ptr.as_ptr().add(offset).cast::<u32>().write_volatile(value.to_le()) },
            Backing::Remote(memory) => memory.write(self.device_addr(offset), &value.to_le_bytes()),
        }
    }

    /// Reads the little-endian u64 at `offset` (8-aligned).
    pub fn read_u64(&self, offset: usize) -> u64 {
        self.check(offset, 8, 8);
        match self.backing {
            // SAFETY: as in `read_u32`.
            Backing::Local(ptr) => u64::from_le(unsafe { ptr.as_ptr().add(offset).cast::<u64>().read_volatile() }),
            Backing::Remote(memory) => {
                let mut octets = [0u8; 8];
                memory.read(self.device_addr(offset), &mut octets);
                u64::from_le_bytes(octets)
            }
        }
    }

    /// Writes `value` little-endian at `offset` (8-aligned).
    pub fn write_u64(&self, offset: usize, value: u64) {
        self.check(offset, 8, 8);
        match self.backing {
            // SAFETY: as in `read_u32`.
            Backing::Local(ptr) => unsafe { ptr.as_ptr().add(offset).cast::<u64>().write_volatile(value.to_le()) },
            Backing::Remote(memory) => memory.write(self.device_addr(offset), &value.to_le_bytes()),
        }
    }

    /// Copies `data` into the region at `offset`: octet by octet, volatile, or for remote
    /// memory in one call for the whole range.
    pub fn write_bytes(&self, offset: usize, data: &[u8]) {
        self.check(offset, data.len(), 1);
        match self.backing {
            Backing::Local(ptr) => {
                for (i, &b) in data.iter().enumerate() {
                    // SAFETY: in bounds (checked above); the region is live (DmaRegion::new).
                    unsafe { ptr.as_ptr().add(offset + i).write_volatile(b) }
                }
            }
            Backing::Remote(_) if data.is_empty() => {}
            Backing::Remote(memory) => memory.write(self.device_addr(offset), data),
        }
    }

    /// Copies octets from the region at `offset` into `out`: octet by octet, volatile, or
    /// for remote memory in one call for the whole range.
    pub fn read_bytes(&self, offset: usize, out: &mut [u8]) {
        self.check(offset, out.len(), 1);
        match self.backing {
            Backing::Local(ptr) => {
                for (i, b) in out.iter_mut().enumerate() {
                    // SAFETY: in bounds (checked above); the region is live (DmaRegion::new).
                    *b = unsafe { ptr.as_ptr().add(offset + i).read_volatile() };
                }
            }
            Backing::Remote(_) if out.is_empty() => {}
            Backing::Remote(memory) => memory.read(self.device_addr(offset), out),
        }
    }
}

/// A [`DmaRegion`] that frees itself: it goes back to its backend when dropped.
///
/// Objects that own rings (queues) hold one, so their memory is released after the
/// object has told the device to stop using it (a `Drop` impl runs before the fields
/// are dropped).
pub struct DmaBuffer<'h, H: Hal + ?Sized> {
    hal: &'h H,
    /// Always present; `ManuallyDrop` only so that `drop` can move it into `dma_free`.
    region: ManuallyDrop<DmaRegion<'h>>,
}

impl<'h, H: Hal + ?Sized> DmaBuffer<'h, H> {
    /// Allocates `len` octets of zeroed DMA memory from `hal`.
    pub fn new(hal: &'h H, len: usize) -> Result<Self, HalError> {
        let region = ManuallyDrop::new(hal.dma_alloc(len)?);
        Ok(DmaBuffer { hal, region })
    }
}

impl<'h, H: Hal + ?Sized> Deref for DmaBuffer<'h, H> {
    type Target = DmaRegion<'h>;

    fn deref(&self) -> &DmaRegion<'h> {
        &self.region
    }
}

impl<H: Hal + ?Sized> Drop for DmaBuffer<'_, H> {
    fn drop(&mut self) {
        // SAFETY: `region` is taken exactly once, here, and never used again.
        let region = unsafe { ManuallyDrop::take(&mut self.region) };
        self.hal.dma_free(region);
    }
}

impl<H: Hal + ?Sized> std::fmt::Debug for DmaBuffer<'_, H> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        self.region.fmt(f)
    }
}

#[cfg(test)]
mod tests {
    use std::cell::RefCell;

    use super::*;

    /// Remote memory at device addresses `BASE..`, logging each call as (write?, addr, len).
    struct Logged {
        octets: RefCell<Vec<u8>>,
        calls: RefCell<Vec<(bool, u64, usize)>>,
    }

    const BASE: u64 = 0x3000;

    impl RemoteMemory for Logged {
        fn read(&self, addr: u64, out: &mut [u8]) {
            self.calls.borrow_mut().push((false, addr, out.len()));
            let at = (addr - BASE) as usize;
            out.copy_from_slice(&self.octets.borrow()[at..at + out.len()]);
        }
        fn write(&self, addr: u64, data: &[u8]) {
            self.calls.borrow_mut().push((true, addr, data.len()));
            let at = (addr - BASE) as usize;
            self.octets.borrow_mut()[at..at + data.len()].copy_from_slice(data);
        }
    }

    #[test]
    fn a_remote_region_reaches_its_memory_at_device_addresses_a_range_in_one_call() {
        let memory = Logged { octets: RefCell::new(vec![0; 64]), calls: RefCell::new(Vec::new()) };
        let region = DmaRegion::remote(&memory, 64, BASE);
        assert!(region.is_remote() && region.as_ptr().is_none());
        region.write_u64(8, 0x0102_0304_0506_0708);
        region.write_u32(20, 0xaabb_ccdd);
        region.write_bytes(33, &[1, 2, 3, 4, 5, 6, 7]);
        assert_eq!(memory.octets.borrow()[8..16], [8, 7, 6, 5, 4, 3, 2, 1]);
        assert_eq!(memory.octets.borrow()[20..24], [0xdd, 0xcc, 0xbb, 0xaa]);
        assert_eq!(memory.octets.borrow()[32..41], [0, 1, 2, 3, 4, 5, 6, 7, 0]);
        assert_eq!(region.read_u64(8), 0x0102_0304_0506_0708);
        assert_eq!(region.read_u32(20), 0xaabb_ccdd);
        assert_eq!(region.read_u8(35), 3);
        let mut out = [0u8; 9];
        region.read_bytes(32, &mut out);
        assert_eq!(out, [0, 1, 2, 3, 4, 5, 6, 7, 0]);
        region.read_bytes(0, &mut []);
        assert_eq!(
            *memory.calls.borrow(),
            [
                (true, BASE + 8, 8),
                (true, BASE + 20, 4),
                (true, BASE + 33, 7),
                (false, BASE + 8, 8),
                (false, BASE + 20, 4),
                (false, BASE + 35, 1),
                (false, BASE + 32, 9),
            ],
            "one call per access, at the IOVA plus the offset, none for an empty range"
        );
    }

    #[test]
    #[should_panic(expected = "outside a 16-octet region")]
    fn a_remote_region_checks_its_bounds_too() {
        let memory = Logged { octets: RefCell::new(vec![0; 16]), calls: RefCell::new(Vec::new()) };
        DmaRegion::remote(&memory, 16, BASE).read_bytes(12, &mut [0; 5]);
    }

    #[test]
    fn a_local_region_has_its_cpu_address() {
        let mut mem = [0u64; 2];
        let ptr = NonNull::from(&mut mem).cast::<u8>();
        // SAFETY: `mem` is valid for 16 octets, 8-aligned, and outlives the region.
        let region = unsafe { DmaRegion::new(ptr, 16, 0x1000) };
        assert_eq!(region.as_ptr(), Some(ptr));
        assert!(!region.is_remote());
        region.write_u64(8, 7);
        assert_eq!(region.read_u8(8), 7);
    }
}
