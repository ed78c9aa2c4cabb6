//! The VFIO backend: a PCI device bound to `vfio-pci` (the RNIC on its card), driven from
//! user space through the kernel's VFIO and IOMMU.
//!
//! - **BAR0** is mapped uncached through the device file (or read and written through it
//!   where the kernel does not allow a mapping) and touched only by volatile accesses.
//! - **DMA memory** is anonymous memory (2 MiB huge pages where a request is a multiple of
//!   them and the system has some, else 4 KiB pages) mapped through the IOMMU at an IOVA
//!   from [`IovaSpace`], a first-fit allocator over a configurable window. The IOVA is
//!   never the virtual address, so a device address used as a CPU address (or the
//!   reverse) faults instead of working by accident.
//! - **Interrupts**: every MSI-X vector (or MSI vector, for devices without MSI-X) signals
//!   an eventfd; [`Hal::wait_irq`] polls it.
//! - **Teardown**, also when opening fails half way: bus mastering off, function reset,
//!   interrupts off, every DMA mapping removed, then the memory freed.
//!
//! Setup mistakes get their own [`VfioError`], each naming the fix.
use std::cell::RefCell;
use std::collections::BTreeMap;
use std::fs::{self, OpenOptions};
use std::io::ErrorKind;
use std::ops::Range;
use std::os::fd::AsRawFd;
use std::path::{Path, PathBuf};
use std::ptr::NonNull;
use std::sync::Arc;
use std::time::Duration;

use memmap2::{MmapOptions, MmapRaw};
use vfio_ioctls::{VfioContainer, VfioDevice, VfioOps};
use vmm_sys_util::eventfd::{EventFd, EFD_NONBLOCK};

use crate::{DmaRegion, Hal, HalError};

// Region and interrupt indexes of a vfio-pci device, and a region flag (linux/vfio.h).
const BAR0_REGION: u32 = 0;
const CONFIG_REGION: u32 = 7;
const MSI_IRQ: u32 = 1;
const MSIX_IRQ: u32 = 2;
const REGION_FLAG_MMAP: u32 = 1 << 2;
/// PCI command register: memory space and bus master enable.
const PCI_COMMAND: u64 = 0x04;
const PCI_COMMAND_MEMORY: u16 = 1 << 1;
const PCI_COMMAND_MASTER: u16 = 1 << 2;

const PAGE: u64 = 4096;
const HUGE_PAGE: usize = 2 << 20;

/// Why a device could not be opened; each message says how to fix it.
#[derive(Debug, thiserror::Error)]
pub enum VfioError {
    #[error("no PCI device {0}: `lspci -D` lists the devices and their addresses (domain:bus:device.function)")]
    NoSuchDevice(String),
    #[error(
        "{addr} is bound to {}, not vfio-pci: `echo vfio-pci > /sys/bus/pci/devices/{addr}/driver_override; \
         echo {addr} > /sys/bus/pci/devices/{addr}/driver/unbind; echo {addr} > /sys/bus/pci/drivers_probe` \
         (after `modprobe vfio-pci`)",
        .driver.as_deref().unwrap_or("no driver")
    )]
    NotBoundToVfio { addr: String, driver: Option<String> },
    #[error(
        "{0} has no IOMMU group: the IOMMU is off; enable VT-d or AMD-Vi in the firmware and boot with \
         intel_iommu=on (or amd_iommu=on)"
    )]
    NoIommu(String),
    #[error("/dev/vfio/vfio does not exist: load the driver with `modprobe vfio-pci`")]
    NoVfio,
    #[error(
        "no permission to open {0}: run as root, or give your user that file (`chown`) and a large enough `ulimit -l`"
    )]
    NoPermission(PathBuf),
    #[error(
        "IOMMU group {group} is not viable: every device in it must be bound to vfio-pci or to no driver; \
         these are not: {others:?}"
    )]
    GroupNotViable { group: String, others: Vec<String> },
    #[error("{addr} has no memory BAR0")]
    NoBar0 { addr: String },
    #[error("VFIO: {0}")]
    Vfio(String),
}

/// Where the backend places DMA memory in the device's address space.
#[derive(Clone, Debug)]
pub struct VfioConfig {
    /// The IOVA window DMA memory is mapped in (page aligned). The default, 256 MiB to
    /// 4 GiB, suits devices limited to 32-bit DMA addresses too.
    pub iova_window: Range<u64>,
}

impl Default for VfioConfig {
    fn default() -> Self {
        VfioConfig { iova_window: 0x1000_0000..0x1_0000_0000 }
    }
}

