//! Queue pairs: an SQ and an RQ in host memory, their doorbells, and the QP's state.
//!
//! # When a slot may be reused
//!
//! The host may overwrite a slot once the device has *taken* its WQE, and QUERY_QP reports
//! how many it has taken (`sq_ci`, `rq_ci`; `docs/REGISTERS.md`). The driver counts the
//! slots free by the last consumer index it knows, and only when a post finds too few
//! does it ask the device again with QUERY_QP. If there are still too few, the post fails
//! with [`DriverError::QueueFull`] and nothing is written.
//!
//! Completions are not used for this: a CQE does not say which slot it belongs to, and
//! unsignaled requests, error flushes and CQEs left over from an earlier QP with the same
//! number would all make a count of completions wrong. The cost is one command each time
//! the ring looks full: while the device keeps up, at most once per ring's worth of posts.
//!
//! # What a post checks
//!
//! A post is all or nothing: before a WQE is written, every request is checked and the
//! first problem is returned as a [`DriverError`]. The QP must not be in RESET (RTS and
//! ERROR take work; in ERROR the device flushes it). Each local buffer must lie in a live
//! memory region of the QP's PD, with LOCAL_WRITE where the device writes it (see
//! [`crate::Sge`]); a Read or atomic needs ORD of at least 1 and atomics and Immediate
//! Data the device's features; a batch must fit the ring at all
//! ([`DriverError::BatchTooLarge`]) and then in its free slots
//! ([`DriverError::QueueFull`]).
//!
//! # Errors the device finds
//!
//! A QP goes to ERROR on its own when it receives a Terminate, or sends one for an error
//! it found in the peer's traffic or its own work. Its work then completes with an error
//! status or FLUSHED, and [`QueuePair::error`] says why, with the Terminate's codes.
use std::marker::PhantomData;
use std::sync::atomic::{fence, Ordering};

use rnic_proto::host::context::{QpContext, QpState, QpStatus, MAX_READS};
use rnic_proto::host::desc::{RQ_WQE_LEN, SQ_WQE_SLOT_LEN};
use rnic_proto::host::regs::{self, CmdOpcode};

use crate::error::{DriverError, QpError, Resource, WorkQueue};
use crate::ring::WorkRing;
use crate::wr::{LocalBuffer, RecvRequest, Sge, WorkRequest};
use crate::{CompletionQueue, Device, Hal, ProtectionDomain};

/// What a QP is created with.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct QpCaps {
    /// The SQ has `2^sq_log_size` slots.
    pub sq_log_size: u8,
    /// The RQ has `2^rq_log_size` slots.
    pub rq_log_size: u8,
    /// Largest ULPDU in octets, DDP and RDMAP headers included (at least 128).
    pub mulpdu: u16,
    /// Inbound RDMA Read Requests accepted at once.
    pub ird: u8,
    /// Outbound RDMA Read Requests issued at once.
    pub ord: u8,
    /// MPA CRC32c on this connection.
    pub crc: bool,
    /// MPA markers on the FPDUs this QP sends (the peer asked for them, RFC 5044 §7.1.1).
    pub markers_tx: bool,
    /// MPA markers on the FPDUs this QP receives (this side asked for them).
    pub markers_rx: bool,
    /// The connection's id on the TCP streams (`tuser`).
    pub conn_id: u16,
}

impl Default for QpCaps {
    /// 64-slot queues, a 1024-octet MULPDU (an FPDU that fits a standard 1500-octet
    /// Ethernet MTU with its MPA framing), `MAX_READS` Reads each way (the most the RNIC
    /// allows), CRC on, markers off, connection 0.
    fn default() -> Self {
        QpCaps {
            sq_log_size: 6,
            rq_log_size: 6,
            mulpdu: 1024,
            ird: MAX_READS,
            ord: MAX_READS,
            crc: true,
            markers_tx: false,
            markers_rx: false,
            conn_id: 0,
        }
    }
}

/// What the setup of a connection decides for its QP ([`QueuePair::set_connection`]).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Connection {
    /// The connection's id on the TCP streams (`tuser`).
    pub conn_id: u16,
    /// MPA CRC32c.
    pub crc: bool,
    /// Markers on what this QP sends, and on what it receives.
    pub markers_tx: bool,
    pub markers_rx: bool,
    /// Inbound and outbound RDMA Read Requests at once.
    pub ird: u8,
    pub ord: u8,
}

/// A queue pair. Created in RESET; [`QueuePair::ready`] moves it to RTS.
///
/// It borrows its PD and CQs, so they outlive it. Dropping it writes RESET (the device
/// stops using the rings) before the rings are freed.
///
/// ```
/// # use rnic_driver::{CompletionQueue, Device, DriverError, Hal, ProtectionDomain, QpCaps, QueuePair};
/// # fn f<H: Hal>(dev: &Device<H>) -> Result<(), DriverError> {
/// let pd = ProtectionDomain::new(dev)?;
/// let cq = CompletionQueue::new(dev, 6, 0)?;
/// let mut qp = QueuePair::new(dev, &pd, &cq, &cq, QpCaps::default())?;
/// qp.ready()?;
/// drop(qp);
/// drop(cq);
/// # Ok(())
/// # }
/// ```
///
/// A destroyed (dropped) QP cannot be used, so nothing is posted under a QPN the driver
/// may already have handed to another QP:
///
/// ```compile_fail,E0382
/// # use rnic_driver::{CompletionQueue, Device, DriverError, Hal, ProtectionDomain, QpCaps, QueuePair};
/// # fn f<H: Hal>(dev: &Device<H>) -> Result<(), DriverError> {
/// # let pd = ProtectionDomain::new(dev)?;
/// # let cq = CompletionQueue::new(dev, 6, 0)?;
/// let mut qp = QueuePair::new(dev, &pd, &cq, &cq, QpCaps::default())?;
/// drop(qp);
/// qp.ready()?; // borrow of moved value
/// # Ok(())
/// # }
/// ```
///
/// Nor can its CQs (or PD) go while it lives:
///
/// ```compile_fail,E0505
/// # use rnic_driver::{CompletionQueue, Device, DriverError, Hal, ProtectionDomain, QpCaps, QueuePair};
/// # fn f<H: Hal>(dev: &Device<H>) -> Result<(), DriverError> {
/// # let pd = ProtectionDomain::new(dev)?;
/// # let cq = CompletionQueue::new(dev, 6, 0)?;
/// let mut qp = QueuePair::new(dev, &pd, &cq, &cq, QpCaps::default())?;
/// drop(cq); // cannot move out of `cq` because it is borrowed
/// qp.ready()?;
/// # Ok(())
/// # }
/// ```
pub struct QueuePair<'a, H: Hal> {
    dev: &'a Device<H>,
    qpn: u32,
    /// The context as last written.
    ctx: QpContext,
    sq: WorkRing<'a, H>,
    rq: WorkRing<'a, H>,
    _uses: PhantomData<(&'a ProtectionDomain<'a, H>, &'a CompletionQueue<'a, H>)>,
}

