//! Memory regions: DMA memory the device may reach through an STag.
use std::marker::PhantomData;

use rnic_proto::host::context::{stag, MrAccess, MrContext};
use rnic_proto::host::regs::CmdOpcode;

use crate::device::LiveMr;
use crate::error::{DriverError, Resource};
use crate::wr::{RemoteBuf, Sge};
use crate::{DeviceMemory, DmaRegion, Hal, ProtectionDomain};

/// A registered memory region.
///
/// Regions are registered with their tagged offset equal to their IOVA (`va == iova` in
/// the MR context): a TO names the same octet for the local side and the peer, and the
/// [`Sge`]s and [`RemoteBuf`]s made by [`MemoryRegion::sge`] and
/// [`MemoryRegion::remote`] are IOVAs. [`MemoryRegion::register_at`] registers with
/// tagged offsets of the caller's choice instead (the application's addresses, for verbs).
///
/// The region borrows its memory, so the memory cannot be freed while the device may
/// still reach it; dropping the region (or [`MemoryRegion::deregister`]) makes the MR
/// table entry invalid first.
///
/// ```
/// # use rnic_driver::{Device, DriverError, Hal, MemoryRegion, MrAccess, ProtectionDomain};
/// # fn f<H: Hal>(dev: &Device<H>) -> Result<(), DriverError> {
/// let pd = ProtectionDomain::new(dev)?;
/// let buf = dev.alloc_dma(4096)?;
/// let mr = MemoryRegion::register(&pd, &buf, MrAccess::ALL)?;
/// let sge = mr.sge(0, 64)?;
/// mr.deregister()?;
/// drop(buf);
/// # Ok(())
/// # }
/// ```
///
/// Deregistering twice, or using a region once deregistered, does not compile:
/// [`MemoryRegion::deregister`] takes the region.
///
/// ```compile_fail,E0382
/// # use rnic_driver::{Device, DriverError, Hal, MemoryRegion, MrAccess, ProtectionDomain};
/// # fn f<H: Hal>(dev: &Device<H>) -> Result<(), DriverError> {
/// # let pd = ProtectionDomain::new(dev)?;
/// # let buf = dev.alloc_dma(4096)?;
/// let mr = MemoryRegion::register(&pd, &buf, MrAccess::ALL)?;
/// mr.deregister()?;
/// mr.deregister()?; // use of moved value
/// # Ok(())
/// # }
/// ```
///
/// Nor does freeing the memory, or dropping the PD, while the region lives:
///
/// ```compile_fail,E0505
/// # use rnic_driver::{Device, DriverError, Hal, MemoryRegion, MrAccess, ProtectionDomain};
/// # fn f<H: Hal>(dev: &Device<H>) -> Result<(), DriverError> {
/// # let pd = ProtectionDomain::new(dev)?;
/// # let buf = dev.alloc_dma(4096)?;
/// let mr = MemoryRegion::register(&pd, &buf, MrAccess::ALL)?;
/// drop(buf); // cannot move out of `buf` because it is borrowed
/// mr.deregister()?;
/// # Ok(())
/// # }
/// ```
///
/// ```compile_fail,E0505
/// # use rnic_driver::{Device, DriverError, Hal, MemoryRegion, MrAccess, ProtectionDomain};
/// # fn f<H: Hal>(dev: &Device<H>) -> Result<(), DriverError> {
/// # let pd = ProtectionDomain::new(dev)?;
/// # let buf = dev.alloc_dma(4096)?;
/// let mr = MemoryRegion::register(&pd, &buf, MrAccess::ALL)?;
/// drop(pd); // cannot move out of `pd` because it is borrowed
/// mr.deregister()?;
/// # Ok(())
/// # }
/// ```
///
/// An [`Sge`] taken from the region is a plain value that outlives it (`sge` above); a
/// post checks it against the live regions instead ([`DriverError::UnknownLkey`]).
pub struct MemoryRegion<'a, H: Hal> {
    pd: &'a ProtectionDomain<'a, H>,
    /// The memory (a [`DmaRegion`] or a [`DeviceMemory`]) stays borrowed.
    _memory: PhantomData<&'a ()>,
    index: u32,
    key: u8,
    va: u64,
    len: u64,
    access: MrAccess,
    registered: bool,
}

