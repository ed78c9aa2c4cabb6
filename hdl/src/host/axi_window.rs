//! An address window in front of the DMA master's AXI4 port: bursts whose address lies in
//! `[base, base + 2^AB)` go to device memory (`d_axi_*`, a [`super::DevMem`]), all others
//! to the host (`m_axi_*`). `base` is aligned to `2^AB` and `2^AB` is at least 4 KiB, so no
//! burst straddles the window's edge. Addresses are passed on unchanged (the device memory
//! uses only their low bits).
//!
//! The master uses one ID and expects responses in order, while the two sides answer
//! independently. So each AR pushes its side into a route queue, and R beats are taken
//! only from the side at its head, which is popped at `rlast`; each AW pushes its side
//! into a W queue (popped at `wlast`, steering the W beats) and a B queue (steering the B
//! responses). A W beat therefore waits until its burst's AW has been taken (two cycles
//! later: the address slice and the queues are registers), which AXI allows; the DMA
//! master raises AW without waiting for W. An address waits while its queue is full (32
//! bursts read and 32 awaiting B, 8 awaiting their W beats), and nothing is taken in
//! reset.
//!
//! Each address enters through a register slice ([`SkidBuffer`]) with its side decided on
//! the way in, so `s_axi_arready` and `s_axi_awready` are registers and the master's
//! address never runs through the compare and the chosen side's ready back into itself.
//! That costs an address one cycle; beats and responses pass through combinationally,
//! adding no cycle, and a side's valid never depends on the other side's ready.
use rust_hdl::prelude::*;

use crate::common::{constant, BitFifo, SkidBuffer};

/// Bursts in flight each way at most: `1 << ROUTE_BITS`. Thirty-two, as the DMA read
/// engine keeps: small bursts at a 200-cycle host memory need that many to use the bus
/// (Little's law); eight held 64-octet RDMA Writes to 0.024 messages per cycle.
const ROUTE_BITS: usize = 5;
/// Bursts whose W beats are still to come, at most: `1 << W_ROUTE_BITS`.
const W_ROUTE_BITS: usize = 3;

/// An address in its register slice: `addr` (64 bits) from bit 0, then `len`, `size`,
/// `burst`, and the side it goes to (1: device).
const AX_LEN: u64 = 64;
const AX_SIZE: u64 = AX_LEN + 8;
const AX_BURST: u64 = AX_SIZE + 3;
const AX_DEV: u64 = AX_BURST + 2;
const AX_BITS: usize = AX_DEV as usize + 1;

