//! The responder's atomic unit (RFC 7306 §5.3): one unit for all QPs, so every atomic on
//! a word is serialised here. Validated requests come in, each read-modify-writes a 64-bit
//! word of memory through the DMA read and write engines, and the original values leave
//! in request order, each only once the memory write holding its effect is acknowledged.
//!
//! ```text
//!  s_op ─► head op ─┬─ on the held word, not fresh ───────► ALU ─► originals ─► result RAM ─► m_res
//!                   └─ otherwise: once its bucket has no    ▲         │            (512)      ▲
//!                      write-back in flight, read the word ─┘         │ batch closes          │ credit
//!                                                                     ├─► write-back ─► m_wr   │
//!                                                                     └─► batch queue ─────────┘
//!                                                                         retired by s_wr_done
//! ```
//!
//! - **Forwarding.** The unit holds one word: its address (`held_addr`) and its latest
//!   value, which is the ALU's last result (the ALU keeps it between operations). An op on
//!   that address that is not `fresh` (nobody else wrote memory since) is chained on it
//!   without touching memory, one per cycle: the contended case costs no memory round trip.
//!   The word is let go once the unit is idle (no op waiting, every batch retired): what
//!   the host writes to memory between bursts of atomics is read by the next one.
//! - **Write-back batching.** Results are counted into a *batch* as they leave the ALU. A
//!   batch is closed when the next op cannot chain (another word, `fresh`, held by its
//!   gate or by full storage), when no op is waiting (unless 8 batches are in flight
//!   already: then ops arriving with gaps keep chaining into the open batch instead of
//!   each costing a write-back, and it closes as soon as one retires), or when it reaches
//!   32 results, so a long run of chained ops still releases results while it keeps going.
//!   Closing writes the word's latest value back if any op of the batch changed it; a
//!   batch that changed nothing (failed CmpSwaps) writes nothing. Several write-backs may
//!   be in flight.
//! - **Result release.** Each closed batch is queued with its size and whether it wrote;
//!   the queue's head is retired by the next write acknowledgement (acks come in request
//!   order), or at once if it wrote nothing — but never before the batches ahead of it,
//!   whose values it saw. Retiring a batch adds its size to `credit`, the results that may
//!   leave: a response never promises a value that memory does not hold yet.
//! - **Reads.** An op that cannot chain reads its word, after the held batch is closed and
//!   every write-back that may target the same word is acknowledged. Write-backs in flight
//!   are counted per bucket (16 buckets, a hash of the address): a read waits only for its
//!   own bucket, so ops on different words do not wait for each other's write-backs. Reads
//!   go one at a time (uncontended ops run at one per memory read latency).
//! - **Order and gating.** Ops are applied one at a time from the head register, in order;
//!   the head waits for `done_count` to reach its `after` (modulo 2^16), and so does
//!   everything behind it.
//! - **Never blocking the shared streams.** Read data is always taken (one read in flight,
//!   captured by the ALU as it arrives), write acks are always counted. Ops are issued only
//!   while the result RAM and both queues have room for everything already in flight, so
//!   with `m_res_ready` low the unit stops issuing ops and nothing else.
//! - **Never blocking the receiver.** Ops wait in a queue of [`OPS`] in front of the head,
//!   room for every atomic the responder can have outstanding (64 QPs, IRD `MAX_READS`
//!   each), so the receive engine never waits for the unit. It must not: the head may wait
//!   for Read Responses to leave, which may wait for the peer to drain the link, which may
//!   wait for this receiver. (Two RNICs loaded with Reads and atomics both ways deadlocked that way
//!   with a head register alone: each receiver held an Atomic Request the unit could not
//!   take.)
use rust_hdl::prelude::*;

use rnic_proto::host::context::MAX_READS;
use rnic_proto::host::regs::DEFAULT_NUM_QPS;

use super::AtomicAlu;
use crate::common::{constant, RamFifo, SkidBuffer};