impl<'a, H: Hal> QueuePair<'a, H> {
    /// A QP of `dev` in `pd`, completing into `send_cq` and `recv_cq` (which may be the
    /// same CQ), in RESET.
    pub fn new(
        dev: &'a Device<H>,
        pd: &'a ProtectionDomain<'a, H>,
        send_cq: &'a CompletionQueue<'a, H>,
        recv_cq: &'a CompletionQueue<'a, H>,
        caps: QpCaps,
    ) -> Result<Self, DriverError> {
        if !pd.device().is(dev) {
            return Err(DriverError::ForeignObject("protection domain"));
        }
        if !send_cq.device().is(dev) || !recv_cq.device().is(dev) {
            return Err(DriverError::ForeignObject("completion queue"));
        }
        if (caps.markers_tx || caps.markers_rx) && !dev.info().features.markers {
            return Err(DriverError::Unsupported("MPA markers"));
        }
        if caps.crc && !dev.info().features.crc {
            return Err(DriverError::Unsupported("MPA CRCs"));
        }
        let mut ctx = QpContext {
            state: QpState::Rts,
            crc_enable: caps.crc,
            markers_tx: caps.markers_tx,
            markers_rx: caps.markers_rx,
            pd: pd.pdn(),
            conn_id: caps.conn_id,
            mulpdu: caps.mulpdu,
            send_cq: send_cq.cqn() as u16,
            recv_cq: recv_cq.cqn() as u16,
            sq_log_size: caps.sq_log_size,
            rq_log_size: caps.rq_log_size,
            ird: caps.ird,
            ord: caps.ord,
            sq_base: 0,
            rq_base: 0,
        };
        // Checked as for RTS, so that a MULPDU the QP could never run with fails here.
        ctx.validate().map_err(DriverError::InvalidQp)?;
        let sq = WorkRing::new(dev.hal(), "SQ", caps.sq_log_size, SQ_WQE_SLOT_LEN)?;
        let rq = WorkRing::new(dev.hal(), "RQ", caps.rq_log_size, RQ_WQE_LEN)?;
        ctx.state = QpState::Reset;
        ctx.sq_base = sq.iova();
        ctx.rq_base = rq.iova();
        let qpn = dev.alloc_number(Resource::QueuePair)?;
        if let Err(e) = dev.command(CmdOpcode::WriteQp, qpn, &ctx.to_words()) {
            dev.free_number(Resource::QueuePair, qpn);
            return Err(e);
        }
        Ok(QueuePair { dev, qpn, ctx, sq, rq, _uses: PhantomData })
    }

    /// The QP number.
    pub fn qpn(&self) -> u32 {
        self.qpn
    }

    /// The state the driver last wrote. The device moves a QP to ERROR on its own when
    /// a connection fails; [`QueuePair::error`] tells.
    pub fn state(&self) -> QpState {
        self.ctx.state
    }

    /// The context and status as the device holds them.
    pub fn query(&self) -> Result<(QpContext, QpStatus), DriverError> {
        self.dev.query_qp(self.qpn)
    }

    /// Why the QP stopped, asking the device (QUERY_QP): the Terminate it received or
    /// sent, with its layer, error type and code, or ERROR entered through
    /// [`QueuePair::modify`]. `None` while it works. Work posted to it now is flushed.
    pub fn error(&self) -> Result<Option<QpError>, DriverError> {
        let (ctx, status) = self.query()?;
        Ok(QpError::from_status(ctx.state, &status))
    }

    /// Sets the CONN_ID of a QP in RESET, the connection its FPDUs go out on, for when it
    /// is known only after the QP exists (the QP number of a peer on the same device, in
    /// loopback). Takes effect in the device at once.
    pub fn set_conn_id(&mut self, conn_id: u16) -> Result<(), DriverError> {
        if self.ctx.state != QpState::Reset {
            return Err(DriverError::ConnIdOutsideReset { qpn: self.qpn, state: self.ctx.state });
        }
        let ctx = QpContext { conn_id, ..self.ctx };
        self.dev.command(CmdOpcode::WriteQp, self.qpn, &ctx.to_words())?;
        self.ctx = ctx;
        Ok(())
    }

    /// Gives a QP in RESET what the setup of its connection decided (MPA, [`crate::cm`]):
    /// its CONN_ID, CRCs and markers each way, IRD and ORD. Takes effect in the device at
    /// once.
    pub fn set_connection(&mut self, conn: Connection) -> Result<(), DriverError> {
        if self.ctx.state != QpState::Reset {
            return Err(DriverError::ConnIdOutsideReset { qpn: self.qpn, state: self.ctx.state });
        }
        if (conn.markers_tx || conn.markers_rx) && !self.dev.info().features.markers {
            return Err(DriverError::Unsupported("MPA markers"));
        }
        if conn.crc && !self.dev.info().features.crc {
            return Err(DriverError::Unsupported("MPA CRCs"));
        }
        let ctx = QpContext {
            conn_id: conn.conn_id,
            crc_enable: conn.crc,
            markers_tx: conn.markers_tx,
            markers_rx: conn.markers_rx,
            ird: conn.ird,
            ord: conn.ord,
            ..self.ctx
        };
        QpContext { state: QpState::Rts, ..ctx }.validate().map_err(DriverError::InvalidQp)?;
        self.dev.command(CmdOpcode::WriteQp, self.qpn, &ctx.to_words())?;
        self.ctx = ctx;
        Ok(())
    }

    /// RESET → RTS: the QP starts sending and receiving.
    pub fn ready(&mut self) -> Result<(), DriverError> {
        self.modify(QpState::Rts)
    }

