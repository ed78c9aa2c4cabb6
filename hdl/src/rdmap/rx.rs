//! RDMAP receive engine: every checked ULPDU from [`crate::ddp::RxBuffer`] is parsed,
//! validated and placed, or turned into a Terminate (`rnic_proto::model`, `responder.rs`,
//! is the reference, check for check).
//!
//! One ULPDU at a time: its first beats are captured as the header (two tagged, three
//! untagged, six for a Read Request or Terminate, four for Immediate Data and Atomic
//! Responses, nine for an Atomic Request), the QP's context and receive state are
//! read, and then, by opcode:
//!
//! (An RDMA Write is the one message that streams: its checks need only its first beat, so
//! it is classified as its second comes in, its MR is read at the STag of that beat, and
//! its last payload beat leads back to Idle. It takes six cycles a segment beside its
//! payload beats. An Atomic Request's checks need its first five beats: it is classified
//! as the fifth comes in, its MR read at its STag, and its last four beats come in while
//! it is checked; it takes ten cycles.)
//!
//! - RDMA Write: the STag names an MR of the QP's PD allowing REMOTE_WRITE that holds the
//!   range (DDP 1/1/x codes); the payload goes to its IOVA. An empty segment is not checked.
//! - Send, with Solicited Event and/or Invalidate: MSN in order (1/2/0x03); a new message
//!   claims the next posted receive through RQ fetch (none: 1/2/0x02) and must start at
//!   MO 0, a later segment continue at the octets placed so far (1/2/0x04); an Invalidate
//!   STag must name a valid MR of the PD (0/1/0x00, 0/1/0x09); the message must fit the
//!   receive (1/2/0x05), whose own buffer passes the LOCAL_WRITE check (else DDP local
//!   catastrophic). The last segment invalidates the STag and completes the receive.
//! - Read Request (QN 1): MSN in order, fewer than IRD Read Responses of the QP still
//!   unsent (else no QN 1 buffer, 1/2/0x02), the source passes the REMOTE_READ check
//!   (0/1/x); the response becomes a tagged job for the segmenter once every placement
//!   before it is acknowledged (so it reads what a Write before it wrote). A Read
//!   Request's IRD slot is free again once the segmenter has sent its response's last
//!   segment.
//! - Read Response: continues the oldest outstanding Read of the QP (table filled by the
//!   requester as it sends Read Requests, ORD entries per QP, at most `READ_SLOTS`) at its
//!   sink STag and next TO; once the last segment is placed and the placement writes then
//!   outstanding are acknowledged, the requester completes the Read (`order_done`). The
//!   receiver does not wait for those acknowledgements: up to `WAITS` such completions
//!   wait beside it, in order, while it takes the next ULPDUs.
//! - Immediate Data (RFC 7306 §6, opcodes 0x8/0x9): exactly 8 octets in one segment
//!   (else 0/2/0xFF, a piece of a split message after the DDP checks), MSN and receive as
//!   a Send; the receive completes RECV_IMM with the octets in its CQE (SOLICITED for 0x9)
//!   and nothing placed in its buffer, after every earlier placement is acknowledged (so a
//!   Write before it is in memory).
//! - Atomic Request (QN 1, shared with Read Requests: MSN, IRD): a supported AOpCode
//!   (0/2/0x06), the 8 target octets pass the REMOTE_ATOMIC check (0/1/x), the target's
//!   IOVA is 8-aligned (0/2/0x07); Terminates carry the DDP header. Once every earlier
//!   placement is acknowledged and every earlier receive completion written (a Send or
//!   Immediate Data before it has completed, RFC 7306 §7) the request goes to the atomic
//!   unit, and an Atomic Response
//!   job (QN 3, the QP's next MSN, the Request Identifier echoed) joins the job queue, where
//!   it waits for the unit's original value. The unit is told how many Read Responses and
//!   Terminates are queued before it (`m_atom_after`, `plain_done`): it acts only after
//!   they are sent, so an earlier Read sees memory as it was.
//! - Atomic Response (QN 3): the QP's next QN 3 MSN (1/2/0x03), answering its oldest
//!   outstanding request, which must be an atomic whose Request Identifier — its QN 3 MSN —
//!   the response echoes (0/2/0xFF); the original value is placed little-endian in the
//!   request's local buffer and the requester completes the atomic.
//! - Terminate: the QP enters ERROR with the peer's code.
//!
//! A ULPDU for a QP not in RTS is dropped. Any failure places nothing of its ULPDU, moves
//! the QP to ERROR through the command unit and sends a Terminate (QN 2, MSN 1) carrying
//! the control word, the segment length and the offending DDP header, and for a Read
//! Request refused by its source checks the Read Request header as well (R = 1); local
//! failures the requester reports (`s_tx_fail`) send 0/0/0x00 without headers.
//! Completions are written only after every placement write before them has been
//! acknowledged.
//!
//! A QP in ERROR has its receives flushed (the Flush states, taking turns with ULPDUs): the
//! receive a failing Send claimed completes with the status of its failure (LOCAL_LENGTH,
//! LOCAL_PROTECTION, REMOTE_ACCESS, REMOTE_OPERATION), one a Send was still filling with
//! FLUSHED, then every posted receive with FLUSHED, including those posted later.
//!
//! Not covered yet: a QP written in RESET while the segmenter still sends its Read
//! Responses may have their MSN recorded after the reset, which would then refuse its
//! next Read Requests.
use rust_hdl::prelude::*;

use rnic_proto::atomic::OPERAND_LEN;
use rnic_proto::ddp::{TaggedHeader, UntaggedHeader, L_FLAG, T_FLAG};
use rnic_proto::host::context::{qp_fields, MAX_READS};
use rnic_proto::host::desc::{cqe_fields, rq_wqe_fields, CqeOpcode, CqeStatus};
use rnic_proto::host::Field;
use rnic_proto::rdmap::{
    AtomicRequest, AtomicResponse, Opcode, ReadRequest, IMMEDIATE_DATA_LEN, QN_ATOMIC_RESPONSE, QN_READ_ATOMIC_REQUEST,
    QN_SEND, QN_TERMINATE, RDMAP_VERSION,
};
use rnic_proto::terminate::{TermCode, Terminate, D_BIT, M_BIT, R_BIT};

use crate::common::{constant, Bswap32, Bswap64, RamFifo, RegRam, SkidBuffer, SmallFifo};
use crate::ddp::rx_buffer::{DESC_BITS, DESC_CONN, DESC_LENGTH, DESC_MPA_ERROR};
use crate::host::{MrCheck, MrEntry, MR_ENTRY_BITS};

/// Outstanding Reads a QP may have each way (its table slots; ORD and IRD at most this).
pub const READ_SLOTS: usize = MAX_READS as usize;
/// Bits of a QP's count of Reads and atomics completed (`order_done`). TxRequest compares
/// it with the count each of its completions waits for: at most 32 of them come after an
/// entry (its queue's size) and at most `READ_SLOTS` (ORD), fewer than 32, are outstanding
/// up to it, so counted modulo 64 the difference tells "done" from "not yet" by its top bit
/// (TxRequest asserts both bounds).
pub const DONE_BITS: usize = 6;
/// Bits of a slot's number in a QP's outstanding Read queue.
pub const SLOT_BITS: usize = READ_SLOTS.trailing_zeros() as usize;
/// Bits of a QP's counts of Reads pushed and popped: counted modulo twice the slots, so
/// that a full queue (`READ_SLOTS` queued) differs from an empty one.
pub const COUNT_BITS: usize = SLOT_BITS + 1;
/// Bits of each QP's lane in the outstanding-Read state registers.
const LANE_BITS: usize = 16;
/// Bits of a header beat, and the beats an Atomic Request's headers fill.
const BEAT_BITS: usize = 64;
const ATOMIC_REQUEST_BEATS: usize = (8 * (UntaggedHeader::LEN + AtomicRequest::LEN)).div_ceil(BEAT_BITS);
/// Where an Atomic Request's STag and TO sit in `hdr` (RFC 7306 Fig. 4, from octet 18:
/// AOpCode word, Request Identifier, STag, TO), and the header beats its checks need:
/// through its TO.
const AT_ATOMIC_STAG: usize = 8 * (UntaggedHeader::LEN + 8);
const AT_ATOMIC_TO: usize = AT_ATOMIC_STAG + 32;
const ATOMIC_CHECK_BEATS: usize = (AT_ATOMIC_TO + 64).div_ceil(BEAT_BITS);
const _: () = assert!(
    READ_SLOTS.is_power_of_two() && COUNT_BITS <= DONE_BITS && DONE_BITS <= LANE_BITS,
    "a QP's counts fit its lane, and the clear of its completed count clears the others"
);
/// Read and atomic completions that may wait beside the engine for their placement writes'
/// acknowledgements: one per response arriving within an acknowledgement's round trip
/// (~200 cycles; an Atomic Response every ~15 cycles at W = 8).
const WAIT_BITS: usize = 4;
const WAITS: usize = 1 << WAIT_BITS;
const _: () = assert!(WAITS == 16, "the waiting completions' selects list sixteen entries");

/// A Terminate's layer and error type, as the control word's first octet holds them.
fn term_class(layer: u8, etype: u8) -> Constant<Bits<8>> {
    constant(u64::from(layer << 4 | etype))
}

fn opcode(op: Opcode) -> Constant<Bits<4>> {
    constant(u64::from(op as u8))
}

fn term(code: TermCode) -> Constant<Bits<16>> {
    constant(u64::from(code.control_word(false, false, false) >> 16))
}

/// The receive engine's states, in the order a ULPDU meets them.
#[derive(Copy, Clone, PartialEq, Debug, LogicState)]
pub enum RxState {
    /// Waiting: takes a ULPDU's first beat, a requester's failure, or a QP to flush.
    Idle,
    /// The header's remaining beats come in.
    Header,
    /// The checks made a cycle ahead decide the ULPDU's way, by opcode.
    Classify,
    /// A new Send or Immediate Data message claims the next posted receive.
    Claim,
    /// The MR the STag (or the receive's LKey) names comes out of the table, into a register
    /// (the table was read as the state before chose the index). A Write skips it: its
    /// STag is in its first beat, so the table was read in Header and Classify takes the word.
    MrRead,
    /// The MR check, for whichever purpose.
    MrCheck,
    /// A Send segment must fit its receive, whose buffer is checked next.
    RecvFit,
    /// The placement write is requested.
    PlaceRequest,
    /// The payload goes out to the placement write.
    PlaceData,
    /// Progress recorded; a message that ends completes.
    Placed,
    /// The completion waits for the placement writes' acknowledgements.
    Complete,
    /// A failure: the QP goes to ERROR and a Terminate is built.
    Fault,
    /// A Read Response, an Atomic Response or a Terminate joins the segmenter's queue.
    JobOut,
    /// The rest of the ULPDU, if any, is dropped.
    Drain,
    /// A requester's failure: the QP's context is read.
    LocalFault,
    /// A requester's failure: its Terminate is built.
    LocalTerminate,
    /// Immediate Data completes its receive with the octets in the CQE.
    ImmComplete,
    /// A checked Atomic Request waits to go to the atomic unit.
    AtomicWait,
    /// A flush: the QP's tables are read.
    FlushRead,
    /// A flush: the receive a Send had claimed, if any, completes.
    FlushClaimed,
    /// A flush: the next posted receive is claimed.
    FlushPosted,
    /// A flush: the receive's CQE leaves.
    FlushCqe,
    /// The MPA receiver's failure: a Terminate if the QP is still in RTS.
    MpaFault,
}

/// `QB`/`CB`/`MB` = QP/CQ/MR index bits, `Q`/`M` = QP and MR counts, `RB` = `QB +
/// SLOT_BITS` (`READ_SLOTS` Reads per QP), `RB1` = `RB + 1`, `RB2` = `RB + 2`, `QL` =
/// `16 Q`.
#[derive(LogicBlock)]
pub struct RdmapRx<
    const QB: usize,
    const Q: usize,
    const CB: usize,
    const MB: usize,
    const M: usize,
    const RB: usize,
    const RB1: usize,
    const RB2: usize,
    const QL: usize,
