//! DMA write: (IOVA, length) requests and their octets in, AXI4 write bursts out, and a
//! completion per request once every burst is acknowledged.
//!
//! A request may start at any octet; its data arrives as a stream with the first octet in
//! lane 0 (whole beats but the last). The W side shifts the octets up to the address's
//! lane, carrying the top octets of each beat into the next, so one beat of data more
//! than the input may leave at the end; strobes cover exactly the request's octets. AW
//! bursts come from [`BurstSplit`]; the W side ends its bursts by the same two rules (4 KiB
//! boundary, 256 beats), so the two agree without talking.
//!
//! The completion (`m_done_*`, a one-cycle pulse: a consumer must always take it) comes
//! only when the last B response of the request has arrived: after it, the data is in host
//! memory (what a CQE written after it may promise). A zero-length request writes nothing
//! and completes in order. Any error response marks the completion.
use rust_hdl::prelude::*;

use super::BurstSplit;
use crate::common::{constant, RamFifo};

/// Requests in flight at once, in each queue: `1 << QUEUE_BITS` (enough for a 200-cycle
/// memory to take small writes at full rate: Little's law).
const QUEUE_BITS: usize = 5;

/// A request as it waits for the W side: address bits 11:0 (`ADDR`), length (`LEN`, 32
/// bits), tag (`TAG`, 8), and what the W side's counters start from, worked out as the
/// request is accepted: its W beats (`BEATS`, 32), its first input beat's octets
/// (`IN_BYTES`, 4), whether it has input (`IN_MORE`), whether its first input beat is its
/// last (`IN_LAST`), and whether its first W beat is its last (`FINAL`) or the one before
/// (`NEXT_FINAL`).
mod req_entry {
    pub const ADDR: usize = 0;
    pub const LEN: usize = 12;
    pub const TAG: usize = 44;
    pub const BEATS: usize = 52;
    pub const IN_BYTES: usize = 84;
    pub const IN_MORE: usize = 88;
    pub const IN_LAST: usize = 89;
    pub const FINAL: usize = 90;
    pub const NEXT_FINAL: usize = 91;
}
const REQ_ENTRY_BITS: usize = 92;

