// yosys' ECP5 cell models for the netlist simulation (bitstream/netlist-sim): the files
// its share/lattice/cells_sim_ecp5.v includes (LUT4, PFUMX, L6MUX21, TRELLIS_DPR16X4, CCU2C,
// TRELLIS_FF, the I/O cells), without that file's DP16KD, which declares the block RAM's
// ports only; dp16kd_sim.v models it instead. sim/build.rs puts yosys' directory on the
// include path.
`include "common_sim.vh"
`include "ccu2c_sim.vh"
`include "cells_ff.vh"
`include "cells_io.vh"