> {
    pub clock: Signal<In, Clock>,
    pub reset: Signal<In, Bit>,
    /// Checked ULPDUs, and the MPA receiver's failures in order with them; `tuser` the RX
    /// buffer's descriptor (QP, octets, MPA error code: see `ddp::rx_buffer`).
    pub s_axis_tdata: Signal<In, Bits<64>>,
    pub s_axis_tlast: Signal<In, Bit>,
    pub s_axis_tuser: Signal<In, Bits<DESC_BITS>>,
    pub s_axis_tvalid: Signal<In, Bit>,
    pub s_axis_tready: Signal<Out, Bit>,
    /// Context and MR table writes, live QP and MR state (command unit).
    pub qp_we: Signal<In, Bit>,
    pub qp_waddr: Signal<In, Bits<QB>>,
    pub qp_wdata: Signal<In, Bits<256>>,
    pub qp_reset: Signal<In, Bit>,
    pub qp_rts: Signal<In, Bits<Q>>,
    /// QPs in ERROR: their posted receives are flushed.
    pub qp_error: Signal<In, Bits<Q>>,
    /// Doorbells (a receive posted to a QP in ERROR is flushed too).
    pub db_valid: Signal<In, Bit>,
    pub db_kind: Signal<In, Bits<2>>,
    pub db_index: Signal<In, Bits<16>>,
    pub mr_we: Signal<In, Bit>,
    pub mr_waddr: Signal<In, Bits<MB>>,
    pub mr_wdata: Signal<In, Bits<224>>,
    pub mr_valid: Signal<In, Bits<M>>,
    /// Claims of posted receives (RQ fetch).
    pub m_rq_valid: Signal<Out, Bit>,
    pub m_rq_ready: Signal<In, Bit>,
    pub m_rq_qpn: Signal<Out, Bits<QB>>,
    pub s_rq_valid: Signal<In, Bit>,
    pub s_rq_ready: Signal<Out, Bit>,
    pub s_rq_posted: Signal<In, Bit>,
    pub s_rq_wqe: Signal<In, Bits<256>>,
    pub s_rq_error: Signal<In, Bit>,
    /// Placement (DMA write client).
    pub m_wr_req_valid: Signal<Out, Bit>,
    pub m_wr_req_ready: Signal<In, Bit>,
    pub m_wr_req_addr: Signal<Out, Bits<64>>,
    pub m_wr_req_len: Signal<Out, Bits<32>>,
    pub m_wr_tdata: Signal<Out, Bits<64>>,
    pub m_wr_tkeep: Signal<Out, Bits<8>>,
    pub m_wr_tlast: Signal<Out, Bit>,
    pub m_wr_tvalid: Signal<Out, Bit>,
    pub m_wr_tready: Signal<In, Bit>,
    pub s_wr_done_valid: Signal<In, Bit>,
    /// Completions (CQ writer).
    pub m_cqe_valid: Signal<Out, Bit>,
    pub m_cqe_ready: Signal<In, Bit>,
    pub m_cqn: Signal<Out, Bits<CB>>,
    pub m_cqe: Signal<Out, Bits<256>>,
    /// Read Responses and Terminates (segmenter jobs, see `ddp::TxSegment`).
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
    /// The QP's CONN_ID and whether its connection runs with MPA CRCs.
    pub m_job_conn: Signal<Out, Bits<16>>,
    pub m_job_crc: Signal<Out, Bit>,
    pub m_job_qpn: Signal<Out, Bits<QB>>,
    /// The segmenter has sent the last segment of one of these jobs (in job order).
    pub s_job_done: Signal<In, Bit>,
    /// Read and Atomic Requests sent (requester): size (32), sink STag (32), sink TO (64),
    /// an atomic (1: its response is an Atomic Response of 8 octets);
    /// `reads_full` holds back a QP's next Read.
    pub s_read_valid: Signal<In, Bit>,
    pub s_read_qpn: Signal<In, Bits<QB>>,
    pub s_read_entry: Signal<In, Bits<129>>,
    pub reads_full: Signal<Out, Bits<Q>>,
    /// Reads of QP `order_qpn` placed so far (modulo 64, from the QP's reset): the
    /// requester completes a Read, and holds its QP's later completions, until then.
    pub order_qpn: Signal<In, Bits<QB>>,
    pub order_done: Signal<Out, Bits<DONE_BITS>>,
    /// The requester's own failures (it has told the command unit already).
    pub s_tx_fail: Signal<In, Bit>,
    pub s_tx_fail_qp: Signal<In, Bits<QB>>,
    /// To the command unit: QP to ERROR with this Terminate code (held off while the
    /// requester reports).
    pub m_fail: Signal<Out, Bit>,
    pub m_fail_qp: Signal<Out, Bits<QB>>,
    pub m_fail_term: Signal<Out, Bits<16>>,
    pub m_fail_received: Signal<Out, Bit>,
    /// A peer's Terminate named the Read or atomic of QP `m_term_qpn` with QN 1 MSN
    /// `m_term_msn` (its Terminated DDP Header is an untagged one of QN 1): the requester
    /// completes it with `m_term_status` if it still waits for its response.
    pub m_term_valid: Signal<Out, Bit>,
    pub m_term_qpn: Signal<Out, Bits<QB>>,
    pub m_term_msn: Signal<Out, Bits<32>>,
    pub m_term_status: Signal<Out, Bits<8>>,
    pub m_invalidate: Signal<Out, Bit>,
    pub m_invalidate_mr: Signal<Out, Bits<MB>>,
    /// Atomic Requests that passed every check, in order, for the atomic unit
    /// (`atomic::AtomicUnit`): the target's IOVA and the operands as numbers; `fresh` when
    /// a placement was written since the previous one (no forwarded value may be used),
    /// `after` the count of Read Responses and Terminates queued before it (`plain_done`
    /// must reach it first: RFC 7306 §7, a Read before an Atomic sees the old value).
    pub m_atom_valid: Signal<Out, Bit>,
    pub m_atom_ready: Signal<In, Bit>,
    pub m_atom_addr: Signal<Out, Bits<64>>,
    pub m_atom_aopcode: Signal<Out, Bits<4>>,
    pub m_atom_data: Signal<Out, Bits<64>>,
    pub m_atom_mask: Signal<Out, Bits<64>>,
    pub m_atom_compare: Signal<Out, Bits<64>>,
    pub m_atom_compare_mask: Signal<Out, Bits<64>>,
    pub m_atom_fresh: Signal<Out, Bit>,
    pub m_atom_after: Signal<Out, Bits<16>>,
    /// Read Responses and Terminates the segmenter has finished, modulo 2^16.
    pub plain_done: Signal<Out, Bits<16>>,
    /// Every receive completion this block has handed out is in host memory (or dropped):
    /// an atomic after a Send or Immediate Data waits for it (RFC 7306 §7).
    pub s_cqes_written: Signal<In, Bit>,
    /// The atomic unit's original values, in order: each one completes the Atomic Response
    /// job at the head of the queue, which waits for it.
    pub s_res_valid: Signal<In, Bit>,
    pub s_res_ready: Signal<Out, Bit>,
    pub s_res_original: Signal<In, Bits<64>>,
    ctx: RAM<Bits<256>, QB>,
    mrs: RAM<Bits<MR_ENTRY_BITS>, MB>,
    /// The table entry of the MR being written.
    mr_entry: MrEntry,
    /// Send messages completed (the next MSN is one more).
    recv_msn: RAM<Bits<32>, QB>,
    /// Read Requests accepted.
    rr_msn: RAM<Bits<32>, QB>,
    /// The MSN of the last Read Request whose response has been sent: the Read
    /// Responses still to send are `rr_msn - rr_sent`, at most IRD.
    rr_sent: RAM<Bits<32>, QB>,
    /// Atomic Responses sent (QN 3, responder) and received (requester).
    resp_sent_msn: RAM<Bits<32>, QB>,
    resp_recv_msn: RAM<Bits<32>, QB>,
    /// Read Responses and Terminates queued and finished (modulo 2^16), and whether a
    /// placement was requested since the last Atomic Request went to the atomic unit.
    plain_pushed: DFF<Bits<16>>,
    plain_count: DFF<Bits<16>>,
    placed_since: DFF<Bit>,
    /// Jobs the segmenter has taken and not finished: terminate (1), MSN (32), QP (8),
    /// Atomic Response (1).
    sending: SmallFifo<42>,
    /// Finished jobs not yet taken from `sending`.
    dones: DFF<Bits<4>>,
    in_flight: Signal<Local, Bits<32>>,
    ird: Signal<Local, Bits<8>>,
    max_reads: Constant<Bits<8>>,
    /// The receive a Send message is filling: active (1), placed (32), wr_id (64), addr
    /// (64), length (32), lkey (32).
    recv: RAM<Bits<233>, QB>,
    /// The flush of receives: a pointer walking the QPs, the QPs in ERROR found with
    /// nothing left to flush, and whose turn it is when a ULPDU waits too.
    scan: DFF<Bits<QB>>,
    /// `scan` as one bit of Q: the select of `flush_here` is then an AND and an OR.
    scan_onehot: DFF<Bits<Q>>,
    q_top: Constant<Bits<8>>,
    quiet: DFF<Bits<Q>>,
    quiet_next: Signal<Local, Bits<Q>>,
    /// A claim found no receive: QP `qpn` turns quiet this cycle.
    quiet_set: Signal<Local, Bit>,
    /// `quiet_set` a cycle ago: `flush_here` does not know of it yet, so no flush starts.
    quieted: DFF<Bit>,
    flush_turn: DFF<Bit>,
    /// QP `scan` is in ERROR with receives left to flush: made a cycle ahead, for the
    /// pointer's next value, from that QP's own `qp_error` and `quiet` bits, so that no
    /// QP-wide select lies before Idle's choice. (`qp_error` is then a cycle old: a QP
    /// leaves ERROR only when its context is written, `qp_we` in that very cycle, and
    /// Idle starts no flush in a cycle with a context write.)
    flush_here: DFF<Bit>,
    flush_go: Signal<Local, Bit>,
    flush_wr_id: Signal<Local, Bits<64>>,
    flush_status: Signal<Local, Bits<8>>,
    flush_cqe: Signal<Local, Bits<256>>,
    fault_status: Signal<Local, Bits<8>>,
    /// This cycle's segment is a Send with Invalidate whose STag gets checked next.
    inv_check: Signal<Local, Bit>,
    db_rq: Constant<Bits<2>>,
    st_flushed: Constant<Bits<8>>,
    st_local_length: Constant<Bits<8>>,
    st_local_protection: Constant<Bits<8>>,
    st_remote_access: Constant<Bits<8>>,
    st_remote_operation: Constant<Bits<8>>,
    /// Octets of the oldest outstanding Read placed so far.
    /// This RAM and the Read table are read with an output register, at the QP of the
    /// ULPDU being taken in Idle (`desc_qpn`), so their words are in registers by
    /// Header's last cycle, where the Read Response checks start.
    read_placed: RegRam<Bits<32>, QB>,
    reads: RegRam<Bits<129>, RB>,
    /// The outstanding-Read state of every QP, split by writer so that no update waits
    /// for another: Reads pushed (the requester), Reads popped (a Read's last response
    /// or an Atomic Response placed), both modulo `2 READ_SLOTS` (`COUNT_BITS`), Reads
    /// completed (`order_done`, modulo 64), and the most allowed (context writes, up to
    /// `READ_SLOTS`). Each holds a 16-bit lane per QP, of which the low `COUNT_BITS` bits
    /// are used (`DONE_BITS` for the completed count; one register each, not Q small ones:
    /// a simulator pays per register). Reads queued = pushed - popped; the oldest one's
    /// slot is popped's low `SLOT_BITS` bits, the next free one pushed's.
    /// A QP written in RESET clears its lanes.
    reads_pushed: DFF<Bits<QL>>,
    reads_popped: DFF<Bits<QL>>,
    reads_done: DFF<Bits<QL>>,
    reads_limit: DFF<Bits<QL>>,
    /// `reads_pushed` one and two cycles ago (cleared with it): a Read is outstanding for
    /// the response checks once its table entry can have come out of the RAM's output
    /// register, so an entry is never looked at before it is written.
    pushed_lag1: DFF<Bits<QL>>,
    pushed_lag2: DFF<Bits<QL>>,
    /// The Read table words are read at the QP whose first beat Idle takes (`desc_qpn`,
    /// its oldest slot `desc_head`), else at the ULPDU's (`qpn`, `rd_popped`): both
    /// addresses are formed side by side and `in_idle` picks one last, so the state's
    /// decode does not run through the lane select.
    desc_qpn: Signal<Local, Bits<QB>>,
    in_idle: Signal<Local, Bit>,
    desc_slot: Signal<Local, Bits<16>>,
    desc_head: Signal<Local, Bits<SLOT_BITS>>,
    rd_seen: Signal<Local, Bits<COUNT_BITS>>,
    rd_popped: Signal<Local, Bits<COUNT_BITS>>,
    wait_done: Signal<Local, Bits<DONE_BITS>>,
    push_pushed: Signal<Local, Bits<COUNT_BITS>>,
    push_popped: Signal<Local, Bits<COUNT_BITS>>,
    /// The QP's outstanding Read queue is empty.
    rd_none: Signal<Local, Bit>,
    rd_slot: Signal<Local, Bits<16>>,
    push_slot16: Signal<Local, Bits<16>>,
    order_slot: Signal<Local, Bits<16>>,
    waddr_slot: Signal<Local, Bits<16>>,
    /// The lanes a QP written in RESET clears.
    reads_clear: Signal<Local, Bits<QL>>,
    pushed_next: Signal<Local, Bits<QL>>,
    popped_next: Signal<Local, Bits<QL>>,
    done_next: Signal<Local, Bits<QL>>,
    limit_next: Signal<Local, Bits<QL>>,
    push_queued: Signal<Local, Bits<COUNT_BITS>>,
    pushed_up: Signal<Local, Bits<COUNT_BITS>>,
    popped_up: Signal<Local, Bits<COUNT_BITS>>,
    done_up: Signal<Local, Bits<DONE_BITS>>,
    resp_msn_next: Signal<Local, Bits<32>>,
    placed_next: Signal<Local, Bits<32>>,
    limit: Signal<Local, Bits<COUNT_BITS>>,
    count_ones: Constant<Bits<QL>>,
    /// A slot's place in the table's address, below the QP's.
    slot_shift: Constant<Bits<8>>,
    done_ones: Constant<Bits<QL>>,
    done_inc: Signal<Local, Bit>,
    /// Placement writes requested and acknowledged so far (modulo 256; at most 127 apart:
    /// the DMA write engine keeps 32 on its W side and 32 waiting for their B responses).
    writes_issued: DFF<Bits<8>>,
    writes_acked: DFF<Bits<8>>,
    /// Every placement write requested has been acknowledged.
    writes_settled: Signal<Local, Bit>,
    /// Read and atomic completions (their responses' last octets placed) waiting in order
    /// for the placement writes requested before them to be acknowledged, while the
    /// receiver goes on with the next ULPDUs: each one's QP, the count of writes requested
    /// before it (acknowledged in that order), and whether it still counts (a QP written in
    /// RESET cuts its own: their counts started over). When all `WAITS` wait, a further one
    /// waits in Complete.
    wait_qpn: [DFF<Bits<QB>>; WAITS],
    wait_writes: [DFF<Bits<8>>; WAITS],
    wait_live: [DFF<Bit>; WAITS],
    wait_head: DFF<Bits<{ WAIT_BITS + 1 }>>,
    wait_tail: DFF<Bits<{ WAIT_BITS + 1 }>>,
    wait_count: Signal<Local, Bits<{ WAIT_BITS + 1 }>>,
    waits_all: Constant<Bits<{ WAIT_BITS + 1 }>>,
    /// The oldest waiting completion: its QP and lane, writes, and whether it counts. The
    /// QP and writes come from registers, loaded with the entry that is the oldest next
    /// cycle (`wait_same_*`: the oldest stays; `wait_after_*`: it leaves) or with the
    /// completion handed over now when it goes there.
    wait_head_qpn: DFF<Bits<QB>>,
    wait_head_slot: Signal<Local, Bits<16>>,
    wait_head_writes: DFF<Bits<8>>,
    wait_head_live: Signal<Local, Bit>,
    wait_lives: Signal<Local, Bits<WAITS>>,
    wait_lives_at_head: Signal<Local, Bits<WAITS>>,
    wait_after: Signal<Local, Bits<{ WAIT_BITS + 1 }>>,
    wait_same_qpn: Signal<Local, Bits<QB>>,
    wait_same_writes: Signal<Local, Bits<8>>,
    wait_after_qpn: Signal<Local, Bits<QB>>,
    wait_after_writes: Signal<Local, Bits<8>>,
    /// Acknowledgements past the oldest's writes (its top bit: not all of them yet).
    wait_acks_past: Signal<Local, Bits<8>>,
    at_acks_short: Constant<Bits<3>>,
    wait_pop: Signal<Local, Bit>,
    /// The oldest's writes are all acknowledged: it counts next cycle (not in two cycles
    /// running, so that `done_value` reads the count the one before wrote).
    done_ready: DFF<Bit>,
    /// The oldest's QP's count of Reads completed, with it.
    done_value: DFF<Bits<DONE_BITS>>,
    /// Complete hands a completion over now.
    done_push: Signal<Local, Bit>,
    /// The failure waiting to be reported is on the QP of a waiting completion (as of the
    /// cycle before: a register, so the report to the command unit starts from registers).
    fail_waits: DFF<Bit>,
    fail_waits_now: Signal<Local, Bit>,
    /// The failure waiting was there the cycle before too: `fail_waits` is of its QP.
    fail_seen: DFF<Bit>,
    full: DFF<Bits<Q>>,
    tx_fails: SmallFifo<QB>,
    /// A Terminate to send before the next ULPDU (the requester's).
    side_work: Signal<Local, Bit>,
    /// Octets a Terminate's headers take (see `parse_prefix`), and where in the captured
    /// header its control word's M, D and R bits and its DDP header's T bit are.
    term_need: Signal<Local, Bits<16>>,
    at_term_m: Constant<Bits<10>>,
    at_term_d: Constant<Bits<10>>,
    at_term_r: Constant<Bits<10>>,
    at_term_hdr_t: Constant<Bits<10>>,
    term_len_word: Constant<Bits<16>>,
    term_len_seg: Constant<Bits<16>>,
    term_len_untagged: Constant<Bits<16>>,
    term_len_tagged: Constant<Bits<16>>,
    term_len_rdma: Constant<Bits<16>>,
    /// The MPA error code of the packet arriving (a failure of the MPA receiver), or 0.
    mpa_error: Signal<Local, Bits<8>>,
    at_desc_conn: Constant<Bits<8>>,
    at_desc_length: Constant<Bits<8>>,
    at_desc_mpa_error: Constant<Bits<8>>,
    /// The DDP control octet's T and L flags (the ULPDU's first octet, bits 7:0 of its
    /// first beat), and the DDP/RDMAP header's length, tagged or untagged.
    at_t_flag: Constant<Bits<8>>,
    at_l_flag: Constant<Bits<8>>,
    hlen_tagged: Constant<Bits<16>>,
    hlen_untagged: Constant<Bits<16>>,
    /// The RDMAP control octet (the ULPDU's second): its opcode (bits 3:0) and RV (7:6).
    at_opcode: Constant<Bits<8>>,
    at_rdmap_rv: Constant<Bits<8>>,
    rdmap_version: Constant<Bits<2>>,
    /// The opcodes (RFC 5040 Fig. 4, RFC 7306 §10), and the first one not defined.
    op_write: Constant<Bits<4>>,
    op_read_request: Constant<Bits<4>>,
    op_read_response: Constant<Bits<4>>,
    op_send: Constant<Bits<4>>,
    op_send_inv: Constant<Bits<4>>,
    op_send_se: Constant<Bits<4>>,
    op_send_se_inv: Constant<Bits<4>>,
    op_terminate: Constant<Bits<4>>,
    op_imm: Constant<Bits<4>>,
    op_imm_se: Constant<Bits<4>>,
    op_atomic_request: Constant<Bits<4>>,
    op_atomic_response: Constant<Bits<4>>,
    op_count: Constant<Bits<4>>,
    /// The untagged queues (RFC 5040 §5.1, RFC 7306 §8.1).
    qn_send: Constant<Bits<32>>,
    qn_read_atomic_request: Constant<Bits<32>>,
    qn_terminate: Constant<Bits<32>>,
    qn_atomic_response: Constant<Bits<32>>,
    /// The fixed RDMAP headers' lengths, and the Immediate Data's.
    len_read_request: Constant<Bits<16>>,
    len_atomic_request: Constant<Bits<16>>,
    len_atomic_response: Constant<Bits<16>>,
    len_imm: Constant<Bits<33>>,
    t_llp_mpa: Constant<Bits<16>>,
    /// Read Responses and Terminates waiting for the segmenter, room for every QP's
    /// READ_SLOTS Read Responses (IRD) and its Terminate: the engine never waits for the
    /// transmitter, whose progress may hang on this very engine draining the peer's link.
    /// An entry (465 bits): terminate (1); STag (32), TO (64), IOVA (64), length (32),
    /// MSN (32) or the inline octets (416: a Terminate of up to 52); inline length (6);
    /// MULPDU (16); CONN_ID (16);
    /// QP (8); CRC (1); Atomic Response (1: Request Identifier in the STag's place, QN 3 MSN
    /// in the IOVA's, the request's QN 1 MSN as MSN; the value comes from the atomic unit).
    jobs: RamFifo<465, RB1, RB2>,
    /// The oldest job, out of the RAM: the job's fields to the segmenter, and the ready to
    /// the atomic unit, start from registers, not from the block RAM's output.
    jobs_out: SkidBuffer<465>,
    job_entry: Signal<Local, Bits<465>>,
    job_out: Signal<Local, Bits<465>>,
    job_is_atomic: Signal<Local, Bit>,
    res_be: Bswap64,
    check: MrCheck,
    /// The MR read, registered in MrRead: the check starts at a register.
    mr: DFF<Bits<MR_ENTRY_BITS>>,
    /// The checked range's TO + length, from `chk_to` and `chk_len` as MrRead has them.
    chk_end: DFF<Bits<65>>,
    /// The MR's valid bit and whether its index is in the table, looked up in MrRead (for a
    /// Write, in Classify).
    chk_live: DFF<Bit>,
    chk_exists: DFF<Bit>,
    /// The MR's live bit at `mr_index` (MrRead), and at the header's STag (Classify, for a
    /// Write).
    live_at_index: Signal<Local, Bit>,
    live_at_stag: Signal<Local, Bit>,
    valid_at_index: Signal<Local, Bits<M>>,
    valid_at_stag: Signal<Local, Bits<M>>,
    state: DFF<RxState>,
    /// The next state as each state with a choice decides it (`from_idle`: after Idle,
    /// and so on); `state` takes the one of its own state, a parallel select, not a
    /// chain of overriding assignments.
    from_idle: Signal<Local, RxState>,
    from_header: Signal<Local, RxState>,
    from_classify: Signal<Local, RxState>,
    from_claim: Signal<Local, RxState>,
    from_mr_check: Signal<Local, RxState>,
    from_recv_fit: Signal<Local, RxState>,
    from_place_request: Signal<Local, RxState>,
    from_place_data: Signal<Local, RxState>,
    from_placed: Signal<Local, RxState>,
    from_complete: Signal<Local, RxState>,
    from_job_out: Signal<Local, RxState>,
    from_drain: Signal<Local, RxState>,
    from_imm_complete: Signal<Local, RxState>,
    from_atomic_wait: Signal<Local, RxState>,
    from_flush_claimed: Signal<Local, RxState>,
    from_flush_posted: Signal<Local, RxState>,
    from_flush_cqe: Signal<Local, RxState>,
    from_mpa_fault: Signal<Local, RxState>,
    /// The failure's Terminate code as each state that can fail decides it, picked as
    /// `state` is (they hold `fault_code` otherwise).
    code_idle: Signal<Local, Bits<16>>,
    code_classify: Signal<Local, Bits<16>>,
    code_claim: Signal<Local, Bits<16>>,
    code_mr_check: Signal<Local, Bits<16>>,
    code_recv_fit: Signal<Local, Bits<16>>,
    code_imm_complete: Signal<Local, Bits<16>>,
    qpn: DFF<Bits<QB>>,
    ulen: DFF<Bits<16>>,
    hdr: DFF<Bits<576>>,
    /// Where the next header beat goes: 64 `beats` (its low six bits visibly zero, so the
    /// placement is a 9-way select, not a full 576-bit shifter).
    hdr_at: Signal<Local, Bits<10>>,
    beats: DFF<Bits<4>>,
    /// The header beats this ULPDU needs (`need` of its first beat, kept from Idle), and
    /// whether more are to come (`beats < need_q`, made a cycle ahead as each beat comes),
    /// so that taking a beat and leaving Header start from registers.
    need_q: DFF<Bits<4>>,
    more: DFF<Bit>,
    ended: DFF<Bit>,
    /// The ULPDU is a tagged RDMA Write (from its first beat, as Idle takes it): its parse
    /// and its STag need only that beat, so Classify follows its second beat at once, and
    /// its last payload beat leads back to Idle.
    write_header: DFF<Bit>,
    write_first: Signal<Local, Bit>,
    /// The ULPDU is an untagged Atomic Request (from its first beat). Its checks need only
    /// the beats through its TO, so Classify follows the fifth at once, and the rest of its
    /// header comes in during Classify, MrCheck and AtomicWait (`capture`), which waits for
    /// it. Its STag and TO take the places of a tagged header's in `b_stag` and `b_to`, so
    /// its MR is read at the STag in Header and Classify goes on to MrCheck, as a Write's.
    atomic_header: DFF<Bit>,
    atomic_first: Signal<Local, Bit>,
    /// The ULPDU's other opcodes that Classify tells apart, decoded from its first beat as
    /// Idle takes it, so that Classify's choice starts from registers. (After the parse
    /// checks, which come first, an opcode's T flag is the one it must have.)
    read_response_header: DFF<Bit>,
    read_request_header: DFF<Bit>,
    atomic_response_header: DFF<Bit>,
    terminate_header: DFF<Bit>,
    /// The Send opcodes, Immediate Data's, and the L flag, from the first beat as well
    /// (`is_send`, `is_imm`, `last` read these).
    send_header: DFF<Bit>,
    imm_header: DFF<Bit>,
    last_header: DFF<Bit>,
    first_opcode: Signal<Local, Bits<4>>,
    first_tagged: Signal<Local, Bit>,
    /// An Atomic Request's header beats, those its checks need, and the length its MR
    /// check covers.
    atomic_beats: Constant<Bits<4>>,
    atomic_check_beats: Constant<Bits<4>>,
    atomic_len: Constant<Bits<16>>,
    at_atomic_stag: Constant<Bits<10>>,
    at_atomic_to: Constant<Bits<10>>,
    /// A header beat is taken this cycle if one is offered: in Header, or in the states an
    /// Atomic Request's last beats arrive in.
    capture: Signal<Local, Bit>,
    /// AtomicWait hands the atomic to the unit and its response to the job queue together.
    atom_go: Signal<Local, Bit>,
    /// The length the MR check covers from the header's TO, as Classify makes `chk_end`.
    classify_len: Signal<Local, Bits<16>>,
    /// The ULPDU's last beat is in, or is taken this cycle.
    ended_now: Signal<Local, Bit>,
    /// What the MR check is for: 0 Write, 1 Read Response, 2 Invalidate STag, 3 receive
    /// buffer, 4 Read source, 5 atomic target.
    purpose: DFF<Bits<3>>,
    mr_index: DFF<Bits<MB>>,
    /// The MR table's read address: the index `mr_index` takes when the next state is
    /// MrRead, chosen by state and opcode alone (not by the checks that pick the next state).
    mr_addr: Signal<Local, Bits<MB>>,
    /// Its sources, each selected by its own decode (`mr_at_*`) and OR-ed.
    mr_at_stag: Signal<Local, Bit>,
    mr_at_src: Signal<Local, Bit>,
    mr_at_response: Signal<Local, Bit>,
    mr_at_lkey: Signal<Local, Bit>,
    mr_from_stag: Signal<Local, Bits<MB>>,
    mr_from_src: Signal<Local, Bits<MB>>,
    mr_from_response: Signal<Local, Bits<MB>>,
    mr_from_lkey: Signal<Local, Bits<MB>>,
    chk_stag: DFF<Bits<32>>,
    chk_to: DFF<Bits<64>>,
    chk_len: DFF<Bits<32>>,
    chk_right: DFF<Bits<3>>,
    /// The receive being filled (Sends) or the Read being answered (Read Responses).
    r_active: DFF<Bit>,
    r_placed: DFF<Bits<32>>,
    /// The Read Response segment being checked is its Read's last and ends short of it.
    short_last: DFF<Bit>,
    r_wr_id: DFF<Bits<64>>,
    r_addr: DFF<Bits<64>>,
    r_len: DFF<Bits<32>>,
    r_lkey: DFF<Bits<32>>,
    place_addr: DFF<Bits<64>>,
    left: DFF<Bits<16>>,
    /// Of the payload `left`: whether its next beat takes an input beat (more is left than
    /// the carried header beat holds), and whether it is the last (8 octets or fewer),
    /// each made a cycle ahead as `left` is loaded or counts down.
    need_in_q: DFF<Bit>,
    left_last: DFF<Bit>,
    carry: DFF<Bits<64>>,
    req_valid: DFF<Bit>,
    job_valid: DFF<Bit>,
    job_terminate: DFF<Bit>,
    /// The job is an Atomic Response: set by MrCheck for AtomicWait, which pushes it.
    job_atomic: DFF<Bit>,
    job_inline: DFF<Bits<416>>,
    job_inline_len: DFF<Bits<6>>,
    job_addr: DFF<Bits<64>>,
    cqe_valid: DFF<Bit>,
    cqe: DFF<Bits<256>>,
    cqn: DFF<Bits<CB>>,
    fault_code: DFF<Bits<16>>,
    fault_hdr: DFF<Bit>,
    fail_valid: DFF<Bit>,
    fail_qp: DFF<Bits<QB>>,
    fail_term: DFF<Bits<16>>,
    fail_received: DFF<Bit>,
    /// A received Terminate that names a Read or atomic (see `m_term_*`).
    term_valid: DFF<Bit>,
    term_qpn: DFF<Bits<QB>>,
    term_msn: DFF<Bits<32>>,
    term_status: DFF<Bits<8>>,
    term_names_read: Signal<Local, Bit>,
    term_status_now: Signal<Local, Bits<8>>,
    /// Layer and error type of a received Terminate (the control word's first octet).
    term_class: Signal<Local, Bits<8>>,
    b_term_qn: Bswap32,
    b_term_msn: Bswap32,
    st_terminated: Constant<Bits<8>>,
    at_term_hdr_ctrl: Constant<Bits<10>>,
    at_term_qn: Constant<Bits<10>>,
    at_term_msn: Constant<Bits<10>>,
    at_term_class: Constant<Bits<10>>,
    class_rdma_protection: Constant<Bits<8>>,
    class_rdma_operation: Constant<Bits<8>>,
    class_ddp_tagged: Constant<Bits<8>>,
    class_ddp_untagged: Constant<Bits<8>>,
    invalidate: DFF<Bit>,
    // Header fields (wire order: octet i at bits 8 i).
    b_stag: Bswap32,
    b_to: Bswap64,
    b_qn: Bswap32,
    b_msn: Bswap32,
    b_mo: Bswap32,
    b_sink_stag: Bswap32,
    b_sink_to: Bswap64,
    b_size: Bswap32,
    b_src_stag: Bswap32,
    b_src_to: Bswap64,
    b_a_data: Bswap64,
    b_a_mask: Bswap64,
    b_a_compare: Bswap64,
    b_a_compare_mask: Bswap64,
    b_req_id: Bswap32,
    b_value: Bswap64,
    aop: Signal<Local, Bits<4>>,
    next_resp_msn: Signal<Local, Bits<32>>,
    is_imm: Signal<Local, Bit>,
    imm_cqe: Signal<Local, Bits<256>>,
    is_tagged: Signal<Local, Bit>,
    last: Signal<Local, Bit>,
    opcode: Signal<Local, Bits<4>>,
    hlen: Signal<Local, Bits<16>>,
    /// The payload length (ULPDU length less the DDP/RDMAP header), made as the first
    /// beat is taken, so it comes from a register to every check and add.
    plen: DFF<Bits<16>>,
    first_hlen: Signal<Local, Bits<16>>,
    /// The header beats the ULPDU whose first beat is in needs (from its T flag and opcode).
    need: Signal<Local, Bits<4>>,
    is_send: Signal<Local, Bit>,
    has_inv: Signal<Local, Bit>,
    queue: Signal<Local, Bits<32>>,
    parse_error: Signal<Local, Bit>,
    parse_code: Signal<Local, Bits<16>>,
    /// The checks of Classify, made a cycle ahead: registers, so that Classify's decision
    /// is a decode of flags. They are computed every cycle; Classify uses those of
    /// Header's last cycle, in which the header is whole (no beat is taken in it) and
    /// every per-QP RAM read of the ULPDU is in (its QP was registered in Idle: two cycles
    /// before, for a ULPDU of two beats or more). A ULPDU of one beat (8 octets at most)
    /// is shorter than any DDP header: it fails to parse, the one check made from the
    /// header alone, and Classify looks at no other flag.
    p_parse_error: DFF<Bit>,
    /// The QP is in RTS. A QP that leaves RTS in Header's last cycle is seen as in RTS
    /// for this ULPDU, as if the change had come a cycle later.
    p_rts: DFF<Bit>,
    p_parse_code: DFF<Bits<16>>,
    p_plen_any: DFF<Bit>,
    /// The MSN is not the next one: of a Send (QN 0), a Read or Atomic Request (QN 1), a
    /// response (QN 3).
    p_send_msn_bad: DFF<Bit>,
    p_rr_msn_bad: DFF<Bit>,
    p_resp_msn_bad: DFF<Bit>,
    /// IRD requests are already in flight.
    p_no_ird: DFF<Bit>,
    p_aop_bad: DFF<Bit>,
    /// Read Response: no Read outstanding (or the oldest is an atomic), the STag, TO or
    /// size not the Read's, a last segment of no payload short of its size, a last
    /// segment that does not end at its size.
    p_rr_none: DFF<Bit>,
    p_rr_stag_bad: DFF<Bit>,
    p_rr_bounds_bad: DFF<Bit>,
    p_rr_zero_bad: DFF<Bit>,
    p_rr_short_last: DFF<Bit>,
    /// Atomic Response: no atomic outstanding, or not this Request Identifier.
    p_ar_bad: DFF<Bit>,
    /// Send: no receive in progress; the MO is not where it left off.
    p_recv_idle: DFF<Bit>,
    p_mo_bad: DFF<Bit>,
    imm_end: Signal<Local, Bits<33>>,
    imm_piece: Signal<Local, Bit>,
    job_go: Signal<Local, Bit>,
    rts: Signal<Local, Bit>,
    pd: Signal<Local, Bits<16>>,
    next_msn: Signal<Local, Bits<32>>,
    next_rr_msn: Signal<Local, Bits<32>>,
    rd_entry: Signal<Local, Bits<129>>,
    push_count: Signal<Local, Bits<COUNT_BITS>>,
    recv_cqe: Signal<Local, Bits<256>>,
    cqe_flags: Signal<Local, Bits<256>>,
    term_len: Signal<Local, Bits<16>>,
    push_slot: Signal<Local, Bits<SLOT_BITS>>,
    full_pushed: Signal<Local, Bits<Q>>,
    push_limit: Signal<Local, Bits<COUNT_BITS>>,
    pop: Signal<Local, Bit>,
    need_in: Signal<Local, Bit>,
    out_n: Signal<Local, Bits<16>>,
    term_body: Signal<Local, Bits<416>>,
    hdr_bytes: Signal<Local, Bits<144>>,
    rdma_codes: Signal<Local, Bit>,
    code_stag: Signal<Local, Bits<16>>,
    code_pd: Signal<Local, Bits<16>>,
    code_rights: Signal<Local, Bits<16>>,
    code_wrap: Signal<Local, Bits<16>>,
    code_bounds: Signal<Local, Bits<16>>,
    code_none: Signal<Local, Bits<16>>,
    code_table: Signal<Local, Bits<128>>,
    /// The check just made failed, and its error (see `fault_now`).
    mr_failed: DFF<Bit>,
    mr_error: DFF<Bits<3>>,
    /// The failure's Terminate code as Fault sends it: `fault_code`, or for a failed MR
    /// check the code its error and purpose give.
    fault_now: Signal<Local, Bits<16>>,
    ord: Signal<Local, Bits<8>>,
    one_q: Constant<Bits<Q>>,
    mr_count: Constant<Bits<24>>,
    at_pd: Constant<Bits<9>>,
    at_conn: Constant<Bits<9>>,
    at_crc: Constant<Bits<9>>,
    at_mulpdu: Constant<Bits<9>>,
    at_recv_cq: Constant<Bits<9>>,
    at_ird: Constant<Bits<9>>,
    at_ord: Constant<Bits<9>>,
    at_rq_wr_id: Constant<Bits<9>>,
    at_rq_addr: Constant<Bits<9>>,
    at_rq_length: Constant<Bits<9>>,
    at_rq_lkey: Constant<Bits<9>>,
    at_cqe_wr_id: Constant<Bits<9>>,
    at_cqe_byte_len: Constant<Bits<9>>,
    at_cqe_qpn: Constant<Bits<9>>,
    at_cqe_opcode: Constant<Bits<9>>,
    at_cqe_status: Constant<Bits<9>>,
    at_cqe_inv_stag: Constant<Bits<9>>,
    at_cqe_solicited: Constant<Bits<9>>,
    at_cqe_invalidated: Constant<Bits<9>>,
    cqe_recv: Constant<Bits<8>>,
    cqe_recv_imm: Constant<Bits<8>>,
    at_cqe_imm: Constant<Bits<9>>,
    imm_valid_bit: Constant<Bits<256>>,
    st_success: Constant<Bits<8>>,
    flags_md: Constant<Bits<416>>,
    flag_r: Constant<Bits<416>>,
    fault_rdma: DFF<Bit>,
    solicited_bit: Constant<Bits<256>>,
    invalidated_bit: Constant<Bits<256>>,
    t_unspecified: Constant<Bits<16>>,
    t_tagged_version: Constant<Bits<16>>,
    t_untagged_version: Constant<Bits<16>>,
    t_invalid_qn: Constant<Bits<16>>,
    t_rdma_version: Constant<Bits<16>>,
    t_unexpected_opcode: Constant<Bits<16>>,
    t_no_buffer: Constant<Bits<16>>,
    t_msn_range: Constant<Bits<16>>,
    t_invalid_mo: Constant<Bits<16>>,
    t_too_long: Constant<Bits<16>>,
    t_ddp_local: Constant<Bits<16>>,
    t_tagged_stag: Constant<Bits<16>>,
    t_tagged_bounds: Constant<Bits<16>>,
    t_tagged_not_associated: Constant<Bits<16>>,
    t_tagged_wrap: Constant<Bits<16>>,
    t_rdma_stag: Constant<Bits<16>>,
    t_rdma_bounds: Constant<Bits<16>>,
    t_rdma_rights: Constant<Bits<16>>,
    t_rdma_not_associated: Constant<Bits<16>>,
    t_rdma_wrap: Constant<Bits<16>>,
    t_cannot_invalidate: Constant<Bits<16>>,
    t_local: Constant<Bits<16>>,
    t_misaligned: Constant<Bits<16>>,
}

