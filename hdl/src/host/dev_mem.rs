//! Device memory: `1 << WB` 64-bit words of on-chip RAM that the DMA master reaches as if
//! it were host memory (through [`super::AxiWindow`]), and that the driver fills and reads
//! through a 32-bit host port (a BAR).
//!
//! - **AXI4 slave.** INCR bursts of full 64-bit beats, as the DMA master makes them: beat
//!   `k` of a burst is word `(addr >> 3) + k`, the size and burst type are not looked at,
//!   and lanes below an unaligned start are left to the strobes. Only the low `WB + 3`
//!   address bits are used, so addresses beyond the RAM wrap. Writes and reads run
//!   independently, each at one beat per cycle across back-to-back bursts: the next
//!   burst's address waits in a one-entry register while the current burst runs.
//! - **Writes.** A W beat is written in the cycle it is taken; B follows the burst's last
//!   beat (so a read issued after B sees the data). A read of a word that a write not yet
//!   answered is changing may see either value.
//! - **Reads.** The RAM reads synchronously, and every beat read goes through a two-entry
//!   output buffer, so R starts from registers (never straight from the RAM): a beat is
//!   read only when the buffer (beats read and not yet taken, the one being read
//!   included) will have room for it. The first R beat comes 3 cycles after the AR
//!   handshake.
//! - **Host port.** `h_wr_en` writes the 32-bit half of the word at `h_wr_addr` (bit 2
//!   picks the half: lanes 4..7 or 0..3) under `h_wr_strb`, in that cycle: it takes the
//!   RAM's write port, and a W beat of the same cycle waits. `h_rd_en` reads the half at
//!   `h_rd_addr`, taking the read port from the AXI side for that cycle; `h_rd_data`
//!   shows it from the next cycle on, until the next host read answers. Offsets wrap
//!   like AXI addresses (octet offset bits `WB + 2..2` are used). A host read in the
//!   cycle of a write to the same word returns the word as it was before the write.
//!
//! Each byte lane is a RAM of its own, so strobes are plain write enables and synthesis
//! maps the lanes to block RAM. Reset clears the bus state, not the memory.
use rust_hdl::prelude::*;

/// `WB` = word address bits (`1 << WB` words of 8 octets, `WB` ≤ 13 for the 16-bit host
/// offsets).
#[derive(LogicBlock)]
pub struct DevMem<const WB: usize> {
    pub clock: Signal<In, Clock>,
    pub reset: Signal<In, Bit>,
    pub s_axi_awaddr: Signal<In, Bits<64>>,
    pub s_axi_awlen: Signal<In, Bits<8>>,
    pub s_axi_awsize: Signal<In, Bits<3>>,
    pub s_axi_awburst: Signal<In, Bits<2>>,
    pub s_axi_awvalid: Signal<In, Bit>,
    pub s_axi_awready: Signal<Out, Bit>,
    pub s_axi_wdata: Signal<In, Bits<64>>,
    pub s_axi_wstrb: Signal<In, Bits<8>>,
    pub s_axi_wlast: Signal<In, Bit>,
    pub s_axi_wvalid: Signal<In, Bit>,
    pub s_axi_wready: Signal<Out, Bit>,
    pub s_axi_bresp: Signal<Out, Bits<2>>,
    pub s_axi_bvalid: Signal<Out, Bit>,
    pub s_axi_bready: Signal<In, Bit>,
    pub s_axi_araddr: Signal<In, Bits<64>>,
    pub s_axi_arlen: Signal<In, Bits<8>>,
    pub s_axi_arsize: Signal<In, Bits<3>>,
    pub s_axi_arburst: Signal<In, Bits<2>>,
    pub s_axi_arvalid: Signal<In, Bit>,
    pub s_axi_arready: Signal<Out, Bit>,
    pub s_axi_rdata: Signal<Out, Bits<64>>,
    pub s_axi_rresp: Signal<Out, Bits<2>>,
    pub s_axi_rlast: Signal<Out, Bit>,
    pub s_axi_rvalid: Signal<Out, Bit>,
    pub s_axi_rready: Signal<In, Bit>,
    /// Host writes: one-cycle pulse, always taken.
    pub h_wr_en: Signal<In, Bit>,
    pub h_wr_addr: Signal<In, Bits<16>>,
    pub h_wr_data: Signal<In, Bits<32>>,
    pub h_wr_strb: Signal<In, Bits<4>>,
    /// Host reads: one-cycle pulse; `h_rd_data` answers from the next cycle on.
    pub h_rd_en: Signal<In, Bit>,
    pub h_rd_addr: Signal<In, Bits<16>>,
    pub h_rd_data: Signal<Out, Bits<32>>,
    /// Byte lane `i` of every word.
    lane: [RAM<Bits<8>, WB>; 8],
    // Write side: the burst receiving beats, the next burst's address, B responses owed.
    w_busy: DFF<Bit>,
    w_word: DFF<Bits<WB>>,
    aw_held: DFF<Bit>,
    aw_word: DFF<Bits<WB>>,
    b_owed: DFF<Bits<5>>,
    // Read side: the burst being read (beats left after the next, minus one), the next
    // burst, the beat in the RAM (and whether it is its burst's last), the output buffer
    // of (last, data).
    r_busy: DFF<Bit>,
    r_word: DFF<Bits<WB>>,
    r_left: DFF<Bits<8>>,
    ar_held: DFF<Bit>,
    ar_word: DFF<Bits<WB>>,
    ar_len: DFF<Bits<8>>,
    r_pend: DFF<Bit>,
    r_pend_last: DFF<Bit>,
    out_count: DFF<Bits<2>>,
    out0: DFF<Bits<65>>,
    out1: DFF<Bits<65>>,
    // Host read: the RAM answers this cycle, for that half; the answer held after.
    h_pend: DFF<Bit>,
    h_half: DFF<Bit>,
    h_held: DFF<Bits<32>>,
    // Combinational, in the order they are computed.
    aw_take: Signal<Local, Bit>,
    w_take: Signal<Local, Bit>,
    w_next: Signal<Local, Bit>,
    b_take: Signal<Local, Bit>,
    h_wr_word: Signal<Local, Bits<WB>>,
    h_rd_word: Signal<Local, Bits<WB>>,
    ram_word: Signal<Local, Bits<64>>,
    ram_half: Signal<Local, Bits<32>>,
    occupancy: Signal<Local, Bits<2>>,
    pop: Signal<Local, Bit>,
    issue: Signal<Local, Bit>,
    issue_last: Signal<Local, Bit>,
    r_next: Signal<Local, Bit>,
    ar_take: Signal<Local, Bit>,
    kept: Signal<Local, Bits<2>>,
}

