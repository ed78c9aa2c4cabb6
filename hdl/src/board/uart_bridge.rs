//! UART-to-bus bridge for a board without PCIe: a host on a serial line reaches the
//! RNIC's BAR0 (an AXI4-Lite master), the board's host memory (the 32-bit host port of a
//! [`crate::host::DevMem`]) and the RNIC's interrupts, speaking the protocol of
//! `rnic_proto::bridge` (SLIP frames with a CRC-8, sequence numbers, exactly once).
//!
//! Serial format: 8N1 at `clks_per_bit` clock cycles per bit ([`UartRx`], [`UartTx`]).
//!
//! **Receive.** A byte is undone from SLIP in one stage (registered), then appended to the
//! request RAM with the running CRC and the header fields it completes (sequence number,
//! opcode, address, count, strobes, and a BAR0 write's value) captured as it passes. At
//! [`END`] a non-empty frame goes to the executor. Bytes that arrive while the executor is
//! busy (a host that did not wait for its answer) are dropped up to the next [`END`],
//! and that frame is not answered.
//!
//! **Execute.** One cycle forms the checks (CRC zero, no overflow, a known opcode, the
//! length its opcode implies, a word count of 1..=16, the sequence number of the kept
//! response), the next decides: a NAK, the kept response again, or the request, which
//! builds its response in the response RAM: data from octet 2, then the sequence number
//! and the status. Host-memory writes gather each word from the request RAM, four reads,
//! then write it with its strobes; reads fetch a word and put its four octets.
//!
//! **Send.** The response RAM (or the two NAK octets) goes out SLIP-escaped with its CRC
//! between two [`END`]s, and stays in the RAM as the kept response until the next request
//! runs. Requests run one at a time; a bus access that never ends hangs the bridge until
//! reset.
use rnic_proto::bridge::{Op, END, ESC, ESC_END, ESC_ESC, MAX_WORDS, NAK, REQUEST_HEADER, STATUS_BUS_ERROR};
use rnic_proto::bridge::{STATUS_RESPONSE, VERSION};
use rust_hdl::prelude::*;

use super::{Crc8Step, UartRx, UartTx};

/// Address bits of the request and response RAMs: 128 octets, more than the longest
/// request (`rnic_proto::bridge::MAX_REQUEST`) or response.
const FRAME_BITS: usize = 7;
/// Executor states.
const IDLE: u8 = 0;
const CHECK: u8 = 1;
const VERDICT: u8 = 2;
const AXIL_WRITE: u8 = 3;
const AXIL_READ: u8 = 4;
const MEM_GATHER: u8 = 5;
const MEM_PUT: u8 = 6;
const MEM_ISSUE: u8 = 7;
const MEM_TAKE: u8 = 8;
const PUT_BYTES: u8 = 9;
const FINISH_SEQ: u8 = 10;
const FINISH_STATUS: u8 = 11;
const SEND_START: u8 = 12;
const SEND_FETCH: u8 = 13;
const SEND_LOAD: u8 = 14;
const SEND_BYTE: u8 = 15;
const SEND_ESC: u8 = 16;
const SEND_END: u8 = 17;
const CRC_LOAD: u8 = 18;
/// Request lengths, CRC included, by opcode (a host-memory write: 7 + 4n).
const LEN_BAR0_WRITE: u8 = REQUEST_HEADER as u8 + 4 + 1;
const LEN_NO_DATA: u8 = REQUEST_HEADER as u8 + 1;
const LEN_MEM_READ: u8 = REQUEST_HEADER as u8 + 1 + 1;
const LEN_MEM_WRITE_BASE: u8 = REQUEST_HEADER as u8 + 2 + 1;
/// Octets of the response before its data (sequence number, status).
const RESPONSE_HEADER: u8 = 2;

