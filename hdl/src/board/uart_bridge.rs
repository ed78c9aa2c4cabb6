//! UART-to-bus bridge for a board without PCIe: a host on a serial line reaches the
//! RNIC's BAR0 (an AXI4-Lite master) and the board's host memory (the 32-bit host port of
//! a [`crate::host::DevMem`]) with four requests.
//!
//! Serial format: 8N1 at `clks_per_bit` clock cycles per bit ([`UartRx`], [`UartTx`]).
//!
//! Requests: an opcode byte, a 16-bit address (two bytes, little-endian), then for writes
//! a 32-bit value (four bytes, little-endian):
//!
//! | opcode | request | response |
//! |---|---|---|
//! | `0x01` | BAR0 write: `01 a0 a1 d0 d1 d2 d3` | `81` (`c1` if BRESP was not OKAY) |
//! | `0x02` | BAR0 read: `02 a0 a1` | `82 d0 d1 d2 d3` (`c2 ...` if RRESP was not OKAY) |
//! | `0x03` | host-memory write: `03 a0 a1 d0 d1 d2 d3` | `83` |
//! | `0x04` | host-memory read: `04 a0 a1` | `84 d0 d1 d2 d3` |
//!
//! The status byte is `0x80 | opcode`, with bit 6 set when the AXI-Lite response was not
//! OKAY (a read still returns the data the slave gave). Writes set all four strobes.
//! Host-memory addresses are octet offsets whose two low bits are ignored. Any other
//! opcode byte is answered with `0xFF` and dropped: the parser stays at the start of a
//! frame. A frame whose next byte has not arrived 65 536 clock cycles after the previous
//! one is dropped without an answer, so a host can always get back in step by pausing
//! (about 5 ms at 12.5 MHz) and sending a whole request.
//!
//! Requests run one at a time, in order. The next request is parsed while the previous
//! one runs and is answered, and a complete request waits until the previous one is done;
//! bytes that arrive while a complete request is waiting are dropped. Responses go
//! through an eight-byte queue to the transmitter, so the bridge is ready for the next
//! request as soon as the bus access is done (a few cycles for the RNIC's BAR0), not
//! once the response is sent: a host that sends its next request when the previous
//! response has begun to arrive never loses a byte. A bus access that never ends hangs
//! the bridge until reset.
use rust_hdl::prelude::*;

use super::{UartRx, UartTx};
use crate::common::SmallFifo;

/// Executor states.
const IDLE: u8 = 0;
const AXIL_WRITE: u8 = 1;
const AXIL_READ: u8 = 2;
const HOST_WRITE: u8 = 3;
const HOST_READ: u8 = 4;
const HOST_DATA: u8 = 5;
const RESPOND: u8 = 6;

