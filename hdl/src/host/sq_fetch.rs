//! SQ fetch: which QP sends next, and its next WQEs from host memory.
//!
//! SQ_PI doorbells mark a QP pending and record its producer index `pi`. A round-robin
//! pick among pending QPs in RTS or ERROR (ERROR QPs still have their WQEs fetched, to be
//! completed as FLUSHED) reads the QP's context copy and its fetch index `fi`, and takes a
//! batch of up to `BATCH` (8) consecutive slots from `fi`. It asks the DMA read engine for
//! each slot's first 96 octets (64–95 are an atomic's operands), one request per slot,
//! back to back: the requests are in flight together, so a DMA round trip is paid per
//! batch rather than per message, and a slot's reserved 32 octets never take a beat of the
//! read data stream, which every DMA client shares. A batch stops at `pi` and at the ring's
//! last slot (the next one starts at slot 0). The next pick starts after this QP: with
//! several QPs loaded, each gets up to one batch per round, and a QP with more left stays
//! pending for the next round.
//!
//! WQEs wait in a 32-entry block-RAM queue, whose head goes through a register slice, and
//! leave one by one in ring order, with their QP, its context and their index, each as soon
//! as it has arrived. Four batches may be in
//! flight or queued at once (the next reads overlap handing on the last). A pick waits for
//! a free batch slot, which also reserves the queue room its data needs: the read data
//! stream is shared by every DMA client, and this block always takes its octets at once.
//! `fi` advances when a read is issued; `ci` (QUERY_QP's status) a cycle after the consumer
//! takes a WQE, so it counts WQEs started, never WQEs merely fetched.
//!
//! - A DMA error marks the WQE whose read had a beat with the error bit; the other WQEs of
//!   its batch, read on their own, go on as their reads went.
//! - A QP written in RESET forgets its indices at once, and its WQEs queued or still being
//!   read are dropped (their octets taken and discarded), the one on offer in that very
//!   cycle included. `fi` and `ci` are not written for it: per-QP bits make them read as
//!   zero, so a reset never competes with a fetch or a hand-on for a RAM write port. `pi`
//!   needs no such bit: a reset QP is not pending, and is picked again only after a
//!   doorbell has rewritten its `pi`. A write of the QP's context (reset or not) while it
//!   is being picked, from the cycle it is chosen on, restarts the pick, so the indices
//!   and context read are never older than the write.
//! - Writes of a QP's context while it has WQEs queued update the context they go on with.
//! - Clearing CONTROL.ENABLE stops new picks and holds the queued WQEs back (reads in
//!   flight still land), so a disabled device starts no WQE; they go on once it is set.
//! - A doorbell while its QP is being picked keeps the QP pending even if the pick read the
//!   older `pi`: the QP is looked at again in the next round.
//!
//! A batch slot is held from its read's issue until its last WQE is handed on: a 200-cycle
//! memory round trip plus its reads' 96 beats, some 310 cycles for eight WQEs. Two slots
//! capped the WQE rate at one per ~21 cycles whatever the number of QPs (Little's law:
//! 16 WQEs per round trip), below what the segmenter and the wire take of small messages
//! (atomics); four let the read data stream (12 beats a WQE) set the pace.
use rust_hdl::prelude::*;

use rnic_proto::host::context::{qp_fields, MAX_LOG_SIZE};
use rnic_proto::host::desc::{sq_wqe_fields, SqOpcode, SQ_WQE_LEN, SQ_WQE_SLOT_LEN};
use rnic_proto::host::Field;

use super::regs::DB_SQ;
use crate::common::{constant, RamFifo, RrArbiter, SkidBuffer};

/// Slots read per DMA request at most (1 KiB of ring).
const BATCH: u64 = 8;
/// Batches in flight or queued at once; the WQE queue holds all of them.
const BATCHES: usize = 4;