impl<'a, H: Hal> MemoryRegion<'a, H> {
    /// Registers all of `region` in `pd` with rights `access`.
    pub fn register(
        pd: &'a ProtectionDomain<'a, H>,
        region: &'a DmaRegion<'a>,
        access: MrAccess,
    ) -> Result<Self, DriverError> {
        Self::register_range(pd, region, 0, region.len(), access)
    }

    /// Registers `len` octets of `region` from `offset` on.
    ///
    /// The MR table entry gets a fresh key, so STags of the entry's earlier
    /// registrations no longer match it.
    pub fn register_range(
        pd: &'a ProtectionDomain<'a, H>,
        region: &'a DmaRegion<'a>,
        offset: usize,
        len: usize,
        access: MrAccess,
    ) -> Result<Self, DriverError> {
        if !fits(offset as u64, len as u64, region.len() as u64) {
            return Err(DriverError::OutOfBounds { offset: offset as u64, len: len as u64, size: region.len() as u64 });
        }
        let Some(iova) = region.iova().checked_add(offset as u64) else {
            return Err(DriverError::IovaWraps { iova: region.iova(), len: (offset + len) as u64 });
        };
        Self::register_iova(pd, iova, iova, len as u64, access, Memory::Host)
    }

    /// Registers all of `region` (application memory mapped with
    /// [`Hal::map_user`](crate::Hal::map_user)) with tagged offsets that start at `va`
    /// instead of its IOVA: the verbs convention, where a buffer's tagged offsets are the
    /// application's own addresses of it, so that [`Sge`]s and the peer's remote
    /// addresses name octets by pointer. The device translates (`iova - va` in the MR
    /// context).
    pub fn register_at(
        pd: &'a ProtectionDomain<'a, H>,
        region: &'a DmaRegion<'a>,
        va: u64,
        access: MrAccess,
    ) -> Result<Self, DriverError> {
        Self::register_iova(pd, va, region.iova(), region.len() as u64, access, Memory::Host)
    }

    /// Registers all of a piece of device memory in `pd` with rights `access`. Its tagged
    /// offsets are device memory IOVAs, which the device serves from its own RAM.
    pub fn register_device(
        pd: &'a ProtectionDomain<'a, H>,
        memory: &'a DeviceMemory<'a, H>,
        access: MrAccess,
    ) -> Result<Self, DriverError> {
        Self::register_iova(pd, memory.iova(), memory.iova(), memory.len() as u64, access, Memory::Device)
    }

    fn register_iova(
        pd: &'a ProtectionDomain<'a, H>,
        va: u64,
        iova: u64,
        len: u64,
        access: MrAccess,
        memory: Memory,
    ) -> Result<Self, DriverError> {
        // WRITE_MR would answer BAD_VALUE; this says why, before an index is taken.
        for start in [va, iova] {
            if u128::from(start) + u128::from(len) > 1u128 << 64 {
                return Err(DriverError::IovaWraps { iova: start, len });
            }
        }
        if memory == Memory::Host {
            check_host_iova(pd, iova, len)?;
        }
        let dev = pd.device();
        let index = dev.alloc_number(Resource::MemoryRegion)?;
        let key = dev.next_mr_key(index);
        let ctx = MrContext { key, access, valid: true, pd: pd.pdn(), va, length: len, iova };
        if let Err(e) = dev.command(CmdOpcode::WriteMr, index, &ctx.to_words()) {
            dev.free_number(Resource::MemoryRegion, index);
            return Err(e);
        }
        let live = LiveMr { pd: pd.pdn(), va, len, local_write: access.local_write };
        dev.mr_registered(stag(index, key), live);
        Ok(MemoryRegion { pd, _memory: PhantomData, index, key, va, len, access, registered: true })
    }

    /// The STag for local use (in [`Sge`]s).
    pub fn lkey(&self) -> u32 {
        stag(self.index, self.key)
    }

    /// The STag to advertise to the peer. The same as the lkey: one MR entry, one key.
    pub fn rkey(&self) -> u32 {
        stag(self.index, self.key)
    }

    /// The MR table index.
    pub fn index(&self) -> u32 {
        self.index
    }

    /// Tagged offset of the first octet (its IOVA).
    pub fn va(&self) -> u64 {
        self.va
    }

    /// Length in octets.
    pub fn len(&self) -> u64 {
        self.len
    }

    /// Whether the region has no octets.
    pub fn is_empty(&self) -> bool {
        self.len == 0
    }

    /// Its rights.
    pub fn access(&self) -> MrAccess {
        self.access
    }

