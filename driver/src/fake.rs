//! A backend made of plain memory, for testing driver logic without hardware: registers
//! are a map, DMA memory comes from the heap at IOVAs from a bump allocator, and tests
//! raise interrupts by hand.
//!
//! Two hooks let driver tests see and answer what the driver does: every register write
//! is logged ([`FakeHal::take_writes`]), and a write to `CMD` can be answered by a
//! command handler ([`FakeHal::on_command`]), for instance the reference model's
//! `rnic_proto::model::Rnic::command`.
use std::alloc::{self, Layout};
use std::cell::{Cell, RefCell};
use std::collections::{BTreeMap, VecDeque};
use std::ptr::NonNull;
use std::time::Duration;

use rnic_proto::host::regs::{self, CmdResult};

use crate::{DmaRegion, Hal, HalError};

/// Answers a command: opcode, index and `CMD_DATA` in; result and `CMD_DATA` out.
pub type CommandHandler = Box<dyn FnMut(u8, u32, &[u32; 16]) -> (CmdResult, [u32; 16])>;

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
    writes: RefCell<Vec<(u32, u32)>>,
    command: RefCell<Option<CommandHandler>>,
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
            writes: RefCell::new(Vec::new()),
            command: RefCell::new(None),
        }
    }

    /// From now on a write to `CMD` runs `handler` on the opcode, the index and the
    /// `CMD_DATA` registers, stores the data it returns in `CMD_DATA` and its result in
    /// `CMD_STATUS` (BUSY clear), as a device that finishes every command at once.
    pub fn on_command(&self, handler: impl FnMut(u8, u32, &[u32; 16]) -> (CmdResult, [u32; 16]) + 'static) {
        *self.command.borrow_mut() = Some(Box::new(handler));
    }

    /// Register writes since the last call, oldest first, as (offset, value).
    pub fn take_writes(&self) -> Vec<(u32, u32)> {
        std::mem::take(&mut *self.writes.borrow_mut())
    }

    fn run_command(&self, cmd: u32) {
        let mut handler = self.command.borrow_mut();
        let Some(handler) = handler.as_mut() else { return };
        let data: [u32; 16] = std::array::from_fn(|i| self.read32(regs::cmd_data(i as u32)));
        let (opcode, index) = (regs::cmd::OPCODE.get_word(&[cmd]), regs::cmd::INDEX.get_word(&[cmd]));
        let (result, out) = handler(opcode as u8, index as u32, &data);
        let mut registers = self.registers.borrow_mut();
        for (i, w) in out.iter().enumerate() {
            registers.insert(regs::cmd_data(i as u32), *w);
        }
        registers.insert(regs::CMD_STATUS, result.status_word());
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
        self.writes.borrow_mut().push((offset, value));
        if offset == regs::CMD {
            self.run_command(value);
        }
    }

    fn dma_alloc(&self, len: usize) -> Result<DmaRegion<'_>, HalError> {
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

    fn dma_free(&self, region: DmaRegion<'_>) {
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
        assert_ne!(a.iova(), a.as_ptr().expect("local memory").as_ptr() as u64);
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
    fn writes_are_logged_in_order() {
        let hal = FakeHal::new(1);
        hal.write32(0x1000, 1);
        hal.write32(0x1004, 2);
        assert_eq!(hal.take_writes(), vec![(0x1000, 1), (0x1004, 2)]);
        assert_eq!(hal.take_writes(), vec![]);
    }

    #[test]
    fn a_command_handler_answers_cmd_writes() {
        let hal = FakeHal::new(1);
        hal.on_command(|op, index, data| {
            (CmdResult::BadState, [u32::from(op), index, data[2] + 1, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0])
        });
        hal.write32(regs::cmd_data(2), 41);
        hal.write32(regs::CMD, 0x0012_3406);
        assert_eq!(hal.read32(regs::CMD_STATUS), CmdResult::BadState.status_word());
        assert_eq!(hal.read32(regs::cmd_data(0)), 6);
        assert_eq!(hal.read32(regs::cmd_data(1)), 0x1234);
        assert_eq!(hal.read32(regs::cmd_data(2)), 42);
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