    /// Writes the QP's context in `state`. ERROR flushes outstanding work; RESET empties
    /// the queues, here and in the device. The device refuses ERROR → RTS (BAD_STATE): a
    /// QP leaves ERROR through RESET.
    pub fn modify(&mut self, state: QpState) -> Result<(), DriverError> {
        let ctx = QpContext { state, ..self.ctx };
        self.dev.command(CmdOpcode::WriteQp, self.qpn, &ctx.to_words())?;
        self.ctx = ctx;
        if state == QpState::Reset {
            self.sq.reset();
            self.rq.reset();
        }
        Ok(())
    }

    /// Posts one SQ work request.
    pub fn post_send(&mut self, wr: &WorkRequest) -> Result<(), DriverError> {
        self.post_send_batch(std::slice::from_ref(wr))
    }

    /// Posts SQ work requests, all or none, with one doorbell.
    pub fn post_send_batch(&mut self, wrs: &[WorkRequest]) -> Result<(), DriverError> {
        if wrs.is_empty() {
            return Ok(());
        }
        self.check_state()?;
        for wr in wrs {
            if let Some(feature) = wr.missing_feature(&self.dev.info().features) {
                return Err(DriverError::Unsupported(feature));
            }
            if wr.needs_ord() && self.ctx.ord == 0 {
                return Err(DriverError::NoReadCredits { qpn: self.qpn });
            }
            self.check_local(wr.local_buffer())?;
        }
        self.make_room(WorkQueue::Send, wrs.iter().map(WorkRequest::wqe_count).sum())?;
        for wqe in wrs.iter().flat_map(WorkRequest::wqes) {
            self.sq.push(&wqe.encode());
        }
        self.ring_doorbell(WorkQueue::Send);
        Ok(())
    }

    /// Posts one receive buffer.
    pub fn post_recv(&mut self, rr: &RecvRequest) -> Result<(), DriverError> {
        self.post_recv_batch(std::slice::from_ref(rr))
    }

    /// Posts receive buffers, all or none, with one doorbell.
    pub fn post_recv_batch(&mut self, rrs: &[RecvRequest]) -> Result<(), DriverError> {
        if rrs.is_empty() {
            return Ok(());
        }
        self.check_state()?;
        for rr in rrs {
            self.check_local(rr.local_buffer())?;
        }
        self.make_room(WorkQueue::Recv, rrs.len())?;
        for rr in rrs {
            self.rq.push(&rr.wqe().encode());
        }
        self.ring_doorbell(WorkQueue::Recv);
        Ok(())
    }

    /// RESET drops work, so nothing is posted then. ERROR takes it: the device flushes it.
    fn check_state(&self) -> Result<(), DriverError> {
        if self.ctx.state == QpState::Reset {
            return Err(DriverError::WrongState { qpn: self.qpn, state: self.ctx.state });
        }
        Ok(())
    }

    /// Checks `sge` as the device checks a local buffer of this QP that it reads, or writes
    /// when `write`: the lkey, the PD, the right, the bounds (an empty one always passes).
    /// For a layer that gathers several buffers into one it posts, or scatters one into
    /// several: each is checked as if it were posted.
    pub fn check_sge(&self, sge: Sge, write: bool) -> Result<(), DriverError> {
        self.check_local(LocalBuffer::of(sge, write))
    }

    /// Checks a local buffer against the device's live MRs.
    fn check_local(&self, buf: Option<LocalBuffer>) -> Result<(), DriverError> {
        buf.map_or(Ok(()), |buf| self.dev.check_local(self.qpn, self.ctx.pd, &buf))
    }

    /// Checks that `needed` WQEs may be posted to `queue` now (see the module docs).
    fn make_room(&mut self, queue: WorkQueue, needed: usize) -> Result<(), DriverError> {
        let capacity = self.ring_of(queue).capacity();
        if needed > capacity as usize {
            return Err(DriverError::BatchTooLarge { qpn: self.qpn, queue, needed, capacity });
        }
        if self.ring_of(queue).free() as usize >= needed {
            return Ok(());
        }
        let (_, status) = self.dev.query_qp(self.qpn)?;
        self.sq.set_ci(status.sq_ci);
        self.rq.set_ci(status.rq_ci);
        let free = self.ring_of(queue).free();
        if free as usize >= needed {
            return Ok(());
        }
        Err(DriverError::QueueFull { qpn: self.qpn, queue, needed, free })
    }

    fn ring_of(&self, queue: WorkQueue) -> &WorkRing<'a, H> {
        match queue {
            WorkQueue::Send => &self.sq,
            WorkQueue::Recv => &self.rq,
        }
    }

    /// Publishes the WQEs written so far: a release fence so that they are visible
    /// before the doorbell, then the absolute producer index.
    fn ring_doorbell(&self, queue: WorkQueue) {
        let (offset, pi) = match queue {
            WorkQueue::Send => (regs::sq_pi(self.qpn), self.sq.pi()),
            WorkQueue::Recv => (regs::rq_pi(self.qpn), self.rq.pi()),
        };
        fence(Ordering::Release);
        self.dev.hal().write32(offset, pi);
    }
}

impl<H: Hal> Drop for QueuePair<'_, H> {
    /// Writes RESET so that the device stops using the rings, which are freed after this.
    /// If the device does not confirm, the QPN stays out of the pool; the rings are
    /// unmapped anyway, so a late access faults at the IOMMU.
    fn drop(&mut self) {
        let ctx = QpContext { state: QpState::Reset, ..self.ctx };
        if self.dev.command(CmdOpcode::WriteQp, self.qpn, &ctx.to_words()).is_ok() {
            self.dev.free_number(Resource::QueuePair, self.qpn);
        }
    }
}

#[cfg(test)]
mod tests {
    use std::cell::Cell;
    use std::rc::Rc;

    use rnic_proto::host::context::{qp_fields, TermInfo};
    use rnic_proto::host::{RqWqe, SqOpcode, SqWqe};
    use rnic_proto::terminate::TermCode;

    use super::*;
    use crate::fake::FakeHal;
    use crate::testing::{model_device, model_device_features, model_device_patched};
    use crate::wr::{RemoteBuf, Sge};
    use crate::{MemoryRegion, MrAccess};

    const CAPS: QpCaps = QpCaps {
        sq_log_size: 2,
        rq_log_size: 3,
        mulpdu: 512,
        ird: 2,
        ord: 3,
        crc: true,
        markers_tx: true,
        markers_rx: false,
        conn_id: 77,
    };

    /// A Send of nothing: the device touches no memory for it, so it needs no MR, and the
    /// ring tests stay about rings.
    fn send(wr_id: u64) -> WorkRequest {
        let local = Sge { lkey: 0x0105, addr: 0x4000 + wr_id, length: 0 };
        WorkRequest::Send { wr_id, local, solicited: false, invalidate: None, signaled: true }
    }

