//! The command unit: writes and queries QP, CQ and MR contexts for the host
//! (`docs/REGISTERS.md`, commands), with exactly the checks of
//! `rnic_proto::model::Rnic::command`: opcode, index, value, state, in that order.
//!
//! Contexts are kept as the host wrote them, reserved bits cleared, in RAMs: this unit's
//! own copy answers queries, and every write also goes out on a `*_we` port so that each
//! engine can keep a private copy with its own read port. What changes while traffic runs
//! lives here in registers the engines see all at once: each QP's state (a bit for RTS
//! and one for ERROR, RESET being neither), each MR's valid bit, and the Terminate that
//! put a QP in ERROR.
//!
//! A command takes five cycles, each deciding from registers what the next one needs:
//! latch (state IDLE: the opcode decoded, the object's bit), read the current context and
//! the object's live state (READ), check (CHECK: each rule on its own), judge (JUDGE: the
//! result, in the model's order, and what to change), act (ACT: the writes and the live
//! state). A command that changed a context then waits (FENCE) for the DMA fence
//! (`fence_start`, `fence_done`; see `DmaFence`): the host may free what the old context
//! named once the command is done.
//!
//! Engines fail QPs and invalidate MRs in any cycle, and lose nothing to a command: each
//! changes its own bit of the live state. The command sees the live state as READ begins;
//! a failure or an invalidation from then on counts as after it (a QP written while it
//! failed ends in ERROR with its Terminate).
use rust_hdl::prelude::*;

use rnic_proto::host::context::{
    cq_fields, mr_fields, qp_fields, QpState, CQ_BASE_ALIGN, MAX_LOG_SIZE, MAX_READS, RQ_BASE_ALIGN, SQ_BASE_ALIGN,
};
use rnic_proto::host::desc::{CQE_LEN, RQ_WQE_LEN, SQ_WQE_SLOT_LEN};
use rnic_proto::host::regs::{CmdOpcode, CmdResult};
use rnic_proto::host::Field;
use rnic_proto::mpa::MIN_MULPDU;

use crate::common::constant;

