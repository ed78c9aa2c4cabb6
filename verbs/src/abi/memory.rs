//! Protection domains and memory regions over the program's own memory.
use std::ptr::NonNull;

use libc::{c_int, c_uint, c_void};
use rnic_driver::{MemoryRegion, MrAccess, ProtectionDomain};

use super::{context, gone};
use crate::engine::{MrEntry, PdEntry, Pinned};
use crate::objects::{tombstone, Mr, Pd};
use crate::{errno, sys};

/// `struct ibv_pd *ibv_alloc_pd(struct ibv_context *context)`.
#[no_mangle]
pub unsafe extern "C" fn rnic_ibv_alloc_pd(ctx: *mut sys::ibv_context) -> *mut sys::ibv_pd {
    // SAFETY: a live context (the caller's promise).
    let engine = &unsafe { context(ctx) }.engine;
    // SAFETY: plain data; zero is valid.
    let pd = Box::into_raw(Box::new(Pd { ibv: unsafe { std::mem::zeroed() } }));
    let key = pd as usize;
    let made = engine.call(move |st| {
        let made = ProtectionDomain::new(st.dev_static())?;
        let pdn = made.pdn();
        st.pds.insert(key, PdEntry { pd: Pinned::new(made), users: 0 });
        Ok(pdn)
    });
    match made.map_err(gone).and_then(|r| r.map_err(|e| errno::of(&e))) {
        Ok(pdn) => {
            // SAFETY: `pd` is ours, just made.
            unsafe { (*pd).ibv = sys::ibv_pd { context: ctx, handle: pdn.into() } };
            pd.cast()
        }
        Err(e) => {
            // SAFETY: `pd` came from `Box::into_raw` above and was not handed out.
            drop(unsafe { Box::from_raw(pd) });
            errno::set(e);
            std::ptr::null_mut()
        }
    }
}

/// `int ibv_dealloc_pd(struct ibv_pd *pd)`: EBUSY while MRs or QPs use it.
#[no_mangle]
pub unsafe extern "C" fn rnic_ibv_dealloc_pd(pd: *mut sys::ibv_pd) -> c_int {
    let key = pd as usize;
    // SAFETY: a live PD of a live context (the caller's promise).
    let engine = &unsafe { context((*pd).context) }.engine;
    let done = engine.call(move |st| match st.pds.get(&key) {
        None => libc::EINVAL,
        Some(entry) if entry.users > 0 => libc::EBUSY,
        Some(_) => {
            let entry = st.pds.remove(&key).expect("found above");
            // SAFETY: nothing uses it (`users` is 0): no MR or QP borrows it.
            unsafe { entry.pd.free() };
            0
        }
    });
    let e = done.unwrap_or_else(gone);
    if e == 0 {
        tombstone(pd);
    }
    e
}

/// Access flags verbs defines that this RNIC does not give (memory windows, zero-based
/// and on-demand regions, huge-page hints).
const UNSUPPORTED_ACCESS: c_uint =
    sys::IBV_ACCESS_MW_BIND | sys::IBV_ACCESS_ZERO_BASED | sys::IBV_ACCESS_ON_DEMAND | sys::IBV_ACCESS_HUGETLB;

/// The optional access flags (`IBV_ACCESS_OPTIONAL_RANGE` in the header, a macro):
/// hints a device may ignore.
const OPTIONAL_RANGE: c_uint = ((sys::IBV_ACCESS_OPTIONAL_FIRST << 10) - 1) & !(sys::IBV_ACCESS_OPTIONAL_FIRST - 1);

/// Verbs rights as the RNIC's. Remote write or atomic rights need local write (the IB
/// rule every provider applies); optional flags (relaxed ordering) are ignored, as verbs
/// allows.
fn access(flags: c_int) -> Result<MrAccess, c_int> {
    let flags = flags as c_uint & !OPTIONAL_RANGE;
    if flags & UNSUPPORTED_ACCESS != 0 {
        return Err(libc::EOPNOTSUPP);
    }
    let has = |bit: c_uint| flags & bit != 0;
    let a = MrAccess {
        local_write: has(sys::IBV_ACCESS_LOCAL_WRITE),
        remote_read: has(sys::IBV_ACCESS_REMOTE_READ),
        remote_write: has(sys::IBV_ACCESS_REMOTE_WRITE),
        remote_atomic: has(sys::IBV_ACCESS_REMOTE_ATOMIC),
    };
    if (a.remote_write || a.remote_atomic) && !a.local_write {
        return Err(libc::EINVAL);
    }
    Ok(a)
}

/// `struct ibv_mr *ibv_reg_mr(struct ibv_pd *pd, void *addr, size_t length, int
/// access)`: the program's memory, where it is, with tagged offsets its addresses.
#[no_mangle]
pub unsafe extern "C" fn rnic_ibv_reg_mr(
    pd: *mut sys::ibv_pd,
    addr: *mut c_void,
    length: usize,
    access: c_int,
) -> *mut sys::ibv_mr {
    // SAFETY: passed on.
    unsafe { rnic_ibv_reg_mr_iova2(pd, addr, length, addr as u64, access as c_uint) }
}

