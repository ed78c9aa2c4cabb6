//! DMA read: (IOVA, length) requests in, the octets out as a stream, lane 0 first.
//!
//! Requests may start at any octet and have any length. The AR side turns each into INCR
//! bursts of 64-bit beats ([`BurstSplit`]), and keeps issuing while earlier data is still on its way: up to
//! `QUEUE` (32) requests are in flight, their descriptors waiting in a block-RAM queue for
//! the R side (enough for a 200-cycle memory to be read at full rate in small requests:
//! Little's law), which realigns the beats so that the request's first octet is in lane 0. All
//! reads use one AXI ID, so data comes back in request order.
//!
//! The R side takes its requests back to back: the next descriptor waits in a register
//! slice beside the request being delivered, and starts in the cycle that emits that
//! request's last beat, so a new request's first bus beat is taken the cycle after. Whether
//! a beat is the request's last comes from a register (`out_one`: at most 8 octets left),
//! not from a compare of the 32-bit count.
//!
//! A zero-length request makes one empty beat with `tlast` and no bus traffic. An error
//! response on any beat of a request sets the error bit of `m_axis_tuser` from that beat
//! to its last, whose data must then not be used.
use rust_hdl::prelude::*;

use super::BurstSplit;
use crate::common::{constant, RamFifo, SkidBuffer};

/// Requests in flight at once: `1 << QUEUE_BITS`.
const QUEUE_BITS: usize = 5;
/// A descriptor, made when the request is issued: the offset of its first octet in the
/// first beat (3 bits), its length (32), its tag (8), the bus beats it takes (32; none for
/// an empty request), whether that is one, whether the request makes one output beat (at
/// most 8 octets), and whether it has any bus beat.
const DESC_BITS: usize = 78;
const DESC_LEN: u64 = 3;
const DESC_TAG: u64 = 35;
const DESC_BEATS: u64 = 43;
const DESC_ONE_BEAT: u64 = 75;
const DESC_OUT_ONE: u64 = 76;
const DESC_SOME: u64 = 77;

#[derive(LogicBlock)]
pub struct DmaRead {
    pub clock: Signal<In, Clock>,
    pub reset: Signal<In, Bit>,
    /// A request: IOVA, length in octets, a tag returned with its data.
    pub s_req_valid: Signal<In, Bit>,
    pub s_req_ready: Signal<Out, Bit>,
    pub s_req_addr: Signal<In, Bits<64>>,
    pub s_req_len: Signal<In, Bits<32>>,
    pub s_req_tag: Signal<In, Bits<8>>,
    pub m_axi_araddr: Signal<Out, Bits<64>>,
    pub m_axi_arlen: Signal<Out, Bits<8>>,
    pub m_axi_arsize: Signal<Out, Bits<3>>,
    pub m_axi_arburst: Signal<Out, Bits<2>>,
    pub m_axi_arvalid: Signal<Out, Bit>,
    pub m_axi_arready: Signal<In, Bit>,
    pub m_axi_rdata: Signal<In, Bits<64>>,
    pub m_axi_rresp: Signal<In, Bits<2>>,
    pub m_axi_rlast: Signal<In, Bit>,
    pub m_axi_rvalid: Signal<In, Bit>,
    pub m_axi_rready: Signal<Out, Bit>,
    /// The data: `tuser` = error << 8 | tag.
    pub m_axis_tdata: Signal<Out, Bits<64>>,
    pub m_axis_tkeep: Signal<Out, Bits<8>>,
    pub m_axis_tlast: Signal<Out, Bit>,
    pub m_axis_tuser: Signal<Out, Bits<9>>,
    pub m_axis_tvalid: Signal<Out, Bit>,
    pub m_axis_tready: Signal<In, Bit>,
    /// AR side: the request being cut into bursts.
    bursts: BurstSplit,
    /// Descriptors from the AR side to the R side.
    descs: RamFifo<DESC_BITS, QUEUE_BITS, { QUEUE_BITS + 1 }>,
    /// The queue's head in a register slice: the next request's descriptor, waiting beside
    /// the one being delivered.
    next_desc: SkidBuffer<DESC_BITS>,
    // R side: the request being delivered.
    active: DFF<Bit>,
    /// Where a bus beat's octets go, so that one shift places them: placed at octets
    /// 8..16 and moved down by `rshift` octets. For a first beat that skips the octets
    /// below the request's first, 8 + that many (nothing is held then); for the others
    /// 8 − `held`.
    rshift: DFF<Bits<4>>,
    out_left: DFF<Bits<32>>,
    /// `out_left` is at most 8: the next output beat is the request's last.
    out_one: DFF<Bit>,
    r_left: DFF<Bits<32>>,
    /// `r_left` is not zero, and is one: kept beside it so that no compare of it is on
    /// the path from a bus beat to the output.
    r_some: DFF<Bit>,
    r_one: DFF<Bit>,
    carry: DFF<Bits<64>>,
    held: DFF<Bits<4>>,
    flushing: DFF<Bit>,
    error: DFF<Bit>,
    tag: DFF<Bits<8>>,
    out_valid: DFF<Bit>,
    out_data: DFF<Bits<64>>,
    out_keep: DFF<Bits<8>>,
    out_last: DFF<Bit>,
    out_user: DFF<Bits<9>>,
    // Combinational.
    accept: Signal<Local, Bit>,
    total_beats: Signal<Local, Bits<32>>,
    head_desc: Signal<Local, Bits<DESC_BITS>>,
    load: Signal<Local, Bit>,
    start: Signal<Local, Bit>,
    take_r: Signal<Local, Bit>,
    combined: Signal<Local, Bits<128>>,
    avail: Signal<Local, Bits<4>>,
    emit: Signal<Local, Bit>,
    first_skips: Signal<Local, Bit>,
    emit_bytes: Signal<Local, Bits<32>>,
    keep_mask: Signal<Local, Bits<8>>,
    bus_beats: Signal<Local, Bits<32>>,
    lane_ones: Constant<Bits<8>>,
    at_len: Constant<Bits<8>>,
    at_tag: Constant<Bits<8>>,
    at_beats: Constant<Bits<8>>,
    at_one_beat: Constant<Bits<8>>,
    at_out_one: Constant<Bits<8>>,
    at_some: Constant<Bits<8>>,
}

