//! Checks the VFIO backend against a real kernel: QEMU's `edu` PCI device, bound to
//! vfio-pci in a guest with a virtual Intel IOMMU (`scripts/qemu-vfio-guest`, run by
//! `scripts/test-vfio-qemu`). Through [`VfioHal`] alone it reads BAR0, has the device DMA
//! a pattern out of host memory and back into other host memory, waits for the device's
//! interrupts, moves a pattern between two of the program's own buffers mapped where they
//! are (`Hal::map_user`, VFIO_IOMMU_MAP_DMA, what `ibv_reg_mr` uses), and has it DMA from
//! an IOVA the backend never mapped and from one it unmapped, which the IOMMU must refuse
//! (the guest kernel reports the DMAR fault).
//!
//! ```text
//! vfio_edu --device 0000:00:03.0
//! ```
//!
//! The `edu` device (QEMU `docs/specs/edu.rst`): BAR0 registers 0x00 identification,
//! 0x04 liveness (reads back inverted), 0x24/0x60/0x64 interrupt status/raise/acknowledge,
//! 0x80/0x88/0x90/0x98 DMA source, destination, count and command, and a 4 KiB buffer at
//! device address 0x40000. It masks DMA addresses to 28 bits, hence the IOVA window, and
//! QEMU 7.2 aborts on a transfer that ends at the buffer's end, hence transfers of 2 KiB.
use std::process::ExitCode;
use std::ptr::NonNull;
use std::time::{Duration, Instant};

use rnic_driver::vfio::{VfioConfig, VfioHal};
use rnic_driver::{DmaBuffer, Hal};

const ID: u32 = 0x00;
const LIVENESS: u32 = 0x04;
const IRQ_STATUS: u32 = 0x24;
const IRQ_RAISE: u32 = 0x60;
const IRQ_ACK: u32 = 0x64;
const DMA_SRC: u32 = 0x80;
const DMA_DST: u32 = 0x88;
const DMA_COUNT: u32 = 0x90;
const DMA_CMD: u32 = 0x98;
const DMA_START: u32 = 1;
const DMA_TO_RAM: u32 = 2;
const DMA_IRQ: u32 = 4;
/// The interrupt status bit a finished DMA raises.
const DMA_IRQ_STATUS: u32 = 0x100;
const EDU_BUFFER: u64 = 0x4_0000;
const CHUNK: usize = 2048;
const PAGE: usize = 4096;
/// Below the device's 28-bit DMA mask.
const WINDOW: std::ops::Range<u64> = 0x10_0000..0x0F00_0000;
/// In the window, never allocated by this program: no IOMMU mapping exists there.
const UNMAPPED_IOVA: u64 = 0x0E00_0000;

fn main() -> ExitCode {
    let mut args = std::env::args().skip(1);
    let device = match (args.next().as_deref(), args.next()) {
        (Some("--device"), Some(addr)) => addr,
        _ => {
            eprintln!("usage: vfio_edu --device <PCI address, e.g. 0000:00:03.0>");
            return ExitCode::from(2);
        }
    };
    match run(&device) {
        Ok(()) => {
            println!("vfio_edu: all checks passed");
            ExitCode::SUCCESS
        }
        Err(e) => {
            eprintln!("vfio_edu: FAILED: {e}");
            ExitCode::FAILURE
        }
    }
}

