//! Queue pairs: creation, the verbs state machine, and posting.
//!
//! Verbs walks a QP through RESET → INIT → RTR → RTS; the RNIC has RESET, RTS and ERROR.
//! INIT and RTR are RESET in the device: receives posted then wait in the library and go
//! to the device on the way to RTS, and the peer (`dest_qp_num`, given on the way to RTR)
//! becomes the QP's CONN_ID. The streams of a simulated device are looped back, so the
//! peer is a QP of the same device.
use std::collections::VecDeque;

use libc::c_int;
use rnic_driver::{QpCaps, QpState, QueuePair, RecvRequest, WorkRequest, MAX_QUEUE_LOG_SIZE};

use super::device::RD_ATOMIC;
use super::{context, gone};
use crate::convert;
use crate::engine::{QpEntry, State};
use crate::objects::{tombstone, Qp};
use crate::{errno, sys};

/// Log2 of the slots for `n` requests (at least one), if the device has rings that large.
fn ring_log(n: u32) -> Option<u8> {
    let log = n.max(1).next_power_of_two().trailing_zeros() as u8;
    (log <= MAX_QUEUE_LOG_SIZE).then_some(log)
}

/// What a QP is created with, from what the program asked, or EINVAL for what the RNIC
/// cannot give. The SQ gets two slots per request: a Write with Immediate takes two.
fn caps(init: &sys::ibv_qp_init_attr) -> Result<(QpCaps, sys::ibv_qp_cap), c_int> {
    if init.qp_type != sys::IBV_QPT_RC || !init.srq.is_null() {
        return Err(libc::EOPNOTSUPP);
    }
    let asked = init.cap;
    if asked.max_send_sge > 1 || asked.max_recv_sge > 1 || asked.max_inline_data > 0 {
        return Err(libc::EINVAL);
    }
    let sq_log_size = ring_log(asked.max_send_wr.saturating_mul(2)).ok_or(libc::EINVAL)?;
    let rq_log_size = ring_log(asked.max_recv_wr).ok_or(libc::EINVAL)?;
    let caps = QpCaps { sq_log_size, rq_log_size, ird: RD_ATOMIC, ord: RD_ATOMIC, ..QpCaps::default() };
    let got = sys::ibv_qp_cap {
        max_send_wr: (1 << sq_log_size) / 2,
        max_recv_wr: 1 << rq_log_size,
        max_send_sge: 1,
        max_recv_sge: 1,
        max_inline_data: 0,
    };
    Ok((caps, got))
}