/// `QB`/`CB`/`MB` = index bits of the QP, CQ and MR tables, `Q`/`M` = their QP and MR
/// counts (at most `1 << QB`, `1 << MB`). Build it with [`Cmd::new`].
#[derive(LogicBlock)]
pub struct Cmd<const QB: usize, const Q: usize, const CB: usize, const MB: usize, const M: usize> {
    pub clock: Signal<In, Clock>,
    pub reset: Signal<In, Bit>,
    /// From the register file.
    pub cmd_start: Signal<In, Bit>,
    pub cmd_op: Signal<In, Bits<8>>,
    pub cmd_index: Signal<In, Bits<24>>,
    pub cmd_data: Signal<In, Bits<512>>,
    pub cmd_done: Signal<Out, Bit>,
    pub cmd_result: Signal<Out, Bits<8>>,
    pub cmd_load: Signal<Out, Bit>,
    pub cmd_result_data: Signal<Out, Bits<512>>,
    /// Context writes for the engines' copies: CMD_DATA words 0..8 / 0..3 / 0..7, reserved
    /// bits cleared.
    pub qp_we: Signal<Out, Bit>,
    pub qp_waddr: Signal<Out, Bits<QB>>,
    pub qp_wdata: Signal<Out, Bits<256>>,
    /// With `qp_we`: the QP was written in RESET, engines clear their state for it
    /// (indices, MSNs, queued work).
    pub qp_reset: Signal<Out, Bit>,
    pub cq_we: Signal<Out, Bit>,
    pub cq_waddr: Signal<Out, Bits<CB>>,
    pub cq_wdata: Signal<Out, Bits<96>>,
    pub mr_we: Signal<Out, Bit>,
    pub mr_waddr: Signal<Out, Bits<MB>>,
    pub mr_wdata: Signal<Out, Bits<224>>,
    /// Live state: QP n is in RTS if bit n of `qp_rts`, in ERROR if bit n of `qp_error`.
    pub qp_rts: Signal<Out, Bits<Q>>,
    /// QP n's connection runs with MPA CRCs if bit n of `qp_crc`, with markers on what it
    /// sends / receives if bit n of `qp_markers_tx` / `qp_markers_rx` (as last written).
    pub qp_crc: Signal<Out, Bits<Q>>,
    pub qp_markers_tx: Signal<Out, Bits<Q>>,
    pub qp_markers_rx: Signal<Out, Bits<Q>>,
    pub qp_error: Signal<Out, Bits<Q>>,
    pub mr_valid: Signal<Out, Bits<M>>,
    /// An engine moves a QP to ERROR, with the Terminate it sent or, if
    /// `fail_received`, the one the peer sent (layer << 12 | etype << 8 | code).
    pub fail: Signal<In, Bit>,
    pub fail_qp: Signal<In, Bits<QB>>,
    pub fail_term: Signal<In, Bits<16>>,
    pub fail_received: Signal<In, Bit>,
    /// An engine invalidates an MR (Send with Invalidate; the engine checked the key).
    pub invalidate: Signal<In, Bit>,
    pub invalidate_mr: Signal<In, Bits<MB>>,
    /// The object being queried, for the engines that keep its status; they answer on
    /// `status_*` one cycle later (a RAM read), in time for the command's last cycle.
    pub status_index: Signal<Out, Bits<24>>,
    pub status_sq_ci: Signal<In, Bits<32>>,
    pub status_rq_ci: Signal<In, Bits<32>>,
    pub status_cq_pi: Signal<In, Bits<32>>,
    pub status_cq_overflow: Signal<In, Bit>,
    /// The DMA fence: started when a command has changed a context; the command is done
    /// when the fence is.
    pub fence_start: Signal<Out, Bit>,
    pub fence_done: Signal<In, Bit>,
    qp_cfg: RAM<Bits<256>, QB>,
    cq_cfg: RAM<Bits<96>, CB>,
    mr_cfg: RAM<Bits<224>, MB>,
    /// Per QP: received (bit 16), layer, etype, code of its last Terminate.
    term: RAM<Bits<17>, QB>,
    /// Per QP: a Terminate is kept (an engine's failure sets it, a write in RESET clears it).
    term_valid: DFF<Bits<Q>>,
    state: DFF<Bits<3>>,
    op: DFF<Bits<8>>,
    index: DFF<Bits<24>>,
    data: DFF<Bits<512>>,
    rts: DFF<Bits<Q>>,
    crc: DFF<Bits<Q>>,
    markers_tx: DFF<Bits<Q>>,
    markers_rx: DFF<Bits<Q>>,
    error: DFF<Bits<Q>>,
    valid: DFF<Bits<M>>,
    done: DFF<Bit>,
    result: DFF<Bits<8>>,
    load: DFF<Bit>,
    result_data: DFF<Bits<512>>,
    qp_write: DFF<Bit>,
    qp_clear: DFF<Bit>,
    cq_write: DFF<Bit>,
    mr_write: DFF<Bit>,
    fence_go: DFF<Bit>,
    // Latched with the command: its opcode, one bit each, and its object's bit.
    is_write_qp: DFF<Bit>,
    is_query_qp: DFF<Bit>,
    is_write_cq: DFF<Bit>,
    is_query_cq: DFF<Bit>,
    is_write_mr: DFF<Bit>,
    is_query_mr: DFF<Bit>,
    is_invalidate_mr: DFF<Bit>,
    qp_sel: DFF<Bits<Q>>,
    mr_sel: DFF<Bits<M>>,
    // Taken in READ: the object's live state (the QP's state and whether a Terminate is
    // kept, the MR's valid bit). The Terminate RAM's word is from the same moment.
    cur_state: DFF<Bits<4>>,
    term_kept: DFF<Bit>,
    live_valid: DFF<Bit>,
    /// The command's QP failed from READ on: it ends in ERROR whatever the command wrote.
    late_fail: DFF<Bit>,
    // CHECK's rules, one register each, and the QP's new state.
    ok_opcode: DFF<Bit>,
    ok_index: DFF<Bit>,
    ok_qp_value: DFF<Bit>,
    ok_qp_state: DFF<Bit>,
    ok_cq_value: DFF<Bit>,
    ok_mr_value: DFF<Bit>,
    ok_key: DFF<Bit>,
    to_reset: DFF<Bit>,
    to_rts: DFF<Bit>,
    to_error: DFF<Bit>,
    // JUDGE's verdict, for ACT: the result and which change to make.
    verdict: DFF<Bits<8>>,
    do_qp_write: DFF<Bit>,
    do_cq_write: DFF<Bit>,
    do_mr_write: DFF<Bit>,
    do_invalidate: DFF<Bit>,
    do_query: DFF<Bit>,
    // The object and the new context's checks, valid in CHECK; the engines' events.
    is_qp_op: Signal<Local, Bit>,
    is_cq_op: Signal<Local, Bit>,
    is_mr_op: Signal<Local, Bit>,
    index_ok: Signal<Local, Bit>,
    fail_bit: Signal<Local, Bits<Q>>,
    inval_bit: Signal<Local, Bits<M>>,
    fail_here: Signal<Local, Bit>,
    new_state: Signal<Local, Bits<4>>,
    sq_log: Signal<Local, Bits<8>>,
    rq_log: Signal<Local, Bits<8>>,
    cq_log: Signal<Local, Bits<8>>,
    /// The ends of the new context's rings and ranges, added in READ (a carry past bit 63
    /// is a range past 2^64).
    sq_end: DFF<Bits<65>>,
    rq_end: DFF<Bits<65>>,
    cq_end: DFF<Bits<65>>,
    va_end: DFF<Bits<65>>,
    iova_end: DFF<Bits<65>>,
    qp_value_ok: Signal<Local, Bit>,
    cq_value_ok: Signal<Local, Bit>,
    mr_value_ok: Signal<Local, Bit>,
    relayout: Signal<Local, Bit>,
    qp_state_ok: Signal<Local, Bit>,
    term_status: Signal<Local, Bits<512>>,
    qp_words: Signal<Local, Bits<256>>,
    cq_words: Signal<Local, Bits<96>>,
    mr_words: Signal<Local, Bits<224>>,
    qp_count: Constant<Bits<24>>,
    cq_count: Constant<Bits<24>>,
    mr_count: Constant<Bits<24>>,
    cq_limit: Constant<Bits<16>>,
    one_q: Constant<Bits<Q>>,
    one_m: Constant<Bits<M>>,
    // Opcodes, results, states (rnic_proto::host).
    op_write_qp: Constant<Bits<8>>,
    op_query_qp: Constant<Bits<8>>,
    op_write_cq: Constant<Bits<8>>,
    op_query_cq: Constant<Bits<8>>,
    op_write_mr: Constant<Bits<8>>,
    op_query_mr: Constant<Bits<8>>,
    op_invalidate_mr: Constant<Bits<8>>,
    ok: Constant<Bits<8>>,
    bad_opcode: Constant<Bits<8>>,
    bad_index: Constant<Bits<8>>,
    bad_state: Constant<Bits<8>>,
    bad_value: Constant<Bits<8>>,
    st_reset: Constant<Bits<4>>,
    st_rts: Constant<Bits<4>>,
    st_error: Constant<Bits<4>>,
    // Field positions (lsb) in a context, from rnic_proto::host::context.
    at_state: Constant<Bits<9>>,
    at_mulpdu: Constant<Bits<9>>,
    at_send_cq: Constant<Bits<9>>,
    at_recv_cq: Constant<Bits<9>>,
    at_sq_log: Constant<Bits<9>>,
    at_rq_log: Constant<Bits<9>>,
    at_sq_base: Constant<Bits<9>>,
    at_rq_base: Constant<Bits<9>>,
    at_cq_log: Constant<Bits<9>>,
    at_cq_base: Constant<Bits<9>>,
    at_mr_key: Constant<Bits<9>>,
    at_mr_valid: Constant<Bits<9>>,
    at_mr_va: Constant<Bits<9>>,
    at_mr_length: Constant<Bits<9>>,
    at_mr_iova: Constant<Bits<9>>,
    at_term_code: Constant<Bits<9>>,
    at_term_etype: Constant<Bits<9>>,
    at_term_layer: Constant<Bits<9>>,
    at_term_received: Constant<Bits<9>>,
    at_term_valid: Constant<Bits<9>>,
    at_sq_ci: Constant<Bits<9>>,
    at_rq_ci: Constant<Bits<9>>,
    at_cq_pi: Constant<Bits<9>>,
    at_cq_overflow: Constant<Bits<9>>,
    // Context rules.
    max_log: Constant<Bits<8>>,
    min_mulpdu: Constant<Bits<16>>,
    at_crc: Constant<Bits<9>>,
    at_markers_tx: Constant<Bits<9>>,
    at_markers_rx: Constant<Bits<9>>,
    at_ird: Constant<Bits<9>>,
    at_ord: Constant<Bits<9>>,
    max_reads: Constant<Bits<8>>,
    sq_slot: Constant<Bits<65>>,
    rq_slot: Constant<Bits<65>>,
    cqe_slot: Constant<Bits<65>>,
    sq_align: Constant<Bits<64>>,
    rq_align: Constant<Bits<64>>,
    cq_align: Constant<Bits<64>>,
    /// The defined bits of each context: what is stored and reported.
    qp_defined: Constant<Bits<256>>,
    cq_defined: Constant<Bits<96>>,
    mr_defined: Constant<Bits<224>>,
    qp_state_clear: Constant<Bits<256>>,
    mr_valid_clear: Constant<Bits<224>>,
    mr_valid_set: Constant<Bits<224>>,
    one_512: Constant<Bits<512>>,
    // Command states.
    st_idle: Constant<Bits<3>>,
    st_read: Constant<Bits<3>>,
    st_check: Constant<Bits<3>>,
    st_judge: Constant<Bits<3>>,
    st_act: Constant<Bits<3>>,
    st_fence: Constant<Bits<3>>,
}