/// `QB` = QP index bits, `Q` = number of QPs (at most `1 << QB`).
#[derive(LogicBlock)]
pub struct SqFetch<const QB: usize, const Q: usize> {
    pub clock: Signal<In, Clock>,
    pub reset: Signal<In, Bit>,
    /// CONTROL.ENABLE: no WQE is fetched or handed on while clear.
    pub enable: Signal<In, Bit>,
    pub db_valid: Signal<In, Bit>,
    pub db_kind: Signal<In, Bits<2>>,
    pub db_index: Signal<In, Bits<16>>,
    pub db_value: Signal<In, Bits<32>>,
    pub qp_we: Signal<In, Bit>,
    pub qp_waddr: Signal<In, Bits<QB>>,
    pub qp_wdata: Signal<In, Bits<256>>,
    pub qp_reset: Signal<In, Bit>,
    pub qp_rts: Signal<In, Bits<Q>>,
    pub qp_error: Signal<In, Bits<Q>>,
    /// To the DMA read engine.
    pub m_req_valid: Signal<Out, Bit>,
    pub m_req_ready: Signal<In, Bit>,
    pub m_req_addr: Signal<Out, Bits<64>>,
    pub m_req_len: Signal<Out, Bits<32>>,
    pub s_rd_tdata: Signal<In, Bits<64>>,
    pub s_rd_tlast: Signal<In, Bit>,
    pub s_rd_tuser: Signal<In, Bits<9>>,
    pub s_rd_tvalid: Signal<In, Bit>,
    pub s_rd_tready: Signal<Out, Bit>,
    /// A WQE (its first 96 octets), its QP, the QP's context and the WQE's index; `error`
    /// if the DMA read failed.
    pub m_valid: Signal<Out, Bit>,
    pub m_ready: Signal<In, Bit>,
    pub m_wqe: Signal<Out, Bits<768>>,
    pub m_qpn: Signal<Out, Bits<QB>>,
    pub m_ctx: Signal<Out, Bits<256>>,
    pub m_index: Signal<Out, Bits<32>>,
    pub m_error: Signal<Out, Bit>,
    /// The WQE is an RDMA Read or an atomic, which waits for a free ORD slot of its QP:
    /// decoded as the WQE arrives, so the consumer's ready does not decode the offered WQE.
    pub m_ordered: Signal<Out, Bit>,
    /// QUERY_QP: the `ci` of QP `status_qpn`, one cycle later.
    pub status_qpn: Signal<In, Bits<QB>>,
    pub status_ci: Signal<Out, Bits<32>>,
    ctx: RAM<Bits<256>, QB>,
    pi: RAM<Bits<32>, QB>,
    /// The next slot to read, per QP.
    fi: RAM<Bits<32>, QB>,
    /// WQEs taken, per QP (only read by queries).
    ci: RAM<Bits<32>, QB>,
    /// Per QP: the word reads as zero (the QP was reset since it was last written). `pi`
    /// needs none: a QP is picked only after a doorbell, which writes it.
    fi_zero: DFF<Bits<Q>>,
    ci_zero: DFF<Bits<Q>>,
    /// A WQE taken last cycle (its QP and `ci` after it): `ci` and `ci_zero` are written a
    /// cycle after the take, so the take's handshake reaches no per-QP register.
    ci_take: DFF<Bit>,
    ci_qpn: DFF<Bits<QB>>,
    ci_value: DFF<Bits<32>>,
    pending: DFF<Bits<Q>>,
    // The pick: 0 choose, 1 read the QP, 2 and 3 size the batch, 4 decide, 5 request on
    // the bus.
    state: DFF<Bits<3>>,
    qpn: DFF<Bits<QB>>,
    /// The picked QP's context was written during the pick, from the cycle it was chosen.
    restart: DFF<Bit>,
    /// A doorbell for the picked QP came during the pick.
    db_hit: DFF<Bit>,
    /// Last cycle's context write, if any, and its QP.
    wrote: DFF<Bit>,
    wrote_qpn: DFF<Bits<QB>>,
    /// The batch being sized: its first index, the ring's slot mask, slots up to `pi`,
    /// whether that is all there is, whether there is any.
    sz_fi: DFF<Bits<32>>,
    sz_mask: DFF<Bits<32>>,
    sz_count: DFF<Bits<4>>,
    sz_all: DFF<Bit>,
    sz_any: DFF<Bit>,
    /// The batch as sized: slots, whether it takes all there is, its address.
    dec_count: DFF<Bits<4>>,
    dec_last: DFF<Bit>,
    dec_addr: DFF<Bits<64>>,
    /// `fi_zero` of the picked QP as of the RAM word read.
    snap_fi_zero: DFF<Bit>,
    status_zero: DFF<Bit>,
    req_valid: DFF<Bit>,
    req_addr: DFF<Bits<64>>,
    /// Slots of the batch still to request.
    req_left: DFF<Bits<4>>,
    // Batches, a ring of BATCHES slots: allocated at `issue`, handed on from `out`.
    b_busy: [DFF<Bit>; BATCHES],
    b_drop: [DFF<Bit>; BATCHES],
    b_qpn: [DFF<Bits<QB>>; BATCHES],
    b_ctx: [DFF<Bits<256>>; BATCHES],
    /// The index of the batch's next WQE to hand on, and how many are left.
    b_index: [DFF<Bits<32>>; BATCHES],
    b_left: [DFF<Bits<4>>; BATCHES],
    issue: DFF<Bits<2>>,
    out: DFF<Bits<2>>,
    /// `b_qpn` of the batch at `out`, in a register of its own: the consumer's ready
    /// depends on the offered WQE's QP (TxRequest's ORD check), and it pops the queue.
    out_qpn: DFF<Bits<QB>>,
    // Receiving: the WQE so far, whether any of its beats was bad.
    wqe_in: DFF<Bits<768>>,
    err_in: DFF<Bit>,
    /// WQEs (768 bits) with their error bit and whether they are ordered (bits 768 and
    /// 769), in ring order; the head through a register slice, so the consumer's checks
    /// start from registers, not from the block RAM's output, and its ready reaches the
    /// RAM's read address from a register.
    wqes: RamFifo<770, 5, 6>,
    wqes_out: SkidBuffer<770>,
    /// The round robin over QPs with work (pipelined: its grant is checked against the
    /// QPs with work now before it is taken).
    pick: RrArbiter<Q>,
    candidates: Signal<Local, Bits<Q>>,
    still_wanted: Signal<Local, Bit>,
    choose: Signal<Local, Bit>,
    slot_free: Signal<Local, Bit>,
    sq_doorbell: Signal<Local, Bit>,
    db_qpn: Signal<Local, Bits<QB>>,
    db_mask: Signal<Local, Bits<Q>>,
    reset_write: Signal<Local, Bit>,
    reset_mask: Signal<Local, Bits<Q>>,
    qp_bit: Signal<Local, Bits<Q>>,
    db_here: Signal<Local, Bit>,
    write_here: Signal<Local, Bit>,
    fi_now: Signal<Local, Bits<32>>,
    avail: Signal<Local, Bits<32>>,
    log_size: Signal<Local, Bits<8>>,
    ring_size: Signal<Local, Bits<32>>,
    ring_slot: Signal<Local, Bits<32>>,
    to_wrap: Signal<Local, Bits<32>>,
    count_avail: Signal<Local, Bits<32>>,
    wrapped: Signal<Local, Bit>,
    count: Signal<Local, Bits<4>>,
    live: Signal<Local, Bit>,
    issuing: Signal<Local, Bit>,
    fi_mask: Signal<Local, Bits<Q>>,
    done_mask: Signal<Local, Bits<Q>>,
    wqe_next: Signal<Local, Bits<768>>,
    err_next: Signal<Local, Bit>,
    ordered_next: Signal<Local, Bit>,
    head_drop: Signal<Local, Bit>,
    issue_try: Signal<Local, Bit>,
    write_mask: Signal<Local, Bits<Q>>,
    out_next: Signal<Local, Bits<2>>,
    next_qpn: Signal<Local, Bits<QB>>,
    head_ctx: Signal<Local, Bits<256>>,
    head_index: Signal<Local, Bits<32>>,
    head_left: Signal<Local, Bits<4>>,
    head_reset: Signal<Local, Bit>,
    take: Signal<Local, Bit>,
    pop: Signal<Local, Bit>,
    ci_mask: Signal<Local, Bits<Q>>,
    one: Constant<Bits<Q>>,
    ones: Constant<Bits<Q>>,
    one_32: Constant<Bits<32>>,
    batch: Constant<Bits<32>>,
    wqe_len: Constant<Bits<32>>,
    slot_len: Constant<Bits<64>>,
    db_sq: Constant<Bits<2>>,
    qp_count: Constant<Bits<16>>,
    at_sq_log: Constant<Bits<8>>,
    at_sq_base: Constant<Bits<8>>,
    slot_shift: Constant<Bits<8>>,
    at_opcode: Constant<Bits<8>>,
    op_read: Constant<Bits<8>>,
    op_atomic: Constant<Bits<8>>,
}

