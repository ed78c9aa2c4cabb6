//! The DMA master: the read and the write engine on one AXI4 port. AXI's read and write
//! channels are independent, so the two engines share nothing but the port's name;
//! arbitration between the RNIC's clients happens in front of each engine.
//!
//! The octet streams cross into and out of the engines through a [`SkidBuffer`] each:
//! the engines' readies follow the AXI port's (a write's data is taken as `wready`
//! allows, a read's is taken as its output frees), and the clients' logic must not hang
//! on the port's through them. Each costs a cycle of latency, none of throughput.
use rust_hdl::prelude::*;

use super::{DmaRead, DmaWrite};
use crate::common::SkidBuffer;

/// A read beat between the engine and the clients: data (63:0), keep (71:64), last (72),
/// user (81:73).
const RD_BEAT_BITS: usize = 82;
/// A write beat: data (63:0), keep (71:64), last (72).
const WR_BEAT_BITS: usize = 73;

#[derive(LogicBlock, Default)]
pub struct Dma {
    pub clock: Signal<In, Clock>,
    pub reset: Signal<In, Bit>,
    // Reads: requests in, octets out (see `DmaRead`).
    pub s_rd_req_valid: Signal<In, Bit>,
    pub s_rd_req_ready: Signal<Out, Bit>,
    pub s_rd_req_addr: Signal<In, Bits<64>>,
    pub s_rd_req_len: Signal<In, Bits<32>>,
    pub s_rd_req_tag: Signal<In, Bits<8>>,
    pub m_rd_axis_tdata: Signal<Out, Bits<64>>,
    pub m_rd_axis_tkeep: Signal<Out, Bits<8>>,
    pub m_rd_axis_tlast: Signal<Out, Bit>,
    pub m_rd_axis_tuser: Signal<Out, Bits<9>>,
    pub m_rd_axis_tvalid: Signal<Out, Bit>,
    pub m_rd_axis_tready: Signal<In, Bit>,
    // Writes: requests and octets in, completions out (see `DmaWrite`).
    pub s_wr_req_valid: Signal<In, Bit>,
    pub s_wr_req_ready: Signal<Out, Bit>,
    pub s_wr_req_addr: Signal<In, Bits<64>>,
    pub s_wr_req_len: Signal<In, Bits<32>>,
    pub s_wr_req_tag: Signal<In, Bits<8>>,
    pub s_wr_axis_tdata: Signal<In, Bits<64>>,
    pub s_wr_axis_tkeep: Signal<In, Bits<8>>,
    pub s_wr_axis_tlast: Signal<In, Bit>,
    pub s_wr_axis_tvalid: Signal<In, Bit>,
    pub s_wr_axis_tready: Signal<Out, Bit>,
    pub m_wr_done_valid: Signal<Out, Bit>,
    pub m_wr_done_tag: Signal<Out, Bits<8>>,
    pub m_wr_done_error: Signal<Out, Bit>,
    // The AXI4 master (one ID, 64-bit data).
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
    read: DmaRead,
    write: DmaWrite,
    rd_out: SkidBuffer<RD_BEAT_BITS>,
    wr_in: SkidBuffer<WR_BEAT_BITS>,
}