#[derive(LogicBlock)]
pub struct UartBridge {
    pub clock: Signal<In, Clock>,
    pub reset: Signal<In, Bit>,
    /// Clock cycles per bit (clock frequency / baud rate), at least 4.
    pub clks_per_bit: Signal<In, Bits<16>>,
    /// log2 of the host memory's octets, reported by IDENTIFY.
    pub mem_log2: Signal<In, Bits<8>>,
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
    /// The RNIC's interrupts (always taken): vectors 0..31 are latched for IRQ requests.
    pub irq_valid: Signal<In, Bit>,
    pub irq_vector: Signal<In, Bits<16>>,
    rx: UartRx,
    tx: UartTx,
    rx_crc_step: Crc8Step,
    tx_crc_step: Crc8Step,
    /// The request being received, and the response built (and kept).
    req: RAM<Bits<8>, FRAME_BITS>,
    resp: RAM<Bits<8>, FRAME_BITS>,
    // ---- Receive: SLIP undone (stage 1), then the frame (stage 2).
    esc: DFF<Bit>,
    d_valid: DFF<Bit>,
    d_end: DFF<Bit>,
    d_byte: DFF<Bits<8>>,
    r_len: DFF<Bits<FRAME_BITS>>,
    r_over: DFF<Bit>,
    r_skip: DFF<Bit>,
    r_crc: DFF<Bits<8>>,
    seq: DFF<Bits<8>>,
    op: DFF<Bits<8>>,
    addr: DFF<Bits<16>>,
    count: DFF<Bits<8>>,
    strobes: DFF<Bits<8>>,
    wdata: DFF<Bits<32>>,
    // ---- Execute.
    state: DFF<Bits<5>>,
    good_crc: DFF<Bit>,
    good_len: DFF<Bit>,
    good_count: DFF<Bit>,
    again: DFF<Bit>,
    go_axil_write: DFF<Bit>,
    go_axil_read: DFF<Bit>,
    go_mem_write: DFF<Bit>,
    go_mem_read: DFF<Bit>,
    go_identify: DFF<Bit>,
    go_irq: DFF<Bit>,
    kept_valid: DFF<Bit>,
    kept_seq: DFF<Bits<8>>,
    kept_len: DFF<Bits<FRAME_BITS>>,
    status: DFF<Bits<8>>,
    maddr: DFF<Bits<16>>,
    words_left: DFF<Bits<8>>,
    first_word: DFF<Bit>,
    gather: DFF<Bits<3>>,
    rd_ptr: DFF<Bits<FRAME_BITS>>,
    word: DFF<Bits<32>>,
    word_strb: DFF<Bits<4>>,
    w_ptr: DFF<Bits<FRAME_BITS>>,
    put_left: DFF<Bits<3>>,
    aw_pend: DFF<Bit>,
    w_pend: DFF<Bit>,
    ar_pend: DFF<Bit>,
    irq_bits: DFF<Bits<32>>,
    // ---- Send.
    nak: DFF<Bit>,
    sp: DFF<Bits<FRAME_BITS>>,
    s_len: DFF<Bits<FRAME_BITS>>,
    out: DFF<Bits<8>>,
    out_is_end: DFF<Bit>,
    out_special: DFF<Bit>,
    s_left: DFF<Bits<FRAME_BITS>>,
    tx_byte: DFF<Bits<8>>,
    tx_full: DFF<Bit>,
    is_crc: DFF<Bit>,
    t_crc: DFF<Bits<8>>,
    // Named constants.
    s_idle: Constant<Bits<5>>,
    s_check: Constant<Bits<5>>,
    s_verdict: Constant<Bits<5>>,
    s_axil_write: Constant<Bits<5>>,
    s_axil_read: Constant<Bits<5>>,
    s_mem_gather: Constant<Bits<5>>,
    s_mem_put: Constant<Bits<5>>,
    s_mem_issue: Constant<Bits<5>>,
    s_mem_take: Constant<Bits<5>>,
    s_put_bytes: Constant<Bits<5>>,
    s_finish_seq: Constant<Bits<5>>,
    s_finish_status: Constant<Bits<5>>,
    s_send_start: Constant<Bits<5>>,
    s_send_fetch: Constant<Bits<5>>,
    s_send_load: Constant<Bits<5>>,
    s_send_byte: Constant<Bits<5>>,
    s_send_esc: Constant<Bits<5>>,
    s_send_end: Constant<Bits<5>>,
    s_crc_load: Constant<Bits<5>>,
    c_end: Constant<Bits<8>>,
    c_esc: Constant<Bits<8>>,
    c_esc_end: Constant<Bits<8>>,
    c_esc_esc: Constant<Bits<8>>,
    c_nak: Constant<Bits<8>>,
    op_bar0_write: Constant<Bits<8>>,
    op_bar0_read: Constant<Bits<8>>,
    op_mem_write: Constant<Bits<8>>,
    op_mem_read: Constant<Bits<8>>,
    op_identify: Constant<Bits<8>>,
    op_irq: Constant<Bits<8>>,
    len_bar0_write: Constant<Bits<FRAME_BITS>>,
    len_no_data: Constant<Bits<FRAME_BITS>>,
    len_mem_read: Constant<Bits<FRAME_BITS>>,
    len_mem_write_base: Constant<Bits<FRAME_BITS>>,
    max_words: Constant<Bits<8>>,
    response_header: Constant<Bits<FRAME_BITS>>,
    status_response: Constant<Bits<8>>,
    status_bus_error: Constant<Bits<8>>,
    version: Constant<Bits<8>>,
    /// Where a host-memory write's words start in the request.
    mem_write_data: Constant<Bits<FRAME_BITS>>,
    // Combinational.
    d_plain: Signal<Local, Bits<8>>,
    take_byte: Signal<Local, Bit>,
    take_end: Signal<Local, Bit>,
    in_idle: Signal<Local, Bit>,
    is_mem: Signal<Local, Bit>,
    room: Signal<Local, Bit>,
    load: Signal<Local, Bits<8>>,
    advance: Signal<Local, Bit>,
    run_it: Signal<Local, Bit>,
    irq_new: Signal<Local, Bits<32>>,
    one32: Constant<Bits<32>>,
}