    /// The values written to `offset`, in order.
    fn writes_to(dev: &Device<FakeHal>, offset: u32) -> Vec<u32> {
        dev.hal().take_writes().into_iter().filter(|&(o, _)| o == offset).map(|(_, v)| v).collect()
    }

    fn write(wr_id: u64, local: Sge) -> WorkRequest {
        WorkRequest::Write { wr_id, local, remote: RemoteBuf { stag: 0x0904, to: 0 }, signaled: true }
    }

    fn read(wr_id: u64, local: Sge) -> WorkRequest {
        WorkRequest::Read { wr_id, local, remote: RemoteBuf { stag: 0x0904, to: 0 }, signaled: true }
    }

    fn fetch_add(wr_id: u64, local: Sge) -> WorkRequest {
        let remote = RemoteBuf { stag: 0x0904, to: 0 };
        WorkRequest::FetchAdd { wr_id, local, remote, add: 1, add_mask: 0, signaled: true }
    }

    /// Asserts that a refused post left the SQ as it was: no WQE written, no doorbell.
    fn assert_nothing_posted(dev: &Device<FakeHal>, qp: &QueuePair<'_, FakeHal>, pi: u32) {
        assert_eq!(qp.sq.pi(), pi, "the producer index moved");
        assert_eq!(qp.sq.slot(pi), [0; SQ_WQE_SLOT_LEN], "a WQE was written");
        assert_eq!(writes_to(dev, regs::sq_pi(qp.qpn())), [] as [u32; 0], "the doorbell rang");
    }

    #[test]
    fn a_qp_asking_for_mpa_options_the_device_lacks_is_refused() {
        let dev = model_device_features(0);
        let pd = ProtectionDomain::new(&dev).expect("pd");
        let cq = CompletionQueue::new(&dev, 2, 0).expect("cq");
        let refused = |caps| QueuePair::new(&dev, &pd, &cq, &cq, caps).err();
        assert!(matches!(refused(CAPS), Some(DriverError::Unsupported("MPA markers"))));
        assert!(matches!(refused(QpCaps { markers_tx: false, ..CAPS }), Some(DriverError::Unsupported("MPA CRCs"))));
        assert!(refused(QpCaps { markers_tx: false, crc: false, ..CAPS }).is_none());
    }

    #[test]
    fn a_new_qp_is_written_in_reset_with_its_caps_rings_and_cqs() {
        let dev = model_device();
        let pd = ProtectionDomain::new(&dev).expect("pd");
        let (scq, rcq) = (CompletionQueue::new(&dev, 2, 0).expect("cq"), CompletionQueue::new(&dev, 2, 0).expect("cq"));
        let qp = QueuePair::new(&dev, &pd, &scq, &rcq, CAPS).expect("qp");
        let (ctx, _) = qp.query().expect("query");
        assert_eq!(
            ctx,
            QpContext {
                state: QpState::Reset,
                crc_enable: true,
                markers_tx: true,
                markers_rx: false,
                pd: pd.pdn(),
                conn_id: 77,
                mulpdu: 512,
                send_cq: scq.cqn() as u16,
                recv_cq: rcq.cqn() as u16,
                sq_log_size: 2,
                rq_log_size: 3,
                ird: 2,
                ord: 3,
                sq_base: qp.sq.iova(),
                rq_base: qp.rq.iova(),
            }
        );
        assert_eq!(qp.state(), QpState::Reset);
    }

    #[test]
    fn post_send_writes_the_encoded_wqe_then_rings_with_the_absolute_index() {
        let dev = model_device();
        let pd = ProtectionDomain::new(&dev).expect("pd");
        let cq = CompletionQueue::new(&dev, 2, 0).expect("cq");
        let mut qp = QueuePair::new(&dev, &pd, &cq, &cq, CAPS).expect("qp");
        qp.ready().expect("rts");
        let buf = dev.alloc_dma(64).expect("dma");
        let mr = MemoryRegion::register(&pd, &buf, MrAccess::default()).expect("mr");
        dev.hal().take_writes();
        let write = WorkRequest::Write {
            wr_id: 0xfeed,
            local: mr.sge(0x10, 3).expect("sge"),
            remote: RemoteBuf { stag: 0x0904, to: 0x99 },
            signaled: false,
        };
        qp.post_send(&write).expect("post");
        assert_eq!(qp.sq.slot(0), write.wqe().encode());
        assert_eq!(SqWqe::decode(&qp.sq.slot(0)).expect("decode").op(), Some(SqOpcode::RdmaWrite));
        assert_eq!(writes_to(&dev, regs::sq_pi(qp.qpn())), [1]);
        qp.post_send(&send(2)).expect("post");
        assert_eq!(qp.sq.slot(1), send(2).wqe().encode());
        assert_eq!(writes_to(&dev, regs::sq_pi(qp.qpn())), [2]);
    }

    #[test]
    fn post_recv_writes_the_encoded_wqe_then_rings_rq_pi() {
        let dev = model_device();
        let pd = ProtectionDomain::new(&dev).expect("pd");
        let cq = CompletionQueue::new(&dev, 2, 0).expect("cq");
        let mut qp = QueuePair::new(&dev, &pd, &cq, &cq, CAPS).expect("qp");
        qp.ready().expect("rts");
        dev.hal().take_writes();
        let buf = dev.alloc_dma(8192).expect("dma");
        let mr = MemoryRegion::register(&pd, &buf, MrAccess::ALL).expect("mr");
        let rr = RecvRequest { wr_id: 4, local: mr.sge(0x1000, 4096).expect("sge") };
        qp.post_recv(&rr).expect("post");
        assert_eq!(qp.rq.slot(0)[..], RqWqe::new(4, mr.lkey(), buf.iova() + 0x1000, 4096).encode());
        assert_eq!(writes_to(&dev, regs::rq_pi(qp.qpn())), [1]);
    }

