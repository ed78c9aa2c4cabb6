# AMD Alveo U200 (xcu200-fsgd2104-2-e): pins of the RNIC's PCIe shell
# (bitstream/vivado/rnic_au200.v). The PCIe lanes are placed by the XDMA IP
# (pcie_blk_locn X1Y2, GTY quads 227 and 226: lanes 0-7 of the edge connector).

set_property CFGBVS GND                             [current_design]
set_property CONFIG_VOLTAGE 1.8                     [current_design]
set_property BITSTREAM.GENERAL.COMPRESS true        [current_design]
set_property BITSTREAM.CONFIG.CONFIGRATE 63.8       [current_design]
set_property BITSTREAM.CONFIG.SPI_32BIT_ADDR YES    [current_design]
set_property BITSTREAM.CONFIG.SPI_BUSWIDTH 4        [current_design]
set_property BITSTREAM.CONFIG.SPI_FALL_EDGE YES     [current_design]
set_property BITSTREAM.CONFIG.UNUSEDPIN PULLUP      [current_design]

# PCIe reference clock (100 MHz, MGTREFCLK0 of quad 226) and PERST#.
set_property PACKAGE_PIN AM11 [get_ports pcie_refclk_p]
set_property PACKAGE_PIN AM10 [get_ports pcie_refclk_n]
create_clock -period 10.000 -name pcie_refclk [get_ports pcie_refclk_p]
set_property -dict {PACKAGE_PIN BD21 IOSTANDARD LVCMOS12 PULLUP true} [get_ports pcie_reset_n]
set_false_path -from [get_ports pcie_reset_n]

# LEDs: link up, RNIC interrupt seen, RNIC out of reset.
set_property -dict {PACKAGE_PIN BC21 IOSTANDARD LVCMOS12 SLEW SLOW DRIVE 8} [get_ports {led[0]}]
set_property -dict {PACKAGE_PIN BB21 IOSTANDARD LVCMOS12 SLEW SLOW DRIVE 8} [get_ports {led[1]}]
set_property -dict {PACKAGE_PIN BA20 IOSTANDARD LVCMOS12 SLEW SLOW DRIVE 8} [get_ports {led[2]}]
set_false_path -to [get_ports {led[*]}]