impl Default for UartBridge {
    fn default() -> Self {
        let state = |s: u8| Constant::new(s.to_bits());
        let octet = |b: u8| Constant::new(b.to_bits());
        let len = |b: u8| Constant::new(b.to_bits());
        UartBridge {
            clock: Default::default(),
            reset: Default::default(),
            clks_per_bit: Default::default(),
            mem_log2: Default::default(),
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
            irq_valid: Default::default(),
            irq_vector: Default::default(),
            rx: Default::default(),
            tx: Default::default(),
            rx_crc_step: Default::default(),
            tx_crc_step: Default::default(),
            req: Default::default(),
            resp: Default::default(),
            esc: Default::default(),
            d_valid: Default::default(),
            d_end: Default::default(),
            d_byte: Default::default(),
            r_len: Default::default(),
            r_over: Default::default(),
            r_skip: Default::default(),
            r_crc: Default::default(),
            seq: Default::default(),
            op: Default::default(),
            addr: Default::default(),
            count: Default::default(),
            strobes: Default::default(),
            wdata: Default::default(),
            state: Default::default(),
            good_crc: Default::default(),
            good_len: Default::default(),
            good_count: Default::default(),
            again: Default::default(),
            go_axil_write: Default::default(),
            go_axil_read: Default::default(),
            go_mem_write: Default::default(),
            go_mem_read: Default::default(),
            go_identify: Default::default(),
            go_irq: Default::default(),
            kept_valid: Default::default(),
            kept_seq: Default::default(),
            kept_len: Default::default(),
            status: Default::default(),
            maddr: Default::default(),
            words_left: Default::default(),
            first_word: Default::default(),
            gather: Default::default(),
            rd_ptr: Default::default(),
            word: Default::default(),
            word_strb: Default::default(),
            w_ptr: Default::default(),
            put_left: Default::default(),
            aw_pend: Default::default(),
            w_pend: Default::default(),
            ar_pend: Default::default(),
            irq_bits: Default::default(),
            nak: Default::default(),
            sp: Default::default(),
            s_len: Default::default(),
            out: Default::default(),
            out_is_end: Default::default(),
            out_special: Default::default(),
            s_left: Default::default(),
            tx_byte: Default::default(),
            tx_full: Default::default(),
            is_crc: Default::default(),
            t_crc: Default::default(),
            s_idle: state(IDLE),
            s_check: state(CHECK),
            s_verdict: state(VERDICT),
            s_axil_write: state(AXIL_WRITE),
            s_axil_read: state(AXIL_READ),
            s_mem_gather: state(MEM_GATHER),
            s_mem_put: state(MEM_PUT),
            s_mem_issue: state(MEM_ISSUE),
            s_mem_take: state(MEM_TAKE),
            s_put_bytes: state(PUT_BYTES),
            s_finish_seq: state(FINISH_SEQ),
            s_finish_status: state(FINISH_STATUS),
            s_send_start: state(SEND_START),
            s_send_fetch: state(SEND_FETCH),
            s_send_load: state(SEND_LOAD),
            s_send_byte: state(SEND_BYTE),
            s_send_esc: state(SEND_ESC),
            s_send_end: state(SEND_END),
            s_crc_load: state(CRC_LOAD),
            c_end: octet(END),
            c_esc: octet(ESC),
            c_esc_end: octet(ESC_END),
            c_esc_esc: octet(ESC_ESC),
            c_nak: octet(NAK),
            op_bar0_write: octet(Op::Bar0Write as u8),
            op_bar0_read: octet(Op::Bar0Read as u8),
            op_mem_write: octet(Op::MemWrite as u8),
            op_mem_read: octet(Op::MemRead as u8),
            op_identify: octet(Op::Identify as u8),
            op_irq: octet(Op::Irq as u8),
            len_bar0_write: len(LEN_BAR0_WRITE),
            len_no_data: len(LEN_NO_DATA),
            len_mem_read: len(LEN_MEM_READ),
            len_mem_write_base: len(LEN_MEM_WRITE_BASE),
            max_words: octet(MAX_WORDS),
            response_header: len(RESPONSE_HEADER),
            status_response: octet(STATUS_RESPONSE),
            status_bus_error: octet(STATUS_BUS_ERROR),
            version: octet(VERSION),
            mem_write_data: len(REQUEST_HEADER as u8 + 2),
            d_plain: Default::default(),
            take_byte: Default::default(),
            take_end: Default::default(),
            in_idle: Default::default(),
            is_mem: Default::default(),
            room: Default::default(),
            load: Default::default(),
            advance: Default::default(),
            run_it: Default::default(),
            irq_new: Default::default(),
            one32: Constant::new(1u32.to_bits()),
        }
    }
}