impl<
        const QB: usize,
        const Q: usize,
        const CB: usize,
        const MB: usize,
        const M: usize,
        const RB: usize,
        const RB1: usize,
        const RB2: usize,
        const QL: usize,
    > Default for RdmapRx<QB, Q, CB, MB, M, RB, RB1, RB2, QL>
{
    fn default() -> Self {
        const {
            assert!(
                Q <= 1 << QB
                    && M <= 1 << MB
                    && RB == QB + SLOT_BITS
                    && 1 << (RB - QB) == READ_SLOTS
                    && RB1 == RB + 1
                    && RB2 == RB + 2
                    && QL == LANE_BITS * Q
                    && QB <= 8
                    && CB <= 16
                    && MB <= 24
            )
        };
        let at = |f: Field| constant(f.lsb.into());
        RdmapRx {
            clock: Default::default(),
            reset: Default::default(),
            s_axis_tdata: Default::default(),
            s_axis_tlast: Default::default(),
            s_axis_tuser: Default::default(),
            s_axis_tvalid: Default::default(),
            s_axis_tready: Default::default(),
            qp_we: Default::default(),
            qp_waddr: Default::default(),
            qp_wdata: Default::default(),
            qp_reset: Default::default(),
            qp_rts: Default::default(),
            qp_error: Default::default(),
            db_valid: Default::default(),
            db_kind: Default::default(),
            db_index: Default::default(),
            mr_we: Default::default(),
            mr_waddr: Default::default(),
            mr_wdata: Default::default(),
            mr_valid: Default::default(),
            m_rq_valid: Default::default(),
            m_rq_ready: Default::default(),
            m_rq_qpn: Default::default(),
            s_rq_valid: Default::default(),
            s_rq_ready: Default::default(),
            s_rq_posted: Default::default(),
            s_rq_wqe: Default::default(),
            s_rq_error: Default::default(),
            m_wr_req_valid: Default::default(),
            m_wr_req_ready: Default::default(),
            m_wr_req_addr: Default::default(),
            m_wr_req_len: Default::default(),
            m_wr_tdata: Default::default(),
            m_wr_tkeep: Default::default(),
            m_wr_tlast: Default::default(),
            m_wr_tvalid: Default::default(),
            m_wr_tready: Default::default(),
            s_wr_done_valid: Default::default(),
            m_cqe_valid: Default::default(),
            m_cqe_ready: Default::default(),
            m_cqn: Default::default(),
            m_cqe: Default::default(),
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
            s_job_done: Default::default(),
            s_read_valid: Default::default(),
            s_read_qpn: Default::default(),
            s_read_entry: Default::default(),
            reads_full: Default::default(),
            s_tx_fail: Default::default(),
            side_work: Default::default(),
            mpa_error: Default::default(),
            term_need: Default::default(),
            // The control word is octets 18-21 of the ULPDU, first octet in the lowest lane;
            // M, D, R are bits 15, 14, 13 of the word (octet 20), T bit 7 of octet 24.
            at_term_m: constant(8 * 20 + 7),
            at_term_d: constant(8 * 20 + 6),
            at_term_r: constant(8 * 20 + 5),
            at_term_hdr_t: constant(8 * 24 + 7),
            term_len_word: constant(Terminate::CONTROL_LEN as u64),
            term_len_seg: constant(Terminate::CONTROL_LEN as u64 + 2),
            term_len_untagged: constant((Terminate::CONTROL_LEN + 2 + UntaggedHeader::LEN) as u64),
            term_len_tagged: constant((Terminate::CONTROL_LEN + 2 + TaggedHeader::LEN) as u64),
            term_len_rdma: constant(ReadRequest::LEN as u64),
            at_desc_conn: constant(DESC_CONN as u64),
            at_desc_length: constant(DESC_LENGTH as u64),
            at_t_flag: constant(T_FLAG.trailing_zeros().into()),
            at_l_flag: constant(L_FLAG.trailing_zeros().into()),
            hlen_tagged: constant(TaggedHeader::LEN as u64),
            hlen_untagged: constant(UntaggedHeader::LEN as u64),
            at_opcode: constant(8),
            at_rdmap_rv: constant(14),
            rdmap_version: constant(RDMAP_VERSION.into()),
            op_write: opcode(Opcode::RdmaWrite),
            op_read_request: opcode(Opcode::ReadRequest),
            op_read_response: opcode(Opcode::ReadResponse),
            op_send: opcode(Opcode::Send),
            op_send_inv: opcode(Opcode::SendInvalidate),
            op_send_se: opcode(Opcode::SendSolicited),
            op_send_se_inv: opcode(Opcode::SendSolicitedInvalidate),
            op_terminate: opcode(Opcode::Terminate),
            op_imm: opcode(Opcode::ImmediateData),
            op_imm_se: opcode(Opcode::ImmediateDataSolicited),
            op_atomic_request: opcode(Opcode::AtomicRequest),
            op_atomic_response: opcode(Opcode::AtomicResponse),
            op_count: constant(Opcode::ALL.len() as u64),
            qn_send: constant(QN_SEND.into()),
            qn_read_atomic_request: constant(QN_READ_ATOMIC_REQUEST.into()),
            qn_terminate: constant(QN_TERMINATE.into()),
            qn_atomic_response: constant(QN_ATOMIC_RESPONSE.into()),
            len_read_request: constant(ReadRequest::LEN as u64),
            len_atomic_request: constant(AtomicRequest::LEN as u64),
            len_atomic_response: constant(AtomicResponse::LEN as u64),
            len_imm: constant(IMMEDIATE_DATA_LEN as u64),
            at_desc_mpa_error: constant(DESC_MPA_ERROR as u64),
            t_llp_mpa: term(TermCode::new(TermCode::LAYER_LLP, TermCode::ETYPE_LLP_MPA, 0)),
            s_tx_fail_qp: Default::default(),
            m_fail: Default::default(),
            m_fail_qp: Default::default(),
            m_fail_term: Default::default(),
            m_fail_received: Default::default(),
            m_term_valid: Default::default(),
            m_term_qpn: Default::default(),
            m_term_msn: Default::default(),
            m_term_status: Default::default(),
            term_valid: Default::default(),
            term_qpn: Default::default(),
            term_msn: Default::default(),
            term_status: Default::default(),
            term_names_read: Default::default(),
            term_status_now: Default::default(),
            term_class: Default::default(),
            b_term_qn: Default::default(),
            b_term_msn: Default::default(),
            st_terminated: constant(CqeStatus::Terminated as u64),
            // The Terminated DDP Header starts at octet 24 of the ULPDU: its control octet,
            // then (untagged) QN at octets 30-33 and MSN at 34-37; the control word's first
            // octet (18) holds the layer and error type.
            at_term_hdr_ctrl: constant(8 * 24),
            at_term_qn: constant(8 * 30),
            at_term_msn: constant(8 * 34),
            at_term_class: constant(8 * 18),
            class_rdma_protection: term_class(TermCode::LAYER_RDMA, TermCode::ETYPE_RDMA_REMOTE_PROTECTION),
            class_rdma_operation: term_class(TermCode::LAYER_RDMA, TermCode::ETYPE_RDMA_REMOTE_OPERATION),
            class_ddp_tagged: term_class(TermCode::LAYER_DDP, TermCode::ETYPE_DDP_TAGGED),
            class_ddp_untagged: term_class(TermCode::LAYER_DDP, TermCode::ETYPE_DDP_UNTAGGED),
            m_invalidate: Default::default(),
            m_invalidate_mr: Default::default(),
            m_atom_valid: Default::default(),
            m_atom_ready: Default::default(),
            m_atom_addr: Default::default(),
            m_atom_aopcode: Default::default(),
            m_atom_data: Default::default(),
            m_atom_mask: Default::default(),
            m_atom_compare: Default::default(),
            m_atom_compare_mask: Default::default(),
            m_atom_fresh: Default::default(),
            m_atom_after: Default::default(),
            plain_done: Default::default(),
            s_cqes_written: Default::default(),
            s_res_valid: Default::default(),
            s_res_ready: Default::default(),
            s_res_original: Default::default(),
            ctx: Default::default(),
            mrs: Default::default(),
            recv_msn: Default::default(),
            rr_msn: Default::default(),
            rr_sent: Default::default(),
            resp_sent_msn: Default::default(),
            resp_recv_msn: Default::default(),
            plain_pushed: Default::default(),
            plain_count: Default::default(),
            placed_since: Default::default(),
            job_is_atomic: Default::default(),
            res_be: Default::default(),
            sending: Default::default(),
            dones: Default::default(),
            in_flight: Default::default(),
            ird: Default::default(),
            max_reads: constant(MAX_READS.into()),
            recv: Default::default(),
            scan: Default::default(),
            quiet: Default::default(),
            quiet_next: Default::default(),
            quiet_set: Default::default(),
            quieted: Default::default(),
            flush_turn: Default::default(),
            flush_here: Default::default(),
            scan_onehot: Default::default(),
            q_top: constant((Q - 1) as u64),
            flush_go: Default::default(),
            flush_wr_id: Default::default(),
            flush_status: Default::default(),
            flush_cqe: Default::default(),
            fault_status: Default::default(),
            inv_check: Default::default(),
            db_rq: constant(crate::host::DB_RQ),
            st_flushed: constant(CqeStatus::Flushed as u64),
            st_local_length: constant(CqeStatus::LocalLength as u64),
            st_local_protection: constant(CqeStatus::LocalProtection as u64),
            st_remote_access: constant(CqeStatus::RemoteAccess as u64),
            st_remote_operation: constant(CqeStatus::RemoteOperation as u64),
            read_placed: Default::default(),
            reads: Default::default(),
            reads_pushed: Default::default(),
            reads_popped: Default::default(),
            reads_done: Default::default(),
            reads_limit: Default::default(),
            pushed_lag1: Default::default(),
            pushed_lag2: Default::default(),
            desc_qpn: Default::default(),
            in_idle: Default::default(),
            desc_slot: Default::default(),
            desc_head: Default::default(),
            rd_seen: Default::default(),
            rd_popped: Default::default(),
            wait_done: Default::default(),
            push_pushed: Default::default(),
            push_popped: Default::default(),
            rd_none: Default::default(),
            reads_clear: Default::default(),
            pushed_next: Default::default(),
            popped_next: Default::default(),
            limit_next: Default::default(),
            push_queued: Default::default(),
            pushed_up: Default::default(),
            popped_up: Default::default(),
            done_up: Default::default(),
            rd_slot: Default::default(),
            push_slot16: Default::default(),
            order_slot: Default::default(),
            waddr_slot: Default::default(),
            resp_msn_next: Default::default(),
            placed_next: Default::default(),
            done_next: Default::default(),
            limit: Default::default(),
            count_ones: constant((1 << COUNT_BITS) - 1),
            slot_shift: constant(SLOT_BITS as u64),
            done_ones: constant((1 << DONE_BITS) - 1),
            done_inc: Default::default(),
            writes_issued: Default::default(),
            writes_acked: Default::default(),
            writes_settled: Default::default(),
            wait_qpn: Default::default(),
            wait_writes: Default::default(),
            wait_live: Default::default(),
            wait_head: Default::default(),
            wait_tail: Default::default(),
            wait_count: Default::default(),
            waits_all: constant(WAITS as u64),
            at_acks_short: constant(7),
            wait_head_qpn: Default::default(),
            wait_head_slot: Default::default(),
            wait_head_writes: Default::default(),
            wait_head_live: Default::default(),
            wait_lives: Default::default(),
            wait_lives_at_head: Default::default(),
            wait_after: Default::default(),
            wait_same_qpn: Default::default(),
            wait_same_writes: Default::default(),
            wait_after_qpn: Default::default(),
            wait_after_writes: Default::default(),
            wait_acks_past: Default::default(),
            wait_pop: Default::default(),
            done_ready: Default::default(),
            done_value: Default::default(),
            done_push: Default::default(),
            fail_waits: Default::default(),
            fail_waits_now: Default::default(),
            fail_seen: Default::default(),
            order_qpn: Default::default(),
            order_done: Default::default(),
            full: Default::default(),
            tx_fails: Default::default(),
            jobs: Default::default(),
            jobs_out: Default::default(),
            job_entry: Default::default(),
            job_out: Default::default(),
            check: Default::default(),
            mr_entry: Default::default(),
            chk_end: Default::default(),
            chk_live: Default::default(),
            chk_exists: Default::default(),
            live_at_index: Default::default(),
            live_at_stag: Default::default(),
            valid_at_index: Default::default(),
            valid_at_stag: Default::default(),
            mr: Default::default(),
            state: Default::default(),
            from_idle: Default::default(),
            from_header: Default::default(),
            from_classify: Default::default(),
            from_claim: Default::default(),
            from_mr_check: Default::default(),
            from_recv_fit: Default::default(),
            from_place_request: Default::default(),
            from_place_data: Default::default(),
            from_placed: Default::default(),
            from_complete: Default::default(),
            from_job_out: Default::default(),
            from_drain: Default::default(),
            from_imm_complete: Default::default(),
            from_atomic_wait: Default::default(),
            from_flush_claimed: Default::default(),
            from_flush_posted: Default::default(),
            from_flush_cqe: Default::default(),
            from_mpa_fault: Default::default(),
            code_idle: Default::default(),
            code_classify: Default::default(),
            code_claim: Default::default(),
            code_mr_check: Default::default(),
            code_recv_fit: Default::default(),
            code_imm_complete: Default::default(),
            qpn: Default::default(),
            ulen: Default::default(),
            hdr: Default::default(),
            hdr_at: Default::default(),
            beats: Default::default(),
            need_q: Default::default(),
            more: Default::default(),
            ended: Default::default(),
            write_header: Default::default(),
            write_first: Default::default(),
            atomic_header: Default::default(),
            atomic_first: Default::default(),
            read_response_header: Default::default(),
            read_request_header: Default::default(),
            atomic_response_header: Default::default(),
            terminate_header: Default::default(),
            send_header: Default::default(),
            imm_header: Default::default(),
            last_header: Default::default(),
            first_opcode: Default::default(),
            atomic_beats: Constant::new((ATOMIC_REQUEST_BEATS as u64).into()),
            atomic_check_beats: Constant::new((ATOMIC_CHECK_BEATS as u64).into()),
            at_atomic_stag: Constant::new((AT_ATOMIC_STAG as u64).into()),
            at_atomic_to: Constant::new((AT_ATOMIC_TO as u64).into()),
            capture: Default::default(),
            atom_go: Default::default(),
            atomic_len: constant(OPERAND_LEN as u64),
            classify_len: Default::default(),
            ended_now: Default::default(),
            purpose: Default::default(),
            mr_index: Default::default(),
            mr_addr: Default::default(),
            mr_at_stag: Default::default(),
            mr_at_src: Default::default(),
            mr_at_response: Default::default(),
            mr_at_lkey: Default::default(),
            mr_from_stag: Default::default(),
            mr_from_src: Default::default(),
            mr_from_response: Default::default(),
            mr_from_lkey: Default::default(),
            chk_stag: Default::default(),
            chk_to: Default::default(),
            chk_len: Default::default(),
            chk_right: Default::default(),
            r_active: Default::default(),
            r_placed: Default::default(),
            short_last: Default::default(),
            r_wr_id: Default::default(),
            r_addr: Default::default(),
            r_len: Default::default(),
            r_lkey: Default::default(),
            place_addr: Default::default(),
            left: Default::default(),
            need_in_q: Default::default(),
            left_last: Default::default(),
            carry: Default::default(),
            req_valid: Default::default(),
            job_valid: Default::default(),
            job_terminate: Default::default(),
            job_atomic: Default::default(),
            job_inline: Default::default(),
            job_inline_len: Default::default(),
            job_addr: Default::default(),
            cqe_valid: Default::default(),
            cqe: Default::default(),
            cqn: Default::default(),
            fault_code: Default::default(),
            fault_hdr: Default::default(),
            fail_valid: Default::default(),
            fail_qp: Default::default(),
            fail_term: Default::default(),
            fail_received: Default::default(),
            invalidate: Default::default(),
            b_stag: Default::default(),
            b_to: Default::default(),
            b_qn: Default::default(),
            b_msn: Default::default(),
            b_mo: Default::default(),
            b_sink_stag: Default::default(),
            b_sink_to: Default::default(),
            b_size: Default::default(),
            b_src_stag: Default::default(),
            b_src_to: Default::default(),
            b_a_data: Default::default(),
            b_a_mask: Default::default(),
            b_a_compare: Default::default(),
            b_a_compare_mask: Default::default(),
            b_req_id: Default::default(),
            b_value: Default::default(),
            aop: Default::default(),
            next_resp_msn: Default::default(),
            is_imm: Default::default(),
            imm_cqe: Default::default(),
            is_tagged: Default::default(),
            last: Default::default(),
            opcode: Default::default(),
            hlen: Default::default(),
            plen: Default::default(),
            first_hlen: Default::default(),
            need: Default::default(),
            first_tagged: Default::default(),
            is_send: Default::default(),
            has_inv: Default::default(),
            queue: Default::default(),
            parse_error: Default::default(),
            parse_code: Default::default(),
            p_parse_error: Default::default(),
            p_rts: Default::default(),
            p_parse_code: Default::default(),
            p_plen_any: Default::default(),
            p_send_msn_bad: Default::default(),
            p_rr_msn_bad: Default::default(),
            p_resp_msn_bad: Default::default(),
            p_no_ird: Default::default(),
            p_aop_bad: Default::default(),
            p_rr_none: Default::default(),
            p_rr_stag_bad: Default::default(),
            p_rr_bounds_bad: Default::default(),
            p_rr_zero_bad: Default::default(),
            p_rr_short_last: Default::default(),
            p_ar_bad: Default::default(),
            p_recv_idle: Default::default(),
            p_mo_bad: Default::default(),
            imm_end: Default::default(),
            imm_piece: Default::default(),
            job_go: Default::default(),
            rts: Default::default(),
            pd: Default::default(),
            next_msn: Default::default(),
            next_rr_msn: Default::default(),
            rd_entry: Default::default(),
            push_count: Default::default(),
            recv_cqe: Default::default(),
            cqe_flags: Default::default(),
            term_len: Default::default(),
            push_slot: Default::default(),
            full_pushed: Default::default(),
            push_limit: Default::default(),
            pop: Default::default(),
            need_in: Default::default(),
            out_n: Default::default(),
            term_body: Default::default(),
            hdr_bytes: Default::default(),
            rdma_codes: Default::default(),
            code_stag: Default::default(),
            code_pd: Default::default(),
            code_rights: Default::default(),
            code_wrap: Default::default(),
            code_bounds: Default::default(),
            code_none: Default::default(),
            code_table: Default::default(),
            mr_failed: Default::default(),
            mr_error: Default::default(),
            fault_now: Default::default(),
            ord: Default::default(),
            one_q: constant(1),
            mr_count: constant(M as u64),
            at_pd: at(qp_fields::PD),
            at_conn: at(qp_fields::CONN_ID),
            at_crc: at(qp_fields::CRC_ENABLE),
            at_mulpdu: at(qp_fields::MULPDU),
            at_recv_cq: at(qp_fields::RECV_CQ),
            at_ird: at(qp_fields::IRD),
            at_ord: at(qp_fields::ORD),
            at_rq_wr_id: at(rq_wqe_fields::WR_ID),
            at_rq_addr: at(rq_wqe_fields::ADDR),
            at_rq_length: at(rq_wqe_fields::LENGTH),
            at_rq_lkey: at(rq_wqe_fields::LKEY),
            at_cqe_wr_id: at(cqe_fields::WR_ID),
            at_cqe_byte_len: at(cqe_fields::BYTE_LEN),
            at_cqe_qpn: at(cqe_fields::QPN),
            at_cqe_opcode: at(cqe_fields::OPCODE),
            at_cqe_status: at(cqe_fields::STATUS),
            at_cqe_inv_stag: at(cqe_fields::INVALIDATED_STAG),
            at_cqe_solicited: at(cqe_fields::SOLICITED),
            at_cqe_invalidated: at(cqe_fields::INVALIDATED),
            cqe_recv: constant(CqeOpcode::Recv as u64),
            cqe_recv_imm: constant(CqeOpcode::RecvImm as u64),
            at_cqe_imm: at(cqe_fields::IMM),
            imm_valid_bit: Constant::new(Bits::<256>::from(1_u64) << u64::from(cqe_fields::IMM_VALID.lsb)),
            st_success: constant(CqeStatus::Success as u64),
            flags_md: Constant::new(Bits::<416>::from(u64::from((M_BIT | D_BIT) >> 8)) << 16_u64),
            flag_r: Constant::new(Bits::<416>::from(u64::from(R_BIT >> 8)) << 16_u64),
            fault_rdma: Default::default(),
            solicited_bit: Constant::new(Bits::<256>::from(1_u64) << u64::from(cqe_fields::SOLICITED.lsb)),
            invalidated_bit: Constant::new(Bits::<256>::from(1_u64) << u64::from(cqe_fields::INVALIDATED.lsb)),
            t_unspecified: term(TermCode::RDMA_OP_UNSPECIFIED),
            t_tagged_version: term(TermCode::DDP_TAGGED_INVALID_VERSION),
            t_untagged_version: term(TermCode::DDP_UNTAGGED_INVALID_VERSION),
            t_invalid_qn: term(TermCode::DDP_UNTAGGED_INVALID_QN),
            t_rdma_version: term(TermCode::RDMA_OP_INVALID_VERSION),
            t_unexpected_opcode: term(TermCode::RDMA_OP_UNEXPECTED_OPCODE),
            t_no_buffer: term(TermCode::DDP_UNTAGGED_NO_BUFFER),
            t_msn_range: term(TermCode::DDP_UNTAGGED_MSN_RANGE),
            t_invalid_mo: term(TermCode::DDP_UNTAGGED_INVALID_MO),
            t_too_long: term(TermCode::DDP_UNTAGGED_TOO_LONG),
            t_ddp_local: term(TermCode::DDP_LOCAL_CATASTROPHIC),
            t_tagged_stag: term(TermCode::DDP_TAGGED_INVALID_STAG),
            t_tagged_bounds: term(TermCode::DDP_TAGGED_BASE_BOUNDS),
            t_tagged_not_associated: term(TermCode::DDP_TAGGED_STAG_NOT_ASSOCIATED),
            t_tagged_wrap: term(TermCode::DDP_TAGGED_TO_WRAP),
            t_rdma_stag: term(TermCode::RDMA_PROT_INVALID_STAG),
            t_rdma_bounds: term(TermCode::RDMA_PROT_BASE_BOUNDS),
            t_rdma_rights: term(TermCode::RDMA_PROT_ACCESS_RIGHTS),
            t_rdma_not_associated: term(TermCode::RDMA_PROT_STAG_NOT_ASSOCIATED),
            t_rdma_wrap: term(TermCode::RDMA_PROT_TO_WRAP),
            t_cannot_invalidate: term(TermCode::RDMA_PROT_CANNOT_INVALIDATE),
            t_local: term(TermCode::RDMA_LOCAL_CATASTROPHIC),
            t_misaligned: term(TermCode::RDMA_OP_CATASTROPHIC_STREAM),
        }
    }
}

