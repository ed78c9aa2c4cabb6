//! SQ fetch: which QP sends next, and its next WQE from host memory.
//!
//! SQ_PI doorbells mark a QP pending and record its producer index. A round-robin pick
//! among pending QPs in RTS or ERROR (ERROR QPs still have their WQEs fetched, to be
//! completed as FLUSHED) reads the QP's context copy and indices; if the SQ is empty the QP
//! stops being pending, otherwise the first 96 octets of the WQE at `ci` (128-octet slots;
//! the last 32 are an atomic's operands) are read through the DMA read engine and handed on with the QP's context. `ci` advances
//! when the WQE is taken, and the next pick starts after this QP, so every QP with work
//! gets one WQE per round.
//!
//! One WQE is fetched at a time: a message then costs one DMA round trip before its first
//! octet goes out. Fetching ahead (several WQEs in flight) is the next step for small
//! message rates.
use rust_hdl::prelude::*;

use rnic_proto::host::context::qp_fields;
use rnic_proto::host::desc::{SQ_WQE_LEN, SQ_WQE_SLOT_LEN};
use rnic_proto::host::Field;

use super::regs::DB_SQ;
use crate::common::{constant, RoundRobin};

/// `QB` = QP index bits, `Q` = number of QPs (at most `1 << QB`).
#[derive(LogicBlock)]
pub struct SqFetch<const QB: usize, const Q: usize> {
    pub clock: Signal<In, Clock>,
    pub reset: Signal<In, Bit>,
    /// CONTROL.ENABLE: no new WQE is fetched while clear.
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
    /// QUERY_QP: the `ci` of QP `status_qpn`, one cycle later.
    pub status_qpn: Signal<In, Bits<QB>>,
    pub status_ci: Signal<Out, Bits<32>>,
    ctx: RAM<Bits<256>, QB>,
    pi: RAM<Bits<32>, QB>,
    ci: RAM<Bits<32>, QB>,
    /// A copy of `ci` with a read port for queries.
    ci_copy: RAM<Bits<32>, QB>,
    pending: DFF<Bits<Q>>,
    state: DFF<Bits<3>>,
    qpn: DFF<Bits<QB>>,
    start: DFF<Bits<QB>>,
    req_valid: DFF<Bit>,
    req_addr: DFF<Bits<64>>,
    wqe: DFF<Bits<768>>,
    error: DFF<Bit>,
    index: DFF<Bits<32>>,
    qp_ctx: DFF<Bits<256>>,
    pick: RoundRobin<Q>,
    candidates: Signal<Local, Bits<Q>>,
    chosen: Signal<Local, Bits<QB>>,
    found: Signal<Local, Bit>,
    qp_bit: Signal<Local, Bits<Q>>,
    db_bit: Signal<Local, Bits<Q>>,
    reset_bit: Signal<Local, Bits<Q>>,
    sq_doorbell: Signal<Local, Bit>,
    log_size: Signal<Local, Bits<8>>,
    slot: Signal<Local, Bits<64>>,
    one: Constant<Bits<Q>>,
    one_64: Constant<Bits<64>>,
    wqe_len: Constant<Bits<32>>,
    db_sq: Constant<Bits<2>>,
    qp_count: Constant<Bits<16>>,
    at_sq_log: Constant<Bits<8>>,
    at_sq_base: Constant<Bits<8>>,
    slot_shift: Constant<Bits<8>>,
}