    #[test]
    fn a_batch_rings_the_doorbell_once() {
        let dev = model_device();
        let pd = ProtectionDomain::new(&dev).expect("pd");
        let cq = CompletionQueue::new(&dev, 2, 0).expect("cq");
        let mut qp = QueuePair::new(&dev, &pd, &cq, &cq, CAPS).expect("qp");
        qp.ready().expect("rts");
        dev.hal().take_writes();
        qp.post_send_batch(&[send(1), send(2), send(3)]).expect("post");
        assert_eq!(writes_to(&dev, regs::sq_pi(qp.qpn())), [3]);
        for i in 0..3 {
            assert_eq!(qp.sq.slot(i), send(u64::from(i) + 1).wqe().encode(), "slot {i}");
        }
        qp.post_send_batch(&[]).expect("empty batch");
        assert!(dev.hal().take_writes().is_empty(), "an empty batch rings nothing");
    }

    #[test]
    fn a_full_send_queue_is_refused_until_the_device_has_taken_wqes() {
        let taken = Rc::new(Cell::new(0u32));
        let device_taken = Rc::clone(&taken);
        let dev = model_device_patched(move |op, out| {
            if op == CmdOpcode::QueryQp.code() {
                qp_fields::SQ_CI.set_word(out, device_taken.get().into());
            }
        });
        let pd = ProtectionDomain::new(&dev).expect("pd");
        let cq = CompletionQueue::new(&dev, 2, 0).expect("cq");
        let mut qp = QueuePair::new(&dev, &pd, &cq, &cq, CAPS).expect("qp");
        qp.ready().expect("rts");
        qp.post_send_batch(&[send(0), send(1), send(2), send(3)]).expect("four fit");
        dev.hal().take_writes();
        let err = qp.post_send(&send(4)).expect_err("the ring is full");
        assert!(matches!(err, DriverError::QueueFull { queue: WorkQueue::Send, needed: 1, free: 0, .. }), "{err}");
        let writes = dev.hal().take_writes();
        assert!(writes.contains(&(regs::CMD, CmdOpcode::QueryQp.word(qp.qpn()).unwrap())), "asked the device");
        assert!(!writes.iter().any(|&(o, _)| o == regs::sq_pi(qp.qpn())), "no doorbell");
        assert_eq!(qp.sq.slot(4), send(0).wqe().encode(), "the untaken WQE in slot 0 is intact");

        taken.set(2);
        qp.post_send_batch(&[send(4), send(5)]).expect("two slots taken");
        assert_eq!(writes_to(&dev, regs::sq_pi(qp.qpn())), [6]);
        let err = qp.post_send(&send(6)).expect_err("full again");
        assert!(matches!(err, DriverError::QueueFull { free: 0, .. }), "{err}");
    }

    #[test]
    fn a_batch_larger_than_the_free_slots_posts_nothing() {
        let dev = model_device();
        let pd = ProtectionDomain::new(&dev).expect("pd");
        let cq = CompletionQueue::new(&dev, 2, 0).expect("cq");
        let mut qp = QueuePair::new(&dev, &pd, &cq, &cq, CAPS).expect("qp");
        qp.ready().expect("rts");
        qp.post_send_batch(&[send(0), send(1)]).expect("post");
        let err = qp.post_send_batch(&[send(2), send(3), send(4)]).expect_err("3 > 2 free");
        assert!(matches!(err, DriverError::QueueFull { needed: 3, free: 2, .. }), "{err}");
        assert_eq!(qp.sq.pi(), 2);
        assert_eq!(qp.sq.slot(2), [0; SQ_WQE_SLOT_LEN], "nothing written");
    }

    #[test]
    fn posting_to_a_qp_in_reset_is_refused() {
        let dev = model_device();
        let pd = ProtectionDomain::new(&dev).expect("pd");
        let cq = CompletionQueue::new(&dev, 2, 0).expect("cq");
        let mut qp = QueuePair::new(&dev, &pd, &cq, &cq, CAPS).expect("qp");
        let err = qp.post_send(&send(1)).expect_err("in RESET");
        assert!(matches!(err, DriverError::WrongState { state: QpState::Reset, .. }), "{err}");
        let rr = RecvRequest { wr_id: 1, local: Sge { lkey: 1, addr: 0, length: 8 } };
        assert!(matches!(qp.post_recv(&rr), Err(DriverError::WrongState { .. })));
    }

    #[test]
    fn reset_empties_the_queues_so_indices_start_again_at_zero() {
        let dev = model_device();
        let pd = ProtectionDomain::new(&dev).expect("pd");
        let cq = CompletionQueue::new(&dev, 2, 0).expect("cq");
        let mut qp = QueuePair::new(&dev, &pd, &cq, &cq, CAPS).expect("qp");
        qp.ready().expect("rts");
        qp.post_send_batch(&[send(1), send(2)]).expect("post");
        qp.modify(QpState::Error).expect("error");
        qp.post_send(&send(3)).expect("ERROR takes work (it flushes)");
        let err = qp.ready().expect_err("ERROR -> RTS");
        assert!(matches!(err, DriverError::Rejected { reason: crate::Rejection::BadState, .. }), "{err}");
        assert_eq!(qp.state(), QpState::Error, "a refused change changes nothing");
        qp.modify(QpState::Reset).expect("reset");
        qp.ready().expect("rts");
        dev.hal().take_writes();
        qp.post_send(&send(9)).expect("post");
        assert_eq!(writes_to(&dev, regs::sq_pi(qp.qpn())), [1]);
        assert_eq!(qp.sq.slot(0), send(9).wqe().encode());
    }

    #[test]
    fn bad_caps_are_refused_before_anything_is_allocated() {
        let dev = model_device();
        let pd = ProtectionDomain::new(&dev).expect("pd");
        let cq = CompletionQueue::new(&dev, 2, 0).expect("cq");
        let err = QueuePair::new(&dev, &pd, &cq, &cq, QpCaps { mulpdu: 127, ..CAPS }).err().expect("MULPDU");
        assert!(matches!(err, DriverError::InvalidQp(_)), "{err}");
        let err = QueuePair::new(&dev, &pd, &cq, &cq, QpCaps { rq_log_size: 17, ..CAPS }).err().expect("RQ size");
        assert!(matches!(err, DriverError::QueueTooLarge { queue: "RQ", .. }), "{err}");
        assert_eq!(dev.hal().live_regions(), 1, "only the CQ's ring");
    }

    #[test]
    fn objects_of_another_device_are_refused() {
        let (dev, other) = (model_device(), model_device());
        let pd = ProtectionDomain::new(&dev).expect("pd");
        let cq = CompletionQueue::new(&dev, 2, 0).expect("cq");
        let foreign_cq = CompletionQueue::new(&other, 2, 0).expect("cq");
        let err = QueuePair::new(&dev, &pd, &cq, &foreign_cq, CAPS).err().expect("foreign CQ");
        assert!(matches!(err, DriverError::ForeignObject("completion queue")), "{err}");
        let err = QueuePair::new(&other, &pd, &foreign_cq, &foreign_cq, CAPS).err().expect("foreign PD");
        assert!(matches!(err, DriverError::ForeignObject("protection domain")), "{err}");
    }