/// First-fit allocation of page-aligned IOVA ranges within a window.
#[derive(Debug)]
struct IovaSpace {
    /// Free ranges, start → end, never adjacent (freeing merges them).
    free: BTreeMap<u64, u64>,
}

impl IovaSpace {
    fn new(window: Range<u64>) -> Self {
        let (start, end) = (window.start.next_multiple_of(PAGE), window.end / PAGE * PAGE);
        IovaSpace { free: if start < end { BTreeMap::from([(start, end)]) } else { BTreeMap::new() } }
    }

    /// `len` octets (a multiple of `align`, itself a power-of-two multiple of the page).
    fn alloc(&mut self, len: u64, align: u64) -> Option<u64> {
        let (start, end, at) = self.free.iter().find_map(|(&start, &end)| {
            let at = start.checked_next_multiple_of(align)?;
            (at.checked_add(len)? <= end).then_some((start, end, at))
        })?;
        self.free.remove(&start);
        if start < at {
            self.free.insert(start, at);
        }
        if at + len < end {
            self.free.insert(at + len, end);
        }
        Some(at)
    }

    fn release(&mut self, at: u64, len: u64) {
        let (mut start, mut end) = (at, at + len);
        if let Some((&before, &before_end)) = self.free.range(..start).next_back() {
            if before_end == start {
                self.free.remove(&before);
                start = before;
            }
        }
        if let Some(after_end) = self.free.remove(&end) {
            end = after_end;
        }
        self.free.insert(start, end);
    }
}

/// DMA memory the backend mapped: by IOVA, its memory and mapped length.
struct DmaSpace {
    iovas: IovaSpace,
    live: BTreeMap<u64, MmapRaw>,
    /// The program's own memory mapped by [`Hal::map_user`], by the IOVA its region starts
    /// at: the IOVA and length of the whole pages mapped around it.
    user: BTreeMap<u64, (u64, usize)>,
}

/// BAR0: mapped, or reached through the device file.
enum Bar0 {
    Mapped(MmapRaw),
    ThroughFile { len: u64 },
}

/// A PCI device opened through VFIO.
pub struct VfioHal {
    addr: String,
    device: VfioDevice,
    container: Arc<VfioContainer>,
    bar0: Bar0,
    dma: RefCell<DmaSpace>,
    irqs: Vec<EventFd>,
    irq_index: Option<u32>,
}

impl VfioHal {
    /// Opens the device at PCI address `addr` (`0000:01:00.0`) with the default IOVA window.
    pub fn open(addr: &str) -> Result<Self, VfioError> {
        Self::open_with(addr, VfioConfig::default())
    }

    /// Opens the device at `addr`: checks the setup, opens its group and container, resets
    /// it, maps BAR0, turns on memory decoding and bus mastering, and connects its MSI-X
    /// (else MSI) vectors to eventfds.
    pub fn open_with(addr: &str, config: VfioConfig) -> Result<Self, VfioError> {
        let sysfs = check_setup(addr)?;
        let container = Arc::new(VfioContainer::new(None).map_err(|e| vfio_error(e, &sysfs))?);
        let ops: Arc<dyn VfioOps> = container.clone();
        let device = VfioDevice::new(&sysfs, ops, false).map_err(|e| vfio_error(e, &sysfs))?;
        device.reset();
        let bar0 = map_bar0(&device, addr)?;
        let (irq_index, count) = [MSIX_IRQ, MSI_IRQ]
            .into_iter()
            .find_map(|i| device.get_irq_info(i).filter(|irq| irq.count > 0).map(|irq| (i, irq.count)))
            .map_or((None, 0), |(i, n)| (Some(i), n));
        let irqs = (0..count)
            .map(|_| EventFd::new(EFD_NONBLOCK).map_err(|e| VfioError::Vfio(format!("eventfd: {e}"))))
            .collect::<Result<Vec<_>, _>>()?;
        let dma = RefCell::new(DmaSpace {
            iovas: IovaSpace::new(config.iova_window),
            live: BTreeMap::new(),
            user: BTreeMap::new(),
        });
        // From here on, Drop undoes whatever is set up.
        let hal = VfioHal { addr: addr.to_string(), device, container, bar0, dma, irqs, irq_index };
        if let Some(index) = hal.irq_index {
            let fds = hal.irqs.iter().collect();
            hal.device.enable_irq(index, fds).map_err(|e| VfioError::Vfio(format!("enabling interrupts: {e}")))?;
        }
        hal.set_command(PCI_COMMAND_MEMORY | PCI_COMMAND_MASTER, true);
        Ok(hal)
    }

    /// The device's PCI address.
    pub fn pci_address(&self) -> &str {
        &self.addr
    }