impl Default for DmaRead {
    fn default() -> Self {
        DmaRead {
            clock: Default::default(),
            reset: Default::default(),
            s_req_valid: Default::default(),
            s_req_ready: Default::default(),
            s_req_addr: Default::default(),
            s_req_len: Default::default(),
            s_req_tag: Default::default(),
            m_axi_araddr: Default::default(),
            m_axi_arlen: Default::default(),
            m_axi_arsize: Default::default(),
            m_axi_arburst: Default::default(),
            m_axi_arvalid: Default::default(),
            m_axi_arready: Default::default(),
            m_axi_rdata: Default::default(),
            m_axi_rresp: Default::default(),
            m_axi_rlast: Default::default(),
            m_axi_rvalid: Default::default(),
            m_axi_rready: Default::default(),
            m_axis_tdata: Default::default(),
            m_axis_tkeep: Default::default(),
            m_axis_tlast: Default::default(),
            m_axis_tuser: Default::default(),
            m_axis_tvalid: Default::default(),
            m_axis_tready: Default::default(),
            bursts: Default::default(),
            descs: Default::default(),
            next_desc: Default::default(),
            active: Default::default(),
            rshift: Default::default(),
            out_left: Default::default(),
            out_one: Default::default(),
            r_left: Default::default(),
            r_some: Default::default(),
            r_one: Default::default(),
            carry: Default::default(),
            held: Default::default(),
            flushing: Default::default(),
            error: Default::default(),
            tag: Default::default(),
            out_valid: Default::default(),
            out_data: Default::default(),
            out_keep: Default::default(),
            out_last: Default::default(),
            out_user: Default::default(),
            accept: Default::default(),
            total_beats: Default::default(),
            head_desc: Default::default(),
            load: Default::default(),
            start: Default::default(),
            take_r: Default::default(),
            combined: Default::default(),
            avail: Default::default(),
            emit: Default::default(),
            first_skips: Default::default(),
            emit_bytes: Default::default(),
            keep_mask: Default::default(),
            bus_beats: Default::default(),
            lane_ones: Constant::new(0xFF_u64.to_bits()),
            at_len: constant(DESC_LEN),
            at_tag: constant(DESC_TAG),
            at_beats: constant(DESC_BEATS),
            at_one_beat: constant(DESC_ONE_BEAT),
            at_out_one: constant(DESC_OUT_ONE),
            at_some: constant(DESC_SOME),
        }
    }
}