    /// The local buffer of `length` octets at `offset` into the region.
    pub fn sge(&self, offset: u64, length: u32) -> Result<Sge, DriverError> {
        self.check(offset, length.into())?;
        Ok(Sge { lkey: self.lkey(), addr: self.va + offset, length })
    }

    /// The buffer at `offset` into the region, as the peer names it.
    pub fn remote(&self, offset: u64) -> Result<RemoteBuf, DriverError> {
        self.check(offset, 0)?;
        Ok(RemoteBuf { stag: self.rkey(), to: self.va + offset })
    }

    fn check(&self, offset: u64, len: u64) -> Result<(), DriverError> {
        if !fits(offset, len, self.len) {
            return Err(DriverError::OutOfBounds { offset, len, size: self.len });
        }
        Ok(())
    }

    /// Local invalidation (INVALIDATE_MR with this region's key): its STag no longer works,
    /// for the peer or for local work, until the region is registered again; the entry
    /// keeps its index until the region is dropped or deregistered. The device answers
    /// BAD_STATE if the STag is invalid already (a peer's Send with Invalidate got there
    /// first).
    pub fn invalidate(&self) -> Result<(), DriverError> {
        let dev = self.pd.device();
        dev.mr_deregistered(self.lkey());
        let mut data = [0; 16];
        data[0] = self.key.into();
        dev.command(CmdOpcode::InvalidateMr, self.index, &data)?;
        Ok(())
    }

    /// Makes the MR table entry invalid and frees its index.
    pub fn deregister(mut self) -> Result<(), DriverError> {
        self.release()
    }

    /// WRITE_MR with VALID clear rather than INVALIDATE_MR: it succeeds even when the
    /// peer already invalidated the region (Send with Invalidate), where INVALIDATE_MR
    /// answers BAD_STATE. An entry the device did not confirm invalid keeps its index
    /// out of the pool.
    fn release(&mut self) -> Result<(), DriverError> {
        if !std::mem::replace(&mut self.registered, false) {
            return Ok(());
        }
        let dev = self.pd.device();
        // Forgotten first: even if the device does not confirm, no new work may use it.
        dev.mr_deregistered(self.lkey());
        let ctx = MrContext {
            key: self.key,
            access: self.access,
            valid: false,
            pd: self.pd.pdn(),
            va: self.va,
            length: self.len,
            iova: self.va,
        };
        dev.command(CmdOpcode::WriteMr, self.index, &ctx.to_words())?;
        dev.free_number(Resource::MemoryRegion, self.index);
        Ok(())
    }
}

impl<H: Hal> Drop for MemoryRegion<'_, H> {
    fn drop(&mut self) {
        // Nothing to report a failure to; the index stays out of the pool (see `release`).
        let _ = self.release();
    }
}

/// Where a region's octets are.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Memory {
    /// The host's, from the backend.
    Host,
    /// The device's own RAM ([`DeviceMemory`]).
    Device,
}

/// Refuses host memory at IOVAs the device serves from its own RAM: with device memory,
/// `[DM_BASE, DM_BASE + DM_SIZE)` never reaches the host.
fn check_host_iova<H: Hal>(pd: &ProtectionDomain<'_, H>, iova: u64, len: u64) -> Result<(), DriverError> {
    let info = pd.device().info();
    if !info.features.device_memory || len == 0 {
        return Ok(());
    }
    let (start, end) = (u128::from(iova), u128::from(iova) + u128::from(len));
    let (window, window_end) = (u128::from(info.dm_base), u128::from(info.dm_base) + u128::from(info.dm_size));
    if start < window_end && window < end {
        return Err(DriverError::IovaInDeviceMemory { iova, len, window: info.dm_base, window_len: info.dm_size });
    }
    Ok(())
}

/// Whether `len` octets at `offset` lie inside `size` octets.
fn fits(offset: u64, len: u64, size: u64) -> bool {
    offset.checked_add(len).is_some_and(|end| end <= size)
}

#[cfg(test)]
mod tests {
    use std::ptr::NonNull;

    use rnic_proto::host::context::{stag_index, stag_key};

    use super::*;
    use crate::error::Rejection;
    use crate::testing::{model_device, model_device_features};

    const RIGHTS: MrAccess =
        MrAccess { local_write: true, remote_read: false, remote_write: true, remote_atomic: false };