/// Results (original values) waiting for release, in the result RAM.
pub const RESULT_DEPTH: u64 = 512;
/// A batch is closed (and written back) after this many chained results at most.
pub const BATCH_MAX: u64 = 32;
/// With no op waiting, a batch is closed only while fewer batches than this are in flight.
pub const IDLE_CLOSE_LIMIT: u64 = 8;
/// Ops queued in front of the head: `1 << OPS_BITS`, every atomic 64 QPs (the default
/// build's) with IRD `MAX_READS` can have outstanding.
const OPS_BITS: usize = (DEFAULT_NUM_QPS * MAX_READS as u32).trailing_zeros() as usize;
pub const OPS: u64 = 1 << OPS_BITS;
const _: () = assert!(OPS == DEFAULT_NUM_QPS as u64 * MAX_READS as u64, "room for every atomic outstanding");
/// An op in the queue: address (63:0), operands (319:64), control (340:320), as the head
/// registers hold them.
const OP_BITS: usize = 341;
/// Write-back buckets (a hash of the word's address, bits 6:3 ^ 10:7).
const BUCKETS: usize = 16;
const _: () = assert!(BUCKETS == 16, "the busy buckets' word lists sixteen counters");

// Read request states.
const RD_IDLE: u64 = 0;
const RD_REQUEST: u64 = 1;
const RD_WAIT: u64 = 2;

