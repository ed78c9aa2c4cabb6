//! Simulated host memory behind an IOMMU: what the RNIC's DMA master reaches.
//!
//! Memory comes from the heap, page aligned and zeroed, and the device sees it at an IOVA
//! that is never its CPU address, with unmapped guard pages between regions and IOVAs
//! never reused. A device that uses a CPU address, runs off the end of a buffer, keeps
//! using a freed one or crosses a 4 KiB line in one burst therefore hits a fault instead
//! of quietly touching other memory. A fault panics where it happens unless a test asked
//! for record-only ([`HostMemory::fail_on_fault`]).
//!
//! The driver reads and writes the memory through raw pointers (`DmaRegion`, volatile) and
//! the bus model through the same pointers, one after the other on one thread. Nothing
//! here makes a Rust reference into it: a reference would let the compiler assume the
//! memory does not change behind it, which is exactly what the other side does.
use std::alloc::{self, Layout};
use std::collections::BTreeMap;
use std::fmt;
use std::ptr::NonNull;

/// IOMMU page size, which is also the AXI line no burst may cross.
pub const PAGE: u64 = 4096;

/// The first IOVA. Bit 47 is above every user-space address of an x86-64 process, so a CPU
/// address used as a device address faults, and so does an IOVA with its top bits dropped.
const IOVA_BASE: u64 = 1 << 47;

/// Which way a DMA access went.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Dir {
    /// The device read host memory.
    Read,
    /// The device wrote host memory.
    Write,
}

/// Why an access faulted.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum FaultKind {
    /// Some octet is outside every mapped region (a guard page, a freed region, or an
    /// address that was never handed out).
    Unmapped,
    /// One burst crosses a 4 KiB boundary, which AXI forbids.
    CrossesPage,
}

/// A DMA access that faulted. Nothing of it reached memory.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Fault {
    /// Cycle the device asked for the access (its address handshake).
    pub cycle: u64,
    pub dir: Dir,
    pub iova: u64,
    pub len: usize,
    pub kind: FaultKind,
    /// The nearest mapped region at or below `iova`, as (IOVA, mapped length), to tell an
    /// overrun from a wild address at a glance.
    pub region_below: Option<(u64, usize)>,
}

impl fmt::Display for Fault {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let dir = match self.dir {
            Dir::Read => "read",
            Dir::Write => "write",
        };
        let why = match self.kind {
            FaultKind::Unmapped => "touches unmapped IOVA space",
            FaultKind::CrossesPage => "crosses a 4 KiB boundary",
        };
        write!(
            f,
            "DMA {dir} fault: {} octets at IOVA {:#x} (asked at cycle {}) {why}",
            self.len, self.iova, self.cycle
        )?;
        match self.region_below {
            Some((iova, len)) => write!(f, "; nearest region below: {iova:#x}..{:#x}", iova + len as u64),
            None => write!(f, "; no region below it"),
        }
    }
}

/// A DMA access that reached memory, as recorded by [`HostMemory::log_accesses`]: one run
/// of contiguous octets (a write with gaps in its strobes is one record per run).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Access {
    /// Cycle the device asked for the access.
    pub cycle: u64,
    pub dir: Dir,
    pub iova: u64,
    pub len: usize,
}

struct Region {
    ptr: NonNull<u8>,
    /// Size is the mapped length: whole pages, as an IOMMU maps.
    layout: Layout,
    /// Whose memory it is: this memory's, from the heap (freed when unmapped), or a
    /// caller's mapped with [`HostMemory::map_external`] (only unmapped).
    owned: bool,
}

/// Host memory with an IOMMU in front. Frees every region still mapped when dropped, so
/// pointers from [`HostMemory::alloc`] must not outlive it.
pub struct HostMemory {
    regions: BTreeMap<u64, Region>,
    next_iova: u64,
    faults: Vec<Fault>,
    fail_on_fault: bool,
    /// Accesses that reached memory, while a test asked for them.
    log: Option<Vec<Access>>,
}

impl Default for HostMemory {
    fn default() -> Self {
        Self::new()
    }
}

impl HostMemory {
    /// Empty memory that panics on the first fault.
    pub fn new() -> Self {
        HostMemory {
            regions: BTreeMap::new(),
            next_iova: IOVA_BASE,
            faults: Vec::new(),
            fail_on_fault: true,
            log: None,
        }
    }

    /// Allocates `len` zeroed octets, page aligned, and maps them at a fresh IOVA with an
    /// unmapped page before and after. Returns the CPU pointer and the IOVA. The mapping
    /// covers whole pages, as an IOMMU does, so a full-width beat over the tail of a
    /// buffer whose length is not a multiple of the beat does not fault.
    pub fn alloc(&mut self, len: usize) -> (NonNull<u8>, u64) {
        assert!(len > 0, "zero-length DMA allocation");
        let iova = self.next_iova + PAGE;
        let size = len.div_ceil(PAGE as usize) * PAGE as usize;
        self.next_iova = iova.checked_add(size as u64).expect("IOVA space exhausted");
        (self.map(iova, size), iova)
    }

