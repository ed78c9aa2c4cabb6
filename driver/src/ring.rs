//! The host's side of a work queue ring (SQ or RQ): the host produces WQEs, the device
//! takes them.
//!
//! Indices are absolute and free-running (`docs/REGISTERS.md`, doorbells and rings):
//! index `i` lives in slot `i mod 2^log_size`, the host announces `pi` (one past its last
//! WQE) through the doorbell, and `pi − ci` WQEs are in the ring, wrapping arithmetic
//! included.
use rnic_proto::host::desc::ring_slot;

use crate::error::DriverError;
use crate::{DmaBuffer, Hal};

/// The largest ring the driver makes: 2^16 entries (an SQ of 8 MiB). The interface allows
/// 2^31; a limit far below it keeps every ring a modest single DMA allocation.
pub const MAX_QUEUE_LOG_SIZE: u8 = 16;

/// Checks a requested ring size against [`MAX_QUEUE_LOG_SIZE`].
pub(crate) fn check_log_size(queue: &'static str, log_size: u8) -> Result<(), DriverError> {
    if log_size > MAX_QUEUE_LOG_SIZE {
        return Err(DriverError::QueueTooLarge { queue, log_size, max: MAX_QUEUE_LOG_SIZE });
    }
    Ok(())
}

/// A work queue ring in DMA memory with its producer and consumer indices.
pub(crate) struct WorkRing<'d, H: Hal> {
    mem: DmaBuffer<'d, H>,
    log_size: u8,
    slot_len: usize,
    /// The next index the host writes.
    pi: u32,
    /// How many WQEs the device is known to have taken.
    ci: u32,
}

impl<'d, H: Hal> WorkRing<'d, H> {
    /// A zeroed ring of `2^log_size` slots of `slot_len` octets (a multiple of 8).
    pub(crate) fn new(hal: &'d H, queue: &'static str, log_size: u8, slot_len: usize) -> Result<Self, DriverError> {
        check_log_size(queue, log_size)?;
        let mem = DmaBuffer::new(hal, slot_len << log_size)?;
        Ok(WorkRing { mem, log_size, slot_len, pi: 0, ci: 0 })
    }

    /// IOVA of slot 0.
    pub(crate) fn iova(&self) -> u64 {
        self.mem.iova()
    }

    /// The producer index: what the doorbell announces.
    pub(crate) fn pi(&self) -> u32 {
        self.pi
    }

    /// Slots in the ring.
    pub(crate) fn capacity(&self) -> u32 {
        1 << self.log_size
    }

    /// Slots the host may write without overwriting a WQE the device has not taken.
    pub(crate) fn free(&self) -> u32 {
        self.capacity() - self.pi.wrapping_sub(self.ci)
    }

    /// Takes the device's consumer index. A value outside `[ci, pi]` cannot be one the
    /// device reached, so it is ignored rather than trusted with slots in use.
    pub(crate) fn set_ci(&mut self, ci: u32) {
        if self.pi.wrapping_sub(ci) <= self.pi.wrapping_sub(self.ci) {
            self.ci = ci;
        }
    }

    /// Writes `wqe` into the slot of `pi` with volatile 64-bit stores and advances `pi`.
    /// The caller has checked [`WorkRing::free`] and rings the doorbell after a release
    /// fence.
    pub(crate) fn push(&mut self, wqe: &[u8]) {
        debug_assert!(self.free() > 0 && wqe.len() == self.slot_len);
        let base = ring_slot(self.pi, self.log_size) as usize * self.slot_len;
        for (i, word) in wqe.chunks_exact(8).enumerate() {
            let word = u64::from_le_bytes(word.try_into().expect("8-octet chunk"));
            self.mem.write_u64(base + 8 * i, word);
        }
        self.pi = self.pi.wrapping_add(1);
    }

    /// Back to empty, as the device's indices are after the QP is written in RESET.
    pub(crate) fn reset(&mut self) {
        self.pi = 0;
        self.ci = 0;
    }

    /// The octets of the slot of absolute index `index`.
    #[cfg(test)]
    pub(crate) fn slot(&self, index: u32) -> Vec<u8> {
        let mut out = vec![0; self.slot_len];
        self.mem.read_bytes(ring_slot(index, self.log_size) as usize * self.slot_len, &mut out);
        out
    }

    /// Starts the indices elsewhere, to test their wrap.
    #[cfg(test)]
    pub(crate) fn set_indices(&mut self, pi: u32, ci: u32) {
        self.pi = pi;
        self.ci = ci;
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::fake::FakeHal;

    #[test]
    fn slots_and_free_counts_follow_the_indices_across_the_u32_wrap() {
        let hal = FakeHal::new(1);
        let mut ring = WorkRing::new(&hal, "test", 2, 32).expect("ring");
        assert_eq!(ring.free(), 4);
        ring.set_indices(u32::MAX - 1, u32::MAX - 1);
        for fill in 1..=3u8 {
            ring.push(&[fill; 32]);
        }
        assert_eq!(ring.pi(), 1, "pi wrapped");
        assert_eq!(ring.free(), 1);
        // Index u32::MAX - 1 is slot 2, u32::MAX slot 3, and 0 slot 0.
        let octet = |slot: usize| ring.mem.read_u64(32 * slot) as u8;
        assert_eq!([octet(2), octet(3), octet(0), octet(1)], [1, 2, 3, 0]);
        ring.set_ci(u32::MAX);
        assert_eq!(ring.free(), 2);
    }

    #[test]
    fn a_consumer_index_outside_the_posted_range_is_ignored() {
        let hal = FakeHal::new(1);
        let mut ring = WorkRing::new(&hal, "test", 3, 32).expect("ring");
        ring.set_indices(10, 4);
        ring.set_ci(11);
        assert_eq!(ring.free(), 2, "beyond pi");
        ring.set_ci(3);
        assert_eq!(ring.free(), 2, "behind the known ci");
        ring.set_ci(10);
        assert_eq!(ring.free(), 8);
    }

    #[test]
    fn rings_above_the_driver_limit_are_refused_before_allocating() {
        let hal = FakeHal::new(1);
        let err = WorkRing::new(&hal, "SQ", MAX_QUEUE_LOG_SIZE + 1, 128).err().expect("refused");
        assert!(matches!(err, DriverError::QueueTooLarge { log_size: 17, .. }), "{err}");
        assert_eq!(hal.live_regions(), 0);
    }
}