#[derive(LogicBlock)]
pub struct UartBridge {
    pub clock: Signal<In, Clock>,
    pub reset: Signal<In, Bit>,
    /// Clock cycles per bit (clock frequency / baud rate), at least 4.
    pub clks_per_bit: Signal<In, Bits<16>>,
    /// Serial line from the host (asynchronous) and to it.
    pub rxd: Signal<In, Bit>,
    pub txd: Signal<Out, Bit>,
    /// AXI4-Lite master: one access at a time.
    pub m_axil_awaddr: Signal<Out, Bits<16>>,
    pub m_axil_awvalid: Signal<Out, Bit>,
    pub m_axil_awready: Signal<In, Bit>,
    pub m_axil_wdata: Signal<Out, Bits<32>>,
    pub m_axil_wstrb: Signal<Out, Bits<4>>,
    pub m_axil_wvalid: Signal<Out, Bit>,
    pub m_axil_wready: Signal<In, Bit>,
    pub m_axil_bresp: Signal<In, Bits<2>>,
    pub m_axil_bvalid: Signal<In, Bit>,
    pub m_axil_bready: Signal<Out, Bit>,
    pub m_axil_araddr: Signal<Out, Bits<16>>,
    pub m_axil_arvalid: Signal<Out, Bit>,
    pub m_axil_arready: Signal<In, Bit>,
    pub m_axil_rdata: Signal<In, Bits<32>>,
    pub m_axil_rresp: Signal<In, Bits<2>>,
    pub m_axil_rvalid: Signal<In, Bit>,
    pub m_axil_rready: Signal<Out, Bit>,
    /// Host-memory port (a `DevMem` host port): one-cycle write and read pulses; read
    /// data is taken the cycle after `h_rd_en`.
    pub h_wr_en: Signal<Out, Bit>,
    pub h_wr_addr: Signal<Out, Bits<16>>,
    pub h_wr_data: Signal<Out, Bits<32>>,
    pub h_wr_strb: Signal<Out, Bits<4>>,
    pub h_rd_en: Signal<Out, Bit>,
    pub h_rd_addr: Signal<Out, Bits<16>>,
    pub h_rd_data: Signal<In, Bits<32>>,
    rx: UartRx,
    tx: UartTx,
    /// Response bytes on their way to the transmitter.
    responses: SmallFifo<8>,
    // Parser: bytes of the frame so far (0: expecting an opcode), the frame's fields
    // (shifted in from the top, so little-endian values end up in place), a complete
    // request waiting for the executor, and cycles since the last byte.
    p_count: DFF<Bits<3>>,
    p_op: DFF<Bits<8>>,
    p_addr: DFF<Bits<16>>,
    p_data: DFF<Bits<32>>,
    p_full: DFF<Bit>,
    p_timer: DFF<Bits<17>>,
    // Executor: the request being carried out and its response.
    state: DFF<Bits<3>>,
    addr: DFF<Bits<16>>,
    /// Write data, then read data (shifted out a byte at a time in the response).
    data: DFF<Bits<32>>,
    status: DFF<Bits<8>>,
    /// Response bytes still to queue, the status byte included.
    left: DFF<Bits<3>>,
    first: DFF<Bit>,
    aw_pend: DFF<Bit>,
    w_pend: DFF<Bit>,
    ar_pend: DFF<Bit>,
    s_idle: Constant<Bits<3>>,
    s_axil_write: Constant<Bits<3>>,
    s_axil_read: Constant<Bits<3>>,
    s_host_write: Constant<Bits<3>>,
    s_host_read: Constant<Bits<3>>,
    s_host_data: Constant<Bits<3>>,
    s_respond: Constant<Bits<3>>,
    take: Signal<Local, Bit>,
    byte_in: Signal<Local, Bit>,
    known_op: Signal<Local, Bit>,
}

impl Default for UartBridge {
    fn default() -> Self {
        let state = |s: u8| Constant::new(s.to_bits());
        UartBridge {
            clock: Default::default(),
            reset: Default::default(),
            clks_per_bit: Default::default(),
            rxd: Default::default(),
            txd: Default::default(),
            m_axil_awaddr: Default::default(),
            m_axil_awvalid: Default::default(),
            m_axil_awready: Default::default(),
            m_axil_wdata: Default::default(),
            m_axil_wstrb: Default::default(),
            m_axil_wvalid: Default::default(),
            m_axil_wready: Default::default(),
            m_axil_bresp: Default::default(),
            m_axil_bvalid: Default::default(),
            m_axil_bready: Default::default(),
            m_axil_araddr: Default::default(),
            m_axil_arvalid: Default::default(),
            m_axil_arready: Default::default(),
            m_axil_rdata: Default::default(),
            m_axil_rresp: Default::default(),
            m_axil_rvalid: Default::default(),
            m_axil_rready: Default::default(),
            h_wr_en: Default::default(),
            h_wr_addr: Default::default(),
            h_wr_data: Default::default(),
            h_wr_strb: Default::default(),
            h_rd_en: Default::default(),
            h_rd_addr: Default::default(),
            h_rd_data: Default::default(),
            rx: Default::default(),
            tx: Default::default(),
            responses: Default::default(),
            p_count: Default::default(),
            p_op: Default::default(),
            p_addr: Default::default(),
            p_data: Default::default(),
            p_full: Default::default(),
            p_timer: Default::default(),
            state: Default::default(),
            addr: Default::default(),
            data: Default::default(),
            status: Default::default(),
            left: Default::default(),
            first: Default::default(),
            aw_pend: Default::default(),
            w_pend: Default::default(),
            ar_pend: Default::default(),
            s_idle: state(IDLE),
            s_axil_write: state(AXIL_WRITE),
            s_axil_read: state(AXIL_READ),
            s_host_write: state(HOST_WRITE),
            s_host_read: state(HOST_READ),
            s_host_data: state(HOST_DATA),
            s_respond: state(RESPOND),
            take: Default::default(),
            byte_in: Default::default(),
            known_op: Default::default(),
        }
    }
}