    /// Allocates `len` zeroed octets like [`HostMemory::alloc`], mapped at the page-aligned
    /// `iova` of the caller's choice (which must be clear of every region mapped), for
    /// memory that lives at a fixed address, such as a device-memory window.
    pub fn alloc_at(&mut self, iova: u64, len: usize) -> NonNull<u8> {
        assert!(len > 0, "zero-length DMA allocation");
        assert_eq!(iova % PAGE, 0, "IOVA {iova:#x} is not page aligned");
        self.map(iova, len.div_ceil(PAGE as usize) * PAGE as usize)
    }

    /// Allocates `size` zeroed octets (whole pages) and maps them at `iova`.
    fn map(&mut self, iova: u64, size: usize) -> NonNull<u8> {
        iova.checked_add(size as u64).expect("IOVA space exhausted");
        let layout = Layout::from_size_align(size, PAGE as usize).expect("DMA allocation too large");
        // SAFETY: `layout` has a non-zero size.
        let raw = unsafe { alloc::alloc_zeroed(layout) };
        let ptr = NonNull::new(raw).unwrap_or_else(|| alloc::handle_alloc_error(layout));
        self.insert(iova, Region { ptr, layout, owned: true });
        ptr
    }

    /// Maps memory the caller owns, `len` octets at `ptr`, as an IOMMU maps a process's
    /// pages for its device (VFIO_IOMMU_MAP_DMA): the whole pages around it, at a fresh
    /// IOVA with an unmapped page before and after. Returns the IOVA of `ptr` itself (same
    /// offset in its page).
    ///
    /// # Safety
    ///
    /// The pages around `ptr..ptr + len` must stay allocated and writable until the region
    /// is unmapped with [`HostMemory::free`] (or this memory is dropped): the device may
    /// read and write any of their octets its requests name.
    pub unsafe fn map_external(&mut self, ptr: NonNull<u8>, len: usize) -> u64 {
        assert!(len > 0, "zero-length DMA mapping");
        let start = ptr.as_ptr() as u64 & !(PAGE - 1);
        let offset = ptr.as_ptr() as u64 - start;
        let size = (offset as usize + len).div_ceil(PAGE as usize) * PAGE as usize;
        let layout = Layout::from_size_align(size, PAGE as usize).expect("DMA mapping too large");
        let iova = self.next_iova + PAGE;
        self.next_iova = iova.checked_add(size as u64).expect("IOVA space exhausted");
        // `start` is `ptr` rounded down to its page: not null, as `ptr` is in a page above 0.
        let base = NonNull::new(start as *mut u8).expect("memory in page 0");
        self.insert(iova, Region { ptr: base, layout, owned: false });
        iova + offset
    }

    /// Enters a region into the IOMMU's map, refusing overlaps and an IOVA that is also a
    /// CPU address of it.
    fn insert(&mut self, iova: u64, region: Region) {
        let size = region.layout.size();
        let end = iova.checked_add(size as u64).expect("IOVA space exhausted");
        let below = self.regions.range(..end).next_back();
        assert!(
            below.is_none_or(|(&at, r)| at + r.layout.size() as u64 <= iova),
            "IOVA range {iova:#x}..{end:#x} overlaps a mapped region"
        );
        let cpu = region.ptr.as_ptr() as u64;
        assert!(
            cpu.abs_diff(iova) >= size as u64,
            "IOVA {iova:#x} overlaps CPU address {cpu:#x}: a CPU address used as IOVA would not fault"
        );
        self.regions.insert(iova, region);
    }

    /// Unmaps the region mapped at `iova` (for [`HostMemory::map_external`], the IOVA it
    /// returned) and frees it if it is this memory's own. Its IOVAs are never handed out
    /// again, so a device still using them faults.
    pub fn free(&mut self, iova: u64) {
        let start = match self.regions.range(..=iova).next_back() {
            Some((&at, r)) if at == iova || (!r.owned && iova - at < PAGE) => at,
            _ => panic!("free of {iova:#x}: no region starts there"),
        };
        let region = self.regions.remove(&start).expect("found above");
        if region.owned {
            // SAFETY: `ptr` came from `alloc_zeroed` with this layout and is freed once:
            // the region is out of the map now.
            unsafe { alloc::dealloc(region.ptr.as_ptr(), region.layout) }
        }
    }

    /// Whether a fault panics (the default) or is only recorded, for tests that provoke one.
    pub fn fail_on_fault(&mut self, on: bool) {
        self.fail_on_fault = on;
    }

    /// Whether every DMA access that reaches memory is recorded (off by default), for tests
    /// that check where a device read and wrote rather than only what memory holds after:
    /// a write of the octets already there is recorded too.
    pub fn log_accesses(&mut self, on: bool) {
        self.log = on.then(Vec::new);
    }