/// `struct ibv_qp *ibv_create_qp(struct ibv_pd *pd, struct ibv_qp_init_attr *attr)`: an
/// RC QP in RESET; `attr->cap` is set to what it got.
#[no_mangle]
pub unsafe extern "C" fn rnic_ibv_create_qp(
    pd: *mut sys::ibv_pd,
    attr: *mut sys::ibv_qp_init_attr,
) -> *mut sys::ibv_qp {
    // SAFETY: the caller passes a readable init attribute structure.
    let init = unsafe { attr.read() };
    let (qp_caps, got) = match caps(&init) {
        Ok(c) => c,
        Err(e) => {
            errno::set(e);
            return std::ptr::null_mut();
        }
    };
    if init.send_cq.is_null() || init.recv_cq.is_null() {
        errno::set(libc::EINVAL);
        return std::ptr::null_mut();
    }
    // SAFETY: plain data and pthread objects, valid as zero.
    let qp = Box::into_raw(Box::new(Qp { ibv: unsafe { std::mem::zeroed() }, sq_sig_all: init.sq_sig_all != 0 }));
    let (key, pd_key, scq, rcq) = (qp as usize, pd as usize, init.send_cq as usize, init.recv_cq as usize);
    let sq_sig_all = init.sq_sig_all != 0;
    // SAFETY: a live PD of a live context (the caller's promise).
    let ctx = unsafe { (*pd).context };
    // SAFETY: as above.
    let engine = &unsafe { context(ctx) }.engine;
    let made = engine.call(move |st| {
        let (Some(pd), Some(send_cq), Some(recv_cq)) = (st.pds.get(&pd_key), st.cqs.get(&scq), st.cqs.get(&rcq)) else {
            return Err(libc::EINVAL);
        };
        // SAFETY: the PD and CQs are freed only once their `users` count is back to 0,
        // which `ibv_destroy_qp` does after dropping the QP.
        let (pd, send_cq, recv_cq) = unsafe { (pd.pd.borrow(), send_cq.cq.borrow(), recv_cq.cq.borrow()) };
        let made = QueuePair::new(st.dev_static(), pd, send_cq, recv_cq, qp_caps).map_err(|e| errno::of(&e))?;
        let qpn = made.qpn();
        st.pds.get_mut(&pd_key).expect("found above").users += 1;
        for cq in [scq, rcq] {
            st.cqs.get_mut(&cq).expect("found above").users += 1;
        }
        st.qps.insert(
            key,
            QpEntry {
                qp: made,
                pd: pd_key,
                send_cq: scq,
                recv_cq: rcq,
                state: sys::IBV_QPS_RESET,
                early_recvs: Vec::new(),
                dest_qpn: None,
                sq_sig_all,
                caps: got,
                posted: VecDeque::new(),
                link: None,
                fatal: false,
            },
        );
        Ok(qpn)
    });
    match made.map_err(gone).and_then(|r| r) {
        Ok(qpn) => {
            // SAFETY: `qp` is ours, just made; `attr` is the caller's, writable.
            unsafe {
                let q = &mut (*qp).ibv;
                q.context = ctx;
                q.qp_context = init.qp_context;
                q.pd = pd;
                q.send_cq = init.send_cq;
                q.recv_cq = init.recv_cq;
                q.handle = qpn;
                q.qp_num = qpn;
                q.state = sys::IBV_QPS_RESET;
                q.qp_type = sys::IBV_QPT_RC;
                (*attr).cap = got;
            }
            qp.cast()
        }
        Err(e) => {
            // SAFETY: `qp` came from `Box::into_raw` above and was not handed out.
            drop(unsafe { Box::from_raw(qp) });
            errno::set(e);
            std::ptr::null_mut()
        }
    }
}

/// `int ibv_destroy_qp(struct ibv_qp *qp)`: the device stops using it (RESET) before its
/// rings are freed.
#[no_mangle]
pub unsafe extern "C" fn rnic_ibv_destroy_qp(qp: *mut sys::ibv_qp) -> c_int {
    let key = qp as usize;
    // SAFETY: a live QP of a live context (the caller's promise).
    let engine = &unsafe { context((*qp).context) }.engine;
    let done = engine.call(move |st| {
        let Some(entry) = st.qps.remove(&key) else { return libc::EINVAL };
        let QpEntry { qp, pd, send_cq, recv_cq, link, .. } = entry;
        drop(qp);
        st.unlink(link);
        st.pds.get_mut(&pd).expect("a QP's PD lives").users -= 1;
        for cq in [send_cq, recv_cq] {
            st.cqs.get_mut(&cq).expect("a QP's CQs live").users -= 1;
        }
        0
    });
    let e = done.unwrap_or_else(gone);
    if e == 0 {
        tombstone(qp);
    }
    e
}