    #[test]
    fn dropping_a_qp_resets_it_and_frees_its_rings_and_number() {
        let dev = model_device();
        let pd = ProtectionDomain::new(&dev).expect("pd");
        let cq = CompletionQueue::new(&dev, 2, 0).expect("cq");
        let mut qp = QueuePair::new(&dev, &pd, &cq, &cq, CAPS).expect("qp");
        qp.ready().expect("rts");
        let qpn = qp.qpn();
        assert_eq!(dev.hal().live_regions(), 3);
        drop(qp);
        assert_eq!(dev.query_qp(qpn).expect("query").0.state, QpState::Reset);
        assert_eq!(dev.hal().live_regions(), 1);
        assert_eq!(QueuePair::new(&dev, &pd, &cq, &cq, CAPS).expect("qp").qpn(), qpn);
    }

    #[test]
    fn an_sge_whose_lkey_no_live_mr_has_is_refused() {
        let dev = model_device();
        let pd = ProtectionDomain::new(&dev).expect("pd");
        let cq = CompletionQueue::new(&dev, 2, 0).expect("cq");
        let mut qp = QueuePair::new(&dev, &pd, &cq, &cq, CAPS).expect("qp");
        qp.ready().expect("rts");
        let buf = dev.alloc_dma(256).expect("dma");
        let (deregistered, dropped) = (
            MemoryRegion::register(&pd, &buf, MrAccess::ALL).expect("mr"),
            MemoryRegion::register(&pd, &buf, MrAccess::ALL).expect("mr"),
        );
        let (stale, gone) = (deregistered.sge(0, 64).expect("sge"), dropped.sge(0, 64).expect("sge"));
        deregistered.deregister().expect("deregister");
        drop(dropped);
        let never = Sge { lkey: 0x0700, addr: buf.iova(), length: 64 };
        dev.hal().take_writes();
        for sge in [never, stale, gone] {
            let err = qp.post_send(&write(1, sge)).expect_err("no such MR");
            assert!(matches!(err, DriverError::UnknownLkey { lkey } if lkey == sge.lkey), "{err}");
            let err = qp.post_recv(&RecvRequest { wr_id: 2, local: sge }).expect_err("no such MR");
            assert!(matches!(err, DriverError::UnknownLkey { .. }), "{err}");
        }
        assert_nothing_posted(&dev, &qp, 0);
        assert_eq!(qp.rq.pi(), 0);
    }

    #[test]
    fn an_sge_of_an_mr_in_another_pd_is_refused() {
        let dev = model_device();
        let (pd, other_pd) = (ProtectionDomain::new(&dev).expect("pd"), ProtectionDomain::new(&dev).expect("pd"));
        let cq = CompletionQueue::new(&dev, 2, 0).expect("cq");
        let mut qp = QueuePair::new(&dev, &pd, &cq, &cq, CAPS).expect("qp");
        qp.ready().expect("rts");
        let buf = dev.alloc_dma(256).expect("dma");
        let foreign = MemoryRegion::register(&other_pd, &buf, MrAccess::ALL).expect("mr");
        dev.hal().take_writes();
        let err = qp.post_send(&write(1, foreign.sge(0, 8).expect("sge"))).expect_err("another PD");
        let (qpn, lkey, mr_pd, qp_pd) = (qp.qpn(), foreign.lkey(), other_pd.pdn(), pd.pdn());
        assert!(
            matches!(err, DriverError::WrongPd { qpn: q, lkey: l, mr_pd: m, qp_pd: p } if (q, l, m, p) == (qpn, lkey, mr_pd, qp_pd)),
            "{err}"
        );
        assert_nothing_posted(&dev, &qp, 0);
        let own = MemoryRegion::register(&pd, &buf, MrAccess::ALL).expect("mr");
        qp.post_send(&write(1, own.sge(0, 8).expect("sge"))).expect("the QP's own PD");
    }

    #[test]
    fn a_hand_built_sge_beyond_its_mr_is_refused_and_one_at_its_very_end_is_posted() {
        let dev = model_device();
        let pd = ProtectionDomain::new(&dev).expect("pd");
        let cq = CompletionQueue::new(&dev, 2, 0).expect("cq");
        let mut qp = QueuePair::new(&dev, &pd, &cq, &cq, CAPS).expect("qp");
        qp.ready().expect("rts");
        let buf = dev.alloc_dma(4096).expect("dma");
        let mr = MemoryRegion::register_range(&pd, &buf, 1024, 256, MrAccess::ALL).expect("mr");
        let at = |addr: u64, length: u32| Sge { lkey: mr.lkey(), addr, length };
        let (va, end) = (mr.va(), mr.va() + 256);
        dev.hal().take_writes();
        for (sge, what) in [
            (at(va - 1, 8), "starts before the region"),
            (at(end - 8, 9), "ends past it"),
            (at(end, 1), "starts at its end"),
            (at(va, 257), "longer than the region"),
            (at(u64::MAX - 3, 8), "runs past 2^64"),
        ] {
            let err = qp.post_send(&write(1, sge)).expect_err(what);
            let want = (mr.lkey(), sge.addr, u64::from(sge.length), va, 256);
            assert!(
                matches!(err, DriverError::SgeOutOfBounds { lkey, addr, len, va, size } if (lkey, addr, len, va, size) == want),
                "{what}: {err}"
            );
        }
        assert_nothing_posted(&dev, &qp, 0);
        qp.post_send_batch(&[write(1, at(va, 256)), write(2, at(end - 1, 1))]).expect("inside, up to the last octet");
        assert_eq!(qp.sq.pi(), 2);
    }