fn run(device: &str) -> Result<(), String> {
    let hal = VfioHal::open_with(device, VfioConfig { iova_window: WINDOW }).map_err(|e| e.to_string())?;
    println!("opened {} (BAR0 {} octets, {} interrupt vector(s))", hal.pci_address(), hal.bar0_len(), hal.vectors());

    let id = hal.read32(ID);
    check(id & 0xFF == 0xED, format!("BAR0 identification {id:#010x} (edu's low octet is 0xed)"))?;
    hal.write32(LIVENESS, 0x1234_5678);
    check(hal.read32(LIVENESS) == !0x1234_5678, "BAR0 liveness register reads back inverted".into())?;

    let (out, back) = (
        DmaBuffer::new(&hal, 8192).map_err(|e| e.to_string())?,
        DmaBuffer::new(&hal, 8192).map_err(|e| e.to_string())?,
    );
    for buf in [&out, &back] {
        let cpu = buf.as_ptr().expect("VFIO memory is local").as_ptr() as u64;
        check(
            WINDOW.contains(&buf.iova()) && buf.iova() != cpu,
            format!("IOVA {:#x} is in the window and not the virtual address {cpu:#x}", buf.iova()),
        )?;
    }
    let pattern: Vec<u8> = (0..CHUNK).map(|i| (i * 7 + 3) as u8).collect();
    out.write_bytes(4096, &pattern);

    // Host memory -> device, polled; device -> other host memory, signalled.
    dma(&hal, out.iova() + 4096, EDU_BUFFER, CHUNK, 0)?;
    dma(&hal, EDU_BUFFER, back.iova() + 1024, CHUNK, DMA_TO_RAM | DMA_IRQ)?;
    check(wait_irq(&hal, DMA_IRQ_STATUS)?, "the DMA's completion interrupt".into())?;
    let mut got = vec![0; 8192];
    back.read_bytes(0, &mut got);
    check(got[1024..1024 + CHUNK] == pattern[..], "the pattern came back through the device".into())?;
    check(
        got[..1024].iter().chain(&got[1024 + CHUNK..]).all(|&b| b == 0),
        "nothing else of the second buffer was written".into(),
    )?;

    hal.write32(IRQ_RAISE, 0x1);
    check(wait_irq(&hal, 0x1)?, "an interrupt raised by a register write".into())?;

    // The program's own memory where it has it, as ibv_reg_mr maps a buffer
    // (VFIO_IOMMU_MAP_DMA of its pages): a pattern from one Vec, at an offset that is not
    // page aligned, through the device into another.
    let (from_at, to_at) = (100, 333);
    let mut mine = vec![0u8; 3 * PAGE];
    let mut theirs = vec![0u8; 3 * PAGE];
    let reversed: Vec<u8> = pattern.iter().rev().copied().collect();
    mine[from_at..from_at + CHUNK].copy_from_slice(&reversed);
    let (from_ptr, to_ptr) = (mine.as_mut_ptr().wrapping_add(from_at), theirs.as_mut_ptr().wrapping_add(to_at));
    // SAFETY: both Vecs stay allocated, and are not touched, until their regions are
    // unmapped by dma_free below.
    let (from, to) = unsafe {
        (
            hal.map_user(NonNull::new(from_ptr).expect("a Vec's buffer"), CHUNK).map_err(|e| e.to_string())?,
            hal.map_user(NonNull::new(to_ptr).expect("a Vec's buffer"), CHUNK).map_err(|e| e.to_string())?,
        )
    };
    for (region, ptr) in [(&from, from_ptr), (&to, to_ptr)] {
        check(
            WINDOW.contains(&region.iova()) && region.iova() % PAGE as u64 == ptr as u64 % PAGE as u64,
            format!("the program's memory at {ptr:p} is mapped at IOVA {:#x}, its page offset kept", region.iova()),
        )?;
    }
    dma(&hal, from.iova(), EDU_BUFFER, CHUNK, 0)?;
    dma(&hal, EDU_BUFFER, to.iova(), CHUNK, DMA_TO_RAM)?;
    let to_iova = to.iova();
    hal.dma_free(from);
    hal.dma_free(to);
    check(theirs[to_at..to_at + CHUNK] == reversed[..], "the pattern went from one Vec to the other".into())?;
    check(
        theirs[..to_at].iter().chain(&theirs[to_at + CHUNK..]).all(|&b| b == 0),
        "nothing else of the second Vec was written".into(),
    )?;

    // A DMA from an IOVA that was never mapped, and into the program's memory after it
    // was unmapped: the IOMMU refuses both and the kernel says so.
    expect_fault(&hal, UNMAPPED_IOVA, "never mapped")?;
    expect_fault(&hal, to_iova, "the program's memory, unmapped")?;
    Ok(())
}

/// Has the device DMA from `iova` and waits for the kernel to report the IOMMU's refusal.
fn expect_fault(hal: &VfioHal, iova: u64, what: &str) -> Result<(), String> {
    let before = dmar_faults();
    dma(hal, iova, EDU_BUFFER + 2048, 256, 0)?;
    let deadline = Instant::now() + Duration::from_secs(3);
    let fault = loop {
        let now = dmar_faults();
        // The kernel names the page of the faulting address.
        let page = iova & !(PAGE as u64 - 1);
        if let Some(line) = now.iter().skip(before.len()).find(|l| l.contains(&format!("fault addr {page:#x}"))) {
            break Some(line.clone());
        }
        if Instant::now() > deadline {
            break None;
        }
        std::thread::sleep(Duration::from_millis(50));
    };
    check(fault.is_some(), format!("a DMA from IOVA {iova:#x} ({what}) faults: {fault:?}"))
}

fn check(ok: bool, what: String) -> Result<(), String> {
    if ok {
        println!("ok: {what}");
        Ok(())
    } else {
        Err(what)
    }
}

/// Runs one edu DMA of `len` octets and waits for it to finish (it starts 100 ms of
/// virtual time after the command).
fn dma(hal: &VfioHal, src: u64, dst: u64, len: usize, flags: u32) -> Result<(), String> {
    for (reg, value) in [(DMA_SRC, src), (DMA_DST, dst)] {
        hal.write32(reg, value as u32);
        hal.write32(reg + 4, (value >> 32) as u32);
    }
    hal.write32(DMA_COUNT, len as u32);
    hal.write32(DMA_CMD, DMA_START | flags);
    let deadline = Instant::now() + Duration::from_secs(5);
    while hal.read32(DMA_CMD) & DMA_START != 0 {
        if Instant::now() > deadline {
            return Err(format!("the DMA {src:#x} -> {dst:#x} did not finish"));
        }
        std::thread::sleep(Duration::from_millis(5));
    }
    Ok(())
}

/// Waits for vector 0 with `status` set, then acknowledges it.
fn wait_irq(hal: &VfioHal, status: u32) -> Result<bool, String> {
    let fired = hal.wait_irq(0, Duration::from_secs(3)).map_err(|e| e.to_string())?;
    let pending = hal.read32(IRQ_STATUS);
    hal.write32(IRQ_ACK, pending);
    Ok(fired && pending & status != 0)
}

/// The kernel log lines about IOMMU (DMAR) faults so far.
fn dmar_faults() -> Vec<String> {
    use std::io::Read;
    use std::os::unix::fs::OpenOptionsExt;
    let mut log = String::new();
    // /dev/kmsg gives one record per read; non-blocking, it ends with EAGAIN.
    let Ok(mut kmsg) = std::fs::OpenOptions::new().read(true).custom_flags(libc::O_NONBLOCK).open("/dev/kmsg") else {
        return Vec::new();
    };
    let mut record = vec![0; 8192];
    while let Ok(n) = kmsg.read(&mut record) {
        if n == 0 {
            break;
        }
        log.push_str(&String::from_utf8_lossy(&record[..n]));
    }
    log.lines().filter(|l| l.contains("DMAR") && l.contains("fault")).map(str::to_string).collect()
}