impl Logic for Dma {
    #[hdl_gen]
    fn update(&mut self) {
        self.read.clock.next = self.clock.val();
        self.read.reset.next = self.reset.val();
        self.write.clock.next = self.clock.val();
        self.write.reset.next = self.reset.val();
        self.rd_out.clock.next = self.clock.val();
        self.rd_out.reset.next = self.reset.val();
        self.wr_in.clock.next = self.clock.val();
        self.wr_in.reset.next = self.reset.val();

        self.read.s_req_valid.next = self.s_rd_req_valid.val();
        self.s_rd_req_ready.next = self.read.s_req_ready.val();
        self.read.s_req_addr.next = self.s_rd_req_addr.val();
        self.read.s_req_len.next = self.s_rd_req_len.val();
        self.read.s_req_tag.next = self.s_rd_req_tag.val();
        self.rd_out.s_data.next = bit_cast::<RD_BEAT_BITS, 64>(self.read.m_axis_tdata.val())
            | (bit_cast::<RD_BEAT_BITS, 8>(self.read.m_axis_tkeep.val()) << 64)
            | (bit_cast::<RD_BEAT_BITS, 1>(self.read.m_axis_tlast.val().into()) << 72)
            | (bit_cast::<RD_BEAT_BITS, 9>(self.read.m_axis_tuser.val()) << 73);
        self.rd_out.s_valid.next = self.read.m_axis_tvalid.val();
        self.read.m_axis_tready.next = self.rd_out.s_ready.val();
        self.m_rd_axis_tdata.next = self.rd_out.m_data.val().get_bits::<64>(0);
        self.m_rd_axis_tkeep.next = self.rd_out.m_data.val().get_bits::<8>(64);
        self.m_rd_axis_tlast.next = self.rd_out.m_data.val().get_bit(72);
        self.m_rd_axis_tuser.next = self.rd_out.m_data.val().get_bits::<9>(73);
        self.m_rd_axis_tvalid.next = self.rd_out.m_valid.val();
        self.rd_out.m_ready.next = self.m_rd_axis_tready.val();
        self.m_axi_araddr.next = self.read.m_axi_araddr.val();
        self.m_axi_arlen.next = self.read.m_axi_arlen.val();
        self.m_axi_arsize.next = self.read.m_axi_arsize.val();
        self.m_axi_arburst.next = self.read.m_axi_arburst.val();
        self.m_axi_arvalid.next = self.read.m_axi_arvalid.val();
        self.read.m_axi_arready.next = self.m_axi_arready.val();
        self.read.m_axi_rdata.next = self.m_axi_rdata.val();
        self.read.m_axi_rresp.next = self.m_axi_rresp.val();
        self.read.m_axi_rlast.next = self.m_axi_rlast.val();
        self.read.m_axi_rvalid.next = self.m_axi_rvalid.val();
        self.m_axi_rready.next = self.read.m_axi_rready.val();

        self.write.s_req_valid.next = self.s_wr_req_valid.val();
        self.s_wr_req_ready.next = self.write.s_req_ready.val();
        self.write.s_req_addr.next = self.s_wr_req_addr.val();
        self.write.s_req_len.next = self.s_wr_req_len.val();
        self.write.s_req_tag.next = self.s_wr_req_tag.val();
        self.wr_in.s_data.next = bit_cast::<WR_BEAT_BITS, 64>(self.s_wr_axis_tdata.val())
            | (bit_cast::<WR_BEAT_BITS, 8>(self.s_wr_axis_tkeep.val()) << 64)
            | (bit_cast::<WR_BEAT_BITS, 1>(self.s_wr_axis_tlast.val().into()) << 72);
        self.wr_in.s_valid.next = self.s_wr_axis_tvalid.val();
        self.s_wr_axis_tready.next = self.wr_in.s_ready.val();
        self.write.s_axis_tdata.next = self.wr_in.m_data.val().get_bits::<64>(0);
        self.write.s_axis_tkeep.next = self.wr_in.m_data.val().get_bits::<8>(64);
        self.write.s_axis_tlast.next = self.wr_in.m_data.val().get_bit(72);
        self.write.s_axis_tvalid.next = self.wr_in.m_valid.val();
        self.wr_in.m_ready.next = self.write.s_axis_tready.val();
        self.m_wr_done_valid.next = self.write.m_done_valid.val();
        self.m_wr_done_tag.next = self.write.m_done_tag.val();
        self.m_wr_done_error.next = self.write.m_done_error.val();
        self.m_axi_awaddr.next = self.write.m_axi_awaddr.val();
        self.m_axi_awlen.next = self.write.m_axi_awlen.val();
        self.m_axi_awsize.next = self.write.m_axi_awsize.val();
        self.m_axi_awburst.next = self.write.m_axi_awburst.val();
        self.m_axi_awvalid.next = self.write.m_axi_awvalid.val();
        self.write.m_axi_awready.next = self.m_axi_awready.val();
        self.m_axi_wdata.next = self.write.m_axi_wdata.val();
        self.m_axi_wstrb.next = self.write.m_axi_wstrb.val();
        self.m_axi_wlast.next = self.write.m_axi_wlast.val();
        self.m_axi_wvalid.next = self.write.m_axi_wvalid.val();
        self.write.m_axi_wready.next = self.m_axi_wready.val();
        self.write.m_axi_bresp.next = self.m_axi_bresp.val();
        self.write.m_axi_bvalid.next = self.m_axi_bvalid.val();
        self.m_axi_bready.next = self.write.m_axi_bready.val();
    }
}