impl<
        const QB: usize,
        const Q: usize,
        const CB: usize,
        const MB: usize,
        const M: usize,
        const RB: usize,
        const RB1: usize,
        const RB2: usize,
        const QL: usize,
    > Logic for RdmapRx<QB, Q, CB, MB, M, RB, RB1, RB2, QL>
{
    #[hdl_gen]
    fn update(&mut self) {
        dff_setup!(
            self,
            clock,
            mr_failed,
            mr_error,
            full,
            mr,
            chk_end,
            chk_live,
            chk_exists,
            state,
            qpn,
            ulen,
            plen,
            hdr,
            beats,
            need_q,
            more,
            ended,
            write_header,
            atomic_header,
            read_response_header,
            read_request_header,
            atomic_response_header,
            terminate_header,
            send_header,
            imm_header,
            last_header,
            purpose,
            mr_index,
            chk_stag,
            chk_to,
            chk_len,
            chk_right,
            r_active,
            r_placed,
            short_last,
            r_wr_id,
            r_addr,
            r_len,
            r_lkey,
            place_addr,
            left,
            need_in_q,
            left_last,
            carry,
            writes_issued,
            writes_acked,
            wait_head,
            wait_tail,
            wait_head_qpn,
            wait_head_writes,
            done_ready,
            done_value,
            dones,
            reads_pushed,
            reads_popped,
            reads_done,
            reads_limit,
            pushed_lag1,
            pushed_lag2,
            req_valid,
            job_valid,
            job_terminate,
            job_atomic,
            job_inline,
            job_inline_len,
            job_addr,
            cqe_valid,
            fault_rdma,
            plain_pushed,
            plain_count,
            placed_since,
            scan,
            scan_onehot,
            quiet,
            flush_turn,
            flush_here,
            quieted,
            cqe,
            cqn,
            fault_code,
            fault_hdr,
            fail_valid,
            fail_waits,
            fail_seen,
            fail_qp,
            fail_term,
            fail_received,
            term_valid,
            term_qpn,
            term_msn,
            term_status,
            invalidate,
            p_parse_error,
            p_rts,
            p_parse_code,
            p_plen_any,
            p_send_msn_bad,
            p_rr_msn_bad,
            p_resp_msn_bad,
            p_no_ird,
            p_aop_bad,
            p_rr_none,
            p_rr_stag_bad,
            p_rr_bounds_bad,
            p_rr_zero_bad,
            p_rr_short_last,
            p_ar_bad,
            p_recv_idle,
            p_mo_bad
        );
        // Each state stays unless it decides otherwise.
        self.from_idle.next = RxState::Idle;
        self.from_header.next = RxState::Header;
        self.from_classify.next = RxState::Classify;
        self.from_claim.next = RxState::Claim;
        self.from_mr_check.next = RxState::MrCheck;
        self.from_recv_fit.next = RxState::RecvFit;
        self.from_place_request.next = RxState::PlaceRequest;
        self.from_place_data.next = RxState::PlaceData;
        self.from_placed.next = RxState::Placed;
        self.from_complete.next = RxState::Complete;
        self.from_job_out.next = RxState::JobOut;
        self.from_drain.next = RxState::Drain;
        self.from_imm_complete.next = RxState::ImmComplete;
        self.from_atomic_wait.next = RxState::AtomicWait;
        self.from_flush_claimed.next = RxState::FlushClaimed;
        self.from_flush_posted.next = RxState::FlushPosted;
        self.from_flush_cqe.next = RxState::FlushCqe;
        self.from_mpa_fault.next = RxState::MpaFault;
        self.code_idle.next = self.fault_code.q.val();
        self.code_classify.next = self.fault_code.q.val();
        self.code_claim.next = self.fault_code.q.val();
        self.code_recv_fit.next = self.fault_code.q.val();
        self.code_imm_complete.next = self.fault_code.q.val();
        self.ctx.read_clock.next = self.clock.val();
        // A failure reported this cycle makes room for the next. It waits for a Read's or
        // an atomic's completion of its QP held for its acknowledgements: the response
        // came first, so the requester completes it before the QP leaves RTS (else it
        // would flush it). Meanwhile this engine waits in Drain: the next ULPDU is looked
        // at with the QP out of RTS, as the failure's own ULPDU left it. (The wait is
        // looked up a cycle ahead: a failure is reported from its second cycle on. No wait
        // starts meanwhile, as the engine stays in Drain until the report.)
        self.fail_waits_now.next = false;
        for i in 0..WAITS {
            if self.wait_live[i].q.val() & (self.wait_qpn[i].q.val() == self.fail_qp.q.val()) {
                self.fail_waits_now.next = true;
            }
        }
        self.fail_waits.d.next = self.fail_waits_now.val();
        self.m_fail.next =
            self.fail_valid.q.val() & self.fail_seen.q.val() & !self.fail_waits.q.val() & !self.s_tx_fail.val();
        self.fail_seen.d.next = self.fail_valid.q.val() & !self.m_fail.val();
        if self.m_fail.val() {
            self.fail_valid.d.next = false;
        }
        self.ctx.write_clock.next = self.clock.val();
        self.mrs.read_clock.next = self.clock.val();
        self.mrs.write_clock.next = self.clock.val();
        self.recv_msn.read_clock.next = self.clock.val();
        self.recv_msn.write_clock.next = self.clock.val();
        self.rr_msn.read_clock.next = self.clock.val();
        self.rr_msn.write_clock.next = self.clock.val();
        self.rr_sent.read_clock.next = self.clock.val();
        self.rr_sent.write_clock.next = self.clock.val();
        self.resp_sent_msn.read_clock.next = self.clock.val();
        self.resp_sent_msn.write_clock.next = self.clock.val();
        self.resp_recv_msn.read_clock.next = self.clock.val();
        self.resp_recv_msn.write_clock.next = self.clock.val();
        self.sending.clock.next = self.clock.val();
        self.sending.reset.next = self.reset.val();
        self.recv.read_clock.next = self.clock.val();
        self.recv.write_clock.next = self.clock.val();
        self.read_placed.clock.next = self.clock.val();
        self.reads.clock.next = self.clock.val();
        self.tx_fails.clock.next = self.clock.val();
        self.tx_fails.reset.next = self.reset.val();
        self.jobs.clock.next = self.clock.val();
        self.jobs.reset.next = self.reset.val();
        self.jobs_out.clock.next = self.clock.val();
        self.jobs_out.reset.next = self.reset.val();
        self.jobs_out.s_valid.next = self.jobs.m_valid.val();
        self.jobs_out.s_data.next = self.jobs.m_data.val();
        self.jobs.m_ready.next = self.jobs_out.s_ready.val();

        // Tables: contexts and MRs as the command unit writes them; the per-QP state is
        // read at the ULPDU's QP.
        self.ctx.write_enable.next = self.qp_we.val();
        self.ctx.write_address.next = self.qp_waddr.val();
        self.ctx.write_data.next = self.qp_wdata.val();
        self.ctx.read_address.next = self.qpn.q.val();
        self.mrs.write_enable.next = self.mr_we.val();
        self.mrs.write_address.next = self.mr_waddr.val();
        self.mr_entry.ctx.next = self.mr_wdata.val();
        self.mrs.write_data.next = self.mr_entry.entry.val();
        self.recv_msn.read_address.next = self.qpn.q.val();
        self.rr_msn.read_address.next = self.qpn.q.val();
        self.rr_sent.read_address.next = self.qpn.q.val();
        self.resp_sent_msn.read_address.next = self.qpn.q.val();
        self.resp_recv_msn.read_address.next = self.qpn.q.val();
        self.resp_sent_msn.write_enable.next = false;
        self.resp_sent_msn.write_address.next = self.qpn.q.val();
        // (Sums that go into wider words are their own signals, so they wrap as counters.)
        self.resp_msn_next.next = self.resp_sent_msn.read_data.val() + 1;
        self.resp_sent_msn.write_data.next = self.resp_msn_next.val();
        self.resp_recv_msn.write_enable.next = false;
        self.resp_recv_msn.write_address.next = self.qpn.q.val();
        self.resp_recv_msn.write_data.next = self.resp_recv_msn.read_data.val() + 1;
        self.recv.read_address.next = self.qpn.q.val();
        self.desc_qpn.next = self.s_axis_tuser.val().get_bits::<QB>(self.at_desc_conn.val().index());
        self.in_idle.next = self.state.q.val() == RxState::Idle;
        self.read_placed.read_address.next = self.qpn.q.val();
        if self.in_idle.val() {
            self.read_placed.read_address.next = self.desc_qpn.val();
        }
        self.recv_msn.write_enable.next = false;
        self.recv_msn.write_address.next = self.qpn.q.val();
        self.recv_msn.write_data.next = self.recv_msn.read_data.val() + 1;
        self.rr_msn.write_enable.next = false;
        self.rr_msn.write_address.next = self.qpn.q.val();
        self.rr_msn.write_data.next = self.rr_msn.read_data.val() + 1;
        self.recv.write_enable.next = false;
        self.recv.write_address.next = self.qpn.q.val();
        self.recv.write_data.next = bit_cast::<233, 1>(self.r_active.q.val().into())
            | (bit_cast::<233, 32>(self.r_placed.q.val()) << 1)
            | (bit_cast::<233, 64>(self.r_wr_id.q.val()) << 33)
            | (bit_cast::<233, 64>(self.r_addr.q.val()) << 97)
            | (bit_cast::<233, 32>(self.r_len.q.val()) << 161)
            | (bit_cast::<233, 32>(self.r_lkey.q.val()) << 193);
        self.read_placed.write_enable.next = false;
        self.read_placed.write_address.next = self.qpn.q.val();
        self.read_placed.write_data.next = self.r_placed.q.val();
        self.pd.next = self.ctx.read_data.val().get_bits::<16>(self.at_pd.val().index());

        // The outstanding Read table: a queue of READ_SLOTS entries per QP, its state in
        // the QP's lanes of `reads_pushed`, `reads_popped`, `reads_done` and `reads_limit`.
        self.rd_slot.next = bit_cast::<16, QB>(self.qpn.q.val()) << 4;
        self.push_slot16.next = bit_cast::<16, QB>(self.s_read_qpn.val()) << 4;
        self.order_slot.next = bit_cast::<16, QB>(self.order_qpn.val()) << 4;
        self.waddr_slot.next = bit_cast::<16, QB>(self.qp_waddr.val()) << 4;
        self.rd_popped.next = self.reads_popped.q.val().get_bits::<COUNT_BITS>(self.rd_slot.val().index());
        self.push_pushed.next = self.reads_pushed.q.val().get_bits::<COUNT_BITS>(self.push_slot16.val().index());
        self.push_popped.next = self.reads_popped.q.val().get_bits::<COUNT_BITS>(self.push_slot16.val().index());
        self.rd_seen.next = self.pushed_lag2.q.val().get_bits::<COUNT_BITS>(self.rd_slot.val().index());
        self.rd_none.next = self.rd_seen.val() == self.rd_popped.val();
        self.desc_slot.next = bit_cast::<16, QB>(self.desc_qpn.val()) << 4;
        self.desc_head.next = self.reads_popped.q.val().get_bits::<SLOT_BITS>(self.desc_slot.val().index());
        self.push_queued.next = self.push_pushed.val() - self.push_popped.val();
        self.push_count.next = self.push_queued.val();
        self.push_limit.next = self.reads_limit.q.val().get_bits::<COUNT_BITS>(self.push_slot16.val().index());
        self.reads.read_address.next = (bit_cast::<RB, QB>(self.qpn.q.val()) << self.slot_shift.val())
            | bit_cast::<RB, SLOT_BITS>(self.rd_popped.val().get_bits::<SLOT_BITS>(0));
        if self.in_idle.val() {
            self.reads.read_address.next = (bit_cast::<RB, QB>(self.desc_qpn.val()) << self.slot_shift.val())
                | bit_cast::<RB, SLOT_BITS>(self.desc_head.val());
        }
        self.rd_entry.next = self.reads.read_data.val();
        self.reads.write_enable.next = self.s_read_valid.val();
        self.push_slot.next = self.push_pushed.val().get_bits::<SLOT_BITS>(0);
        self.reads.write_address.next = (bit_cast::<RB, QB>(self.s_read_qpn.val()) << self.slot_shift.val())
            | bit_cast::<RB, SLOT_BITS>(self.push_slot.val());
        self.reads.write_data.next = self.s_read_entry.val();
        self.pop.next = false;
        self.ord.next = self.qp_wdata.val().get_bits::<8>(self.at_ord.val().index());
        self.limit.next = self.ord.val().get_bits::<COUNT_BITS>(0);
        if self.ord.val() > self.max_reads.val() {
            self.limit.next = self.max_reads.val().get_bits::<COUNT_BITS>(0);
        }
        if self.ord.val() == 0 {
            self.limit.next = 1.into();
        }
        self.full_pushed.next = self.full.q.val();
        if self.s_read_valid.val() & ((self.push_count.val() + 1) >= self.push_limit.val()) {
            self.full_pushed.next = self.full.q.val() | (self.one_q.val() << bit_cast::<Q, QB>(self.s_read_qpn.val()));
        }
        self.full.d.next = self.full_pushed.val();
        self.reads_full.next = self.full.q.val();

        // Header capture: the first beat in IDLE, then as many as the opcode needs.
        self.is_tagged.next = self.hdr.q.val().get_bit(self.at_t_flag.val().index());
        self.last.next = self.last_header.q.val();
        self.opcode.next = self.hdr.q.val().get_bits::<4>(self.at_opcode.val().index());
        self.hlen.next = self.hlen_untagged.val();
        if self.is_tagged.val() {
            self.hlen.next = self.hlen_tagged.val();
        }
        // The header length of the ULPDU whose first beat is in (the T flag is in it).
        self.first_hlen.next = self.hlen_untagged.val();
        if self.s_axis_tdata.val().get_bit(self.at_t_flag.val().index()) {
            self.first_hlen.next = self.hlen_tagged.val();
        }
        self.write_first.next = self.s_axis_tdata.val().get_bit(self.at_t_flag.val().index())
            & (self.s_axis_tdata.val().get_bits::<4>(self.at_opcode.val().index()) == self.op_write.val());
        self.first_opcode.next = self.s_axis_tdata.val().get_bits::<4>(self.at_opcode.val().index());
        self.atomic_first.next = !self.s_axis_tdata.val().get_bit(self.at_t_flag.val().index())
            & (self.first_opcode.val() == self.op_atomic_request.val());
        // The header beats of the ULPDU whose first beat is in: tagged two, untagged three;
        // a Read Request and a Terminate six; Immediate Data (26 octets) and Atomic
        // Responses (30) whole; Atomic Requests (70). The cases exclude each other.
        self.first_tagged.next = self.s_axis_tdata.val().get_bit(self.at_t_flag.val().index());
        self.need.next = 3.into();
        if self.first_tagged.val() {
            self.need.next = 2.into();
        }
        if !self.first_tagged.val()
            & ((self.first_opcode.val() == self.op_read_request.val())
                | (self.first_opcode.val() == self.op_terminate.val()))
        {
            self.need.next = 6.into();
        }
        if !self.first_tagged.val()
            & ((self.first_opcode.val() == self.op_imm.val())
                | (self.first_opcode.val() == self.op_imm_se.val())
                | (self.first_opcode.val() == self.op_atomic_response.val()))
        {
            self.need.next = 4.into();
        }
        if !self.first_tagged.val() & (self.first_opcode.val() == self.op_atomic_request.val()) {
            self.need.next = self.atomic_beats.val();
        }
        self.side_work.next = self.tx_fails.m_valid.val();
        // The flush of a QP in ERROR takes turns with ULPDUs (see the Flush states).
        self.scan.d.next = self.scan.q.val();
        self.scan_onehot.d.next = self.scan_onehot.q.val();
        if !self.flush_here.q.val() {
            self.scan.d.next = self.scan.q.val() + 1;
            self.scan_onehot.d.next =
                (self.scan_onehot.q.val() << 1_u64) | (self.scan_onehot.q.val() >> self.q_top.val());
        }
        self.flush_go.next = (self.state.q.val() == RxState::Idle)
            & self.flush_here.q.val()
            & !self.quieted.q.val()
            & !self.qp_we.val()
            & !self.side_work.val()
            & (!self.s_axis_tvalid.val() | self.flush_turn.q.val());
        if self.flush_go.val() {
            self.qpn.d.next = self.scan.q.val();
            self.ended.d.next = true;
            self.flush_turn.d.next = false;
            self.from_idle.next = RxState::FlushRead;
        }
        self.mpa_error.next = self.s_axis_tuser.val().get_bits::<8>(self.at_desc_mpa_error.val().index());
        self.s_axis_tready.next = false;
        if (self.state.q.val() == RxState::Idle) & !self.flush_go.val() {
            self.s_axis_tready.next = !self.side_work.val();
            if self.s_axis_tvalid.val() & !self.side_work.val() {
                self.flush_turn.d.next = true;
                self.qpn.d.next = self.s_axis_tuser.val().get_bits::<QB>(self.at_desc_conn.val().index());
                self.ulen.d.next = self.s_axis_tuser.val().get_bits::<16>(self.at_desc_length.val().index());
                self.plen.d.next =
                    self.s_axis_tuser.val().get_bits::<16>(self.at_desc_length.val().index()) - self.first_hlen.val();
                self.hdr.d.next = bit_cast::<576, 64>(self.s_axis_tdata.val());
                self.write_header.d.next = self.write_first.val();
                self.atomic_header.d.next = self.atomic_first.val();
                self.read_response_header.d.next = self.first_opcode.val() == self.op_read_response.val();
                self.read_request_header.d.next = self.first_opcode.val() == self.op_read_request.val();
                self.atomic_response_header.d.next = self.first_opcode.val() == self.op_atomic_response.val();
                self.terminate_header.d.next = self.first_opcode.val() == self.op_terminate.val();
                self.send_header.d.next = (self.first_opcode.val() >= self.op_send.val())
                    & (self.first_opcode.val() <= self.op_send_se_inv.val());
                self.imm_header.d.next =
                    (self.first_opcode.val() == self.op_imm.val()) | (self.first_opcode.val() == self.op_imm_se.val());
                self.last_header.d.next = self.s_axis_tdata.val().get_bit(self.at_l_flag.val().index());
                self.beats.d.next = 1.into();
                // Every ULPDU's header is two beats or more (`need`).
                self.need_q.d.next = self.need.val();
                self.more.d.next = true;
                self.ended.d.next = self.s_axis_tlast.val();
                self.from_idle.next = RxState::Header;
                // The MPA receiver's failure for this QP (RFC 5044 §8), in order with the
                // ULPDUs: it goes the way of any other failure, its code without headers
                // (MpaFault, Fault), if the QP is still in RTS.
                if self.mpa_error.val().any() {
                    self.code_idle.next = self.t_llp_mpa.val() | bit_cast::<16, 8>(self.mpa_error.val());
                    self.fault_hdr.d.next = false;
                    self.fault_rdma.d.next = false;
                    self.r_active.d.next = false;
                    self.from_idle.next = RxState::MpaFault;
                }
            }
        }
        self.hdr_at.next = bit_cast::<10, 4>(self.beats.q.val()) << 6;
        self.capture.next = self.more.q.val()
            & !self.ended.q.val()
            & ((self.state.q.val() == RxState::Header)
                | (self.atomic_header.q.val()
                    & ((self.state.q.val() == RxState::Classify)
                        | (self.state.q.val() == RxState::MrCheck)
                        | (self.state.q.val() == RxState::AtomicWait))));
        if self.capture.val() {
            self.s_axis_tready.next = true;
            if self.s_axis_tvalid.val() {
                self.hdr.d.next =
                    self.hdr.q.val() | (bit_cast::<576, 64>(self.s_axis_tdata.val()) << self.hdr_at.val());
                self.beats.d.next = self.beats.q.val() + 1;
                self.more.d.next = (self.beats.q.val() + 1) < self.need_q.q.val();
                self.ended.d.next = self.s_axis_tlast.val();
                // A Write's checks were made this cycle from its first beat, an Atomic
                // Request's from the beats before its fifth (below).
                if self.write_header.q.val()
                    | (self.atomic_header.q.val() & ((self.beats.q.val() + 1) == self.atomic_check_beats.val()))
                {
                    self.from_header.next = RxState::Classify;
                }
            }
        }
        if (self.state.q.val() == RxState::Header) & (!self.more.q.val() | self.ended.q.val()) {
            self.from_header.next = RxState::Classify;
        }

        // Field views.
        // (An Atomic Request's STag and TO, RFC 7306 Fig. 4, in place of a tagged header's.)
        self.b_stag.d.next = self.hdr.q.val().get_bits::<32>(16);
        self.b_to.d.next = self.hdr.q.val().get_bits::<64>(48);
        if self.atomic_header.q.val() {
            self.b_stag.d.next = self.hdr.q.val().get_bits::<32>(self.at_atomic_stag.val().index());
            self.b_to.d.next = self.hdr.q.val().get_bits::<64>(self.at_atomic_to.val().index());
        }
        self.b_qn.d.next = self.hdr.q.val().get_bits::<32>(48);
        self.b_msn.d.next = self.hdr.q.val().get_bits::<32>(80);
        self.b_mo.d.next = self.hdr.q.val().get_bits::<32>(112);
        self.b_sink_stag.d.next = self.hdr.q.val().get_bits::<32>(144);
        self.b_sink_to.d.next = self.hdr.q.val().get_bits::<64>(176);
        self.b_size.d.next = self.hdr.q.val().get_bits::<32>(240);
        self.b_src_stag.d.next = self.hdr.q.val().get_bits::<32>(272);
        self.b_src_to.d.next = self.hdr.q.val().get_bits::<64>(304);
        // Atomic Request (RFC 7306 Fig. 4, from octet 18): AOpCode in the low nibble of
        // octet 21, Request Identifier, STag, TO, Add/Swap Data and Mask, Compare Data and
        // Mask; an Atomic Response (Fig. 6): Request Identifier, original value.
        self.aop.next = self.hdr.q.val().get_bits::<4>(168);
        self.b_a_data.d.next = self.hdr.q.val().get_bits::<64>(304);
        self.b_a_mask.d.next = self.hdr.q.val().get_bits::<64>(368);
        self.b_a_compare.d.next = self.hdr.q.val().get_bits::<64>(432);
        self.b_a_compare_mask.d.next = self.hdr.q.val().get_bits::<64>(496);
        self.b_req_id.d.next = self.hdr.q.val().get_bits::<32>(144);
        self.b_value.d.next = self.hdr.q.val().get_bits::<64>(176);
        self.is_imm.next = self.imm_header.q.val();
        self.has_inv.next =
            (self.opcode.val() == self.op_send_inv.val()) | (self.opcode.val() == self.op_send_se_inv.val());
        self.is_send.next = self.send_header.q.val();

        // Parsing (`parse_ulpdu`), the first failing check in its order wins (the last `if`
        // here): DDP version, DDP header length, QN, RDMAP version, opcode, T flag and
        // queue, the fixed RDMAP headers (RFC 7306's as well).
        self.queue.next = self.qn_send.val();
        if (self.opcode.val() == self.op_read_request.val()) | (self.opcode.val() == self.op_atomic_request.val()) {
            self.queue.next = self.qn_read_atomic_request.val();
        }
        if self.opcode.val() == self.op_atomic_response.val() {
            self.queue.next = self.qn_atomic_response.val();
        }
        if self.opcode.val() == self.op_terminate.val() {
            self.queue.next = self.qn_terminate.val();
        }
        self.parse_error.next = true;
        self.parse_code.next = self.t_unexpected_opcode.val();
        // A Terminate is one segment holding its control word and every header the word
        // says follows (M or D: the segment length; D: the DDP header, whose T bit says how
        // long; R: the Read Request header).
        self.term_need.next = self.term_len_word.val();
        if self.hdr.q.val().get_bit(self.at_term_m.val().index())
            | self.hdr.q.val().get_bit(self.at_term_d.val().index())
        {
            self.term_need.next = self.term_len_seg.val();
        }
        if self.hdr.q.val().get_bit(self.at_term_d.val().index()) {
            self.term_need.next = self.term_len_untagged.val();
            if self.hdr.q.val().get_bit(self.at_term_hdr_t.val().index()) {
                self.term_need.next = self.term_len_tagged.val();
            }
        }
        if self.hdr.q.val().get_bit(self.at_term_r.val().index()) {
            self.term_need.next = self.term_need.val() + self.term_len_rdma.val();
        }
        if self.opcode.val() == self.op_terminate.val() {
            self.parse_code.next = self.t_unspecified.val();
            self.parse_error.next =
                !self.last.val() | self.b_mo.q.val().any() | (self.plen.q.val() < self.term_need.val());
        }
        if self.opcode.val() == self.op_read_request.val() {
            self.parse_error.next = false;
            if !self.last.val() | self.b_mo.q.val().any() | (self.plen.q.val() != self.len_read_request.val()) {
                self.parse_error.next = true;
                self.parse_code.next = self.t_unspecified.val();
            }
        }
        if self.is_send.val()
            | (self.opcode.val() == self.op_write.val())
            | (self.opcode.val() == self.op_read_response.val())
        {
            self.parse_error.next = false;
        }
        // Immediate Data is 8 octets (IMM-03): a message that would be longer, or a last
        // segment that does not end it at 8, does not parse; a piece of a split message
        // does, and is refused after the DDP checks (ImmComplete). The atomic headers fill
        // single segments exactly.
        self.imm_end.next = bit_cast::<33, 32>(self.b_mo.q.val()) + bit_cast::<33, 16>(self.plen.q.val());
        self.imm_piece.next = !self.last.val() | self.b_mo.q.val().any();
        if self.is_imm.val() {
            self.parse_error.next = false;
            if (self.imm_end.val() > self.len_imm.val())
                | (self.last.val() & (self.imm_end.val() != self.len_imm.val()))
            {
                self.parse_error.next = true;
                self.parse_code.next = self.t_unspecified.val();
            }
        }
        if self.opcode.val() == self.op_atomic_request.val() {
            self.parse_error.next = false;
            if !self.last.val() | self.b_mo.q.val().any() | (self.plen.q.val() != self.len_atomic_request.val()) {
                self.parse_error.next = true;
                self.parse_code.next = self.t_unspecified.val();
            }
        }
        if self.opcode.val() == self.op_atomic_response.val() {
            self.parse_error.next = false;
            if !self.last.val() | self.b_mo.q.val().any() | (self.plen.q.val() != self.len_atomic_response.val()) {
                self.parse_error.next = true;
                self.parse_code.next = self.t_unspecified.val();
            }
        }
        if self.opcode.val() >= self.op_count.val() {
            self.parse_error.next = true;
            self.parse_code.next = self.t_unexpected_opcode.val();
        }
        if (self.is_tagged.val()
            != ((self.opcode.val() == self.op_write.val()) | (self.opcode.val() == self.op_read_response.val())))
            | (!self.is_tagged.val() & (self.b_qn.q.val() != self.queue.val()))
        {
            self.parse_error.next = true;
            self.parse_code.next = self.t_unexpected_opcode.val();
        }
        if self.hdr.q.val().get_bits::<2>(self.at_rdmap_rv.val().index()) != self.rdmap_version.val() {
            self.parse_error.next = true;
            self.parse_code.next = self.t_rdma_version.val();
        }
        if !self.is_tagged.val() & (self.b_qn.q.val() > self.qn_atomic_response.val()) {
            self.parse_error.next = true;
            self.parse_code.next = self.t_invalid_qn.val();
        }
        if self.ulen.q.val() < self.hlen.val() {
            self.parse_error.next = true;
            self.parse_code.next = self.t_unspecified.val();
        }
        // The DDP version first of all (it is in the first octet, if there is one): with an
        // unknown version the rest of the layout, the header length included, is unknown too.
        if (self.hdr.q.val().get_bits::<2>(0) != 1) & self.ulen.q.val().any() {
            self.parse_error.next = true;
            self.parse_code.next = self.t_untagged_version.val();
            if self.is_tagged.val() {
                self.parse_code.next = self.t_tagged_version.val();
            }
        }
        self.rts.next = (self.qp_rts.val() & (self.one_q.val() << bit_cast::<Q, QB>(self.qpn.q.val()))).any();
        self.next_msn.next = self.recv_msn.read_data.val() + 1;
        self.next_rr_msn.next = self.rr_msn.read_data.val() + 1;
        self.next_resp_msn.next = self.resp_recv_msn.read_data.val() + 1;
        self.in_flight.next = self.rr_msn.read_data.val() - self.rr_sent.read_data.val();
        self.ird.next = self.ctx.read_data.val().get_bits::<8>(self.at_ird.val().index());
        if self.ird.val() > self.max_reads.val() {
            self.ird.next = self.max_reads.val();
        }
        self.p_parse_error.d.next = self.parse_error.val();
        self.p_rts.d.next = self.rts.val();
        self.p_parse_code.d.next = self.parse_code.val();
        self.p_plen_any.d.next = self.plen.q.val().any();
        self.p_send_msn_bad.d.next = self.b_msn.q.val() != self.next_msn.val();
        self.p_rr_msn_bad.d.next = self.b_msn.q.val() != self.next_rr_msn.val();
        self.p_resp_msn_bad.d.next = self.b_msn.q.val() != self.next_resp_msn.val();
        self.p_no_ird.d.next = self.in_flight.val() >= bit_cast::<32, 8>(self.ird.val());
        self.p_aop_bad.d.next = (self.aop.val() != 0) & (self.aop.val() != 2);
        self.p_rr_none.d.next = self.rd_none.val() | self.rd_entry.val().get_bit(128);
        self.p_rr_stag_bad.d.next =
            self.plen.q.val().any() & (self.b_stag.q.val() != self.rd_entry.val().get_bits::<32>(32));
        self.p_rr_bounds_bad.d.next = self.plen.q.val().any()
            & ((self.b_to.q.val()
                != (self.rd_entry.val().get_bits::<64>(64) + bit_cast::<64, 32>(self.read_placed.read_data.val())))
                | ((bit_cast::<33, 32>(self.read_placed.read_data.val()) + bit_cast::<33, 16>(self.plen.q.val()))
                    > bit_cast::<33, 32>(self.rd_entry.val().get_bits::<32>(0))));
        self.p_rr_zero_bad.d.next = !self.plen.q.val().any()
            & self.last.val()
            & (self.read_placed.read_data.val() != self.rd_entry.val().get_bits::<32>(0));
        self.p_rr_short_last.d.next = self.last.val()
            & ((self.read_placed.read_data.val() + bit_cast::<32, 16>(self.plen.q.val()))
                != self.rd_entry.val().get_bits::<32>(0));
        self.p_ar_bad.d.next = self.rd_none.val()
            | !self.rd_entry.val().get_bit(128)
            | (self.b_req_id.q.val() != self.next_resp_msn.val());
        self.p_recv_idle.d.next = !self.recv.read_data.val().get_bit(0);
        self.p_mo_bad.d.next = self.b_mo.q.val() != self.recv.read_data.val().get_bits::<32>(1);

        // A received Terminate names a Read or atomic when it carries an untagged DDP
        // header (DDP version 1) of QN 1; that one completes with REMOTE_ACCESS for a
        // protection or tagged buffer error, REMOTE_OPERATION for an operation or untagged
        // buffer error, TERMINATED otherwise (`terminated_read_status`).
        self.b_term_qn.d.next = self.hdr.q.val().get_bits::<32>(self.at_term_qn.val().index());
        self.b_term_msn.d.next = self.hdr.q.val().get_bits::<32>(self.at_term_msn.val().index());
        self.term_names_read.next = self.hdr.q.val().get_bit(self.at_term_d.val().index())
            & !self.hdr.q.val().get_bit(self.at_term_hdr_t.val().index())
            & (self.hdr.q.val().get_bits::<2>(self.at_term_hdr_ctrl.val().index()) == 1)
            & (self.b_term_qn.q.val() == 1);
        self.term_class.next = self.hdr.q.val().get_bits::<8>(self.at_term_class.val().index());
        self.term_status_now.next = self.st_terminated.val();
        if (self.term_class.val() == self.class_rdma_protection.val())
            | (self.term_class.val() == self.class_ddp_tagged.val())
        {
            self.term_status_now.next = self.st_remote_access.val();
        }
        if (self.term_class.val() == self.class_rdma_operation.val())
            | (self.term_class.val() == self.class_ddp_untagged.val())
        {
            self.term_status_now.next = self.st_remote_operation.val();
        }
        self.term_valid.d.next = false;
        self.m_term_valid.next = self.term_valid.q.val();
        self.m_term_qpn.next = self.term_qpn.q.val();
        self.m_term_msn.next = self.term_msn.q.val();
        self.m_term_status.next = self.term_status.q.val();

        // Classify: the ULPDU's way, by opcode (`RxState` names the states it leads to).
        self.inv_check.next = false;
        if self.state.q.val() == RxState::Classify {
            self.fault_hdr.d.next = self.ulen.q.val() >= self.hlen.val();
            self.fault_rdma.d.next = false;
            self.short_last.d.next = false;
            self.from_classify.next = RxState::Drain;
            self.r_active.d.next = self.recv.read_data.val().get_bit(0);
            self.r_placed.d.next = self.recv.read_data.val().get_bits::<32>(1);
            self.r_wr_id.d.next = self.recv.read_data.val().get_bits::<64>(33);
            self.r_addr.d.next = self.recv.read_data.val().get_bits::<64>(97);
            self.r_len.d.next = self.recv.read_data.val().get_bits::<32>(161);
            self.r_lkey.d.next = self.recv.read_data.val().get_bits::<32>(193);
            self.chk_len.d.next = bit_cast::<32, 16>(self.plen.q.val());
            if self.p_rts.q.val() {
                if self.p_parse_error.q.val() {
                    self.code_classify.next = self.p_parse_code.q.val();
                    self.from_classify.next = RxState::Fault;
                } else if self.write_header.q.val() {
                    // RDMA Write (parsed: a Write opcode is tagged, so `write_header` is
                    // the opcode's test, made from the first beat).
                    self.purpose.d.next = 0.into();
                    self.mr_index.d.next = self.b_stag.q.val().get_bits::<MB>(8);
                    self.chk_stag.d.next = self.b_stag.q.val();
                    self.chk_to.d.next = self.b_to.q.val();
                    self.chk_right.d.next = 3.into();
                    // The MR word is already out: the table was read at the STag in Header.
                    if self.p_plen_any.q.val() {
                        self.from_classify.next = RxState::MrCheck;
                    }
                } else if self.read_response_header.q.val() {
                    // Read Response.
                    self.purpose.d.next = 1.into();
                    self.mr_index.d.next = self.b_stag.q.val().get_bits::<MB>(8);
                    self.chk_stag.d.next = self.b_stag.q.val();
                    self.chk_to.d.next = self.b_to.q.val();
                    self.chk_right.d.next = 1.into();
                    self.r_placed.d.next = self.read_placed.read_data.val();
                    self.r_len.d.next = self.rd_entry.val().get_bits::<32>(0);
                    // The checks in the model's order (the last `if` wins): the Read exists, the
                    // STag and TO continue it within its size, the sink MR (MrRead, MrCheck), and
                    // then the last segment ends at the size (after the MR check, if any).
                    self.short_last.d.next = self.p_rr_short_last.q.val();
                    self.from_classify.next = RxState::Placed;
                    if self.p_plen_any.q.val() {
                        self.from_classify.next = RxState::MrRead;
                    }
                    if self.p_rr_zero_bad.q.val() {
                        self.code_classify.next = self.t_unspecified.val();
                        self.from_classify.next = RxState::Fault;
                    }
                    if self.p_rr_bounds_bad.q.val() {
                        self.code_classify.next = self.t_tagged_bounds.val();
                        self.from_classify.next = RxState::Fault;
                    }
                    if self.p_rr_stag_bad.q.val() {
                        self.code_classify.next = self.t_tagged_stag.val();
                        self.from_classify.next = RxState::Fault;
                    }
                    if self.p_rr_none.q.val() {
                        self.code_classify.next = self.t_unexpected_opcode.val();
                        self.from_classify.next = RxState::Fault;
                    }
                } else if self.read_request_header.q.val() {
                    // Read Request.
                    self.purpose.d.next = 4.into();
                    self.mr_index.d.next = self.b_src_stag.q.val().get_bits::<MB>(8);
                    self.chk_stag.d.next = self.b_src_stag.q.val();
                    self.chk_to.d.next = self.b_src_to.q.val();
                    self.chk_len.d.next = self.b_size.q.val();
                    self.chk_right.d.next = 2.into();
                    self.job_addr.d.next = 0.into();
                    if self.p_rr_msn_bad.q.val() {
                        self.code_classify.next = self.t_msn_range.val();
                        self.from_classify.next = RxState::Fault;
                    } else if self.p_no_ird.q.val() {
                        // IRD 0, or IRD responses not yet sent: no QN 1 buffer.
                        self.code_classify.next = self.t_no_buffer.val();
                        self.from_classify.next = RxState::Fault;
                    } else {
                        self.rr_msn.write_enable.next = true;
                        self.from_classify.next = RxState::JobOut;
                        self.job_valid.d.next = true;
                        self.job_terminate.d.next = false;
                        if self.b_size.q.val().any() {
                            self.from_classify.next = RxState::MrRead;
                            self.job_valid.d.next = false;
                        }
                    }
                } else if self.atomic_header.q.val() {
                    // Atomic Request: QN 1 MSN and an IRD slot as a Read Request, a
                    // supported AOpCode (ATOM-04), then the 8 target octets (REMOTE_ATOMIC).
                    self.purpose.d.next = 5.into();
                    self.mr_index.d.next = self.b_stag.q.val().get_bits::<MB>(8);
                    self.chk_stag.d.next = self.b_stag.q.val();
                    self.chk_to.d.next = self.b_to.q.val();
                    self.chk_len.d.next = bit_cast::<32, 16>(self.atomic_len.val());
                    self.chk_right.d.next = 4.into();
                    if self.p_rr_msn_bad.q.val() {
                        self.code_classify.next = self.t_msn_range.val();
                        self.from_classify.next = RxState::Fault;
                    } else if self.p_no_ird.q.val() {
                        self.code_classify.next = self.t_no_buffer.val();
                        self.from_classify.next = RxState::Fault;
                    } else if self.p_aop_bad.q.val() {
                        self.code_classify.next = self.t_unexpected_opcode.val();
                        self.from_classify.next = RxState::Fault;
                    } else {
                        // The MR word is already out: the table was read at the STag in
                        // Header.
                        self.rr_msn.write_enable.next = true;
                        self.from_classify.next = RxState::MrCheck;
                    }
                } else if self.atomic_response_header.q.val() {
                    // Atomic Response: the next QN 3 MSN, answering the oldest outstanding
                    // request, which must be an atomic with this Request Identifier (the
                    // same number); its 8 octets go to the request's local buffer.
                    self.purpose.d.next = 1.into();
                    self.mr_index.d.next = self.rd_entry.val().get_bits::<MB>(40);
                    self.chk_stag.d.next = self.rd_entry.val().get_bits::<32>(32);
                    self.chk_to.d.next = self.rd_entry.val().get_bits::<64>(64);
                    self.chk_len.d.next = 8.into();
                    self.chk_right.d.next = 1.into();
                    self.from_classify.next = RxState::MrRead;
                    if self.p_ar_bad.q.val() {
                        self.code_classify.next = self.t_unspecified.val();
                        self.from_classify.next = RxState::Fault;
                    }
                    if self.p_resp_msn_bad.q.val() {
                        self.code_classify.next = self.t_msn_range.val();
                        self.from_classify.next = RxState::Fault;
                    }
                } else if self.terminate_header.q.val() {
                    // Terminate: the peer's code (`fail_term`, below).
                    self.fail_valid.d.next = true;
                    self.term_valid.d.next = self.term_names_read.val();
                    self.term_qpn.d.next = self.qpn.q.val();
                    self.term_msn.d.next = self.b_term_msn.q.val();
                    self.term_status.d.next = self.term_status_now.val();
                } else {
                    // A Send segment, or Immediate Data (which cannot continue a Send in
                    // progress: 1/2/0x03, the Send's receive REMOTE_OPERATION).
                    if self.p_send_msn_bad.q.val() {
                        self.code_classify.next = self.t_msn_range.val();
                        self.from_classify.next = RxState::Fault;
                    } else if self.p_recv_idle.q.val() {
                        self.from_classify.next = RxState::Claim;
                        self.req_valid.d.next = true;
                    } else if self.is_imm.val() {
                        self.code_classify.next = self.t_msn_range.val();
                        self.from_classify.next = RxState::Fault;
                    } else if self.p_mo_bad.q.val() {
                        self.code_classify.next = self.t_invalid_mo.val();
                        self.from_classify.next = RxState::Fault;
                    } else {
                        self.from_classify.next = RxState::RecvFit;
                        self.inv_check.next = self.has_inv.val();
                    }
                }
            }
        }

        // Claim: the next posted receive.
        self.m_rq_valid.next = self.req_valid.q.val();
        self.m_rq_qpn.next = self.qpn.q.val();
        self.s_rq_ready.next = (self.state.q.val() == RxState::Claim) | (self.state.q.val() == RxState::FlushPosted);
        if self.req_valid.q.val() & self.m_rq_ready.val() {
            self.req_valid.d.next = false;
        }
        if (self.state.q.val() == RxState::Claim) & self.s_rq_valid.val() {
            self.r_active.d.next = self.s_rq_posted.val() & !self.s_rq_error.val();
            self.r_placed.d.next = 0.into();
            self.r_wr_id.d.next = self.s_rq_wqe.val().get_bits::<64>(self.at_rq_wr_id.val().index());
            self.r_addr.d.next = self.s_rq_wqe.val().get_bits::<64>(self.at_rq_addr.val().index());
            self.r_len.d.next = self.s_rq_wqe.val().get_bits::<32>(self.at_rq_length.val().index());
            self.r_lkey.d.next = self.s_rq_wqe.val().get_bits::<32>(self.at_rq_lkey.val().index());
            self.from_claim.next = RxState::RecvFit;
            if self.is_imm.val() {
                // Immediate Data consumes the receive but places nothing in its buffer.
                self.from_claim.next = RxState::ImmComplete;
            }
            self.inv_check.next = self.has_inv.val();
        }
        // A Send with Invalidate, first segment or later one, has its Invalidate STag checked
        // before its receive: every segment's, as the last one's is what gets invalidated.
        if self.inv_check.val() {
            self.purpose.d.next = 2.into();
            self.mr_index.d.next = self.b_stag.q.val().get_bits::<MB>(8);
            self.chk_stag.d.next = self.b_stag.q.val();
            self.chk_to.d.next = 0.into();
            self.chk_len.d.next = 0.into();
            self.chk_right.d.next = 0.into();
            self.from_classify.next = RxState::MrRead;
            self.from_claim.next = RxState::MrRead;
        }
        // The claim's own failures win.
        if (self.state.q.val() == RxState::Claim) & self.s_rq_valid.val() {
            if self.b_mo.q.val().any() & !self.is_imm.val() {
                self.code_claim.next = self.t_invalid_mo.val();
                self.from_claim.next = RxState::Fault;
            }
            if !self.s_rq_posted.val() {
                self.code_claim.next = self.t_no_buffer.val();
                self.from_claim.next = RxState::Fault;
            }
            if self.s_rq_error.val() {
                self.code_claim.next = self.t_ddp_local.val();
                self.fault_hdr.d.next = false;
                self.from_claim.next = RxState::Fault;
            }
        }

        // MrRead, MrCheck: the MR check, for whichever purpose.
        self.valid_at_index.next = self.mr_valid.val() >> bit_cast::<M, MB>(self.mr_index.q.val());
        self.valid_at_stag.next = self.mr_valid.val() >> bit_cast::<M, MB>(self.b_stag.q.val().get_bits::<MB>(8));
        self.live_at_index.next = self.valid_at_index.val().get_bit(0);
        self.live_at_stag.next = self.valid_at_stag.val().get_bit(0);
        if self.state.q.val() == RxState::MrRead {
            // A receive buffer refused by its check (local) is reported without headers; it is
            // the one failure that can follow this check, so the choice is made ahead of it.
            if self.purpose.q.val() == 3 {
                self.fault_hdr.d.next = false;
            }
            self.mr.d.next = self.mrs.read_data.val();
            self.chk_live.d.next = self.live_at_index.val();
            self.chk_exists.d.next = self.chk_stag.q.val().get_bits::<24>(8) < self.mr_count.val();
        }
        // A Write's or an Atomic Request's MR was read at its STag in Header (`mr_addr`'s
        // default), so Classify takes its word and makes the check's inputs from the header,
        // and the ULPDU goes on to MrCheck; any other that goes to MrRead has these made again
        // there.
        if self.state.q.val() == RxState::Classify {
            self.mr.d.next = self.mrs.read_data.val();
            self.chk_live.d.next = self.live_at_stag.val();
            self.chk_exists.d.next = self.b_stag.q.val().get_bits::<24>(8) < self.mr_count.val();
        }
        self.check.mr.next = self.mr.q.val();
        self.check.live.next = self.chk_live.q.val();
        self.check.exists.next = self.chk_exists.q.val();
        self.check.stag.next = self.chk_stag.q.val();
        self.check.pd.next = self.pd.val();
        self.check.to.next = self.chk_to.q.val();
        self.chk_end.d.next = bit_cast::<65, 64>(self.chk_to.q.val()) + bit_cast::<65, 32>(self.chk_len.q.val());
        self.classify_len.next = self.plen.q.val();
        if self.atomic_header.q.val() {
            self.classify_len.next = self.atomic_len.val();
        }
        if self.state.q.val() == RxState::Classify {
            self.chk_end.d.next = bit_cast::<65, 64>(self.b_to.q.val()) + bit_cast::<65, 16>(self.classify_len.val());
        }
        self.check.range_end.next = self.chk_end.q.val();
        self.check.right.next = self.chk_right.q.val();
        // The error as a Terminate code: DDP tagged codes, RDMAP ones for a Read source or an
        // atomic target, the local code for a receive buffer, and for an Invalidate STag
        // RDMAP's (Cannot Invalidate for another PD's MR). Each error's code is chosen by
        // the purpose (a register).
        self.rdma_codes.next = (self.purpose.q.val() == 2) | (self.purpose.q.val() == 4) | (self.purpose.q.val() == 5);
        self.code_stag.next = self.t_tagged_stag.val();
        self.code_pd.next = self.t_tagged_not_associated.val();
        self.code_rights.next = self.t_tagged_stag.val();
        self.code_wrap.next = self.t_tagged_wrap.val();
        self.code_bounds.next = self.t_tagged_bounds.val();
        if self.rdma_codes.val() {
            self.code_stag.next = self.t_rdma_stag.val();
            self.code_pd.next = self.t_rdma_not_associated.val();
            self.code_rights.next = self.t_rdma_rights.val();
            self.code_wrap.next = self.t_rdma_wrap.val();
            self.code_bounds.next = self.t_rdma_bounds.val();
        }
        if self.purpose.q.val() == 2 {
            self.code_pd.next = self.t_cannot_invalidate.val();
            self.code_rights.next = self.t_rdma_stag.val();
            self.code_wrap.next = self.t_rdma_stag.val();
            self.code_bounds.next = self.t_rdma_stag.val();
        }
        if self.purpose.q.val() == 3 {
            self.code_stag.next = self.t_ddp_local.val();
            self.code_pd.next = self.t_ddp_local.val();
            self.code_rights.next = self.t_ddp_local.val();
            self.code_wrap.next = self.t_ddp_local.val();
            self.code_bounds.next = self.t_ddp_local.val();
        }
        // (Without an error: a misaligned atomic target, a short Read Response's last
        // segment, or no failure at all.)
        self.code_none.next = self.fault_code.q.val();
        if self.purpose.q.val() == 2 {
            self.code_none.next = self.t_rdma_stag.val();
        }
        if (self.purpose.q.val() == 1) & self.short_last.q.val() {
            self.code_none.next = self.t_unspecified.val();
        }
        if (self.purpose.q.val() == 5) & self.check.iova.val().get_bits::<3>(0).any() {
            self.code_none.next = self.t_misaligned.val();
        }
        // A failed check's code is picked a cycle later, in Fault, from registers: the
        // check's error (`mr_error`) selects from the table of the purpose's codes (16 bits
        // each, by error: a select by three bits is one level of LUTs and their muxes). The
        // check itself leaves only the code without an error.
        self.code_table.next = bit_cast::<128, 16>(self.code_stag.val())
            | (bit_cast::<128, 16>(self.code_stag.val()) << 16_u64)
            | (bit_cast::<128, 16>(self.code_pd.val()) << 32_u64)
            | (bit_cast::<128, 16>(self.code_rights.val()) << 48_u64)
            | (bit_cast::<128, 16>(self.code_wrap.val()) << 64_u64)
            | (bit_cast::<128, 16>(self.code_bounds.val()) << 80_u64)
            | (bit_cast::<128, 16>(self.code_stag.val()) << 96_u64)
            | (bit_cast::<128, 16>(self.code_stag.val()) << 112_u64);
        self.code_mr_check.next = self.code_none.val();
        self.mr_failed.d.next = (self.state.q.val() == RxState::MrCheck) & self.check.error.val().any();
        self.mr_error.d.next = self.check.error.val();
        self.fault_now.next = self.fault_code.q.val();
        if self.mr_failed.q.val() {
            self.fault_now.next =
                bit_cast::<16, 128>(self.code_table.val() >> (bit_cast::<7, 3>(self.mr_error.q.val()) << 4_u64));
        }
        if self.state.q.val() == RxState::MrCheck {
            self.place_addr.d.next = self.check.iova.val();
            self.job_addr.d.next = self.check.iova.val();
            self.from_mr_check.next = RxState::PlaceRequest;
            if self.purpose.q.val() == 2 {
                self.from_mr_check.next = RxState::RecvFit;
            }
            if self.purpose.q.val() == 4 {
                self.from_mr_check.next = RxState::JobOut;
                self.job_valid.d.next = true;
                self.job_terminate.d.next = false;
            }
            if self.purpose.q.val() == 5 {
                // The atomic's target must be a 64-bit aligned host address (ATOM-07:
                // 0/2/0x07, after the access checks).
                self.from_mr_check.next = RxState::AtomicWait;
                self.job_atomic.d.next = true;
                self.job_terminate.d.next = false;
                if self.check.iova.val().get_bits::<3>(0).any() {
                    self.from_mr_check.next = RxState::Fault;
                    self.job_atomic.d.next = false;
                }
            }
            if self.check.error.val().any() {
                // A refused Read Request gets its Terminate and no response.
                self.job_valid.d.next = false;
                self.job_atomic.d.next = false;
                self.fault_rdma.d.next = self.purpose.q.val() == 4;
                self.from_mr_check.next = RxState::Fault;
            }
            if (self.purpose.q.val() == 1) & !self.check.error.val().any() & self.short_last.q.val() {
                // A Read Response's last segment that does not end at the Read's size.
                self.from_mr_check.next = RxState::Fault;
            }
            if self.purpose.q.val() == 2 {
                // Invalidate: only a valid MR of this PD (check_invalidate).
                self.from_mr_check.next = RxState::RecvFit;
                if (self.check.error.val() == 1) | (self.check.error.val() == 2) {
                    self.from_mr_check.next = RxState::Fault;
                }
            }
        }

        // RecvFit: the Send must fit its receive, whose buffer is then checked.
        if self.state.q.val() == RxState::RecvFit {
            self.purpose.d.next = 3.into();
            self.mr_index.d.next = self.r_lkey.q.val().get_bits::<MB>(8);
            self.chk_stag.d.next = self.r_lkey.q.val();
            self.chk_to.d.next = self.r_addr.q.val() + bit_cast::<64, 32>(self.b_mo.q.val());
            self.chk_len.d.next = bit_cast::<32, 16>(self.plen.q.val());
            self.chk_right.d.next = 1.into();
            self.from_recv_fit.next = RxState::Placed;
            if self.plen.q.val().any() {
                self.from_recv_fit.next = RxState::MrRead;
            }
            if (bit_cast::<33, 32>(self.b_mo.q.val()) + bit_cast::<33, 16>(self.plen.q.val()))
                > bit_cast::<33, 32>(self.r_len.q.val())
            {
                self.code_recv_fit.next = self.t_too_long.val();
                self.from_recv_fit.next = RxState::Fault;
            }
        }
        // The MR table is read in the state before MrRead (Classify, Claim or RecvFit) at the
        // index that state chooses, so its word is out in MrRead. The address is selected by
        // state and opcode from registers, in parallel with the checks: in any other case the
        // next state is not MrRead and the word is not used. (A Write's and an Atomic
        // Request's are read in Header, at the STag in `b_stag`.) The sources exclude each
        // other (a receive's LKey is read only for a Send, in RecvFit; a Send's Invalidate
        // STag in Claim is the default), so the address is their AND-OR, not a chain of
        // overriding selects.
        self.mr_at_src.next = self.opcode.val() == self.op_read_request.val();
        self.mr_at_response.next = self.opcode.val() == self.op_atomic_response.val();
        self.mr_at_lkey.next = self.state.q.val() == RxState::RecvFit;
        self.mr_at_stag.next = !(self.mr_at_src.val() | self.mr_at_response.val() | self.mr_at_lkey.val());
        self.mr_from_stag.next = 0.into();
        if self.mr_at_stag.val() {
            self.mr_from_stag.next = self.b_stag.q.val().get_bits::<MB>(8);
        }
        self.mr_from_src.next = 0.into();
        if self.mr_at_src.val() {
            self.mr_from_src.next = self.b_src_stag.q.val().get_bits::<MB>(8);
        }
        self.mr_from_response.next = 0.into();
        if self.mr_at_response.val() {
            self.mr_from_response.next = self.rd_entry.val().get_bits::<MB>(40);
        }
        self.mr_from_lkey.next = 0.into();
        if self.mr_at_lkey.val() {
            self.mr_from_lkey.next = self.r_lkey.q.val().get_bits::<MB>(8);
        }
        self.mr_addr.next =
            self.mr_from_stag.val() | self.mr_from_src.val() | self.mr_from_response.val() | self.mr_from_lkey.val();
        self.mrs.read_address.next = self.mr_addr.val();

        // PlaceRequest, PlaceData: place the payload, realigned to lane 0 (it starts at octet 6 of
        // the last header beat when tagged, octet 2 when untagged).
        self.m_wr_req_valid.next = self.state.q.val() == RxState::PlaceRequest;
        self.m_wr_req_addr.next = self.place_addr.q.val();
        self.m_wr_req_len.next = bit_cast::<32, 16>(self.plen.q.val());
        if self.opcode.val() == self.op_atomic_response.val() {
            self.m_wr_req_len.next = 8.into();
        }
        if (self.state.q.val() == RxState::PlaceRequest) & self.m_wr_req_ready.val() {
            self.from_place_request.next = RxState::PlaceData;
            self.left.d.next = self.plen.q.val();
            // The carried beat holds 2 payload octets when tagged, 6 when untagged.
            self.need_in_q.d.next = self.plen.q.val() > 2;
            if !self.is_tagged.val() {
                self.need_in_q.d.next = self.plen.q.val() > 6;
            }
            self.left_last.d.next = self.plen.q.val() <= 8;
            if self.opcode.val() == self.op_atomic_response.val() {
                // The original value, from the header: no input beat.
                self.left.d.next = 8.into();
                self.need_in_q.d.next = false;
                self.left_last.d.next = true;
            }
            self.carry.d.next = self.hdr.q.val().get_bits::<64>(64);
            if !self.is_tagged.val() {
                self.carry.d.next = self.hdr.q.val().get_bits::<64>(128);
            }
        }
        self.need_in.next = self.need_in_q.q.val();
        self.out_n.next = 8.into();
        if self.left.q.val() < 8 {
            self.out_n.next = self.left.q.val();
        }
        self.m_wr_tvalid.next =
            (self.state.q.val() == RxState::PlaceData) & (!self.need_in.val() | self.s_axis_tvalid.val());
        self.m_wr_tdata.next = (self.carry.q.val() >> 48) | (self.s_axis_tdata.val() << 16);
        if !self.is_tagged.val() {
            self.m_wr_tdata.next = (self.carry.q.val() >> 16) | (self.s_axis_tdata.val() << 48);
        }
        if self.opcode.val() == self.op_atomic_response.val() {
            // The original value, big-endian on the wire, little-endian in memory (ATOM-11).
            self.m_wr_tdata.next = self.b_value.q.val();
        }
        self.m_wr_tkeep.next = 0xFF.into();
        if self.left.q.val() < 8 {
            self.m_wr_tkeep.next = 0x7f.into();
        }
        if self.left.q.val() < 7 {
            self.m_wr_tkeep.next = 0x3f.into();
        }
        if self.left.q.val() < 6 {
            self.m_wr_tkeep.next = 0x1f.into();
        }
        if self.left.q.val() < 5 {
            self.m_wr_tkeep.next = 0xf.into();
        }
        if self.left.q.val() < 4 {
            self.m_wr_tkeep.next = 0x7.into();
        }
        if self.left.q.val() < 3 {
            self.m_wr_tkeep.next = 0x3.into();
        }
        if self.left.q.val() < 2 {
            self.m_wr_tkeep.next = 0x1.into();
        }
        if self.left.q.val() < 1 {
            self.m_wr_tkeep.next = 0x0.into();
        }
        self.m_wr_tlast.next = self.left_last.q.val();
        if (self.state.q.val() == RxState::PlaceData) & self.need_in.val() {
            self.s_axis_tready.next = self.m_wr_tready.val();
        }
        // (A beat that takes no input is past the ULPDU's last, whose `tlast` set `ended`: the
        // payload ends where the ULPDU does, its length being the descriptor's less the
        // header's. So `tlast` needs no `need_in` beside it.)
        self.ended_now.next = self.ended.q.val() | self.s_axis_tlast.val();
        if (self.state.q.val() == RxState::PlaceData)
            & self.m_wr_tready.val()
            & (!self.need_in.val() | self.s_axis_tvalid.val())
        {
            self.left.d.next = self.left.q.val() - self.out_n.val();
            // What is left after this beat: nothing after the last, else 8 octets less.
            self.need_in_q.d.next = false;
            self.left_last.d.next = true;
            if !self.left_last.q.val() {
                self.need_in_q.d.next = self.left.q.val() > 10;
                if !self.is_tagged.val() {
                    self.need_in_q.d.next = self.left.q.val() > 14;
                }
                self.left_last.d.next = self.left.q.val() <= 16;
            }
            if self.need_in.val() {
                self.carry.d.next = self.s_axis_tdata.val();
                self.ended.d.next = self.s_axis_tlast.val();
            }
            if self.left_last.q.val() {
                self.from_place_data.next = RxState::Placed;
                // A Write records nothing in Placed and has no rest to drain: with its last
                // beat in, it is done, unless a failure waits to be reported (Drain).
                if self.write_header.q.val() & self.ended_now.val() & !self.fail_valid.q.val() {
                    self.from_place_data.next = RxState::Idle;
                }
            }
        }
        if self.m_wr_req_valid.val() & self.m_wr_req_ready.val() {
            self.placed_since.d.next = true;
        }

        // Placed: after placement, record progress; a message that ends completes.
        // The receive's CQE; the SE variants (opcodes 5, 6) set SOLICITED, the Invalidate
        // ones INVALIDATED with the STag.
        self.cqe_flags.next = 0.into();
        if self.opcode.val() >= self.op_send_se.val() {
            self.cqe_flags.next = self.solicited_bit.val();
        }
        if self.has_inv.val() {
            self.cqe_flags.next = self.cqe_flags.val()
                | (bit_cast::<256, 32>(self.b_stag.q.val()) << self.at_cqe_inv_stag.val())
                | self.invalidated_bit.val();
        }
        self.placed_next.next = self.r_placed.q.val() + bit_cast::<32, 16>(self.plen.q.val());
        self.recv_cqe.next = (bit_cast::<256, 64>(self.r_wr_id.q.val()) << self.at_cqe_wr_id.val())
            | (bit_cast::<256, 32>(self.placed_next.val()) << self.at_cqe_byte_len.val())
            | (bit_cast::<256, QB>(self.qpn.q.val()) << self.at_cqe_qpn.val())
            | (bit_cast::<256, 8>(self.cqe_recv.val()) << self.at_cqe_opcode.val())
            | (bit_cast::<256, 8>(self.st_success.val()) << self.at_cqe_status.val())
            | self.cqe_flags.val();
        if self.state.q.val() == RxState::Placed {
            self.from_placed.next = RxState::Drain;
            if self.is_send.val() {
                self.recv.write_enable.next = true;
                self.recv.write_data.next = bit_cast::<233, 1>(true.into())
                    | (bit_cast::<233, 32>(self.placed_next.val()) << 1)
                    | (bit_cast::<233, 64>(self.r_wr_id.q.val()) << 33)
                    | (bit_cast::<233, 64>(self.r_addr.q.val()) << 97)
                    | (bit_cast::<233, 32>(self.r_len.q.val()) << 161)
                    | (bit_cast::<233, 32>(self.r_lkey.q.val()) << 193);
                self.cqn.d.next = self.ctx.read_data.val().get_bits::<CB>(self.at_recv_cq.val().index());
                self.cqe.d.next = self.recv_cqe.val();
                if self.last.val() {
                    self.recv.write_data.next = 0.into();
                    self.recv_msn.write_enable.next = true;
                    self.from_placed.next = RxState::Complete;
                }
            }
            if self.atomic_response_header.q.val() {
                self.resp_recv_msn.write_enable.next = true;
                self.pop.next = true;
                self.from_placed.next = RxState::Complete;
            }
            if self.read_response_header.q.val() {
                self.read_placed.write_enable.next = true;
                self.read_placed.write_data.next = self.placed_next.val();
                if self.last.val() {
                    self.read_placed.write_data.next = 0.into();
                    self.pop.next = true;
                    self.from_placed.next = RxState::Complete;
                }
            }
        }
        // A Read is done once its last response segment is placed and acknowledged; the
        // requester then writes its completion, in WQE order with the QP's others.
        // It waits for the acknowledgements of every placement write then outstanding
        // (its own last ones among them), counted down as they come, not for the writes
        // of the ULPDUs after it: the receiver goes on at once.
        // Writes requested and acknowledged, counted for the completions that wait.
        if self.m_wr_req_valid.val() & self.m_wr_req_ready.val() {
            self.writes_issued.d.next = self.writes_issued.q.val() + 1;
        }
        if self.s_wr_done_valid.val() {
            self.writes_acked.d.next = self.writes_acked.q.val() + 1;
        }
        self.writes_settled.next = self.writes_issued.q.val() == self.writes_acked.q.val();
        self.wait_count.next = self.wait_tail.q.val() - self.wait_head.q.val();
        // (Entries are picked by parallel selects, not by chains of overriding ifs: the
        // live bits as one word, shifted; the QPs and write counts by a case.)
        self.wait_lives.next = bit_cast::<WAITS, 1>(self.wait_live[0].q.val().into())
            | (bit_cast::<WAITS, 1>(self.wait_live[1].q.val().into()) << 1_u64)
            | (bit_cast::<WAITS, 1>(self.wait_live[2].q.val().into()) << 2_u64)
            | (bit_cast::<WAITS, 1>(self.wait_live[3].q.val().into()) << 3_u64)
            | (bit_cast::<WAITS, 1>(self.wait_live[4].q.val().into()) << 4_u64)
            | (bit_cast::<WAITS, 1>(self.wait_live[5].q.val().into()) << 5_u64)
            | (bit_cast::<WAITS, 1>(self.wait_live[6].q.val().into()) << 6_u64)
            | (bit_cast::<WAITS, 1>(self.wait_live[7].q.val().into()) << 7_u64)
            | (bit_cast::<WAITS, 1>(self.wait_live[8].q.val().into()) << 8_u64)
            | (bit_cast::<WAITS, 1>(self.wait_live[9].q.val().into()) << 9_u64)
            | (bit_cast::<WAITS, 1>(self.wait_live[10].q.val().into()) << 10_u64)
            | (bit_cast::<WAITS, 1>(self.wait_live[11].q.val().into()) << 11_u64)
            | (bit_cast::<WAITS, 1>(self.wait_live[12].q.val().into()) << 12_u64)
            | (bit_cast::<WAITS, 1>(self.wait_live[13].q.val().into()) << 13_u64)
            | (bit_cast::<WAITS, 1>(self.wait_live[14].q.val().into()) << 14_u64)
            | (bit_cast::<WAITS, 1>(self.wait_live[15].q.val().into()) << 15_u64);
        self.wait_lives_at_head.next = self.wait_lives.val() >> self.wait_head.q.val().get_bits::<WAIT_BITS>(0);
        self.wait_head_live.next = self.wait_lives_at_head.val().get_bit(0);
        self.wait_head_slot.next = bit_cast::<16, QB>(self.wait_head_qpn.q.val()) << 4;
        self.wait_acks_past.next = self.writes_acked.q.val() - self.wait_head_writes.q.val();
        self.wait_done.next = self.reads_done.q.val().get_bits::<DONE_BITS>(self.wait_head_slot.val().index());
        self.done_up.next = self.wait_done.val() + 1;
        // The oldest counts once its writes are acknowledged; one cut by its QP's RESET
        // leaves without counting.
        self.done_inc.next = self.done_ready.q.val() & self.wait_head_live.val();
        self.wait_pop.next = (self.wait_count.val() != 0) & (self.done_inc.val() | !self.wait_head_live.val());
        self.done_ready.d.next = (self.wait_count.val() != 0)
            & self.wait_head_live.val()
            & !self.wait_acks_past.val().get_bit(self.at_acks_short.val().index())
            & !self.done_inc.val();
        self.done_value.d.next = self.done_up.val();
        if self.wait_pop.val() {
            self.wait_head.d.next = self.wait_head.q.val() + 1;
        }
        self.done_push.next = (self.state.q.val() == RxState::Complete)
            & ((self.opcode.val() == self.op_read_response.val())
                | (self.opcode.val() == self.op_atomic_response.val()))
            & (self.wait_count.val() != self.waits_all.val());
        if self.done_push.val() {
            self.wait_tail.d.next = self.wait_tail.q.val() + 1;
        }
        self.wait_after.next = self.wait_head.q.val() + 1;
        self.wait_same_qpn.next = self.wait_qpn[0].q.val();
        self.wait_same_writes.next = self.wait_writes[0].q.val();
        self.wait_after_qpn.next = self.wait_qpn[0].q.val();
        self.wait_after_writes.next = self.wait_writes[0].q.val();
        match self.wait_head.q.val().get_bits::<WAIT_BITS>(0).index() {
            0 => {
                self.wait_same_qpn.next = self.wait_qpn[0].q.val();
                self.wait_same_writes.next = self.wait_writes[0].q.val();
            }
            1 => {
                self.wait_same_qpn.next = self.wait_qpn[1].q.val();
                self.wait_same_writes.next = self.wait_writes[1].q.val();
            }
            2 => {
                self.wait_same_qpn.next = self.wait_qpn[2].q.val();
                self.wait_same_writes.next = self.wait_writes[2].q.val();
            }
            3 => {
                self.wait_same_qpn.next = self.wait_qpn[3].q.val();
                self.wait_same_writes.next = self.wait_writes[3].q.val();
            }
            4 => {
                self.wait_same_qpn.next = self.wait_qpn[4].q.val();
                self.wait_same_writes.next = self.wait_writes[4].q.val();
            }
            5 => {
                self.wait_same_qpn.next = self.wait_qpn[5].q.val();
                self.wait_same_writes.next = self.wait_writes[5].q.val();
            }
            6 => {
                self.wait_same_qpn.next = self.wait_qpn[6].q.val();
                self.wait_same_writes.next = self.wait_writes[6].q.val();
            }
            7 => {
                self.wait_same_qpn.next = self.wait_qpn[7].q.val();
                self.wait_same_writes.next = self.wait_writes[7].q.val();
            }
            8 => {
                self.wait_same_qpn.next = self.wait_qpn[8].q.val();
                self.wait_same_writes.next = self.wait_writes[8].q.val();
            }
            9 => {
                self.wait_same_qpn.next = self.wait_qpn[9].q.val();
                self.wait_same_writes.next = self.wait_writes[9].q.val();
            }
            10 => {
                self.wait_same_qpn.next = self.wait_qpn[10].q.val();
                self.wait_same_writes.next = self.wait_writes[10].q.val();
            }
            11 => {
                self.wait_same_qpn.next = self.wait_qpn[11].q.val();
                self.wait_same_writes.next = self.wait_writes[11].q.val();
            }
            12 => {
                self.wait_same_qpn.next = self.wait_qpn[12].q.val();
                self.wait_same_writes.next = self.wait_writes[12].q.val();
            }
            13 => {
                self.wait_same_qpn.next = self.wait_qpn[13].q.val();
                self.wait_same_writes.next = self.wait_writes[13].q.val();
            }
            14 => {
                self.wait_same_qpn.next = self.wait_qpn[14].q.val();
                self.wait_same_writes.next = self.wait_writes[14].q.val();
            }
            15 => {
                self.wait_same_qpn.next = self.wait_qpn[15].q.val();
                self.wait_same_writes.next = self.wait_writes[15].q.val();
            }
            _ => {}
        }
        match self.wait_after.val().get_bits::<WAIT_BITS>(0).index() {
            0 => {
                self.wait_after_qpn.next = self.wait_qpn[0].q.val();
                self.wait_after_writes.next = self.wait_writes[0].q.val();
            }
            1 => {
                self.wait_after_qpn.next = self.wait_qpn[1].q.val();
                self.wait_after_writes.next = self.wait_writes[1].q.val();
            }
            2 => {
                self.wait_after_qpn.next = self.wait_qpn[2].q.val();
                self.wait_after_writes.next = self.wait_writes[2].q.val();
            }
            3 => {
                self.wait_after_qpn.next = self.wait_qpn[3].q.val();
                self.wait_after_writes.next = self.wait_writes[3].q.val();
            }
            4 => {
                self.wait_after_qpn.next = self.wait_qpn[4].q.val();
                self.wait_after_writes.next = self.wait_writes[4].q.val();
            }
            5 => {
                self.wait_after_qpn.next = self.wait_qpn[5].q.val();
                self.wait_after_writes.next = self.wait_writes[5].q.val();
            }
            6 => {
                self.wait_after_qpn.next = self.wait_qpn[6].q.val();
                self.wait_after_writes.next = self.wait_writes[6].q.val();
            }
            7 => {
                self.wait_after_qpn.next = self.wait_qpn[7].q.val();
                self.wait_after_writes.next = self.wait_writes[7].q.val();
            }
            8 => {
                self.wait_after_qpn.next = self.wait_qpn[8].q.val();
                self.wait_after_writes.next = self.wait_writes[8].q.val();
            }
            9 => {
                self.wait_after_qpn.next = self.wait_qpn[9].q.val();
                self.wait_after_writes.next = self.wait_writes[9].q.val();
            }
            10 => {
                self.wait_after_qpn.next = self.wait_qpn[10].q.val();
                self.wait_after_writes.next = self.wait_writes[10].q.val();
            }
            11 => {
                self.wait_after_qpn.next = self.wait_qpn[11].q.val();
                self.wait_after_writes.next = self.wait_writes[11].q.val();
            }
            12 => {
                self.wait_after_qpn.next = self.wait_qpn[12].q.val();
                self.wait_after_writes.next = self.wait_writes[12].q.val();
            }
            13 => {
                self.wait_after_qpn.next = self.wait_qpn[13].q.val();
                self.wait_after_writes.next = self.wait_writes[13].q.val();
            }
            14 => {
                self.wait_after_qpn.next = self.wait_qpn[14].q.val();
                self.wait_after_writes.next = self.wait_writes[14].q.val();
            }
            15 => {
                self.wait_after_qpn.next = self.wait_qpn[15].q.val();
                self.wait_after_writes.next = self.wait_writes[15].q.val();
            }
            _ => {}
        }
        if self.done_push.val() & (self.wait_tail.q.val() == self.wait_head.q.val()) {
            self.wait_same_qpn.next = self.qpn.q.val();
            self.wait_same_writes.next = self.writes_issued.q.val();
        }
        if self.done_push.val() & (self.wait_tail.q.val() == self.wait_after.val()) {
            self.wait_after_qpn.next = self.qpn.q.val();
            self.wait_after_writes.next = self.writes_issued.q.val();
        }
        self.wait_head_qpn.d.next = self.wait_same_qpn.val();
        self.wait_head_writes.d.next = self.wait_same_writes.val();
        if self.wait_pop.val() {
            self.wait_head_qpn.d.next = self.wait_after_qpn.val();
            self.wait_head_writes.d.next = self.wait_after_writes.val();
        }
        for i in 0..WAITS {
            self.wait_qpn[i].clock.next = self.clock.val();
            self.wait_writes[i].clock.next = self.clock.val();
            self.wait_live[i].clock.next = self.clock.val();
            self.wait_qpn[i].d.next = self.wait_qpn[i].q.val();
            self.wait_writes[i].d.next = self.wait_writes[i].q.val();
            self.wait_live[i].d.next = self.wait_live[i].q.val();
            if self.wait_pop.val() & (self.wait_head.q.val().get_bits::<WAIT_BITS>(0).index() == i) {
                self.wait_live[i].d.next = false;
            }
            // A QP written in RESET cuts its waiting completions (one handed over now too).
            if self.qp_we.val() & self.qp_reset.val() & (self.wait_qpn[i].q.val() == self.qp_waddr.val()) {
                self.wait_live[i].d.next = false;
            }
            if self.done_push.val() & (self.wait_tail.q.val().get_bits::<WAIT_BITS>(0).index() == i) {
                self.wait_qpn[i].d.next = self.qpn.q.val();
                self.wait_writes[i].d.next = self.writes_issued.q.val();
                self.wait_live[i].d.next =
                    !(self.qp_we.val() & self.qp_reset.val() & (self.qpn.q.val() == self.qp_waddr.val()));
            }
            if self.reset.val() {
                self.wait_live[i].d.next = false;
            }
        }
        self.order_done.next = self.reads_done.q.val().get_bits::<DONE_BITS>(self.order_slot.val().index());
        // The read table's updates, each by its own writer: a Read pushed (pushed + 1), a
        // Read popped (popped + 1) or completed (done + 1), a QP written (its limit from
        // ORD; in RESET also its pushed, popped and done to 0, which wins). Only when
        // something happens: an idle simulation skips the wide shifts.
        // (Each sum is its own `COUNT_BITS`-bit signal, so that it wraps.)
        self.pushed_up.next = self.push_pushed.val() + 1;
        self.popped_up.next = self.rd_popped.val() + 1;
        self.reads_clear.next = 0.into();
        if self.qp_we.val() & self.qp_reset.val() {
            self.reads_clear.next = self.done_ones.val() << self.waddr_slot.val();
        }
        self.pushed_next.next = self.reads_pushed.q.val();
        if self.s_read_valid.val() {
            self.pushed_next.next = (self.reads_pushed.q.val() & !(self.count_ones.val() << self.push_slot16.val()))
                | (bit_cast::<QL, COUNT_BITS>(self.pushed_up.val()) << self.push_slot16.val());
        }
        self.popped_next.next = self.reads_popped.q.val();
        if self.pop.val() {
            self.popped_next.next = (self.reads_popped.q.val() & !(self.count_ones.val() << self.rd_slot.val()))
                | (bit_cast::<QL, COUNT_BITS>(self.popped_up.val()) << self.rd_slot.val());
        }
        self.done_next.next = self.reads_done.q.val();
        if self.done_inc.val() {
            self.done_next.next = (self.reads_done.q.val() & !(self.done_ones.val() << self.wait_head_slot.val()))
                | (bit_cast::<QL, DONE_BITS>(self.done_value.q.val()) << self.wait_head_slot.val());
        }
        self.limit_next.next = self.reads_limit.q.val();
        if self.qp_we.val() {
            self.limit_next.next = (self.reads_limit.q.val() & !(self.count_ones.val() << self.waddr_slot.val()))
                | (bit_cast::<QL, COUNT_BITS>(self.limit.val()) << self.waddr_slot.val());
        }
        self.reads_pushed.d.next = self.pushed_next.val() & !self.reads_clear.val();
        self.pushed_lag1.d.next = self.reads_pushed.q.val() & !self.reads_clear.val();
        self.pushed_lag2.d.next = self.pushed_lag1.q.val() & !self.reads_clear.val();
        self.reads_popped.d.next = self.popped_next.val() & !self.reads_clear.val();
        self.reads_done.d.next = self.done_next.val() & !self.reads_clear.val();
        self.reads_limit.d.next = self.limit_next.val();
        if self.pop.val() & !(self.s_read_valid.val() & (self.s_read_qpn.val() == self.qpn.q.val())) {
            self.full.d.next = self.full_pushed.val() & !(self.one_q.val() << bit_cast::<Q, QB>(self.qpn.q.val()));
        }

        // Complete: a Read's or an atomic's completion is handed to the wait above; a
        // receive's once the placement writes are acknowledged (the invalidation goes
        // with it).
        self.invalidate.d.next = false;
        if self.done_push.val() {
            self.from_complete.next = RxState::Drain;
        }
        if (self.state.q.val() == RxState::Complete)
            & (self.opcode.val() != self.op_read_response.val())
            & (self.opcode.val() != self.op_atomic_response.val())
            & !self.cqe_valid.q.val()
            & self.writes_settled.val()
        {
            self.cqe_valid.d.next = true;
            self.invalidate.d.next = self.is_send.val() & self.has_inv.val();
        }
        if self.cqe_valid.q.val() & self.m_cqe_ready.val() {
            self.cqe_valid.d.next = false;
            self.from_complete.next = RxState::Drain;
            self.from_flush_cqe.next = RxState::Drain;
        }
        self.m_cqe_valid.next = self.cqe_valid.q.val();
        self.m_cqe.next = self.cqe.q.val();
        self.m_cqn.next = self.cqn.q.val();
        self.m_invalidate.next = self.invalidate.q.val();
        self.m_invalidate_mr.next = self.b_stag.q.val().get_bits::<MB>(8);

        // ImmComplete: Immediate Data completes its receive with the 8 octets in the CQE
        // (IMM-04: SOLICITED for opcode 0x9), once earlier placements are acknowledged (a
        // Write before it is in memory when the CQE says so: IMM-05).
        self.imm_cqe.next = (bit_cast::<256, 64>(self.r_wr_id.q.val()) << self.at_cqe_wr_id.val())
            | (bit_cast::<256, 16>(self.plen.q.val()) << self.at_cqe_byte_len.val())
            | (bit_cast::<256, QB>(self.qpn.q.val()) << self.at_cqe_qpn.val())
            | (bit_cast::<256, 8>(self.cqe_recv_imm.val()) << self.at_cqe_opcode.val())
            | (bit_cast::<256, 8>(self.st_success.val()) << self.at_cqe_status.val())
            | (bit_cast::<256, 64>(self.hdr.q.val().get_bits::<64>(144)) << self.at_cqe_imm.val())
            | self.imm_valid_bit.val();
        if self.state.q.val() == RxState::ImmComplete {
            self.cqn.d.next = self.ctx.read_data.val().get_bits::<CB>(self.at_recv_cq.val().index());
            self.cqe.d.next = self.imm_cqe.val();
            if self.opcode.val() == self.op_imm_se.val() {
                self.cqe.d.next = self.imm_cqe.val() | self.solicited_bit.val();
            }
            self.recv_msn.write_enable.next = true;
            self.from_imm_complete.next = RxState::Complete;
            // A piece of a split message: refused (0/2/0xFF), its receive claimed and
            // flushed.
            if self.imm_piece.val() {
                self.recv_msn.write_enable.next = false;
                self.code_imm_complete.next = self.t_unspecified.val();
                self.from_imm_complete.next = RxState::Fault;
            }
        }

        // AtomicWait: a checked Atomic Request goes to the atomic unit once every placement
        // before it is acknowledged (RFC 7306 §7: a Write before an Atomic is seen by it)
        // and every receive completed before it is written (§7: its response is not
        // generated until an earlier Send or Immediate Data has completed), and once its
        // header is all in; its response joins the job queue in the same cycle (there must
        // be room), to leave when the unit returns the value. The ULPDU has ended, and no
        // failure waits (one is reported before the next ULPDU is looked at): nothing is left
        // for Drain.
        self.atom_go.next =
            self.writes_settled.val() & self.s_cqes_written.val() & self.ended.q.val() & self.jobs.s_ready.val();
        self.m_atom_valid.next = (self.state.q.val() == RxState::AtomicWait) & self.atom_go.val();
        self.m_atom_addr.next = self.job_addr.q.val();
        self.m_atom_aopcode.next = self.aop.val();
        self.m_atom_data.next = self.b_a_data.q.val();
        self.m_atom_mask.next = self.b_a_mask.q.val();
        self.m_atom_compare.next = self.b_a_compare.q.val();
        self.m_atom_compare_mask.next = self.b_a_compare_mask.q.val();
        self.m_atom_fresh.next = self.placed_since.q.val();
        self.m_atom_after.next = self.plain_pushed.q.val();
        if self.m_atom_valid.val() & self.m_atom_ready.val() {
            self.placed_since.d.next = false;
            self.job_atomic.d.next = false;
            self.resp_sent_msn.write_enable.next = true;
            self.from_atomic_wait.next = RxState::Idle;
        }

        // Fault: the QP goes to ERROR and a Terminate is sent.
        self.hdr_bytes.next = self.hdr.q.val().get_bits::<144>(0);
        if self.is_tagged.val() {
            self.hdr_bytes.next = bit_cast::<144, 112>(self.hdr.q.val().get_bits::<112>(0));
        }
        self.term_body.next = bit_cast::<416, 8>(self.fault_now.val().get_bits::<8>(8))
            | (bit_cast::<416, 8>(self.fault_now.val().get_bits::<8>(0)) << 8)
            | self.flags_md.val()
            | (bit_cast::<416, 8>(self.ulen.q.val().get_bits::<8>(8)) << 32)
            | (bit_cast::<416, 8>(self.ulen.q.val().get_bits::<8>(0)) << 40)
            | (bit_cast::<416, 144>(self.hdr_bytes.val()) << 48);
        if self.fault_rdma.q.val() {
            // A refused Read Request's Terminate also carries its 28-octet RDMA header
            // (RFC 5040 §4.8, R = 1; CHECKLIST RDMAP-08, V11).
            self.term_body.next = self.term_body.val()
                | self.flag_r.val()
                | (bit_cast::<416, 224>(self.hdr.q.val().get_bits::<224>(144)) << 192);
        }
        if !self.fault_hdr.q.val() {
            self.term_body.next = bit_cast::<416, 8>(self.fault_now.val().get_bits::<8>(8))
                | (bit_cast::<416, 8>(self.fault_now.val().get_bits::<8>(0)) << 8);
        }
        self.term_len.next = self.hlen.val() + 6;
        if self.fault_rdma.q.val() {
            self.term_len.next = self.hlen.val() + 34;
        }
        // The receive a failing Send or Immediate Data claimed stays claimed, with the
        // status its flush completes it with (`responder.rs`; 0: FLUSHED).
        self.fault_status.next = 0.into();
        if self.fault_now.val() == self.t_too_long.val() {
            self.fault_status.next = self.st_local_length.val();
        }
        if self.fault_now.val() == self.t_ddp_local.val() {
            self.fault_status.next = self.st_local_protection.val();
        }
        if (self.fault_now.val() == self.t_rdma_stag.val()) | (self.fault_now.val() == self.t_cannot_invalidate.val()) {
            self.fault_status.next = self.st_remote_access.val();
        }
        // (A message that does not continue the one in progress: its MSN or MO.)
        if (self.fault_now.val() == self.t_invalid_mo.val()) | (self.fault_now.val() == self.t_msn_range.val()) {
            self.fault_status.next = self.st_remote_operation.val();
        }
        if (self.state.q.val() == RxState::Fault) & self.r_active.q.val() & (self.is_send.val() | self.is_imm.val()) {
            self.recv.write_enable.next = true;
            self.recv.write_data.next = bit_cast::<233, 1>(true.into())
                | (bit_cast::<233, 32>(self.r_placed.q.val()) << 1)
                | (bit_cast::<233, 64>(self.r_wr_id.q.val()) << 33)
                | (bit_cast::<233, 64>(self.r_addr.q.val()) << 97)
                | (bit_cast::<233, 32>(self.r_len.q.val()) << 161)
                | (bit_cast::<233, 32>(self.r_lkey.q.val()) << 193)
                | (bit_cast::<233, 8>(self.fault_status.val()) << 225);
        }
        // The failure's QP, code and origin follow the ULPDU while no failure waits, so
        // they load without the checks that decide one. (Only Classify, for a received
        // Terminate, and Fault set one; the engine then stays in JobOut and Drain until it
        // is reported.)
        if !self.fail_valid.q.val() {
            self.fail_qp.d.next = self.qpn.q.val();
            self.fail_term.d.next = (bit_cast::<16, 8>(self.hdr.q.val().get_bits::<8>(144)) << 8)
                | bit_cast::<16, 8>(self.hdr.q.val().get_bits::<8>(152));
            self.fail_received.d.next = true;
            if self.state.q.val() == RxState::Fault {
                self.fail_term.d.next = self.fault_now.val();
                self.fail_received.d.next = false;
            }
        }
        if self.state.q.val() == RxState::Fault {
            self.fail_valid.d.next = true;
            self.job_valid.d.next = true;
            self.job_terminate.d.next = true;
            self.job_inline.d.next = self.term_body.val();
            self.job_inline_len.d.next = 4.into();
            if self.fault_hdr.q.val() {
                self.job_inline_len.d.next = self.term_len.val().get_bits::<6>(0);
            }
        }
        self.m_fail_qp.next = self.fail_qp.q.val();
        self.m_fail_term.next = self.fail_term.q.val();
        self.m_fail_received.next = self.fail_received.q.val();

        // The requester's failures wait their turn for a Terminate of their own.
        self.tx_fails.s_valid.next = self.s_tx_fail.val();
        self.tx_fails.s_data.next = self.s_tx_fail_qp.val();
        self.tx_fails.m_ready.next = false;
        if (self.state.q.val() == RxState::Idle) & self.tx_fails.m_valid.val() {
            self.tx_fails.m_ready.next = true;
            self.qpn.d.next = self.tx_fails.m_data.val();
            self.code_idle.next = self.t_local.val();
            self.fault_hdr.d.next = false;
            self.fault_rdma.d.next = false;
            self.from_idle.next = RxState::LocalFault;
        }
        if self.state.q.val() == RxState::MpaFault {
            self.from_mpa_fault.next = RxState::Drain;
            if self.rts.val() {
                self.from_mpa_fault.next = RxState::Fault;
            }
        }
        if self.state.q.val() == RxState::LocalTerminate {
            self.job_valid.d.next = true;
            self.job_terminate.d.next = true;
            self.job_inline.d.next = self.term_body.val();
            self.job_inline_len.d.next = 4.into();
            self.ended.d.next = true;
        }

        // JobOut: a Read Response or a Terminate joins the segmenter's queue. A Read
        // Response waits until every placement before it is acknowledged (RDMAP-18, §5.5
        // rules 12 and 17: a Read sees the Writes before it; the bus orders no read after a
        // write). An Atomic Response is pushed by AtomicWait (`job_atomic` chooses its form).
        self.job_go.next = self.job_terminate.q.val() | self.writes_settled.val();
        self.job_entry.next = bit_cast::<465, 1>(self.job_terminate.q.val().into())
            | (bit_cast::<465, 32>(self.b_sink_stag.q.val()) << 1)
            | (bit_cast::<465, 64>(self.b_sink_to.q.val()) << 33)
            | (bit_cast::<465, 64>(self.job_addr.q.val()) << 97)
            | (bit_cast::<465, 32>(self.b_size.q.val()) << 161)
            | (bit_cast::<465, 32>(self.b_msn.q.val()) << 193)
            | (bit_cast::<465, 16>(self.ctx.read_data.val().get_bits::<16>(self.at_mulpdu.val().index())) << 423)
            | (bit_cast::<465, 16>(self.ctx.read_data.val().get_bits::<16>(self.at_conn.val().index())) << 439)
            | (bit_cast::<465, QB>(self.qpn.q.val()) << 455)
            | (bit_cast::<465, 1>(self.ctx.read_data.val().get_bit(self.at_crc.val().index()).into()) << 463);
        if self.job_atomic.q.val() {
            self.job_entry.next = (bit_cast::<465, 32>(self.hdr.q.val().get_bits::<32>(176)) << 1)
                | (bit_cast::<465, 32>(self.resp_msn_next.val()) << 97)
                | (bit_cast::<465, 32>(self.b_msn.q.val()) << 193)
                | (bit_cast::<465, 16>(self.ctx.read_data.val().get_bits::<16>(self.at_mulpdu.val().index())) << 423)
                | (bit_cast::<465, 16>(self.ctx.read_data.val().get_bits::<16>(self.at_conn.val().index())) << 439)
                | (bit_cast::<465, QB>(self.qpn.q.val()) << 455)
                | (bit_cast::<465, 1>(self.ctx.read_data.val().get_bit(self.at_crc.val().index()).into()) << 463)
                | (bit_cast::<465, 1>(true.into()) << 464);
        }
        if self.job_terminate.q.val() {
            self.job_entry.next = bit_cast::<465, 1>(true.into())
                | (bit_cast::<465, 416>(self.job_inline.q.val()) << 1)
                | (bit_cast::<465, 6>(self.job_inline_len.q.val()) << 417)
                | (bit_cast::<465, 16>(self.ctx.read_data.val().get_bits::<16>(self.at_mulpdu.val().index())) << 423)
                | (bit_cast::<465, 16>(self.ctx.read_data.val().get_bits::<16>(self.at_conn.val().index())) << 439)
                | (bit_cast::<465, QB>(self.qpn.q.val()) << 455)
                | (bit_cast::<465, 1>(self.ctx.read_data.val().get_bit(self.at_crc.val().index()).into()) << 463);
        }
        self.jobs.s_valid.next =
            (self.job_valid.q.val() & self.job_go.val()) | (self.m_atom_valid.val() & self.m_atom_ready.val());
        self.jobs.s_data.next = self.job_entry.val();
        if (self.state.q.val() == RxState::JobOut) & self.jobs.s_ready.val() & self.job_go.val() {
            self.job_valid.d.next = false;
            self.plain_pushed.d.next = self.plain_pushed.q.val() + 1;
            // (Drain would find nothing to drop and no failure to report.)
            self.from_job_out.next = RxState::Drain;
            if self.ended.q.val() & !self.fail_valid.q.val() {
                self.from_job_out.next = RxState::Idle;
            }
        }
        // An Atomic Response leaves with the atomic unit's value, which it waits for.
        self.job_out.next = self.jobs_out.m_data.val();
        self.job_is_atomic.next = self.job_out.val().get_bit(464);
        self.s_res_ready.next = self.jobs_out.m_valid.val()
            & self.job_is_atomic.val()
            & self.m_job_ready.val()
            & self.sending.s_ready.val();
        self.m_job_valid.next = self.jobs_out.m_valid.val()
            & self.sending.s_ready.val()
            & (!self.job_is_atomic.val() | self.s_res_valid.val());
        self.jobs_out.m_ready.next =
            self.m_job_ready.val() & self.sending.s_ready.val() & (!self.job_is_atomic.val() | self.s_res_valid.val());
        // A job the segmenter takes is remembered until it is done; a finished Read or
        // Atomic Response frees its IRD slot. (A QP written in RESET goes first: the pop
        // waits.)
        self.sending.s_valid.next = self.m_job_valid.val() & self.m_job_ready.val();
        self.sending.s_data.next = bit_cast::<42, 1>(self.job_out.val().get_bit(0).into())
            | (bit_cast::<42, 32>(self.job_out.val().get_bits::<32>(193)) << 1)
            | (bit_cast::<42, 8>(self.job_out.val().get_bits::<8>(455)) << 33)
            | (bit_cast::<42, 1>(self.job_is_atomic.val().into()) << 41);
        self.sending.m_ready.next = self.dones.q.val().any() & !(self.qp_we.val() & self.qp_reset.val());
        self.dones.d.next = self.dones.q.val() + bit_cast::<4, 1>(self.s_job_done.val().into())
            - bit_cast::<4, 1>((self.sending.m_ready.val() & self.sending.m_valid.val()).into());
        if self.sending.m_ready.val() & self.sending.m_valid.val() & !self.sending.m_data.val().get_bit(41) {
            self.plain_count.d.next = self.plain_count.q.val() + 1;
        }
        self.plain_done.next = self.plain_count.q.val();
        self.rr_sent.write_enable.next =
            self.sending.m_ready.val() & self.sending.m_valid.val() & !self.sending.m_data.val().get_bit(0);
        self.rr_sent.write_address.next = self.sending.m_data.val().get_bits::<QB>(33);
        self.rr_sent.write_data.next = self.sending.m_data.val().get_bits::<32>(1);
        self.m_job_tagged.next = true;
        self.m_job_opcode.next = 2.into();
        self.m_job_stag.next = self.job_out.val().get_bits::<32>(1);
        self.m_job_to.next = self.job_out.val().get_bits::<64>(33);
        self.m_job_qn.next = 0.into();
        self.m_job_msn.next = 0.into();
        self.m_job_addr.next = self.job_out.val().get_bits::<64>(97);
        self.m_job_len.next = self.job_out.val().get_bits::<32>(161);
        self.m_job_inline.next = 0.into();
        self.m_job_inline_len.next = 0.into();
        self.res_be.d.next = self.s_res_original.val();
        if self.job_is_atomic.val() {
            self.m_job_tagged.next = false;
            self.m_job_opcode.next = 11.into();
            self.m_job_stag.next = 0.into();
            self.m_job_to.next = 0.into();
            self.m_job_qn.next = 3.into();
            self.m_job_msn.next = self.job_out.val().get_bits::<32>(97);
            self.m_job_addr.next = 0.into();
            self.m_job_len.next = 0.into();
            self.m_job_inline.next = bit_cast::<416, 32>(self.job_out.val().get_bits::<32>(1))
                | (bit_cast::<416, 64>(self.res_be.q.val()) << 32);
            self.m_job_inline_len.next = 12.into();
        }
        if self.job_out.val().get_bit(0) {
            self.m_job_tagged.next = false;
            self.m_job_opcode.next = 7.into();
            self.m_job_stag.next = 0.into();
            self.m_job_to.next = 0.into();
            self.m_job_qn.next = 2.into();
            self.m_job_msn.next = 1.into();
            self.m_job_addr.next = 0.into();
            self.m_job_len.next = 0.into();
            self.m_job_inline.next = self.job_out.val().get_bits::<416>(1);
            self.m_job_inline_len.next = self.job_out.val().get_bits::<6>(417);
        }
        self.m_job_mulpdu.next = self.job_out.val().get_bits::<16>(423);
        self.m_job_conn.next = self.job_out.val().get_bits::<16>(439);
        self.m_job_crc.next = self.job_out.val().get_bit(463);
        self.m_job_qpn.next = self.job_out.val().get_bits::<QB>(455);

        // FlushRead to FlushCqe: the flush of a QP in ERROR (RFC 5040 §6.2: outstanding work
        // completes in error). The receive a Send had claimed completes first, with the
        // status its failure gave it, then every posted receive, FLUSHED, one per turn;
        // a claim that finds none marks the QP quiet until its next RQ doorbell or
        // context write. None of them succeeded, so none
        // counts octets (BYTE_LEN is 0 unless SUCCESS), however much a claimed one got.
        self.flush_wr_id.next = self.recv.read_data.val().get_bits::<64>(33);
        self.flush_status.next = self.recv.read_data.val().get_bits::<8>(225);
        if !self.flush_status.val().any() {
            self.flush_status.next = self.st_flushed.val();
        }
        if self.state.q.val() == RxState::FlushPosted {
            self.flush_wr_id.next = self.s_rq_wqe.val().get_bits::<64>(self.at_rq_wr_id.val().index());
            self.flush_status.next = self.st_flushed.val();
        }
        self.flush_cqe.next = (bit_cast::<256, 64>(self.flush_wr_id.val()) << self.at_cqe_wr_id.val())
            | (bit_cast::<256, QB>(self.qpn.q.val()) << self.at_cqe_qpn.val())
            | (bit_cast::<256, 8>(self.cqe_recv.val()) << self.at_cqe_opcode.val())
            | (bit_cast::<256, 8>(self.flush_status.val()) << self.at_cqe_status.val());
        if self.state.q.val() == RxState::FlushClaimed {
            self.cqn.d.next = self.ctx.read_data.val().get_bits::<CB>(self.at_recv_cq.val().index());
            self.cqe.d.next = self.flush_cqe.val();
            self.req_valid.d.next = true;
            self.from_flush_claimed.next = RxState::FlushPosted;
            if self.recv.read_data.val().get_bit(0) {
                self.recv.write_enable.next = true;
                self.recv.write_data.next = 0.into();
                self.req_valid.d.next = false;
                self.cqe_valid.d.next = true;
                self.from_flush_claimed.next = RxState::FlushCqe;
            }
        }
        self.quiet_set.next = false;
        if (self.state.q.val() == RxState::FlushPosted) & self.s_rq_valid.val() {
            self.cqe.d.next = self.flush_cqe.val();
            self.cqe_valid.d.next = true;
            self.from_flush_posted.next = RxState::FlushCqe;
            if !self.s_rq_posted.val() | self.s_rq_error.val() {
                self.cqe_valid.d.next = false;
                self.quiet_set.next = true;
                self.from_flush_posted.next = RxState::Idle;
            }
        }
        self.quiet_next.next = self.quiet.q.val();
        if self.quiet_set.val() {
            self.quiet_next.next = self.quiet.q.val() | (self.one_q.val() << bit_cast::<Q, QB>(self.qpn.q.val()));
        }
        if self.db_valid.val() & (self.db_kind.val() == self.db_rq.val()) {
            self.quiet_next.next =
                self.quiet_next.val() & !(self.one_q.val() << bit_cast::<Q, 16>(self.db_index.val()));
        }
        if self.qp_we.val() {
            self.quiet_next.next =
                self.quiet_next.val() & !(self.one_q.val() << bit_cast::<Q, QB>(self.qp_waddr.val()));
        }
        self.quiet.d.next = self.quiet_next.val();
        // Whether the pointer's next QP is in ERROR and not quiet, from its own bits as
        // they are: this cycle's set and clears are left out, so that no decode lies
        // before the select. A clear is seen when the pointer comes round again; a set, a
        // cycle late, so `quieted` holds off the flush for that cycle.
        self.quieted.d.next = self.quiet_set.val();
        self.flush_here.d.next = (self.qp_error.val() & !self.quiet.q.val() & self.scan_onehot.d.val()).any();

        // Drain: the rest of the ULPDU, if any, is dropped; a failure is reported before the
        // next ULPDU is looked at.
        if self.state.q.val() == RxState::Drain {
            self.s_axis_tready.next = !self.ended.q.val();
            if self.ended.q.val() & !self.fail_valid.q.val() {
                self.from_drain.next = RxState::Idle;
            }
            if self.s_axis_tvalid.val() & self.s_axis_tlast.val() {
                self.ended.d.next = true;
            }
        }

        // The next state: the decision of the state we are in.
        match self.state.q.val() {
            RxState::Idle => self.state.d.next = self.from_idle.val(),
            RxState::Header => self.state.d.next = self.from_header.val(),
            RxState::Classify => self.state.d.next = self.from_classify.val(),
            RxState::Claim => self.state.d.next = self.from_claim.val(),
            RxState::MrRead => self.state.d.next = RxState::MrCheck,
            RxState::MrCheck => self.state.d.next = self.from_mr_check.val(),
            RxState::RecvFit => self.state.d.next = self.from_recv_fit.val(),
            RxState::PlaceRequest => self.state.d.next = self.from_place_request.val(),
            RxState::PlaceData => self.state.d.next = self.from_place_data.val(),
            RxState::Placed => self.state.d.next = self.from_placed.val(),
            RxState::Complete => self.state.d.next = self.from_complete.val(),
            RxState::Fault => self.state.d.next = RxState::JobOut,
            RxState::JobOut => self.state.d.next = self.from_job_out.val(),
            RxState::Drain => self.state.d.next = self.from_drain.val(),
            RxState::LocalFault => self.state.d.next = RxState::LocalTerminate,
            RxState::LocalTerminate => self.state.d.next = RxState::JobOut,
            RxState::ImmComplete => self.state.d.next = self.from_imm_complete.val(),
            RxState::AtomicWait => self.state.d.next = self.from_atomic_wait.val(),
            RxState::FlushRead => self.state.d.next = RxState::FlushClaimed,
            RxState::FlushClaimed => self.state.d.next = self.from_flush_claimed.val(),
            RxState::FlushPosted => self.state.d.next = self.from_flush_posted.val(),
            RxState::FlushCqe => self.state.d.next = self.from_flush_cqe.val(),
            RxState::MpaFault => self.state.d.next = self.from_mpa_fault.val(),
        }

        match self.state.q.val() {
            RxState::Idle => self.fault_code.d.next = self.code_idle.val(),
            RxState::Classify => self.fault_code.d.next = self.code_classify.val(),
            RxState::Claim => self.fault_code.d.next = self.code_claim.val(),
            RxState::MrCheck => self.fault_code.d.next = self.code_mr_check.val(),
            RxState::RecvFit => self.fault_code.d.next = self.code_recv_fit.val(),
            RxState::ImmComplete => self.fault_code.d.next = self.code_imm_complete.val(),
            RxState::Fault => self.fault_code.d.next = self.fault_now.val(),
            _ => {}
        }

        // A QP written in RESET starts over.
        if self.qp_we.val() & self.qp_reset.val() {
            self.recv_msn.write_enable.next = true;
            self.recv_msn.write_address.next = self.qp_waddr.val();
            self.recv_msn.write_data.next = 0.into();
            self.rr_msn.write_enable.next = true;
            self.rr_msn.write_address.next = self.qp_waddr.val();
            self.rr_msn.write_data.next = 0.into();
            self.rr_sent.write_enable.next = true;
            self.rr_sent.write_address.next = self.qp_waddr.val();
            self.rr_sent.write_data.next = 0.into();
            self.resp_sent_msn.write_enable.next = true;
            self.resp_sent_msn.write_address.next = self.qp_waddr.val();
            self.resp_sent_msn.write_data.next = 0.into();
            self.resp_recv_msn.write_enable.next = true;
            self.resp_recv_msn.write_address.next = self.qp_waddr.val();
            self.resp_recv_msn.write_data.next = 0.into();
            self.recv.write_enable.next = true;
            self.recv.write_address.next = self.qp_waddr.val();
            self.recv.write_data.next = 0.into();
            self.read_placed.write_enable.next = true;
            self.read_placed.write_address.next = self.qp_waddr.val();
            self.read_placed.write_data.next = 0.into();
            self.full.d.next = self.full.q.val() & !(self.one_q.val() << bit_cast::<Q, QB>(self.qp_waddr.val()));
        }
        if self.reset.val() {
            self.state.d.next = RxState::Idle;
            self.req_valid.d.next = false;
            self.job_valid.d.next = false;
            self.cqe_valid.d.next = false;
            self.fail_valid.d.next = false;
            self.invalidate.d.next = false;
            self.writes_issued.d.next = 0.into();
            self.writes_acked.d.next = 0.into();
            self.wait_head.d.next = 0.into();
            self.wait_tail.d.next = 0.into();
            self.dones.d.next = 0.into();
            self.reads_pushed.d.next = 0.into();
            self.pushed_lag1.d.next = 0.into();
            self.pushed_lag2.d.next = 0.into();
            self.reads_popped.d.next = 0.into();
            self.reads_done.d.next = 0.into();
            self.reads_limit.d.next = 0.into();
            self.job_atomic.d.next = false;
            self.plain_pushed.d.next = 0.into();
            self.plain_count.d.next = 0.into();
            self.placed_since.d.next = false;
            self.full.d.next = 0.into();
            self.quiet.d.next = 0.into();
            self.flush_turn.d.next = false;
            self.flush_here.d.next = false;
            self.quieted.d.next = false;
            self.scan.d.next = 0.into();
            self.scan_onehot.d.next = 1.into();
        }
    }
}
