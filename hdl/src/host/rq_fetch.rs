//! RQ fetch: the receive side claims a QP's next posted receive (RFC 5040 §5.3: each
//! Send consumes the next buffer in order).
//!
//! RQ_PI doorbells record each QP's producer index. A claim for QP `q` reads its context
//! copy and indices; with nothing posted it answers "none" (the receive side then
//! terminates the Send, DDP 1/2/0x02), otherwise it reads the 32-octet RQ WQE at `ci`
//! through the DMA read engine, answers with it and advances `ci`. A QP written in RESET
//! forgets its indices.
use rust_hdl::prelude::*;

use rnic_proto::host::context::qp_fields;
use rnic_proto::host::desc::RQ_WQE_LEN;
use rnic_proto::host::Field;

use super::regs::DB_RQ;
use crate::common::constant;

/// `QB` = QP index bits, `Q` = number of QPs (at most `1 << QB`).
#[derive(LogicBlock)]
pub struct RqFetch<const QB: usize, const Q: usize> {
    pub clock: Signal<In, Clock>,
    pub reset: Signal<In, Bit>,
    pub db_valid: Signal<In, Bit>,
    pub db_kind: Signal<In, Bits<2>>,
    pub db_index: Signal<In, Bits<16>>,
    pub db_value: Signal<In, Bits<32>>,
    pub qp_we: Signal<In, Bit>,
    pub qp_waddr: Signal<In, Bits<QB>>,
    pub qp_wdata: Signal<In, Bits<256>>,
    pub qp_reset: Signal<In, Bit>,
    /// A claim for QP `s_qpn`'s next receive.
    pub s_valid: Signal<In, Bit>,
    pub s_ready: Signal<Out, Bit>,
    pub s_qpn: Signal<In, Bits<QB>>,
    /// The answer: whether a receive was posted, its WQE and index; `error` if the read
    /// failed.
    pub m_valid: Signal<Out, Bit>,
    pub m_ready: Signal<In, Bit>,
    pub m_posted: Signal<Out, Bit>,
    pub m_wqe: Signal<Out, Bits<256>>,
    pub m_index: Signal<Out, Bits<32>>,
    pub m_error: Signal<Out, Bit>,
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
    /// QUERY_QP: the `ci` of QP `status_qpn`, one cycle later.
    pub status_qpn: Signal<In, Bits<QB>>,
    pub status_ci: Signal<Out, Bits<32>>,
    ctx: RAM<Bits<256>, QB>,
    pi: RAM<Bits<32>, QB>,
    ci: RAM<Bits<32>, QB>,
    ci_copy: RAM<Bits<32>, QB>,
    state: DFF<Bits<3>>,
    qpn: DFF<Bits<QB>>,
    req_valid: DFF<Bit>,
    req_addr: DFF<Bits<64>>,
    wqe: DFF<Bits<256>>,
    posted: DFF<Bit>,
    index: DFF<Bits<32>>,
    error: DFF<Bit>,
    rq_doorbell: Signal<Local, Bit>,
    log_size: Signal<Local, Bits<8>>,
    slot: Signal<Local, Bits<64>>,
    one_64: Constant<Bits<64>>,
    db_rq: Constant<Bits<2>>,
    qp_count: Constant<Bits<16>>,
    at_rq_log: Constant<Bits<8>>,
    at_rq_base: Constant<Bits<8>>,
    slot_shift: Constant<Bits<8>>,
}

impl<const QB: usize, const Q: usize> Default for RqFetch<QB, Q> {
    fn default() -> Self {
        const { assert!(Q <= 1 << QB && QB <= 16) };
        const { assert!(RQ_WQE_LEN == 32, "an RQ WQE is four beats") };
        let at = |f: Field| constant(f.lsb.into());
        RqFetch {
            clock: Default::default(),
            reset: Default::default(),
            db_valid: Default::default(),
            db_kind: Default::default(),
            db_index: Default::default(),
            db_value: Default::default(),
            qp_we: Default::default(),
            qp_waddr: Default::default(),
            qp_wdata: Default::default(),
            qp_reset: Default::default(),
            s_valid: Default::default(),
            s_ready: Default::default(),
            s_qpn: Default::default(),
            m_valid: Default::default(),
            m_ready: Default::default(),
            m_posted: Default::default(),
            m_wqe: Default::default(),
            m_index: Default::default(),
            m_error: Default::default(),
            m_req_valid: Default::default(),
            m_req_ready: Default::default(),
            m_req_addr: Default::default(),
            m_req_len: Default::default(),
            s_rd_tdata: Default::default(),
            s_rd_tlast: Default::default(),
            s_rd_tuser: Default::default(),
            s_rd_tvalid: Default::default(),
            s_rd_tready: Default::default(),
            status_qpn: Default::default(),
            status_ci: Default::default(),
            ctx: Default::default(),
            pi: Default::default(),
            ci: Default::default(),
            ci_copy: Default::default(),
            state: Default::default(),
            qpn: Default::default(),
            req_valid: Default::default(),
            req_addr: Default::default(),
            wqe: Default::default(),
            posted: Default::default(),
            index: Default::default(),
            error: Default::default(),
            rq_doorbell: Default::default(),
            log_size: Default::default(),
            slot: Default::default(),
            one_64: constant(1),
            db_rq: constant(DB_RQ),
            qp_count: constant(Q as u64),
            at_rq_log: at(qp_fields::RQ_LOG_SIZE),
            at_rq_base: at(qp_fields::RQ_BASE),
            slot_shift: constant(RQ_WQE_LEN.trailing_zeros().into()),
        }
    }
}