/// `AB` = address bits inside the window.
#[derive(LogicBlock)]
pub struct AxiWindow<const AB: usize> {
    pub clock: Signal<In, Clock>,
    pub reset: Signal<In, Bit>,
    pub s_axi_awaddr: Signal<In, Bits<64>>,
    pub s_axi_awlen: Signal<In, Bits<8>>,
    pub s_axi_awsize: Signal<In, Bits<3>>,
    pub s_axi_awburst: Signal<In, Bits<2>>,
    pub s_axi_awvalid: Signal<In, Bit>,
    pub s_axi_awready: Signal<Out, Bit>,
    pub s_axi_wdata: Signal<In, Bits<64>>,
    pub s_axi_wstrb: Signal<In, Bits<8>>,
    pub s_axi_wlast: Signal<In, Bit>,
    pub s_axi_wvalid: Signal<In, Bit>,
    pub s_axi_wready: Signal<Out, Bit>,
    pub s_axi_bresp: Signal<Out, Bits<2>>,
    pub s_axi_bvalid: Signal<Out, Bit>,
    pub s_axi_bready: Signal<In, Bit>,
    pub s_axi_araddr: Signal<In, Bits<64>>,
    pub s_axi_arlen: Signal<In, Bits<8>>,
    pub s_axi_arsize: Signal<In, Bits<3>>,
    pub s_axi_arburst: Signal<In, Bits<2>>,
    pub s_axi_arvalid: Signal<In, Bit>,
    pub s_axi_arready: Signal<Out, Bit>,
    pub s_axi_rdata: Signal<Out, Bits<64>>,
    pub s_axi_rresp: Signal<Out, Bits<2>>,
    pub s_axi_rlast: Signal<Out, Bit>,
    pub s_axi_rvalid: Signal<Out, Bit>,
    pub s_axi_rready: Signal<In, Bit>,
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
    pub d_axi_awaddr: Signal<Out, Bits<64>>,
    pub d_axi_awlen: Signal<Out, Bits<8>>,
    pub d_axi_awsize: Signal<Out, Bits<3>>,
    pub d_axi_awburst: Signal<Out, Bits<2>>,
    pub d_axi_awvalid: Signal<Out, Bit>,
    pub d_axi_awready: Signal<In, Bit>,
    pub d_axi_wdata: Signal<Out, Bits<64>>,
    pub d_axi_wstrb: Signal<Out, Bits<8>>,
    pub d_axi_wlast: Signal<Out, Bit>,
    pub d_axi_wvalid: Signal<Out, Bit>,
    pub d_axi_wready: Signal<In, Bit>,
    pub d_axi_bresp: Signal<In, Bits<2>>,
    pub d_axi_bvalid: Signal<In, Bit>,
    pub d_axi_bready: Signal<Out, Bit>,
    pub d_axi_araddr: Signal<Out, Bits<64>>,
    pub d_axi_arlen: Signal<Out, Bits<8>>,
    pub d_axi_arsize: Signal<Out, Bits<3>>,
    pub d_axi_arburst: Signal<Out, Bits<2>>,
    pub d_axi_arvalid: Signal<Out, Bit>,
    pub d_axi_arready: Signal<In, Bit>,
    pub d_axi_rdata: Signal<In, Bits<64>>,
    pub d_axi_rresp: Signal<In, Bits<2>>,
    pub d_axi_rlast: Signal<In, Bit>,
    pub d_axi_rvalid: Signal<In, Bit>,
    pub d_axi_rready: Signal<Out, Bit>,
    /// The side (1: device) of every AR whose R beats are not all through: as many as
    /// the host memory's round trip needs ([`ROUTE_BITS`]).
    /// The addresses as taken, each with its side.
    ar_in: SkidBuffer<AX_BITS>,
    aw_in: SkidBuffer<AX_BITS>,
    ar_route: BitFifo<{ 1 << ROUTE_BITS }>,
    /// The side of every AW whose W beats are not all through: eight (the DMA master sends
    /// the beats right behind their AW), its room and head bit registers as the others'.
    w_route: BitFifo<{ 1 << W_ROUTE_BITS }>,
    /// The side of every AW whose B is not through: a round trip's worth too.
    b_route: BitFifo<{ 1 << ROUTE_BITS }>,
    base: Constant<Bits<64>>,
    /// The address bits that select the window (63..AB).
    window_mask: Constant<Bits<64>>,
    at_len: Constant<Bits<7>>,
    at_size: Constant<Bits<7>>,
    at_burst: Constant<Bits<7>>,
    at_dev: Constant<Bits<7>>,
    dev_flag: Constant<Bits<AX_BITS>>,
    // Combinational.
    /// An address's fields packed, on the way in (`*_fields`) and out (`ar`, `aw`).
    ar_fields: Signal<Local, Bits<AX_BITS>>,
    aw_fields: Signal<Local, Bits<AX_BITS>>,
    ar: Signal<Local, Bits<AX_BITS>>,
    aw: Signal<Local, Bits<AX_BITS>>,
    ar_dev: Signal<Local, Bit>,
    ar_room: Signal<Local, Bit>,
    ar_go: Signal<Local, Bit>,
    r_dev: Signal<Local, Bit>,
    r_go: Signal<Local, Bit>,
    aw_dev: Signal<Local, Bit>,
    aw_room: Signal<Local, Bit>,
    aw_go: Signal<Local, Bit>,
    w_dev: Signal<Local, Bit>,
    w_go: Signal<Local, Bit>,
    b_dev: Signal<Local, Bit>,
    b_go: Signal<Local, Bit>,
}