impl Logic for UartBridge {
    #[hdl_gen]
    fn update(&mut self) {
        dff_setup!(
            self,
            clock,
            esc,
            d_valid,
            d_end,
            d_byte,
            r_len,
            r_over,
            r_skip,
            r_crc,
            seq,
            op,
            addr,
            count,
            strobes,
            wdata,
            state,
            good_crc,
            good_len,
            good_count,
            again,
            go_axil_write,
            go_axil_read,
            go_mem_write,
            go_mem_read,
            go_identify,
            go_irq,
            kept_valid,
            kept_seq,
            kept_len,
            status,
            maddr,
            words_left,
            first_word,
            gather,
            rd_ptr,
            word,
            word_strb,
            w_ptr,
            put_left,
            aw_pend,
            w_pend,
            ar_pend,
            irq_bits,
            nak,
            sp,
            s_len,
            out,
            out_is_end,
            out_special,
            s_left,
            tx_byte,
            tx_full,
            is_crc,
            t_crc
        );
        self.rx.clock.next = self.clock.val();
        self.rx.reset.next = self.reset.val();
        self.rx.clks_per_bit.next = self.clks_per_bit.val();
        self.rx.rxd.next = self.rxd.val();
        self.tx.clock.next = self.clock.val();
        self.tx.reset.next = self.reset.val();
        self.tx.clks_per_bit.next = self.clks_per_bit.val();
        self.txd.next = self.tx.txd.val();
        self.req.read_clock.next = self.clock.val();
        self.req.write_clock.next = self.clock.val();
        self.resp.read_clock.next = self.clock.val();
        self.resp.write_clock.next = self.clock.val();
        self.in_idle.next = self.state.q.val() == self.s_idle.val();

        // ---- Receive, stage 1: SLIP undone. An escape followed by anything but ESC_END or
        // ESC_ESC passes that octet on (the frame's CRC then fails).
        self.d_plain.next = self.rx.data.val();
        if self.esc.q.val() & (self.rx.data.val() == self.c_esc_end.val()) {
            self.d_plain.next = self.c_end.val();
        }
        if self.esc.q.val() & (self.rx.data.val() == self.c_esc_esc.val()) {
            self.d_plain.next = self.c_esc.val();
        }
        self.d_end.d.next = self.rx.valid.val() & (self.rx.data.val() == self.c_end.val());
        self.d_valid.d.next = self.rx.valid.val()
            & (self.rx.data.val() != self.c_end.val())
            & (self.esc.q.val() | (self.rx.data.val() != self.c_esc.val()));
        self.d_byte.d.next = self.d_plain.val();
        if self.rx.valid.val() {
            self.esc.d.next = !self.esc.q.val() & (self.rx.data.val() == self.c_esc.val());
        }

        // ---- Receive, stage 2: the frame, while the executor is idle; bytes that come
        // while it is busy spoil their frame (it is dropped at its END, unanswered).
        self.take_byte.next = self.d_valid.q.val() & self.in_idle.val() & !self.r_skip.q.val();
        self.take_end.next = self.d_end.q.val() & self.in_idle.val();
        if self.d_valid.q.val() & !self.in_idle.val() {
            self.r_skip.d.next = true;
        }
        if self.d_end.q.val() & !self.in_idle.val() {
            self.r_skip.d.next = false;
        }
        self.req.write_enable.next = self.take_byte.val() & !self.r_over.q.val();
        self.req.write_address.next = self.r_len.q.val();
        self.req.write_data.next = self.d_byte.q.val();
        self.rx_crc_step.crc.next = self.r_crc.q.val();
        self.rx_crc_step.octet.next = self.d_byte.q.val();
        if self.take_byte.val() {
            self.r_crc.d.next = self.rx_crc_step.crc_out.val();
            self.r_len.d.next = self.r_len.q.val() + 1;
            if self.r_len.q.val().all() {
                self.r_over.d.next = true;
                self.r_len.d.next = self.r_len.q.val();
            }
            if self.r_len.q.val() == 0 {
                self.seq.d.next = self.d_byte.q.val();
            }
            if self.r_len.q.val() == 1 {
                self.op.d.next = self.d_byte.q.val();
            }
            if (self.r_len.q.val() == 2) | (self.r_len.q.val() == 3) {
                self.addr.d.next = (self.addr.q.val() >> 8) | (bit_cast::<16, 8>(self.d_byte.q.val()) << 8);
            }
            if self.r_len.q.val() == 4 {
                self.count.d.next = self.d_byte.q.val();
            }
            if self.r_len.q.val() == 5 {
                self.strobes.d.next = self.d_byte.q.val();
            }
            if self.r_len.q.val().get_bits::<5>(2) == 1 {
                self.wdata.d.next = (self.wdata.q.val() >> 8) | (bit_cast::<32, 8>(self.d_byte.q.val()) << 24);
            }
        }
        // A frame ends: one with octets (and not spoiled) goes to the executor; the
        // receiver starts over when the executor is idle again.
        if self.take_end.val() & self.r_len.q.val().any() & !self.r_skip.q.val() {
            self.state.d.next = self.s_check.val();
        }
        if self.take_end.val() & (self.r_skip.q.val() | !self.r_len.q.val().any()) {
            self.r_skip.d.next = false;
            self.r_len.d.next = 0.into();
            self.r_crc.d.next = 0.into();
            self.r_over.d.next = false;
        }

        // ---- Execute: the checks and the plan, registered (the opcode decoded once, here).
        self.is_mem.next = (self.op.q.val() == self.op_mem_write.val()) | (self.op.q.val() == self.op_mem_read.val());
        if self.state.q.val() == self.s_check.val() {
            self.state.d.next = self.s_verdict.val();
            self.good_crc.d.next = !self.r_crc.q.val().any() & !self.r_over.q.val();
            self.good_count.d.next =
                (self.count.q.val().any() & (self.count.q.val() <= self.max_words.val())) | !self.is_mem.val();
            self.go_axil_write.d.next = self.op.q.val() == self.op_bar0_write.val();
            self.go_axil_read.d.next = self.op.q.val() == self.op_bar0_read.val();
            self.go_mem_write.d.next = self.op.q.val() == self.op_mem_write.val();
            self.go_mem_read.d.next = self.op.q.val() == self.op_mem_read.val();
            self.go_identify.d.next = self.op.q.val() == self.op_identify.val();
            self.go_irq.d.next = self.op.q.val() == self.op_irq.val();
            self.good_len.d.next = false;
            if self.op.q.val() == self.op_bar0_write.val() {
                self.good_len.d.next = self.r_len.q.val() == self.len_bar0_write.val();
            }
            if (self.op.q.val() == self.op_bar0_read.val())
                | (self.op.q.val() == self.op_identify.val())
                | (self.op.q.val() == self.op_irq.val())
            {
                self.good_len.d.next = self.r_len.q.val() == self.len_no_data.val();
            }
            if self.op.q.val() == self.op_mem_read.val() {
                self.good_len.d.next = self.r_len.q.val() == self.len_mem_read.val();
            }
            if self.op.q.val() == self.op_mem_write.val() {
                self.good_len.d.next = self.r_len.q.val()
                    == (bit_cast::<FRAME_BITS, 8>(self.count.q.val() << 2) + self.len_mem_write_base.val());
            }
            self.again.d.next = self.kept_valid.q.val()
                & (self.seq.q.val() == self.kept_seq.q.val())
                & (self.op.q.val() != self.op_identify.val());
            // IDENTIFY's and IRQ's data, taken now (an interrupt that comes later stays
            // latched for the next IRQ).
            self.word.d.next = self.irq_bits.q.val();
            self.put_left.d.next = 4.into();
            if self.op.q.val() == self.op_identify.val() {
                self.word.d.next = bit_cast::<32, 8>(self.version.val())
                    | (bit_cast::<32, 8>(self.mem_log2.val()) << 8)
                    | (bit_cast::<32, 8>(self.max_words.val()) << 16);
                self.put_left.d.next = 3.into();
            }
        }
        // The verdict: NAK, the kept response again, or run it (the plan's flags exclude
        // each other).
        self.run_it.next = (self.state.q.val() == self.s_verdict.val())
            & self.good_crc.q.val()
            & self.good_len.q.val()
            & self.good_count.q.val()
            & !self.again.q.val();
        if self.state.q.val() == self.s_verdict.val() {
            self.w_ptr.d.next = self.response_header.val();
            self.status.d.next = self.op.q.val() | self.status_response.val();
            self.maddr.d.next = self.addr.q.val();
            self.words_left.d.next = self.count.q.val();
            self.first_word.d.next = true;
            self.gather.d.next = 0.into();
            self.rd_ptr.d.next = self.mem_write_data.val();
            self.nak.d.next = !(self.good_crc.q.val() & self.good_len.q.val() & self.good_count.q.val());
            self.s_len.d.next = self.kept_len.q.val();
            if !(self.good_crc.q.val() & self.good_len.q.val() & self.good_count.q.val()) {
                self.s_len.d.next = self.response_header.val();
            }
            self.state.d.next = self.s_send_start.val();
        }
        if self.run_it.val() & self.go_axil_write.q.val() {
            self.state.d.next = self.s_axil_write.val();
            self.aw_pend.d.next = true;
            self.w_pend.d.next = true;
        }
        if self.run_it.val() & self.go_axil_read.q.val() {
            self.state.d.next = self.s_axil_read.val();
            self.ar_pend.d.next = true;
        }
        if self.run_it.val() & self.go_mem_write.q.val() {
            self.state.d.next = self.s_mem_gather.val();
        }
        if self.run_it.val() & self.go_mem_read.q.val() {
            self.state.d.next = self.s_mem_issue.val();
        }
        if self.run_it.val() & (self.go_identify.q.val() | self.go_irq.q.val()) {
            self.state.d.next = self.s_put_bytes.val();
        }
        if self.run_it.val() & self.go_identify.q.val() {
            self.kept_valid.d.next = false;
        }
        // Interrupts: latched per vector (0..31); IRQ hands over what it took and clears it.
        self.irq_new.next = 0.into();
        if self.irq_valid.val() & !self.irq_vector.val().get_bits::<11>(5).any() {
            self.irq_new.next = self.one32.val() << bit_cast::<32, 5>(self.irq_vector.val().get_bits::<5>(0));
        }
        self.irq_bits.d.next = self.irq_bits.q.val() | self.irq_new.val();
        if self.run_it.val() & self.go_irq.q.val() {
            self.irq_bits.d.next = (self.irq_bits.q.val() & !self.word.q.val()) | self.irq_new.val();
        }

        // AXI4-Lite: address and data offered until taken, the response taken as it comes.
        self.m_axil_awaddr.next = self.addr.q.val();
        self.m_axil_awvalid.next = self.aw_pend.q.val();
        self.m_axil_wdata.next = self.wdata.q.val();
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
            self.state.d.next = self.s_finish_seq.val();
            if self.m_axil_bresp.val().any() {
                self.status.d.next = self.status.q.val() | self.status_bus_error.val();
            }
        }
        if (self.state.q.val() == self.s_axil_read.val()) & self.m_axil_rvalid.val() {
            self.state.d.next = self.s_put_bytes.val();
            self.word.d.next = self.m_axil_rdata.val();
            self.put_left.d.next = 4.into();
            if self.m_axil_rresp.val().any() {
                self.status.d.next = self.status.q.val() | self.status_bus_error.val();
            }
        }