impl Logic for DmaRead {
    #[hdl_gen]
    fn update(&mut self) {
        dff_setup!(
            self, clock, active, rshift, out_left, out_one, r_left, r_some, r_one, carry, held, flushing, error, tag,
            out_valid, out_data, out_keep, out_last, out_user
        );
        self.descs.clock.next = self.clock.val();
        self.descs.reset.next = self.reset.val();

        // AR side. A request is taken when the previous one is fully issued and its
        // descriptor has a place in the queue; an empty one makes no bursts.
        self.bursts.clock.next = self.clock.val();
        self.bursts.reset.next = self.reset.val();
        self.accept.next = self.s_req_valid.val() & self.bursts.s_ready.val() & self.descs.s_ready.val();
        self.s_req_ready.next = self.bursts.s_ready.val() & self.descs.s_ready.val();
        self.total_beats.next =
            (bit_cast::<32, 3>(self.s_req_addr.val().get_bits::<3>(0)) + self.s_req_len.val() + 7) >> 3;
        self.bursts.s_valid.next = self.accept.val() & self.s_req_len.val().any();
        self.bursts.s_addr.next = self.s_req_addr.val() & 0xFFFFFFFFFFFFFFF8_u64;
        self.bursts.s_beats.next = self.total_beats.val();
        self.bursts.m_ready.next = self.m_axi_arready.val();
        self.descs.s_valid.next = self.accept.val();
        self.bus_beats.next = 0.into();
        if self.s_req_len.val().any() {
            self.bus_beats.next = self.total_beats.val();
        }
        self.descs.s_data.next = bit_cast::<DESC_BITS, 3>(self.s_req_addr.val().get_bits::<3>(0))
            | (bit_cast::<DESC_BITS, 32>(self.s_req_len.val()) << self.at_len.val())
            | (bit_cast::<DESC_BITS, 8>(self.s_req_tag.val()) << self.at_tag.val())
            | (bit_cast::<DESC_BITS, 32>(self.bus_beats.val()) << self.at_beats.val())
            | (bit_cast::<DESC_BITS, 1>((self.bus_beats.val() == 1).into()) << self.at_one_beat.val())
            | (bit_cast::<DESC_BITS, 1>((self.s_req_len.val() <= 8).into()) << self.at_out_one.val())
            | (bit_cast::<DESC_BITS, 1>(self.s_req_len.val().any().into()) << self.at_some.val());
        self.m_axi_araddr.next = self.bursts.m_addr.val();
        self.m_axi_arlen.next = self.bursts.m_len.val();
        self.m_axi_arsize.next = 3.into();
        self.m_axi_arburst.next = 1.into();
        self.m_axi_arvalid.next = self.bursts.m_valid.val();

        // R side. The output register takes a beat when empty or being emptied.
        self.load.next = !self.out_valid.q.val() | self.m_axis_tready.val();
        if self.m_axis_tready.val() {
            self.out_valid.d.next = false;
        }
        self.next_desc.clock.next = self.clock.val();
        self.next_desc.reset.next = self.reset.val();
        self.next_desc.s_valid.next = self.descs.m_valid.val();
        self.next_desc.s_data.next = self.descs.m_data.val();
        self.descs.m_ready.next = self.next_desc.s_ready.val();
        self.head_desc.next = self.next_desc.m_data.val();
        // A beat from the bus joins the octets carried from the one before.
        self.take_r.next = self.active.q.val()
            & self.load.val()
            & !self.flushing.q.val()
            & self.r_some.q.val()
            & self.m_axi_rvalid.val();
        self.m_axi_rready.next = self.active.q.val() & self.load.val() & !self.flushing.q.val() & self.r_some.q.val();
        self.combined.next = bit_cast::<128, 64>(self.carry.q.val())
            | ((bit_cast::<128, 64>(self.m_axi_rdata.val()) << 64_u64)
                >> (bit_cast::<128, 4>(self.rshift.q.val()) << 3));
        // A first beat that skips octets moves them down by more than 8; the octets held
        // once a beat joins are 16 − `rshift` (8 − skipped, or `held` + 8).
        self.first_skips.next = self.rshift.q.val().get_bit(3) & self.rshift.q.val().get_bits::<3>(0).any();
        self.avail.next = bit_cast::<4, 5>(16_u64.to_bits::<5>() - bit_cast::<5, 4>(self.rshift.q.val()));
        if self.flushing.q.val() {
            self.combined.next = bit_cast::<128, 64>(self.carry.q.val());
            self.avail.next = self.held.q.val();
        }
        // Emit a full beat, or whatever is left at the end. A bus beat fills an output
        // beat unless it is a first one that skips octets (then nothing is held).
        self.emit.next = (self.take_r.val() & (!self.first_skips.val() | self.r_one.q.val()))
            | (self.active.q.val() & self.load.val() & self.flushing.q.val())
            | (self.active.q.val() & self.load.val() & !self.r_some.q.val() & !self.flushing.q.val());
        // Every beat but the last is full: one emitted early (`avail >= 8`) or while flushing
        // holds octets of this request only, so the last one's octets are `out_left`.
        self.emit_bytes.next = 8.into();
        if self.out_one.q.val() {
            self.emit_bytes.next = self.out_left.q.val();
        }
        self.keep_mask.next = !(self.lane_ones.val() << bit_cast::<8, 32>(self.emit_bytes.val()));
        if self.take_r.val() {
            self.r_left.d.next = self.r_left.q.val() - 1;
            self.r_some.d.next = !self.r_one.q.val();
            self.r_one.d.next = self.r_left.q.val() == 2;
            // After a first beat that skipped octets, 8 less as many are held.
            if self.first_skips.val() {
                self.rshift.d.next = self.rshift.q.val() - 8;
            }
            self.carry.d.next = self.combined.val().get_bits::<64>(0);
            self.held.d.next = self.avail.val();
            if self.m_axi_rresp.val().any() {
                self.error.d.next = true;
            }
        }
        if self.emit.val() {
            self.out_valid.d.next = true;
            self.out_data.d.next = self.combined.val().get_bits::<64>(0);
            self.out_keep.d.next = self.keep_mask.val();
            self.out_last.d.next = self.out_one.q.val();
            self.out_user.d.next = bit_cast::<9, 8>(self.tag.q.val());
            if self.error.q.val() | (self.take_r.val() & self.m_axi_rresp.val().any()) {
                self.out_user.d.next = bit_cast::<9, 8>(self.tag.q.val()) | 0x100_u64;
            }
            self.out_left.d.next = self.out_left.q.val() - 8;
            self.out_one.d.next = self.out_left.q.val() <= 16;
            self.carry.d.next = self.combined.val().get_bits::<64>(64);
            self.held.d.next = self.avail.val() - 8;
            // The last bus beat may leave octets for one more output beat.
            self.flushing.d.next = !self.out_one.q.val() & (self.flushing.q.val() | self.r_one.q.val());
            self.active.d.next = !self.out_one.q.val();
        }
        // The next request starts when none is active, or as the active one emits its last
        // beat; its first bus beat may then be taken in the next cycle.
        self.start.next =
            self.next_desc.m_valid.val() & (!self.active.q.val() | (self.emit.val() & self.out_one.q.val()));
        self.next_desc.m_ready.next = self.start.val();
        if self.start.val() {
            self.active.d.next = true;
            self.rshift.d.next = bit_cast::<4, 3>(self.head_desc.val().get_bits::<3>(0)) | 8_u64;
            self.out_left.d.next = self.head_desc.val().get_bits::<32>(self.at_len.val().index());
            self.out_one.d.next = self.head_desc.val().get_bit(self.at_out_one.val().index());
            self.tag.d.next = self.head_desc.val().get_bits::<8>(self.at_tag.val().index());
            self.r_left.d.next = self.head_desc.val().get_bits::<32>(self.at_beats.val().index());
            self.r_some.d.next = self.head_desc.val().get_bit(self.at_some.val().index());
            self.r_one.d.next = self.head_desc.val().get_bit(self.at_one_beat.val().index());
            self.held.d.next = 0.into();
            self.carry.d.next = 0.into();
            self.flushing.d.next = false;
            self.error.d.next = false;
        }
        if self.reset.val() {
            self.active.d.next = false;
            self.flushing.d.next = false;
            self.out_valid.d.next = false;
        }
        self.m_axis_tdata.next = self.out_data.q.val();
        self.m_axis_tkeep.next = self.out_keep.q.val();
        self.m_axis_tlast.next = self.out_last.q.val();
        self.m_axis_tuser.next = self.out_user.q.val();
        self.m_axis_tvalid.next = self.out_valid.q.val();
    }
}
