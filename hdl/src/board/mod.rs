//! Board glue for FPGA boards without PCIe: a UART receiver and transmitter, and a bridge
//! that lets a host on a serial line reach the RNIC's BAR0, the board's host memory and
//! its interrupts
//! (`bitstream/ecp5/rnic_ulx3s.v` puts them around `rnic_top`).
mod crc8;
mod uart_bridge;
mod uart_rx;
mod uart_tx;

pub use crc8::Crc8Step;
pub use uart_bridge::UartBridge;
pub use uart_rx::UartRx;
pub use uart_tx::UartTx;