    /// How many interrupt vectors [`Hal::wait_irq`] can wait on.
    pub fn vectors(&self) -> u16 {
        self.irqs.len() as u16
    }

    /// The size of BAR0 in octets.
    pub fn bar0_len(&self) -> u64 {
        match &self.bar0 {
            Bar0::Mapped(map) => map.len() as u64,
            Bar0::ThroughFile { len } => *len,
        }
    }

    /// Sets or clears bits of the PCI command register.
    fn set_command(&self, bits: u16, on: bool) {
        let mut word = [0; 2];
        self.device.region_read(CONFIG_REGION, &mut word, PCI_COMMAND);
        let command = u16::from_le_bytes(word);
        let command = if on { command | bits } else { command & !bits };
        self.device.region_write(CONFIG_REGION, &command.to_le_bytes(), PCI_COMMAND);
    }

    fn bar0_offset(&self, offset: u32) -> usize {
        assert!(
            offset.is_multiple_of(4) && u64::from(offset) + 4 <= self.bar0_len(),
            "BAR0 access at {offset:#x} outside its {} octets or misaligned",
            self.bar0_len()
        );
        offset as usize
    }
}

impl Hal for VfioHal {
    fn read32(&self, offset: u32) -> u32 {
        let at = self.bar0_offset(offset);
        match &self.bar0 {
            // SAFETY: in the mapping and 4-aligned (bar0_offset); MMIO is only ever read
            // and written volatile, never through a reference.
            Bar0::Mapped(map) => u32::from_le(unsafe { map.as_ptr().add(at).cast::<u32>().read_volatile() }),
            Bar0::ThroughFile { .. } => {
                let mut word = [0; 4];
                self.device.region_read(BAR0_REGION, &mut word, at as u64);
                u32::from_le_bytes(word)
            }
        }
    }

    fn write32(&self, offset: u32, value: u32) {
        let at = self.bar0_offset(offset);
        match &self.bar0 {
            // SAFETY: as in read32.
            Bar0::Mapped(map) => unsafe { map.as_mut_ptr().add(at).cast::<u32>().write_volatile(value.to_le()) },
            Bar0::ThroughFile { .. } => self.device.region_write(BAR0_REGION, &value.to_le_bytes(), at as u64),
        }
    }