#[derive(LogicBlock)]
pub struct AtomicUnit {
    pub clock: Signal<In, Clock>,
    pub reset: Signal<In, Bit>,
    /// Ops: an 8-aligned IOVA, AOpCode (0x0 FetchAdd, 0x2 CmpSwap), the ALU's operands.
    pub s_op_valid: Signal<In, Bit>,
    pub s_op_ready: Signal<Out, Bit>,
    pub s_op_addr: Signal<In, Bits<64>>,
    pub s_op_aopcode: Signal<In, Bits<4>>,
    pub s_op_data: Signal<In, Bits<64>>,
    pub s_op_mask: Signal<In, Bits<64>>,
    pub s_op_compare: Signal<In, Bits<64>>,
    pub s_op_compare_mask: Signal<In, Bits<64>>,
    /// Memory may have been written by someone else since the previous op: read it.
    pub s_op_fresh: Signal<In, Bit>,
    /// The op may act once `done_count` has reached this (modulo 2^16).
    pub s_op_after: Signal<In, Bits<16>>,
    pub done_count: Signal<In, Bits<16>>,
    /// Read client: 8-octet reads, data back in request order.
    pub m_rd_req_valid: Signal<Out, Bit>,
    pub m_rd_req_ready: Signal<In, Bit>,
    pub m_rd_req_addr: Signal<Out, Bits<64>>,
    pub m_rd_req_len: Signal<Out, Bits<32>>,
    pub s_rd_tdata: Signal<In, Bits<64>>,
    pub s_rd_tkeep: Signal<In, Bits<8>>,
    pub s_rd_tlast: Signal<In, Bit>,
    pub s_rd_tvalid: Signal<In, Bit>,
    pub s_rd_tready: Signal<Out, Bit>,
    /// Write client: a request, then its one data beat; one ack per request, in order.
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
    /// Original values, one per op, in op order.
    pub m_res_valid: Signal<Out, Bit>,
    pub m_res_ready: Signal<In, Bit>,
    pub m_res_original: Signal<Out, Bits<64>>,
    alu: AtomicAlu,
    /// Ops waiting for the head, in block RAM, and the next of them out of it: the head's
    /// refill does not reach back into the RAM's read address.
    ops: RamFifo<OP_BITS, OPS_BITS, { OPS_BITS + 1 }>,
    ops_out: SkidBuffer<OP_BITS>,
    /// The head is free this cycle: empty, or its op issues.
    head_free: Signal<Local, Bit>,
    /// Original values until their batch is retired.
    results: RamFifo<64, 9, 10>,
    /// Released results on their way out: the consumer's ready reaches a register here,
    /// not the result RAM's read side.
    res_out: SkidBuffer<64>,
    /// Write-backs not yet sent: data (127:64), address (63:0).
    writes: RamFifo<128, 4, 5>,
    /// Closed batches not yet retired: bucket (10:7), wrote (6), results (5:0).
    batches: RamFifo<11, 5, 6>,
    // The head op. Operands: compare mask, compare, mask, data (64 bits each, high to low);
    // control: fresh (20), AOpCode (19:16), after (15:0).
    op_valid: DFF<Bit>,
    op_addr: DFF<Bits<64>>,
    op_operands: DFF<Bits<256>>,
    op_ctl: DFF<Bits<21>>,
    /// The word held in the ALU (its value is the ALU's last result).
    held_valid: DFF<Bit>,
    held_addr: DFF<Bits<64>>,
    /// An op entered the ALU last cycle (its result is not out yet).
    issued: DFF<Bit>,
    /// Results of the open batch, and whether any changed the word.
    open_count: DFF<Bits<6>>,
    open_dirty: DFF<Bit>,
    rd_state: DFF<Bits<2>>,
    /// The head write's request was accepted; its data beat is next.
    wr_req_sent: DFF<Bit>,
    /// Write acks not yet matched to a batch.
    acks: DFF<Bits<6>>,
    /// A write ack, a cycle after the write engine's pulse: the engine sits across the
    /// chip, and its completion reaches the retire decision from this register.
    wr_done: DFF<Bit>,
    /// Results released and not yet taken, and whether there are any (kept beside the
    /// count, from its parts, so the result RAM's read side waits on a register).
    credit: DFF<Bits<10>>,
    credit_any: DFF<Bit>,
    /// Write-backs in flight per address bucket, a 6-bit counter each. A counter moves a
    /// cycle after the close (`bucket_up`) or retirement (`bucket_down`) it counts, one bit
    /// per bucket: neither the batch's close nor the ack's retirement reaches a counter's
    /// adder in its own cycle. A bucket is busy from the cycle after its close on, through
    /// `bucket_up`, and a cycle longer after its last retirement.
    bucket_counts: [DFF<Bits<6>>; BUCKETS],
    bucket_up: DFF<Bits<BUCKETS>>,
    bucket_down: DFF<Bits<BUCKETS>>,
    /// `op_addr == held_addr`, decided a cycle ahead from what the two registers take.
    addr_match: DFF<Bit>,
    /// The compares `addr_match` is selected from: the head's address, and the address of
    /// the op that would enter the head, against the held address and the head's.
    op_is_held: Signal<Local, Bit>,
    new_is_held: Signal<Local, Bit>,
    new_is_op: Signal<Local, Bit>,
    /// The head's gate is open (`done_count` has reached its `after`), decided a cycle
    /// ahead: for the op that enters the head, or the one held there, against the
    /// `done_count` of the cycle before. `done_count` only grows, so the gate opens a
    /// cycle late at worst and never early.
    gate_open: DFF<Bit>,
    /// The result RAM and the batches and writes queues have room, from the counts of the
    /// cycle before: each grows by one a cycle at most, so the limits keep one more entry.
    room: DFF<Bit>,
    // Combinational, in the order they are computed.
    op_gate_diff: Signal<Local, Bits<16>>,
    new_gate_diff: Signal<Local, Bits<16>>,
    same_word: Signal<Local, Bit>,
    issue_chain: Signal<Local, Bit>,
    rd_arrive: Signal<Local, Bit>,
    issue: Signal<Local, Bit>,
    batch_count: Signal<Local, Bits<6>>,
    batch_dirty: Signal<Local, Bit>,
    close: Signal<Local, Bit>,
    close_write: Signal<Local, Bit>,
    held_bucket: Signal<Local, Bits<4>>,
    op_bucket: Signal<Local, Bits<4>>,
    buckets_busy: Signal<Local, Bits<BUCKETS>>,
    op_buckets_busy: Signal<Local, Bits<BUCKETS>>,
    op_bucket_busy: Signal<Local, Bit>,
    start_read: Signal<Local, Bit>,
    batch_head: Signal<Local, Bits<11>>,
    head_wrote: Signal<Local, Bit>,
    head_count: Signal<Local, Bits<6>>,
    head_bucket: Signal<Local, Bits<4>>,
    acks_avail: Signal<Local, Bits<6>>,
    retire: Signal<Local, Bit>,
    retire_write: Signal<Local, Bit>,
    released: Signal<Local, Bits<10>>,
    res_take: Signal<Local, Bit>,
    wr_head: Signal<Local, Bits<128>>,
    // Room limits: each queue keeps space for what the ops already in the ALU may add
    // (two results, two batch closes) after the last op taken, and for the entry it may
    // have taken since the counts `room` was decided from.
    results_limit: Constant<Bits<10>>,
    batches_limit: Constant<Bits<6>>,
    writes_limit: Constant<Bits<5>>,
    batch_max: Constant<Bits<6>>,
    idle_close_limit: Constant<Bits<6>>,
    one_bucket: Constant<Bits<BUCKETS>>,
    one_credit: Constant<Bits<10>>,
    rd_idle: Constant<Bits<2>>,
    rd_request: Constant<Bits<2>>,
    rd_wait: Constant<Bits<2>>,
}