    /// The accesses recorded since the last take, oldest first (empty when not logging).
    pub fn take_accesses(&mut self) -> Vec<Access> {
        self.log.as_mut().map(std::mem::take).unwrap_or_default()
    }

    /// Faults so far, oldest first.
    pub fn faults(&self) -> &[Fault] {
        &self.faults
    }

    /// Regions currently mapped.
    pub fn regions(&self) -> usize {
        self.regions.len()
    }

    /// A DMA read of `out.len()` octets at `iova`, asked for at `cycle`. On a fault `out` is
    /// left as it was.
    pub fn dma_read(&mut self, cycle: u64, iova: u64, out: &mut [u8]) -> Result<(), FaultKind> {
        let src = self.dma_translate(cycle, Dir::Read, iova, out.len())?;
        // SAFETY: `translate` checked that the octets lie in one live region; `out` is
        // ours, so the two do not overlap.
        unsafe { std::ptr::copy_nonoverlapping(src, out.as_mut_ptr(), out.len()) };
        if let Some(log) = &mut self.log {
            log.push(Access { cycle, dir: Dir::Read, iova, len: out.len() });
        }
        Ok(())
    }

    /// A DMA write at `iova`, asked for at `cycle`, of the octets of `data` whose `enable`
    /// is set (AXI write strobes). On a fault nothing is written.
    pub fn dma_write(&mut self, cycle: u64, iova: u64, data: &[u8], enable: &[bool]) -> Result<(), FaultKind> {
        assert_eq!(data.len(), enable.len(), "one enable per octet");
        let dst = self.dma_translate(cycle, Dir::Write, iova, data.len())?;
        for (i, (&b, &on)) in data.iter().zip(enable).enumerate() {
            if on {
                // SAFETY: `translate` checked that all `data.len()` octets lie in one live
                // region.
                unsafe { dst.add(i).write_volatile(b) };
            }
        }
        if let Some(log) = &mut self.log {
            // One record per run of enabled octets; each run but the last ends at a disabled one.
            let mut at = iova;
            for run in enable.split(|&on| !on) {
                if !run.is_empty() {
                    log.push(Access { cycle, dir: Dir::Write, iova: at, len: run.len() });
                }
                at += run.len() as u64 + 1;
            }
        }
        Ok(())
    }

    /// Reads host memory as the CPU would, for benches that hold no `DmaRegion`. Panics
    /// if the range is not inside one mapped region: that is a bench bug, not a DMA fault.
    pub fn peek(&self, iova: u64, out: &mut [u8]) {
        let src = self.cpu_translate(iova, out.len());
        // SAFETY: as in `dma_read`.
        unsafe { std::ptr::copy_nonoverlapping(src, out.as_mut_ptr(), out.len()) };
    }

    /// Writes host memory as the CPU would (see [`HostMemory::peek`]).
    pub fn poke(&mut self, iova: u64, data: &[u8]) {
        let dst = self.cpu_translate(iova, data.len());
        // SAFETY: as in `dma_read`, the other way round.
        unsafe { std::ptr::copy_nonoverlapping(data.as_ptr(), dst, data.len()) };
    }

    fn cpu_translate(&self, iova: u64, len: usize) -> *mut u8 {
        self.locate(iova, len).unwrap_or_else(|| panic!("CPU access of {len} octets at {iova:#x}: not mapped"))
    }

    /// Checks a DMA access against the IOMMU and the AXI 4 KiB rule; records (and, unless
    /// told otherwise, panics on) a fault.
    fn dma_translate(&mut self, cycle: u64, dir: Dir, iova: u64, len: usize) -> Result<*mut u8, FaultKind> {
        let last = iova.checked_add(len.max(1) as u64 - 1);
        let kind = match last {
            Some(last) if last / PAGE != iova / PAGE => FaultKind::CrossesPage,
            _ => match self.locate(iova, len) {
                Some(ptr) => return Ok(ptr),
                None => FaultKind::Unmapped,
            },
        };
        let region_below = self.regions.range(..=iova).next_back().map(|(&at, r)| (at, r.layout.size()));
        self.faults.push(Fault { cycle, dir, iova, len, kind, region_below });
        if self.fail_on_fault {
            panic!("{}", self.faults[self.faults.len() - 1]);
        }
        Err(kind)
    }

    /// The CPU address of `iova` if all `len` octets from it lie in one mapped region.
    fn locate(&self, iova: u64, len: usize) -> Option<*mut u8> {
        let (&start, region) = self.regions.range(..=iova).next_back()?;
        let offset = usize::try_from(iova - start).ok()?;
        let end = offset.checked_add(len)?;
        // SAFETY: `offset` <= `end` <= the allocation's size (checked before the add), so
        // the result stays inside the allocation or one past its end.
        (end <= region.layout.size()).then(|| unsafe { region.ptr.as_ptr().add(offset) })
    }
}

impl Drop for HostMemory {
    fn drop(&mut self) {
        for iova in self.regions.keys().copied().collect::<Vec<_>>() {
            self.free(iova);
        }
    }
}
