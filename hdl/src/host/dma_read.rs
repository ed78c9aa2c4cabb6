//! DMA read: (IOVA, length) requests in, the octets out as a stream, lane 0 first.
//!
//! Requests may start at any octet and have any length. The AR side turns each into INCR
//! bursts of 64-bit beats ([`BurstSplit`]), and keeps issuing while earlier data is still on its way: up to
//! `QUEUE` requests are in flight, their descriptors waiting in a small queue for the R
//! side, which realigns the beats so that the request's first octet is in lane 0. All
//! reads use one AXI ID, so data comes back in request order.
//!
//! A zero-length request makes one empty beat with `tlast` and no bus traffic. An error
//! response on any beat of a request sets the error bit of `m_axis_tuser` from that beat
//! to its last, whose data must then not be used.
use rust_hdl::prelude::*;

use super::BurstSplit;

/// Requests in flight at once.
pub const QUEUE: usize = 4;

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
    // Descriptors from the AR side to the R side: offset (3 bits), length (32), tag (8).
    queue: [DFF<Bits<43>>; QUEUE],
    head: DFF<Bits<3>>,
    tail: DFF<Bits<3>>,
    // R side: the request being delivered.
    active: DFF<Bit>,
    skip: DFF<Bits<3>>,
    out_left: DFF<Bits<32>>,
    r_left: DFF<Bits<32>>,
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
    queued: Signal<Local, Bits<3>>,
    accept: Signal<Local, Bit>,
    total_beats: Signal<Local, Bits<32>>,
    head_desc: Signal<Local, Bits<43>>,
    load: Signal<Local, Bit>,
    take_r: Signal<Local, Bit>,
    shifted: Signal<Local, Bits<64>>,
    combined: Signal<Local, Bits<128>>,
    avail: Signal<Local, Bits<4>>,
    emit: Signal<Local, Bit>,
    emit_bytes: Signal<Local, Bits<32>>,
    keep_mask: Signal<Local, Bits<8>>,
    lane_ones: Constant<Bits<8>>,
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
            queue: Default::default(),
            head: Default::default(),
            tail: Default::default(),
            active: Default::default(),
            skip: Default::default(),
            out_left: Default::default(),
            r_left: Default::default(),
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
            queued: Default::default(),
            accept: Default::default(),
            total_beats: Default::default(),
            head_desc: Default::default(),
            load: Default::default(),
            take_r: Default::default(),
            shifted: Default::default(),
            combined: Default::default(),
            avail: Default::default(),
            emit: Default::default(),
            emit_bytes: Default::default(),
            keep_mask: Default::default(),
            lane_ones: Constant::new(0xFF_u64.to_bits()),
        }
    }
}

