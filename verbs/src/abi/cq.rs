//! Completion queues, completion channels and their events.
use std::collections::HashMap;
use std::sync::atomic::{AtomicBool, AtomicU32, Ordering};

use libc::{c_int, c_uint, c_void};
use rnic_driver::{Completion, CompletionQueue, CqeOpcode, CqeStatus, MAX_QUEUE_LOG_SIZE};

use super::{context, gone};
use crate::convert;
use crate::engine::{CqEntry, MrEntry, Pinned, QpEntry, State, CHUNK};
use crate::objects::{tombstone, Channel, Cq};
use crate::staging::{self, Queue, Staged};
use crate::{errno, sys};

/// `struct ibv_comp_channel *ibv_create_comp_channel(struct ibv_context *context)`: a
/// pipe whose read end is the channel's `fd`.
#[no_mangle]
pub unsafe extern "C" fn rnic_ibv_create_comp_channel(ctx: *mut sys::ibv_context) -> *mut sys::ibv_comp_channel {
    let mut fds = [0 as c_int; 2];
    // SAFETY: `fds` has room for the two descriptors.
    if unsafe { libc::pipe2(fds.as_mut_ptr(), libc::O_CLOEXEC) } != 0 {
        return std::ptr::null_mut();
    }
    let ibv = sys::ibv_comp_channel { context: ctx, fd: fds[0], refcnt: 0 };
    let destroyed = AtomicBool::new(false);
    Box::into_raw(Box::new(Channel { ibv, write_fd: fds[1], users: AtomicU32::new(0), destroyed })).cast()
}

/// `int ibv_destroy_comp_channel(struct ibv_comp_channel *channel)`: EBUSY while CQs
/// use it.
#[no_mangle]
pub unsafe extern "C" fn rnic_ibv_destroy_comp_channel(channel: *mut sys::ibv_comp_channel) -> c_int {
    let ch = channel.cast::<Channel>();
    // SAFETY: a channel of this library, live or a tombstone (the caller's promise).
    let ch = unsafe { &*ch };
    if ch.users.load(Ordering::Acquire) > 0 {
        return libc::EBUSY;
    }
    if ch.destroyed.swap(true, Ordering::AcqRel) {
        return libc::EINVAL;
    }
    tombstone(channel);
    // Only the read end is closed: a thread still blocked in `ibv_get_cq_event` stays
    // blocked, as with libibverbs, instead of seeing the pipe end (see
    // `rdma_destroy_event_channel`). One descriptor per destroyed channel stays open.
    // SAFETY: the descriptor is open and the channel's.
    unsafe { libc::close(ch.ibv.fd) };
    0
}

/// The ring size for `cqe` completions.
fn cq_log_size(cqe: c_int) -> Option<u8> {
    let entries = u32::try_from(cqe).ok().filter(|&n| n > 0)?.next_power_of_two().max(4);
    let log = entries.trailing_zeros() as u8;
    (log <= MAX_QUEUE_LOG_SIZE).then_some(log)
}

/// `struct ibv_cq *ibv_create_cq(struct ibv_context *context, int cqe, void *cq_context,
/// struct ibv_comp_channel *channel, int comp_vector)`.
#[no_mangle]
pub unsafe extern "C" fn rnic_ibv_create_cq(
    ctx: *mut sys::ibv_context,
    cqe: c_int,
    cq_context: *mut c_void,
    channel: *mut sys::ibv_comp_channel,
    _comp_vector: c_int,
) -> *mut sys::ibv_cq {
    let Some(log_size) = cq_log_size(cqe) else {
        errno::set(libc::EINVAL);
        return std::ptr::null_mut();
    };
    let ch = channel.cast::<Channel>();
    // SAFETY: NULL or a live channel (the caller's promise).
    let write_fd = (!ch.is_null()).then(|| unsafe { (*ch).write_fd });
    let cq = Box::into_raw(Box::new(Cq {
        // SAFETY: plain data and a pthread mutex and condition, all valid as zero (their
        // static initializers in glibc).
        ibv: unsafe { std::mem::zeroed() },
        events: AtomicU32::new(0),
        acked: AtomicU32::new(0),
    }));
    let key = cq as usize;
    // SAFETY: a live context (the caller's promise).
    let engine = &unsafe { context(ctx) }.engine;
    let made = engine.call(move |st| {
        let vector = st.next_vector();
        let made = CompletionQueue::new(st.dev_static(), log_size, vector).map_err(|e| errno::of(&e))?;
        let numbers = (made.cqn(), made.capacity());
        st.cqs.insert(
            key,
            CqEntry { cq: Pinned::new(made), users: 0, armed: None, channel: write_fd, overflowed: false },
        );
        Ok(numbers)
    });
    match made.map_err(gone).and_then(|r| r) {
        Ok((cqn, capacity)) => {
            if !ch.is_null() {
                // SAFETY: a live channel.
                unsafe { (*ch).users.fetch_add(1, Ordering::AcqRel) };
            }
            // SAFETY: `cq` is ours, just made.
            unsafe {
                (*cq).ibv.context = ctx;
                (*cq).ibv.channel = channel;
                (*cq).ibv.cq_context = cq_context;
                (*cq).ibv.handle = cqn;
                (*cq).ibv.cqe = capacity as c_int;
            }
            cq.cast()
        }
        Err(e) => {
            // SAFETY: `cq` came from `Box::into_raw` above and was not handed out.
            drop(unsafe { Box::from_raw(cq) });
            errno::set(e);
            std::ptr::null_mut()
        }
    }
}