    #[test]
    fn register_writes_a_valid_entry_whose_tagged_offsets_are_iovas() {
        let dev = model_device();
        let pd = ProtectionDomain::new(&dev).expect("pd");
        let buf = dev.alloc_dma(8192).expect("dma");
        let mr = MemoryRegion::register_range(&pd, &buf, 4096, 100, RIGHTS).expect("register");
        assert_eq!((stag_index(mr.lkey()), mr.rkey()), (mr.index(), mr.lkey()));
        assert_ne!(stag_key(mr.lkey()), 0, "key 0 is never used");
        assert_eq!((mr.va(), mr.len(), mr.access()), (buf.iova() + 4096, 100, RIGHTS));
        assert_eq!(
            dev.query_mr(mr.index()).expect("query"),
            MrContext {
                key: stag_key(mr.lkey()),
                access: RIGHTS,
                valid: true,
                pd: pd.pdn(),
                va: buf.iova() + 4096,
                length: 100,
                iova: buf.iova() + 4096,
            }
        );
    }

    #[test]
    fn register_at_tags_offsets_from_the_callers_address_and_the_device_translates() {
        let dev = model_device();
        let pd = ProtectionDomain::new(&dev).expect("pd");
        let buf = dev.alloc_dma(8192).expect("dma");
        // Where a program has the buffer, which is not where the device sees it.
        let va = 0x7f00_1234_5008;
        let mr = MemoryRegion::register_at(&pd, &buf, va, RIGHTS).expect("register");
        assert_eq!((mr.va(), mr.len()), (va, 8192));
        let ctx = dev.query_mr(mr.index()).expect("query");
        assert_eq!((ctx.va, ctx.iova, ctx.length), (va, buf.iova(), 8192));
        // Buffers are named by the caller's addresses: inside is posted, outside refused.
        assert_eq!(mr.sge(8000, 192).expect("inside"), Sge { lkey: mr.lkey(), addr: va + 8000, length: 192 });
        assert!(mr.sge(8000, 193).is_err());
    }

    #[test]
    fn a_range_outside_the_region_is_refused_without_using_an_index() {
        let dev = model_device();
        let pd = ProtectionDomain::new(&dev).expect("pd");
        let buf = dev.alloc_dma(64).expect("dma");
        for (offset, len) in [(0, 65), (64, 1), (usize::MAX, 2)] {
            let err = MemoryRegion::register_range(&pd, &buf, offset, len, RIGHTS).err().expect("out of bounds");
            assert!(matches!(err, DriverError::OutOfBounds { .. }), "{err}");
        }
        assert_eq!(MemoryRegion::register(&pd, &buf, RIGHTS).expect("register").index(), 0);
    }

    #[test]
    fn deregistering_or_dropping_invalidates_and_a_reused_index_gets_a_new_key() {
        let dev = model_device();
        let pd = ProtectionDomain::new(&dev).expect("pd");
        let buf = dev.alloc_dma(64).expect("dma");
        let first = MemoryRegion::register(&pd, &buf, RIGHTS).expect("register");
        let (index, old_stag) = (first.index(), first.lkey());
        first.deregister().expect("deregister");
        assert!(!dev.query_mr(index).expect("query").valid);

        let second = MemoryRegion::register(&pd, &buf, RIGHTS).expect("register");
        assert_eq!(second.index(), index, "the freed index is reused");
        assert_ne!(second.lkey(), old_stag, "with a new key");
        assert!(dev.query_mr(index).expect("query").valid);
        drop(second);
        assert!(!dev.query_mr(index).expect("query").valid);
    }

    #[test]
    fn local_invalidation_ends_the_stag_keeps_the_index_and_a_second_one_is_refused() {
        let dev = model_device();
        let pd = ProtectionDomain::new(&dev).expect("pd");
        let buf = dev.alloc_dma(64).expect("dma");
        let mr = MemoryRegion::register(&pd, &buf, RIGHTS).expect("register");
        mr.invalidate().expect("INVALIDATE_MR");
        assert!(!dev.query_mr(mr.index()).expect("query").valid);
        let again = mr.invalidate().expect_err("already invalid");
        assert!(matches!(again, DriverError::Rejected { reason: Rejection::BadState, .. }), "{again}");
        let other = MemoryRegion::register(&pd, &buf, RIGHTS).expect("register");
        assert_ne!(other.index(), mr.index(), "the index stays taken until the region goes");
    }