impl<const AB: usize> AxiWindow<AB> {
    /// A window of `2^AB` octets at `base`.
    pub fn new(base: u64) -> Self {
        const { assert!(AB >= 12 && AB < 64) };
        let low = (1_u64 << AB) - 1;
        assert_eq!(base & low, 0, "window base {base:#x} not aligned to 2^{AB}");
        AxiWindow {
            clock: Default::default(),
            reset: Default::default(),
            s_axi_awaddr: Default::default(),
            s_axi_awlen: Default::default(),
            s_axi_awsize: Default::default(),
            s_axi_awburst: Default::default(),
            s_axi_awvalid: Default::default(),
            s_axi_awready: Default::default(),
            s_axi_wdata: Default::default(),
            s_axi_wstrb: Default::default(),
            s_axi_wlast: Default::default(),
            s_axi_wvalid: Default::default(),
            s_axi_wready: Default::default(),
            s_axi_bresp: Default::default(),
            s_axi_bvalid: Default::default(),
            s_axi_bready: Default::default(),
            s_axi_araddr: Default::default(),
            s_axi_arlen: Default::default(),
            s_axi_arsize: Default::default(),
            s_axi_arburst: Default::default(),
            s_axi_arvalid: Default::default(),
            s_axi_arready: Default::default(),
            s_axi_rdata: Default::default(),
            s_axi_rresp: Default::default(),
            s_axi_rlast: Default::default(),
            s_axi_rvalid: Default::default(),
            s_axi_rready: Default::default(),
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
            d_axi_awaddr: Default::default(),
            d_axi_awlen: Default::default(),
            d_axi_awsize: Default::default(),
            d_axi_awburst: Default::default(),
            d_axi_awvalid: Default::default(),
            d_axi_awready: Default::default(),
            d_axi_wdata: Default::default(),
            d_axi_wstrb: Default::default(),
            d_axi_wlast: Default::default(),
            d_axi_wvalid: Default::default(),
            d_axi_wready: Default::default(),
            d_axi_bresp: Default::default(),
            d_axi_bvalid: Default::default(),
            d_axi_bready: Default::default(),
            d_axi_araddr: Default::default(),
            d_axi_arlen: Default::default(),
            d_axi_arsize: Default::default(),
            d_axi_arburst: Default::default(),
            d_axi_arvalid: Default::default(),
            d_axi_arready: Default::default(),
            d_axi_rdata: Default::default(),
            d_axi_rresp: Default::default(),
            d_axi_rlast: Default::default(),
            d_axi_rvalid: Default::default(),
            d_axi_rready: Default::default(),
            ar_in: Default::default(),
            aw_in: Default::default(),
            ar_route: Default::default(),
            w_route: Default::default(),
            b_route: Default::default(),
            base: constant(base),
            window_mask: constant(!low),
            at_len: constant(AX_LEN),
            at_size: constant(AX_SIZE),
            at_burst: constant(AX_BURST),
            at_dev: constant(AX_DEV),
            dev_flag: Constant::new(Bits::<AX_BITS>::from(1_u64) << AX_DEV),
            ar_fields: Default::default(),
            aw_fields: Default::default(),
            ar: Default::default(),
            aw: Default::default(),
            ar_dev: Default::default(),
            ar_room: Default::default(),
            ar_go: Default::default(),
            r_dev: Default::default(),
            r_go: Default::default(),
            aw_dev: Default::default(),
            aw_room: Default::default(),
            aw_go: Default::default(),
            w_dev: Default::default(),
            w_go: Default::default(),
            b_dev: Default::default(),
            b_go: Default::default(),
        }
    }
}