        // Host-memory write: gather a word from the request (the RAM's read lands a cycle
        // after its address), then write it with its strobes.
        self.req.read_address.next = self.rd_ptr.q.val();
        if self.state.q.val() == self.s_mem_gather.val() {
            self.gather.d.next = self.gather.q.val() + 1;
            if self.gather.q.val() != 4 {
                self.rd_ptr.d.next = self.rd_ptr.q.val() + 1;
            }
            if self.gather.q.val().any() {
                self.word.d.next = (self.word.q.val() >> 8) | (bit_cast::<32, 8>(self.req.read_data.val()) << 24);
            }
            if self.gather.q.val() == 4 {
                self.state.d.next = self.s_mem_put.val();
            }
            self.word_strb.d.next = 15.into();
            if self.first_word.q.val() {
                self.word_strb.d.next = self.strobes.q.val().get_bits::<4>(0);
            }
            if self.words_left.q.val() == 1 {
                self.word_strb.d.next = self.strobes.q.val().get_bits::<4>(4);
            }
            if self.first_word.q.val() & (self.words_left.q.val() == 1) {
                self.word_strb.d.next = self.strobes.q.val().get_bits::<4>(0) & self.strobes.q.val().get_bits::<4>(4);
            }
        }
        self.h_wr_en.next = self.state.q.val() == self.s_mem_put.val();
        self.h_wr_addr.next = self.maddr.q.val();
        self.h_wr_data.next = self.word.q.val();
        self.h_wr_strb.next = self.word_strb.q.val();
        if self.state.q.val() == self.s_mem_put.val() {
            self.maddr.d.next = self.maddr.q.val() + 4;
            self.words_left.d.next = self.words_left.q.val() - 1;
            self.first_word.d.next = false;
            self.gather.d.next = 0.into();
            self.state.d.next = self.s_mem_gather.val();
            if self.words_left.q.val() == 1 {
                self.state.d.next = self.s_finish_seq.val();
            }
        }
        // Host-memory read: fetch a word, then put its octets in the response.
        self.h_rd_en.next = self.state.q.val() == self.s_mem_issue.val();
        self.h_rd_addr.next = self.maddr.q.val();
        if self.state.q.val() == self.s_mem_issue.val() {
            self.state.d.next = self.s_mem_take.val();
        }
        if self.state.q.val() == self.s_mem_take.val() {
            self.word.d.next = self.h_rd_data.val();
            self.put_left.d.next = 4.into();
            self.maddr.d.next = self.maddr.q.val() + 4;
            self.words_left.d.next = self.words_left.q.val() - 1;
            self.state.d.next = self.s_put_bytes.val();
        }

