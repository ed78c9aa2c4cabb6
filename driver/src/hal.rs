//! The platform interface the driver is written against.
use std::ptr::NonNull;
use std::time::Duration;

use crate::DmaRegion;

/// Errors from a backend.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum HalError {
    /// No DMA memory (or IOVA space) left for a request of this many octets.
    OutOfDmaMemory(usize),
    /// A zero-length DMA request.
    EmptyDmaRequest,
    /// The interrupt vector does not exist.
    NoSuchVector(u16),
    /// The backend failed; the text says how.
    Backend(String),
}

impl std::fmt::Display for HalError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            HalError::OutOfDmaMemory(n) => write!(f, "no DMA memory left for {n} octets"),
            HalError::EmptyDmaRequest => write!(f, "zero-length DMA allocation"),
            HalError::NoSuchVector(v) => write!(f, "no interrupt vector {v}"),
            HalError::Backend(s) => write!(f, "{s}"),
        }
    }
}

impl std::error::Error for HalError {}

/// What the driver needs from a platform: BAR0 registers, DMA memory, interrupts.
///
/// Methods take `&self`: a device is shared by the objects that use it (queues, memory
/// regions), so backends use interior mutability where they need it.
///
/// A [`DmaRegion`] borrows the backend that allocated it: backends free every region
/// still mapped when they are dropped, so a region must not outlive its backend.
pub trait Hal {
    /// Reads the 32-bit register at byte offset `offset` of BAR0.
    fn read32(&self, offset: u32) -> u32;
    /// Writes the 32-bit register at byte offset `offset` of BAR0.
    fn write32(&self, offset: u32, value: u32);
    /// Allocates `len` octets of zeroed DMA memory, page aligned, mapped for the device at
    /// an IOVA chosen by the backend (never simply the virtual address).
    fn dma_alloc(&self, len: usize) -> Result<DmaRegion<'_>, HalError>;
    /// Unmaps and frees memory from [`Hal::dma_alloc`]; unmaps (only) memory from
    /// [`Hal::map_user`].
    fn dma_free(&self, region: DmaRegion<'_>);
    /// Maps `len` octets of the caller's own memory at `ptr` for the device, as
    /// VFIO_IOMMU_MAP_DMA maps a process's pages: memory an application registers where it
    /// already has it. [`Hal::dma_free`] unmaps it. Backends whose device cannot reach the
    /// process's memory refuse.
    ///
    /// # Safety
    ///
    /// The pages around `ptr..ptr + len` must stay allocated and writable until the
    /// returned region is given to [`Hal::dma_free`]: the device may write them.
    unsafe fn map_user(&self, ptr: NonNull<u8>, len: usize) -> Result<DmaRegion<'_>, HalError> {
        let _ = (ptr, len);
        Err(HalError::Backend("this backend cannot map application memory for the device".into()))
    }
    /// Waits up to `timeout` for interrupt `vector`; `Ok(true)` if it fired.
    fn wait_irq(&self, vector: u16, timeout: Duration) -> Result<bool, HalError>;
}

/// A boxed backend (what a program that picks its backend at run time holds) is a backend.
impl<T: Hal + ?Sized> Hal for Box<T> {
    fn read32(&self, offset: u32) -> u32 {
        (**self).read32(offset)
    }
    fn write32(&self, offset: u32, value: u32) {
        (**self).write32(offset, value)
    }
    fn dma_alloc(&self, len: usize) -> Result<DmaRegion<'_>, HalError> {
        (**self).dma_alloc(len)
    }
    fn dma_free(&self, region: DmaRegion<'_>) {
        (**self).dma_free(region)
    }
    unsafe fn map_user(&self, ptr: NonNull<u8>, len: usize) -> Result<DmaRegion<'_>, HalError> {
        // SAFETY: the caller keeps the memory as the trait asks.
        unsafe { (**self).map_user(ptr, len) }
    }
    fn wait_irq(&self, vector: u16, timeout: Duration) -> Result<bool, HalError> {
        (**self).wait_irq(vector, timeout)
    }
}

/// A borrowed backend is a backend: a program can lend its backend to a [`crate::Device`]
/// and still read the backend's own state (counters, errors) after the device is gone.
impl<T: Hal + ?Sized> Hal for &T {
    fn read32(&self, offset: u32) -> u32 {
        (**self).read32(offset)
    }
    fn write32(&self, offset: u32, value: u32) {
        (**self).write32(offset, value)
    }
    fn dma_alloc(&self, len: usize) -> Result<DmaRegion<'_>, HalError> {
        (**self).dma_alloc(len)
    }
    fn dma_free(&self, region: DmaRegion<'_>) {
        (**self).dma_free(region)
    }
    unsafe fn map_user(&self, ptr: NonNull<u8>, len: usize) -> Result<DmaRegion<'_>, HalError> {
        // SAFETY: the caller keeps the memory as the trait asks.
        unsafe { (**self).map_user(ptr, len) }
    }
    fn wait_irq(&self, vector: u16, timeout: Duration) -> Result<bool, HalError> {
        (**self).wait_irq(vector, timeout)
    }
}