/// `struct ibv_mr *ibv_reg_mr_iova2(struct ibv_pd *pd, void *addr, size_t length,
/// uint64_t iova, unsigned int access)`: as `ibv_reg_mr`, the tagged offsets starting at
/// `iova`.
#[no_mangle]
pub unsafe extern "C" fn rnic_ibv_reg_mr_iova2(
    pd: *mut sys::ibv_pd,
    addr: *mut c_void,
    length: usize,
    iova: u64,
    flags: c_uint,
) -> *mut sys::ibv_mr {
    let made = (|| {
        let rights = access(flags as c_int)?;
        let memory = NonNull::new(addr.cast::<u8>()).filter(|_| length > 0).ok_or(libc::EINVAL)?.as_ptr() as usize;
        let (pd_key, mr) = (
            pd as usize,
            Box::into_raw(Box::new(Mr {
                // SAFETY: plain data; zero is valid.
                ibv: unsafe { std::mem::zeroed() },
            })),
        );
        let key = mr as usize;
        // SAFETY: a live PD of a live context (the caller's promise).
        let engine = &unsafe { context((*pd).context) }.engine;
        let keys = engine
            .call(move |st| {
                let dev = st.dev_static();
                let entry = st.pds.get_mut(&pd_key).ok_or(libc::EINVAL)?;
                let ptr = NonNull::new(memory as *mut u8).expect("checked above");
                // SAFETY: verbs' contract: the program keeps the memory until it
                // deregisters the region, which unmaps it first (`ibv_dereg_mr`).
                let region = unsafe { dev.hal().map_user(ptr, length) }.map_err(|_| libc::ENOMEM)?;
                let region = Pinned::new(region);
                // SAFETY: the PD and the mapping are freed only after the MR (its entry
                // counts as a user of the PD; `ibv_dereg_mr` drops the MR first).
                let registered =
                    MemoryRegion::register_at(unsafe { entry.pd.borrow() }, unsafe { region.borrow() }, iova, rights);
                match registered {
                    Ok(made) => {
                        entry.users += 1;
                        let keys = (made.lkey(), made.rkey(), made.index());
                        st.mrs.insert(key, MrEntry { mr: Some(made), memory: region, pd: pd_key });
                        Ok(keys)
                    }
                    Err(e) => {
                        // SAFETY: the failed registration borrowed nothing.
                        dev.hal().dma_free(unsafe { region.into_inner() });
                        Err(errno::of(&e))
                    }
                }
            })
            .map_err(gone)
            .and_then(|r| r);
        match keys {
            Ok((lkey, rkey, index)) => {
                // SAFETY: `mr` is ours, just made.
                unsafe {
                    (*mr).ibv = sys::ibv_mr { context: (*pd).context, pd, addr, length, handle: index, lkey, rkey }
                };
                Ok(mr.cast::<sys::ibv_mr>())
            }
            Err(e) => {
                // SAFETY: `mr` came from `Box::into_raw` above and was not handed out.
                drop(unsafe { Box::from_raw(mr) });
                Err(e)
            }
        }
    })();
    made.unwrap_or_else(|e| {
        errno::set(e);
        std::ptr::null_mut()
    })
}

/// `int ibv_dereg_mr(struct ibv_mr *mr)`: the region is invalid in the device before its
/// memory is unmapped.
#[no_mangle]
pub unsafe extern "C" fn rnic_ibv_dereg_mr(mr: *mut sys::ibv_mr) -> c_int {
    let key = mr as usize;
    // SAFETY: a live MR of a live context (the caller's promise).
    let engine = &unsafe { context((*mr).context) }.engine;
    let done = engine.call(move |st| {
        let Some(mut entry) = st.mrs.remove(&key) else {
            return libc::EINVAL;
        };
        let result = entry.mr.take().map(|m| m.deregister());
        // SAFETY: the MR that borrowed the mapping is gone.
        st.dev_static().hal().dma_free(unsafe { entry.memory.into_inner() });
        if let Some(pd) = st.pds.get_mut(&entry.pd) {
            pd.users -= 1;
        }
        match result {
            Some(Err(e)) => errno::of(&e),
            _ => 0,
        }
    });
    let e = done.unwrap_or_else(gone);
    // The entry is gone (if it was there) whatever the device answered.
    tombstone(mr);
    e
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn remote_write_or_atomic_without_local_write_is_einval() {
        let remote = (sys::IBV_ACCESS_REMOTE_WRITE | sys::IBV_ACCESS_REMOTE_ATOMIC) as c_int;
        assert_eq!(access(remote), Err(libc::EINVAL));
        let all = remote | sys::IBV_ACCESS_LOCAL_WRITE as c_int | sys::IBV_ACCESS_REMOTE_READ as c_int;
        assert_eq!(access(all), Ok(MrAccess::ALL));
        assert_eq!(access(sys::IBV_ACCESS_MW_BIND as c_int), Err(libc::EOPNOTSUPP));
        assert_eq!(access(sys::IBV_ACCESS_RELAXED_ORDERING as c_int), Ok(MrAccess::default()));
    }
}
