//! The control plane as one block: BAR0 ([`AxilSlave`] into [`Regs`]) and the command
//! unit ([`Cmd`]).
//!
//! Outward it has the AXI4-Lite slave, the doorbell events, the context write ports that
//! feed the engines' private copies, the live QP/MR state, and the BAR0 accesses of the
//! device memory window (offset bit 15 set: `dm_*`, answered the cycle after the read). `rnic_top` instantiates it
//! once; it is also generated on its own so that its testbench can drive it from the host
//! side exactly as the driver does.
use rust_hdl::prelude::*;

use rnic_proto::model::RnicConfig;

use super::{AxilSlave, Cmd, Regs};

/// `QB`/`CB`/`MB` = QP/CQ/MR index bits, `Q`/`M` = QP and MR counts. Build with
/// [`HostCtrl::new`].
#[derive(LogicBlock)]
pub struct HostCtrl<const QB: usize, const Q: usize, const CB: usize, const MB: usize, const M: usize> {
    pub clock: Signal<In, Clock>,
    pub reset: Signal<In, Bit>,
    pub s_axil_awaddr: Signal<In, Bits<16>>,
    pub s_axil_awvalid: Signal<In, Bit>,
    pub s_axil_awready: Signal<Out, Bit>,
    pub s_axil_wdata: Signal<In, Bits<32>>,
    pub s_axil_wstrb: Signal<In, Bits<4>>,
    pub s_axil_wvalid: Signal<In, Bit>,
    pub s_axil_wready: Signal<Out, Bit>,
    pub s_axil_bresp: Signal<Out, Bits<2>>,
    pub s_axil_bvalid: Signal<Out, Bit>,
    pub s_axil_bready: Signal<In, Bit>,
    pub s_axil_araddr: Signal<In, Bits<16>>,
    pub s_axil_arvalid: Signal<In, Bit>,
    pub s_axil_arready: Signal<Out, Bit>,
    pub s_axil_rdata: Signal<Out, Bits<32>>,
    pub s_axil_rresp: Signal<Out, Bits<2>>,
    pub s_axil_rvalid: Signal<Out, Bit>,
    pub s_axil_rready: Signal<In, Bit>,
    pub enable: Signal<Out, Bit>,
    pub idle: Signal<In, Bit>,
    pub db_valid: Signal<Out, Bit>,
    pub db_kind: Signal<Out, Bits<2>>,
    pub db_index: Signal<Out, Bits<16>>,
    pub db_value: Signal<Out, Bits<32>>,
    pub qp_we: Signal<Out, Bit>,
    pub qp_waddr: Signal<Out, Bits<QB>>,
    pub qp_wdata: Signal<Out, Bits<256>>,
    pub qp_reset: Signal<Out, Bit>,
    pub cq_we: Signal<Out, Bit>,
    pub cq_waddr: Signal<Out, Bits<CB>>,
    pub cq_wdata: Signal<Out, Bits<96>>,
    pub mr_we: Signal<Out, Bit>,
    pub mr_waddr: Signal<Out, Bits<MB>>,
    pub mr_wdata: Signal<Out, Bits<224>>,
    pub qp_rts: Signal<Out, Bits<Q>>,
    pub qp_error: Signal<Out, Bits<Q>>,
    pub qp_crc: Signal<Out, Bits<Q>>,
    pub qp_markers_tx: Signal<Out, Bits<Q>>,
    pub qp_markers_rx: Signal<Out, Bits<Q>>,
    pub mr_valid: Signal<Out, Bits<M>>,
    pub fail: Signal<In, Bit>,
    pub fail_qp: Signal<In, Bits<QB>>,
    pub fail_term: Signal<In, Bits<16>>,
    pub fail_received: Signal<In, Bit>,
    pub invalidate: Signal<In, Bit>,
    pub invalidate_mr: Signal<In, Bits<MB>>,
    /// Query status from the engines (see `Cmd`).
    pub status_index: Signal<Out, Bits<24>>,
    pub status_sq_ci: Signal<In, Bits<32>>,
    pub status_rq_ci: Signal<In, Bits<32>>,
    pub status_cq_pi: Signal<In, Bits<32>>,
    pub status_cq_overflow: Signal<In, Bit>,
    /// The device memory window: BAR0 writes and reads with offset bit 15 set. `dm_rd_data`
    /// answers `dm_rd_addr` the cycle after `dm_rd_en`.
    pub dm_wr_en: Signal<Out, Bit>,
    pub dm_wr_addr: Signal<Out, Bits<16>>,
    pub dm_wr_data: Signal<Out, Bits<32>>,
    pub dm_wr_strb: Signal<Out, Bits<4>>,
    pub dm_rd_en: Signal<Out, Bit>,
    pub dm_rd_addr: Signal<Out, Bits<16>>,
    pub dm_rd_data: Signal<In, Bits<32>>,
    /// The register bus below 0x8000, for register pages kept outside this block (the
    /// stream rings): writes as they happen, reads answered by `ext_rd_data` on
    /// `ext_rd_addr` (0 outside those pages, since it is ORed into the registers').
    pub ext_wr_en: Signal<Out, Bit>,
    pub ext_wr_addr: Signal<Out, Bits<16>>,
    pub ext_wr_data: Signal<Out, Bits<32>>,
    pub ext_rd_addr: Signal<Out, Bits<16>>,
    pub ext_rd_data: Signal<In, Bits<32>>,
    /// The command unit's DMA fence (see `Cmd`, `DmaFence`).
    pub fence_start: Signal<Out, Bit>,
    pub fence_done: Signal<In, Bit>,
    axil: AxilSlave<16>,
    regs: Regs,
    cmd: Cmd<QB, Q, CB, MB, M>,
}