/// Command states: waiting for a command, reading its object's context and live state,
/// checking it, judging, acting on the verdict, waiting for the DMA fence.
const IDLE: u64 = 0;
const READ: u64 = 1;
const CHECK: u64 = 2;
const JUDGE: u64 = 3;
const ACT: u64 = 4;
const FENCE: u64 = 5;

/// The bits of `fields` as a mask over a context of `N` bits.
fn defined<const N: usize>(fields: &[Field]) -> Bits<N> {
    let mut mask = Bits::<N>::default();
    for f in fields {
        for bit in f.lsb..=f.msb() {
            mask = mask | (Bits::<N>::from(1_u64) << u64::from(bit));
        }
    }
    mask
}

impl<const QB: usize, const Q: usize, const CB: usize, const MB: usize, const M: usize> Cmd<QB, Q, CB, MB, M> {
    /// A command unit for `cqs` CQs (at most `1 << CB`); the QP and MR counts are `Q`, `M`.
    pub fn new(cqs: usize) -> Self {
        const {
            assert!(Q <= 1 << QB && M <= 1 << MB && QB <= 16 && CB <= 16 && MB <= 24);
        }
        assert!(cqs <= 1 << CB);
        let op = |c: CmdOpcode| constant(c.code().into());
        let res = |r: CmdResult| constant(r.code().into());
        let st = |s: QpState| constant(s as u64);
        let at = |f: Field| constant(f.lsb.into());
        let align_mask = |a: u64| constant(a - 1);
        Cmd {
            clock: Default::default(),
            reset: Default::default(),
            cmd_start: Default::default(),
            cmd_op: Default::default(),
            cmd_index: Default::default(),
            cmd_data: Default::default(),
            cmd_done: Default::default(),
            cmd_result: Default::default(),
            cmd_load: Default::default(),
            cmd_result_data: Default::default(),
            qp_we: Default::default(),
            qp_waddr: Default::default(),
            qp_wdata: Default::default(),
            qp_reset: Default::default(),
            cq_we: Default::default(),
            cq_waddr: Default::default(),
            cq_wdata: Default::default(),
            mr_we: Default::default(),
            mr_waddr: Default::default(),
            mr_wdata: Default::default(),
            qp_rts: Default::default(),
            qp_crc: Default::default(),
            qp_markers_tx: Default::default(),
            qp_markers_rx: Default::default(),
            qp_error: Default::default(),
            mr_valid: Default::default(),
            fail: Default::default(),
            fail_qp: Default::default(),
            fail_term: Default::default(),
            fail_received: Default::default(),
            invalidate: Default::default(),
            invalidate_mr: Default::default(),
            status_index: Default::default(),
            status_sq_ci: Default::default(),
            status_rq_ci: Default::default(),
            status_cq_pi: Default::default(),
            status_cq_overflow: Default::default(),
            fence_start: Default::default(),
            fence_done: Default::default(),
            qp_cfg: Default::default(),
            cq_cfg: Default::default(),
            mr_cfg: Default::default(),
            term: Default::default(),
            term_valid: Default::default(),
            state: Default::default(),
            op: Default::default(),
            index: Default::default(),
            data: Default::default(),
            rts: Default::default(),
            crc: Default::default(),
            markers_tx: Default::default(),
            markers_rx: Default::default(),
            at_markers_tx: at(qp_fields::MARKERS_TX),
            at_markers_rx: at(qp_fields::MARKERS_RX),
            at_crc: at(qp_fields::CRC_ENABLE),
            error: Default::default(),
            valid: Default::default(),
            done: Default::default(),
            result: Default::default(),
            load: Default::default(),
            result_data: Default::default(),
            qp_write: Default::default(),
            qp_clear: Default::default(),
            cq_write: Default::default(),
            mr_write: Default::default(),
            fence_go: Default::default(),
            is_write_qp: Default::default(),
            is_query_qp: Default::default(),
            is_write_cq: Default::default(),
            is_query_cq: Default::default(),
            is_write_mr: Default::default(),
            is_query_mr: Default::default(),
            is_invalidate_mr: Default::default(),
            qp_sel: Default::default(),
            mr_sel: Default::default(),
            cur_state: Default::default(),
            term_kept: Default::default(),
            live_valid: Default::default(),
            late_fail: Default::default(),
            ok_opcode: Default::default(),
            ok_index: Default::default(),
            ok_qp_value: Default::default(),
            ok_qp_state: Default::default(),
            ok_cq_value: Default::default(),
            ok_mr_value: Default::default(),
            ok_key: Default::default(),
            to_reset: Default::default(),
            to_rts: Default::default(),
            to_error: Default::default(),
            verdict: Default::default(),
            do_qp_write: Default::default(),
            do_cq_write: Default::default(),
            do_mr_write: Default::default(),
            do_invalidate: Default::default(),
            do_query: Default::default(),
            is_qp_op: Default::default(),
            is_cq_op: Default::default(),
            is_mr_op: Default::default(),
            index_ok: Default::default(),
            fail_bit: Default::default(),
            inval_bit: Default::default(),
            fail_here: Default::default(),
            new_state: Default::default(),
            sq_log: Default::default(),
            rq_log: Default::default(),
            cq_log: Default::default(),
            sq_end: Default::default(),
            rq_end: Default::default(),
            cq_end: Default::default(),
            va_end: Default::default(),
            iova_end: Default::default(),
            qp_value_ok: Default::default(),
            cq_value_ok: Default::default(),
            mr_value_ok: Default::default(),
            relayout: Default::default(),
            qp_state_ok: Default::default(),
            term_status: Default::default(),
            qp_words: Default::default(),
            cq_words: Default::default(),
            mr_words: Default::default(),
            qp_count: constant(Q as u64),
            cq_count: constant(cqs as u64),
            mr_count: constant(M as u64),
            cq_limit: constant(cqs as u64),
            one_q: constant(1),
            one_m: constant(1),
            op_write_qp: op(CmdOpcode::WriteQp),
            op_query_qp: op(CmdOpcode::QueryQp),
            op_write_cq: op(CmdOpcode::WriteCq),
            op_query_cq: op(CmdOpcode::QueryCq),
            op_write_mr: op(CmdOpcode::WriteMr),
            op_query_mr: op(CmdOpcode::QueryMr),
            op_invalidate_mr: op(CmdOpcode::InvalidateMr),
            ok: res(CmdResult::Ok),
            bad_opcode: res(CmdResult::BadOpcode),
            bad_index: res(CmdResult::BadIndex),
            bad_state: res(CmdResult::BadState),
            bad_value: res(CmdResult::BadValue),
            st_reset: st(QpState::Reset),
            st_rts: st(QpState::Rts),
            st_error: st(QpState::Error),
            at_state: at(qp_fields::STATE),
            at_mulpdu: at(qp_fields::MULPDU),
            at_send_cq: at(qp_fields::SEND_CQ),
            at_recv_cq: at(qp_fields::RECV_CQ),
            at_sq_log: at(qp_fields::SQ_LOG_SIZE),
            at_rq_log: at(qp_fields::RQ_LOG_SIZE),
            at_sq_base: at(qp_fields::SQ_BASE),
            at_rq_base: at(qp_fields::RQ_BASE),
            at_cq_log: at(cq_fields::LOG_SIZE),
            at_cq_base: at(cq_fields::BASE),
            at_mr_key: at(mr_fields::KEY),
            at_mr_valid: at(mr_fields::VALID),
            at_mr_va: at(mr_fields::VA),
            at_mr_length: at(mr_fields::LENGTH),
            at_mr_iova: at(mr_fields::IOVA),
            at_term_code: at(qp_fields::TERM_CODE),
            at_term_etype: at(qp_fields::TERM_ETYPE),
            at_term_layer: at(qp_fields::TERM_LAYER),
            at_term_received: at(qp_fields::TERM_RECEIVED),
            at_term_valid: at(qp_fields::TERM_VALID),
            at_sq_ci: at(qp_fields::SQ_CI),
            at_rq_ci: at(qp_fields::RQ_CI),
            at_cq_pi: at(cq_fields::PI),
            at_cq_overflow: at(cq_fields::OVERFLOW),
            max_log: constant(MAX_LOG_SIZE.into()),
            min_mulpdu: constant(MIN_MULPDU as u64),
            at_ird: at(qp_fields::IRD),
            at_ord: at(qp_fields::ORD),
            max_reads: constant(MAX_READS.into()),
            sq_slot: constant(SQ_WQE_SLOT_LEN as u64),
            rq_slot: constant(RQ_WQE_LEN as u64),
            cqe_slot: constant(CQE_LEN as u64),
            sq_align: align_mask(SQ_BASE_ALIGN),
            rq_align: align_mask(RQ_BASE_ALIGN),
            cq_align: align_mask(CQ_BASE_ALIGN),
            qp_defined: Constant::new(defined(qp_fields::CONTEXT)),
            cq_defined: Constant::new(defined(cq_fields::CONTEXT)),
            mr_defined: Constant::new(defined(mr_fields::CONTEXT)),
            qp_state_clear: Constant::new(!defined::<256>(&[qp_fields::STATE])),
            mr_valid_clear: Constant::new(!defined::<224>(&[mr_fields::VALID])),
            mr_valid_set: Constant::new(defined(&[mr_fields::VALID])),
            one_512: constant(1),
            st_idle: constant(IDLE),
            st_read: constant(READ),
            st_check: constant(CHECK),
            st_judge: constant(JUDGE),
            st_act: constant(ACT),
            st_fence: constant(FENCE),
        }
    }
}

