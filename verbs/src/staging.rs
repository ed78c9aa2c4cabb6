//! SGE lists and inline data, through a staging region per QP.
//!
//! The RNIC's WQE names one local buffer. Verbs lets a request gather its payload from a
//! list of buffers (a Send, a Write), scatter what arrives into one (a receive, a Read's
//! sink), and carry a small payload inline (copied at post: the program may reuse the
//! buffer at once, and no lkey is needed). The library gives all three through a region of
//! its own per QP, registered in the QP's PD with local write, in two rings (sends and
//! receives):
//! * a gathered or inline payload is copied into a slot of the send ring at post, and the
//!   request the device gets names the slot;
//! * a scattered one is placed by the device in a slot, and copied out into the program's
//!   buffers when its completion is polled (for an unsignaled Read, when a later
//!   completion of its QP is: verbs says its data is there only then).
//!
//! Each buffer of a list is checked at post as the device checks the one it is given (the
//! lkey, the PD, the right, the bounds): a bad one is EINVAL with `bad_wr` at its request,
//! as for a single buffer. A slot is freed when its request retires; requests retire in
//! order, so each ring is a FIFO of octets. A request of one SGE and no inline data goes to
//! the device as it is, with no copy; the region is made on the first request that needs
//! it.
use std::collections::VecDeque;

use libc::c_int;
use rnic_driver::{DmaRegion, MemoryRegion, MrAccess, ProtectionDomain, QueuePair, Sge};

use crate::engine::{Dev, DynHal, MrEntry, Pinned};

/// SGEs per request (`max_sge`).
pub(crate) const MAX_SGE: u32 = 16;
/// Octets of inline data per request (`max_inline_data`).
pub(crate) const MAX_INLINE: u32 = 256;
/// Octets of each of a QP's two rings: the most one request with an SGE list can carry.
pub(crate) const RING_LEN: u32 = 64 * 1024;

/// A request's octets in the staging region: where, how many, and the ring position that
/// is free once the request retires.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct Slot {
    pub(crate) at: u32,
    pub(crate) len: u32,
    end: u64,
}

/// A FIFO of octets in `len` octets from `base`: positions grow without end, a slot never
/// wraps (the end of the ring is skipped when one would).
#[derive(Debug)]
struct Ring {
    base: u32,
    len: u32,
    /// Where the next slot starts.
    head: u64,
    /// Everything before this is free.
    tail: u64,
}

impl Ring {
    fn new(base: u32, len: u32) -> Ring {
        Ring { base, len, head: 0, tail: 0 }
    }

    /// A slot of `n` octets (1 ≤ n ≤ len), or `None` while requests still hold the room.
    fn alloc(&mut self, n: u32) -> Option<Slot> {
        let len = u64::from(self.len);
        let in_ring = self.head % len;
        let start = if in_ring + u64::from(n) > len { self.head + len - in_ring } else { self.head };
        let end = start + u64::from(n);
        if self.tail == self.head {
            // Empty: the octets skipped at the end are free too.
            self.tail = start;
        }
        (end - self.tail <= len).then(|| {
            self.head = end;
            Slot { at: self.base + (start % len) as u32, len: n, end }
        })
    }

    /// Frees `slot` and every slot before it.
    fn release(&mut self, slot: Slot) {
        self.tail = self.tail.max(slot.end);
    }

    /// Every slot is free (the queue was reset).
    fn clear(&mut self) {
        self.tail = self.head;
    }
}

/// Which of a QP's rings.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Queue {
    Send,
    Recv,
}

/// A QP's staging region, registered in its PD, and its two rings.
pub(crate) struct Staging {
    dev: &'static Dev,
    /// `None` only while being dropped.
    mr: Option<MemoryRegion<'static, DynHal>>,
    region: Option<Pinned<DmaRegion<'static>>>,
    send: Ring,
    recv: Ring,
}

impl Staging {
    /// A region for the QP of PD `pd`, or the errno why not.
    pub(crate) fn new(dev: &'static Dev, pd: &'static ProtectionDomain<'static, DynHal>) -> Result<Staging, c_int> {
        let region = dev.hal().dma_alloc(2 * RING_LEN as usize).map_err(|_| libc::ENOMEM)?;
        let region = Pinned::new(region);
        let access = MrAccess { local_write: true, ..MrAccess::default() };
        // SAFETY: the region is freed only after the MR (`Drop for Staging`).
        match MemoryRegion::register(pd, unsafe { region.borrow() }, access) {
            Ok(mr) => Ok(Staging {
                dev,
                mr: Some(mr),
                region: Some(region),
                send: Ring::new(0, RING_LEN),
                recv: Ring::new(RING_LEN, RING_LEN),
            }),
            Err(e) => {
                // SAFETY: the failed registration borrowed nothing.
                dev.hal().dma_free(unsafe { region.into_inner() });
                Err(crate::errno::of(&e))
            }
        }
    }

    fn ring(&mut self, queue: Queue) -> &mut Ring {
        match queue {
            Queue::Send => &mut self.send,
            Queue::Recv => &mut self.recv,
        }
    }