        // The response RAM: data octets, then the sequence number and the status.
        self.resp.write_enable.next = (self.state.q.val() == self.s_put_bytes.val())
            | (self.state.q.val() == self.s_finish_seq.val())
            | (self.state.q.val() == self.s_finish_status.val());
        self.resp.write_address.next = self.w_ptr.q.val();
        self.resp.write_data.next = self.word.q.val().get_bits::<8>(0);
        if self.state.q.val() == self.s_finish_seq.val() {
            self.resp.write_address.next = 0.into();
            self.resp.write_data.next = self.seq.q.val();
        }
        if self.state.q.val() == self.s_finish_status.val() {
            self.resp.write_address.next = 1.into();
            self.resp.write_data.next = self.status.q.val();
        }
        if self.state.q.val() == self.s_put_bytes.val() {
            self.word.d.next = self.word.q.val() >> 8;
            self.w_ptr.d.next = self.w_ptr.q.val() + 1;
            self.put_left.d.next = self.put_left.q.val() - 1;
            if self.put_left.q.val() == 1 {
                self.state.d.next = self.s_finish_seq.val();
                if (self.op.q.val() == self.op_mem_read.val()) & self.words_left.q.val().any() {
                    self.state.d.next = self.s_mem_issue.val();
                }
            }
        }
        if self.state.q.val() == self.s_finish_seq.val() {
            self.state.d.next = self.s_finish_status.val();
        }
        if self.state.q.val() == self.s_finish_status.val() {
            self.state.d.next = self.s_send_start.val();
            self.kept_valid.d.next = self.op.q.val() != self.op_identify.val();
            self.kept_seq.d.next = self.seq.q.val();
            self.kept_len.d.next = self.w_ptr.q.val();
            self.s_len.d.next = self.w_ptr.q.val();
        }

