// Alveo U200 shell for the RNIC (board glue; the RNIC itself is hdl/verilog/rnic_top.v,
// generated). PCIe Gen3 x8 through the XDMA IP in AXI Bridge mode (bitstream/vivado/build.tcl):
//
//   host --BAR0--> M_AXI_B (256) -> bar_downsizer (32) -> bar_to_lite -> rnic s_axil
//   rnic m_axi (64) -> dma_upsizer (256) -> S_AXI_B -> host memory at the same address
//   rnic irq_valid/irq_vector -> MSI request/vector; the grant is the RNIC's irq_ready
//
// The RNIC's TX stream is looped back into its RX stream, so QPs of the card can be
// linked to each other (CONN_ID = the peer QP's number) until the host stream rings carry
// the streams to a socket. Everything runs on the bridge's 250 MHz axi_aclk.
`default_nettype none
module rnic_au200 (
    input  wire       pcie_refclk_p,
    input  wire       pcie_refclk_n,
    input  wire       pcie_reset_n,
    input  wire [7:0] pcie_rx_p,
    input  wire [7:0] pcie_rx_n,
    output wire [7:0] pcie_tx_p,
    output wire [7:0] pcie_tx_n,
    output wire [2:0] led
);
    wire refclk, refclk_div2, clk, aresetn, link_up;
    IBUFDS_GTE4 #(.REFCLK_HROW_CK_SEL(2'b00)) refclk_buf (
        .I(pcie_refclk_p), .IB(pcie_refclk_n), .CEB(1'b0), .O(refclk), .ODIV2(refclk_div2));

    // Reset: the RNIC's reset input is active high and registered inside it.
    reg reset = 1'b1;
    always @(posedge clk) reset <= !aresetn;

    // BAR0 master of the bridge (256-bit AXI4).
    wire [3:0]   bar_awid, bar_bid, bar_arid, bar_rid;
    wire [63:0]  bar_awaddr, bar_araddr;
    wire [7:0]   bar_awlen, bar_arlen;
    wire [2:0]   bar_awsize, bar_arsize, bar_awprot, bar_arprot;
    wire [1:0]   bar_awburst, bar_arburst, bar_bresp, bar_rresp;
    wire         bar_awvalid, bar_awready, bar_wlast, bar_wvalid, bar_wready, bar_bvalid, bar_bready;
    wire         bar_arvalid, bar_arready, bar_rlast, bar_rvalid, bar_rready;
    wire [255:0] bar_wdata, bar_rdata;
    wire [31:0]  bar_wstrb;
    // The same, 32 bits wide.
    wire [63:0]  bar32_awaddr, bar32_araddr;
    wire [7:0]   bar32_awlen, bar32_arlen;
    wire [2:0]   bar32_awsize, bar32_arsize, bar32_awprot, bar32_arprot;
    wire [1:0]   bar32_awburst, bar32_arburst, bar32_bresp, bar32_rresp;
    wire         bar32_awvalid, bar32_awready, bar32_wlast, bar32_wvalid, bar32_wready, bar32_bvalid, bar32_bready;
    wire         bar32_arvalid, bar32_arready, bar32_rlast, bar32_rvalid, bar32_rready;
    wire [31:0]  bar32_wdata, bar32_rdata;
    wire [3:0]   bar32_wstrb;
    // AXI4-Lite into the RNIC.
    wire [63:0]  lite_awaddr, lite_araddr;
    wire         lite_awvalid, lite_awready, lite_wvalid, lite_wready, lite_bvalid, lite_bready;
    wire         lite_arvalid, lite_arready, lite_rvalid, lite_rready;
    wire [31:0]  lite_wdata, lite_rdata;
    wire [3:0]   lite_wstrb;
    wire [1:0]   lite_bresp, lite_rresp;
    // The RNIC's DMA master, 64 and 256 bits wide.
    wire [63:0]  dma_awaddr, dma_araddr, dma_wdata, dma_rdata;
    wire [7:0]   dma_awlen, dma_arlen, dma_wstrb;
    wire [2:0]   dma_awsize, dma_arsize;
    wire [1:0]   dma_awburst, dma_arburst, dma_bresp, dma_rresp;
    wire         dma_awvalid, dma_awready, dma_wlast, dma_wvalid, dma_wready, dma_bvalid, dma_bready;
    wire         dma_arvalid, dma_arready, dma_rlast, dma_rvalid, dma_rready;
    wire [63:0]  host_awaddr, host_araddr;
    wire [7:0]   host_awlen, host_arlen;
    wire [2:0]   host_awsize, host_arsize;
    wire [1:0]   host_awburst, host_arburst, host_bresp, host_rresp;
    wire         host_awvalid, host_awready, host_wlast, host_wvalid, host_wready, host_bvalid, host_bready;
    wire         host_arvalid, host_arready, host_rlast, host_rvalid, host_rready;
    wire [255:0] host_wdata, host_rdata;
    wire [31:0]  host_wstrb;
    // Interrupts and the looped-back streams.
    wire         irq_valid, irq_ready, msi_enable;
    wire [15:0]  irq_vector;
    wire [63:0]  tx_tdata;
    wire [7:0]   tx_tkeep;
    wire [15:0]  tx_tuser;
    wire         tx_tlast, tx_tvalid, tx_tready;

    pcie_bridge pcie (
        .sys_clk(refclk_div2), .sys_clk_gt(refclk), .sys_rst_n(pcie_reset_n),
        .pci_exp_rxp(pcie_rx_p), .pci_exp_rxn(pcie_rx_n), .pci_exp_txp(pcie_tx_p), .pci_exp_txn(pcie_tx_n),
        .axi_aclk(clk), .axi_aresetn(aresetn), .user_lnk_up(link_up),
        .m_axib_awid(bar_awid), .m_axib_awaddr(bar_awaddr), .m_axib_awlen(bar_awlen), .m_axib_awsize(bar_awsize),
        .m_axib_awburst(bar_awburst), .m_axib_awprot(bar_awprot), .m_axib_awvalid(bar_awvalid),
        .m_axib_awready(bar_awready), .m_axib_awlock(), .m_axib_awcache(),
        .m_axib_wdata(bar_wdata), .m_axib_wstrb(bar_wstrb), .m_axib_wlast(bar_wlast), .m_axib_wvalid(bar_wvalid),
        .m_axib_wready(bar_wready),
        .m_axib_bid(bar_bid), .m_axib_bresp(bar_bresp), .m_axib_bvalid(bar_bvalid), .m_axib_bready(bar_bready),
        .m_axib_arid(bar_arid), .m_axib_araddr(bar_araddr), .m_axib_arlen(bar_arlen), .m_axib_arsize(bar_arsize),
        .m_axib_arburst(bar_arburst), .m_axib_arprot(bar_arprot), .m_axib_arvalid(bar_arvalid),
        .m_axib_arready(bar_arready), .m_axib_arlock(), .m_axib_arcache(),
        .m_axib_rid(bar_rid), .m_axib_rdata(bar_rdata), .m_axib_rresp(bar_rresp), .m_axib_rlast(bar_rlast),
        .m_axib_rvalid(bar_rvalid), .m_axib_rready(bar_rready),
        .s_axib_awid(4'd0), .s_axib_awaddr(host_awaddr), .s_axib_awregion(4'd0), .s_axib_awlen(host_awlen),
        .s_axib_awsize(host_awsize), .s_axib_awburst(host_awburst), .s_axib_awvalid(host_awvalid),
        .s_axib_awready(host_awready),
        .s_axib_wdata(host_wdata), .s_axib_wstrb(host_wstrb), .s_axib_wlast(host_wlast), .s_axib_wvalid(host_wvalid),
        .s_axib_wready(host_wready),
        .s_axib_bid(), .s_axib_bresp(host_bresp), .s_axib_bvalid(host_bvalid), .s_axib_bready(host_bready),
        .s_axib_arid(4'd0), .s_axib_araddr(host_araddr), .s_axib_arregion(4'd0), .s_axib_arlen(host_arlen),
        .s_axib_arsize(host_arsize), .s_axib_arburst(host_arburst), .s_axib_arvalid(host_arvalid),
        .s_axib_arready(host_arready),
        .s_axib_rid(), .s_axib_rdata(host_rdata), .s_axib_rresp(host_rresp), .s_axib_rlast(host_rlast),
        .s_axib_rvalid(host_rvalid), .s_axib_rready(host_rready),
        .intx_msi_request(irq_valid), .intx_msi_grant(irq_ready), .msi_enable(msi_enable),
        .msi_vector_num(irq_vector[4:0]), .msi_vector_width()
    );

    bar_downsizer bar_down (
        .s_axi_aclk(clk), .s_axi_aresetn(aresetn),
        .s_axi_awid(bar_awid), .s_axi_awaddr(bar_awaddr), .s_axi_awlen(bar_awlen), .s_axi_awsize(bar_awsize),
        .s_axi_awburst(bar_awburst), .s_axi_awlock(1'b0), .s_axi_awcache(4'd0), .s_axi_awprot(bar_awprot),
        .s_axi_awregion(4'd0), .s_axi_awqos(4'd0), .s_axi_awvalid(bar_awvalid), .s_axi_awready(bar_awready),
        .s_axi_wdata(bar_wdata), .s_axi_wstrb(bar_wstrb), .s_axi_wlast(bar_wlast), .s_axi_wvalid(bar_wvalid),
        .s_axi_wready(bar_wready),
        .s_axi_bid(bar_bid), .s_axi_bresp(bar_bresp), .s_axi_bvalid(bar_bvalid), .s_axi_bready(bar_bready),
        .s_axi_arid(bar_arid), .s_axi_araddr(bar_araddr), .s_axi_arlen(bar_arlen), .s_axi_arsize(bar_arsize),
        .s_axi_arburst(bar_arburst), .s_axi_arlock(1'b0), .s_axi_arcache(4'd0), .s_axi_arprot(bar_arprot),
        .s_axi_arregion(4'd0), .s_axi_arqos(4'd0), .s_axi_arvalid(bar_arvalid), .s_axi_arready(bar_arready),
        .s_axi_rid(bar_rid), .s_axi_rdata(bar_rdata), .s_axi_rresp(bar_rresp), .s_axi_rlast(bar_rlast),
        .s_axi_rvalid(bar_rvalid), .s_axi_rready(bar_rready),
        .m_axi_awaddr(bar32_awaddr), .m_axi_awlen(bar32_awlen), .m_axi_awsize(bar32_awsize),
        .m_axi_awburst(bar32_awburst), .m_axi_awlock(), .m_axi_awcache(), .m_axi_awprot(bar32_awprot),
        .m_axi_awregion(), .m_axi_awqos(), .m_axi_awvalid(bar32_awvalid), .m_axi_awready(bar32_awready),
        .m_axi_wdata(bar32_wdata), .m_axi_wstrb(bar32_wstrb), .m_axi_wlast(bar32_wlast),
        .m_axi_wvalid(bar32_wvalid), .m_axi_wready(bar32_wready),
        .m_axi_bresp(bar32_bresp), .m_axi_bvalid(bar32_bvalid), .m_axi_bready(bar32_bready),
        .m_axi_araddr(bar32_araddr), .m_axi_arlen(bar32_arlen), .m_axi_arsize(bar32_arsize),
        .m_axi_arburst(bar32_arburst), .m_axi_arlock(), .m_axi_arcache(), .m_axi_arprot(bar32_arprot),
        .m_axi_arregion(), .m_axi_arqos(), .m_axi_arvalid(bar32_arvalid), .m_axi_arready(bar32_arready),
        .m_axi_rdata(bar32_rdata), .m_axi_rresp(bar32_rresp), .m_axi_rlast(bar32_rlast),
        .m_axi_rvalid(bar32_rvalid), .m_axi_rready(bar32_rready)
    );

    bar_to_lite bar_lite (
        .aclk(clk), .aresetn(aresetn),
        .s_axi_awaddr(bar32_awaddr), .s_axi_awlen(bar32_awlen), .s_axi_awsize(bar32_awsize),
        .s_axi_awburst(bar32_awburst), .s_axi_awlock(1'b0), .s_axi_awcache(4'd0), .s_axi_awprot(bar32_awprot),
        .s_axi_awregion(4'd0), .s_axi_awqos(4'd0), .s_axi_awvalid(bar32_awvalid), .s_axi_awready(bar32_awready),
        .s_axi_wdata(bar32_wdata), .s_axi_wstrb(bar32_wstrb), .s_axi_wlast(bar32_wlast),
        .s_axi_wvalid(bar32_wvalid), .s_axi_wready(bar32_wready),
        .s_axi_bresp(bar32_bresp), .s_axi_bvalid(bar32_bvalid), .s_axi_bready(bar32_bready),
        .s_axi_araddr(bar32_araddr), .s_axi_arlen(bar32_arlen), .s_axi_arsize(bar32_arsize),
        .s_axi_arburst(bar32_arburst), .s_axi_arlock(1'b0), .s_axi_arcache(4'd0), .s_axi_arprot(bar32_arprot),
        .s_axi_arregion(4'd0), .s_axi_arqos(4'd0), .s_axi_arvalid(bar32_arvalid), .s_axi_arready(bar32_arready),
        .s_axi_rdata(bar32_rdata), .s_axi_rresp(bar32_rresp), .s_axi_rlast(bar32_rlast),
        .s_axi_rvalid(bar32_rvalid), .s_axi_rready(bar32_rready),
        .m_axi_awaddr(lite_awaddr), .m_axi_awprot(), .m_axi_awvalid(lite_awvalid), .m_axi_awready(lite_awready),
        .m_axi_wdata(lite_wdata), .m_axi_wstrb(lite_wstrb), .m_axi_wvalid(lite_wvalid), .m_axi_wready(lite_wready),
        .m_axi_bresp(lite_bresp), .m_axi_bvalid(lite_bvalid), .m_axi_bready(lite_bready),
        .m_axi_araddr(lite_araddr), .m_axi_arprot(), .m_axi_arvalid(lite_arvalid), .m_axi_arready(lite_arready),
        .m_axi_rdata(lite_rdata), .m_axi_rresp(lite_rresp), .m_axi_rvalid(lite_rvalid), .m_axi_rready(lite_rready)
    );

    dma_upsizer dma_up (
        .s_axi_aclk(clk), .s_axi_aresetn(aresetn),
        .s_axi_awaddr(dma_awaddr), .s_axi_awlen(dma_awlen), .s_axi_awsize(dma_awsize), .s_axi_awburst(dma_awburst),
        .s_axi_awlock(1'b0), .s_axi_awcache(4'b0011), .s_axi_awprot(3'd0), .s_axi_awregion(4'd0),
        .s_axi_awqos(4'd0), .s_axi_awvalid(dma_awvalid), .s_axi_awready(dma_awready),
        .s_axi_wdata(dma_wdata), .s_axi_wstrb(dma_wstrb), .s_axi_wlast(dma_wlast), .s_axi_wvalid(dma_wvalid),
        .s_axi_wready(dma_wready),
        .s_axi_bresp(dma_bresp), .s_axi_bvalid(dma_bvalid), .s_axi_bready(dma_bready),
        .s_axi_araddr(dma_araddr), .s_axi_arlen(dma_arlen), .s_axi_arsize(dma_arsize), .s_axi_arburst(dma_arburst),
        .s_axi_arlock(1'b0), .s_axi_arcache(4'b0011), .s_axi_arprot(3'd0), .s_axi_arregion(4'd0),
        .s_axi_arqos(4'd0), .s_axi_arvalid(dma_arvalid), .s_axi_arready(dma_arready),
        .s_axi_rdata(dma_rdata), .s_axi_rresp(dma_rresp), .s_axi_rlast(dma_rlast), .s_axi_rvalid(dma_rvalid),
        .s_axi_rready(dma_rready),
        .m_axi_awaddr(host_awaddr), .m_axi_awlen(host_awlen), .m_axi_awsize(host_awsize),
        .m_axi_awburst(host_awburst), .m_axi_awlock(), .m_axi_awcache(), .m_axi_awprot(), .m_axi_awregion(),
        .m_axi_awqos(), .m_axi_awvalid(host_awvalid), .m_axi_awready(host_awready),
        .m_axi_wdata(host_wdata), .m_axi_wstrb(host_wstrb), .m_axi_wlast(host_wlast), .m_axi_wvalid(host_wvalid),
        .m_axi_wready(host_wready),
        .m_axi_bresp(host_bresp), .m_axi_bvalid(host_bvalid), .m_axi_bready(host_bready),
        .m_axi_araddr(host_araddr), .m_axi_arlen(host_arlen), .m_axi_arsize(host_arsize),
        .m_axi_arburst(host_arburst), .m_axi_arlock(), .m_axi_arcache(), .m_axi_arprot(), .m_axi_arregion(),
        .m_axi_arqos(), .m_axi_arvalid(host_arvalid), .m_axi_arready(host_arready),
        .m_axi_rdata(host_rdata), .m_axi_rresp(host_rresp), .m_axi_rlast(host_rlast), .m_axi_rvalid(host_rvalid),
        .m_axi_rready(host_rready)
    );

    rnic_top rnic (
        .clock(clk), .reset(reset),
        .s_axil_awaddr(lite_awaddr[15:0]), .s_axil_awvalid(lite_awvalid), .s_axil_awready(lite_awready),
        .s_axil_wdata(lite_wdata), .s_axil_wstrb(lite_wstrb), .s_axil_wvalid(lite_wvalid),
        .s_axil_wready(lite_wready), .s_axil_bresp(lite_bresp), .s_axil_bvalid(lite_bvalid),
        .s_axil_bready(lite_bready),
        .s_axil_araddr(lite_araddr[15:0]), .s_axil_arvalid(lite_arvalid), .s_axil_arready(lite_arready),
        .s_axil_rdata(lite_rdata), .s_axil_rresp(lite_rresp), .s_axil_rvalid(lite_rvalid),
        .s_axil_rready(lite_rready),
        .m_axi_awaddr(dma_awaddr), .m_axi_awlen(dma_awlen), .m_axi_awsize(dma_awsize),
        .m_axi_awburst(dma_awburst), .m_axi_awvalid(dma_awvalid), .m_axi_awready(dma_awready),
        .m_axi_wdata(dma_wdata), .m_axi_wstrb(dma_wstrb), .m_axi_wlast(dma_wlast), .m_axi_wvalid(dma_wvalid),
        .m_axi_wready(dma_wready), .m_axi_bresp(dma_bresp), .m_axi_bvalid(dma_bvalid), .m_axi_bready(dma_bready),
        .m_axi_araddr(dma_araddr), .m_axi_arlen(dma_arlen), .m_axi_arsize(dma_arsize),
        .m_axi_arburst(dma_arburst), .m_axi_arvalid(dma_arvalid), .m_axi_arready(dma_arready),
        .m_axi_rdata(dma_rdata), .m_axi_rresp(dma_rresp), .m_axi_rlast(dma_rlast), .m_axi_rvalid(dma_rvalid),
        .m_axi_rready(dma_rready),
        .irq_valid(irq_valid), .irq_ready(irq_ready | !msi_enable), .irq_vector(irq_vector),
        .m_axis_tx_tdata(tx_tdata), .m_axis_tx_tkeep(tx_tkeep), .m_axis_tx_tlast(tx_tlast),
        .m_axis_tx_tvalid(tx_tvalid), .m_axis_tx_tready(tx_tready), .m_axis_tx_tuser(tx_tuser),
        .s_axis_rx_tdata(tx_tdata), .s_axis_rx_tkeep(tx_tkeep), .s_axis_rx_tlast(tx_tlast),
        .s_axis_rx_tvalid(tx_tvalid), .s_axis_rx_tready(tx_tready), .s_axis_rx_tuser(tx_tuser)
    );

    reg irq_seen = 1'b0;
    always @(posedge clk) if (irq_valid) irq_seen <= 1'b1;
    assign led = {!reset, irq_seen, link_up};
endmodule
`default_nettype wire