/// `int ibv_destroy_cq(struct ibv_cq *cq)`: EBUSY while QPs use it or events handed out
/// are not acknowledged.
#[no_mangle]
pub unsafe extern "C" fn rnic_ibv_destroy_cq(cq: *mut sys::ibv_cq) -> c_int {
    let ours = cq.cast::<Cq>();
    // SAFETY: a live CQ (the caller's promise).
    let (events, acked) = unsafe { ((*ours).events.load(Ordering::Acquire), (*ours).acked.load(Ordering::Acquire)) };
    if events != acked {
        return libc::EBUSY;
    }
    let key = cq as usize;
    // SAFETY: a live CQ of a live context.
    let engine = &unsafe { context((*cq).context) }.engine;
    let done = engine.call(move |st| match st.cqs.get(&key) {
        None => libc::EINVAL,
        Some(entry) if entry.users > 0 => libc::EBUSY,
        Some(_) => {
            let entry = st.cqs.remove(&key).expect("found above");
            // SAFETY: no QP uses it (`users` is 0), so nothing borrows it.
            unsafe { entry.cq.free() };
            0
        }
    });
    let e = done.unwrap_or_else(gone);
    if e == 0 {
        // SAFETY: the CQ's structure stays allocated (a tombstone).
        let ch = unsafe { (*cq).channel }.cast::<Channel>();
        tombstone(cq);
        if !ch.is_null() {
            // SAFETY: a channel outlives the CQs that use it (EBUSY above).
            unsafe { (*ch).users.fetch_sub(1, Ordering::AcqRel) };
        }
    }
    e
}

/// Retires the requests of QP `qp` that `c` completes, and returns the opcode verbs
/// reports for it. A receive retires the oldest receive; a send request its own and every
/// older one (they completed unsignaled, and successfully, or an error would have
/// completed them). Staged octets are finished: a scattered payload that arrived is copied
/// out, and the slot is freed.
fn retire(qp: &mut QpEntry, mrs: &HashMap<usize, MrEntry>, c: &Completion) -> sys::ibv_wc_opcode {
    let ok = c.status == CqeStatus::Success;
    if matches!(c.opcode, CqeOpcode::Recv | CqeOpcode::RecvImm) {
        if let Some(staged) = qp.recvs.pop_front() {
            // Immediate Data leaves the receive buffer as it was.
            let arrived = if ok && c.opcode == CqeOpcode::Recv { c.byte_len } else { 0 };
            finish(qp, Queue::Recv, mrs, staged, arrived);
        }
        return convert::sq_opcode(c.opcode);
    }
    while let Some(record) = qp.posted.pop_front() {
        let own = record.wr_id == c.wr_id;
        let arrived = match record.staged.slot {
            Some(slot) if ok || !own => slot.len,
            _ => 0,
        };
        finish(qp, Queue::Send, mrs, record.staged, arrived);
        if own {
            return record.opcode;
        }
    }
    convert::sq_opcode(c.opcode)
}

/// Copies `arrived` octets of a scattered payload out, and frees the slot.
fn finish(qp: &mut QpEntry, queue: Queue, mrs: &HashMap<usize, MrEntry>, staged: Staged, arrived: u32) {
    let (Some(slot), Some(staging)) = (staged.slot, qp.staging.as_mut()) else { return };
    if !staged.scatter.is_empty() {
        staging::scatter(staging, slot, arrived, &staged.scatter, mrs.values());
    }
    staging.release(queue, slot);
}