        // ---- Send: END, the octets escaped, the CRC escaped, END, through a one-octet
        // register in front of the transmitter (its ready is a register decision, too).
        self.resp.read_address.next = self.sp.q.val();
        self.tx.valid.next = self.tx_full.q.val();
        self.tx.data.next = self.tx_byte.q.val();
        if self.tx.ready.val() & self.tx_full.q.val() {
            self.tx_full.d.next = false;
        }
        self.room.next = !self.tx_full.q.val();
        if (self.state.q.val() == self.s_send_start.val()) & self.room.val() {
            self.tx_byte.d.next = self.c_end.val();
            self.tx_full.d.next = true;
            self.state.d.next = self.s_send_fetch.val();
            self.sp.d.next = 0.into();
            self.s_left.d.next = self.s_len.q.val();
            self.t_crc.d.next = 0.into();
            self.is_crc.d.next = false;
        }
        if self.state.q.val() == self.s_send_fetch.val() {
            self.state.d.next = self.s_send_load.val();
        }
        // The octet to send, and whether it needs an escape.
        self.load.next = self.resp.read_data.val();
        if self.nak.q.val() {
            self.load.next = 0.into();
            if self.sp.q.val().any() {
                self.load.next = self.c_nak.val();
            }
        }
        if self.state.q.val() == self.s_crc_load.val() {
            self.load.next = self.t_crc.q.val();
        }
        if (self.state.q.val() == self.s_send_load.val()) | (self.state.q.val() == self.s_crc_load.val()) {
            self.state.d.next = self.s_send_byte.val();
            self.out.d.next = self.load.val();
            self.out_is_end.d.next = self.load.val() == self.c_end.val();
            self.out_special.d.next = (self.load.val() == self.c_end.val()) | (self.load.val() == self.c_esc.val());
        }
        if self.state.q.val() == self.s_crc_load.val() {
            self.is_crc.d.next = true;
        }
        self.advance.next = false;
        if (self.state.q.val() == self.s_send_byte.val()) & self.room.val() {
            self.tx_full.d.next = true;
            self.tx_byte.d.next = self.out.q.val();
            if self.out_special.q.val() {
                self.tx_byte.d.next = self.c_esc.val();
                self.state.d.next = self.s_send_esc.val();
            } else {
                self.advance.next = true;
            }
        }
        if (self.state.q.val() == self.s_send_esc.val()) & self.room.val() {
            self.tx_full.d.next = true;
            self.tx_byte.d.next = self.c_esc_esc.val();
            if self.out_is_end.q.val() {
                self.tx_byte.d.next = self.c_esc_end.val();
            }
            self.advance.next = true;
        }
        self.tx_crc_step.crc.next = self.t_crc.q.val();
        self.tx_crc_step.octet.next = self.out.q.val();
        if self.advance.val() {
            self.t_crc.d.next = self.tx_crc_step.crc_out.val();
            self.sp.d.next = self.sp.q.val() + 1;
            self.s_left.d.next = self.s_left.q.val() - 1;
            self.state.d.next = self.s_send_fetch.val();
            if self.s_left.q.val() == 1 {
                self.state.d.next = self.s_crc_load.val();
            }
            if self.is_crc.q.val() {
                self.state.d.next = self.s_send_end.val();
            }
        }
        if (self.state.q.val() == self.s_send_end.val()) & self.room.val() {
            self.tx_byte.d.next = self.c_end.val();
            self.tx_full.d.next = true;
            self.state.d.next = self.s_idle.val();
            self.r_len.d.next = 0.into();
            self.r_crc.d.next = 0.into();
            self.r_over.d.next = false;
        }

        if self.reset.val() {
            self.esc.d.next = false;
            self.d_valid.d.next = false;
            self.d_end.d.next = false;
            self.r_len.d.next = 0.into();
            self.r_crc.d.next = 0.into();
            self.r_over.d.next = false;
            self.r_skip.d.next = false;
            self.state.d.next = self.s_idle.val();
            self.kept_valid.d.next = false;
            self.aw_pend.d.next = false;
            self.w_pend.d.next = false;
            self.ar_pend.d.next = false;
            self.irq_bits.d.next = 0.into();
            self.tx_full.d.next = false;
        }
    }
}
