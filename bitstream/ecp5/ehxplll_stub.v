// Port-compatible stand-in for the ECP5 EHXPLLL primitive, for Verilator lint only
// (bitstream/board-build --lint): yosys maps the real primitive, which has no Verilog
// model here. The output simply follows the input and reports lock at once.
`default_nettype none
/* verilator lint_off UNUSEDPARAM */
/* verilator lint_off UNUSEDSIGNAL */
module EHXPLLL #(
    parameter CLKI_DIV = 1, parameter CLKFB_DIV = 1, parameter CLKOP_DIV = 8, parameter CLKOS_DIV = 8,
    parameter CLKOS2_DIV = 8, parameter CLKOS3_DIV = 8, parameter CLKOP_ENABLE = "ENABLED",
    parameter CLKOS_ENABLE = "DISABLED", parameter CLKOS2_ENABLE = "DISABLED",
    parameter CLKOS3_ENABLE = "DISABLED", parameter CLKOP_CPHASE = 0, parameter CLKOS_CPHASE = 0,
    parameter CLKOS2_CPHASE = 0, parameter CLKOS3_CPHASE = 0, parameter CLKOP_FPHASE = 0,
    parameter CLKOS_FPHASE = 0, parameter CLKOS2_FPHASE = 0, parameter CLKOS3_FPHASE = 0,
    parameter FEEDBK_PATH = "CLKOP", parameter CLKOP_TRIM_POL = "RISING",
    parameter CLKOP_TRIM_DELAY = 0, parameter CLKOS_TRIM_POL = "RISING", parameter CLKOS_TRIM_DELAY = 0,
    parameter OUTDIVIDER_MUXA = "DIVA", parameter OUTDIVIDER_MUXB = "DIVB",
    parameter OUTDIVIDER_MUXC = "DIVC", parameter OUTDIVIDER_MUXD = "DIVD",
    parameter PLL_LOCK_MODE = 0, parameter PLL_LOCK_DELAY = 200, parameter STDBY_ENABLE = "DISABLED",
    parameter REFIN_RESET = "DISABLED", parameter SYNC_ENABLE = "DISABLED",
    parameter INT_LOCK_STICKY = "ENABLED", parameter DPHASE_SOURCE = "DISABLED",
    parameter PLLRST_ENA = "DISABLED", parameter INTFB_WAKE = "DISABLED"
) (
    input  wire CLKI, CLKFB, PHASESEL1, PHASESEL0, PHASEDIR, PHASESTEP, PHASELOADREG, STDBY,
    input  wire PLLWAKESYNC, RST, ENCLKOP, ENCLKOS, ENCLKOS2, ENCLKOS3,
    output wire CLKOP, CLKOS, CLKOS2, CLKOS3, LOCK, INTLOCK, REFCLK, CLKINTFB
);
    assign CLKOP = CLKI;
    assign CLKOS = CLKI;
    assign CLKOS2 = CLKI;
    assign CLKOS3 = CLKI;
    assign LOCK = 1'b1;
    assign INTLOCK = 1'b1;
    assign REFCLK = CLKI;
    assign CLKINTFB = CLKI;
endmodule
/* verilator lint_on UNUSEDSIGNAL */
/* verilator lint_on UNUSEDPARAM */
`default_nettype wire