impl Default for AtomicUnit {
    fn default() -> Self {
        // The result RAM is RamFifo<64, 9, 10>.
        const { assert!(RESULT_DEPTH == 1 << 9) };
        AtomicUnit {
            clock: Default::default(),
            reset: Default::default(),
            s_op_valid: Default::default(),
            s_op_ready: Default::default(),
            s_op_addr: Default::default(),
            s_op_aopcode: Default::default(),
            s_op_data: Default::default(),
            s_op_mask: Default::default(),
            s_op_compare: Default::default(),
            s_op_compare_mask: Default::default(),
            s_op_fresh: Default::default(),
            s_op_after: Default::default(),
            done_count: Default::default(),
            m_rd_req_valid: Default::default(),
            m_rd_req_ready: Default::default(),
            m_rd_req_addr: Default::default(),
            m_rd_req_len: Default::default(),
            s_rd_tdata: Default::default(),
            s_rd_tkeep: Default::default(),
            s_rd_tlast: Default::default(),
            s_rd_tvalid: Default::default(),
            s_rd_tready: Default::default(),
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
            m_res_valid: Default::default(),
            m_res_ready: Default::default(),
            m_res_original: Default::default(),
            alu: Default::default(),
            results: Default::default(),
            res_out: Default::default(),
            ops: Default::default(),
            ops_out: Default::default(),
            head_free: Default::default(),
            writes: Default::default(),
            batches: Default::default(),
            op_valid: Default::default(),
            op_addr: Default::default(),
            op_operands: Default::default(),
            op_ctl: Default::default(),
            held_valid: Default::default(),
            held_addr: Default::default(),
            issued: Default::default(),
            open_count: Default::default(),
            open_dirty: Default::default(),
            rd_state: Default::default(),
            wr_req_sent: Default::default(),
            acks: Default::default(),
            wr_done: Default::default(),
            credit: Default::default(),
            credit_any: Default::default(),
            bucket_counts: Default::default(),
            bucket_up: Default::default(),
            bucket_down: Default::default(),
            addr_match: Default::default(),
            op_is_held: Default::default(),
            new_is_held: Default::default(),
            new_is_op: Default::default(),
            gate_open: Default::default(),
            room: Default::default(),
            op_gate_diff: Default::default(),
            new_gate_diff: Default::default(),
            same_word: Default::default(),
            issue_chain: Default::default(),
            rd_arrive: Default::default(),
            issue: Default::default(),
            batch_count: Default::default(),
            batch_dirty: Default::default(),
            close: Default::default(),
            close_write: Default::default(),
            held_bucket: Default::default(),
            op_bucket: Default::default(),
            buckets_busy: Default::default(),
            op_buckets_busy: Default::default(),
            op_bucket_busy: Default::default(),
            start_read: Default::default(),
            batch_head: Default::default(),
            head_wrote: Default::default(),
            head_count: Default::default(),
            head_bucket: Default::default(),
            acks_avail: Default::default(),
            retire: Default::default(),
            retire_write: Default::default(),
            released: Default::default(),
            res_take: Default::default(),
            wr_head: Default::default(),
            results_limit: constant(RESULT_DEPTH - 4),
            batches_limit: constant(32 - 5),
            writes_limit: constant(16 - 5),
            batch_max: constant(BATCH_MAX),
            idle_close_limit: constant(IDLE_CLOSE_LIMIT),
            one_bucket: constant(1),
            one_credit: constant(1),
            rd_idle: constant(RD_IDLE),
            rd_request: constant(RD_REQUEST),
            rd_wait: constant(RD_WAIT),
        }
    }
}