    fn dma_alloc(&self, len: usize) -> Result<DmaRegion<'_>, HalError> {
        if len == 0 {
            return Err(HalError::EmptyDmaRequest);
        }
        let len = len.next_multiple_of(PAGE as usize);
        let huge = len.is_multiple_of(HUGE_PAGE);
        let memory = huge
            .then(|| MmapOptions::new().len(len).huge(Some(21)).map_anon().ok())
            .flatten()
            .map_or_else(|| MmapOptions::new().len(len).map_anon(), Ok)
            .map_err(|e| HalError::Backend(format!("allocating {len} octets of DMA memory: {e}")))?;
        let memory = MmapRaw::from(memory);
        let mut dma = self.dma.borrow_mut();
        let align = if huge { HUGE_PAGE as u64 } else { PAGE };
        let iova = dma.iovas.alloc(len as u64, align).ok_or(HalError::OutOfDmaMemory(len))?;
        // SAFETY: the memory is this mapping's, reached only through raw pointers (DmaRegion),
        // and stays mapped until dma_free or Drop has removed the IOMMU mapping.
        if let Err(e) = unsafe { self.container.vfio_dma_map(iova, len, memory.as_mut_ptr()) } {
            dma.iovas.release(iova, len as u64);
            return Err(HalError::Backend(format!("mapping {len} octets at IOVA {iova:#x}: {e}")));
        }
        let ptr = NonNull::new(memory.as_mut_ptr()).expect("mmap never returns null");
        dma.live.insert(iova, memory);
        // SAFETY: valid for `len` octets, page aligned, until dma_free or Drop; the device
        // sees it at `iova`.
        Ok(unsafe { DmaRegion::new(ptr, len, iova) })
    }

    /// The whole pages around `ptr..ptr + len` get an IOVA range of their own
    /// (VFIO_IOMMU_MAP_DMA pins and maps whole pages); the region starts at `ptr`'s offset
    /// in its first page. Two regions may share a page: each maps it at its own IOVA.
    unsafe fn map_user(&self, ptr: NonNull<u8>, len: usize) -> Result<DmaRegion<'_>, HalError> {
        if len == 0 {
            return Err(HalError::EmptyDmaRequest);
        }
        let start = ptr.as_ptr() as usize & !(PAGE as usize - 1);
        let offset = ptr.as_ptr() as usize - start;
        let span = (offset + len).next_multiple_of(PAGE as usize);
        let mut dma = self.dma.borrow_mut();
        let iova = dma.iovas.alloc(span as u64, PAGE).ok_or(HalError::OutOfDmaMemory(span))?;
        // SAFETY: the caller keeps these pages allocated until dma_free unmaps them (the
        // trait's contract); the device reaches them only through this IOVA range.
        if let Err(e) = unsafe { self.container.vfio_dma_map(iova, span, start as *mut u8) } {
            dma.iovas.release(iova, span as u64);
            return Err(HalError::Backend(format!(
                "mapping {span} octets of the program's memory at IOVA {iova:#x}: {e}"
            )));
        }
        let region_iova = iova + offset as u64;
        dma.user.insert(region_iova, (iova, span));
        // SAFETY: `ptr` is valid for `len` octets until dma_free (the caller's promise); the
        // device sees it at `region_iova`.
        Ok(unsafe { DmaRegion::new(ptr, len, region_iova) })
    }

    fn dma_free(&self, region: DmaRegion<'_>) {
        let mut dma = self.dma.borrow_mut();
        if let Some((iova, span)) = dma.user.remove(&region.iova()) {
            // The program's memory: unmapped, never freed here.
            match self.container.vfio_dma_unmap(iova, span) {
                Ok(()) => dma.iovas.release(iova, span as u64),
                // The device may still reach it: its IOVAs stay taken.
                Err(e) => eprintln!("vfio {}: unmapping the program's memory at IOVA {iova:#x}: {e}", self.addr),
            }
            return;
        }
        let memory = dma.live.remove(&region.iova()).expect("a region this backend allocated");
        if let Err(e) = self.container.vfio_dma_unmap(region.iova(), memory.len()) {
            // The device may still reach it: keep the memory rather than free it.
            eprintln!("vfio {}: unmapping IOVA {:#x}: {e}; its memory is leaked", self.addr, region.iova());
            std::mem::forget(memory);
            return;
        }
        dma.iovas.release(region.iova(), memory.len() as u64);
    }

    fn wait_irq(&self, vector: u16, timeout: Duration) -> Result<bool, HalError> {
        let fd = self.irqs.get(usize::from(vector)).ok_or(HalError::NoSuchVector(vector))?;
        let mut poll = libc::pollfd { fd: fd.as_raw_fd(), events: libc::POLLIN, revents: 0 };
        let ms = libc::c_int::try_from(timeout.as_millis()).unwrap_or(libc::c_int::MAX);
        // SAFETY: one valid pollfd, for the duration of the call.
        let ready = unsafe { libc::poll(&mut poll, 1, ms) };
        if ready < 0 {
            return Err(HalError::Backend(format!("poll: {}", std::io::Error::last_os_error())));
        }
        // Reading resets the eventfd's count (non-blocking: nothing to read is fine).
        Ok(ready > 0 && fd.read().is_ok())
    }
}

impl Drop for VfioHal {
    fn drop(&mut self) {
        // Stop the device first, so that nothing reaches memory that is about to go.
        self.set_command(PCI_COMMAND_MASTER, false);
        self.device.reset();
        if let Some(index) = self.irq_index {
            let _ = self.device.disable_irq(index);
        }
        let dma = self.dma.get_mut();
        for (_, (iova, span)) in std::mem::take(&mut dma.user) {
            if let Err(e) = self.container.vfio_dma_unmap(iova, span) {
                eprintln!("vfio {}: unmapping the program's memory at IOVA {iova:#x}: {e}", self.addr);
            }
        }
        for (iova, memory) in std::mem::take(&mut dma.live) {
            if let Err(e) = self.container.vfio_dma_unmap(iova, memory.len()) {
                eprintln!("vfio {}: unmapping IOVA {iova:#x}: {e}; its memory is leaked", self.addr);
                std::mem::forget(memory);
            }
        }
    }
}