    fn region(&self) -> &DmaRegion<'static> {
        self.region.as_ref().expect("held until dropped").get()
    }

    /// A slot of `n` octets in `queue`'s ring: EINVAL if no slot can ever hold it, ENOMEM
    /// while earlier requests hold the room.
    pub(crate) fn alloc(&mut self, queue: Queue, n: u32) -> Result<Slot, c_int> {
        if n == 0 || n > RING_LEN {
            return Err(libc::EINVAL);
        }
        self.ring(queue).alloc(n).ok_or(libc::ENOMEM)
    }

    /// Where `queue`'s next slot would start, to undo allocations with [`Staging::undo`].
    pub(crate) fn mark(&self, queue: Queue) -> u64 {
        match queue {
            Queue::Send => self.send.head,
            Queue::Recv => self.recv.head,
        }
    }

    /// Takes back the slots allocated since `mark` (their requests were not posted).
    pub(crate) fn undo(&mut self, queue: Queue, mark: u64) {
        let ring = self.ring(queue);
        ring.head = mark;
        ring.tail = ring.tail.min(mark);
    }

    pub(crate) fn release(&mut self, queue: Queue, slot: Slot) {
        self.ring(queue).release(slot);
    }

    pub(crate) fn clear(&mut self) {
        self.send.clear();
        self.recv.clear();
    }

    /// The buffer the device is given for `slot`.
    pub(crate) fn sge(&self, slot: Slot) -> Sge {
        let mr = self.mr.as_ref().expect("held until dropped");
        Sge { lkey: mr.lkey(), addr: mr.va() + u64::from(slot.at), length: slot.len }
    }

    pub(crate) fn write(&self, at: u32, data: &[u8]) {
        self.region().write_bytes(at as usize, data);
    }

    pub(crate) fn read(&self, at: u32, out: &mut [u8]) {
        self.region().read_bytes(at as usize, out);
    }
}

impl Drop for Staging {
    /// The MR goes before its memory.
    fn drop(&mut self) {
        drop(self.mr.take());
        if let Some(region) = self.region.take() {
            // SAFETY: the MR that borrowed the region is gone.
            self.dev.hal().dma_free(unsafe { region.into_inner() });
        }
    }
}

/// The program's registered memory behind `sge`: its region and the offset of `sge.addr`
/// in it. `None` if no live MR has the lkey (checked at post, so only if the program
/// deregistered it while the request was outstanding).
fn memory_of<'m>(mrs: impl Iterator<Item = &'m MrEntry>, sge: Sge) -> Option<(&'m DmaRegion<'static>, usize)> {
    mrs.filter_map(|m| m.mr.as_ref().map(|mr| (m, mr)))
        .find(|(_, mr)| mr.lkey() == sge.lkey)
        .and_then(|(m, mr)| Some((m.memory.get(), usize::try_from(sge.addr.checked_sub(mr.va())?).ok()?)))
}

/// Copies the octets `sges` name, in order, into `slot` (a gathered payload).
pub(crate) fn gather<'m>(staging: &Staging, slot: Slot, sges: &[Sge], mrs: impl Iterator<Item = &'m MrEntry> + Clone) {
    let mut at = slot.at;
    for &sge in sges.iter().filter(|s| s.length > 0) {
        let mut octets = vec![0u8; sge.length as usize];
        if let Some((memory, offset)) = memory_of(mrs.clone(), sge) {
            memory.read_bytes(offset, &mut octets);
        }
        staging.write(at, &octets);
        at += sge.length;
    }
}

/// Copies the first `len` octets of `slot` out into `sges`, in order (a scattered
/// payload).
pub(crate) fn scatter<'m>(
    staging: &Staging,
    slot: Slot,
    len: u32,
    sges: &[Sge],
    mrs: impl Iterator<Item = &'m MrEntry> + Clone,
) {
    let mut left = len.min(slot.len);
    let mut at = slot.at;
    for &sge in sges {
        let n = left.min(sge.length);
        if n == 0 {
            continue;
        }
        let mut octets = vec![0u8; n as usize];
        staging.read(at, &mut octets);
        if let Some((memory, offset)) = memory_of(mrs.clone(), sge) {
            memory.write_bytes(offset, &octets);
        }
        at += n;
        left -= n;
    }
}

/// Checks every buffer of a list for QP `qp`, as the device checks one: EINVAL for a bad
/// one.
pub(crate) fn check(qp: &QueuePair<'static, DynHal>, sges: &[Sge], write: bool) -> Result<(), c_int> {
    sges.iter().try_for_each(|&s| qp.check_sge(s, write).map_err(|e| crate::errno::of(&e)))
}

/// The octets of a list.
pub(crate) fn total(sges: &[Sge]) -> Result<u32, c_int> {
    sges.iter().try_fold(0u32, |sum, s| sum.checked_add(s.length)).ok_or(libc::EINVAL)
}

/// What a request left to do at its completion: free its slot, and for a scattered
/// payload copy it out.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub(crate) struct Staged {
    pub(crate) slot: Option<Slot>,
    pub(crate) scatter: Vec<Sge>,
}

/// A posted send request the library keeps until it completes: completions come in order,
/// so what is older than a completion's request completed unsignaled.
#[derive(Clone, Debug)]
pub(crate) struct SendRecord {
    pub(crate) wr_id: u64,
    pub(crate) opcode: crate::sys::ibv_wc_opcode,
    pub(crate) staged: Staged,
}

/// The library's record of a QP's posted receives, oldest first (each completes, in order).
pub(crate) type RecvRecords = VecDeque<Staged>;

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_ring_hands_out_slots_in_order_and_never_wraps_one() {
        let mut r = Ring::new(100, 16);
        let a = r.alloc(10).expect("room");
        assert_eq!((a.at, a.len), (100, 10));
        // Six left at the end: a slot of 8 starts at the beginning, once it is free.
        assert_eq!(r.alloc(8), None);
        r.release(a);
        let b = r.alloc(8).expect("room after release");
        assert_eq!(b.at, 100);
        let c = r.alloc(8).expect("room");
        assert_eq!(c.at, 108);
        assert_eq!(r.alloc(1), None);
        r.release(c); // frees b too: requests retire in order
        assert_eq!(r.alloc(16).expect("all free").at, 100);
        r.clear();
        assert_eq!(r.alloc(16).expect("cleared").at, 100);
    }
}