/// Moves a QP to the verbs state `attr` names (and takes the attributes `mask` gives).
fn modify(entry: &mut QpEntry, attr: &sys::ibv_qp_attr, mask: c_int) -> Result<(), c_int> {
    let mask = mask as u32;
    let cur = entry.state;
    if mask & sys::IBV_QP_CUR_STATE != 0 && attr.cur_qp_state != cur {
        return Err(libc::EINVAL);
    }
    let rd_atomic_ok = |m: u32, v: u8| mask & m == 0 || v <= RD_ATOMIC;
    if !rd_atomic_ok(sys::IBV_QP_MAX_QP_RD_ATOMIC, attr.max_rd_atomic)
        || !rd_atomic_ok(sys::IBV_QP_MAX_DEST_RD_ATOMIC, attr.max_dest_rd_atomic)
    {
        return Err(libc::EINVAL);
    }
    let new = if mask & sys::IBV_QP_STATE != 0 { attr.qp_state } else { cur };
    if mask & sys::IBV_QP_DEST_QPN != 0 {
        if !(cur == sys::IBV_QPS_INIT && new == sys::IBV_QPS_RTR) {
            return Err(libc::EINVAL);
        }
        entry.dest_qpn = Some(attr.dest_qp_num);
    }
    let driver = |r: Result<(), rnic_driver::DriverError>| r.map_err(|e| errno::of(&e));
    match (cur, new) {
        (_, sys::IBV_QPS_RESET) => {
            if entry.qp.state() != QpState::Reset {
                driver(entry.qp.modify(QpState::Reset))?;
            }
            entry.early_recvs.clear();
            entry.posted.clear();
            entry.dest_qpn = None;
        }
        (sys::IBV_QPS_RESET | sys::IBV_QPS_INIT, sys::IBV_QPS_INIT)
        | (sys::IBV_QPS_RTR, sys::IBV_QPS_RTR)
        | (sys::IBV_QPS_RTS, sys::IBV_QPS_RTS)
        | (sys::IBV_QPS_ERR, sys::IBV_QPS_ERR) => {}
        (sys::IBV_QPS_INIT, sys::IBV_QPS_RTR) => {
            let dest = entry.dest_qpn.ok_or(libc::EINVAL)?;
            driver(entry.qp.set_conn_id(u16::try_from(dest).map_err(|_| libc::EINVAL)?))?;
        }
        (sys::IBV_QPS_RTR, sys::IBV_QPS_RTS) => {
            driver(entry.qp.ready())?;
            driver(entry.qp.post_recv_batch(&std::mem::take(&mut entry.early_recvs)))?;
        }
        (_, sys::IBV_QPS_ERR) => {
            driver(entry.qp.modify(QpState::Error))?;
            driver(entry.qp.post_recv_batch(&std::mem::take(&mut entry.early_recvs)))?;
        }
        _ => return Err(libc::EINVAL),
    }
    entry.state = new;
    Ok(())
}

/// `int ibv_modify_qp(struct ibv_qp *qp, struct ibv_qp_attr *attr, int attr_mask)`.
#[no_mangle]
pub unsafe extern "C" fn rnic_ibv_modify_qp(qp: *mut sys::ibv_qp, attr: *mut sys::ibv_qp_attr, mask: c_int) -> c_int {
    let key = qp as usize;
    // SAFETY: the caller passes a readable attribute structure.
    let attr = unsafe { attr.read() };
    // SAFETY: a live QP of a live context (the caller's promise).
    let engine = &unsafe { context((*qp).context) }.engine;
    let done = engine.call(move |st| {
        let entry = st.qps.get_mut(&key).ok_or(libc::EINVAL)?;
        modify(entry, &attr, mask)?;
        Ok(entry.state)
    });
    match done.map_err(gone).and_then(|r| r) {
        Ok(state) => {
            // SAFETY: a live QP; the program reads `state`, the library writes it.
            unsafe { (*qp).state = state };
            0
        }
        Err(e) => e,
    }
}

/// The verbs state, ERROR if the device stopped the QP on its own (a Terminate).
fn current_state(entry: &mut QpEntry) -> sys::ibv_qp_state {
    if entry.state == sys::IBV_QPS_RTS && matches!(entry.qp.query(), Ok((ctx, _)) if ctx.state == QpState::Error) {
        entry.state = sys::IBV_QPS_ERR;
    }
    entry.state
}