impl Logic for UartBridge {
    #[hdl_gen]
    fn update(&mut self) {
        dff_setup!(
            self, clock, p_count, p_op, p_addr, p_data, p_full, p_timer, state, addr, data, status, left, first,
            aw_pend, w_pend, ar_pend
        );
        self.rx.clock.next = self.clock.val();
        self.rx.reset.next = self.reset.val();
        self.rx.clks_per_bit.next = self.clks_per_bit.val();
        self.rx.rxd.next = self.rxd.val();
        self.tx.clock.next = self.clock.val();
        self.tx.reset.next = self.reset.val();
        self.tx.clks_per_bit.next = self.clks_per_bit.val();
        self.responses.clock.next = self.clock.val();
        self.responses.reset.next = self.reset.val();
        self.tx.data.next = self.responses.m_data.val();
        self.tx.valid.next = self.responses.m_valid.val();
        self.responses.m_ready.next = self.tx.ready.val();
        self.txd.next = self.tx.txd.val();

        // ---- Parser. The executor takes a complete request as soon as it is idle; a byte
        // is looked at if the parser is not holding one (or hands it over this cycle).
        self.take.next = (self.state.q.val() == self.s_idle.val()) & self.p_full.q.val();
        if self.take.val() {
            self.p_full.d.next = false;
        }
        self.byte_in.next = self.rx.valid.val() & (!self.p_full.q.val() | self.take.val());
        // Cycles since the last byte, counted within a frame: at 65 536 the frame is dropped.
        self.p_timer.d.next = self.p_timer.q.val() + 1;
        if self.rx.valid.val() | !self.p_count.q.val().any() {
            self.p_timer.d.next = 1.into();
        }
        if self.p_timer.q.val().get_bit(16) {
            self.p_count.d.next = 0.into();
        }
        self.known_op.next = (self.rx.data.val() == 1)
            | (self.rx.data.val() == 2)
            | (self.rx.data.val() == 3)
            | (self.rx.data.val() == 4);
        if self.byte_in.val() {
            if !self.p_count.q.val().any() {
                self.p_op.d.next = self.rx.data.val();
                if self.known_op.val() {
                    self.p_count.d.next = 1.into();
                } else {
                    // Answered with 0xFF by the executor; the parser stays at a frame start.
                    self.p_full.d.next = true;
                }
            } else if (self.p_count.q.val() == 1) | (self.p_count.q.val() == 2) {
                self.p_addr.d.next = (self.p_addr.q.val() >> 8) | (bit_cast::<16, 8>(self.rx.data.val()) << 8);
                self.p_count.d.next = self.p_count.q.val() + 1;
                // Reads (opcodes 2 and 4, the even ones) end with the address.
                if (self.p_count.q.val() == 2) & !self.p_op.q.val().get_bit(0) {
                    self.p_count.d.next = 0.into();
                    self.p_full.d.next = true;
                }
            } else {
                self.p_data.d.next = (self.p_data.q.val() >> 8) | (bit_cast::<32, 8>(self.rx.data.val()) << 24);
                self.p_count.d.next = self.p_count.q.val() + 1;
                if self.p_count.q.val() == 6 {
                    self.p_count.d.next = 0.into();
                    self.p_full.d.next = true;
                }
            }
        }

        // ---- Executor.
        if self.take.val() {
            self.addr.d.next = self.p_addr.q.val();
            self.data.d.next = self.p_data.q.val();
            self.status.d.next = self.p_op.q.val() | 0x80;
            self.first.d.next = true;
            self.left.d.next = 1.into();
            if self.p_op.q.val() == 1 {
                self.state.d.next = self.s_axil_write.val();
                self.aw_pend.d.next = true;
                self.w_pend.d.next = true;
            } else if self.p_op.q.val() == 2 {
                self.state.d.next = self.s_axil_read.val();
                self.ar_pend.d.next = true;
                self.left.d.next = 5.into();
            } else if self.p_op.q.val() == 3 {
                self.state.d.next = self.s_host_write.val();
            } else if self.p_op.q.val() == 4 {
                self.state.d.next = self.s_host_read.val();
                self.left.d.next = 5.into();
            } else {
                self.state.d.next = self.s_respond.val();
                self.status.d.next = 0xFF.into();
            }
        }
        // AXI4-Lite: address and data offered until taken, the response taken as it comes.
        self.m_axil_awaddr.next = self.addr.q.val();
        self.m_axil_awvalid.next = self.aw_pend.q.val();
        self.m_axil_wdata.next = self.data.q.val();
        self.m_axil_wstrb.next = 15.into();
        self.m_axil_wvalid.next = self.w_pend.q.val();
        self.m_axil_bready.next = self.state.q.val() == self.s_axil_write.val();
        self.m_axil_araddr.next = self.addr.q.val();
        self.m_axil_arvalid.next = self.ar_pend.q.val();
        self.m_axil_rready.next = self.state.q.val() == self.s_axil_read.val();
        if self.m_axil_awready.val() & self.aw_pend.q.val() {
            self.aw_pend.d.next = false;
        }
        if self.m_axil_wready.val() & self.w_pend.q.val() {
            self.w_pend.d.next = false;
        }
        if self.m_axil_arready.val() & self.ar_pend.q.val() {
            self.ar_pend.d.next = false;
        }
        if (self.state.q.val() == self.s_axil_write.val()) & self.m_axil_bvalid.val() {
            self.state.d.next = self.s_respond.val();
            if self.m_axil_bresp.val().any() {
                self.status.d.next = self.status.q.val() | 0x40;
            }
        }
        if (self.state.q.val() == self.s_axil_read.val()) & self.m_axil_rvalid.val() {
            self.state.d.next = self.s_respond.val();
            self.data.d.next = self.m_axil_rdata.val();
            if self.m_axil_rresp.val().any() {
                self.status.d.next = self.status.q.val() | 0x40;
            }
        }
        // Host memory: a one-cycle pulse; read data the cycle after.
        self.h_wr_en.next = self.state.q.val() == self.s_host_write.val();
        self.h_wr_addr.next = self.addr.q.val();
        self.h_wr_data.next = self.data.q.val();
        self.h_wr_strb.next = 15.into();
        self.h_rd_en.next = self.state.q.val() == self.s_host_read.val();
        self.h_rd_addr.next = self.addr.q.val();
        if self.state.q.val() == self.s_host_write.val() {
            self.state.d.next = self.s_respond.val();
        }
        if self.state.q.val() == self.s_host_read.val() {
            self.state.d.next = self.s_host_data.val();
        }
        if self.state.q.val() == self.s_host_data.val() {
            self.state.d.next = self.s_respond.val();
            self.data.d.next = self.h_rd_data.val();
        }
        // The response: the status byte, then the data bytes low first.
        self.responses.s_valid.next = self.state.q.val() == self.s_respond.val();
        self.responses.s_data.next = self.data.q.val().get_bits::<8>(0);
        if self.first.q.val() {
            self.responses.s_data.next = self.status.q.val();
        }
        if (self.state.q.val() == self.s_respond.val()) & self.responses.s_ready.val() {
            self.first.d.next = false;
            if !self.first.q.val() {
                self.data.d.next = self.data.q.val() >> 8;
            }
            self.left.d.next = self.left.q.val() - 1;
            if self.left.q.val() == 1 {
                self.state.d.next = self.s_idle.val();
            }
        }

        if self.reset.val() {
            self.p_count.d.next = 0.into();
            self.p_full.d.next = false;
            self.state.d.next = self.s_idle.val();
            self.aw_pend.d.next = false;
            self.w_pend.d.next = false;
            self.ar_pend.d.next = false;
        }
    }
}
