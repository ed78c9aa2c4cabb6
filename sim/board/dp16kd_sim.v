// A behavioural model of the ECP5 block RAM, DP16KD, for the netlist simulation
// (bitstream/netlist-sim): yosys' ECP5 cell library declares DP16KD with its ports and
// parameters only, so without this every block RAM of a netlist would hold nothing.
//
// It covers what yosys' block-RAM mapping (share/lattice/brams_map_16kd.v) emits: both
// ports the same width, 1, 2, 4, 9 or 18 bits as a true dual port, 36 bits as a pseudo
// dual port (port A writes DIA and DIB, port B reads DOA and DOB); REGMODE NOREG (the
// read data registered once, at the clock edge); WRITEMODE NORMAL, WRITETHROUGH or
// READBEFOREWRITE; byte enables on AD[1:0] at 18 bits and AD[3:0] at 36 bits; RST
// clearing the output; chip selects tied to CSDECODE; INITVAL all zero (the RNIC's RAMs
// start cleared). The memory is 1024 words of 18 bits; narrower ports address bits of a
// word's 16 data bits, 9 bits half a word, 36 bits two words. A read and a write of the
// same address in one cycle by the two ports reads the old contents.
`default_nettype none
/* verilator lint_off UNUSEDPARAM */
/* verilator lint_off UNUSEDSIGNAL */
module DP16KD #(
    parameter DATA_WIDTH_A = 18, parameter DATA_WIDTH_B = 18,
    parameter REGMODE_A = "NOREG", parameter REGMODE_B = "NOREG",
    parameter RESETMODE = "SYNC", parameter ASYNC_RESET_RELEASE = "SYNC",
    parameter CSDECODE_A = "0b000", parameter CSDECODE_B = "0b000",
    parameter WRITEMODE_A = "NORMAL", parameter WRITEMODE_B = "NORMAL",
    parameter CLKAMUX = "CLKA", parameter CLKBMUX = "CLKB",
    parameter GSR = "ENABLED",
    parameter [319:0] INITVAL_00 = 0, parameter [319:0] INITVAL_01 = 0, parameter [319:0] INITVAL_02 = 0,
    parameter [319:0] INITVAL_03 = 0, parameter [319:0] INITVAL_04 = 0, parameter [319:0] INITVAL_05 = 0,
    parameter [319:0] INITVAL_06 = 0, parameter [319:0] INITVAL_07 = 0, parameter [319:0] INITVAL_08 = 0,
    parameter [319:0] INITVAL_09 = 0, parameter [319:0] INITVAL_0A = 0, parameter [319:0] INITVAL_0B = 0,
    parameter [319:0] INITVAL_0C = 0, parameter [319:0] INITVAL_0D = 0, parameter [319:0] INITVAL_0E = 0,
    parameter [319:0] INITVAL_0F = 0, parameter [319:0] INITVAL_10 = 0, parameter [319:0] INITVAL_11 = 0,
    parameter [319:0] INITVAL_12 = 0, parameter [319:0] INITVAL_13 = 0, parameter [319:0] INITVAL_14 = 0,
    parameter [319:0] INITVAL_15 = 0, parameter [319:0] INITVAL_16 = 0, parameter [319:0] INITVAL_17 = 0,
    parameter [319:0] INITVAL_18 = 0, parameter [319:0] INITVAL_19 = 0, parameter [319:0] INITVAL_1A = 0,
    parameter [319:0] INITVAL_1B = 0, parameter [319:0] INITVAL_1C = 0, parameter [319:0] INITVAL_1D = 0,
    parameter [319:0] INITVAL_1E = 0, parameter [319:0] INITVAL_1F = 0, parameter [319:0] INITVAL_20 = 0,
    parameter [319:0] INITVAL_21 = 0, parameter [319:0] INITVAL_22 = 0, parameter [319:0] INITVAL_23 = 0,
    parameter [319:0] INITVAL_24 = 0, parameter [319:0] INITVAL_25 = 0, parameter [319:0] INITVAL_26 = 0,
    parameter [319:0] INITVAL_27 = 0, parameter [319:0] INITVAL_28 = 0, parameter [319:0] INITVAL_29 = 0,
    parameter [319:0] INITVAL_2A = 0, parameter [319:0] INITVAL_2B = 0, parameter [319:0] INITVAL_2C = 0,
    parameter [319:0] INITVAL_2D = 0, parameter [319:0] INITVAL_2E = 0, parameter [319:0] INITVAL_2F = 0,
    parameter [319:0] INITVAL_30 = 0, parameter [319:0] INITVAL_31 = 0, parameter [319:0] INITVAL_32 = 0,
    parameter [319:0] INITVAL_33 = 0, parameter [319:0] INITVAL_34 = 0, parameter [319:0] INITVAL_35 = 0,
    parameter [319:0] INITVAL_36 = 0, parameter [319:0] INITVAL_37 = 0, parameter [319:0] INITVAL_38 = 0,
    parameter [319:0] INITVAL_39 = 0, parameter [319:0] INITVAL_3A = 0, parameter [319:0] INITVAL_3B = 0,
    parameter [319:0] INITVAL_3C = 0, parameter [319:0] INITVAL_3D = 0, parameter [319:0] INITVAL_3E = 0,
    parameter [319:0] INITVAL_3F = 0
) (
    input wire DIA17, DIA16, DIA15, DIA14, DIA13, DIA12, DIA11, DIA10, DIA9, DIA8, DIA7, DIA6, DIA5, DIA4,
    input wire DIA3, DIA2, DIA1, DIA0,
    input wire ADA13, ADA12, ADA11, ADA10, ADA9, ADA8, ADA7, ADA6, ADA5, ADA4, ADA3, ADA2, ADA1, ADA0,
    input wire CEA, OCEA, CLKA, WEA, RSTA, CSA2, CSA1, CSA0,
    output wire DOA17, DOA16, DOA15, DOA14, DOA13, DOA12, DOA11, DOA10, DOA9, DOA8, DOA7, DOA6, DOA5, DOA4,
    output wire DOA3, DOA2, DOA1, DOA0,
    input wire DIB17, DIB16, DIB15, DIB14, DIB13, DIB12, DIB11, DIB10, DIB9, DIB8, DIB7, DIB6, DIB5, DIB4,
    input wire DIB3, DIB2, DIB1, DIB0,
    input wire ADB13, ADB12, ADB11, ADB10, ADB9, ADB8, ADB7, ADB6, ADB5, ADB4, ADB3, ADB2, ADB1, ADB0,
    input wire CEB, OCEB, CLKB, WEB, RSTB, CSB2, CSB1, CSB0,
    output wire DOB17, DOB16, DOB15, DOB14, DOB13, DOB12, DOB11, DOB10, DOB9, DOB8, DOB7, DOB6, DOB5, DOB4,
    output wire DOB3, DOB2, DOB1, DOB0
);
    wire [17:0] dia = {DIA17, DIA16, DIA15, DIA14, DIA13, DIA12, DIA11, DIA10, DIA9, DIA8, DIA7, DIA6, DIA5,
                       DIA4, DIA3, DIA2, DIA1, DIA0};
    wire [17:0] dib = {DIB17, DIB16, DIB15, DIB14, DIB13, DIB12, DIB11, DIB10, DIB9, DIB8, DIB7, DIB6, DIB5,
                       DIB4, DIB3, DIB2, DIB1, DIB0};
    wire [13:0] ada = {ADA13, ADA12, ADA11, ADA10, ADA9, ADA8, ADA7, ADA6, ADA5, ADA4, ADA3, ADA2, ADA1, ADA0};
    wire [13:0] adb = {ADB13, ADB12, ADB11, ADB10, ADB9, ADB8, ADB7, ADB6, ADB5, ADB4, ADB3, ADB2, ADB1, ADB0};
    wire clka = (CLKAMUX == "INV") ? !CLKA : CLKA;
    wire clkb = (CLKBMUX == "INV") ? !CLKB : CLKB;
    localparam PDP = DATA_WIDTH_A == 36;

    reg [17:0] mem [0:1023];
    reg [17:0] doa = 18'b0, dob = 18'b0;
    assign {DOA17, DOA16, DOA15, DOA14, DOA13, DOA12, DOA11, DOA10, DOA9, DOA8, DOA7, DOA6, DOA5, DOA4, DOA3,
            DOA2, DOA1, DOA0} = doa;
    assign {DOB17, DOB16, DOB15, DOB14, DOB13, DOB12, DOB11, DOB10, DOB9, DOB8, DOB7, DOB6, DOB5, DOB4, DOB3,
            DOB2, DOB1, DOB0} = dob;

    integer i;
    initial begin
        for (i = 0; i < 1024; i = i + 1) mem[i] = 18'b0;
        if (DATA_WIDTH_A != DATA_WIDTH_B) begin
            $display("DP16KD model: ports of %0d and %0d bits are not modelled", DATA_WIDTH_A, DATA_WIDTH_B);
            $finish;
        end
    end

    // The bits of the 18-bit word that a port of width w at address ad covers, as a mask
    // and a shift: 1, 2, 4 bits of the 16 data bits; 9 bits half a word; 18 the word.
    function [17:0] lane_mask(input integer w, input [13:0] ad);
        case (w)
            1: lane_mask = 18'h1 << ad[3:0];
            2: lane_mask = 18'h3 << {ad[3:1], 1'b0};
            4: lane_mask = 18'hf << {ad[3:2], 2'b0};
            9: lane_mask = ad[3] ? 18'h3fe00 : 18'h001ff;
            default: lane_mask = 18'h3ffff;
        endcase
    endfunction
    function integer lane_shift(input integer w, input [13:0] ad);
        case (w)
            1: lane_shift = ad[3:0];
            2: lane_shift = {ad[3:1], 1'b0};
            4: lane_shift = {ad[3:2], 2'b0};
            9: lane_shift = ad[3] ? 9 : 0;
            default: lane_shift = 0;
        endcase
    endfunction
    // The 18-bit byte enables of an 18-bit port: AD[0] the low 9 bits, AD[1] the high.
    function [17:0] byte_mask(input [1:0] be);
        byte_mask = {{9{be[1]}}, {9{be[0]}}};
    endfunction

    // ---- A 36-bit pseudo dual port: A writes words 2k and 2k+1 under AD[3:0], B reads them.
    generate if (PDP) begin : pdp
        wire [8:0] w_word = ada[13:5];
        wire [8:0] r_word = adb[13:5];
        always @(posedge clka)
            if (CEA && WEA) begin
                mem[{w_word, 1'b0}] <= (mem[{w_word, 1'b0}] & ~byte_mask(ada[1:0])) | (dia & byte_mask(ada[1:0]));
                mem[{w_word, 1'b1}] <= (mem[{w_word, 1'b1}] & ~byte_mask(ada[3:2])) | (dib & byte_mask(ada[3:2]));
            end
        always @(posedge clkb)
            if (RSTB) {dob, doa} <= 36'b0;
            else if (CEB) {dob, doa} <= {mem[{r_word, 1'b1}], mem[{r_word, 1'b0}]};
    end else begin : dp
        // ---- A true dual port of 1 to 18 bits.
        wire [9:0] a_word = ada[13:4];
        wire [9:0] b_word = adb[13:4];
        wire [17:0] a_mask = DATA_WIDTH_A == 18 ? byte_mask(ada[1:0]) : lane_mask(DATA_WIDTH_A, ada);
        wire [17:0] b_mask = DATA_WIDTH_B == 18 ? byte_mask(adb[1:0]) : lane_mask(DATA_WIDTH_B, adb);
        wire [17:0] a_full = DATA_WIDTH_A == 18 ? 18'h3ffff : lane_mask(DATA_WIDTH_A, ada);
        wire [17:0] b_full = DATA_WIDTH_B == 18 ? 18'h3ffff : lane_mask(DATA_WIDTH_B, adb);
        wire [17:0] a_in = dia << lane_shift(DATA_WIDTH_A, ada);
        wire [17:0] b_in = dib << lane_shift(DATA_WIDTH_B, adb);
        wire [17:0] a_old = (mem[a_word] & a_full) >> lane_shift(DATA_WIDTH_A, ada);
        wire [17:0] b_old = (mem[b_word] & b_full) >> lane_shift(DATA_WIDTH_B, adb);
        wire [17:0] a_new = (((mem[a_word] & ~a_mask) | (a_in & a_mask)) & a_full) >> lane_shift(DATA_WIDTH_A, ada);
        wire [17:0] b_new = (((mem[b_word] & ~b_mask) | (b_in & b_mask)) & b_full) >> lane_shift(DATA_WIDTH_B, adb);
        always @(posedge clka) begin
            if (CEA && WEA) mem[a_word] <= (mem[a_word] & ~a_mask) | (a_in & a_mask);
            if (RSTA) doa <= 18'b0;
            else if (CEA && !WEA) doa <= a_old;
            else if (CEA && WRITEMODE_A == "READBEFOREWRITE") doa <= a_old;
            else if (CEA && WRITEMODE_A == "WRITETHROUGH") doa <= a_new;
        end
        always @(posedge clkb) begin
            if (CEB && WEB) mem[b_word] <= (mem[b_word] & ~b_mask) | (b_in & b_mask);
            if (RSTB) dob <= 18'b0;
            else if (CEB && !WEB) dob <= b_old;
            else if (CEB && WRITEMODE_B == "READBEFOREWRITE") dob <= b_old;
            else if (CEB && WRITEMODE_B == "WRITETHROUGH") dob <= b_new;
        end
    end endgenerate
endmodule
/* verilator lint_on UNUSEDSIGNAL */
/* verilator lint_on UNUSEDPARAM */
`default_nettype wire
