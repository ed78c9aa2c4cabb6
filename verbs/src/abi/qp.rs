//! Queue pairs: creation, the verbs state machine, and posting.
//!
//! Verbs walks a QP through RESET → INIT → RTR → RTS; the RNIC has RESET, RTS and ERROR.
//! INIT and RTR are RESET in the device: receives posted then wait in the library and go
//! to the device on the way to RTS, and the peer (`dest_qp_num`, given on the way to RTR)
//! becomes the QP's CONN_ID. The streams of a simulated device are looped back, so the
//! peer is a QP of the same device.
use std::collections::{HashMap, VecDeque};

use libc::c_int;
use rnic_driver::{ProtectionDomain, QpCaps, QpState, QueuePair, RecvRequest, Sge, WorkRequest, MAX_QUEUE_LOG_SIZE};

use super::device::RD_ATOMIC;
use super::{context, gone};
use crate::convert::{self, Local};
use crate::engine::{Dev, DynHal, MrEntry, QpEntry, State};
use crate::objects::{tombstone, Qp};
use crate::staging::{self, Queue, SendRecord, Staged, Staging, MAX_INLINE, MAX_SGE};
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
    if asked.max_send_sge > MAX_SGE || asked.max_recv_sge > MAX_SGE || asked.max_inline_data > MAX_INLINE {
        return Err(libc::EINVAL);
    }
    let sq_log_size = ring_log(asked.max_send_wr.saturating_mul(2)).ok_or(libc::EINVAL)?;
    let rq_log_size = ring_log(asked.max_recv_wr).ok_or(libc::EINVAL)?;
    let caps = QpCaps { sq_log_size, rq_log_size, ird: RD_ATOMIC, ord: RD_ATOMIC, ..QpCaps::default() };
    let got = sys::ibv_qp_cap {
        max_send_wr: (1 << sq_log_size) / 2,
        max_recv_wr: 1 << rq_log_size,
        max_send_sge: MAX_SGE,
        max_recv_sge: MAX_SGE,
        max_inline_data: MAX_INLINE,
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
                recvs: VecDeque::new(),
                staging: None,
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
        let QpEntry { qp, pd, send_cq, recv_cq, link, staging, .. } = entry;
        // The device stops using the QP before its staging region (in its PD) goes.
        drop(qp);
        drop(staging);
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
            entry.recvs.clear();
            if let Some(s) = entry.staging.as_mut() {
                s.clear();
            }
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

/// What staging a QP's requests needs: the QP, its PD and device, the program's MRs.
struct ToStage<'a> {
    entry: &'a mut QpEntry,
    pd: &'static ProtectionDomain<'static, DynHal>,
    dev: &'static Dev,
    mrs: &'a HashMap<usize, MrEntry>,
}

