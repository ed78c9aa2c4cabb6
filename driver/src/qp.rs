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
use std::marker::PhantomData;
use std::sync::atomic::{fence, Ordering};

use rnic_proto::host::context::{QpContext, QpState, QpStatus};
use rnic_proto::host::desc::{RQ_WQE_LEN, SQ_WQE_SLOT_LEN};
use rnic_proto::host::regs::{self, CmdOpcode};

use crate::error::{DriverError, Resource, WorkQueue};
use crate::ring::WorkRing;
use crate::wr::{RecvRequest, WorkRequest};
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
    /// Ethernet MTU with its MPA framing), 4 Reads each way, CRC on, markers off,
    /// connection 0.
    fn default() -> Self {
        QpCaps { sq_log_size: 6, rq_log_size: 6, mulpdu: 1024, ird: 4, ord: 4, crc: true, markers_tx: false, markers_rx: false, conn_id: 0 }
    }
}

/// A queue pair. Created in RESET; [`QueuePair::ready`] moves it to RTS.
///
/// It borrows its PD and CQs, so they outlive it. Dropping it writes RESET (the device
/// stops using the rings) before the rings are freed.
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
    /// a connection fails; [`QueuePair::query`] tells.
    pub fn state(&self) -> QpState {
        self.ctx.state
    }

    /// The context and status as the device holds them.
    pub fn query(&self) -> Result<(QpContext, QpStatus), DriverError> {
        self.dev.query_qp(self.qpn)
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
        self.make_room(WorkQueue::Recv, rrs.len())?;
        for rr in rrs {
            self.rq.push(&rr.wqe().encode());
        }
        self.ring_doorbell(WorkQueue::Recv);
        Ok(())
    }

    /// Checks that `needed` WQEs may be posted to `queue` now (see the module docs).
    fn make_room(&mut self, queue: WorkQueue, needed: usize) -> Result<(), DriverError> {
        if self.ctx.state == QpState::Reset {
            return Err(DriverError::WrongState { qpn: self.qpn, state: self.ctx.state });
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

    use rnic_proto::host::context::qp_fields;
    use rnic_proto::host::{RqWqe, SqOpcode, SqWqe};

    use super::*;
    use crate::fake::FakeHal;
    use crate::testing::{model_device, model_device_features, model_device_patched};
    use crate::wr::{RemoteBuf, Sge};

    const CAPS: QpCaps =
        QpCaps { sq_log_size: 2, rq_log_size: 3, mulpdu: 512, ird: 2, ord: 3, crc: true, markers_tx: true, markers_rx: false, conn_id: 77 };

    fn send(wr_id: u64) -> WorkRequest {
        let local = Sge { lkey: 0x0105, addr: 0x4000 + wr_id, length: 64 };
        WorkRequest::Send { wr_id, local, solicited: false, invalidate: None, signaled: true }
    }

    /// The values written to `offset`, in order.
    fn writes_to(dev: &Device<FakeHal>, offset: u32) -> Vec<u32> {
        dev.hal().take_writes().into_iter().filter(|&(o, _)| o == offset).map(|(_, v)| v).collect()
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
        dev.hal().take_writes();
        let write = WorkRequest::Write {
            wr_id: 0xfeed,
            local: Sge { lkey: 0x0203, addr: 0x10, length: 3 },
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
        let rr = RecvRequest { wr_id: 4, local: Sge { lkey: 0x0102, addr: 0x2000, length: 4096 } };
        qp.post_recv(&rr).expect("post");
        assert_eq!(qp.rq.slot(0)[..], RqWqe::new(4, 0x0102, 0x2000, 4096).encode());
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
}