#[derive(LogicBlock)]
pub struct DmaWrite {
    pub clock: Signal<In, Clock>,
    pub reset: Signal<In, Bit>,
    pub s_req_valid: Signal<In, Bit>,
    pub s_req_ready: Signal<Out, Bit>,
    pub s_req_addr: Signal<In, Bits<64>>,
    pub s_req_len: Signal<In, Bits<32>>,
    pub s_req_tag: Signal<In, Bits<8>>,
    /// The octets of the requests, in request order; `tlast` ends each non-empty one.
    pub s_axis_tdata: Signal<In, Bits<64>>,
    pub s_axis_tkeep: Signal<In, Bits<8>>,
    pub s_axis_tlast: Signal<In, Bit>,
    pub s_axis_tvalid: Signal<In, Bit>,
    pub s_axis_tready: Signal<Out, Bit>,
    pub m_axi_awaddr: Signal<Out, Bits<64>>,
    pub m_axi_awlen: Signal<Out, Bits<8>>,
    pub m_axi_awsize: Signal<Out, Bits<3>>,
    pub m_axi_awburst: Signal<Out, Bits<2>>,
    pub m_axi_awvalid: Signal<Out, Bit>,
    pub m_axi_awready: Signal<In, Bit>,
    pub m_axi_wdata: Signal<Out, Bits<64>>,
    pub m_axi_wstrb: Signal<Out, Bits<8>>,
    pub m_axi_wlast: Signal<Out, Bit>,
    pub m_axi_wvalid: Signal<Out, Bit>,
    pub m_axi_wready: Signal<In, Bit>,
    pub m_axi_bresp: Signal<In, Bits<2>>,
    pub m_axi_bvalid: Signal<In, Bit>,
    pub m_axi_bready: Signal<Out, Bit>,
    pub m_done_valid: Signal<Out, Bit>,
    pub m_done_tag: Signal<Out, Bits<8>>,
    pub m_done_error: Signal<Out, Bit>,
    bursts: BurstSplit,
    /// Accepted requests for the W side (see `req_entry`).
    requests: RamFifo<REQ_ENTRY_BITS, QUEUE_BITS, { QUEUE_BITS + 1 }>,
    /// Requests whose W beats are all out, for the B side: bursts (16 bits), tag (8).
    written: RamFifo<24, QUEUE_BITS, { QUEUE_BITS + 1 }>,
    // W side: the request being written.
    active: DFF<Bit>,
    in_left: DFF<Bits<32>>,
    w_left: DFF<Bits<32>>,
    // Decided as `in_left` and `w_left` are loaded or count down, for the cycle they are
    // used in: the octets the next input beat brings (`in_left`, at most 8), whether any
    // input is still to come, whether the next input beat is the last (`in_left` at most
    // 8), and whether the next W beat is the last (`w_left` is 1) or the one before it (2).
    in_bytes: DFF<Bits<4>>,
    in_more: DFF<Bit>,
    in_last: DFF<Bit>,
    final_beat: DFF<Bit>,
    next_final: DFF<Bit>,
    beat_addr: DFF<Bits<12>>,
    in_burst: DFF<Bits<9>>,
    req_bursts: DFF<Bits<16>>,
    carry: DFF<Bits<64>>,
    held: DFF<Bits<4>>,
    low_lane: DFF<Bits<4>>,
    flushing: DFF<Bit>,
    tag: DFF<Bits<8>>,
    w_valid: DFF<Bit>,
    w_data: DFF<Bits<64>>,
    w_strb: DFF<Bits<8>>,
    w_last: DFF<Bit>,
    /// A request whose W beats are all out, on its way into `written` a cycle later.
    written_push: DFF<Bit>,
    written_entry: DFF<Bits<24>>,
    // B side.
    b_seen: DFF<Bits<16>>,
    b_error: DFF<Bit>,
    done_valid: DFF<Bit>,
    done_tag: DFF<Bits<8>>,
    done_error: DFF<Bit>,
    // Combinational.
    written_word: Signal<Local, Bits<24>>,
    accept: Signal<Local, Bit>,
    total_beats: Signal<Local, Bits<32>>,
    head_req: Signal<Local, Bits<REQ_ENTRY_BITS>>,
    head_written: Signal<Local, Bits<24>>,
    load: Signal<Local, Bit>,
    head_len: Signal<Local, Bits<32>>,
    // The accepted request's entry fields.
    req_lane: Signal<Local, Bits<6>>,
    req_short: Signal<Local, Bit>,
    req_beats: Signal<Local, Bits<32>>,
    req_in_bytes: Signal<Local, Bits<4>>,
    req_in_last: Signal<Local, Bit>,
    req_final: Signal<Local, Bit>,
    req_next_final: Signal<Local, Bit>,
    take: Signal<Local, Bit>,
    combined: Signal<Local, Bits<128>>,
    total: Signal<Local, Bits<5>>,
    emit: Signal<Local, Bit>,
    high_lane: Signal<Local, Bits<5>>,
    burst_end: Signal<Local, Bit>,
    empty_request: Signal<Local, Bit>,
    complete: Signal<Local, Bit>,
    lane_ones: Constant<Bits<8>>,
    at_len: Constant<Bits<8>>,
    at_tag: Constant<Bits<8>>,
    at_beats: Constant<Bits<8>>,
    at_in_bytes: Constant<Bits<8>>,
    at_in_more: Constant<Bits<8>>,
    at_in_last: Constant<Bits<8>>,
    at_final: Constant<Bits<8>>,
    at_next_final: Constant<Bits<8>>,
}

