//! RDMAP requester, transmit side: a fetched SQ WQE becomes a message for the segmenter,
//! or a completion in error (`rnic_proto::model::local_outcome`, `sq_cqe`).
//!
//! Checks, in the reference's order: the QP is not in ERROR (else FLUSHED), the opcode is
//! one the interface defines (else BAD_OPCODE), and a non-zero length passes the lkey
//! check ([`MrCheck`]: the source of a Send or Write is read, the sink of a Read must allow
//! LOCAL_WRITE; else LOCAL_PROTECTION). An error moves the QP to ERROR through the
//! command unit (`fail`), so the WQEs behind it are flushed.
//!
//! A message is a Send or Immediate Data (MSN of QN 0; Immediate Data carries the WQE's
//! eight `imm` octets inline and has no local buffer), an RDMA Write (the peer's STag and
//! TO), a Read Request (MSN of QN 1, its 28-octet body inline: sink = the local buffer,
//! source = the peer's) or an Atomic Request (RFC 7306 §5.2.1: MSN of QN 1 too, its
//! 52-octet body inline; the Request Identifier is the QP's count of Atomic Requests, which
//! is also the QN 3 MSN its response will carry; the local buffer, 8 octets with
//! LOCAL_WRITE, receives the original value). Reads and atomics share the QP's ORD slots.
//! Completions leave in WQE order through one queue: errors at once, Sends, Immediate Data
//! and Writes (if signaled) when the segmenter reports their last ULPDU gone, Reads and
//! atomics when the receive side reports their response placed (`order_done`). A completion still waiting
//! for a response when its QP leaves RTS (a Terminate, a reset) is written FLUSHED.
use rust_hdl::prelude::*;

use rnic_proto::host::context::{qp_fields, MAX_READS};
use rnic_proto::host::desc::{cqe_fields, sq_wqe_fields, CqeOpcode, CqeStatus, SqOpcode};
use rnic_proto::host::Field;

use crate::common::{constant, Bswap32, Bswap64, RamFifo, SkidBuffer};
use crate::host::{MrCheck, MrEntry, MR_ENTRY_BITS};
use crate::rdmap::DONE_BITS;

/// Completions waiting for their message to leave: `1 << PENDING_BITS`. Thirty-two keep
/// the segmenter busy across a 200-cycle payload read of small messages (Little's law).
const PENDING_BITS: usize = 5;
const PENDING: usize = 1 << PENDING_BITS;
// The entries after one, and the Reads outstanding up to it, fit in half the count.
const _: () = assert!(PENDING <= 1 << (DONE_BITS - 1) && (MAX_READS as usize) < 1 << (DONE_BITS - 1));
/// A pending completion: the CQE (256 bits), its CQ (16), flags: waits for its message,
/// writes a CQE; the QP's Reads and atomics that come first, counted as `order_done` is
/// (modulo 64, `DONE_BITS`); a Read's or atomic's QN 1 MSN (32 bits; 0 for other WQEs);
/// named by the peer's Terminate, with this status (8 bits).
const ENTRY_CQ: u64 = 256;
const ENTRY_WAITS: u64 = 272;
const ENTRY_WRITES: u64 = 273;
const ENTRY_READS: u64 = 274;
const ENTRY_MSN: u64 = ENTRY_READS + DONE_BITS as u64;
const ENTRY_NAMED: u64 = ENTRY_MSN + 32;
const ENTRY_NAMED_STATUS: u64 = ENTRY_NAMED + 1;
const ENTRY_BITS: usize = ENTRY_NAMED_STATUS as usize + 8;

/// TxRequest's states.
#[derive(Copy, Clone, PartialEq, Debug, LogicState)]
pub enum TxState {
    /// A WQE is taken from the SQ fetch, unless its QP must wait.
    Accept,
    /// The MR its lkey names comes out of the table into a register.
    Lookup,
    /// The WQE's checks, from registers; their verdict is registered.
    Verify,
    /// The verdict is acted on: the completion is queued, the Read table entry pushed.
    Check,
    /// The message waits for the segmenter to take its job.
    Job,
}