/// `int ibv_query_qp(struct ibv_qp *qp, struct ibv_qp_attr *attr, int attr_mask, struct
/// ibv_qp_init_attr *init_attr)`.
#[no_mangle]
pub unsafe extern "C" fn rnic_ibv_query_qp(
    qp: *mut sys::ibv_qp,
    attr: *mut sys::ibv_qp_attr,
    _mask: c_int,
    init_attr: *mut sys::ibv_qp_init_attr,
) -> c_int {
    let key = qp as usize;
    // SAFETY: a live QP of a live context (the caller's promise).
    let engine = &unsafe { context((*qp).context) }.engine;
    let done = engine.call(move |st| {
        let entry = st.qps.get_mut(&key).ok_or(libc::EINVAL)?;
        Ok((current_state(entry), entry.caps, entry.dest_qpn.unwrap_or(0), entry.sq_sig_all))
    });
    let (state, cap, dest, sig_all) = match done.map_err(gone).and_then(|r| r) {
        Ok(v) => v,
        Err(e) => return e,
    };
    // SAFETY: plain data; zero is valid. The out structures are the caller's, and the QP
    // is live.
    unsafe {
        let mut a: sys::ibv_qp_attr = std::mem::zeroed();
        a.qp_state = state;
        a.cur_qp_state = state;
        a.path_mtu = sys::IBV_MTU_1024;
        a.dest_qp_num = dest;
        a.cap = cap;
        a.max_rd_atomic = RD_ATOMIC;
        a.max_dest_rd_atomic = RD_ATOMIC;
        a.port_num = super::device::PORT;
        attr.write(a);
        let q = &(*qp);
        let mut i: sys::ibv_qp_init_attr = std::mem::zeroed();
        i.qp_context = q.qp_context;
        i.send_cq = q.send_cq;
        i.recv_cq = q.recv_cq;
        i.cap = cap;
        i.qp_type = sys::IBV_QPT_RC;
        i.sq_sig_all = c_int::from(sig_all);
        init_attr.write(i);
        (*qp).state = state;
    }
    0
}

/// Posts translated send requests: RTS (or ERROR, where the device flushes them) only.
fn post_sends(st: &mut State, key: usize, wrs: &[(WorkRequest, sys::ibv_wc_opcode)]) -> Result<(), c_int> {
    let entry = st.qps.get_mut(&key).ok_or(libc::EINVAL)?;
    if !matches!(entry.state, sys::IBV_QPS_RTS | sys::IBV_QPS_ERR) {
        return Err(libc::EINVAL);
    }
    let reqs: Vec<WorkRequest> = wrs.iter().map(|(w, _)| *w).collect();
    entry.qp.post_send_batch(&reqs).map_err(|e| errno::of(&e))?;
    let room = 2 * entry.caps.max_send_wr as usize;
    for &(w, op) in wrs {
        if entry.posted.len() == room {
            entry.posted.pop_front();
        }
        entry.posted.push_back((w.wr_id(), op));
    }
    Ok(())
}

/// `ibv_post_send` (through `ops`): the requests before `*bad_wr` are posted.
pub(crate) unsafe extern "C" fn post_send(
    qp: *mut sys::ibv_qp,
    wr: *mut sys::ibv_send_wr,
    bad_wr: *mut *mut sys::ibv_send_wr,
) -> c_int {
    let key = qp as usize;
    // SAFETY: a live QP of a live context (the caller's promise).
    let engine = &unsafe { context((*qp).context) }.engine;
    // SAFETY: as above.
    let sig_all = unsafe { (*qp.cast::<Qp>()).sq_sig_all };
    let mut reqs = Vec::new();
    let mut bad = None;
    let mut at = wr;
    while !at.is_null() {
        // SAFETY: the caller's list of readable requests, each with its SGEs.
        match unsafe { convert::send_wr(&*at, sig_all) } {
            Ok(r) => reqs.push(r),
            Err(e) => {
                bad = Some((at, e));
                break;
            }
        }
        // SAFETY: as above.
        at = unsafe { (*at).next };
    }
    let posted = engine.call(move |st| post_sends(st, key, &reqs)).map_err(gone).and_then(|r| r);
    // SAFETY: the caller's out pointer.
    unsafe { post_answer(posted, bad, wr, bad_wr) }
}

/// What a post returns: 0, or the errno with `*bad_wr` at the first request not posted
/// (the first of the list when the device took none, else the one that could not be
/// translated).
///
/// # Safety
///
/// `bad_wr` must be NULL or writable.
unsafe fn post_answer<W>(
    posted: Result<(), c_int>,
    refused: Option<(*mut W, c_int)>,
    first: *mut W,
    bad_wr: *mut *mut W,
) -> c_int {
    let (first_bad, e) = match (posted, refused) {
        (Err(e), _) => (first, e),
        (Ok(()), Some((at, e))) => (at, e),
        (Ok(()), None) => return 0,
    };
    if !bad_wr.is_null() {
        // SAFETY: the caller's promise.
        unsafe { *bad_wr = first_bad };
    }
    e
}