impl Default for DmaWrite {
    fn default() -> Self {
        // The address bits lead the entry (the W side takes them from bit 0 on), and the
        // fields follow one another up to the entry's width.
        const {
            assert!(
                req_entry::ADDR == 0
                    && req_entry::LEN == 12
                    && req_entry::TAG == req_entry::LEN + 32
                    && req_entry::BEATS == req_entry::TAG + 8
                    && req_entry::IN_BYTES == req_entry::BEATS + 32
                    && req_entry::IN_MORE == req_entry::IN_BYTES + 4
                    && req_entry::IN_LAST == req_entry::IN_MORE + 1
                    && req_entry::FINAL == req_entry::IN_LAST + 1
                    && req_entry::NEXT_FINAL == req_entry::FINAL + 1
                    && REQ_ENTRY_BITS == req_entry::NEXT_FINAL + 1
            )
        };
        DmaWrite {
            clock: Default::default(),
            reset: Default::default(),
            s_req_valid: Default::default(),
            s_req_ready: Default::default(),
            s_req_addr: Default::default(),
            s_req_len: Default::default(),
            s_req_tag: Default::default(),
            s_axis_tdata: Default::default(),
            s_axis_tkeep: Default::default(),
            s_axis_tlast: Default::default(),
            s_axis_tvalid: Default::default(),
            s_axis_tready: Default::default(),
            m_axi_awaddr: Default::default(),
            m_axi_awlen: Default::default(),
            m_axi_awsize: Default::default(),
            m_axi_awburst: Default::default(),
            m_axi_awvalid: Default::default(),
            m_axi_awready: Default::default(),
            m_axi_wdata: Default::default(),
            m_axi_wstrb: Default::default(),
            m_axi_wlast: Default::default(),
            m_axi_wvalid: Default::default(),
            m_axi_wready: Default::default(),
            m_axi_bresp: Default::default(),
            m_axi_bvalid: Default::default(),
            m_axi_bready: Default::default(),
            m_done_valid: Default::default(),
            m_done_tag: Default::default(),
            m_done_error: Default::default(),
            bursts: Default::default(),
            requests: Default::default(),
            written: Default::default(),
            active: Default::default(),
            in_left: Default::default(),
            w_left: Default::default(),
            in_bytes: Default::default(),
            in_more: Default::default(),
            in_last: Default::default(),
            final_beat: Default::default(),
            next_final: Default::default(),
            beat_addr: Default::default(),
            in_burst: Default::default(),
            req_bursts: Default::default(),
            carry: Default::default(),
            held: Default::default(),
            low_lane: Default::default(),
            flushing: Default::default(),
            tag: Default::default(),
            w_valid: Default::default(),
            w_data: Default::default(),
            w_strb: Default::default(),
            w_last: Default::default(),
            written_push: Default::default(),
            written_entry: Default::default(),
            b_seen: Default::default(),
            b_error: Default::default(),
            done_valid: Default::default(),
            done_tag: Default::default(),
            done_error: Default::default(),
            written_word: Default::default(),
            accept: Default::default(),
            total_beats: Default::default(),
            head_req: Default::default(),
            head_written: Default::default(),
            load: Default::default(),
            head_len: Default::default(),
            req_lane: Default::default(),
            req_short: Default::default(),
            req_beats: Default::default(),
            req_in_bytes: Default::default(),
            req_in_last: Default::default(),
            req_final: Default::default(),
            req_next_final: Default::default(),
            take: Default::default(),
            combined: Default::default(),
            total: Default::default(),
            emit: Default::default(),
            high_lane: Default::default(),
            burst_end: Default::default(),
            empty_request: Default::default(),
            complete: Default::default(),
            lane_ones: Constant::new(0xFF_u64.to_bits()),
            at_len: constant(req_entry::LEN as u64),
            at_tag: constant(req_entry::TAG as u64),
            at_beats: constant(req_entry::BEATS as u64),
            at_in_bytes: constant(req_entry::IN_BYTES as u64),
            at_in_more: constant(req_entry::IN_MORE as u64),
            at_in_last: constant(req_entry::IN_LAST as u64),
            at_final: constant(req_entry::FINAL as u64),
            at_next_final: constant(req_entry::NEXT_FINAL as u64),
        }
    }
}