impl Logic for AtomicUnit {
    #[hdl_gen]
    fn update(&mut self) {
        dff_setup!(
            self,
            clock,
            op_valid,
            op_addr,
            op_operands,
            op_ctl,
            held_valid,
            held_addr,
            issued,
            open_count,
            open_dirty,
            rd_state,
            wr_req_sent,
            acks,
            wr_done,
            credit,
            credit_any,
            addr_match,
            gate_open,
            room,
            bucket_up,
            bucket_down
        );
        for i in 0..BUCKETS {
            self.bucket_counts[i].clock.next = self.clock.val();
            self.bucket_counts[i].d.next = self.bucket_counts[i].q.val();
        }
        self.alu.clock.next = self.clock.val();
        self.alu.reset.next = self.reset.val();
        self.results.clock.next = self.clock.val();
        self.results.reset.next = self.reset.val();
        self.res_out.clock.next = self.clock.val();
        self.res_out.reset.next = self.reset.val();
        self.ops.clock.next = self.clock.val();
        self.ops.reset.next = self.reset.val();
        self.ops_out.clock.next = self.clock.val();
        self.ops_out.reset.next = self.reset.val();
        self.ops_out.s_valid.next = self.ops.m_valid.val();
        self.ops_out.s_data.next = self.ops.m_data.val();
        self.ops.m_ready.next = self.ops_out.s_ready.val();
        self.writes.clock.next = self.clock.val();
        self.writes.reset.next = self.reset.val();
        self.batches.clock.next = self.clock.val();
        self.batches.reset.next = self.reset.val();

        // ---- The head op: may it act, and how.
        self.same_word.next = self.held_valid.q.val() & self.addr_match.q.val() & !self.op_ctl.q.val().get_bit(20);
        self.room.d.next = (self.results.count.val() < self.results_limit.val())
            & (self.batches.count.val() < self.batches_limit.val())
            & (self.writes.count.val() < self.writes_limit.val());
        self.issue_chain.next =
            self.op_valid.q.val() & self.same_word.val() & self.gate_open.q.val() & self.room.q.val();
        // The word read for the head op: it enters the ALU as it arrives.
        self.rd_arrive.next = (self.rd_state.q.val() == self.rd_wait.val()) & self.s_rd_tvalid.val();
        self.issue.next = self.issue_chain.val() | self.rd_arrive.val();

        // Ops into the queue, and from it into the head as the head frees.
        self.s_op_ready.next = self.ops.s_ready.val();
        self.ops.s_valid.next = self.s_op_valid.val();
        self.ops.s_data.next = bit_cast::<OP_BITS, 64>(self.s_op_addr.val())
            | (bit_cast::<OP_BITS, 64>(self.s_op_data.val()) << 64)
            | (bit_cast::<OP_BITS, 64>(self.s_op_mask.val()) << 128)
            | (bit_cast::<OP_BITS, 64>(self.s_op_compare.val()) << 192)
            | (bit_cast::<OP_BITS, 64>(self.s_op_compare_mask.val()) << 256)
            | (bit_cast::<OP_BITS, 16>(self.s_op_after.val()) << 320)
            | (bit_cast::<OP_BITS, 4>(self.s_op_aopcode.val()) << 336)
            | (bit_cast::<OP_BITS, 1>(self.s_op_fresh.val().into()) << 340);
        self.head_free.next = !self.op_valid.q.val() | self.issue.val();
        self.ops_out.m_ready.next = self.head_free.val();
        self.op_valid.d.next = self.op_valid.q.val() & !self.issue.val();
        // The gate for the next cycle's head: both subtracts are of registers, and the
        // head's load only selects between them.
        self.op_gate_diff.next = self.done_count.val() - self.op_ctl.q.val().get_bits::<16>(0);
        self.new_gate_diff.next = self.done_count.val() - self.ops_out.m_data.val().get_bits::<16>(320);
        self.gate_open.d.next = !self.op_gate_diff.val().get_bit(15);
        if self.ops_out.m_valid.val() & self.head_free.val() {
            self.gate_open.d.next = !self.new_gate_diff.val().get_bit(15);
            self.op_valid.d.next = true;
            self.op_addr.d.next = self.ops_out.m_data.val().get_bits::<64>(0);
            self.op_operands.d.next = self.ops_out.m_data.val().get_bits::<256>(64);
            self.op_ctl.d.next = self.ops_out.m_data.val().get_bits::<21>(320);
        }

        self.alu.in_valid.next = self.issue.val();
        self.alu.in_chain.next = self.issue_chain.val();
        self.alu.in_original.next = self.s_rd_tdata.val();
        self.alu.in_aopcode.next = self.op_ctl.q.val().get_bits::<4>(16);
        self.alu.in_data.next = self.op_operands.q.val().get_bits::<64>(0);
        self.alu.in_mask.next = self.op_operands.q.val().get_bits::<64>(64);
        self.alu.in_compare.next = self.op_operands.q.val().get_bits::<64>(128);
        self.alu.in_compare_mask.next = self.op_operands.q.val().get_bits::<64>(192);
        self.alu.in_tag.next = 0.into();
        self.issued.d.next = self.issue.val();
        if self.rd_arrive.val() {
            self.held_valid.d.next = true;
            self.held_addr.d.next = self.op_addr.q.val();
        }
        // Whether the head's address is the held one next cycle: the head's next address
        // (a new op's or its own) against the held address's next value (the head's own
        // when its word arrives now). The three compares are of registers, made beside
        // the issue decision, which only selects among them.
        self.op_is_held.next = self.op_addr.q.val() == self.held_addr.q.val();
        self.new_is_held.next = self.ops_out.m_data.val().get_bits::<64>(0) == self.held_addr.q.val();
        self.new_is_op.next = self.ops_out.m_data.val().get_bits::<64>(0) == self.op_addr.q.val();
        self.addr_match.d.next = self.rd_arrive.val() | self.op_is_held.val();
        if self.ops_out.m_valid.val() & self.head_free.val() & self.rd_arrive.val() {
            self.addr_match.d.next = self.new_is_op.val();
        }
        if self.ops_out.m_valid.val() & self.head_free.val() & !self.rd_arrive.val() {
            self.addr_match.d.next = self.new_is_held.val();
        }
        // The word is held only while it is in use: once no op waits and every batch has
        // retired, the host may write it (RFC 7306 atomics are atomic only against each
        // other, not against the CPU), so the next op reads it again.
        if !self.op_valid.q.val()
            & !self.ops_out.m_valid.val()
            & !self.issued.q.val()
            & !self.alu.out_valid.val()
            & !self.open_count.q.val().any()
            & !self.batches.count.val().any()
        {
            self.held_valid.d.next = false;
        }

        // ---- Results into the RAM; batches closed and written back.
        self.results.s_valid.next = self.alu.out_valid.val();
        self.results.s_data.next = self.alu.out_original.val();
        self.batch_count.next = self.open_count.q.val() + bit_cast::<6, 1>(self.alu.out_valid.val().into());
        self.batch_dirty.next = self.open_dirty.q.val() | (self.alu.out_valid.val() & self.alu.out_changed.val());
        // Close at BATCH_MAX results, or when the ALU holds the latest value (nothing entered it
        // last cycle) and the head op is not chaining on it now: the ALU's result output
        // then shows the word's latest value, results or not this cycle. With no op waiting
        // the close waits while IDLE_CLOSE_LIMIT batches are in flight already: ops arriving
        // with gaps would otherwise each cost a write-back, and the next op may still chain.
        self.close.next = (self.alu.out_valid.val() & (self.batch_count.val() == self.batch_max.val()))
            | (!self.issued.q.val()
                & self.batch_count.val().any()
                & !self.issue_chain.val()
                & (self.op_valid.q.val()
                    | self.ops_out.m_valid.val()
                    | (self.batches.count.val() < self.idle_close_limit.val())));
        self.close_write.next = self.close.val() & self.batch_dirty.val();
        self.open_count.d.next = self.batch_count.val();
        self.open_dirty.d.next = self.batch_dirty.val();
        if self.close.val() {
            self.open_count.d.next = 0.into();
            self.open_dirty.d.next = false;
        }
        // Bucket of a word: address bits 6:3 ^ 10:7.
        self.held_bucket.next = self.held_addr.q.val().get_bits::<4>(3) ^ self.held_addr.q.val().get_bits::<4>(7);
        self.writes.s_valid.next = self.close_write.val();
        self.writes.s_data.next =
            bit_cast::<128, 64>(self.held_addr.q.val()) | (bit_cast::<128, 64>(self.alu.out_result.val()) << 64);
        self.batches.s_valid.next = self.close.val();
        self.batches.s_data.next = bit_cast::<11, 6>(self.batch_count.val())
            | (bit_cast::<11, 1>(self.batch_dirty.val().into()) << 6)
            | (bit_cast::<11, 4>(self.held_bucket.val()) << 7);

        // ---- Reading the word of an op that cannot chain.
        self.op_bucket.next = self.op_addr.q.val().get_bits::<4>(3) ^ self.op_addr.q.val().get_bits::<4>(7);
        // (Which buckets have write-backs in flight, one bit each, written out term by
        // term: a select among them is then a 16-way multiplexer, not a chain.)
        self.buckets_busy.next = bit_cast::<BUCKETS, 1>(self.bucket_counts[0].q.val().any().into())
            | (bit_cast::<BUCKETS, 1>(self.bucket_counts[1].q.val().any().into()) << 1_u64)
            | (bit_cast::<BUCKETS, 1>(self.bucket_counts[2].q.val().any().into()) << 2_u64)
            | (bit_cast::<BUCKETS, 1>(self.bucket_counts[3].q.val().any().into()) << 3_u64)
            | (bit_cast::<BUCKETS, 1>(self.bucket_counts[4].q.val().any().into()) << 4_u64)
            | (bit_cast::<BUCKETS, 1>(self.bucket_counts[5].q.val().any().into()) << 5_u64)
            | (bit_cast::<BUCKETS, 1>(self.bucket_counts[6].q.val().any().into()) << 6_u64)
            | (bit_cast::<BUCKETS, 1>(self.bucket_counts[7].q.val().any().into()) << 7_u64)
            | (bit_cast::<BUCKETS, 1>(self.bucket_counts[8].q.val().any().into()) << 8_u64)
            | (bit_cast::<BUCKETS, 1>(self.bucket_counts[9].q.val().any().into()) << 9_u64)
            | (bit_cast::<BUCKETS, 1>(self.bucket_counts[10].q.val().any().into()) << 10_u64)
            | (bit_cast::<BUCKETS, 1>(self.bucket_counts[11].q.val().any().into()) << 11_u64)
            | (bit_cast::<BUCKETS, 1>(self.bucket_counts[12].q.val().any().into()) << 12_u64)
            | (bit_cast::<BUCKETS, 1>(self.bucket_counts[13].q.val().any().into()) << 13_u64)
            | (bit_cast::<BUCKETS, 1>(self.bucket_counts[14].q.val().any().into()) << 14_u64)
            | (bit_cast::<BUCKETS, 1>(self.bucket_counts[15].q.val().any().into()) << 15_u64)
            | self.bucket_up.q.val();
        self.op_buckets_busy.next = self.buckets_busy.val() >> self.op_bucket.val();
        self.op_bucket_busy.next = self.op_buckets_busy.val().get_bit(0);
        // The held batch must be closed (ALU empty, nothing open) so the ALU may take a new
        // word, and no write-back that may hit this word may still be in flight.
        self.start_read.next = self.op_valid.q.val()
            & !self.same_word.val()
            & self.gate_open.q.val()
            & self.room.q.val()
            & (self.rd_state.q.val() == self.rd_idle.val())
            & !self.issued.q.val()
            & !self.alu.out_valid.val()
            & !self.open_count.q.val().any()
            & !self.op_bucket_busy.val();
        self.m_rd_req_valid.next = self.rd_state.q.val() == self.rd_request.val();
        self.m_rd_req_addr.next = self.op_addr.q.val();
        self.m_rd_req_len.next = 8.into();
        self.s_rd_tready.next = true;
        if self.start_read.val() {
            self.rd_state.d.next = self.rd_request.val();
        }
        if (self.rd_state.q.val() == self.rd_request.val()) & self.m_rd_req_ready.val() {
            self.rd_state.d.next = self.rd_wait.val();
        }
        if self.rd_arrive.val() {
            self.rd_state.d.next = self.rd_idle.val();
        }

        // ---- Write-backs to the write engine: request, then the data beat.
        self.wr_head.next = self.writes.m_data.val();
        self.m_wr_req_valid.next = self.writes.m_valid.val() & !self.wr_req_sent.q.val();
        self.m_wr_req_addr.next = self.wr_head.val().get_bits::<64>(0);
        self.m_wr_req_len.next = 8.into();
        self.m_wr_tvalid.next = self.writes.m_valid.val() & self.wr_req_sent.q.val();
        self.m_wr_tdata.next = self.wr_head.val().get_bits::<64>(64);
        self.m_wr_tkeep.next = 0xFF.into();
        self.m_wr_tlast.next = true;
        self.writes.m_ready.next = self.wr_req_sent.q.val() & self.m_wr_tready.val();
        if self.writes.m_valid.val() & !self.wr_req_sent.q.val() & self.m_wr_req_ready.val() {
            self.wr_req_sent.d.next = true;
        }
        if self.writes.m_valid.val() & self.wr_req_sent.q.val() & self.m_wr_tready.val() {
            self.wr_req_sent.d.next = false;
        }

        // ---- Retiring batches (in order) releases their results.
        self.batch_head.next = self.batches.m_data.val();
        self.head_count.next = self.batch_head.val().get_bits::<6>(0);
        self.head_wrote.next = self.batch_head.val().get_bit(6);
        self.head_bucket.next = self.batch_head.val().get_bits::<4>(7);
        // An ack is available if one is counted or one arrives now; no add on the way.
        self.wr_done.d.next = self.s_wr_done_valid.val();
        self.acks_avail.next = self.acks.q.val() + bit_cast::<6, 1>(self.wr_done.q.val().into());
        self.retire.next =
            self.batches.m_valid.val() & (!self.head_wrote.val() | self.acks.q.val().any() | self.wr_done.q.val());
        self.retire_write.next = self.retire.val() & self.head_wrote.val();
        self.batches.m_ready.next = self.retire.val();
        self.acks.d.next = self.acks_avail.val() - bit_cast::<6, 1>(self.retire_write.val().into());
        self.released.next = 0.into();
        if self.retire.val() {
            self.released.next = bit_cast::<10, 6>(self.head_count.val());
        }
        // A counter never exceeds the 32 batches in flight nor goes below zero. Each one
        // counts from its own bits of `bucket_up` and `bucket_down`, a cycle after the
        // close or retirement: up for a write-back closed on its bucket, down for one
        // retired; both in one cycle, it holds.
        self.bucket_up.d.next = 0.into();
        if self.close_write.val() {
            self.bucket_up.d.next = self.one_bucket.val() << bit_cast::<BUCKETS, 4>(self.held_bucket.val());
        }
        self.bucket_down.d.next = 0.into();
        if self.retire_write.val() {
            self.bucket_down.d.next = self.one_bucket.val() << bit_cast::<BUCKETS, 4>(self.head_bucket.val());
        }
        for i in 0..BUCKETS {
            if self.bucket_up.q.val().get_bit(i) & !self.bucket_down.q.val().get_bit(i) {
                self.bucket_counts[i].d.next = self.bucket_counts[i].q.val() + 1;
            }
            if !self.bucket_up.q.val().get_bit(i) & self.bucket_down.q.val().get_bit(i) {
                self.bucket_counts[i].d.next = self.bucket_counts[i].q.val() - 1;
            }
        }

        // ---- Released results out.
        self.res_out.s_valid.next = self.results.m_valid.val() & self.credit_any.q.val();
        self.res_out.s_data.next = self.results.m_data.val();
        self.results.m_ready.next = self.res_out.s_ready.val() & self.credit_any.q.val();
        self.res_take.next = self.res_out.s_ready.val() & self.results.m_valid.val() & self.credit_any.q.val();
        self.m_res_valid.next = self.res_out.m_valid.val();
        self.m_res_original.next = self.res_out.m_data.val();
        self.res_out.m_ready.next = self.m_res_ready.val();
        self.credit.d.next = self.credit.q.val() + self.released.val() - bit_cast::<10, 1>(self.res_take.val().into());
        self.credit_any.d.next = self.released.val().any()
            | (self.credit.q.val() > self.one_credit.val())
            | (self.credit_any.q.val() & !self.res_take.val());

        if self.reset.val() {
            self.op_valid.d.next = false;
            self.held_valid.d.next = false;
            self.issued.d.next = false;
            self.open_count.d.next = 0.into();
            self.open_dirty.d.next = false;
            self.rd_state.d.next = self.rd_idle.val();
            self.wr_req_sent.d.next = false;
            self.acks.d.next = 0.into();
            self.wr_done.d.next = false;
            self.credit.d.next = 0.into();
            self.credit_any.d.next = false;
            for i in 0..BUCKETS {
                self.bucket_counts[i].d.next = 0.into();
            }
            self.bucket_up.d.next = 0.into();
            self.bucket_down.d.next = 0.into();
            self.addr_match.d.next = false;
            self.gate_open.d.next = false;
            self.room.d.next = false;
        }
    }
}