impl<'a> ToStage<'a> {
    /// QP `key` of `st`; EINVAL for a QP that is not there.
    fn of(st: &'a mut State, key: usize) -> Result<ToStage<'a>, c_int> {
        let dev = st.dev_static();
        let entry = st.qps.get_mut(&key).ok_or(libc::EINVAL)?;
        // SAFETY: a PD is freed only once no QP uses it; the staging that borrows it is
        // dropped with its QP.
        let pd = unsafe { st.pds.get(&entry.pd).expect("a QP's PD lives").pd.borrow() };
        Ok(ToStage { entry, pd, dev, mrs: &st.mrs })
    }

    /// Stages a request's local octets ([`crate::staging`]) and points the request at
    /// them (`set`).
    fn stage(&mut self, queue: Queue, local: Local, set: impl FnOnce(Sge)) -> Result<Staged, c_int> {
        let (sges, octets, written) = match local {
            Local::Direct => return Ok(Staged::default()),
            Local::Gather(sges) => (sges, None, false),
            Local::Inline(octets) => (Vec::new(), Some(octets), false),
            Local::Scatter(sges) => (sges, None, true),
        };
        staging::check(&self.entry.qp, &sges, written)?;
        let len = match &octets {
            Some(o) => o.len() as u32,
            None => staging::total(&sges)?,
        };
        let staging = match &mut self.entry.staging {
            Some(s) => s,
            none => none.insert(Staging::new(self.dev, self.pd)?),
        };
        let slot = staging.alloc(queue, len)?;
        match octets {
            Some(o) => staging.write(slot.at, &o),
            None if !written => staging::gather(staging, slot, &sges, self.mrs.values()),
            None => {}
        }
        set(staging.sge(slot));
        Ok(Staged { slot: Some(slot), scatter: if written { sges } else { Vec::new() } })
    }
}

/// Takes back the slots of requests that were not posted.
fn unstage(entry: &mut QpEntry, queue: Queue, mark: Option<u64>) {
    if let Some(s) = entry.staging.as_mut() {
        s.undo(queue, mark.unwrap_or(0));
    }
}

/// Posts translated send requests: RTS (or ERROR, where the device flushes them) only.
/// On error, the index of the first request not posted and why.
fn post_sends(
    st: &mut State,
    key: usize,
    wrs: Vec<(WorkRequest, sys::ibv_wc_opcode, Local)>,
) -> Result<(), (usize, c_int)> {
    let mut qp = ToStage::of(st, key).map_err(|e| (0, e))?;
    if !matches!(qp.entry.state, sys::IBV_QPS_RTS | sys::IBV_QPS_ERR) {
        return Err((0, libc::EINVAL));
    }
    let mark = qp.entry.staging.as_ref().map(|s| s.mark(Queue::Send));
    let (mut reqs, mut records, mut refused) = (Vec::new(), Vec::new(), None);
    for (i, (mut wr, opcode, local)) in wrs.into_iter().enumerate() {
        let set = |sge| *wr.local_mut().expect("staged requests have a buffer") = sge;
        match qp.stage(Queue::Send, local, set) {
            Ok(staged) => {
                reqs.push(wr);
                records.push(SendRecord { wr_id: wr.wr_id(), opcode, staged });
            }
            Err(e) => {
                refused = Some((i, e));
                break;
            }
        }
    }
    let entry = qp.entry;
    if let Err(e) = entry.qp.post_send_batch(&reqs) {
        unstage(entry, Queue::Send, mark);
        return Err((0, errno::of(&e)));
    }
    let room = 2 * entry.caps.max_send_wr as usize;
    for record in records {
        if entry.posted.len() == room {
            // Older than every request the SQ can hold: long done.
            let old = entry.posted.pop_front().expect("full");
            if let (Some(slot), Some(s)) = (old.staged.slot, entry.staging.as_mut()) {
                s.release(Queue::Send, slot);
            }
        }
        entry.posted.push_back(record);
    }
    refused.map_or(Ok(()), Err)
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
    let (mut reqs, mut taken) = (Vec::new(), Vec::new());
    let mut bad = None;
    let mut at = wr;
    while !at.is_null() {
        // SAFETY: the caller's list of readable requests, each with its SGEs (and its
        // inline octets).
        match unsafe { convert::send_wr(&*at, sig_all) } {
            Ok(r) => {
                reqs.push(r);
                taken.push(at);
            }
            Err(e) => {
                bad = Some((at, e));
                break;
            }
        }
        // SAFETY: as above.
        at = unsafe { (*at).next };
    }
    let posted = engine.call(move |st| post_sends(st, key, reqs)).unwrap_or_else(|g| Err((0, gone(g))));
    // SAFETY: the caller's out pointer.
    unsafe { post_answer(posted, bad, &taken, bad_wr) }
}

/// What a post returns: 0, or the errno with `*bad_wr` at the first request not posted:
/// the one the device thread stopped at (an index into `taken`, the requests translated),
/// else the one that could not be translated.
///
/// # Safety
///
/// `bad_wr` must be NULL or writable.
unsafe fn post_answer<W>(
    posted: Result<(), (usize, c_int)>,
    refused: Option<(*mut W, c_int)>,
    taken: &[*mut W],
    bad_wr: *mut *mut W,
) -> c_int {
    let (first_bad, e) = match (posted, refused) {
        (Err((i, e)), refused) => (taken.get(i).copied().or(refused.map(|r| r.0)).unwrap_or(std::ptr::null_mut()), e),
        (Ok(()), Some((at, e))) => (at, e),
        (Ok(()), None) => return 0,
    };
    if !bad_wr.is_null() {
        // SAFETY: the caller's promise.
        unsafe { *bad_wr = first_bad };
    }
    e
}

/// Posts receives: to the device in RTS or ERROR, kept for RTS in INIT and RTR. On
/// error, the index of the first request not posted and why.
fn post_recvs(st: &mut State, key: usize, rrs: Vec<(RecvRequest, Local)>) -> Result<(), (usize, c_int)> {
    let mut qp = ToStage::of(st, key).map_err(|e| (0, e))?;
    let early = match qp.entry.state {
        sys::IBV_QPS_INIT | sys::IBV_QPS_RTR => true,
        sys::IBV_QPS_RTS | sys::IBV_QPS_ERR => false,
        _ => return Err((0, libc::EINVAL)),
    };
    if early && qp.entry.early_recvs.len() + rrs.len() > qp.entry.caps.max_recv_wr as usize {
        return Err((0, libc::ENOMEM));
    }
    let mark = qp.entry.staging.as_ref().map(|s| s.mark(Queue::Recv));
    let (mut reqs, mut records, mut refused) = (Vec::new(), Vec::new(), None);
    for (i, (mut rr, local)) in rrs.into_iter().enumerate() {
        match qp.stage(Queue::Recv, local, |sge| rr.local = sge) {
            Ok(staged) => {
                reqs.push(rr);
                records.push(staged);
            }
            Err(e) => {
                refused = Some((i, e));
                break;
            }
        }
    }
    let entry = qp.entry;
    if early {
        entry.early_recvs.extend(reqs);
    } else if let Err(e) = entry.qp.post_recv_batch(&reqs) {
        unstage(entry, Queue::Recv, mark);
        return Err((0, errno::of(&e)));
    }
    entry.recvs.extend(records);
    refused.map_or(Ok(()), Err)
}

/// `ibv_post_recv` (through `ops`).
pub(crate) unsafe extern "C" fn post_recv(
    qp: *mut sys::ibv_qp,
    wr: *mut sys::ibv_recv_wr,
    bad_wr: *mut *mut sys::ibv_recv_wr,
) -> c_int {
    let key = qp as usize;
    let (mut rrs, mut taken) = (Vec::new(), Vec::new());
    let mut bad = None;
    let mut at = wr;
    while !at.is_null() {
        // SAFETY: the caller's list of readable requests, each with its SGEs.
        match unsafe { convert::recv_local((*at).sg_list, (*at).num_sge) } {
            Ok((local, staged)) => {
                // SAFETY: as above.
                rrs.push((RecvRequest { wr_id: unsafe { (*at).wr_id }, local }, staged));
                taken.push(at);
            }
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
    let posted = engine.call(move |st| post_recvs(st, key, rrs)).unwrap_or_else(|g| Err((0, gone(g))));
    // SAFETY: the caller's out pointer.
    unsafe { post_answer(posted, bad, &taken, bad_wr) }
}

/// Posts one request built by a direct verb ([`crate::dv`]).
pub(crate) fn post_one(qp: *mut sys::ibv_qp, wr: WorkRequest, opcode: sys::ibv_wc_opcode) -> c_int {
    let key = qp as usize;
    // SAFETY: a live QP of a live context (the direct verb's caller's promise).
    let engine = &unsafe { context((*qp).context) }.engine;
    match engine.call(move |st| post_sends(st, key, vec![(wr, opcode, Local::Direct)])) {
        Ok(Ok(())) => 0,
        Ok(Err((_, e))) => e,
        Err(g) => gone(g),
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
        i.cap.max_send_sge = MAX_SGE + 1;
        assert_eq!(caps(&i).err(), Some(libc::EINVAL));
        let mut i = init(1, 1);
        i.cap.max_inline_data = MAX_INLINE + 1;
        assert_eq!(caps(&i).err(), Some(libc::EINVAL));
        assert_eq!(caps(&init(1 << 16, 1)).err(), Some(libc::EINVAL));
    }
}