impl Logic for DmaWrite {
    #[hdl_gen]
    fn update(&mut self) {
        dff_setup!(
            self,
            clock,
            active,
            in_left,
            w_left,
            in_bytes,
            in_more,
            in_last,
            final_beat,
            next_final,
            beat_addr,
            in_burst,
            req_bursts,
            carry,
            held,
            low_lane,
            flushing,
            tag,
            w_valid,
            w_data,
            w_strb,
            w_last,
            written_push,
            written_entry,
            b_seen,
            b_error,
            done_valid,
            done_tag,
            done_error
        );
        self.requests.clock.next = self.clock.val();
        self.requests.reset.next = self.reset.val();
        self.written.clock.next = self.clock.val();
        self.written.reset.next = self.reset.val();
        self.bursts.clock.next = self.clock.val();
        self.bursts.reset.next = self.reset.val();

        // Requests: AW bursts from the splitter, the request itself queued for the W side.
        self.accept.next = self.s_req_valid.val() & self.bursts.s_ready.val() & self.requests.s_ready.val();
        self.s_req_ready.next = self.bursts.s_ready.val() & self.requests.s_ready.val();
        self.total_beats.next =
            (bit_cast::<32, 3>(self.s_req_addr.val().get_bits::<3>(0)) + self.s_req_len.val() + 7) >> 3;
        self.bursts.s_valid.next = self.accept.val() & self.s_req_len.val().any();
        self.bursts.s_addr.next = self.s_req_addr.val() & 0xFFFFFFFFFFFFFFF8_u64;
        self.bursts.s_beats.next = self.total_beats.val();
        self.bursts.m_ready.next = self.m_axi_awready.val();
        // What the W side's counters start from. The first beat's lane plus the octets,
        // while they are few (under 32), decides the last-beat flags: 1 to 8 octets from
        // the lane on take one beat, 9 to 16 two (16 octets from lane 0 take two, from
        // lane 7 three).
        self.req_lane.next = bit_cast::<6, 3>(self.s_req_addr.val().get_bits::<3>(0))
            + bit_cast::<6, 5>(self.s_req_len.val().get_bits::<5>(0));
        self.req_short.next = !self.s_req_len.val().get_bits::<27>(5).any();
        self.req_beats.next = 0.into();
        if self.s_req_len.val().any() {
            self.req_beats.next = self.total_beats.val();
        }
        self.req_in_bytes.next = 8.into();
        if !self.s_req_len.val().get_bits::<29>(3).any() {
            self.req_in_bytes.next = bit_cast::<4, 3>(self.s_req_len.val().get_bits::<3>(0));
        }
        self.req_in_last.next = !self.s_req_len.val().get_bits::<28>(4).any()
            & !(self.s_req_len.val().get_bit(3) & self.s_req_len.val().get_bits::<3>(0).any());
        self.req_final.next = self.s_req_len.val().any() & self.req_short.val() & (self.req_lane.val() <= 8);
        self.req_next_final.next = self.req_short.val() & (self.req_lane.val() > 8) & (self.req_lane.val() <= 16);
        self.requests.s_valid.next = self.accept.val();
        self.requests.s_data.next = bit_cast::<REQ_ENTRY_BITS, 12>(self.s_req_addr.val().get_bits::<12>(0))
            | (bit_cast::<REQ_ENTRY_BITS, 32>(self.s_req_len.val()) << self.at_len.val())
            | (bit_cast::<REQ_ENTRY_BITS, 8>(self.s_req_tag.val()) << self.at_tag.val())
            | (bit_cast::<REQ_ENTRY_BITS, 32>(self.req_beats.val()) << self.at_beats.val())
            | (bit_cast::<REQ_ENTRY_BITS, 4>(self.req_in_bytes.val()) << self.at_in_bytes.val())
            | (bit_cast::<REQ_ENTRY_BITS, 1>(self.s_req_len.val().any().into()) << self.at_in_more.val())
            | (bit_cast::<REQ_ENTRY_BITS, 1>(self.req_in_last.val().into()) << self.at_in_last.val())
            | (bit_cast::<REQ_ENTRY_BITS, 1>(self.req_final.val().into()) << self.at_final.val())
            | (bit_cast::<REQ_ENTRY_BITS, 1>(self.req_next_final.val().into()) << self.at_next_final.val());
        self.m_axi_awaddr.next = self.bursts.m_addr.val();
        self.m_axi_awlen.next = self.bursts.m_len.val();
        self.m_axi_awsize.next = 3.into();
        self.m_axi_awburst.next = 1.into();
        self.m_axi_awvalid.next = self.bursts.m_valid.val();

        // W side: start the next request. Its first beat begins at the address's lane.
        self.head_req.next = self.requests.m_data.val();
        self.head_len.next = self.head_req.val().get_bits::<32>(self.at_len.val().index());
        self.requests.m_ready.next = !self.active.q.val();
        if !self.active.q.val() & self.requests.m_valid.val() {
            self.active.d.next = true;
            self.in_left.d.next = self.head_len.val();
            self.in_more.d.next = self.head_req.val().get_bit(self.at_in_more.val().index());
            self.in_last.d.next = self.head_req.val().get_bit(self.at_in_last.val().index());
            self.in_bytes.d.next = self.head_req.val().get_bits::<4>(self.at_in_bytes.val().index());
            self.w_left.d.next = self.head_req.val().get_bits::<32>(self.at_beats.val().index());
            self.final_beat.d.next = self.head_req.val().get_bit(self.at_final.val().index());
            self.next_final.d.next = self.head_req.val().get_bit(self.at_next_final.val().index());
            self.tag.d.next = self.head_req.val().get_bits::<8>(self.at_tag.val().index());
            self.held.d.next = bit_cast::<4, 3>(self.head_req.val().get_bits::<3>(0));
            self.low_lane.d.next = bit_cast::<4, 3>(self.head_req.val().get_bits::<3>(0));
            self.beat_addr.d.next = self.head_req.val().get_bits::<12>(0) & 0xFF8_u64;
            self.in_burst.d.next = 0.into();
            self.req_bursts.d.next = 0.into();
            self.carry.d.next = 0.into();
            self.flushing.d.next = false;
        }
        // Each input octet joins those carried; a W beat leaves when eight lanes are
        // filled, at the request's end, or (flushing) with the last carried octets.
        self.load.next = !self.w_valid.q.val() | self.m_axi_wready.val();
        if self.m_axi_wready.val() {
            self.w_valid.d.next = false;
        }
        self.take.next = self.active.q.val()
            & self.load.val()
            & !self.flushing.q.val()
            & self.in_more.q.val()
            & self.s_axis_tvalid.val()
            & !(self.final_beat.q.val() & !self.written.s_ready.val());
        self.s_axis_tready.next = self.active.q.val()
            & self.load.val()
            & !self.flushing.q.val()
            & self.in_more.q.val()
            & !(self.final_beat.q.val() & !self.written.s_ready.val());
        self.combined.next = bit_cast::<128, 64>(self.carry.q.val())
            | (bit_cast::<128, 64>(self.s_axis_tdata.val()) << (bit_cast::<128, 4>(self.held.q.val()) << 3));
        self.total.next = bit_cast::<5, 4>(self.held.q.val()) + bit_cast::<5, 4>(self.in_bytes.q.val());
        if self.flushing.q.val() {
            self.combined.next = bit_cast::<128, 64>(self.carry.q.val());
            self.total.next = bit_cast::<5, 4>(self.held.q.val());
        }
        self.emit.next = (self.take.val() & ((self.total.val() >= 8) | self.final_beat.q.val()))
            | (self.active.q.val() & self.load.val() & self.flushing.q.val() & self.written.s_ready.val());
        self.high_lane.next = self.total.val();
        if self.total.val() > 8 {
            self.high_lane.next = 8.into();
        }
        // A burst ends at the request's end, at a 4 KiB boundary, or after 256 beats.
        self.burst_end.next =
            self.final_beat.q.val() | (self.beat_addr.q.val().get_bits::<9>(3) == 511) | (self.in_burst.q.val() == 255);
        if self.take.val() {
            self.in_left.d.next = self.in_left.q.val() - bit_cast::<32, 4>(self.in_bytes.q.val());
            // What is left after this beat: 8 or more from 16 on, the low three bits from 8
            // to 15, none below 8 (so the beat after next is the last from 16 down).
            self.in_more.d.next = !self.in_last.q.val();
            self.in_last.d.next = !self.in_left.q.val().get_bits::<27>(5).any()
                & !(self.in_left.q.val().get_bit(4) & self.in_left.q.val().get_bits::<4>(0).any());
            self.in_bytes.d.next = 0.into();
            if self.in_left.q.val().get_bit(3) {
                self.in_bytes.d.next = bit_cast::<4, 3>(self.in_left.q.val().get_bits::<3>(0));
            }
            if self.in_left.q.val().get_bits::<28>(4).any() {
                self.in_bytes.d.next = 8.into();
            }
            self.carry.d.next = self.combined.val().get_bits::<64>(0);
            self.held.d.next = bit_cast::<4, 5>(self.total.val());
        }
        if self.emit.val() {
            self.w_valid.d.next = true;
            self.w_data.d.next = self.combined.val().get_bits::<64>(0);
            self.w_strb.d.next = (self.lane_ones.val() << bit_cast::<8, 4>(self.low_lane.q.val()))
                & !(self.lane_ones.val() << bit_cast::<8, 5>(self.high_lane.val()));
            self.w_last.d.next = self.burst_end.val();
            self.low_lane.d.next = 0.into();
            self.carry.d.next = self.combined.val().get_bits::<64>(64);
            self.held.d.next = 0.into();
            if self.total.val() > 8 {
                self.held.d.next = bit_cast::<4, 5>(self.total.val() - 8);
            }
            self.w_left.d.next = self.w_left.q.val() - 1;
            self.final_beat.d.next = self.next_final.q.val();
            self.next_final.d.next = self.w_left.q.val() == 3;
            self.beat_addr.d.next = self.beat_addr.q.val() + 8;
            self.in_burst.d.next = self.in_burst.q.val() + 1;
            if self.burst_end.val() {
                self.in_burst.d.next = 0.into();
                self.req_bursts.d.next = self.req_bursts.q.val() + 1;
            }
            // More octets than lanes on the input's last beat: one more beat follows.
            self.flushing.d.next = !self.final_beat.q.val() & self.in_last.q.val() & !self.flushing.q.val();
            if self.final_beat.q.val() {
                self.active.d.next = false;
            }
        }
        // A request leaves the W side with its last beat (or at once, if empty), and joins
        // `written` a cycle later from registers. The next one cannot end before the cycle
        // after that (it becomes active a cycle after this one is not), so `s_ready`
        // already counts this one when it is looked at again.
        self.empty_request.next = self.active.q.val() & !self.w_left.q.val().any() & self.written.s_ready.val();
        self.written_push.d.next = (self.emit.val() & self.final_beat.q.val()) | self.empty_request.val();
        self.written_word.next = bit_cast::<24, 8>(self.tag.q.val()) << 16;
        if !self.empty_request.val() {
            self.written_word.next =
                (bit_cast::<24, 8>(self.tag.q.val()) << 16) | bit_cast::<24, 16>(self.req_bursts.q.val() + 1);
        }
        self.written_entry.d.next = self.written_word.val();
        self.written.s_valid.next = self.written_push.q.val();
        self.written.s_data.next = self.written_entry.q.val();
        if self.empty_request.val() {
            self.active.d.next = false;
        }
        self.m_axi_wdata.next = self.w_data.q.val();
        self.m_axi_wstrb.next = self.w_strb.q.val();
        self.m_axi_wlast.next = self.w_last.q.val();
        self.m_axi_wvalid.next = self.w_valid.q.val();

        // B side: count responses; the oldest written request completes when all its bursts
        // are answered (B responses are taken only while no completion is due, so each
        // counts towards the right request).
        self.head_written.next = self.written.m_data.val();
        self.complete.next =
            self.written.m_valid.val() & (self.b_seen.q.val() >= self.head_written.val().get_bits::<16>(0));
        self.written.m_ready.next = self.complete.val();
        self.m_axi_bready.next = !self.complete.val();
        self.done_valid.d.next = false;
        if self.complete.val() {
            self.done_valid.d.next = true;
            self.done_tag.d.next = self.head_written.val().get_bits::<8>(16);
            self.done_error.d.next = self.b_error.q.val();
            self.b_seen.d.next = self.b_seen.q.val() - self.head_written.val().get_bits::<16>(0);
            self.b_error.d.next = false;
        } else if self.m_axi_bvalid.val() {
            self.b_seen.d.next = self.b_seen.q.val() + 1;
            if self.m_axi_bresp.val().any() {
                self.b_error.d.next = true;
            }
        }
        self.m_done_valid.next = self.done_valid.q.val();
        self.m_done_tag.next = self.done_tag.q.val();
        self.m_done_error.next = self.done_error.q.val();

        if self.reset.val() {
            self.active.d.next = false;
            self.flushing.d.next = false;
            self.w_valid.d.next = false;
            self.written_push.d.next = false;
            self.b_seen.d.next = 0.into();
            self.b_error.d.next = false;
            self.done_valid.d.next = false;
        }
    }
}