impl<const QB: usize, const Q: usize, const CB: usize, const MB: usize, const M: usize> Logic
    for Cmd<QB, Q, CB, MB, M>
{
    #[hdl_gen]
    fn update(&mut self) {
        dff_setup!(
            self,
            clock,
            state,
            op,
            index,
            data,
            rts,
            crc,
            markers_tx,
            markers_rx,
            error,
            valid,
            done,
            result,
            load,
            result_data,
            qp_write,
            qp_clear,
            cq_write,
            mr_write,
            fence_go,
            term_valid,
            is_write_qp,
            is_query_qp,
            is_write_cq,
            is_query_cq,
            is_write_mr,
            is_query_mr,
            is_invalidate_mr,
            qp_sel,
            mr_sel,
            cur_state,
            term_kept,
            live_valid,
            late_fail,
            ok_opcode,
            ok_index,
            ok_qp_value,
            ok_qp_state,
            ok_cq_value,
            ok_mr_value,
            ok_key,
            to_reset,
            to_rts,
            to_error,
            verdict,
            do_qp_write,
            do_cq_write,
            do_mr_write,
            do_invalidate,
            do_query,
            sq_end,
            rq_end,
            cq_end,
            va_end,
            iova_end
        );
        self.qp_cfg.read_clock.next = self.clock.val();
        self.qp_cfg.write_clock.next = self.clock.val();
        self.cq_cfg.read_clock.next = self.clock.val();
        self.cq_cfg.write_clock.next = self.clock.val();
        self.mr_cfg.read_clock.next = self.clock.val();
        self.mr_cfg.write_clock.next = self.clock.val();
        self.term.read_clock.next = self.clock.val();
        self.term.write_clock.next = self.clock.val();

        // The new context as it will be stored: defined fields only.
        self.qp_words.next = self.data.q.val().get_bits::<256>(0) & self.qp_defined.val();
        self.cq_words.next = self.data.q.val().get_bits::<96>(0) & self.cq_defined.val();
        self.mr_words.next = self.data.q.val().get_bits::<224>(0) & self.mr_defined.val();

        // Every RAM reads the latched index; the word is there in state 2.
        self.qp_cfg.read_address.next = self.index.q.val().get_bits::<QB>(0);
        self.cq_cfg.read_address.next = self.index.q.val().get_bits::<CB>(0);
        self.mr_cfg.read_address.next = self.index.q.val().get_bits::<MB>(0);
        self.term.read_address.next = self.index.q.val().get_bits::<QB>(0);
        self.qp_cfg.write_address.next = self.index.q.val().get_bits::<QB>(0);
        self.qp_cfg.write_data.next = self.qp_words.val();
        self.qp_cfg.write_enable.next = self.qp_write.q.val();
        self.cq_cfg.write_address.next = self.index.q.val().get_bits::<CB>(0);
        self.cq_cfg.write_data.next = self.cq_words.val();
        self.cq_cfg.write_enable.next = self.cq_write.q.val();
        self.mr_cfg.write_address.next = self.index.q.val().get_bits::<MB>(0);
        self.mr_cfg.write_data.next = self.mr_words.val();
        self.mr_cfg.write_enable.next = self.mr_write.q.val();
        // An engine's Terminate is kept for QUERY_QP (`term_valid` says whether there is
        // one: a QP written in RESET forgets it).
        self.term.write_enable.next = self.fail.val();
        self.term.write_address.next = self.fail_qp.val();
        self.term.write_data.next = bit_cast::<17, 16>(self.fail_term.val());
        if self.fail_received.val() {
            self.term.write_data.next = bit_cast::<17, 16>(self.fail_term.val()) | 0x10000_u64;
        }
        // The command's object, and the live state it starts from (READ).
        self.is_qp_op.next = self.is_write_qp.q.val() | self.is_query_qp.q.val();
        self.is_cq_op.next = self.is_write_cq.q.val() | self.is_query_cq.q.val();
        self.is_mr_op.next = self.is_write_mr.q.val() | self.is_query_mr.q.val() | self.is_invalidate_mr.q.val();
        self.index_ok.next = (self.is_qp_op.val() & (self.index.q.val() < self.qp_count.val()))
            | (self.is_cq_op.val() & (self.index.q.val() < self.cq_count.val()))
            | (self.is_mr_op.val() & (self.index.q.val() < self.mr_count.val()));
        self.fail_bit.next = self.one_q.val() << bit_cast::<Q, QB>(self.fail_qp.val());
        self.fail_here.next = self.fail.val() & (self.fail_qp.val() == self.index.q.val().get_bits::<QB>(0));
        self.inval_bit.next = 0.into();
        if self.invalidate.val() {
            self.inval_bit.next = self.one_m.val() << bit_cast::<M, MB>(self.invalidate_mr.val());
        }
        self.cur_state.d.next = self.st_reset.val();
        if (self.rts.q.val() & self.qp_sel.q.val()).any() {
            self.cur_state.d.next = self.st_rts.val();
        }
        if (self.error.q.val() & self.qp_sel.q.val()).any() {
            self.cur_state.d.next = self.st_error.val();
        }
        self.term_kept.d.next = (self.term_valid.q.val() & self.qp_sel.q.val()).any();
        self.live_valid.d.next = (self.valid.q.val() & self.mr_sel.q.val()).any();
        if self.state.q.val() != self.st_read.val() {
            self.cur_state.d.next = self.cur_state.q.val();
            self.term_kept.d.next = self.term_kept.q.val();
            self.live_valid.d.next = self.live_valid.q.val();
        }
        if (self.state.q.val() == self.st_read.val())
            | (self.state.q.val() == self.st_check.val())
            | (self.state.q.val() == self.st_judge.val())
        {
            self.late_fail.d.next = self.late_fail.q.val() | self.fail_here.val();
        } else {
            self.late_fail.d.next = false;
        }

        if self.state.q.val() == self.st_read.val() {
            self.sq_end.d.next = bit_cast::<65, 64>(self.qp_words.val().get_bits::<64>(self.at_sq_base.val().index()))
                + (self.sq_slot.val() << self.qp_words.val().get_bits::<8>(self.at_sq_log.val().index()));
            self.rq_end.d.next = bit_cast::<65, 64>(self.qp_words.val().get_bits::<64>(self.at_rq_base.val().index()))
                + (self.rq_slot.val() << self.qp_words.val().get_bits::<8>(self.at_rq_log.val().index()));
            self.cq_end.d.next = bit_cast::<65, 64>(self.cq_words.val().get_bits::<64>(self.at_cq_base.val().index()))
                + (self.cqe_slot.val() << self.cq_words.val().get_bits::<8>(self.at_cq_log.val().index()));
            self.va_end.d.next = bit_cast::<65, 64>(self.mr_words.val().get_bits::<64>(self.at_mr_va.val().index()))
                + bit_cast::<65, 64>(self.mr_words.val().get_bits::<64>(self.at_mr_length.val().index()));
            self.iova_end.d.next =
                bit_cast::<65, 64>(self.mr_words.val().get_bits::<64>(self.at_mr_iova.val().index()))
                    + bit_cast::<65, 64>(self.mr_words.val().get_bits::<64>(self.at_mr_length.val().index()));
        }

        // Everything below is needed in CHECK only; elsewhere it is held at zero (which
        // also spares a simulator evaluating wide comparisons every cycle).
        self.new_state.next = 0.into();
        self.sq_log.next = 0.into();
        self.rq_log.next = 0.into();
        self.cq_log.next = 0.into();
        self.qp_value_ok.next = false;
        self.cq_value_ok.next = false;
        self.mr_value_ok.next = false;
        self.relayout.next = false;
        self.qp_state_ok.next = false;
        self.term_status.next = 0.into();
        if self.state.q.val() == self.st_check.val() {
            // The value checks of QpContext/CqContext/MrContext::validate: known state, ring
            // sizes, alignment, no range past 2^64, a usable MULPDU in RTS, IRD and ORD within
            // the Read tables, existing CQs.
            self.new_state.next = self.qp_words.val().get_bits::<4>(self.at_state.val().index());
            self.sq_log.next = self.qp_words.val().get_bits::<8>(self.at_sq_log.val().index());
            self.rq_log.next = self.qp_words.val().get_bits::<8>(self.at_rq_log.val().index());
            self.cq_log.next = self.cq_words.val().get_bits::<8>(self.at_cq_log.val().index());
            self.qp_value_ok.next = (self.new_state.val() <= self.st_error.val())
                & (self.sq_log.val() <= self.max_log.val())
                & (self.rq_log.val() <= self.max_log.val())
                & !(self.qp_words.val().get_bits::<64>(self.at_sq_base.val().index()) & self.sq_align.val()).any()
                & !(self.qp_words.val().get_bits::<64>(self.at_rq_base.val().index()) & self.rq_align.val()).any()
                & !(self.sq_end.q.val().get_bit(64) & self.sq_end.q.val().get_bits::<64>(0).any())
                & !(self.rq_end.q.val().get_bit(64) & self.rq_end.q.val().get_bits::<64>(0).any())
                & !((self.new_state.val() == self.st_rts.val())
                    & (self.qp_words.val().get_bits::<16>(self.at_mulpdu.val().index()) < self.min_mulpdu.val()))
                & (self.qp_words.val().get_bits::<8>(self.at_ird.val().index()) <= self.max_reads.val())
                & (self.qp_words.val().get_bits::<8>(self.at_ord.val().index()) <= self.max_reads.val())
                & (self.qp_words.val().get_bits::<16>(self.at_send_cq.val().index()) < self.cq_limit.val())
                & (self.qp_words.val().get_bits::<16>(self.at_recv_cq.val().index()) < self.cq_limit.val());
            self.cq_value_ok.next = (self.cq_log.val() <= self.max_log.val())
                & !(self.cq_words.val().get_bits::<64>(self.at_cq_base.val().index()) & self.cq_align.val()).any()
                & !(self.cq_end.q.val().get_bit(64) & self.cq_end.q.val().get_bits::<64>(0).any());
            self.mr_value_ok.next = !(self.va_end.q.val().get_bit(64) & self.va_end.q.val().get_bits::<64>(0).any())
                & !(self.iova_end.q.val().get_bit(64) & self.iova_end.q.val().get_bits::<64>(0).any());
            // State rules: rings move only in RESET; ERROR goes back to RTS only through RESET.
            self.relayout.next = (self.qp_words.val().get_bits::<64>(self.at_sq_base.val().index())
                != self.qp_cfg.read_data.val().get_bits::<64>(self.at_sq_base.val().index()))
                | (self.qp_words.val().get_bits::<64>(self.at_rq_base.val().index())
                    != self.qp_cfg.read_data.val().get_bits::<64>(self.at_rq_base.val().index()))
                | (self.sq_log.val() != self.qp_cfg.read_data.val().get_bits::<8>(self.at_sq_log.val().index()))
                | (self.rq_log.val() != self.qp_cfg.read_data.val().get_bits::<8>(self.at_rq_log.val().index()));
            self.qp_state_ok.next = !(self.relayout.val() & (self.cur_state.q.val() != self.st_reset.val()))
                & !((self.cur_state.q.val() == self.st_error.val()) & (self.new_state.val() == self.st_rts.val()));

            if self.term_kept.q.val() {
                self.term_status.next = (bit_cast::<512, 8>(self.term.read_data.val().get_bits::<8>(0))
                    << self.at_term_code.val())
                    | (bit_cast::<512, 4>(self.term.read_data.val().get_bits::<4>(8)) << self.at_term_etype.val())
                    | (bit_cast::<512, 4>(self.term.read_data.val().get_bits::<4>(12)) << self.at_term_layer.val())
                    | (bit_cast::<512, 1>(self.term.read_data.val().get_bits::<1>(16)) << self.at_term_received.val())
                    | (self.one_512.val() << self.at_term_valid.val());
            }
        }

        self.done.d.next = false;
        self.load.d.next = false;
        self.qp_write.d.next = false;
        self.qp_clear.d.next = false;
        self.cq_write.d.next = false;
        self.mr_write.d.next = false;
        self.fence_go.d.next = false;
        if (self.state.q.val() == self.st_idle.val()) & self.cmd_start.val() {
            self.op.d.next = self.cmd_op.val();
            self.index.d.next = self.cmd_index.val();
            self.data.d.next = self.cmd_data.val();
            self.state.d.next = self.st_read.val();
            self.is_write_qp.d.next = self.cmd_op.val() == self.op_write_qp.val();
            self.is_query_qp.d.next = self.cmd_op.val() == self.op_query_qp.val();
            self.is_write_cq.d.next = self.cmd_op.val() == self.op_write_cq.val();
            self.is_query_cq.d.next = self.cmd_op.val() == self.op_query_cq.val();
            self.is_write_mr.d.next = self.cmd_op.val() == self.op_write_mr.val();
            self.is_query_mr.d.next = self.cmd_op.val() == self.op_query_mr.val();
            self.is_invalidate_mr.d.next = self.cmd_op.val() == self.op_invalidate_mr.val();
            self.qp_sel.d.next = self.one_q.val() << bit_cast::<Q, QB>(self.cmd_index.val().get_bits::<QB>(0));
            self.mr_sel.d.next = self.one_m.val() << bit_cast::<M, MB>(self.cmd_index.val().get_bits::<MB>(0));
        }
        if self.state.q.val() == self.st_read.val() {
            self.state.d.next = self.st_check.val();
        }
        if self.state.q.val() == self.st_check.val() {
            self.state.d.next = self.st_judge.val();
        }
        if self.state.q.val() == self.st_judge.val() {
            self.state.d.next = self.st_act.val();
        }
        if (self.state.q.val() == self.st_fence.val()) & self.fence_done.val() {
            self.state.d.next = self.st_idle.val();
            self.done.d.next = true;
        }

        // CHECK: each rule, and a query's answer.
        if self.state.q.val() == self.st_check.val() {
            self.ok_opcode.d.next = self.is_qp_op.val() | self.is_cq_op.val() | self.is_mr_op.val();
            self.ok_index.d.next = self.index_ok.val();
            self.ok_qp_value.d.next = self.qp_value_ok.val();
            self.ok_qp_state.d.next = self.qp_state_ok.val();
            self.ok_cq_value.d.next = self.cq_value_ok.val();
            self.ok_mr_value.d.next = self.mr_value_ok.val();
            self.ok_key.d.next = self.live_valid.q.val()
                & (self.mr_cfg.read_data.val().get_bits::<8>(self.at_mr_key.val().index())
                    == self.data.q.val().get_bits::<8>(self.at_mr_key.val().index()));
            self.to_reset.d.next = self.new_state.val() == self.st_reset.val();
            self.to_rts.d.next = self.new_state.val() == self.st_rts.val();
            self.to_error.d.next = self.new_state.val() == self.st_error.val();
            if self.is_query_qp.q.val() {
                self.result_data.d.next = bit_cast::<512, 256>(self.qp_cfg.read_data.val() & self.qp_state_clear.val())
                    | (bit_cast::<512, 4>(self.cur_state.q.val()) << self.at_state.val())
                    | self.term_status.val()
                    | (bit_cast::<512, 32>(self.status_sq_ci.val()) << self.at_sq_ci.val())
                    | (bit_cast::<512, 32>(self.status_rq_ci.val()) << self.at_rq_ci.val());
            }
            if self.is_query_cq.q.val() {
                self.result_data.d.next = bit_cast::<512, 96>(self.cq_cfg.read_data.val())
                    | (bit_cast::<512, 32>(self.status_cq_pi.val()) << self.at_cq_pi.val());
                if self.status_cq_overflow.val() {
                    self.result_data.d.next = bit_cast::<512, 96>(self.cq_cfg.read_data.val())
                        | (bit_cast::<512, 32>(self.status_cq_pi.val()) << self.at_cq_pi.val())
                        | (self.one_512.val() << self.at_cq_overflow.val());
                }
            }
            if self.is_query_mr.q.val() {
                self.result_data.d.next = bit_cast::<512, 224>(self.mr_cfg.read_data.val() & self.mr_valid_clear.val());
                if self.live_valid.q.val() {
                    self.result_data.d.next = bit_cast::<512, 224>(
                        (self.mr_cfg.read_data.val() & self.mr_valid_clear.val()) | self.mr_valid_set.val(),
                    );
                }
            }
        }

        // JUDGE: the verdict, in the model's order (opcode, index, value, state), and what
        // the command will change.
        if self.state.q.val() == self.st_judge.val() {
            self.verdict.d.next = self.ok.val();
            self.do_qp_write.d.next = false;
            self.do_cq_write.d.next = false;
            self.do_mr_write.d.next = false;
            self.do_invalidate.d.next = false;
            self.do_query.d.next = false;
            if !self.ok_opcode.q.val() {
                self.verdict.d.next = self.bad_opcode.val();
            } else if !self.ok_index.q.val() {
                self.verdict.d.next = self.bad_index.val();
            } else if self.is_write_qp.q.val() {
                if !self.ok_qp_value.q.val() {
                    self.verdict.d.next = self.bad_value.val();
                } else if !self.ok_qp_state.q.val() {
                    self.verdict.d.next = self.bad_state.val();
                } else {
                    self.do_qp_write.d.next = true;
                }
            } else if self.is_write_cq.q.val() {
                if !self.ok_cq_value.q.val() {
                    self.verdict.d.next = self.bad_value.val();
                } else {
                    self.do_cq_write.d.next = true;
                }
            } else if self.is_write_mr.q.val() {
                if !self.ok_mr_value.q.val() {
                    self.verdict.d.next = self.bad_value.val();
                } else {
                    self.do_mr_write.d.next = true;
                }
            } else if self.is_invalidate_mr.q.val() {
                // The MR must be valid and the key must match.
                if !self.ok_key.q.val() {
                    self.verdict.d.next = self.bad_state.val();
                } else {
                    self.do_invalidate.d.next = true;
                }
            } else {
                self.do_query.d.next = true;
            }
        }

        // ACT: the result; a change goes to the engines' copies and the live state, and
        // the command waits for the DMA fence.
        if self.state.q.val() == self.st_act.val() {
            self.state.d.next = self.st_idle.val();
            self.done.d.next = true;
            self.result.d.next = self.verdict.q.val();
            self.load.d.next = self.do_query.q.val();
            self.qp_write.d.next = self.do_qp_write.q.val();
            self.qp_clear.d.next = self.do_qp_write.q.val() & self.to_reset.q.val();
            self.cq_write.d.next = self.do_cq_write.q.val();
            self.mr_write.d.next = self.do_mr_write.q.val();
            if self.do_qp_write.q.val()
                | self.do_cq_write.q.val()
                | self.do_mr_write.q.val()
                | self.do_invalidate.q.val()
            {
                self.state.d.next = self.st_fence.val();
                self.done.d.next = false;
                self.fence_go.d.next = true;
            }
            if self.do_qp_write.q.val() {
                self.rts.d.next = self.rts.q.val() & !self.qp_sel.q.val();
                self.error.d.next = self.error.q.val() & !self.qp_sel.q.val();
                self.crc.d.next = self.crc.q.val() & !self.qp_sel.q.val();
                if self.qp_words.val().get_bit(self.at_crc.val().index()) {
                    self.crc.d.next = self.crc.q.val() | self.qp_sel.q.val();
                }
                self.markers_tx.d.next = self.markers_tx.q.val() & !self.qp_sel.q.val();
                if self.qp_words.val().get_bit(self.at_markers_tx.val().index()) {
                    self.markers_tx.d.next = self.markers_tx.q.val() | self.qp_sel.q.val();
                }
                self.markers_rx.d.next = self.markers_rx.q.val() & !self.qp_sel.q.val();
                if self.qp_words.val().get_bit(self.at_markers_rx.val().index()) {
                    self.markers_rx.d.next = self.markers_rx.q.val() | self.qp_sel.q.val();
                }
                if self.to_rts.q.val() & !self.late_fail.q.val() {
                    self.rts.d.next = self.rts.q.val() | self.qp_sel.q.val();
                }
                if self.to_error.q.val() | self.late_fail.q.val() {
                    self.error.d.next = self.error.q.val() | self.qp_sel.q.val();
                }
                if self.to_reset.q.val() & !self.late_fail.q.val() {
                    self.term_valid.d.next = self.term_valid.q.val() & !self.qp_sel.q.val();
                }
            }
            if self.do_mr_write.q.val() {
                self.valid.d.next = self.valid.q.val() & !self.mr_sel.q.val();
                if self.mr_words.val().get_bit(self.at_mr_valid.val().index()) {
                    self.valid.d.next = self.valid.q.val() | self.mr_sel.q.val();
                }
            }
            if self.do_invalidate.q.val() {
                self.valid.d.next = self.valid.q.val() & !self.mr_sel.q.val();
            }
        }
        // Engines' updates of the live state come last, each on its own bit: a failure or
        // an invalidation in ACT wins over the command for its QP or MR (the host sees
        // ERROR and writes the QP again) and leaves the command's other changes be.
        if self.fail.val() {
            self.rts.d.next = self.rts.d.val() & !self.fail_bit.val();
            self.error.d.next = self.error.d.val() | self.fail_bit.val();
            self.term_valid.d.next = self.term_valid.d.val() | self.fail_bit.val();
        }
        if self.invalidate.val() {
            self.valid.d.next = self.valid.d.val() & !self.inval_bit.val();
        }
        if self.reset.val() {
            self.state.d.next = self.st_idle.val();
            self.done.d.next = false;
            self.fence_go.d.next = false;
            self.load.d.next = false;
            self.qp_write.d.next = false;
            self.qp_clear.d.next = false;
            self.cq_write.d.next = false;
            self.mr_write.d.next = false;
            self.rts.d.next = 0.into();
            self.error.d.next = 0.into();
            self.valid.d.next = 0.into();
            self.term_valid.d.next = 0.into();
        }

        self.cmd_done.next = self.done.q.val();
        self.fence_start.next = self.fence_go.q.val();
        self.cmd_result.next = self.result.q.val();
        self.cmd_load.next = self.load.q.val();
        self.cmd_result_data.next = self.result_data.q.val();
        self.qp_we.next = self.qp_write.q.val();
        self.qp_waddr.next = self.index.q.val().get_bits::<QB>(0);
        self.qp_wdata.next = self.qp_words.val();
        self.qp_reset.next = self.qp_clear.q.val();
        self.cq_we.next = self.cq_write.q.val();
        self.cq_waddr.next = self.index.q.val().get_bits::<CB>(0);
        self.cq_wdata.next = self.cq_words.val();
        self.mr_we.next = self.mr_write.q.val();
        self.mr_waddr.next = self.index.q.val().get_bits::<MB>(0);
        self.mr_wdata.next = self.mr_words.val();
        self.status_index.next = self.index.q.val();
        self.qp_rts.next = self.rts.q.val();
        self.qp_crc.next = self.crc.q.val();
        self.qp_markers_tx.next = self.markers_tx.q.val();
        self.qp_markers_rx.next = self.markers_rx.q.val();
        self.qp_error.next = self.error.q.val();
        self.mr_valid.next = self.valid.q.val();
    }
}