/// `QB`/`CB`/`MB` = QP/CQ/MR index bits, `Q`/`M` = QP and MR counts.
#[derive(LogicBlock)]
pub struct TxRequest<const QB: usize, const Q: usize, const CB: usize, const MB: usize, const M: usize> {
    pub clock: Signal<In, Clock>,
    pub reset: Signal<In, Bit>,
    /// From SQ fetch.
    pub s_valid: Signal<In, Bit>,
    pub s_ready: Signal<Out, Bit>,
    pub s_wqe: Signal<In, Bits<768>>,
    pub s_qpn: Signal<In, Bits<QB>>,
    pub s_ctx: Signal<In, Bits<256>>,
    pub s_error: Signal<In, Bit>,
    /// The WQE is a Read or an atomic (SQ fetch decodes it as it arrives).
    pub s_ordered: Signal<In, Bit>,
    pub qp_error: Signal<In, Bits<Q>>,
    pub qp_rts: Signal<In, Bits<Q>>,
    pub qp_we: Signal<In, Bit>,
    pub qp_waddr: Signal<In, Bits<QB>>,
    pub qp_reset: Signal<In, Bit>,
    pub mr_we: Signal<In, Bit>,
    pub mr_waddr: Signal<In, Bits<MB>>,
    pub mr_wdata: Signal<In, Bits<224>>,
    pub mr_valid: Signal<In, Bits<M>>,
    /// To the segmenter (see `ddp::TxSegment`).
    pub m_job_valid: Signal<Out, Bit>,
    pub m_job_ready: Signal<In, Bit>,
    pub m_job_tagged: Signal<Out, Bit>,
    pub m_job_opcode: Signal<Out, Bits<4>>,
    pub m_job_stag: Signal<Out, Bits<32>>,
    pub m_job_to: Signal<Out, Bits<64>>,
    pub m_job_qn: Signal<Out, Bits<32>>,
    pub m_job_msn: Signal<Out, Bits<32>>,
    pub m_job_addr: Signal<Out, Bits<64>>,
    pub m_job_len: Signal<Out, Bits<32>>,
    pub m_job_inline: Signal<Out, Bits<416>>,
    pub m_job_inline_len: Signal<Out, Bits<6>>,
    pub m_job_mulpdu: Signal<Out, Bits<16>>,
    pub m_job_conn: Signal<Out, Bits<16>>,
    /// The QP's connection runs with MPA CRCs.
    pub m_job_crc: Signal<Out, Bit>,
    pub m_job_qpn: Signal<Out, Bits<QB>>,
    pub s_done_valid: Signal<In, Bit>,
    /// Read and Atomic Requests sent, for the receive side's table of outstanding ones (see
    /// `RdmapRx::s_read_entry`); a QP whose `reads_full` bit is set issues no more. From
    /// registers: the request reaches the table the cycle after its checks (the MR table
    /// and its checks stay out of the receive side's table update).
    pub m_read_valid: Signal<Out, Bit>,
    pub m_read_qpn: Signal<Out, Bits<QB>>,
    pub m_read_entry: Signal<Out, Bits<129>>,
    pub reads_full: Signal<In, Bits<Q>>,
    /// Reads completed by the receive side for QP `order_qpn` (see `RdmapRx`).
    pub order_qpn: Signal<Out, Bits<QB>>,
    pub order_done: Signal<In, Bits<DONE_BITS>>,
    /// To the CQ writer.
    pub m_cqe_valid: Signal<Out, Bit>,
    pub m_cqe_ready: Signal<In, Bit>,
    pub m_cqn: Signal<Out, Bits<CB>>,
    pub m_cqe: Signal<Out, Bits<256>>,
    /// From the receive side: a Terminate from the peer named the Read or atomic of QP
    /// `s_term_qpn` with QN 1 MSN `s_term_msn`; if it is still waiting for its response, it
    /// completes with `s_term_status` (`rnic_proto::model::terminated_read_status`).
    pub s_term_valid: Signal<In, Bit>,
    pub s_term_qpn: Signal<In, Bits<QB>>,
    pub s_term_msn: Signal<In, Bits<32>>,
    pub s_term_status: Signal<In, Bits<8>>,
    /// To the command unit: this QP is in ERROR now (Terminate 0/0/0x00 is to be sent).
    pub m_fail: Signal<Out, Bit>,
    pub m_fail_qp: Signal<Out, Bits<QB>>,
    mrs: RAM<Bits<MR_ENTRY_BITS>, MB>,
    /// The table entry of the MR being written.
    mr_entry: MrEntry,
    send_msn: RAM<Bits<32>, QB>,
    read_msn: RAM<Bits<32>, QB>,
    /// Atomic Requests sent (the next Request Identifier is one more).
    atomic_msn: RAM<Bits<32>, QB>,
    check: MrCheck,
    state: DFF<TxState>,
    wqe: DFF<Bits<768>>,
    qpn: DFF<Bits<QB>>,
    ctx: DFF<Bits<256>>,
    fetch_error: DFF<Bit>,
    job_valid: DFF<Bit>,
    /// The MR the lkey names, out of the table in Lookup: its checks start at a register.
    mr: DFF<Bits<MR_ENTRY_BITS>>,
    /// The local range's TO + length, set in Lookup for Verify's check.
    range_end: DFF<Bits<65>>,
    /// The WQE's status, as Verify found it (`CqeStatus`).
    verdict: DFF<Bits<8>>,
    /// What Check read from the RAMs, held while the message waits (the RAMs move on).
    job_addr: DFF<Bits<64>>,
    job_msn: DFF<Bits<32>>,
    /// The Request Identifier of the atomic being sent, read with its WQE.
    req_id: DFF<Bits<32>>,
    fail: DFF<Bit>,
    /// The Read or atomic request for the receive side's table, a cycle after its checks.
    read_valid: DFF<Bit>,
    read_qpn: DFF<Bits<QB>>,
    read_entry: DFF<Bits<129>>,
    /// Completions in WQE order, as made (see `ENTRY_BITS`), in block RAM; `head` and
    /// `tail` count with it and name each entry's slot in the registers below.
    pending: RamFifo<ENTRY_BITS, PENDING_BITS, { PENDING_BITS + 1 }>,
    /// The oldest entries, out of the RAM: the decision to complete the head does not
    /// reach back into the RAM's read address.
    pending_out: SkidBuffer<ENTRY_BITS>,
    /// Slots taken next cycle, but for one freed then.
    queued: Signal<Local, Bits<6>>,
    /// The bit of `queued` set when every slot is taken.
    at_full: Constant<Bits<8>>,
    head: DFF<Bits<6>>,
    tail: DFF<Bits<6>>,
    /// Every slot may be taken: set a cycle ahead from `tail`'s next value and `head` (a
    /// slot freed in that cycle is seen a cycle late), so the ready to SQ fetch starts
    /// from registers.
    full: DFF<Bit>,
    /// Per slot, what changes while the entry waits: its QP and QN 1 MSN (to find it), its
    /// CQE no longer to be written (the QP was reset), and the status a peer's Terminate
    /// named it with (bit 0: named; 1–8: the status).
    slot_qpn: [DFF<Bits<QB>>; PENDING],
    slot_msn: [DFF<Bits<32>>; PENDING],
    slot_cut: [DFF<Bit>; PENDING],
    slot_named: [DFF<Bits<9>>; PENDING],
    /// Messages done whose completion has not reached the head yet.
    sent: DFF<Bits<6>>,
    head_cut: Signal<Local, Bit>,
    head_named: Signal<Local, Bits<9>>,
    head_base: Signal<Local, Bits<ENTRY_BITS>>,
    /// The WQE on offer must wait (a Read or atomic of a QP at its ORD), as decided a cycle
    /// ago on the same offer: SQ fetch's ready comes from registers only.
    held: DFF<Bit>,
    /// The WQE on offer was on offer last cycle too, and not taken: `held` is about it.
    offered: DFF<Bit>,
    /// The QPs whose Reads and atomics must wait: at their ORD, and not in ERROR.
    ord_full: Signal<Local, Bits<Q>>,
    /// The offered WQE's QP is the one whose Read or atomic reaches the receive side's table
    /// now (`read_valid`): its `reads_full` bit may rise next cycle.
    pushing_here: Signal<Local, Bit>,
    take: Signal<Local, Bit>,
    opcode: Signal<Local, Bits<8>>,
    is_write: Signal<Local, Bit>,
    is_read: Signal<Local, Bit>,
    is_send: Signal<Local, Bit>,
    is_imm: Signal<Local, Bit>,
    is_atomic: Signal<Local, Bit>,
    has_inv: Signal<Local, Bit>,
    length: Signal<Local, Bits<32>>,
    local_ok: Signal<Local, Bit>,
    flush: Signal<Local, Bit>,
    status: Signal<Local, Bits<8>>,
    cqe_opcode: Signal<Local, Bits<8>>,
    cqe: Signal<Local, Bits<256>>,
    entry: Signal<Local, Bits<ENTRY_BITS>>,
    entry_base: Signal<Local, Bits<ENTRY_BITS>>,
    head_entry: Signal<Local, Bits<ENTRY_BITS>>,
    head_ready: Signal<Local, Bit>,
    reads_behind: Signal<Local, Bits<DONE_BITS>>,
    head_flushed: Signal<Local, Bit>,
    head_writes: Signal<Local, Bit>,
    head_read: Signal<Local, Bit>,
    /// The head was ready last cycle and is still the head: it completes now (see
    /// `update`), writing its CQE if `go_writes` (unless `go_cut`), flushed if `go_flushed`.
    go: DFF<Bit>,
    go_writes: DFF<Bit>,
    go_flushed: DFF<Bit>,
    /// A QP reset hit the head's QP last cycle.
    go_cut: DFF<Bit>,
    go_writes_now: Signal<Local, Bit>,
    /// The head completes (leaves the queue) this cycle.
    pop: Signal<Local, Bit>,
    /// The CQE fields a flush rewrites: STATUS, and BYTE_LEN (0 unless SUCCESS).
    flush_mask: Constant<Bits<256>>,
    reads_before: Signal<Local, Bits<DONE_BITS>>,
    read_body: Signal<Local, Bits<224>>,
    atomic_body: Signal<Local, Bits<416>>,
    aop_word: Signal<Local, Bits<32>>,
    cmp_be: Signal<Local, Bits<64>>,
    cmask_be: Signal<Local, Bits<64>>,
    req_id_be: Bswap32,
    add_be: Bswap64,
    add_mask_be: Bswap64,
    compare_be: Bswap64,
    compare_mask_be: Bswap64,
    is_fetch_add: Signal<Local, Bit>,
    lkey_be: Bswap32,
    laddr_be: Bswap64,
    len_be: Bswap32,
    rstag_be: Bswap32,
    rto_be: Bswap64,
    mr_count: Constant<Bits<24>>,
    one_m: Constant<Bits<M>>,
    one_q: Constant<Bits<Q>>,
    flag_wait: Constant<Bits<ENTRY_BITS>>,
    flag_named: Constant<Bits<ENTRY_BITS>>,
    at_entry_msn: Constant<Bits<9>>,
    at_entry_named: Constant<Bits<9>>,
    at_entry_named_status: Constant<Bits<9>>,
    at_entry_cq: Constant<Bits<9>>,
    at_entry_waits: Constant<Bits<9>>,
    at_entry_writes: Constant<Bits<9>>,
    at_entry_reads: Constant<Bits<9>>,
    /// The bit of `reads_behind` that says "not yet" (the difference's top bit).
    at_not_yet: Constant<Bits<9>>,
    entry_msn: Signal<Local, Bits<32>>,
    flag_write: Constant<Bits<ENTRY_BITS>>,
    at_lkey_index: Constant<Bits<9>>,
    at_opcode: Constant<Bits<9>>,
    at_signaled: Constant<Bits<9>>,
    at_length: Constant<Bits<9>>,
    at_wr_id: Constant<Bits<9>>,
    at_local_addr: Constant<Bits<9>>,
    at_lkey: Constant<Bits<9>>,
    at_remote_stag: Constant<Bits<9>>,
    at_remote_to: Constant<Bits<10>>,
    at_imm: Constant<Bits<10>>,
    at_aopcode: Constant<Bits<10>>,
    at_add_swap: Constant<Bits<10>>,
    at_add_swap_mask: Constant<Bits<10>>,
    at_compare: Constant<Bits<10>>,
    at_compare_mask: Constant<Bits<10>>,
    at_pd: Constant<Bits<9>>,
    at_mulpdu: Constant<Bits<9>>,
    at_conn: Constant<Bits<9>>,
    at_crc: Constant<Bits<9>>,
    at_send_cq: Constant<Bits<9>>,
    at_cqe_wr_id: Constant<Bits<9>>,
    at_cqe_byte_len: Constant<Bits<9>>,
    at_cqe_qpn: Constant<Bits<9>>,
    at_cqe_opcode: Constant<Bits<9>>,
    at_cqe_status: Constant<Bits<9>>,
    op_write: Constant<Bits<8>>,
    op_read: Constant<Bits<8>>,
    op_send: Constant<Bits<8>>,
    op_send_inv: Constant<Bits<8>>,
    op_send_se: Constant<Bits<8>>,
    op_send_se_inv: Constant<Bits<8>>,
    op_imm: Constant<Bits<8>>,
    op_imm_se: Constant<Bits<8>>,
    cqe_send: Constant<Bits<8>>,
    cqe_write: Constant<Bits<8>>,
    cqe_read: Constant<Bits<8>>,
    cqe_atomic: Constant<Bits<8>>,
    op_write_imm: Constant<Bits<8>>,
    op_atomic: Constant<Bits<8>>,
    st_success: Constant<Bits<8>>,
    st_local_protection: Constant<Bits<8>>,
    st_flushed: Constant<Bits<8>>,
    st_bad_opcode: Constant<Bits<8>>,
}