    #[test]
    fn sges_and_remote_buffers_stay_inside_the_region() {
        let dev = model_device();
        let pd = ProtectionDomain::new(&dev).expect("pd");
        let buf = dev.alloc_dma(256).expect("dma");
        let mr = MemoryRegion::register(&pd, &buf, RIGHTS).expect("register");
        assert_eq!(mr.sge(200, 56).expect("fits"), Sge { lkey: mr.lkey(), addr: buf.iova() + 200, length: 56 });
        assert_eq!(mr.remote(256).expect("the end"), RemoteBuf { stag: mr.rkey(), to: buf.iova() + 256 });
        assert!(matches!(mr.sge(200, 57), Err(DriverError::OutOfBounds { offset: 200, len: 57, size: 256 })));
        assert!(matches!(mr.sge(u64::MAX, 1), Err(DriverError::OutOfBounds { .. })));
        assert!(matches!(mr.remote(257), Err(DriverError::OutOfBounds { .. })));
    }

    #[test]
    fn mr_indices_run_out_with_a_typed_error() {
        let dev = model_device();
        let pd = ProtectionDomain::new(&dev).expect("pd");
        let buf = dev.alloc_dma(64).expect("dma");
        let _all: Vec<_> =
            (0..dev.info().num_mrs).map(|_| MemoryRegion::register(&pd, &buf, RIGHTS).expect("register")).collect();
        let err = MemoryRegion::register(&pd, &buf, RIGHTS).err().expect("no index left");
        assert!(matches!(err, DriverError::Exhausted(Resource::MemoryRegion)), "{err}");
    }

    /// A region over `mem` at `iova`, as a backend that maps memory there hands it out.
    fn region_at(mem: &mut [u64], iova: u64) -> DmaRegion<'_> {
        let len = std::mem::size_of_val(mem);
        // SAFETY: `mem` is valid for reads and writes of `len` octets and 8-aligned, and the
        // region borrows it, so it cannot outlive it.
        unsafe { DmaRegion::new(NonNull::from(mem).cast(), len, iova) }
    }

    #[test]
    fn a_region_whose_iova_range_runs_past_2_to_the_64_is_refused_before_taking_an_index() {
        let dev = model_device();
        let pd = ProtectionDomain::new(&dev).expect("pd");
        let mut mem = [0u64; 16];
        let high = region_at(&mut mem, u64::MAX - 63);
        let err = MemoryRegion::register(&pd, &high, RIGHTS).err().expect("128 octets in the last 64");
        assert!(matches!(err, DriverError::IovaWraps { iova, len: 128 } if iova == u64::MAX - 63), "{err}");
        let err = MemoryRegion::register_range(&pd, &high, 64, 8, RIGHTS).err().expect("its IOVA wraps");
        assert!(matches!(err, DriverError::IovaWraps { .. }), "{err}");
        let last = MemoryRegion::register_range(&pd, &high, 0, 64, RIGHTS).expect("up to the last octet");
        assert_eq!((last.index(), last.va()), (0, u64::MAX - 63), "the refusals took no index");
        assert!(dev.query_mr(0).expect("query").valid);
    }

    #[test]
    fn host_memory_overlapping_the_device_memory_window_is_refused() {
        let dev = model_device();
        let pd = ProtectionDomain::new(&dev).expect("pd");
        let (base, size) = (dev.info().dm_base, u64::from(dev.info().dm_size));
        let mut mem = [0u64; 16];
        for (iova, what) in
            [(base, "at its start"), (base - 64, "across its start"), (base + size - 8, "across its end")]
        {
            let region = region_at(&mut mem, iova);
            let err = MemoryRegion::register(&pd, &region, RIGHTS).err().expect(what);
            assert!(
                matches!(err, DriverError::IovaInDeviceMemory { iova: i, len: 128, window, .. } if (i, window) == (iova, base)),
                "{what}: {err}"
            );
        }
        for (iova, what) in [(base - 128, "ends where it starts"), (base + size, "starts where it ends")] {
            let region = region_at(&mut mem, iova);
            MemoryRegion::register(&pd, &region, RIGHTS).expect(what);
        }
        let dm = dev.alloc_device_memory(64).expect("device memory");
        MemoryRegion::register_device(&pd, &dm, RIGHTS).expect("device memory belongs there");

        let plain = model_device_features(0b1111);
        let pd = ProtectionDomain::new(&plain).expect("pd");
        let region = region_at(&mut mem, base);
        MemoryRegion::register(&pd, &region, RIGHTS).expect("no window without device memory");
    }
}