impl<const QB: usize, const Q: usize> Default for SqFetch<QB, Q> {
    fn default() -> Self {
        const { assert!(Q <= 1 << QB && QB <= 16) };
        assert!(SQ_WQE_SLOT_LEN.is_power_of_two());
        // The WQE register is 96 octets, taken whole beats at a time.
        assert!(SQ_WQE_LEN == 96);
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
            status_qpn: Default::default(),
            status_ci: Default::default(),
            ctx: Default::default(),
            pi: Default::default(),
            ci: Default::default(),
            ci_copy: Default::default(),
            pending: Default::default(),
            state: Default::default(),
            qpn: Default::default(),
            start: Default::default(),
            req_valid: Default::default(),
            req_addr: Default::default(),
            wqe: Default::default(),
            error: Default::default(),
            index: Default::default(),
            qp_ctx: Default::default(),
            pick: Default::default(),
            candidates: Default::default(),
            chosen: Default::default(),
            found: Default::default(),
            qp_bit: Default::default(),
            db_bit: Default::default(),
            reset_bit: Default::default(),
            sq_doorbell: Default::default(),
            log_size: Default::default(),
            slot: Default::default(),
            one: constant(1),
            one_64: constant(1),
            wqe_len: constant(SQ_WQE_LEN as u64),
            db_sq: constant(DB_SQ),
            qp_count: constant(Q as u64),
            at_sq_log: at(qp_fields::SQ_LOG_SIZE),
            at_sq_base: at(qp_fields::SQ_BASE),
            slot_shift: constant(SQ_WQE_SLOT_LEN.trailing_zeros().into()),
        }
    }
}