impl<const QB: usize, const Q: usize, const CB: usize, const MB: usize, const M: usize> Default
    for TxRequest<QB, Q, CB, MB, M>
{
    fn default() -> Self {
        const { assert!(Q <= 1 << QB && M <= 1 << MB && CB <= 16 && MB <= 24) };
        let at = |f: Field| constant(f.lsb.into());
        // WQE fields past octet 63 need a tenth index bit.
        let at10 = |f: Field| constant(f.lsb.into());
        let op = |o: SqOpcode| constant(o as u64);
        TxRequest {
            clock: Default::default(),
            reset: Default::default(),
            s_valid: Default::default(),
            s_ready: Default::default(),
            s_wqe: Default::default(),
            s_qpn: Default::default(),
            s_ctx: Default::default(),
            s_error: Default::default(),
            s_ordered: Default::default(),
            qp_error: Default::default(),
            qp_rts: Default::default(),
            qp_we: Default::default(),
            qp_waddr: Default::default(),
            qp_reset: Default::default(),
            s_term_valid: Default::default(),
            s_term_qpn: Default::default(),
            s_term_msn: Default::default(),
            s_term_status: Default::default(),
            mr_we: Default::default(),
            mr_waddr: Default::default(),
            mr_wdata: Default::default(),
            mr_valid: Default::default(),
            m_job_valid: Default::default(),
            m_job_ready: Default::default(),
            m_job_tagged: Default::default(),
            m_job_opcode: Default::default(),
            m_job_stag: Default::default(),
            m_job_to: Default::default(),
            m_job_qn: Default::default(),
            m_job_msn: Default::default(),
            m_job_addr: Default::default(),
            m_job_len: Default::default(),
            m_job_inline: Default::default(),
            m_job_inline_len: Default::default(),
            m_job_mulpdu: Default::default(),
            m_job_conn: Default::default(),
            m_job_crc: Default::default(),
            m_job_qpn: Default::default(),
            s_done_valid: Default::default(),
            m_read_valid: Default::default(),
            m_read_qpn: Default::default(),
            m_read_entry: Default::default(),
            reads_full: Default::default(),
            order_qpn: Default::default(),
            order_done: Default::default(),
            held: Default::default(),
            offered: Default::default(),
            pushing_here: Default::default(),
            take: Default::default(),
            ord_full: Default::default(),
            m_cqe_valid: Default::default(),
            m_cqe_ready: Default::default(),
            m_cqn: Default::default(),
            m_cqe: Default::default(),
            m_fail: Default::default(),
            m_fail_qp: Default::default(),
            mrs: Default::default(),
            send_msn: Default::default(),
            read_msn: Default::default(),
            atomic_msn: Default::default(),
            check: Default::default(),
            mr_entry: Default::default(),
            range_end: Default::default(),
            state: Default::default(),
            wqe: Default::default(),
            qpn: Default::default(),
            ctx: Default::default(),
            fetch_error: Default::default(),
            job_valid: Default::default(),
            mr: Default::default(),
            verdict: Default::default(),
            job_addr: Default::default(),
            job_msn: Default::default(),
            req_id: Default::default(),
            fail: Default::default(),
            read_valid: Default::default(),
            read_qpn: Default::default(),
            read_entry: Default::default(),
            pending: Default::default(),
            head: Default::default(),
            tail: Default::default(),
            pending_out: Default::default(),
            full: Default::default(),
            queued: Default::default(),
            at_full: constant(PENDING_BITS as u64),
            slot_qpn: Default::default(),
            slot_msn: Default::default(),
            slot_cut: Default::default(),
            slot_named: Default::default(),
            sent: Default::default(),
            head_cut: Default::default(),
            head_named: Default::default(),
            head_base: Default::default(),
            opcode: Default::default(),
            is_write: Default::default(),
            is_read: Default::default(),
            is_send: Default::default(),
            is_imm: Default::default(),
            is_atomic: Default::default(),
            has_inv: Default::default(),
            length: Default::default(),
            local_ok: Default::default(),
            flush: Default::default(),
            status: Default::default(),
            cqe_opcode: Default::default(),
            cqe: Default::default(),
            entry: Default::default(),
            entry_base: Default::default(),
            head_entry: Default::default(),
            head_ready: Default::default(),
            reads_behind: Default::default(),
            head_flushed: Default::default(),
            head_writes: Default::default(),
            head_read: Default::default(),
            go: Default::default(),
            go_writes: Default::default(),
            go_flushed: Default::default(),
            go_cut: Default::default(),
            go_writes_now: Default::default(),
            pop: Default::default(),
            flush_mask: Constant::new(
                (Bits::<256>::from(0xFF_u64) << u64::from(cqe_fields::STATUS.lsb))
                    | (Bits::<256>::from(0xFFFF_FFFF_u64) << u64::from(cqe_fields::BYTE_LEN.lsb)),
            ),
            reads_before: Default::default(),
            read_body: Default::default(),
            atomic_body: Default::default(),
            aop_word: Default::default(),
            cmp_be: Default::default(),
            cmask_be: Default::default(),
            req_id_be: Default::default(),
            add_be: Default::default(),
            add_mask_be: Default::default(),
            compare_be: Default::default(),
            compare_mask_be: Default::default(),
            is_fetch_add: Default::default(),
            lkey_be: Default::default(),
            laddr_be: Default::default(),
            len_be: Default::default(),
            rstag_be: Default::default(),
            rto_be: Default::default(),
            mr_count: constant(M as u64),
            one_m: constant(1),
            one_q: constant(1),
            flag_wait: Constant::new(Bits::<ENTRY_BITS>::from(1_u64) << ENTRY_WAITS),
            flag_named: Constant::new(Bits::<ENTRY_BITS>::from(1_u64) << ENTRY_NAMED),
            at_entry_msn: constant(ENTRY_MSN),
            at_entry_named: constant(ENTRY_NAMED),
            at_entry_named_status: constant(ENTRY_NAMED_STATUS),
            at_entry_cq: constant(ENTRY_CQ),
            at_entry_waits: constant(ENTRY_WAITS),
            at_entry_writes: constant(ENTRY_WRITES),
            at_entry_reads: constant(ENTRY_READS),
            at_not_yet: constant(DONE_BITS as u64 - 1),
            entry_msn: Default::default(),
            flag_write: Constant::new(Bits::<ENTRY_BITS>::from(1_u64) << ENTRY_WRITES),
            at_lkey_index: constant(u64::from(sq_wqe_fields::LKEY.lsb) + 8),
            at_opcode: at(sq_wqe_fields::OPCODE),
            at_signaled: at(sq_wqe_fields::SIGNALED),
            at_length: at(sq_wqe_fields::LENGTH),
            at_wr_id: at(sq_wqe_fields::WR_ID),
            at_local_addr: at(sq_wqe_fields::LOCAL_ADDR),
            at_lkey: at(sq_wqe_fields::LKEY),
            at_remote_stag: at(sq_wqe_fields::REMOTE_STAG),
            at_remote_to: at10(sq_wqe_fields::REMOTE_TO),
            at_imm: at10(sq_wqe_fields::IMM),
            at_aopcode: at10(sq_wqe_fields::AOPCODE),
            at_add_swap: at10(sq_wqe_fields::ADD_SWAP),
            at_add_swap_mask: at10(sq_wqe_fields::ADD_SWAP_MASK),
            at_compare: at10(sq_wqe_fields::COMPARE),
            at_compare_mask: at10(sq_wqe_fields::COMPARE_MASK),
            at_pd: at(qp_fields::PD),
            at_mulpdu: at(qp_fields::MULPDU),
            at_conn: at(qp_fields::CONN_ID),
            at_crc: at(qp_fields::CRC_ENABLE),
            at_send_cq: at(qp_fields::SEND_CQ),
            at_cqe_wr_id: at(cqe_fields::WR_ID),
            at_cqe_byte_len: at(cqe_fields::BYTE_LEN),
            at_cqe_qpn: at(cqe_fields::QPN),
            at_cqe_opcode: at(cqe_fields::OPCODE),
            at_cqe_status: at(cqe_fields::STATUS),
            op_write: op(SqOpcode::RdmaWrite),
            op_read: op(SqOpcode::RdmaRead),
            op_send: op(SqOpcode::Send),
            op_send_inv: op(SqOpcode::SendInv),
            op_send_se: op(SqOpcode::SendSe),
            op_send_se_inv: op(SqOpcode::SendSeInv),
            op_imm: op(SqOpcode::Imm),
            op_imm_se: op(SqOpcode::ImmSe),
            cqe_send: constant(CqeOpcode::Send as u64),
            cqe_write: constant(CqeOpcode::RdmaWrite as u64),
            cqe_read: constant(CqeOpcode::RdmaRead as u64),
            cqe_atomic: constant(CqeOpcode::Atomic as u64),
            op_write_imm: op(SqOpcode::WriteImm),
            op_atomic: op(SqOpcode::Atomic),
            st_success: constant(CqeStatus::Success as u64),
            st_local_protection: constant(CqeStatus::LocalProtection as u64),
            st_flushed: constant(CqeStatus::Flushed as u64),
            st_bad_opcode: constant(CqeStatus::BadOpcode as u64),
        }
    }
}