impl<const WB: usize> Default for DevMem<WB> {
    fn default() -> Self {
        // A burst never crosses 4 KiB, so the RAM holds at least one page; the host port's
        // 16-bit offsets reach at most 2^13 words.
        const { assert!(WB >= 9 && WB <= 13) };
        DevMem {
            clock: Default::default(),
            reset: Default::default(),
            s_axi_awaddr: Default::default(),
            s_axi_awlen: Default::default(),
            s_axi_awsize: Default::default(),
            s_axi_awburst: Default::default(),
            s_axi_awvalid: Default::default(),
            s_axi_awready: Default::default(),
            s_axi_wdata: Default::default(),
            s_axi_wstrb: Default::default(),
            s_axi_wlast: Default::default(),
            s_axi_wvalid: Default::default(),
            s_axi_wready: Default::default(),
            s_axi_bresp: Default::default(),
            s_axi_bvalid: Default::default(),
            s_axi_bready: Default::default(),
            s_axi_araddr: Default::default(),
            s_axi_arlen: Default::default(),
            s_axi_arsize: Default::default(),
            s_axi_arburst: Default::default(),
            s_axi_arvalid: Default::default(),
            s_axi_arready: Default::default(),
            s_axi_rdata: Default::default(),
            s_axi_rresp: Default::default(),
            s_axi_rlast: Default::default(),
            s_axi_rvalid: Default::default(),
            s_axi_rready: Default::default(),
            h_wr_en: Default::default(),
            h_wr_addr: Default::default(),
            h_wr_data: Default::default(),
            h_wr_strb: Default::default(),
            h_rd_en: Default::default(),
            h_rd_addr: Default::default(),
            h_rd_data: Default::default(),
            lane: Default::default(),
            w_busy: Default::default(),
            w_word: Default::default(),
            aw_held: Default::default(),
            aw_word: Default::default(),
            b_owed: Default::default(),
            r_busy: Default::default(),
            r_word: Default::default(),
            r_left: Default::default(),
            ar_held: Default::default(),
            ar_word: Default::default(),
            ar_len: Default::default(),
            r_pend: Default::default(),
            r_pend_last: Default::default(),
            out_count: Default::default(),
            out0: Default::default(),
            out1: Default::default(),
            h_pend: Default::default(),
            h_half: Default::default(),
            h_held: Default::default(),
            aw_take: Default::default(),
            w_take: Default::default(),
            w_next: Default::default(),
            b_take: Default::default(),
            h_wr_word: Default::default(),
            h_rd_word: Default::default(),
            ram_word: Default::default(),
            ram_half: Default::default(),
            occupancy: Default::default(),
            pop: Default::default(),
            issue: Default::default(),
            issue_last: Default::default(),
            r_next: Default::default(),
            ar_take: Default::default(),
            kept: Default::default(),
        }
    }
}