/// Checks what a user most often gets wrong before VFIO is asked, so that the error names
/// the fix; returns the device's sysfs directory.
fn check_setup(addr: &str) -> Result<PathBuf, VfioError> {
    let sysfs = Path::new("/sys/bus/pci/devices").join(addr);
    if addr.is_empty() || addr.contains('/') || !sysfs.exists() {
        return Err(VfioError::NoSuchDevice(addr.to_string()));
    }
    let driver_of =
        |dir: &Path| fs::read_link(dir.join("driver")).ok().and_then(|l| Some(l.file_name()?.to_str()?.to_string()));
    match driver_of(&sysfs) {
        Some(d) if d == "vfio-pci" => {}
        driver => return Err(VfioError::NotBoundToVfio { addr: addr.to_string(), driver }),
    }
    let group = fs::read_link(sysfs.join("iommu_group")).map_err(|_| VfioError::NoIommu(addr.to_string()))?;
    let group = group.file_name().and_then(|g| g.to_str()).ok_or_else(|| VfioError::NoIommu(addr.to_string()))?;
    let others: Vec<String> = fs::read_dir(Path::new("/sys/kernel/iommu_groups").join(group).join("devices"))
        .map(|dir| dir.flatten().collect::<Vec<_>>())
        .unwrap_or_default()
        .into_iter()
        .filter(|d| !matches!(driver_of(&d.path()).as_deref(), None | Some("vfio-pci") | Some("pcieport")))
        .map(|d| d.file_name().to_string_lossy().into_owned())
        .collect();
    if !others.is_empty() {
        return Err(VfioError::GroupNotViable { group: group.to_string(), others });
    }
    for path in [PathBuf::from("/dev/vfio/vfio"), Path::new("/dev/vfio").join(group)] {
        match OpenOptions::new().read(true).write(true).open(&path) {
            Ok(_) => {}
            Err(e) if e.kind() == ErrorKind::PermissionDenied => return Err(VfioError::NoPermission(path)),
            Err(_) if path.ends_with("vfio") => return Err(VfioError::NoVfio),
            Err(e) => return Err(VfioError::Vfio(format!("{}: {e}", path.display()))),
        }
    }
    Ok(sysfs)
}

fn vfio_error(e: vfio_ioctls::VfioError, sysfs: &Path) -> VfioError {
    match e {
        vfio_ioctls::VfioError::GroupViable => {
            VfioError::GroupNotViable { group: sysfs.display().to_string(), others: Vec::new() }
        }
        e => VfioError::Vfio(e.to_string()),
    }
}

/// Maps BAR0 if the kernel allows it, else reaches it through the device file.
fn map_bar0(device: &VfioDevice, addr: &str) -> Result<Bar0, VfioError> {
    let len = device.get_region_size(BAR0_REGION);
    if len == 0 {
        return Err(VfioError::NoBar0 { addr: addr.to_string() });
    }
    if device.get_region_flags(BAR0_REGION) & REGION_FLAG_MMAP != 0 {
        let offset = device.get_region_offset(BAR0_REGION);
        if let Ok(map) = MmapOptions::new().offset(offset).len(len as usize).map_raw(device.as_raw_fd()) {
            return Ok(Bar0::Mapped(map));
        }
    }
    Ok(Bar0::ThroughFile { len })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn iova_space_is_first_fit_aligned_and_merges_what_is_freed() {
        let mut space = IovaSpace::new(0x1000..0x10_0000);
        let a = space.alloc(0x2000, PAGE).expect("a");
        let b = space.alloc(0x1000, PAGE).expect("b");
        assert_eq!((a, b), (0x1000, 0x3000));
        let huge = space.alloc(0x1000, 0x8000).expect("aligned");
        assert_eq!(huge, 0x8000, "aligned past the gap");
        assert_eq!(space.alloc(0x1000, PAGE), Some(0x4000), "the gap before it is used first");
        space.release(a, 0x2000);
        space.release(b, 0x1000);
        assert_eq!(space.alloc(0x3000, PAGE), Some(0x1000), "freed neighbours merge");
        assert_eq!(space.alloc(0x10_0000, PAGE), None, "larger than what is left");
    }

    #[test]
    fn iova_space_never_hands_out_the_same_range_twice_or_leaves_the_window() {
        let mut space = IovaSpace::new(0x10_0000..0x20_0000);
        let mut held = Vec::new();
        while let Some(at) = space.alloc(0x3000, PAGE) {
            held.push(at);
        }
        assert_eq!(held.len(), 0x10_0000 / 0x3000);
        assert!(held.windows(2).all(|w| w[1] >= w[0] + 0x3000) && held.iter().all(|&a| a + 0x3000 <= 0x20_0000));
        for &at in held.iter().step_by(2) {
            space.release(at, 0x3000);
        }
        for &at in held.iter().skip(1).step_by(2) {
            space.release(at, 0x3000);
        }
        assert_eq!(space.free, BTreeMap::from([(0x10_0000, 0x20_0000)]), "all merged back into one range");
    }

    #[test]
    fn opening_a_device_that_does_not_exist_names_the_fix() {
        let err = VfioHal::open("0000:ff:1f.7").err().expect("no such device");
        assert!(matches!(err, VfioError::NoSuchDevice(_)), "{err}");
        assert!(err.to_string().contains("lspci -D"), "{err}");
    }
}