impl<const QB: usize, const Q: usize, const CB: usize, const MB: usize, const M: usize> Logic
    for TxRequest<QB, Q, CB, MB, M>
{
    #[hdl_gen]
    fn update(&mut self) {
        dff_setup!(
            self,
            clock,
            state,
            wqe,
            range_end,
            qpn,
            ctx,
            fetch_error,
            job_valid,
            mr,
            verdict,
            job_addr,
            job_msn,
            req_id,
            fail,
            read_valid,
            read_qpn,
            held,
            offered,
            read_entry,
            head,
            tail,
            full,
            sent,
            go,
            go_writes,
            go_flushed,
            go_cut
        );
        // A QP written in RESET drops its work: its completions still waiting here are not
        // written (and no longer wait for responses, whose count starts over).
        self.pending.clock.next = self.clock.val();
        self.pending.reset.next = self.reset.val();
        self.pending_out.clock.next = self.clock.val();
        self.pending_out.reset.next = self.reset.val();
        self.pending_out.s_valid.next = self.pending.m_valid.val();
        self.pending_out.s_data.next = self.pending.m_data.val();
        self.pending.m_ready.next = self.pending_out.s_ready.val();
        for i in 0..PENDING {
            self.slot_qpn[i].clock.next = self.clock.val();
            self.slot_qpn[i].d.next = self.slot_qpn[i].q.val();
            self.slot_msn[i].clock.next = self.clock.val();
            self.slot_msn[i].d.next = self.slot_msn[i].q.val();
            self.slot_cut[i].clock.next = self.clock.val();
            self.slot_cut[i].d.next = self.slot_cut[i].q.val();
            self.slot_named[i].clock.next = self.clock.val();
            self.slot_named[i].d.next = self.slot_named[i].q.val();
            if self.qp_we.val() & self.qp_reset.val() & (self.slot_qpn[i].q.val() == self.qp_waddr.val()) {
                self.slot_cut[i].d.next = true;
            }
            // The Read or atomic a peer's Terminate names keeps the status it gives, should
            // it be flushed still waiting for its response.
            if self.s_term_valid.val()
                & (self.slot_qpn[i].q.val() == self.s_term_qpn.val())
                & (self.slot_msn[i].q.val() == self.s_term_msn.val())
            {
                self.slot_named[i].d.next = (bit_cast::<9, 8>(self.s_term_status.val()) << 1) | 1_u64;
            }
        }
        self.mrs.read_clock.next = self.clock.val();
        self.mrs.write_clock.next = self.clock.val();
        self.send_msn.read_clock.next = self.clock.val();
        self.send_msn.write_clock.next = self.clock.val();
        self.read_msn.read_clock.next = self.clock.val();
        self.read_msn.write_clock.next = self.clock.val();
        self.atomic_msn.read_clock.next = self.clock.val();
        self.atomic_msn.write_clock.next = self.clock.val();

        // The MR table copy; MSN counters (messages sent so far) cleared with the QP.
        self.mrs.write_enable.next = self.mr_we.val();
        self.mrs.write_address.next = self.mr_waddr.val();
        self.mr_entry.ctx.next = self.mr_wdata.val();
        self.mrs.write_data.next = self.mr_entry.entry.val();
        self.mrs.read_address.next = self.s_wqe.val().get_bits::<MB>(self.at_lkey_index.val().index());
        // (The counts are read at the WQE's QP from Lookup on, ready by Verify.)
        self.send_msn.read_address.next = self.qpn.q.val();
        self.read_msn.read_address.next = self.qpn.q.val();
        self.atomic_msn.read_address.next = self.qpn.q.val();
        self.send_msn.write_enable.next = false;
        self.send_msn.write_address.next = self.qpn.q.val();
        self.send_msn.write_data.next = self.send_msn.read_data.val() + 1;
        self.read_msn.write_enable.next = false;
        self.read_msn.write_address.next = self.qpn.q.val();
        self.read_msn.write_data.next = self.read_msn.read_data.val() + 1;
        self.atomic_msn.write_enable.next = false;
        self.atomic_msn.write_address.next = self.qpn.q.val();
        self.atomic_msn.write_data.next = self.atomic_msn.read_data.val() + 1;

        // Take a WQE while there is room for its completion (a slot: in the RAM or out).
        // (A Read or atomic waits while its QP has as many outstanding as ORD allows, unless
        // the QP is in ERROR: it is flushed, and the responses that would free a slot are
        // dropped.)
        // The ready is from registers only: whether the offered WQE must wait is decided a
        // cycle ahead (`held`), so a WQE is taken a cycle after it is first offered at the
        // earliest (`offered`; SQ fetch changes its head only by a pop, so an offer not taken
        // is the same offer next cycle). A QP's `reads_full` bit only rises by a Read or
        // atomic of its own reaching the receive side (from `read_valid`, a cycle after
        // Check; `reads_full` has it a cycle after that), so `held` counts that one too
        // (`pushing_here`); a bit that falls frees the slot a cycle later.
        self.ord_full.next = self.reads_full.val() & !self.qp_error.val();
        self.pushing_here.next = self.read_valid.q.val() & (self.read_qpn.q.val() == self.s_qpn.val());
        self.held.d.next =
            self.s_ordered.val() & (self.ord_full.val().get_bit(self.s_qpn.val().index()) | self.pushing_here.val());
        self.s_ready.next =
            (self.state.q.val() == TxState::Accept) & !self.full.q.val() & self.offered.q.val() & !self.held.q.val();
        self.take.next = self.s_valid.val() & self.s_ready.val();
        self.offered.d.next = self.s_valid.val() & !self.take.val();
        if self.take.val() {
            self.wqe.d.next = self.s_wqe.val();
            self.qpn.d.next = self.s_qpn.val();
            self.ctx.d.next = self.s_ctx.val();
            self.fetch_error.d.next = self.s_error.val();
            self.state.d.next = TxState::Lookup;
        }
        // Lookup: the table's output (read at the lkey as the WQE was taken) is registered.
        if self.state.q.val() == TxState::Lookup {
            self.mr.d.next = self.mrs.read_data.val();
            self.state.d.next = TxState::Verify;
        }

        // Verify: the WQE's checks, from registers only.
        self.opcode.next = self.wqe.q.val().get_bits::<8>(self.at_opcode.val().index());
        self.is_write.next = self.opcode.val() == self.op_write.val();
        self.is_read.next = self.opcode.val() == self.op_read.val();
        self.has_inv.next =
            (self.opcode.val() == self.op_send_inv.val()) | (self.opcode.val() == self.op_send_se_inv.val());
        self.is_send.next = (self.opcode.val() == self.op_send.val())
            | (self.opcode.val() == self.op_send_se.val())
            | self.has_inv.val();
        self.is_imm.next = (self.opcode.val() == self.op_imm.val()) | (self.opcode.val() == self.op_imm_se.val());
        self.is_atomic.next = self.opcode.val() == self.op_atomic.val();
        // Immediate Data is eight octets from the WQE; an atomic's local buffer is the eight
        // octets its original value goes to.
        self.length.next = self.wqe.q.val().get_bits::<32>(self.at_length.val().index());
        if self.is_imm.val() | self.is_atomic.val() {
            self.length.next = 8.into();
        }
        self.check.mr.next = self.mr.q.val();
        self.check.live.next = (self.mr_valid.val()
            & (self.one_m.val()
                << bit_cast::<M, MB>(self.wqe.q.val().get_bits::<MB>(self.at_lkey_index.val().index()))))
        .any();
        self.check.exists.next =
            self.wqe.q.val().get_bits::<24>(self.at_lkey_index.val().index()) < self.mr_count.val();
        self.check.stag.next = self.wqe.q.val().get_bits::<32>(self.at_lkey.val().index());
        self.check.pd.next = self.ctx.q.val().get_bits::<16>(self.at_pd.val().index());
        self.check.to.next = self.wqe.q.val().get_bits::<64>(self.at_local_addr.val().index());
        self.range_end.d.next = bit_cast::<65, 64>(self.wqe.q.val().get_bits::<64>(self.at_local_addr.val().index()))
            + bit_cast::<65, 32>(self.length.val());
        self.check.range_end.next = self.range_end.q.val();
        self.check.right.next = 0.into();
        if self.is_read.val() | self.is_atomic.val() {
            self.check.right.next = 1.into();
        }
        self.local_ok.next = !self.length.val().any() | !self.check.error.val().any() | self.is_imm.val();
        self.flush.next = (self.qp_error.val() & (self.one_q.val() << bit_cast::<Q, QB>(self.qpn.q.val()))).any();
        self.status.next = self.st_success.val();
        if !self.local_ok.val() | self.fetch_error.q.val() {
            self.status.next = self.st_local_protection.val();
        }
        if !(self.is_write.val() | self.is_read.val() | self.is_send.val() | self.is_imm.val() | self.is_atomic.val()) {
            self.status.next = self.st_bad_opcode.val();
        }
        if self.flush.val() {
            self.status.next = self.st_flushed.val();
        }
        if self.state.q.val() == TxState::Verify {
            self.verdict.d.next = self.status.val();
            self.job_addr.d.next = self.check.iova.val();
            self.state.d.next = TxState::Check;
        }
        // Check: the verdict is acted on.
        // The completion, as `sq_cqe` makes it.
        // (Opcodes defined for later issues report their own kind even when refused.)
        self.cqe_opcode.next = self.cqe_send.val();
        if self.is_write.val() | (self.opcode.val() == self.op_write_imm.val()) {
            self.cqe_opcode.next = self.cqe_write.val();
        }
        if self.is_read.val() {
            self.cqe_opcode.next = self.cqe_read.val();
        }
        if self.opcode.val() == self.op_atomic.val() {
            self.cqe_opcode.next = self.cqe_atomic.val();
        }
        self.cqe.next = (bit_cast::<256, 64>(self.wqe.q.val().get_bits::<64>(self.at_wr_id.val().index()))
            << self.at_cqe_wr_id.val())
            | (bit_cast::<256, QB>(self.qpn.q.val()) << self.at_cqe_qpn.val())
            | (bit_cast::<256, 8>(self.cqe_opcode.val()) << self.at_cqe_opcode.val())
            | (bit_cast::<256, 8>(self.verdict.q.val()) << self.at_cqe_status.val());
        if self.verdict.q.val() == self.st_success.val() {
            self.cqe.next = (bit_cast::<256, 64>(self.wqe.q.val().get_bits::<64>(self.at_wr_id.val().index()))
                << self.at_cqe_wr_id.val())
                | (bit_cast::<256, 32>(self.length.val()) << self.at_cqe_byte_len.val())
                | (bit_cast::<256, QB>(self.qpn.q.val()) << self.at_cqe_qpn.val())
                | (bit_cast::<256, 8>(self.cqe_opcode.val()) << self.at_cqe_opcode.val())
                | (bit_cast::<256, 8>(self.verdict.q.val()) << self.at_cqe_status.val());
        }
        // Entry: CQE, CQ, the QP's Reads that come first (those issued before it, and a
        // Read itself); flags: waits for its message, writes a CQE.
        // Errors always complete; a message's completion waits, and is written if signaled.
        self.reads_before.next = self.read_msn.read_data.val().get_bits::<DONE_BITS>(0);
        if (self.is_read.val() | self.is_atomic.val()) & (self.verdict.q.val() == self.st_success.val()) {
            self.reads_before.next = self.read_msn.read_data.val().get_bits::<DONE_BITS>(0) + 1;
        }
        self.entry_msn.next = 0.into();
        if (self.is_read.val() | self.is_atomic.val()) & (self.verdict.q.val() == self.st_success.val()) {
            self.entry_msn.next = self.read_msn.read_data.val() + 1;
        }
        self.entry_base.next = bit_cast::<ENTRY_BITS, 256>(self.cqe.val())
            | (bit_cast::<ENTRY_BITS, 16>(self.ctx.q.val().get_bits::<16>(self.at_send_cq.val().index()))
                << self.at_entry_cq.val())
            | (bit_cast::<ENTRY_BITS, DONE_BITS>(self.reads_before.val()) << self.at_entry_reads.val())
            | (bit_cast::<ENTRY_BITS, 32>(self.entry_msn.val()) << self.at_entry_msn.val());
        self.entry.next = self.entry_base.val() | self.flag_write.val();
        if self.verdict.q.val() == self.st_success.val() {
            self.entry.next = self.entry_base.val() | self.flag_wait.val();
            if self.wqe.q.val().get_bit(self.at_signaled.val().index()) {
                self.entry.next = self.entry_base.val() | self.flag_wait.val() | self.flag_write.val();
            }
        }
        self.fail.d.next = false;
        self.read_valid.d.next = (self.state.q.val() == TxState::Check)
            & (self.verdict.q.val() == self.st_success.val())
            & (self.is_read.val() | self.is_atomic.val());
        self.read_qpn.d.next = self.qpn.q.val();
        self.read_entry.d.next = bit_cast::<129, 32>(self.length.val())
            | (bit_cast::<129, 32>(self.wqe.q.val().get_bits::<32>(self.at_lkey.val().index())) << 32)
            | (bit_cast::<129, 64>(self.wqe.q.val().get_bits::<64>(self.at_local_addr.val().index())) << 64)
            | (bit_cast::<129, 1>(self.is_atomic.val().into()) << 128);
        self.m_read_valid.next = self.read_valid.q.val();
        self.m_read_qpn.next = self.read_qpn.q.val();
        self.m_read_entry.next = self.read_entry.q.val();
        self.pending.s_valid.next = self.state.q.val() == TxState::Check;
        self.pending.s_data.next = self.entry.val();
        if self.state.q.val() == TxState::Check {
            for i in 0..PENDING {
                if self.tail.q.val().get_bits::<PENDING_BITS>(0).index() == i {
                    self.slot_qpn[i].d.next = self.qpn.q.val();
                    self.slot_msn[i].d.next = self.entry_msn.val();
                    self.slot_cut[i].d.next =
                        self.qp_we.val() & self.qp_reset.val() & (self.qp_waddr.val() == self.qpn.q.val());
                    self.slot_named[i].d.next = 0.into();
                }
            }
            self.tail.d.next = self.tail.q.val() + 1;
            self.state.d.next = TxState::Accept;
            if (self.verdict.q.val() != self.st_success.val()) & (self.verdict.q.val() != self.st_flushed.val()) {
                self.fail.d.next = true;
            }
            if self.verdict.q.val() == self.st_success.val() {
                self.state.d.next = TxState::Job;
                self.job_valid.d.next = true;
                self.job_msn.d.next = self.send_msn.read_data.val() + 1;
                if self.is_read.val() | self.is_atomic.val() {
                    self.job_msn.d.next = self.read_msn.read_data.val() + 1;
                    self.read_msn.write_enable.next = true;
                }
                if self.is_send.val() | self.is_imm.val() {
                    self.send_msn.write_enable.next = true;
                }
                if self.is_atomic.val() {
                    self.atomic_msn.write_enable.next = true;
                }
            }
        }
        if self.qp_we.val() & self.qp_reset.val() {
            self.send_msn.write_enable.next = true;
            self.send_msn.write_address.next = self.qp_waddr.val();
            self.send_msn.write_data.next = 0.into();
            self.read_msn.write_enable.next = true;
            self.read_msn.write_address.next = self.qp_waddr.val();
            self.read_msn.write_data.next = 0.into();
            self.atomic_msn.write_enable.next = true;
            self.atomic_msn.write_address.next = self.qp_waddr.val();
            self.atomic_msn.write_data.next = 0.into();
        }
        if (self.state.q.val() == TxState::Job) & self.m_job_ready.val() {
            self.job_valid.d.next = false;
            self.state.d.next = TxState::Accept;
        }

        // The message. MSNs start at 1 (RFC 5041 §5.1).
        self.lkey_be.d.next = self.wqe.q.val().get_bits::<32>(self.at_lkey.val().index());
        self.laddr_be.d.next = self.wqe.q.val().get_bits::<64>(self.at_local_addr.val().index());
        self.len_be.d.next = self.length.val();
        self.rstag_be.d.next = self.wqe.q.val().get_bits::<32>(self.at_remote_stag.val().index());
        self.rto_be.d.next = self.wqe.q.val().get_bits::<64>(self.at_remote_to.val().index());
        self.read_body.next = bit_cast::<224, 32>(self.lkey_be.q.val())
            | (bit_cast::<224, 64>(self.laddr_be.q.val()) << 32)
            | (bit_cast::<224, 32>(self.len_be.q.val()) << 96)
            | (bit_cast::<224, 32>(self.rstag_be.q.val()) << 128)
            | (bit_cast::<224, 64>(self.rto_be.q.val()) << 160);
        // The Atomic Request body (RFC 7306 Fig. 4): AOpCode as given, the Request
        // Identifier, the target, then the operands; a FetchAdd sends Compare Data 0 and
        // Compare Mask all ones (ATOM-03), whatever the WQE holds there.
        self.aop_word.next = bit_cast::<32, 4>(self.wqe.q.val().get_bits::<4>(self.at_aopcode.val().index())) << 24;
        // (Taken in Check, before the count goes up: the Request Identifier stays while the
        // message waits.)
        if self.state.q.val() == TxState::Check {
            self.req_id.d.next = self.atomic_msn.read_data.val() + 1;
        }
        self.req_id_be.d.next = self.req_id.q.val();
        self.add_be.d.next = self.wqe.q.val().get_bits::<64>(self.at_add_swap.val().index());
        self.add_mask_be.d.next = self.wqe.q.val().get_bits::<64>(self.at_add_swap_mask.val().index());
        self.compare_be.d.next = self.wqe.q.val().get_bits::<64>(self.at_compare.val().index());
        self.compare_mask_be.d.next = self.wqe.q.val().get_bits::<64>(self.at_compare_mask.val().index());
        self.is_fetch_add.next = !self.wqe.q.val().get_bits::<4>(self.at_aopcode.val().index()).any();
        self.cmp_be.next = self.compare_be.q.val();
        self.cmask_be.next = self.compare_mask_be.q.val();
        if self.is_fetch_add.val() {
            self.cmp_be.next = 0.into();
            self.cmask_be.next = 0xFFFF_FFFF_FFFF_FFFF_u64.into();
        }
        self.atomic_body.next = bit_cast::<416, 32>(self.aop_word.val())
            | (bit_cast::<416, 32>(self.req_id_be.q.val()) << 32)
            | (bit_cast::<416, 32>(self.rstag_be.q.val()) << 64)
            | (bit_cast::<416, 64>(self.rto_be.q.val()) << 96)
            | (bit_cast::<416, 64>(self.add_be.q.val()) << 160)
            | (bit_cast::<416, 64>(self.add_mask_be.q.val()) << 224)
            | (bit_cast::<416, 64>(self.cmp_be.val()) << 288)
            | (bit_cast::<416, 64>(self.cmask_be.val()) << 352);
        self.m_job_valid.next = self.job_valid.q.val();
        self.m_job_tagged.next = self.is_write.val();
        self.m_job_opcode.next = self.opcode.val().get_bits::<4>(0);
        self.m_job_stag.next = 0.into();
        if self.is_write.val() | self.has_inv.val() {
            self.m_job_stag.next = self.wqe.q.val().get_bits::<32>(self.at_remote_stag.val().index());
        }
        self.m_job_to.next = self.wqe.q.val().get_bits::<64>(self.at_remote_to.val().index());
        self.m_job_qn.next = 0.into();
        self.m_job_msn.next = self.job_msn.q.val();
        self.m_job_addr.next = self.job_addr.q.val();
        self.m_job_len.next = self.length.val();
        self.m_job_inline.next = 0.into();
        self.m_job_inline_len.next = 0.into();
        if self.is_read.val() {
            self.m_job_qn.next = 1.into();
            self.m_job_len.next = 0.into();
            self.m_job_inline.next = bit_cast::<416, 224>(self.read_body.val());
            self.m_job_inline_len.next = 28.into();
        }
        if self.is_atomic.val() {
            self.m_job_qn.next = 1.into();
            self.m_job_len.next = 0.into();
            self.m_job_inline.next = self.atomic_body.val();
            self.m_job_inline_len.next = 52.into();
        }
        if self.is_imm.val() {
            // The eight octets as they are in the WQE, first octet first.
            self.m_job_len.next = 0.into();
            self.m_job_inline.next = bit_cast::<416, 64>(self.wqe.q.val().get_bits::<64>(self.at_imm.val().index()));
            self.m_job_inline_len.next = 8.into();
        }
        self.m_job_mulpdu.next = self.ctx.q.val().get_bits::<16>(self.at_mulpdu.val().index());
        self.m_job_conn.next = self.ctx.q.val().get_bits::<16>(self.at_conn.val().index());
        self.m_job_crc.next = self.ctx.q.val().get_bit(self.at_crc.val().index());
        self.m_job_qpn.next = self.qpn.q.val();
        self.m_fail.next = self.fail.q.val();
        self.m_fail_qp.next = self.qpn.q.val();

        // Completions, in order.
        if self.s_done_valid.val() {
            self.sent.d.next = self.sent.q.val() + 1;
        }
        self.head_cut.next = false;
        self.head_named.next = 0.into();
        for i in 0..PENDING {
            if self.head.q.val().get_bits::<PENDING_BITS>(0).index() == i {
                self.head_cut.next = self.slot_cut[i].q.val();
                self.head_named.next = self.slot_named[i].q.val();
            }
        }
        // The entry as made, with what changed while it waited.
        self.head_base.next = self.pending_out.m_data.val();
        if self.head_cut.val() {
            self.head_base.next = self.pending_out.m_data.val() & !self.flag_write.val();
        }
        self.head_entry.next = self.head_base.val();
        if self.head_named.val().get_bit(0) {
            self.head_entry.next = self.head_base.val()
                | self.flag_named.val()
                | (bit_cast::<ENTRY_BITS, 8>(self.head_named.val().get_bits::<8>(1))
                    << self.at_entry_named_status.val());
        }
        // A completion also waits until its QP's Reads before it (and a Read's own
        // response) are placed. Counted modulo 64, the done count is at most MAX_READS (ORD)
        // below and 31 above (every later Read has an entry behind this one in a queue of 32)
        // the count needed: a difference of 0..31 means done, one of 32..63 not yet.
        // An entry cut by its QP's reset waits for nothing but its message: the QP's
        // counts started over.
        self.order_qpn.next = self.head_entry.val().get_bits::<QB>(self.at_cqe_qpn.val().index());
        self.reads_behind.next =
            self.order_done.val() - self.head_entry.val().get_bits::<DONE_BITS>(self.at_entry_reads.val().index());
        // A QP that left RTS gets no more responses: what still waits for one is flushed.
        self.head_flushed.next = self.reads_behind.val().get_bit(self.at_not_yet.val().index())
            & !(self.qp_rts.val() & (self.one_q.val() << bit_cast::<Q, QB>(self.order_qpn.val()))).any();
        // A Read or atomic (its QN 1 MSN is set) stays until its response is placed or it
        // is flushed, signaled or not: flushed, it is an error and writes its CQE.
        self.head_read.next = self.head_entry.val().get_bits::<32>(self.at_entry_msn.val().index()).any();
        self.head_ready.next = self.pending_out.m_valid.val()
            & (!self.head_entry.val().get_bit(self.at_entry_waits.val().index()) | (self.sent.q.val() != 0))
            & (!(self.head_entry.val().get_bit(self.at_entry_writes.val().index()) | self.head_read.val())
                | !self.reads_behind.val().get_bit(self.at_not_yet.val().index())
                | self.head_cut.val()
                | self.head_flushed.val());
        self.head_writes.next = self.head_entry.val().get_bit(self.at_entry_writes.val().index())
            | (self.head_flushed.val() & self.head_read.val() & !self.head_cut.val());
        // The decision is acted on a cycle later, from registers: `go`, the head was ready and
        // has not moved since. It is still ready: messages gone and responses placed only
        // add up, and the head is popped nowhere else. A QP reset that hit the head's QP in
        // that cycle (`go_cut`) only keeps its CQE from being written, as the cut does.
        self.go_writes.d.next = self.head_writes.val();
        self.go_flushed.d.next = self.head_flushed.val();
        self.go_cut.d.next = self.qp_we.val() & self.qp_reset.val() & (self.qp_waddr.val() == self.order_qpn.val());
        self.go_writes_now.next = self.go_writes.q.val() & !self.go_cut.q.val();
        self.m_cqe_valid.next = self.go.q.val() & self.go_writes_now.val();
        self.m_cqn.next = self.head_entry.val().get_bits::<CB>(self.at_entry_cq.val().index());
        self.m_cqe.next = self.head_entry.val().get_bits::<256>(0);
        // (A flushed Read or atomic completes with no octets, as every error does.)
        if self.go_flushed.q.val() {
            self.m_cqe.next = (self.head_entry.val().get_bits::<256>(0) & !self.flush_mask.val())
                | (bit_cast::<256, 8>(self.st_flushed.val()) << self.at_cqe_status.val());
            if self.head_entry.val().get_bit(self.at_entry_named.val().index()) {
                self.m_cqe.next = (self.head_entry.val().get_bits::<256>(0) & !self.flush_mask.val())
                    | (bit_cast::<256, 8>(
                        self.head_entry.val().get_bits::<8>(self.at_entry_named_status.val().index()),
                    ) << self.at_cqe_status.val());
            }
        }
        self.pop.next = self.go.q.val() & (!self.go_writes_now.val() | self.m_cqe_ready.val());
        self.pending_out.m_ready.next = self.pop.val();
        self.go.d.next = self.head_ready.val() & !self.pop.val();
        if self.pop.val() {
            self.head.d.next = self.head.q.val() + 1;
            if self.head_entry.val().get_bit(self.at_entry_waits.val().index()) {
                self.sent.d.next = self.sent.q.val() - 1;
                if self.s_done_valid.val() {
                    self.sent.d.next = self.sent.q.val();
                }
            }
        }
        if self.reset.val() {
            self.state.d.next = TxState::Accept;
            self.job_valid.d.next = false;
            self.fail.d.next = false;
            self.read_valid.d.next = false;
            self.offered.d.next = false;
            self.held.d.next = false;
            self.head.d.next = 0.into();
            self.tail.d.next = 0.into();
            self.sent.d.next = 0.into();
            self.go.d.next = false;
        }
        self.queued.next = self.tail.d.val() - self.head.q.val();
        self.full.d.next = self.queued.val().get_bit(self.at_full.val().index());
    }
}