impl<const QB: usize, const Q: usize, const CB: usize, const MB: usize, const M: usize> HostCtrl<QB, Q, CB, MB, M> {
    /// Control for `config.num_cqs` CQs, reporting `config`'s width, features and device
    /// memory in BAR0.
    pub fn new(config: &RnicConfig) -> Self {
        let cqs = config.num_cqs as usize;
        HostCtrl {
            clock: Default::default(),
            reset: Default::default(),
            s_axil_awaddr: Default::default(),
            s_axil_awvalid: Default::default(),
            s_axil_awready: Default::default(),
            s_axil_wdata: Default::default(),
            s_axil_wstrb: Default::default(),
            s_axil_wvalid: Default::default(),
            s_axil_wready: Default::default(),
            s_axil_bresp: Default::default(),
            s_axil_bvalid: Default::default(),
            s_axil_bready: Default::default(),
            s_axil_araddr: Default::default(),
            s_axil_arvalid: Default::default(),
            s_axil_arready: Default::default(),
            s_axil_rdata: Default::default(),
            s_axil_rresp: Default::default(),
            s_axil_rvalid: Default::default(),
            s_axil_rready: Default::default(),
            enable: Default::default(),
            idle: Default::default(),
            db_valid: Default::default(),
            db_kind: Default::default(),
            db_index: Default::default(),
            db_value: Default::default(),
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
            qp_error: Default::default(),
            qp_crc: Default::default(),
            qp_markers_tx: Default::default(),
            qp_markers_rx: Default::default(),
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
            dm_wr_en: Default::default(),
            dm_wr_addr: Default::default(),
            dm_wr_data: Default::default(),
            dm_wr_strb: Default::default(),
            dm_rd_en: Default::default(),
            dm_rd_addr: Default::default(),
            dm_rd_data: Default::default(),
            ext_wr_en: Default::default(),
            ext_wr_addr: Default::default(),
            ext_wr_data: Default::default(),
            ext_rd_addr: Default::default(),
            ext_rd_data: Default::default(),
            fence_start: Default::default(),
            fence_done: Default::default(),
            axil: Default::default(),
            regs: Regs::new(config, Q as u32, cqs as u32, M as u32),
            cmd: Cmd::new(cqs),
        }
    }
}