impl<const WB: usize> Logic for DevMem<WB> {
    #[hdl_gen]
    fn update(&mut self) {
        dff_setup!(
            self,
            clock,
            w_busy,
            w_word,
            aw_held,
            aw_word,
            b_owed,
            r_busy,
            r_word,
            r_left,
            ar_held,
            ar_word,
            ar_len,
            r_pend,
            r_pend_last,
            out_count,
            out0,
            out1,
            h_pend,
            h_half,
            h_held
        );
        for i in 0..8 {
            self.lane[i].read_clock.next = self.clock.val();
            self.lane[i].write_clock.next = self.clock.val();
        }

        // ---- Write side. An AW waits in `aw_held` while a burst runs, and starts as the
        // running one takes its last beat, so bursts follow each other without a gap. At
        // most 16 B responses are owed before AWs wait (the counter then tops out at 17).
        self.aw_take.next =
            self.s_axi_awvalid.val() & !self.aw_held.q.val() & !self.b_owed.q.val().get_bit(4) & !self.reset.val();
        self.s_axi_awready.next = !self.aw_held.q.val() & !self.b_owed.q.val().get_bit(4) & !self.reset.val();
        self.s_axi_wready.next = self.w_busy.q.val() & !self.h_wr_en.val();
        self.w_take.next = self.s_axi_wvalid.val() & self.w_busy.q.val() & !self.h_wr_en.val();
        self.w_next.next = !self.w_busy.q.val() | (self.w_take.val() & self.s_axi_wlast.val());
        if self.w_take.val() {
            self.w_word.d.next = self.w_word.q.val() + 1;
        }
        if self.w_next.val() {
            self.w_busy.d.next = self.aw_held.q.val() | self.aw_take.val();
            self.aw_held.d.next = false;
            if self.aw_held.q.val() {
                self.w_word.d.next = self.aw_word.q.val();
            } else if self.aw_take.val() {
                self.w_word.d.next = self.s_axi_awaddr.val().get_bits::<WB>(3);
            }
        } else if self.aw_take.val() {
            self.aw_held.d.next = true;
            self.aw_word.d.next = self.s_axi_awaddr.val().get_bits::<WB>(3);
        }
        self.b_take.next = self.b_owed.q.val().any() & self.s_axi_bready.val();
        self.b_owed.d.next = self.b_owed.q.val()
            + bit_cast::<5, 1>((self.w_take.val() & self.s_axi_wlast.val()).into())
            - bit_cast::<5, 1>(self.b_take.val().into());
        self.s_axi_bvalid.next = self.b_owed.q.val().any();
        self.s_axi_bresp.next = 0.into();

        // The RAM write port: the W beat, or the host's half word instead.
        self.h_wr_word.next = self.h_wr_addr.val().get_bits::<WB>(3);
        for i in 0..8 {
            self.lane[i].write_address.next = self.w_word.q.val();
            self.lane[i].write_data.next = self.s_axi_wdata.val().get_bits::<8>(8 * i);
            self.lane[i].write_enable.next = self.w_take.val() & self.s_axi_wstrb.val().get_bit(i);
        }
        if self.h_wr_en.val() {
            for i in 0..4 {
                self.lane[i].write_address.next = self.h_wr_word.val();
                self.lane[i].write_data.next = self.h_wr_data.val().get_bits::<8>(8 * i);
                self.lane[i].write_enable.next = !self.h_wr_addr.val().get_bit(2) & self.h_wr_strb.val().get_bit(i);
            }
            for i in 4..8 {
                self.lane[i].write_address.next = self.h_wr_word.val();
                self.lane[i].write_data.next = self.h_wr_data.val().get_bits::<8>(8 * i - 32);
                self.lane[i].write_enable.next = self.h_wr_addr.val().get_bit(2) & self.h_wr_strb.val().get_bit(i - 4);
            }
        }

        // ---- Read side. What the RAM read last cycle: the 64-bit word and the host's half.
        self.ram_word.next = bit_cast::<64, 8>(self.lane[0].read_data.val())
            | (bit_cast::<64, 8>(self.lane[1].read_data.val()) << 8)
            | (bit_cast::<64, 8>(self.lane[2].read_data.val()) << 16)
            | (bit_cast::<64, 8>(self.lane[3].read_data.val()) << 24)
            | (bit_cast::<64, 8>(self.lane[4].read_data.val()) << 32)
            | (bit_cast::<64, 8>(self.lane[5].read_data.val()) << 40)
            | (bit_cast::<64, 8>(self.lane[6].read_data.val()) << 48)
            | (bit_cast::<64, 8>(self.lane[7].read_data.val()) << 56);
        self.ram_half.next = self.ram_word.val().get_bits::<32>(0);
        if self.h_half.q.val() {
            self.ram_half.next = self.ram_word.val().get_bits::<32>(32);
        }
        // R beats come from the buffer; a beat is read only if it will find room once this
        // cycle's beat has gone.
        self.occupancy.next = self.out_count.q.val() + bit_cast::<2, 1>(self.r_pend.q.val().into());
        self.s_axi_rvalid.next = self.out_count.q.val().any();
        self.s_axi_rdata.next = self.out0.q.val().get_bits::<64>(0);
        self.s_axi_rlast.next = self.out0.q.val().get_bit(64);
        self.s_axi_rresp.next = 0.into();
        self.pop.next = self.out_count.q.val().any() & self.s_axi_rready.val();
        self.issue.next =
            self.r_busy.q.val() & !self.h_rd_en.val() & (!self.occupancy.val().get_bit(1) | self.pop.val());
        self.issue_last.next = self.issue.val() & !self.r_left.q.val().any();
        // Like AW: the next AR waits in `ar_held` and starts as the last beat is read.
        self.ar_take.next = self.s_axi_arvalid.val() & !self.ar_held.q.val() & !self.reset.val();
        self.s_axi_arready.next = !self.ar_held.q.val() & !self.reset.val();
        self.r_next.next = !self.r_busy.q.val() | self.issue_last.val();
        if self.issue.val() {
            self.r_word.d.next = self.r_word.q.val() + 1;
            self.r_left.d.next = self.r_left.q.val() - 1;
        }
        if self.r_next.val() {
            self.r_busy.d.next = self.ar_held.q.val() | self.ar_take.val();
            self.ar_held.d.next = false;
            if self.ar_held.q.val() {
                self.r_word.d.next = self.ar_word.q.val();
                self.r_left.d.next = self.ar_len.q.val();
            } else if self.ar_take.val() {
                self.r_word.d.next = self.s_axi_araddr.val().get_bits::<WB>(3);
                self.r_left.d.next = self.s_axi_arlen.val();
            }
        } else if self.ar_take.val() {
            self.ar_held.d.next = true;
            self.ar_word.d.next = self.s_axi_araddr.val().get_bits::<WB>(3);
            self.ar_len.d.next = self.s_axi_arlen.val();
        }
        self.r_pend.d.next = self.issue.val();
        self.r_pend_last.d.next = self.issue_last.val();
        // The buffer: the head leaves if taken; the word the RAM read this cycle goes in
        // behind what stays.
        self.kept.next = self.out_count.q.val() - bit_cast::<2, 1>(self.pop.val().into());
        self.out_count.d.next = self.kept.val() + bit_cast::<2, 1>(self.r_pend.q.val().into());
        if self.pop.val() {
            self.out0.d.next = self.out1.q.val();
        }
        if self.r_pend.q.val() {
            if self.kept.val().any() {
                self.out1.d.next = bit_cast::<65, 64>(self.ram_word.val())
                    | (bit_cast::<65, 1>(self.r_pend_last.q.val().into()) << 64);
            } else {
                self.out0.d.next = bit_cast::<65, 64>(self.ram_word.val())
                    | (bit_cast::<65, 1>(self.r_pend_last.q.val().into()) << 64);
            }
        }

        // The RAM read port: the next beat, or the host's word instead.
        self.h_rd_word.next = self.h_rd_addr.val().get_bits::<WB>(3);
        for i in 0..8 {
            self.lane[i].read_address.next = self.r_word.q.val();
            if self.h_rd_en.val() {
                self.lane[i].read_address.next = self.h_rd_word.val();
            }
        }
        self.h_pend.d.next = self.h_rd_en.val();
        if self.h_rd_en.val() {
            self.h_half.d.next = self.h_rd_addr.val().get_bit(2);
        }
        self.h_rd_data.next = self.h_held.q.val();
        if self.h_pend.q.val() {
            self.h_rd_data.next = self.ram_half.val();
            self.h_held.d.next = self.ram_half.val();
        }

        if self.reset.val() {
            self.w_busy.d.next = false;
            self.aw_held.d.next = false;
            self.b_owed.d.next = 0.into();
            self.r_busy.d.next = false;
            self.ar_held.d.next = false;
            self.r_pend.d.next = false;
            self.out_count.d.next = 0.into();
            self.h_pend.d.next = false;
        }
    }
}