    #[test]
    fn buffers_the_device_writes_need_local_write() {
        let dev = model_device();
        let pd = ProtectionDomain::new(&dev).expect("pd");
        let cq = CompletionQueue::new(&dev, 2, 0).expect("cq");
        let mut qp = QueuePair::new(&dev, &pd, &cq, &cq, CAPS).expect("qp");
        qp.ready().expect("rts");
        let buf = dev.alloc_dma(256).expect("dma");
        let read_only =
            MemoryRegion::register(&pd, &buf, MrAccess { local_write: false, ..MrAccess::ALL }).expect("mr");
        let sge = read_only.sge(0, 64).expect("sge");
        dev.hal().take_writes();
        for wr in [read(1, sge), fetch_add(2, sge)] {
            let err = qp.post_send(&wr).expect_err("the device would write it");
            assert!(matches!(err, DriverError::NoLocalWrite { lkey } if lkey == read_only.lkey()), "{err}");
        }
        let err = qp.post_recv(&RecvRequest { wr_id: 3, local: sge }).expect_err("a receive buffer");
        assert!(matches!(err, DriverError::NoLocalWrite { .. }), "{err}");
        assert_nothing_posted(&dev, &qp, 0);
        let send = WorkRequest::Send { wr_id: 4, local: sge, solicited: false, invalidate: None, signaled: true };
        qp.post_send_batch(&[send, write(5, sge)]).expect("sources are only read");
    }

    #[test]
    fn an_atomic_result_buffer_is_checked_as_eight_octets_whatever_its_length_says() {
        let dev = model_device();
        let pd = ProtectionDomain::new(&dev).expect("pd");
        let cq = CompletionQueue::new(&dev, 2, 0).expect("cq");
        let mut qp = QueuePair::new(&dev, &pd, &cq, &cq, CAPS).expect("qp");
        qp.ready().expect("rts");
        let buf = dev.alloc_dma(64).expect("dma");
        let mr = MemoryRegion::register(&pd, &buf, MrAccess::ALL).expect("mr");
        let last_four = Sge { lkey: mr.lkey(), addr: mr.va() + 60, length: 0 };
        let err = qp.post_send(&fetch_add(1, last_four)).expect_err("8 octets do not fit in 4");
        assert!(matches!(err, DriverError::SgeOutOfBounds { len: 8, .. }), "{err}");
        let unregistered = Sge { lkey: 0x0700, addr: 0, length: 0 };
        let err = qp.post_send(&fetch_add(1, unregistered)).expect_err("even with length 0");
        assert!(matches!(err, DriverError::UnknownLkey { .. }), "{err}");
        let last_eight = Sge { lkey: mr.lkey(), addr: mr.va() + 56, length: 0 };
        qp.post_send(&fetch_add(2, last_eight)).expect("8 octets fit");
    }

    #[test]
    fn zero_length_buffers_and_immediate_data_need_no_memory_region() {
        let dev = model_device();
        let pd = ProtectionDomain::new(&dev).expect("pd");
        let cq = CompletionQueue::new(&dev, 2, 0).expect("cq");
        let mut qp = QueuePair::new(&dev, &pd, &cq, &cq, CAPS).expect("qp");
        qp.ready().expect("rts");
        let nothing = Sge { lkey: 0, addr: 0, length: 0 };
        let imm = WorkRequest::Immediate { wr_id: 3, data: [1; 8], solicited: false, signaled: true };
        qp.post_send_batch(&[send(1), write(2, nothing), read(3, nothing), imm]).expect("nothing to check");
        qp.post_recv(&RecvRequest { wr_id: 4, local: nothing }).expect("an empty receive buffer");
        assert_eq!((qp.sq.pi(), qp.rq.pi()), (4, 1));
    }

    #[test]
    fn device_memory_regions_are_checked_like_host_ones() {
        let dev = model_device();
        let pd = ProtectionDomain::new(&dev).expect("pd");
        let cq = CompletionQueue::new(&dev, 2, 0).expect("cq");
        let mut qp = QueuePair::new(&dev, &pd, &cq, &cq, CAPS).expect("qp");
        qp.ready().expect("rts");
        let dm = dev.alloc_device_memory(64).expect("device memory");
        let mr = MemoryRegion::register_device(&pd, &dm, MrAccess::ALL).expect("mr");
        qp.post_send(&fetch_add(1, mr.sge(56, 8).expect("sge"))).expect("inside");
        let past = Sge { lkey: mr.lkey(), addr: dm.iova() + 60, length: 8 };
        let err = qp.post_send(&read(2, past)).expect_err("past the end");
        assert!(matches!(err, DriverError::SgeOutOfBounds { .. }), "{err}");
        let sge = mr.sge(0, 8).expect("sge");
        drop(mr);
        let err = qp.post_send(&read(3, sge)).expect_err("deregistered");
        assert!(matches!(err, DriverError::UnknownLkey { .. }), "{err}");
    }

    #[test]
    fn a_batch_with_one_bad_request_posts_nothing() {
        let dev = model_device();
        let pd = ProtectionDomain::new(&dev).expect("pd");
        let cq = CompletionQueue::new(&dev, 2, 0).expect("cq");
        let mut qp = QueuePair::new(&dev, &pd, &cq, &cq, CAPS).expect("qp");
        qp.ready().expect("rts");
        let buf = dev.alloc_dma(64).expect("dma");
        let mr = MemoryRegion::register(&pd, &buf, MrAccess::ALL).expect("mr");
        let good = mr.sge(0, 8).expect("sge");
        let bad = Sge { length: 65, ..good };
        dev.hal().take_writes();
        let err = qp.post_send_batch(&[write(1, good), write(2, bad), write(3, good)]).expect_err("the second");
        assert!(matches!(err, DriverError::SgeOutOfBounds { len: 65, .. }), "{err}");
        assert_nothing_posted(&dev, &qp, 0);
        let rrs = [RecvRequest { wr_id: 1, local: good }, RecvRequest { wr_id: 2, local: bad }];
        assert!(matches!(qp.post_recv_batch(&rrs), Err(DriverError::SgeOutOfBounds { .. })));
        assert_eq!(qp.rq.pi(), 0);
        assert_eq!(writes_to(&dev, regs::rq_pi(qp.qpn())), [] as [u32; 0]);
    }