/// Posts receives: to the device in RTS or ERROR, kept for RTS in INIT and RTR.
fn post_recvs(st: &mut State, key: usize, rrs: Vec<RecvRequest>) -> Result<(), c_int> {
    let entry = st.qps.get_mut(&key).ok_or(libc::EINVAL)?;
    match entry.state {
        sys::IBV_QPS_INIT | sys::IBV_QPS_RTR => {
            if entry.early_recvs.len() + rrs.len() > entry.caps.max_recv_wr as usize {
                return Err(libc::ENOMEM);
            }
            entry.early_recvs.extend(rrs);
            Ok(())
        }
        sys::IBV_QPS_RTS | sys::IBV_QPS_ERR => entry.qp.post_recv_batch(&rrs).map_err(|e| errno::of(&e)),
        _ => Err(libc::EINVAL),
    }
}

/// `ibv_post_recv` (through `ops`).
pub(crate) unsafe extern "C" fn post_recv(
    qp: *mut sys::ibv_qp,
    wr: *mut sys::ibv_recv_wr,
    bad_wr: *mut *mut sys::ibv_recv_wr,
) -> c_int {
    let key = qp as usize;
    let mut rrs = Vec::new();
    let mut bad = None;
    let mut at = wr;
    while !at.is_null() {
        // SAFETY: the caller's list of readable requests, each with its SGEs.
        match unsafe { convert::sge((*at).sg_list, (*at).num_sge) } {
            // SAFETY: as above.
            Ok(local) => rrs.push(RecvRequest { wr_id: unsafe { (*at).wr_id }, local }),
            Err(e) => {
                bad = Some((at, e));
                break;
            }
        }
        // SAFETY: as above.
        at = unsafe { (*at).next };
    }
    // SAFETY: a live QP of a live context (the caller's promise).
    let engine = &unsafe { context((*qp).context) }.engine;
    let posted = engine.call(move |st| post_recvs(st, key, rrs)).map_err(gone).and_then(|r| r);
    // SAFETY: the caller's out pointer.
    unsafe { post_answer(posted, bad, wr, bad_wr) }
}

/// Posts one request built by a direct verb ([`crate::dv`]).
pub(crate) fn post_one(qp: *mut sys::ibv_qp, wr: WorkRequest, opcode: sys::ibv_wc_opcode) -> c_int {
    let key = qp as usize;
    // SAFETY: a live QP of a live context (the direct verb's caller's promise).
    let engine = &unsafe { context((*qp).context) }.engine;
    match engine.call(move |st| post_sends(st, key, &[(wr, opcode)])).map_err(gone).and_then(|r| r) {
        Ok(()) => 0,
        Err(e) => e,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn init(send: u32, recv: u32) -> sys::ibv_qp_init_attr {
        // SAFETY: plain data; zero is valid.
        let mut i: sys::ibv_qp_init_attr = unsafe { std::mem::zeroed() };
        i.qp_type = sys::IBV_QPT_RC;
        i.cap = sys::ibv_qp_cap {
            max_send_wr: send,
            max_recv_wr: recv,
            max_send_sge: 1,
            max_recv_sge: 1,
            max_inline_data: 0,
        };
        i
    }

    #[test]
    fn rings_hold_what_was_asked_the_sq_twice() {
        let (caps, got) = caps(&init(10, 3)).expect("valid");
        assert_eq!((caps.sq_log_size, caps.rq_log_size), (5, 2));
        assert_eq!((got.max_send_wr, got.max_recv_wr), (16, 4));
    }

    #[test]
    fn what_the_rnic_lacks_is_refused() {
        let mut i = init(1, 1);
        i.qp_type = sys::IBV_QPT_UD;
        assert_eq!(caps(&i).err(), Some(libc::EOPNOTSUPP));
        let mut i = init(1, 1);
        i.cap.max_send_sge = 2;
        assert_eq!(caps(&i).err(), Some(libc::EINVAL));
        let mut i = init(1, 1);
        i.cap.max_inline_data = 64;
        assert_eq!(caps(&i).err(), Some(libc::EINVAL));
        assert_eq!(caps(&init(1 << 16, 1)).err(), Some(libc::EINVAL));
    }
}