impl<const AB: usize> Logic for AxiWindow<AB> {
    #[hdl_gen]
    fn update(&mut self) {
        self.ar_route.clock.next = self.clock.val();
        self.ar_route.reset.next = self.reset.val();
        self.w_route.clock.next = self.clock.val();
        self.w_route.reset.next = self.reset.val();
        self.b_route.clock.next = self.clock.val();
        self.b_route.reset.next = self.reset.val();

        // ---- AR into its slice with its side, then to that side, the side queued for
        // the R beats.
        self.ar_in.clock.next = self.clock.val();
        self.ar_in.reset.next = self.reset.val();
        self.ar_in.s_valid.next = self.s_axi_arvalid.val();
        self.ar_fields.next = bit_cast::<AX_BITS, 64>(self.s_axi_araddr.val())
            | (bit_cast::<AX_BITS, 8>(self.s_axi_arlen.val()) << self.at_len.val())
            | (bit_cast::<AX_BITS, 3>(self.s_axi_arsize.val()) << self.at_size.val())
            | (bit_cast::<AX_BITS, 2>(self.s_axi_arburst.val()) << self.at_burst.val());
        self.ar_in.s_data.next = self.ar_fields.val();
        if (self.s_axi_araddr.val() & self.window_mask.val()) == self.base.val() {
            self.ar_in.s_data.next = self.ar_fields.val() | self.dev_flag.val();
        }
        self.s_axi_arready.next = self.ar_in.s_ready.val() & !self.reset.val();
        self.ar.next = self.ar_in.m_data.val();
        self.ar_dev.next = self.ar.val().get_bit(self.at_dev.val().index());
        self.ar_room.next = self.ar_route.s_ready.val() & !self.reset.val();
        self.m_axi_araddr.next = self.ar.val().get_bits::<64>(0);
        self.m_axi_arlen.next = self.ar.val().get_bits::<8>(self.at_len.val().index());
        self.m_axi_arsize.next = self.ar.val().get_bits::<3>(self.at_size.val().index());
        self.m_axi_arburst.next = self.ar.val().get_bits::<2>(self.at_burst.val().index());
        self.m_axi_arvalid.next = self.ar_in.m_valid.val() & self.ar_room.val() & !self.ar_dev.val();
        self.d_axi_araddr.next = self.ar.val().get_bits::<64>(0);
        self.d_axi_arlen.next = self.ar.val().get_bits::<8>(self.at_len.val().index());
        self.d_axi_arsize.next = self.ar.val().get_bits::<3>(self.at_size.val().index());
        self.d_axi_arburst.next = self.ar.val().get_bits::<2>(self.at_burst.val().index());
        self.d_axi_arvalid.next = self.ar_in.m_valid.val() & self.ar_room.val() & self.ar_dev.val();
        self.ar_go.next = self.ar_in.m_valid.val() & self.ar_room.val() & self.m_axi_arready.val();
        if self.ar_dev.val() {
            self.ar_go.next = self.ar_in.m_valid.val() & self.ar_room.val() & self.d_axi_arready.val();
        }
        self.ar_in.m_ready.next = self.ar_go.val();
        self.ar_route.s_valid.next = self.ar_go.val();
        self.ar_route.s_data.next = self.ar_dev.val();

        // ---- R beats from the side of the oldest AR only.
        self.r_dev.next = self.ar_route.m_data.val();
        self.s_axi_rvalid.next = self.ar_route.m_valid.val() & self.m_axi_rvalid.val();
        self.s_axi_rdata.next = self.m_axi_rdata.val();
        self.s_axi_rresp.next = self.m_axi_rresp.val();
        self.s_axi_rlast.next = self.m_axi_rlast.val();
        if self.r_dev.val() {
            self.s_axi_rvalid.next = self.ar_route.m_valid.val() & self.d_axi_rvalid.val();
            self.s_axi_rdata.next = self.d_axi_rdata.val();
            self.s_axi_rresp.next = self.d_axi_rresp.val();
            self.s_axi_rlast.next = self.d_axi_rlast.val();
        }
        self.m_axi_rready.next = self.s_axi_rready.val() & self.ar_route.m_valid.val() & !self.r_dev.val();
        self.d_axi_rready.next = self.s_axi_rready.val() & self.ar_route.m_valid.val() & self.r_dev.val();
        self.r_go.next =
            self.ar_route.m_valid.val() & self.s_axi_rready.val() & self.m_axi_rvalid.val() & self.m_axi_rlast.val();
        if self.r_dev.val() {
            self.r_go.next = self.ar_route.m_valid.val()
                & self.s_axi_rready.val()
                & self.d_axi_rvalid.val()
                & self.d_axi_rlast.val();
        }
        self.ar_route.m_ready.next = self.r_go.val();

        // ---- AW into its slice with its side, then to that side, the side queued for
        // the W beats and for the B response.
        self.aw_in.clock.next = self.clock.val();
        self.aw_in.reset.next = self.reset.val();
        self.aw_in.s_valid.next = self.s_axi_awvalid.val();
        self.aw_fields.next = bit_cast::<AX_BITS, 64>(self.s_axi_awaddr.val())
            | (bit_cast::<AX_BITS, 8>(self.s_axi_awlen.val()) << self.at_len.val())
            | (bit_cast::<AX_BITS, 3>(self.s_axi_awsize.val()) << self.at_size.val())
            | (bit_cast::<AX_BITS, 2>(self.s_axi_awburst.val()) << self.at_burst.val());
        self.aw_in.s_data.next = self.aw_fields.val();
        if (self.s_axi_awaddr.val() & self.window_mask.val()) == self.base.val() {
            self.aw_in.s_data.next = self.aw_fields.val() | self.dev_flag.val();
        }
        self.s_axi_awready.next = self.aw_in.s_ready.val() & !self.reset.val();
        self.aw.next = self.aw_in.m_data.val();
        self.aw_dev.next = self.aw.val().get_bit(self.at_dev.val().index());
        self.aw_room.next = self.w_route.s_ready.val() & self.b_route.s_ready.val() & !self.reset.val();
        self.m_axi_awaddr.next = self.aw.val().get_bits::<64>(0);
        self.m_axi_awlen.next = self.aw.val().get_bits::<8>(self.at_len.val().index());
        self.m_axi_awsize.next = self.aw.val().get_bits::<3>(self.at_size.val().index());
        self.m_axi_awburst.next = self.aw.val().get_bits::<2>(self.at_burst.val().index());
        self.m_axi_awvalid.next = self.aw_in.m_valid.val() & self.aw_room.val() & !self.aw_dev.val();
        self.d_axi_awaddr.next = self.aw.val().get_bits::<64>(0);
        self.d_axi_awlen.next = self.aw.val().get_bits::<8>(self.at_len.val().index());
        self.d_axi_awsize.next = self.aw.val().get_bits::<3>(self.at_size.val().index());
        self.d_axi_awburst.next = self.aw.val().get_bits::<2>(self.at_burst.val().index());
        self.d_axi_awvalid.next = self.aw_in.m_valid.val() & self.aw_room.val() & self.aw_dev.val();
        self.aw_go.next = self.aw_in.m_valid.val() & self.aw_room.val() & self.m_axi_awready.val();
        if self.aw_dev.val() {
            self.aw_go.next = self.aw_in.m_valid.val() & self.aw_room.val() & self.d_axi_awready.val();
        }
        self.aw_in.m_ready.next = self.aw_go.val();
        self.w_route.s_valid.next = self.aw_go.val();
        self.w_route.s_data.next = self.aw_dev.val();
        self.b_route.s_valid.next = self.aw_go.val();
        self.b_route.s_data.next = self.aw_dev.val();

        // ---- W beats to the side of the oldest AW still receiving data.
        self.w_dev.next = self.w_route.m_data.val();
        self.m_axi_wdata.next = self.s_axi_wdata.val();
        self.m_axi_wstrb.next = self.s_axi_wstrb.val();
        self.m_axi_wlast.next = self.s_axi_wlast.val();
        self.m_axi_wvalid.next = self.s_axi_wvalid.val() & self.w_route.m_valid.val() & !self.w_dev.val();
        self.d_axi_wdata.next = self.s_axi_wdata.val();
        self.d_axi_wstrb.next = self.s_axi_wstrb.val();
        self.d_axi_wlast.next = self.s_axi_wlast.val();
        self.d_axi_wvalid.next = self.s_axi_wvalid.val() & self.w_route.m_valid.val() & self.w_dev.val();
        self.s_axi_wready.next = self.w_route.m_valid.val() & self.m_axi_wready.val();
        if self.w_dev.val() {
            self.s_axi_wready.next = self.w_route.m_valid.val() & self.d_axi_wready.val();
        }
        self.w_go.next =
            self.s_axi_wvalid.val() & self.w_route.m_valid.val() & self.s_axi_wlast.val() & self.m_axi_wready.val();
        if self.w_dev.val() {
            self.w_go.next =
                self.s_axi_wvalid.val() & self.w_route.m_valid.val() & self.s_axi_wlast.val() & self.d_axi_wready.val();
        }
        self.w_route.m_ready.next = self.w_go.val();

        // ---- B responses from the side of the oldest AW not answered.
        self.b_dev.next = self.b_route.m_data.val();
        self.s_axi_bvalid.next = self.b_route.m_valid.val() & self.m_axi_bvalid.val();
        self.s_axi_bresp.next = self.m_axi_bresp.val();
        if self.b_dev.val() {
            self.s_axi_bvalid.next = self.b_route.m_valid.val() & self.d_axi_bvalid.val();
            self.s_axi_bresp.next = self.d_axi_bresp.val();
        }
        self.m_axi_bready.next = self.s_axi_bready.val() & self.b_route.m_valid.val() & !self.b_dev.val();
        self.d_axi_bready.next = self.s_axi_bready.val() & self.b_route.m_valid.val() & self.b_dev.val();
        self.b_go.next = self.b_route.m_valid.val() & self.s_axi_bready.val() & self.m_axi_bvalid.val();
        if self.b_dev.val() {
            self.b_go.next = self.b_route.m_valid.val() & self.s_axi_bready.val() & self.d_axi_bvalid.val();
        }
        self.b_route.m_ready.next = self.b_go.val();
    }
}
