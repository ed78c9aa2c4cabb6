// The ULX3S build's synthesized netlist as the simulator runs it: `rnic_ulx3s` here is
// yosys' flattened netlist of the bitstream (bitstream/netlist-sim writes it from
// board-build's netlist.json), its cells simulated by yosys' ECP5 cell models and its PLL
// by bitstream/ecp5/ehxplll_stub.v. Built only when RNIC_BOARD_NETLIST names the netlist
// (sim/build.rs); the clock and baud are the ones the bitstream was built with.
`default_nettype none
module rnic_board_netlist(clock, btn_n, host_txd, host_rxd, led);
    input wire clock;
    input wire btn_n;
    input wire host_txd;
    output wire host_rxd;
    output wire [7:0] led;

    rnic_ulx3s board (
        .clk_25mhz(clock), .ftdi_rxd(host_rxd), .ftdi_txd(host_txd), .led(led), .btn(btn_n)
    );
endmodule
`default_nettype wire