impl<const QB: usize, const Q: usize> Default for SqFetch<QB, Q> {
    fn default() -> Self {
        const { assert!(Q <= 1 << QB && QB <= 16) };
        // The queue holds every batch in flight; the batch ring pointers are two bits.
        const { assert!(BATCH * BATCHES as u64 == 32 && BATCHES == 4) };
        // The WQE register is 96 octets, one read of 12 whole beats; the slot stride is a
        // shift.
        const { assert!(SQ_WQE_LEN == 96 && SQ_WQE_SLOT_LEN == 128) };
        // Ring slots are counted in 32 bits.
        const { assert!(MAX_LOG_SIZE < 32) };
        let at = |f: Field| constant(f.lsb.into());
        SqFetch {
            clock: Default::default(),
            reset: Default::default(),
            enable: Default::default(),
            db_valid: Default::default(),
            db_kind: Default::default(),
            db_index: Default::default(),
            db_value: Default::default(),
            qp_we: Default::default(),
            qp_waddr: Default::default(),
            qp_wdata: Default::default(),
            qp_reset: Default::default(),
            qp_rts: Default::default(),
            qp_error: Default::default(),
            m_req_valid: Default::default(),
            m_req_ready: Default::default(),
            m_req_addr: Default::default(),
            m_req_len: Default::default(),
            s_rd_tdata: Default::default(),
            s_rd_tlast: Default::default(),
            s_rd_tuser: Default::default(),
            s_rd_tvalid: Default::default(),
            s_rd_tready: Default::default(),
            m_valid: Default::default(),
            m_ready: Default::default(),
            m_wqe: Default::default(),
            m_qpn: Default::default(),
            m_ctx: Default::default(),
            m_index: Default::default(),
            m_error: Default::default(),
            m_ordered: Default::default(),
            status_qpn: Default::default(),
            status_ci: Default::default(),
            ctx: Default::default(),
            pi: Default::default(),
            fi: Default::default(),
            ci: Default::default(),
            fi_zero: Default::default(),
            ci_zero: Default::default(),
            ci_take: Default::default(),
            ci_qpn: Default::default(),
            ci_value: Default::default(),
            pending: Default::default(),
            state: Default::default(),
            qpn: Default::default(),
            restart: Default::default(),
            db_hit: Default::default(),
            wrote: Default::default(),
            wrote_qpn: Default::default(),
            sz_fi: Default::default(),
            sz_mask: Default::default(),
            sz_count: Default::default(),
            sz_all: Default::default(),
            sz_any: Default::default(),
            dec_count: Default::default(),
            dec_last: Default::default(),
            dec_addr: Default::default(),
            snap_fi_zero: Default::default(),
            status_zero: Default::default(),
            req_valid: Default::default(),
            req_addr: Default::default(),
            req_left: Default::default(),
            b_busy: Default::default(),
            b_drop: Default::default(),
            b_qpn: Default::default(),
            b_ctx: Default::default(),
            b_index: Default::default(),
            b_left: Default::default(),
            issue: Default::default(),
            out: Default::default(),
            out_qpn: Default::default(),
            wqe_in: Default::default(),
            err_in: Default::default(),
            wqes: Default::default(),
            wqes_out: Default::default(),
            pick: Default::default(),
            candidates: Default::default(),
            still_wanted: Default::default(),
            choose: Default::default(),
            slot_free: Default::default(),
            sq_doorbell: Default::default(),
            db_qpn: Default::default(),
            db_mask: Default::default(),
            reset_write: Default::default(),
            reset_mask: Default::default(),
            qp_bit: Default::default(),
            db_here: Default::default(),
            write_here: Default::default(),
            fi_now: Default::default(),
            avail: Default::default(),
            log_size: Default::default(),
            ring_size: Default::default(),
            ring_slot: Default::default(),
            to_wrap: Default::default(),
            count_avail: Default::default(),
            wrapped: Default::default(),
            count: Default::default(),
            live: Default::default(),
            issuing: Default::default(),
            fi_mask: Default::default(),
            done_mask: Default::default(),
            wqe_next: Default::default(),
            err_next: Default::default(),
            ordered_next: Default::default(),
            head_drop: Default::default(),
            issue_try: Default::default(),
            write_mask: Default::default(),
            out_next: Default::default(),
            next_qpn: Default::default(),
            head_ctx: Default::default(),
            head_index: Default::default(),
            head_left: Default::default(),
            head_reset: Default::default(),
            take: Default::default(),
            pop: Default::default(),
            ci_mask: Default::default(),
            one: constant(1),
            ones: Constant::new(!Bits::<Q>::default()),
            one_32: constant(1),
            batch: constant(BATCH),
            wqe_len: constant(SQ_WQE_LEN as u64),
            slot_len: constant(SQ_WQE_SLOT_LEN as u64),
            db_sq: constant(DB_SQ),
            qp_count: constant(Q as u64),
            at_sq_log: at(qp_fields::SQ_LOG_SIZE),
            at_sq_base: at(qp_fields::SQ_BASE),
            slot_shift: constant(SQ_WQE_SLOT_LEN.trailing_zeros().into()),
            at_opcode: at(sq_wqe_fields::OPCODE),
            op_read: constant(SqOpcode::RdmaRead as u64),
            op_atomic: constant(SqOpcode::Atomic as u64),
        }
    }
}

