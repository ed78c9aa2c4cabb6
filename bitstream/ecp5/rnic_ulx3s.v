// ULX3S shell for the RNIC (board glue; the RNIC itself is hdl/verilog/rnic_top_q16.v, or
// the module RNIC_CORE names, and the UART bridge and host memory are
// hdl/verilog/rnic_board_*.v, all generated). Built by bitstream/board-build with
// constraints/ulx3s.lpf:
//
//   clk_25mhz -> rnic_pll (EHXPLLL, written by ecppll at build time) -> clk (CLK_HZ)
//   host --USB serial (ftdi_txd/ftdi_rxd)--> uart bridge --AXI4-Lite--> rnic s_axil (BAR0)
//                                                        --host port--> host memory
//                                                        <--interrupts-- rnic irq
//   rnic m_axi (64-bit AXI4, DMA) -> host memory: 64 KiB of block RAM (addresses wrap)
//   rnic m_axis_tx -> s_axis_rx: the TX stream looped back into the RX stream
//
// The board has no PCIe, so the serial bridge stands in for the host CPU's BAR0 accesses
// and for its view of host memory, and the RNIC's QPs can be linked to each other through
// the loopback (CONN_ID = the peer QP's number), as on the Alveo build. Interrupts are
// always granted, latched by the bridge for the host to poll (rnic_proto::bridge, IRQ),
// and shown on an LED.
//
// LEDs: 0 heartbeat (1 Hz), 1 toggles on each interrupt, 2 stream beats (loopback),
// 3 serial traffic, 4 DMA traffic, 5 off, 6 reset held, 7 PLL locked.
`default_nettype none
// The RNIC build in the shell: rnic_top_q16 (16 QPs) fits the LFE5U-85F; the default
// rnic_top (64 QPs) synthesizes and places but does not route on it.
`ifndef RNIC_CORE
`define RNIC_CORE rnic_top_q16
`endif
// Registers are declared with their power-up values (the ECP5 loads them at configuration),
// which Verilator's lint would otherwise flag.
/* verilator lint_off PROCASSINIT */
module rnic_ulx3s #(
    parameter integer CLK_HZ = 12500000,  // the PLL's output; board-build sets it
    parameter integer BAUD = 115200
) (
    input  wire       clk_25mhz,
    output wire       ftdi_rxd,  // to the FTDI chip's RXD: the FPGA transmits
    input  wire       ftdi_txd,  // from the FTDI chip's TXD: the FPGA receives
    output wire [7:0] led,
    input  wire [0:0] btn        // btn[0]: BTN_PWRn, low while pressed
);
    localparam [15:0] CLKS_PER_BIT = (CLK_HZ + BAUD / 2) / BAUD;
    localparam integer HALF_SECOND = CLK_HZ / 2;
    localparam [7:0] HOST_MEM_LOG2 = 8'd16;  // rnic_board_host_mem: 64 KiB

    wire clk, pll_locked;
    rnic_pll pll (.clkin(clk_25mhz), .clkout0(clk), .locked(pll_locked));

    // Reset: asserted at once while the button is pressed or the PLL is not locked,
    // released 16 cycles after both are fine, in step with clk. (The RNIC registers its
    // reset input again inside.)
    wire reset_async = !btn[0] || !pll_locked;
    reg [15:0] reset_sr = 16'hffff;
    always @(posedge clk or posedge reset_async)
        if (reset_async) reset_sr <= 16'hffff;
        else reset_sr <= {reset_sr[14:0], 1'b0};
    wire reset = reset_sr[15];

    // BAR0 (AXI4-Lite) from the bridge.
    wire [15:0] lite_awaddr, lite_araddr;
    wire        lite_awvalid, lite_awready, lite_wvalid, lite_wready, lite_bvalid, lite_bready;
    wire        lite_arvalid, lite_arready, lite_rvalid, lite_rready;
    wire [31:0] lite_wdata, lite_rdata;
    wire [3:0]  lite_wstrb;
    wire [1:0]  lite_bresp, lite_rresp;
    // The bridge's port into host memory.
    wire        h_wr_en, h_rd_en;
    wire [15:0] h_wr_addr, h_rd_addr;
    wire [31:0] h_wr_data, h_rd_data;
    wire [3:0]  h_wr_strb;
    // The RNIC's DMA master.
    wire [63:0] dma_awaddr, dma_araddr, dma_wdata, dma_rdata;
    wire [7:0]  dma_awlen, dma_arlen, dma_wstrb;
    wire [2:0]  dma_awsize, dma_arsize;
    wire [1:0]  dma_awburst, dma_arburst, dma_bresp, dma_rresp;
    wire        dma_awvalid, dma_awready, dma_wlast, dma_wvalid, dma_wready, dma_bvalid, dma_bready;
    wire        dma_arvalid, dma_arready, dma_rlast, dma_rvalid, dma_rready;
    // Interrupts and the looped-back stream.
    wire        irq_valid;
    wire [15:0] irq_vector;
    wire [63:0] tx_tdata;
    wire [7:0]  tx_tkeep;
    wire [15:0] tx_tuser;
    wire        tx_tlast, tx_tvalid, tx_tready;

    rnic_board_uart_bridge bridge (
        .clock(clk), .reset(reset), .clks_per_bit(CLKS_PER_BIT), .mem_log2(HOST_MEM_LOG2),
        .rxd(ftdi_txd), .txd(ftdi_rxd),
        .m_axil_awaddr(lite_awaddr), .m_axil_awvalid(lite_awvalid), .m_axil_awready(lite_awready),
        .m_axil_wdata(lite_wdata), .m_axil_wstrb(lite_wstrb), .m_axil_wvalid(lite_wvalid),
        .m_axil_wready(lite_wready), .m_axil_bresp(lite_bresp), .m_axil_bvalid(lite_bvalid),
        .m_axil_bready(lite_bready),
        .m_axil_araddr(lite_araddr), .m_axil_arvalid(lite_arvalid), .m_axil_arready(lite_arready),
        .m_axil_rdata(lite_rdata), .m_axil_rresp(lite_rresp), .m_axil_rvalid(lite_rvalid),
        .m_axil_rready(lite_rready),
        .h_wr_en(h_wr_en), .h_wr_addr(h_wr_addr), .h_wr_data(h_wr_data), .h_wr_strb(h_wr_strb),
        .h_rd_en(h_rd_en), .h_rd_addr(h_rd_addr), .h_rd_data(h_rd_data),
        .irq_valid(irq_valid), .irq_vector(irq_vector)
    );

    rnic_board_host_mem host_mem (
        .clock(clk), .reset(reset),
        .s_axi_awaddr(dma_awaddr), .s_axi_awlen(dma_awlen), .s_axi_awsize(dma_awsize),
        .s_axi_awburst(dma_awburst), .s_axi_awvalid(dma_awvalid), .s_axi_awready(dma_awready),
        .s_axi_wdata(dma_wdata), .s_axi_wstrb(dma_wstrb), .s_axi_wlast(dma_wlast),
        .s_axi_wvalid(dma_wvalid), .s_axi_wready(dma_wready),
        .s_axi_bresp(dma_bresp), .s_axi_bvalid(dma_bvalid), .s_axi_bready(dma_bready),
        .s_axi_araddr(dma_araddr), .s_axi_arlen(dma_arlen), .s_axi_arsize(dma_arsize),
        .s_axi_arburst(dma_arburst), .s_axi_arvalid(dma_arvalid), .s_axi_arready(dma_arready),
        .s_axi_rdata(dma_rdata), .s_axi_rresp(dma_rresp), .s_axi_rlast(dma_rlast),
        .s_axi_rvalid(dma_rvalid), .s_axi_rready(dma_rready),
        .h_wr_en(h_wr_en), .h_wr_addr(h_wr_addr), .h_wr_data(h_wr_data), .h_wr_strb(h_wr_strb),
        .h_rd_en(h_rd_en), .h_rd_addr(h_rd_addr), .h_rd_data(h_rd_data)
    );

    `RNIC_CORE rnic (
        .clock(clk), .reset(reset),
        .s_axil_awaddr(lite_awaddr), .s_axil_awvalid(lite_awvalid), .s_axil_awready(lite_awready),
        .s_axil_wdata(lite_wdata), .s_axil_wstrb(lite_wstrb), .s_axil_wvalid(lite_wvalid),
        .s_axil_wready(lite_wready), .s_axil_bresp(lite_bresp), .s_axil_bvalid(lite_bvalid),
        .s_axil_bready(lite_bready),
        .s_axil_araddr(lite_araddr), .s_axil_arvalid(lite_arvalid), .s_axil_arready(lite_arready),
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
        .irq_valid(irq_valid), .irq_ready(1'b1), .irq_vector(irq_vector),
        .m_axis_tx_tdata(tx_tdata), .m_axis_tx_tkeep(tx_tkeep), .m_axis_tx_tlast(tx_tlast),
        .m_axis_tx_tvalid(tx_tvalid), .m_axis_tx_tready(tx_tready), .m_axis_tx_tuser(tx_tuser),
        .s_axis_rx_tdata(tx_tdata), .s_axis_rx_tkeep(tx_tkeep), .s_axis_rx_tlast(tx_tlast),
        .s_axis_rx_tvalid(tx_tvalid), .s_axis_rx_tready(tx_tready), .s_axis_rx_tuser(tx_tuser)
    );

    // ---- LEDs. Short events are stretched to about 2^20 cycles (84 ms at 12.5 MHz).
    reg [31:0] beat_count = 0;
    reg heartbeat = 1'b0;
    always @(posedge clk)
        if (beat_count >= HALF_SECOND - 1) begin
            beat_count <= 0;
            heartbeat <= !heartbeat;
        end else beat_count <= beat_count + 1;

    reg irq_toggle = 1'b0;
    always @(posedge clk) if (irq_valid) irq_toggle <= !irq_toggle;  // irq_ready is always high

    wire stream_beat = tx_tvalid && tx_tready;
    reg [1:0] host_line = 2'b11;  // ftdi_txd is asynchronous: synchronized first
    always @(posedge clk) host_line <= {host_line[0], ftdi_txd};
    wire serial_busy = !host_line[1] || !ftdi_rxd;  // a start bit or a zero on either line
    wire dma_beat = (dma_wvalid && dma_wready) || (dma_rvalid && dma_rready);
    wire [19:0] stream_left, serial_left, dma_left;
    rnic_ulx3s_stretch stretch_stream (.clk(clk), .event_in(stream_beat), .left(stream_left));
    rnic_ulx3s_stretch stretch_serial (.clk(clk), .event_in(serial_busy), .left(serial_left));
    rnic_ulx3s_stretch stretch_dma (.clk(clk), .event_in(dma_beat), .left(dma_left));

    assign led = {pll_locked, reset, 1'b0, |dma_left, |serial_left, |stream_left, irq_toggle, heartbeat};
endmodule

// Holds `left` non-zero for 2^20 - 1 cycles after the last cycle `event_in` was high.
module rnic_ulx3s_stretch (
    input  wire        clk,
    input  wire        event_in,
    output reg  [19:0] left = 0
);
    always @(posedge clk)
        if (event_in) left <= 20'hfffff;
        else if (left != 0) left <= left - 1;
endmodule
/* verilator lint_on PROCASSINIT */
`default_nettype wire