impl<const QB: usize, const Q: usize> Logic for RqFetch<QB, Q> {
    #[hdl_gen]
    fn update(&mut self) {
        dff_setup!(self, clock, state, qpn, req_valid, req_addr, wqe, posted, index, error);
        self.ctx.read_clock.next = self.clock.val();
        self.ctx.write_clock.next = self.clock.val();
        self.pi.read_clock.next = self.clock.val();
        self.pi.write_clock.next = self.clock.val();
        self.ci.read_clock.next = self.clock.val();
        self.ci.write_clock.next = self.clock.val();
        self.ci_copy.read_clock.next = self.clock.val();
        self.ci_copy.write_clock.next = self.clock.val();

        // Host side: the context copy, producer indices; RESET clears the indices.
        self.ctx.write_enable.next = self.qp_we.val();
        self.ctx.write_address.next = self.qp_waddr.val();
        self.ctx.write_data.next = self.qp_wdata.val();
        self.rq_doorbell.next = self.db_valid.val()
            & (self.db_kind.val() == self.db_rq.val())
            & (self.db_index.val() < self.qp_count.val());
        self.pi.write_enable.next = self.rq_doorbell.val();
        self.pi.write_address.next = self.db_index.val().get_bits::<QB>(0);
        self.pi.write_data.next = self.db_value.val();
        if self.qp_we.val() & self.qp_reset.val() {
            self.pi.write_enable.next = true;
            self.pi.write_address.next = self.qp_waddr.val();
            self.pi.write_data.next = 0.into();
        }

        // 0: take a claim; 1: read the QP; 2: none posted, or request the WQE; 3: request
        // on the bus; 4: the WQE's four beats; 5: answer.
        self.s_ready.next = self.state.q.val() == 0;
        if (self.state.q.val() == 0) & self.s_valid.val() {
            self.qpn.d.next = self.s_qpn.val();
            self.state.d.next = 1.into();
        }
        self.ctx.read_address.next = self.qpn.q.val();
        self.pi.read_address.next = self.qpn.q.val();
        self.ci.read_address.next = self.qpn.q.val();
        self.ci.write_enable.next = false;
        self.ci.write_address.next = self.qpn.q.val();
        self.ci.write_data.next = self.index.q.val() + 1;
        self.log_size.next = self.ctx.read_data.val().get_bits::<8>(self.at_rq_log.val().index());
        self.slot.next = (bit_cast::<64, 32>(self.ci.read_data.val())
            & ((self.one_64.val() << self.log_size.val()) - 1))
            << self.slot_shift.val();
        if self.state.q.val() == 1 {
            self.state.d.next = 2.into();
        }
        if self.state.q.val() == 2 {
            self.index.d.next = self.ci.read_data.val();
            self.error.d.next = false;
            self.wqe.d.next = 0.into();
            if self.pi.read_data.val() == self.ci.read_data.val() {
                self.posted.d.next = false;
                self.state.d.next = 5.into();
            } else {
                self.posted.d.next = true;
                self.req_valid.d.next = true;
                self.req_addr.d.next =
                    self.ctx.read_data.val().get_bits::<64>(self.at_rq_base.val().index()) + self.slot.val();
                self.state.d.next = 3.into();
            }
        }
        if (self.state.q.val() == 3) & self.m_req_ready.val() {
            self.req_valid.d.next = false;
            self.state.d.next = 4.into();
        }
        self.s_rd_tready.next = self.state.q.val() == 4;
        if (self.state.q.val() == 4) & self.s_rd_tvalid.val() {
            self.wqe.d.next = (self.wqe.q.val() >> 64) | (bit_cast::<256, 64>(self.s_rd_tdata.val()) << 192);
            if self.s_rd_tuser.val().get_bit(8) {
                self.error.d.next = true;
            }
            if self.s_rd_tlast.val() {
                self.state.d.next = 5.into();
            }
        }
        if (self.state.q.val() == 5) & self.m_ready.val() {
            self.ci.write_enable.next = self.posted.q.val();
            self.state.d.next = 0.into();
        }
        if self.qp_we.val() & self.qp_reset.val() {
            self.ci.write_enable.next = true;
            self.ci.write_address.next = self.qp_waddr.val();
            self.ci.write_data.next = 0.into();
        }
        if self.reset.val() {
            self.state.d.next = 0.into();
            self.req_valid.d.next = false;
        }
        self.ci_copy.write_enable.next = self.ci.write_enable.val();
        self.ci_copy.write_address.next = self.ci.write_address.val();
        self.ci_copy.write_data.next = self.ci.write_data.val();
        self.ci_copy.read_address.next = self.status_qpn.val();
        self.status_ci.next = self.ci_copy.read_data.val();
        self.m_req_valid.next = self.req_valid.q.val();
        self.m_req_addr.next = self.req_addr.q.val();
        self.m_req_len.next = 32.into();
        self.m_valid.next = self.state.q.val() == 5;
        self.m_posted.next = self.posted.q.val();
        self.m_wqe.next = self.wqe.q.val();
        self.m_index.next = self.index.q.val();
        self.m_error.next = self.error.q.val();
    }
}