impl<const QB: usize, const Q: usize> Logic for SqFetch<QB, Q> {
    #[hdl_gen]
    fn update(&mut self) {
        dff_setup!(
            self,
            clock,
            fi_zero,
            ci_zero,
            ci_take,
            ci_qpn,
            ci_value,
            pending,
            state,
            qpn,
            restart,
            db_hit,
            wrote,
            wrote_qpn,
            sz_fi,
            sz_mask,
            sz_count,
            sz_all,
            sz_any,
            dec_count,
            dec_last,
            dec_addr,
            snap_fi_zero,
            status_zero,
            req_valid,
            req_addr,
            req_left,
            issue,
            out,
            out_qpn,
            wqe_in,
            err_in
        );
        for i in 0..BATCHES {
            self.b_busy[i].clock.next = self.clock.val();
            self.b_busy[i].d.next = self.b_busy[i].q.val();
            self.b_drop[i].clock.next = self.clock.val();
            self.b_drop[i].d.next = self.b_drop[i].q.val();
            self.b_qpn[i].clock.next = self.clock.val();
            self.b_qpn[i].d.next = self.b_qpn[i].q.val();
            self.b_ctx[i].clock.next = self.clock.val();
            self.b_ctx[i].d.next = self.b_ctx[i].q.val();
            self.b_index[i].clock.next = self.clock.val();
            self.b_index[i].d.next = self.b_index[i].q.val();
            self.b_left[i].clock.next = self.clock.val();
            self.b_left[i].d.next = self.b_left[i].q.val();
        }
        self.ctx.read_clock.next = self.clock.val();
        self.ctx.write_clock.next = self.clock.val();
        self.pi.read_clock.next = self.clock.val();
        self.pi.write_clock.next = self.clock.val();
        self.fi.read_clock.next = self.clock.val();
        self.fi.write_clock.next = self.clock.val();
        self.ci.read_clock.next = self.clock.val();
        self.ci.write_clock.next = self.clock.val();
        self.wqes.clock.next = self.clock.val();
        self.pick.clock.next = self.clock.val();
        self.pick.reset.next = self.reset.val();
        self.wqes.reset.next = self.reset.val();
        self.wqes_out.clock.next = self.clock.val();
        self.wqes_out.reset.next = self.reset.val();
        self.wqes_out.s_valid.next = self.wqes.m_valid.val();
        self.wqes_out.s_data.next = self.wqes.m_data.val();
        self.wqes.m_ready.next = self.wqes_out.s_ready.val();

        // Host side: the context copy and producer indices.
        self.ctx.write_enable.next = self.qp_we.val();
        self.ctx.write_address.next = self.qp_waddr.val();
        self.ctx.write_data.next = self.qp_wdata.val();
        self.sq_doorbell.next = self.db_valid.val()
            & (self.db_kind.val() == self.db_sq.val())
            & (self.db_index.val() < self.qp_count.val());
        self.db_qpn.next = self.db_index.val().get_bits::<QB>(0);
        self.pi.write_enable.next = self.sq_doorbell.val();
        self.pi.write_address.next = self.db_qpn.val();
        self.pi.write_data.next = self.db_value.val();
        self.db_mask.next = 0.into();
        if self.sq_doorbell.val() {
            self.db_mask.next = self.one.val() << bit_cast::<Q, QB>(self.db_qpn.val());
        }
        self.reset_write.next = self.qp_we.val() & self.qp_reset.val();
        self.reset_mask.next = 0.into();
        if self.reset_write.val() {
            self.reset_mask.next = self.one.val() << bit_cast::<Q, QB>(self.qp_waddr.val());
        }
        self.write_mask.next = 0.into();
        if self.qp_we.val() {
            self.write_mask.next = self.one.val() << bit_cast::<Q, QB>(self.qp_waddr.val());
        }
        self.qp_bit.next = self.one.val() << bit_cast::<Q, QB>(self.qpn.q.val());
        self.db_here.next = self.sq_doorbell.val() & (self.db_qpn.val() == self.qpn.q.val());
        self.write_here.next = self.qp_we.val() & (self.qp_waddr.val() == self.qpn.q.val());

        // Round robin over the QPs with work, while a batch slot is free. The arbiter's
        // grant is a few cycles old: it is taken only if its QP still has work.
        self.candidates.next = self.pending.q.val() & (self.qp_rts.val() | self.qp_error.val());
        self.pick.requests.next = self.candidates.val();
        self.still_wanted.next = (self.pick.grant_onehot.val() & self.candidates.val()).any();
        self.slot_free.next = false;
        for i in 0..BATCHES {
            if self.issue.q.val().index() == i {
                self.slot_free.next = !self.b_busy[i].q.val();
            }
        }

        // The picked QP: its words as of the end of the pick's first cycle, zero if reset.
        self.ctx.read_address.next = self.qpn.q.val();
        self.pi.read_address.next = self.qpn.q.val();
        self.fi.read_address.next = self.qpn.q.val();
        self.fi_now.next = self.fi.read_data.val();
        if self.snap_fi_zero.q.val() {
            self.fi_now.next = 0.into();
        }
        // The batch: up to BATCH slots, not past `pi` (state 2), not past the ring's last
        // slot (state 3): two cycles, as each is a long path.
        self.avail.next = self.pi.read_data.val() - self.fi_now.val();
        self.log_size.next = self.ctx.read_data.val().get_bits::<8>(self.at_sq_log.val().index());
        self.ring_size.next = self.one_32.val() << self.log_size.val();
        self.count_avail.next = self.batch.val();
        if self.avail.val() < self.batch.val() {
            self.count_avail.next = self.avail.val();
        }
        self.ring_slot.next = self.sz_fi.q.val() & self.sz_mask.q.val();
        self.to_wrap.next = self.sz_mask.q.val() - self.ring_slot.val() + 1;
        self.wrapped.next = self.to_wrap.val() < bit_cast::<32, 4>(self.sz_count.q.val());
        self.count.next = self.sz_count.q.val();
        if self.wrapped.val() {
            self.count.next = self.to_wrap.val().get_bits::<4>(0);
        }

        self.choose.next = (self.state.q.val() == 0)
            & self.pick.found.val()
            & self.still_wanted.val()
            & self.enable.val()
            & self.slot_free.val();
        self.pick.accept.next = self.choose.val();
        if self.choose.val() {
            self.qpn.d.next = self.pick.grant.val().get_bits::<QB>(0);
            self.restart.d.next = false;
            self.db_hit.d.next = false;
            self.state.d.next = 1.into();
        }
        // The RAMs read the QP's words at the end of this cycle; `fi_zero` matches them. A
        // context write in the cycle the QP was chosen (`wrote`) counts as one during the pick.
        if self.state.q.val() == 1 {
            self.snap_fi_zero.d.next = (self.fi_zero.q.val() & self.qp_bit.val()).any();
            self.state.d.next = 2.into();
            if self.wrote.q.val() & (self.wrote_qpn.q.val() == self.qpn.q.val()) {
                self.restart.d.next = true;
            }
        }
        if (self.state.q.val() != 0) & (self.state.q.val() != 5) {
            if self.write_here.val() {
                self.restart.d.next = true;
            }
            if self.db_here.val() {
                self.db_hit.d.next = true;
            }
        }
        self.wrote.d.next = self.qp_we.val();
        self.wrote_qpn.d.next = self.qp_waddr.val();
        if self.state.q.val() == 2 {
            self.sz_fi.d.next = self.fi_now.val();
            self.sz_mask.d.next = self.ring_size.val() - 1;
            self.sz_count.d.next = self.count_avail.val().get_bits::<4>(0);
            self.sz_all.d.next = self.avail.val() <= self.batch.val();
            self.sz_any.d.next = self.avail.val().any();
            self.state.d.next = 3.into();
        }
        if self.state.q.val() == 3 {
            self.dec_count.d.next = self.count.val();
            self.dec_last.d.next = self.sz_all.q.val() & !self.wrapped.val();
            self.dec_addr.d.next = self.ctx.read_data.val().get_bits::<64>(self.at_sq_base.val().index())
                + (bit_cast::<64, 32>(self.ring_slot.val()) << self.slot_shift.val());
            self.state.d.next = 4.into();
        }
        // A pick that saw a context write ends without effect and starts again.
        self.live.next = (self.state.q.val() == 4) & !self.restart.q.val() & !self.write_here.val();
        self.issuing.next = self.live.val() & self.sz_any.q.val();
        self.fi.write_enable.next = self.issuing.val();
        self.fi.write_address.next = self.qpn.q.val();
        self.fi.write_data.next = self.sz_fi.q.val() + bit_cast::<32, 4>(self.dec_count.q.val());
        self.fi_mask.next = 0.into();
        // Nothing left to fetch after this (unless a doorbell came meanwhile): not pending.
        self.done_mask.next = 0.into();
        if self.state.q.val() == 4 {
            self.state.d.next = 0.into();
        }
        // (`live` bit by bit: a context write to the QP in this cycle clears its own bit.)
        if (self.state.q.val() == 4) & !self.restart.q.val() & self.dec_last.q.val() & !self.db_hit.q.val() {
            self.done_mask.next = self.qp_bit.val() & !self.write_mask.val();
        }
        if self.issuing.val() {
            self.fi_mask.next = self.qp_bit.val();
            for i in 0..BATCHES {
                if self.issue.q.val().index() == i {
                    self.b_busy[i].d.next = true;
                    self.b_drop[i].d.next = false;
                    self.b_qpn[i].d.next = self.qpn.q.val();
                    self.b_ctx[i].d.next = self.ctx.read_data.val();
                    self.b_index[i].d.next = self.sz_fi.q.val();
                    self.b_left[i].d.next = self.dec_count.q.val();
                }
            }
            self.issue.d.next = self.issue.q.val() + 1;
            self.req_valid.d.next = true;
            self.req_addr.d.next = self.dec_addr.q.val();
            self.req_left.d.next = self.dec_count.q.val();
            self.state.d.next = 5.into();
        }
        // One read per slot, of its first 96 octets: the reserved 32 never cross the bus.
        if (self.state.q.val() == 5) & self.m_req_ready.val() {
            self.req_addr.d.next = self.req_addr.q.val() + self.slot_len.val();
            self.req_left.d.next = self.req_left.q.val() - 1;
            if self.req_left.q.val() == 1 {
                self.req_valid.d.next = false;
                self.state.d.next = 0.into();
            }
        }

        // Queued and in-flight batches follow their QP's context; a reset drops them.
        for i in 0..BATCHES {
            if self.b_busy[i].q.val() & self.qp_we.val() & (self.qp_waddr.val() == self.b_qpn[i].q.val()) {
                self.b_ctx[i].d.next = self.qp_wdata.val();
                if self.qp_reset.val() {
                    self.b_drop[i].d.next = true;
                }
            }
        }

        // Receiving: each read is one slot's WQE, whole at its last beat.
        self.s_rd_tready.next = true;
        self.wqe_next.next = (self.wqe_in.q.val() >> 64) | (bit_cast::<768, 64>(self.s_rd_tdata.val()) << 704);
        self.err_next.next = self.err_in.q.val() | self.s_rd_tuser.val().get_bit(8);
        self.wqes.s_valid.next = self.s_rd_tvalid.val() & self.s_rd_tlast.val();
        self.ordered_next.next = (self.wqe_next.val().get_bits::<8>(self.at_opcode.val().index())
            == self.op_read.val())
            | (self.wqe_next.val().get_bits::<8>(self.at_opcode.val().index()) == self.op_atomic.val());
        self.wqes.s_data.next = bit_cast::<770, 768>(self.wqe_next.val())
            | (bit_cast::<770, 1>(self.err_next.val().into()) << 768)
            | (bit_cast::<770, 1>(self.ordered_next.val().into()) << 769);
        if self.s_rd_tvalid.val() {
            self.wqe_in.d.next = self.wqe_next.val();
            self.err_in.d.next = self.err_next.val() & !self.s_rd_tlast.val();
        }

        // Handing on: the oldest queued WQE belongs to the batch at `out`. Its QP follows
        // `out`, and a batch issued into the slot at `out` or the one after it. (For that,
        // a pick in its issuing step counts even if a context write cancels it: the slot
        // it would fill is free, so none of its WQEs is at the head, and the pick that
        // fills it later sets the QP again. So the QP's register does not wait for the
        // write's compare.)
        self.issue_try.next = (self.state.q.val() == 4) & self.sz_any.q.val();
        self.out_next.next = self.out.q.val() + 1;
        self.next_qpn.next = 0.into();
        for i in 0..BATCHES {
            if self.out_next.val().index() == i {
                self.next_qpn.next = self.b_qpn[i].q.val();
            }
        }
        if self.issue_try.val() & (self.issue.q.val() == self.out_next.val()) {
            self.next_qpn.next = self.qpn.q.val();
        }
        if self.issue_try.val() & (self.issue.q.val() == self.out.q.val()) {
            self.out_qpn.d.next = self.qpn.q.val();
        }
        self.head_drop.next = false;
        self.head_reset.next = false;
        self.head_ctx.next = 0.into();
        self.head_index.next = 0.into();
        self.head_left.next = 0.into();
        for i in 0..BATCHES {
            if self.out.q.val().index() == i {
                self.head_drop.next = self.b_drop[i].q.val();
                self.head_reset.next = self.reset_write.val() & (self.qp_waddr.val() == self.b_qpn[i].q.val());
                self.head_ctx.next = self.b_ctx[i].q.val();
                self.head_index.next = self.b_index[i].q.val();
                self.head_left.next = self.b_left[i].q.val();
            }
        }
        self.m_valid.next =
            self.wqes_out.m_valid.val() & !self.head_drop.val() & !self.head_reset.val() & self.enable.val();
        self.take.next = self.m_valid.val() & self.m_ready.val();
        // The head leaves when taken or dropped. A reset of its QP in this cycle hides it
        // from the consumer (`m_valid`), and it leaves as if taken if `m_ready` is set, or
        // next cycle as dropped: the pop never waits on the reset's compare.
        self.pop.next = self.wqes_out.m_valid.val() & (self.head_drop.val() | (self.enable.val() & self.m_ready.val()));
        self.wqes_out.m_ready.next = self.pop.val();
        if self.pop.val() {
            for i in 0..BATCHES {
                if self.out.q.val().index() == i {
                    self.b_index[i].d.next = self.b_index[i].q.val() + 1;
                    self.b_left[i].d.next = self.b_left[i].q.val() - 1;
                    if self.b_left[i].q.val() == 1 {
                        self.b_busy[i].d.next = false;
                    }
                }
            }
            if self.head_left.val() == 1 {
                self.out.d.next = self.out_next.val();
                self.out_qpn.d.next = self.next_qpn.val();
            }
        }
        self.ci_take.d.next = self.take.val();
        self.ci_qpn.d.next = self.out_qpn.q.val();
        self.ci_value.d.next = self.head_index.val() + 1;
        self.ci.write_enable.next = self.ci_take.q.val();
        self.ci.write_address.next = self.ci_qpn.q.val();
        self.ci.write_data.next = self.ci_value.q.val();
        self.ci_mask.next = 0.into();
        if self.ci_take.q.val() {
            self.ci_mask.next = self.one.val() << bit_cast::<Q, QB>(self.ci_qpn.q.val());
        }

        // Per-QP bits. A reset wins over a doorbell in the same cycle.
        self.pending.d.next =
            ((self.pending.q.val() & !self.done_mask.val()) | self.db_mask.val()) & !self.reset_mask.val();
        self.fi_zero.d.next = (self.fi_zero.q.val() & !self.fi_mask.val()) | self.reset_mask.val();
        self.ci_zero.d.next = (self.ci_zero.q.val() & !self.ci_mask.val()) | self.reset_mask.val();
        if self.reset.val() {
            self.pending.d.next = 0.into();
            self.fi_zero.d.next = self.ones.val();
            self.ci_zero.d.next = self.ones.val();
            self.ci_take.d.next = false;
            self.state.d.next = 0.into();
            self.req_valid.d.next = false;
            for i in 0..BATCHES {
                self.b_busy[i].d.next = false;
            }
            self.issue.d.next = 0.into();
            self.out.d.next = 0.into();
            self.err_in.d.next = false;
        }

        self.ci.read_address.next = self.status_qpn.val();
        self.status_zero.d.next = self.ci_zero.q.val().get_bit(self.status_qpn.val().index());
        self.status_ci.next = self.ci.read_data.val();
        if self.status_zero.q.val() {
            self.status_ci.next = 0.into();
        }
        self.m_req_valid.next = self.req_valid.q.val();
        self.m_req_addr.next = self.req_addr.q.val();
        self.m_req_len.next = self.wqe_len.val();
        self.m_wqe.next = self.wqes_out.m_data.val().get_bits::<768>(0);
        self.m_error.next = self.wqes_out.m_data.val().get_bit(768);
        self.m_ordered.next = self.wqes_out.m_data.val().get_bit(769);
        self.m_qpn.next = self.out_qpn.q.val();
        self.m_ctx.next = self.head_ctx.val();
        self.m_index.next = self.head_index.val();
    }
}
