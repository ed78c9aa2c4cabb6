// The ULX3S build as the simulator runs it (sim/build.rs verilates this file with
// bitstream/ecp5/rnic_ulx3s.v, the shell exactly as it is flashed, and the generated
// blocks it instantiates): the board's 25 MHz input is the model's clock, the PLL is the
// stub below (its output is its input, locked at once), and the clock and baud parameters
// give 4 clock cycles per bit, so that a simulated serial line stays short. The host side
// of the FTDI chip is `host_txd` (what the host sends) and `host_rxd` (what it receives).
`default_nettype none
module rnic_board_sim(clock, btn_n, host_txd, host_rxd, led);
    input wire clock;
    input wire btn_n;
    input wire host_txd;
    output wire host_rxd;
    output wire [7:0] led;

    rnic_ulx3s #(.CLK_HZ(12500000), .BAUD(3125000)) board (
        .clk_25mhz(clock), .ftdi_rxd(host_rxd), .ftdi_txd(host_txd), .led(led), .btn(btn_n)
    );
endmodule

// Stands in for the PLL that ecppll writes for a bitstream.
module rnic_pll(clkin, clkout0, locked);
    input wire clkin;
    output wire clkout0;
    output wire locked;
    assign clkout0 = clkin;
    assign locked = 1'b1;
endmodule
`default_nettype wire
