//! DMA memory as the driver sees it: a CPU address, a device address (IOVA), a length,
//! and volatile accessors. No Rust reference into the memory is ever handed out, because
//! the device writes it behind the compiler's back.
use std::ptr::NonNull;

/// A block of memory the device can read and write by DMA.
#[derive(Debug)]
pub struct DmaRegion {
    ptr: NonNull<u8>,
    len: usize,
    iova: u64,
}

impl DmaRegion {
    /// Wraps memory a backend allocated and mapped.
    ///
    /// # Safety
    /// `ptr` must be valid for reads and writes of `len` octets, aligned to 8, until the
    /// backend frees it, and `iova` must be where the device sees it.
    pub unsafe fn new(ptr: NonNull<u8>, len: usize, iova: u64) -> Self {
        DmaRegion { ptr, len, iova }
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