impl<const QB: usize, const Q: usize, const CB: usize, const MB: usize, const M: usize> Logic
    for HostCtrl<QB, Q, CB, MB, M>
{
    #[hdl_gen]
    fn update(&mut self) {
        self.axil.clock.next = self.clock.val();
        self.axil.reset.next = self.reset.val();
        self.regs.clock.next = self.clock.val();
        self.regs.reset.next = self.reset.val();
        self.cmd.clock.next = self.clock.val();
        self.cmd.reset.next = self.reset.val();

        self.axil.s_axil_awaddr.next = self.s_axil_awaddr.val();
        self.axil.s_axil_awvalid.next = self.s_axil_awvalid.val();
        self.s_axil_awready.next = self.axil.s_axil_awready.val();
        self.axil.s_axil_wdata.next = self.s_axil_wdata.val();
        self.axil.s_axil_wstrb.next = self.s_axil_wstrb.val();
        self.axil.s_axil_wvalid.next = self.s_axil_wvalid.val();
        self.s_axil_wready.next = self.axil.s_axil_wready.val();
        self.s_axil_bresp.next = self.axil.s_axil_bresp.val();
        self.s_axil_bvalid.next = self.axil.s_axil_bvalid.val();
        self.axil.s_axil_bready.next = self.s_axil_bready.val();
        self.axil.s_axil_araddr.next = self.s_axil_araddr.val();
        self.axil.s_axil_arvalid.next = self.s_axil_arvalid.val();
        self.s_axil_arready.next = self.axil.s_axil_arready.val();
        self.s_axil_rdata.next = self.axil.s_axil_rdata.val();
        self.s_axil_rresp.next = self.axil.s_axil_rresp.val();
        self.s_axil_rvalid.next = self.axil.s_axil_rvalid.val();
        self.axil.s_axil_rready.next = self.s_axil_rready.val();

        // Offsets from 0x8000 on are the device memory window (the registers never see
        // them).
        self.regs.wr_en.next = self.axil.wr_en.val() & !self.axil.wr_addr.val().get_bit(15);
        self.regs.wr_addr.next = self.axil.wr_addr.val();
        self.regs.wr_data.next = self.axil.wr_data.val();
        self.regs.wr_strb.next = self.axil.wr_strb.val();
        self.regs.rd_en.next = self.axil.rd_en.val() & !self.axil.rd_addr.val().get_bit(15);
        self.regs.rd_addr.next = self.axil.rd_addr.val();
        self.dm_wr_en.next = self.axil.wr_en.val() & self.axil.wr_addr.val().get_bit(15);
        self.dm_wr_addr.next = self.axil.wr_addr.val();
        self.dm_wr_data.next = self.axil.wr_data.val();
        self.dm_wr_strb.next = self.axil.wr_strb.val();
        self.dm_rd_en.next = self.axil.rd_en.val() & self.axil.rd_addr.val().get_bit(15);
        self.dm_rd_addr.next = self.axil.rd_addr.val();
        self.ext_wr_en.next = self.regs.wr_en.val();
        self.ext_wr_addr.next = self.axil.wr_addr.val();
        self.ext_wr_data.next = self.axil.wr_data.val();
        self.ext_rd_addr.next = self.axil.rd_addr.val();
        self.axil.rd_data.next = self.regs.rd_data.val() | self.ext_rd_data.val();
        if self.axil.rd_addr.val().get_bit(15) {
            self.axil.rd_data.next = self.dm_rd_data.val();
        }

        self.enable.next = self.regs.enable.val();
        self.regs.idle.next = self.idle.val();
        self.db_valid.next = self.regs.db_valid.val();
        self.db_kind.next = self.regs.db_kind.val();
        self.db_index.next = self.regs.db_index.val();
        self.db_value.next = self.regs.db_value.val();

        self.cmd.cmd_start.next = self.regs.cmd_start.val();
        self.cmd.cmd_op.next = self.regs.cmd_op.val();
        self.cmd.cmd_index.next = self.regs.cmd_index.val();
        self.cmd.cmd_data.next = self.regs.cmd_data.val();
        self.regs.cmd_done.next = self.cmd.cmd_done.val();
        self.regs.cmd_result.next = self.cmd.cmd_result.val();
        self.regs.cmd_load.next = self.cmd.cmd_load.val();
        self.regs.cmd_result_data.next = self.cmd.cmd_result_data.val();

        self.qp_we.next = self.cmd.qp_we.val();
        self.qp_waddr.next = self.cmd.qp_waddr.val();
        self.qp_wdata.next = self.cmd.qp_wdata.val();
        self.qp_reset.next = self.cmd.qp_reset.val();
        self.cq_we.next = self.cmd.cq_we.val();
        self.cq_waddr.next = self.cmd.cq_waddr.val();
        self.cq_wdata.next = self.cmd.cq_wdata.val();
        self.mr_we.next = self.cmd.mr_we.val();
        self.mr_waddr.next = self.cmd.mr_waddr.val();
        self.mr_wdata.next = self.cmd.mr_wdata.val();
        self.qp_rts.next = self.cmd.qp_rts.val();
        self.qp_error.next = self.cmd.qp_error.val();
        self.qp_crc.next = self.cmd.qp_crc.val();
        self.qp_markers_tx.next = self.cmd.qp_markers_tx.val();
        self.qp_markers_rx.next = self.cmd.qp_markers_rx.val();
        self.mr_valid.next = self.cmd.mr_valid.val();
        self.cmd.fail.next = self.fail.val();
        self.cmd.fail_qp.next = self.fail_qp.val();
        self.cmd.fail_term.next = self.fail_term.val();
        self.cmd.fail_received.next = self.fail_received.val();
        self.cmd.invalidate.next = self.invalidate.val();
        self.cmd.invalidate_mr.next = self.invalidate_mr.val();
        self.status_index.next = self.cmd.status_index.val();
        self.cmd.status_sq_ci.next = self.status_sq_ci.val();
        self.cmd.status_rq_ci.next = self.status_rq_ci.val();
        self.cmd.status_cq_pi.next = self.status_cq_pi.val();
        self.cmd.status_cq_overflow.next = self.status_cq_overflow.val();
        self.fence_start.next = self.cmd.fence_start.val();
        self.cmd.fence_done.next = self.fence_done.val();
    }
}