impl<const QB: usize, const Q: usize> Logic for SqFetch<QB, Q> {
    #[hdl_gen]
    fn update(&mut self) {
        dff_setup!(self, clock, pending, state, qpn, start, req_valid, req_addr, wqe, error, index, qp_ctx);
        self.ctx.read_clock.next = self.clock.val();
        self.ctx.write_clock.next = self.clock.val();
        self.pi.read_clock.next = self.clock.val();
        self.pi.write_clock.next = self.clock.val();
        self.ci.read_clock.next = self.clock.val();
        self.ci.write_clock.next = self.clock.val();
        self.ci_copy.read_clock.next = self.clock.val();
        self.ci_copy.write_clock.next = self.clock.val();

        // Host side: the context copy, producer indices, a QP written in RESET forgets
        // its indices.
        self.ctx.write_enable.next = self.qp_we.val();
        self.ctx.write_address.next = self.qp_waddr.val();
        self.ctx.write_data.next = self.qp_wdata.val();
        self.sq_doorbell.next =
            self.db_valid.val() & (self.db_kind.val() == self.db_sq.val()) & (self.db_index.val() < self.qp_count.val());
        self.pi.write_enable.next = self.sq_doorbell.val();
        self.pi.write_address.next = self.db_index.val().get_bits::<QB>(0);
        self.pi.write_data.next = self.db_value.val();
        if self.qp_we.val() & self.qp_reset.val() {
            self.pi.write_enable.next = true;
            self.pi.write_address.next = self.qp_waddr.val();
            self.pi.write_data.next = 0.into();
        }
        self.db_bit.next = self.one.val() << bit_cast::<Q, QB>(self.db_index.val().get_bits::<QB>(0));
        self.reset_bit.next = self.one.val() << bit_cast::<Q, QB>(self.qp_waddr.val());
        self.qp_bit.next = self.one.val() << bit_cast::<Q, QB>(self.qpn.q.val());

        // Round robin over the QPs with work.
        self.candidates.next = self.pending.q.val() & (self.qp_rts.val() | self.qp_error.val());
        self.pick.requests.next = self.candidates.val();
        self.pick.start.next = bit_cast::<8, QB>(self.start.q.val());
        self.found.next = self.pick.found.val();
        self.chosen.next = self.pick.grant.val().get_bits::<QB>(0);

        self.ctx.read_address.next = self.qpn.q.val();
        self.pi.read_address.next = self.qpn.q.val();
        self.ci.read_address.next = self.qpn.q.val();
        self.ci.write_enable.next = false;
        self.ci.write_address.next = self.qpn.q.val();
        self.ci.write_data.next = self.index.q.val() + 1;
        self.log_size.next = self.ctx.read_data.val().get_bits::<8>(self.at_sq_log.val().index());
        self.slot.next = (bit_cast::<64, 32>(self.ci.read_data.val()) & ((self.one_64.val() << self.log_size.val()) - 1))
            << self.slot_shift.val();

        // 0: pick; 1: read the QP; 2: empty, or request the WQE; 3: request on the bus;
        // 4: the WQE's eight beats; 5: hand it on.
        if (self.state.q.val() == 0) & self.found.val() & self.enable.val() {
            self.qpn.d.next = self.chosen.val();
            self.state.d.next = 1.into();
        }
        if self.state.q.val() == 1 {
            self.state.d.next = 2.into();
        }
        if self.state.q.val() == 2 {
            if self.pi.read_data.val() == self.ci.read_data.val() {
                self.pending.d.next = self.pending.q.val() & !self.qp_bit.val();
                self.state.d.next = 0.into();
                self.start.d.next = self.qpn.q.val() + 1;
            } else {
                self.req_valid.d.next = true;
                self.req_addr.d.next = self.ctx.read_data.val().get_bits::<64>(self.at_sq_base.val().index()) + self.slot.val();
                self.index.d.next = self.ci.read_data.val();
                self.qp_ctx.d.next = self.ctx.read_data.val();
                self.error.d.next = false;
                self.state.d.next = 3.into();
            }
        }
        if (self.state.q.val() == 3) & self.m_req_ready.val() {
            self.req_valid.d.next = false;
            self.state.d.next = 4.into();
        }
        self.s_rd_tready.next = self.state.q.val() == 4;
        if (self.state.q.val() == 4) & self.s_rd_tvalid.val() {
            self.wqe.d.next = (self.wqe.q.val() >> 64) | (bit_cast::<768, 64>(self.s_rd_tdata.val()) << 704);
            if self.s_rd_tuser.val().get_bit(8) {
                self.error.d.next = true;
            }
            if self.s_rd_tlast.val() {
                self.state.d.next = 5.into();
            }
        }
        if (self.state.q.val() == 5) & self.m_ready.val() {
            self.ci.write_enable.next = true;
            self.state.d.next = 0.into();
            self.start.d.next = self.qpn.q.val() + 1;
        }
        // Doorbells come last: one in the same cycle as "empty" keeps the QP pending.
        if self.sq_doorbell.val() {
            self.pending.d.next = self.pending.q.val() | self.db_bit.val();
            if (self.state.q.val() == 2) & (self.pi.read_data.val() == self.ci.read_data.val()) {
                self.pending.d.next = (self.pending.q.val() & !self.qp_bit.val()) | self.db_bit.val();
            }
        }
        if self.qp_we.val() & self.qp_reset.val() {
            self.ci.write_enable.next = true;
            self.ci.write_address.next = self.qp_waddr.val();
            self.ci.write_data.next = 0.into();
            self.pending.d.next = self.pending.q.val() & !self.reset_bit.val();
        }
        if self.reset.val() {
            self.pending.d.next = 0.into();
            self.state.d.next = 0.into();
            self.req_valid.d.next = false;
            self.start.d.next = 0.into();
        }
        self.ci_copy.write_enable.next = self.ci.write_enable.val();
        self.ci_copy.write_address.next = self.ci.write_address.val();
        self.ci_copy.write_data.next = self.ci.write_data.val();
        self.ci_copy.read_address.next = self.status_qpn.val();
        self.status_ci.next = self.ci_copy.read_data.val();
        self.m_req_valid.next = self.req_valid.q.val();
        self.m_req_addr.next = self.req_addr.q.val();
        self.m_req_len.next = self.wqe_len.val();
        self.m_valid.next = self.state.q.val() == 5;
        self.m_wqe.next = self.wqe.q.val();
        self.m_qpn.next = self.qpn.q.val();
        self.m_ctx.next = self.qp_ctx.q.val();
        self.m_index.next = self.index.q.val();
        self.m_error.next = self.error.q.val();
    }
}
