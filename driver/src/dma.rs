//! DMA memory as the driver sees it: a CPU address, a device address (IOVA), a length,
//! and volatile accessors. No Rust reference into the memory is ever handed out, because
//! the device writes it behind the compiler's back.
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

/// A block of memory the device can read and write by DMA, valid while the backend
/// that allocated it (`'h`) lives.
#[derive(Debug)]
pub struct DmaRegion<'h> {
    ptr: NonNull<u8>,
    len: usize,
    iova: u64,
    _backend: PhantomData<&'h ()>,
}

impl DmaRegion<'_> {
    /// Wraps memory a backend allocated and mapped.
    ///
    /// # Safety
    /// `ptr` must be valid for reads and writes of `len` octets, aligned to 8, until the
    /// backend frees it (which it does not do while the region's lifetime lasts, except
    /// through [`Hal::dma_free`], which takes the region), and `iova` must be where the
    /// device sees it.
    pub unsafe fn new(ptr: NonNull<u8>, len: usize, iova: u64) -> Self {
        DmaRegion { ptr, len, iova, _backend: PhantomData }
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

    /// The CPU address of octet 0, for backends that free the memory.
    pub fn as_ptr(&self) -> NonNull<u8> {
        self.ptr
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
        // SAFETY: in bounds (checked); the region is live (DmaRegion::new).
        unsafe { self.ptr.as_ptr().add(offset).read_volatile() }
    }

    /// Reads the little-endian u32 at `offset` (4-aligned).
    pub fn read_u32(&self, offset: usize) -> u32 {
        self.check(offset, 4, 4);
        // SAFETY: in bounds and aligned (checked); the region is live (DmaRegion::new).
        u32::from_le(unsafe { self.ptr.as_ptr().add(offset).cast::<u32>().read_volatile() })
    }

    /// Writes `value` little-endian at `offset` (4-aligned).
    pub fn write_u32(&self, offset: usize, value: u32) {
        self.check(offset, 4, 4);
        // SAFETY: as in `read_u32`.
        unsafe { self.ptr.as_ptr().add(offset).cast::<u32>().write_volatile(value.to_le()) }
    }

    /// Reads the little-endian u64 at `offset` (8-aligned).
    pub fn read_u64(&self, offset: usize) -> u64 {
        self.check(offset, 8, 8);
        // SAFETY: as in `read_u32`.
        u64::from_le(unsafe { self.ptr.as_ptr().add(offset).cast::<u64>().read_volatile() })
    }

    /// Writes `value` little-endian at `offset` (8-aligned).
    pub fn write_u64(&self, offset: usize, value: u64) {
        self.check(offset, 8, 8);
        // SAFETY: as in `read_u32`.
        unsafe { self.ptr.as_ptr().add(offset).cast::<u64>().write_volatile(value.to_le()) }
    }

    /// Copies `data` into the region at `offset`, octet by octet, volatile.
    pub fn write_bytes(&self, offset: usize, data: &[u8]) {
        self.check(offset, data.len(), 1);
        for (i, &b) in data.iter().enumerate() {
            // SAFETY: in bounds (checked above).
            unsafe { self.ptr.as_ptr().add(offset + i).write_volatile(b) }
        }
    }

    /// Copies octets from the region at `offset` into `out`, volatile.
    pub fn read_bytes(&self, offset: usize, out: &mut [u8]) {
        self.check(offset, out.len(), 1);
        for (i, b) in out.iter_mut().enumerate() {
            // SAFETY: in bounds (checked above).
            *b = unsafe { self.ptr.as_ptr().add(offset + i).read_volatile() };
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
