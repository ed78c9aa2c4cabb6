# Vivado non-project build of the RNIC for the AMD Alveo U200 (xcu200-fsgd2104-2-e):
# rnic_top behind the DMA/Bridge Subsystem for PCIe (XDMA) in AXI Bridge mode, PCIe Gen3
# x8, wrapped by bitstream/vivado/rnic_au200.v, pins in constraints/au200.xdc.
#
#   vivado -mode batch -source bitstream/vivado/build.tcl [-tclargs OUT_DIR]
#
# Run from the repository root; OUT_DIR defaults to bitstream/build/au200. It writes
# rnic_au200.bit, rnic_au200.mcs (for the configuration flash), utilization and timing
# reports. docs/BRINGUP.md has the steps around it. This flow has not been run here (no
# Vivado on the development machine): IP property names follow Vivado 2022.2-2024.1.
set out [expr {[llength $argv] > 0 ? [lindex $argv 0] : "bitstream/build/au200"}]
set part xcu200-fsgd2104-2-e
file mkdir $out/ip
set_part $part

# The vendor IP, generated out of context.
proc make_ip {name vlnv props} {
    global out
    create_ip -vlnv $vlnv -module_name $name -dir $out/ip
    set_property -dict $props [get_ips $name]
    generate_target {synthesis instantiation_template} [get_ips $name]
    synth_ip [get_ips $name]
}

# PCIe: AXI Bridge mode. BAR0 (64 KiB) -> M_AXI_B at AXI address 0 (the RNIC's registers);
# S_AXI_B -> PCIe memory space one to one, so the RNIC's DMA addresses are the IOVAs the
# host's IOMMU gave the driver; MSI with 32 vectors for the RNIC's interrupt vectors.
make_ip pcie_bridge xilinx.com:ip:xdma:4.1 [list \
    CONFIG.functional_mode {AXI_Bridge} \
    CONFIG.mode_selection {Advanced} \
    CONFIG.pcie_blk_locn {X1Y2} \
    CONFIG.select_quad {GTY_Quad_227} \
    CONFIG.pl_link_cap_max_link_width {X8} \
    CONFIG.pl_link_cap_max_link_speed {8.0_GT/s} \
    CONFIG.ref_clk_freq {100_MHz} \
    CONFIG.axi_data_width {256_bit} \
    CONFIG.axisten_freq {250} \
    CONFIG.pf0_device_id {0001} \
    CONFIG.pf0_vendor_id {10EE} \
    CONFIG.pf0_class_code_base {02} \
    CONFIG.pf0_class_code_sub {00} \
    CONFIG.pf0_bar0_enabled {true} \
    CONFIG.pf0_bar0_size {64} \
    CONFIG.pf0_bar0_scale {Kilobytes} \
    CONFIG.pf0_bar0_64bit {false} \
    CONFIG.pciebar2axibar_0 {0x0000000000000000} \
    CONFIG.en_axi_slave_if {true} \
    CONFIG.axibar_num {1} \
    CONFIG.axibar_0 {0x0000000000000000} \
    CONFIG.axibar_highaddr_0 {0xFFFFFFFFFFFFFFFF} \
    CONFIG.axibar2pciebar_0 {0x0000000000000000} \
    CONFIG.pf0_msi_enabled {true} \
    CONFIG.pf0_msi_cap_multimsgcap {32_vectors} \
]

# BAR0 master (256-bit AXI4) -> 32-bit AXI4 -> AXI4-Lite for the RNIC's registers.
make_ip bar_downsizer xilinx.com:ip:axi_dwidth_converter:2.1 [list \
    CONFIG.PROTOCOL {AXI4} CONFIG.ADDR_WIDTH {64} CONFIG.SI_DATA_WIDTH {256} CONFIG.MI_DATA_WIDTH {32} \
    CONFIG.SI_ID_WIDTH {4} \
]
make_ip bar_to_lite xilinx.com:ip:axi_protocol_converter:2.1 [list \
    CONFIG.SI_PROTOCOL {AXI4} CONFIG.MI_PROTOCOL {AXI4LITE} CONFIG.DATA_WIDTH {32} CONFIG.ADDR_WIDTH {64} \
    CONFIG.TRANSLATION_MODE {2} \
]
# The RNIC's 64-bit DMA master -> the bridge's 256-bit slave.
make_ip dma_upsizer xilinx.com:ip:axi_dwidth_converter:2.1 [list \
    CONFIG.PROTOCOL {AXI4} CONFIG.ADDR_WIDTH {64} CONFIG.SI_DATA_WIDTH {64} CONFIG.MI_DATA_WIDTH {256} \
    CONFIG.SI_ID_WIDTH {0} \
]

# The design: the generated RNIC (never edited by hand) and the board wrapper.
read_verilog hdl/verilog/rnic_top.v bitstream/vivado/rnic_au200.v
read_xdc constraints/au200.xdc
synth_design -top rnic_au200 -part $part
opt_design
place_design
phys_opt_design
route_design
report_utilization -hierarchical -hierarchical_depth 2 -file $out/utilization.txt
report_timing_summary -max_paths 20 -file $out/timing.txt
write_bitstream -force $out/rnic_au200.bit
write_cfgmem -force -format mcs -size 128 -interface SPIx4 \
    -loadbit "up 0x01002000 $out/rnic_au200.bit" -file $out/rnic_au200.mcs
puts "rnic_au200: $out/rnic_au200.bit, reports in $out"