impl Logic for DmaRead {
    #[hdl_gen]
    fn update(&mut self) {
        dff_setup!(
            self, clock, head, tail, active, skip, out_left, r_left, carry, held, flushing, error, tag, out_valid,
            out_data, out_keep, out_last, out_user
        );
        for i in 0..QUEUE {
            self.queue[i].clock.next = self.clock.val();
            self.queue[i].d.next = self.queue[i].q.val();
        }

        // AR side. A request is taken when the previous one is fully issued and its
        // descriptor has a place in the queue; an empty one makes no bursts.
        self.bursts.clock.next = self.clock.val();
        self.bursts.reset.next = self.reset.val();
        self.queued.next = self.tail.q.val() - self.head.q.val();
        self.accept.next = self.s_req_valid.val() & self.bursts.s_ready.val() & (self.queued.val() < 4);
        self.s_req_ready.next = self.bursts.s_ready.val() & (self.queued.val() < 4);
        self.total_beats.next =
            (bit_cast::<32, 3>(self.s_req_addr.val().get_bits::<3>(0)) + self.s_req_len.val() + 7) >> 3;
        self.bursts.s_valid.next = self.accept.val() & self.s_req_len.val().any();
        self.bursts.s_addr.next = self.s_req_addr.val() & 0xFFFFFFFFFFFFFFF8_u64;
        self.bursts.s_beats.next = self.total_beats.val();
        self.bursts.m_ready.next = self.m_axi_arready.val();
        if self.accept.val() {
            for i in 0..QUEUE {
                if self.tail.q.val().get_bits::<2>(0).index() == i {
                    self.queue[i].d.next = bit_cast::<43, 3>(self.s_req_addr.val().get_bits::<3>(0))
                        | (bit_cast::<43, 32>(self.s_req_len.val()) << 3)
                        | (bit_cast::<43, 8>(self.s_req_tag.val()) << 35);
                }
            }
            self.tail.d.next = self.tail.q.val() + 1;
        }
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
        self.head_desc.next = self.queue[0].q.val();
        for i in 1..QUEUE {
            if self.head.q.val().get_bits::<2>(0).index() == i {
                self.head_desc.next = self.queue[i].q.val();
            }
        }
        if !self.active.q.val() & (self.queued.val() != 0) {
            self.active.d.next = true;
            self.head.d.next = self.head.q.val() + 1;
            self.skip.d.next = self.head_desc.val().get_bits::<3>(0);
            self.out_left.d.next = self.head_desc.val().get_bits::<32>(3);
            self.tag.d.next = self.head_desc.val().get_bits::<8>(35);
            // Bus beats to come: none for an empty request, whatever its start octet.
            self.r_left.d.next = 0.into();
            if self.head_desc.val().get_bits::<32>(3).any() {
                self.r_left.d.next = (bit_cast::<32, 3>(self.head_desc.val().get_bits::<3>(0))
                    + self.head_desc.val().get_bits::<32>(3)
                    + 7)
                    >> 3;
            }
            self.held.d.next = 0.into();
            self.carry.d.next = 0.into();
            self.flushing.d.next = false;
            self.error.d.next = false;
        }
        // A beat from the bus joins the octets carried from the one before.
        self.take_r.next = self.active.q.val()
            & self.load.val()
            & !self.flushing.q.val()
            & self.r_left.q.val().any()
            & self.m_axi_rvalid.val();
        self.m_axi_rready.next =
            self.active.q.val() & self.load.val() & !self.flushing.q.val() & self.r_left.q.val().any();
        self.shifted.next = self.m_axi_rdata.val() >> (bit_cast::<64, 3>(self.skip.q.val()) << 3);
        self.combined.next = bit_cast::<128, 64>(self.carry.q.val())
            | (bit_cast::<128, 64>(self.shifted.val()) << (bit_cast::<128, 4>(self.held.q.val()) << 3));
        self.avail.next = self.held.q.val() + 8 - bit_cast::<4, 3>(self.skip.q.val());
        if self.flushing.q.val() {
            self.combined.next = bit_cast::<128, 64>(self.carry.q.val());
            self.avail.next = self.held.q.val();
        }
        // Emit a full beat, or whatever is left at the end.
        self.emit.next = (self.take_r.val() & ((self.avail.val() >= 8) | (self.r_left.q.val() == 1)))
            | (self.active.q.val() & self.load.val() & self.flushing.q.val())
            | (self.active.q.val() & self.load.val() & !self.r_left.q.val().any() & !self.flushing.q.val());
        self.emit_bytes.next = self.out_left.q.val();
        if self.emit_bytes.val() > 8 {
            self.emit_bytes.next = 8.into();
        }
        if bit_cast::<32, 4>(self.avail.val()) < self.emit_bytes.val() {
            self.emit_bytes.next = bit_cast::<32, 4>(self.avail.val());
        }
        self.keep_mask.next = !(self.lane_ones.val() << bit_cast::<8, 32>(self.emit_bytes.val()));
        if self.take_r.val() {
            self.r_left.d.next = self.r_left.q.val() - 1;
            self.skip.d.next = 0.into();
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
            self.out_last.d.next = self.out_left.q.val() == self.emit_bytes.val();
            self.out_user.d.next = bit_cast::<9, 8>(self.tag.q.val());
            if self.error.q.val() | (self.take_r.val() & self.m_axi_rresp.val().any()) {
                self.out_user.d.next = bit_cast::<9, 8>(self.tag.q.val()) | 0x100_u64;
            }
            self.out_left.d.next = self.out_left.q.val() - self.emit_bytes.val();
            self.carry.d.next = self.combined.val().get_bits::<64>(64);
            self.held.d.next = self.avail.val() - bit_cast::<4, 32>(self.emit_bytes.val());
            if self.avail.val() >= 8 {
                self.held.d.next = self.avail.val() - 8;
            }
            // The last bus beat may leave octets for one more output beat.
            self.flushing.d.next =
                (self.out_left.q.val() != self.emit_bytes.val()) & (self.flushing.q.val() | (self.r_left.q.val() == 1));
            self.active.d.next = self.out_left.q.val() != self.emit_bytes.val();
        }
        if self.reset.val() {
            self.head.d.next = 0.into();
            self.tail.d.next = 0.into();
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
