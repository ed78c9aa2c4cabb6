//! Direct verbs: RFC 7306's masked atomics, which `ibv_post_send` cannot say (its
//! atomics are the whole-word special case). Declared for C in `include/rnicdv.h`.
//!
//! A masked FetchAdd adds `compare_add` to the remote word with the carry dropped at each
//! bit set in `compare_add_mask` (the Add Mask: bit i set ends a field at bit i). A masked
//! CmpSwap compares the bits of `compare_add_mask` with `compare_add`, and if they match
//! writes the bits of `swap_mask` from `swap`. Both return the original word to the 8
//! octets at `sge` (host order) and complete as `IBV_WC_FETCH_ADD` and `IBV_WC_COMP_SWAP`.
//!
//! `include/rnicdv.h` is generated from this file by cbindgen (`tests/header_fresh.rs`
//! checks it; `RNICDV_H_UPDATE=1` rewrites it).
use libc::{c_int, c_uint};
use rnic_driver::{RemoteBuf, WorkRequest};

use crate::abi::qp::post_one;
use crate::objects::Qp;
use crate::sys;

/// A masked atomic request (`struct rnicdv_masked_atomic_wr`).
#[repr(C)]
pub struct MaskedAtomicWr {
    /// Returned in the completion.
    pub wr_id: u64,
    /// Receives the original word: 8 octets, LOCAL_WRITE.
    pub sge: sys::ibv_sge,
    /// The remote word: 8-aligned, in a region with IBV_ACCESS_REMOTE_ATOMIC.
    pub remote_addr: u64,
    pub rkey: u32,
    /// IBV_SEND_SIGNALED (or the QP's sq_sig_all) for a completion on success.
    pub send_flags: c_uint,
    /// FetchAdd: the Add Data. CmpSwap: the Compare Data.
    pub compare_add: u64,
    /// FetchAdd: the Add Mask (a set bit ends a field). CmpSwap: the Compare Mask.
    pub compare_add_mask: u64,
    /// CmpSwap: the Swap Data.
    pub swap: u64,
    /// CmpSwap: the Swap Mask.
    pub swap_mask: u64,
}

/// The parts both atomics share.
///
/// # Safety
///
/// `qp` must be a live QP and `wr` point to a readable request.
unsafe fn parts(
    qp: *mut sys::ibv_qp,
    wr: *const MaskedAtomicWr,
) -> Result<(MaskedAtomicWr, rnic_driver::Sge, RemoteBuf, bool), c_int> {
    if qp.is_null() || wr.is_null() {
        return Err(libc::EINVAL);
    }
    // SAFETY: the caller's readable request.
    let w = unsafe { wr.read() };
    let local = rnic_driver::Sge { lkey: w.sge.lkey, addr: w.sge.addr, length: w.sge.length };
    let remote = RemoteBuf { stag: w.rkey, to: w.remote_addr };
    // SAFETY: a live QP (the caller's promise).
    let signaled = w.send_flags & sys::IBV_SEND_SIGNALED != 0 || unsafe { (*qp.cast::<Qp>()).sq_sig_all };
    Ok((w, local, remote, signaled))
}

/// Posts a masked FetchAdd on an RC QP in RTS: 0, or an errno value (EINVAL for a bad
/// request, ENOMEM for a full send queue).
#[no_mangle]
pub unsafe extern "C" fn rnicdv_post_masked_fetch_add(qp: *mut sys::ibv_qp, wr: *const MaskedAtomicWr) -> c_int {
    // SAFETY: passed on from the caller.
    match unsafe { parts(qp, wr) } {
        Ok((w, local, remote, signaled)) => {
            let req = WorkRequest::FetchAdd {
                wr_id: w.wr_id,
                local,
                remote,
                add: w.compare_add,
                add_mask: w.compare_add_mask,
                signaled,
            };
            post_one(qp, req, sys::IBV_WC_FETCH_ADD)
        }
        Err(e) => e,
    }
}

/// Posts a masked CmpSwap on an RC QP in RTS: 0, or an errno value (EINVAL for a bad
/// request, ENOMEM for a full send queue).
#[no_mangle]
pub unsafe extern "C" fn rnicdv_post_masked_cmp_swap(qp: *mut sys::ibv_qp, wr: *const MaskedAtomicWr) -> c_int {
    // SAFETY: passed on from the caller.
    match unsafe { parts(qp, wr) } {
        Ok((w, local, remote, signaled)) => {
            let req = WorkRequest::CmpSwap {
                wr_id: w.wr_id,
                local,
                remote,
                compare: w.compare_add,
                compare_mask: w.compare_add_mask,
                swap: w.swap,
                swap_mask: w.swap_mask,
                signaled,
            };
            post_one(qp, req, sys::IBV_WC_COMP_SWAP)
        }
        Err(e) => e,
    }
}
