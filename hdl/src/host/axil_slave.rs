//! AXI4-Lite slave to a simple register bus: BAR0 as the host sees it.
//!
//! A write completes when both its address and its data have arrived, in either order;
//! the register file sees it as a one-cycle `wr_en` pulse. A read becomes a one-cycle
//! `rd_en` pulse; `rd_addr` stays until the read is over, and `rd_data` is taken the cycle
//! after `rd_en` (a mux of registers, or a block RAM's synchronous read: no side effects),
//! and goes out on the R channel the cycle after that.
//! One transaction of each kind is in flight at a time: BAR0 traffic is a few accesses
//! per work request at most, and the host waits for each read anyway.
use rust_hdl::prelude::*;

/// `A` = address bits.
#[derive(LogicBlock, Default)]
pub struct AxilSlave<const A: usize> {
    pub clock: Signal<In, Clock>,
    pub reset: Signal<In, Bit>,
    pub s_axil_awaddr: Signal<In, Bits<A>>,
    pub s_axil_awvalid: Signal<In, Bit>,
    pub s_axil_awready: Signal<Out, Bit>,
    pub s_axil_wdata: Signal<In, Bits<32>>,
    pub s_axil_wstrb: Signal<In, Bits<4>>,
    pub s_axil_wvalid: Signal<In, Bit>,
    pub s_axil_wready: Signal<Out, Bit>,
    pub s_axil_bresp: Signal<Out, Bits<2>>,
    pub s_axil_bvalid: Signal<Out, Bit>,
    pub s_axil_bready: Signal<In, Bit>,
    pub s_axil_araddr: Signal<In, Bits<A>>,
    pub s_axil_arvalid: Signal<In, Bit>,
    pub s_axil_arready: Signal<Out, Bit>,
    pub s_axil_rdata: Signal<Out, Bits<32>>,
    pub s_axil_rresp: Signal<Out, Bits<2>>,
    pub s_axil_rvalid: Signal<Out, Bit>,
    pub s_axil_rready: Signal<In, Bit>,
    /// One cycle per completed write.
    pub wr_en: Signal<Out, Bit>,
    pub wr_addr: Signal<Out, Bits<A>>,
    pub wr_data: Signal<Out, Bits<32>>,
    pub wr_strb: Signal<Out, Bits<4>>,
    /// One cycle per read; `rd_data` must answer `rd_addr` in the next cycle.
    pub rd_en: Signal<Out, Bit>,
    pub rd_addr: Signal<Out, Bits<A>>,
    pub rd_data: Signal<In, Bits<32>>,
    aw_held: DFF<Bit>,
    aw_addr: DFF<Bits<A>>,
    w_held: DFF<Bit>,
    w_data: DFF<Bits<32>>,
    w_strb: DFF<Bits<4>>,
    b_pending: DFF<Bit>,
    wr_pulse: DFF<Bit>,
    ar_busy: DFF<Bit>,
    rd_pulse: DFF<Bit>,
    rd_answer: DFF<Bit>,
    ar_addr: DFF<Bits<A>>,
    r_valid: DFF<Bit>,
    r_data: DFF<Bits<32>>,
    fire: Signal<Local, Bit>,
}

impl<const A: usize> Logic for AxilSlave<A> {
    #[hdl_gen]
    fn update(&mut self) {
        dff_setup!(
            self, clock, aw_held, aw_addr, w_held, w_data, w_strb, b_pending, wr_pulse, ar_busy, rd_pulse, rd_answer,
            ar_addr, r_valid, r_data
        );
        // Nothing is taken in reset (which may outlast the bus's own by a cycle or two).
        // Write channel: hold address and data until both are here and B is free.
        self.s_axil_awready.next = !self.aw_held.q.val() & !self.reset.val();
        self.s_axil_wready.next = !self.w_held.q.val() & !self.reset.val();
        if self.s_axil_awvalid.val() & !self.aw_held.q.val() {
            self.aw_held.d.next = true;
            self.aw_addr.d.next = self.s_axil_awaddr.val();
        }
        if self.s_axil_wvalid.val() & !self.w_held.q.val() {
            self.w_held.d.next = true;
            self.w_data.d.next = self.s_axil_wdata.val();
            self.w_strb.d.next = self.s_axil_wstrb.val();
        }
        self.fire.next = self.aw_held.q.val() & self.w_held.q.val() & !self.b_pending.q.val();
        self.wr_pulse.d.next = self.fire.val();
        if self.fire.val() {
            self.aw_held.d.next = false;
            self.w_held.d.next = false;
            self.b_pending.d.next = true;
        }
        if self.b_pending.q.val() & self.s_axil_bready.val() {
            self.b_pending.d.next = false;
        }
        // Read channel: address, a cycle for the register file to look, one to answer, R.
        self.s_axil_arready.next = !self.ar_busy.q.val() & !self.reset.val();
        self.rd_pulse.d.next = false;
        if self.s_axil_arvalid.val() & !self.ar_busy.q.val() {
            self.ar_busy.d.next = true;
            self.ar_addr.d.next = self.s_axil_araddr.val();
            self.rd_pulse.d.next = true;
        }
        self.rd_answer.d.next = self.rd_pulse.q.val();
        if self.rd_answer.q.val() {
            self.r_valid.d.next = true;
            self.r_data.d.next = self.rd_data.val();
        }
        if self.r_valid.q.val() & self.s_axil_rready.val() {
            self.r_valid.d.next = false;
            self.ar_busy.d.next = false;
        }
        if self.reset.val() {
            self.aw_held.d.next = false;
            self.w_held.d.next = false;
            self.b_pending.d.next = false;
            self.wr_pulse.d.next = false;
            self.ar_busy.d.next = false;
            self.rd_pulse.d.next = false;
            self.rd_answer.d.next = false;
            self.r_valid.d.next = false;
        }
        self.s_axil_bresp.next = 0.into();
        self.s_axil_bvalid.next = self.b_pending.q.val();
        self.s_axil_rdata.next = self.r_data.q.val();
        self.s_axil_rresp.next = 0.into();
        self.s_axil_rvalid.next = self.r_valid.q.val();
        self.wr_en.next = self.wr_pulse.q.val();
        self.wr_addr.next = self.aw_addr.q.val();
        self.wr_data.next = self.w_data.q.val();
        self.wr_strb.next = self.w_strb.q.val();
        self.rd_en.next = self.rd_pulse.q.val();
        self.rd_addr.next = self.ar_addr.q.val();
    }
}