    #[test]
    fn a_batch_larger_than_the_ring_is_refused_without_asking_the_device() {
        let dev = model_device();
        let pd = ProtectionDomain::new(&dev).expect("pd");
        let cq = CompletionQueue::new(&dev, 2, 0).expect("cq");
        let mut qp = QueuePair::new(&dev, &pd, &cq, &cq, CAPS).expect("qp");
        qp.ready().expect("rts");
        dev.hal().take_writes();
        let five: Vec<_> = (0..5).map(send).collect();
        let err = qp.post_send_batch(&five).expect_err("5 > 4 slots");
        let qpn = qp.qpn();
        assert!(
            matches!(err, DriverError::BatchTooLarge { qpn: q, queue: WorkQueue::Send, needed: 5, capacity: 4 } if q == qpn),
            "{err}"
        );
        assert!(!dev.hal().take_writes().iter().any(|&(o, _)| o == regs::CMD), "no QUERY_QP");
        let nine: Vec<_> =
            (0..9).map(|wr_id| RecvRequest { wr_id, local: Sge { lkey: 0, addr: 0, length: 0 } }).collect();
        let err = qp.post_recv_batch(&nine).expect_err("9 > 8 slots");
        assert!(
            matches!(err, DriverError::BatchTooLarge { queue: WorkQueue::Recv, needed: 9, capacity: 8, .. }),
            "{err}"
        );
        qp.post_send_batch(&five[..4]).expect("four fit");

        let mut tiny = QueuePair::new(&dev, &pd, &cq, &cq, QpCaps { sq_log_size: 0, ..CAPS }).expect("qp");
        tiny.ready().expect("rts");
        let nothing = Sge { lkey: 0, addr: 0, length: 0 };
        let remote = RemoteBuf { stag: 1, to: 0 };
        let wwi = WorkRequest::WriteWithImmediate {
            wr_id: 1,
            local: nothing,
            remote,
            data: [0; 8],
            solicited: false,
            signaled: true,
        };
        let err = tiny.post_send(&wwi).expect_err("two WQEs, one slot");
        assert!(matches!(err, DriverError::BatchTooLarge { needed: 2, capacity: 1, .. }), "{err}");
    }

    #[test]
    fn reads_and_atomics_on_a_qp_without_ord_are_refused() {
        let dev = model_device();
        let pd = ProtectionDomain::new(&dev).expect("pd");
        let cq = CompletionQueue::new(&dev, 2, 0).expect("cq");
        let mut qp = QueuePair::new(&dev, &pd, &cq, &cq, QpCaps { ord: 0, ..CAPS }).expect("qp");
        qp.ready().expect("rts");
        let buf = dev.alloc_dma(64).expect("dma");
        let mr = MemoryRegion::register(&pd, &buf, MrAccess::ALL).expect("mr");
        let sge = mr.sge(0, 8).expect("sge");
        dev.hal().take_writes();
        for wr in [read(1, sge), fetch_add(2, sge)] {
            let err = qp.post_send(&wr).expect_err("it would stall the SQ");
            assert!(matches!(err, DriverError::NoReadCredits { qpn } if qpn == qp.qpn()), "{err}");
        }
        assert_nothing_posted(&dev, &qp, 0);
        qp.post_send(&write(3, sge)).expect("a Write needs no ORD");
    }

    #[test]
    fn atomics_and_immediate_data_need_the_device_features() {
        let dev = model_device_features(0b0011);
        let pd = ProtectionDomain::new(&dev).expect("pd");
        let cq = CompletionQueue::new(&dev, 2, 0).expect("cq");
        let mut qp = QueuePair::new(&dev, &pd, &cq, &cq, CAPS).expect("qp");
        qp.ready().expect("rts");
        let buf = dev.alloc_dma(64).expect("dma");
        let mr = MemoryRegion::register(&pd, &buf, MrAccess::ALL).expect("mr");
        let sge = mr.sge(0, 8).expect("sge");
        let err = qp.post_send(&fetch_add(1, sge)).expect_err("no atomics");
        assert!(matches!(err, DriverError::Unsupported("RFC 7306 atomics")), "{err}");
        let imm = WorkRequest::Immediate { wr_id: 2, data: [0; 8], solicited: false, signaled: true };
        let err = qp.post_send(&imm).expect_err("no Immediate Data");
        assert!(matches!(err, DriverError::Unsupported("RFC 7306 Immediate Data")), "{err}");
        assert_eq!(qp.sq.pi(), 0);
        qp.post_send(&read(3, sge)).expect("a Read is base RDMAP");
    }

    #[test]
    fn a_received_terminate_is_reported_with_its_codes_and_the_error_qp_still_takes_work() {
        let terminated = Rc::new(Cell::new(false));
        let device_terminated = Rc::clone(&terminated);
        let dev = model_device_patched(move |op, out| {
            if op == CmdOpcode::QueryQp.code() && device_terminated.get() {
                // The device's part: the peer's Terminate arrived and moved the QP to ERROR.
                let mut status = QpStatus::from_words(out);
                status.terminate = Some(TermInfo { code: TermCode::DDP_TAGGED_BASE_BOUNDS, received: true });
                status.write_words(out);
                qp_fields::STATE.set_word(out, QpState::Error as u64);
            }
        });
        let pd = ProtectionDomain::new(&dev).expect("pd");
        let cq = CompletionQueue::new(&dev, 2, 0).expect("cq");
        let mut qp = QueuePair::new(&dev, &pd, &cq, &cq, CAPS).expect("qp");
        qp.ready().expect("rts");
        assert_eq!(qp.error().expect("query"), None, "working");
        terminated.set(true);
        let err = qp.error().expect("query").expect("terminated");
        assert_eq!(
            err,
            QpError::Terminated { by_peer: true, code: TermCode::DDP_TAGGED_BASE_BOUNDS, state: QpState::Error }
        );
        assert_eq!(
            err.to_string(),
            "the peer sent Terminate 1/1/0x01 (DDP, Tagged Buffer Error): Base or bounds violation; the QP is in ERROR"
        );
        dev.hal().take_writes();
        qp.post_send(&send(1)).expect("ERROR takes work: the device flushes it");
        assert_eq!(writes_to(&dev, regs::sq_pi(qp.qpn())), [1]);
    }

    #[test]
    fn error_is_none_while_the_qp_works_and_flushed_after_the_host_moves_it_to_error() {
        let dev = model_device();
        let pd = ProtectionDomain::new(&dev).expect("pd");
        let cq = CompletionQueue::new(&dev, 2, 0).expect("cq");
        let mut qp = QueuePair::new(&dev, &pd, &cq, &cq, CAPS).expect("qp");
        assert_eq!(qp.error().expect("query"), None, "RESET");
        qp.ready().expect("rts");
        assert_eq!(qp.error().expect("query"), None, "RTS");
        qp.modify(QpState::Error).expect("error");
        assert_eq!(qp.error().expect("query"), Some(QpError::Flushed));
        qp.modify(QpState::Reset).expect("reset");
        assert_eq!(qp.error().expect("query"), None, "RESET again");
    }
}