/// Polls up to `n` completions into `out` on the device thread; an empty CQ clocks the
/// model, as the program is waiting for it.
fn poll_into(st: &mut State, key: usize, n: usize, out: usize) -> c_int {
    let mut found = 0;
    while found < n {
        let Some(entry) = st.cqs.get(&key) else { return -libc::EINVAL };
        let completion = match entry.cq.get().poll() {
            Ok(Some(c)) => c,
            Ok(None) => break,
            Err(_) => return -libc::EIO,
        };
        let qp = st.qps.values_mut().find(|q| q.qp.qpn() == completion.qpn);
        let (opcode, src_qp) = match qp {
            Some(qp) => (retire(qp, &st.mrs, &completion), qp.dest_qpn.unwrap_or(0)),
            None => (convert::sq_opcode(completion.opcode), 0),
        };
        let wc = convert::wc(&completion, opcode, src_qp);
        // SAFETY: `out` is the caller's array of `n` work completions, and `found < n`.
        unsafe { (out as *mut sys::ibv_wc).add(found).write(wc) };
        found += 1;
    }
    if found == 0 {
        st.clock(CHUNK);
    }
    found as c_int
}

/// `ibv_poll_cq` (through `ops`): up to `num_entries` completions, oldest first; a
/// negative value on error.
pub(crate) unsafe extern "C" fn poll_cq(cq: *mut sys::ibv_cq, num_entries: c_int, wc: *mut sys::ibv_wc) -> c_int {
    let Ok(n) = usize::try_from(num_entries) else { return -libc::EINVAL };
    let (key, out) = (cq as usize, wc as usize);
    // SAFETY: a live CQ of a live context (the caller's promise).
    let engine = &unsafe { context((*cq).context) }.engine;
    engine.call(move |st| poll_into(st, key, n, out)).unwrap_or_else(|why| -gone(why))
}

/// `ibv_req_notify_cq` (through `ops`): one event on the CQ's channel at its next
/// completion (with `solicited_only`, its next solicited one).
pub(crate) unsafe extern "C" fn req_notify_cq(cq: *mut sys::ibv_cq, solicited_only: c_int) -> c_int {
    let key = cq as usize;
    // SAFETY: a live CQ of a live context (the caller's promise).
    let engine = &unsafe { context((*cq).context) }.engine;
    engine
        .call(move |st| match st.cqs.get_mut(&key) {
            Some(entry) => {
                entry.cq.get().arm(solicited_only != 0);
                entry.armed = Some(solicited_only != 0);
                0
            }
            None => libc::EINVAL,
        })
        .unwrap_or_else(gone)
}

/// `int ibv_get_cq_event(struct ibv_comp_channel *channel, struct ibv_cq **cq, void
/// **cq_context)`: waits for (or, on a non-blocking channel, takes) the next event.
#[no_mangle]
pub unsafe extern "C" fn rnic_ibv_get_cq_event(
    channel: *mut sys::ibv_comp_channel,
    cq: *mut *mut sys::ibv_cq,
    cq_context: *mut *mut c_void,
) -> c_int {
    let mut event = [0u8; 8];
    // SAFETY: a live channel (the caller's promise); `event` has room for 8 octets.
    let n = unsafe { libc::read((*channel).fd, event.as_mut_ptr().cast(), event.len()) };
    if n != event.len() as isize {
        return -1;
    }
    let got = u64::from_ne_bytes(event) as usize as *mut sys::ibv_cq;
    // SAFETY: the device thread writes addresses of live CQs using this channel, and a CQ
    // is not destroyed while it has events not acknowledged. The out pointers are the
    // caller's.
    unsafe {
        (*got.cast::<Cq>()).events.fetch_add(1, Ordering::AcqRel);
        *cq = got;
        *cq_context = (*got).cq_context;
    }
    0
}

/// `void ibv_ack_cq_events(struct ibv_cq *cq, unsigned int nevents)`.
#[no_mangle]
pub unsafe extern "C" fn rnic_ibv_ack_cq_events(cq: *mut sys::ibv_cq, nevents: c_uint) {
    // SAFETY: a live CQ (the caller's promise).
    unsafe { (*cq.cast::<Cq>()).acked.fetch_add(nevents, Ordering::AcqRel) };
}

#[cfg(test)]
mod tests {
    #[test]
    fn a_cq_holds_at_least_what_was_asked() {
        assert_eq!(super::cq_log_size(1), Some(2));
        assert_eq!(super::cq_log_size(100), Some(7));
        assert_eq!(super::cq_log_size(128), Some(7));
        assert_eq!(super::cq_log_size(0), None);
        assert_eq!(super::cq_log_size(1 << 17), None);
    }
}
