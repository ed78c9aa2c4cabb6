//! The RX stream ring: FPDUs the host received on its sockets, read from a ring in host
//! memory into the RNIC's receive stream (one packet per FPDU, `tuser` = QP number), the
//! counterpart of [`super::StreamTxRing`] (`docs/REGISTERS.md`, "Stream rings").
//!
//! - **Records.** The host writes each FPDU as a record at an 8-octet-aligned position: an
//!   8-octet header (octets 0..3 the FPDU's length, 4..5 the QP number, 6..7 zero, little
//!   endian) and the FPDU, padded to a multiple of 8, wrapping around the ring's end if
//!   need be; then it moves `PI` past the record.
//! - **Reading.** The header is read first, then the FPDU in requests of at most 256
//!   octets (never across the ring's end), each only when the output queue has room for
//!   it, so the ring always takes its data at full rate. `CI` moves past a record when
//!   its last octet is in the queue: the host may reuse the space.
//! - **Bad records.** A header with length 0, or a record reaching past `PI`, or a failed
//!   DMA read, stops the ring (status bit 0) before anything of that record is read:
//!   nothing is read beyond what the host published.
//! - **Planned a cycle ahead.** Every decision is taken from registers computed in the
//!   cycles before it: whether the host has published a header past `CI` (a cycle stale,
//!   so not trusted in the cycle after a restart), the header's checks (in a cycle
//!   of their own after it arrives, against the room published as last registered), and
//!   each data request's length, address and room in the queue (three cycles after the
//!   request before it, while the queue can only drain). So the ring asks for at most one
//!   request every four cycles, against the 32 cycles a full request's data takes.
//! - **Registers** ([`super::RingRegs`]): `PI` is the host's, `CI` the RNIC's; status bit 0
//!   says the ring stopped on a bad record or a failed read. While the ring is off,
//!   `s_rx_*` passes through untouched.
use rust_hdl::prelude::*;

use super::RingRegs;
use crate::common::{constant, RamFifo};

/// Reader states.
const IDLE: u64 = 0;
const HEADER: u64 = 1;
const CHECK: u64 = 2;
const DATA: u64 = 3;
/// Cycles of planning before a data request is offered.
const FRESH: u64 = 3;

#[derive(LogicBlock)]
pub struct StreamRxRing {
    pub clock: Signal<In, Clock>,
    pub reset: Signal<In, Bit>,
    /// Register writes and reads of the ring's 32-octet page (`wr_addr`/`rd_addr` bits
    /// 4..2 pick the register); `rd_data` is 0 outside it.
    pub wr_en: Signal<In, Bit>,
    pub wr_addr: Signal<In, Bits<16>>,
    pub wr_data: Signal<In, Bits<32>>,
    pub rd_addr: Signal<In, Bits<16>>,
    pub rd_data: Signal<Out, Bits<32>>,
    /// The ring's page: BAR0 offset bits 15..5.
    pub page: Signal<In, Bits<11>>,
    /// The receive stream from the port (used while the ring is off), and on to the RNIC.
    pub s_rx_tdata: Signal<In, Bits<64>>,
    pub s_rx_tkeep: Signal<In, Bits<8>>,
    pub s_rx_tlast: Signal<In, Bit>,
    pub s_rx_tuser: Signal<In, Bits<16>>,
    pub s_rx_tvalid: Signal<In, Bit>,
    pub s_rx_tready: Signal<Out, Bit>,
    pub m_rx_tdata: Signal<Out, Bits<64>>,
    pub m_rx_tkeep: Signal<Out, Bits<8>>,
    pub m_rx_tlast: Signal<Out, Bit>,
    pub m_rx_tuser: Signal<Out, Bits<16>>,
    pub m_rx_tvalid: Signal<Out, Bit>,
    pub m_rx_tready: Signal<In, Bit>,
    /// DMA read client.
    pub m_rd_req_valid: Signal<Out, Bit>,
    pub m_rd_req_ready: Signal<In, Bit>,
    pub m_rd_req_addr: Signal<Out, Bits<64>>,
    pub m_rd_req_len: Signal<Out, Bits<32>>,
    pub s_rd_tdata: Signal<In, Bits<64>>,
    pub s_rd_terror: Signal<In, Bit>,
    pub s_rd_tvalid: Signal<In, Bit>,
    pub s_rd_tready: Signal<Out, Bit>,
    /// Base, size, and the host's producer position (PI).
    regs: RingRegs,
    /// The end of the records read (free-running octets).
    ci: DFF<Bits<32>>,
    failed: DFF<Bit>,
    state: DFF<Bits<2>>,
    /// The header as it arrived (length, whether its read failed), checked the cycle after.
    hdr_len: DFF<Bits<32>>,
    hdr_error: DFF<Bit>,
    /// From the registers of the cycle before: idle with no beat owed and 8 octets
    /// published past `CI` (`idle_ok`; `CI` moves only with the last beat owed, so it is
    /// never stale, except in the cycle after a restart: `restarted`), the octets published
    /// past the header at `CI` (`room`), and `CI` + 8.
    idle_ok: DFF<Bit>,
    restarted: DFF<Bit>,
    room: DFF<Bits<32>>,
    ci_next: DFF<Bits<32>>,
    /// The record being read: next octet to ask for, octets left to ask for, beats left
    /// to arrive (and whether the next is its last), keep of its last beat, its QP, and
    /// `CI` after it.
    rd_pos: DFF<Bits<32>>,
    ask_left: DFF<Bits<32>>,
    beats_left: DFF<Bits<32>>,
    at_last: DFF<Bit>,
    last_keep: DFF<Bits<8>>,
    qp: DFF<Bits<16>>,
    rec_end: DFF<Bits<32>>,
    /// The next request, planned from `rd_pos` and `ask_left` over three cycles (`fresh`
    /// counts them up to `FRESH`): octets to the ring's end, then the request's length,
    /// then whether it is the record's last and whether the queue has room for it. The
    /// address is registered every cycle: the header's at `CI`, else the data's at `rd_pos`.
    fresh: DFF<Bits<2>>,
    to_end: DFF<Bits<32>>,
    chunk: DFF<Bits<32>>,
    chunk_last: DFF<Bit>,
    fits: DFF<Bit>,
    addr: DFF<Bits<64>>,
    /// Beats asked for and not yet arrived.
    owed: DFF<Bits<8>>,
    /// Beats for the RNIC: data (0..64), keep (64..72), last (72), QP (73..89).
    out: RamFifo<89, 6, 7>,
    padded: Signal<Local, Bits<32>>,
    take: Signal<Local, Bit>,
    arrive: Signal<Local, Bit>,
    owed_add: Signal<Local, Bits<8>>,
    keep: Signal<Local, Bits<8>>,
    is_last: Signal<Local, Bits<1>>,
    one_lane: Constant<Bits<8>>,
    max_chunk: Constant<Bits<32>>,
    queue_depth: Constant<Bits<8>>,
    planned: Constant<Bits<2>>,
    /// Reader states: waiting to read a header, the header asked for, the header being
    /// checked, the data being asked for.
    st_idle: Constant<Bits<2>>,
    st_header: Constant<Bits<2>>,
    st_check: Constant<Bits<2>>,
    st_data: Constant<Bits<2>>,
}

impl Default for StreamRxRing {
    fn default() -> Self {
        StreamRxRing {
            clock: Default::default(),
            reset: Default::default(),
            wr_en: Default::default(),
            wr_addr: Default::default(),
            wr_data: Default::default(),
            rd_addr: Default::default(),
            rd_data: Default::default(),
            page: Default::default(),
            s_rx_tdata: Default::default(),
            s_rx_tkeep: Default::default(),
            s_rx_tlast: Default::default(),
            s_rx_tuser: Default::default(),
            s_rx_tvalid: Default::default(),
            s_rx_tready: Default::default(),
            m_rx_tdata: Default::default(),
            m_rx_tkeep: Default::default(),
            m_rx_tlast: Default::default(),
            m_rx_tuser: Default::default(),
            m_rx_tvalid: Default::default(),
            m_rx_tready: Default::default(),
            m_rd_req_valid: Default::default(),
            m_rd_req_ready: Default::default(),
            m_rd_req_addr: Default::default(),
            m_rd_req_len: Default::default(),
            s_rd_tdata: Default::default(),
            s_rd_terror: Default::default(),
            s_rd_tvalid: Default::default(),
            s_rd_tready: Default::default(),
            regs: Default::default(),
            ci: Default::default(),
            failed: Default::default(),
            state: Default::default(),
            hdr_len: Default::default(),
            hdr_error: Default::default(),
            idle_ok: Default::default(),
            restarted: Default::default(),
            room: Default::default(),
            ci_next: Default::default(),
            rd_pos: Default::default(),
            ask_left: Default::default(),
            beats_left: Default::default(),
            at_last: Default::default(),
            last_keep: Default::default(),
            qp: Default::default(),
            rec_end: Default::default(),
            fresh: Default::default(),
            to_end: Default::default(),
            chunk: Default::default(),
            chunk_last: Default::default(),
            fits: Default::default(),
            addr: Default::default(),
            owed: Default::default(),
            out: Default::default(),
            padded: Default::default(),
            take: Default::default(),
            arrive: Default::default(),
            owed_add: Default::default(),
            keep: Default::default(),
            is_last: Default::default(),
            one_lane: constant(1),
            max_chunk: constant(256),
            queue_depth: constant(64),
            planned: constant(FRESH),
            st_idle: constant(IDLE),
            st_header: constant(HEADER),
            st_check: constant(CHECK),
            st_data: constant(DATA),
        }
    }
}

impl Logic for StreamRxRing {
    #[hdl_gen]
    fn update(&mut self) {
        clock!(self, clock, regs, out);
        dff_setup!(
            self, clock, ci, failed, state, hdr_len, hdr_error, idle_ok, restarted, room, ci_next, rd_pos, ask_left,
            beats_left, at_last, last_keep, qp, rec_end, fresh, to_end, chunk, chunk_last, fits, addr, owed
        );
        self.regs.reset.next = self.reset.val();
        self.regs.wr_en.next = self.wr_en.val();
        self.regs.wr_addr.next = self.wr_addr.val();
        self.regs.wr_data.next = self.wr_data.val();
        self.regs.rd_addr.next = self.rd_addr.val();
        self.regs.page.next = self.page.val();
        self.regs.host_pi.next = true;
        self.regs.dev_index.next = self.ci.q.val();
        self.regs.stopped.next = self.failed.q.val();
        self.rd_data.next = self.regs.rd_data.val();
        self.out.reset.next = self.reset.val();

        // What the next header request and check need, from this cycle's registers.
        self.idle_ok.d.next = (self.state.q.val() == self.st_idle.val())
            & ((self.regs.host_index.val() - self.ci.q.val()) >= 8)
            & (self.owed.q.val() == 0);
        self.restarted.d.next = false;
        self.room.d.next = self.regs.host_index.val() - self.ci.q.val() - 8;
        self.ci_next.d.next = self.ci.q.val() + 8;
        // The next data request's plan, one step a cycle.
        if self.fresh.q.val() != self.planned.val() {
            self.fresh.d.next = self.fresh.q.val() + 1;
        }
        self.to_end.d.next = self.regs.size.val() - (self.rd_pos.q.val() & self.regs.mask.val());
        self.chunk.d.next = self.max_chunk.val();
        if self.ask_left.q.val() < self.chunk.d.val() {
            self.chunk.d.next = self.ask_left.q.val();
        }
        if self.to_end.q.val() < self.chunk.d.val() {
            self.chunk.d.next = self.to_end.q.val();
        }
        self.chunk_last.d.next = self.ask_left.q.val() == self.chunk.q.val();
        // Room for the whole request in the queue, counting beats still owed (a request's
        // beats are octets / 8: at most 256 octets, 32 beats).
        self.fits.d.next = (bit_cast::<8, 7>(self.out.count.val())
            + self.owed.q.val()
            + bit_cast::<8, 6>(self.chunk.q.val().get_bits::<6>(3)))
            <= self.queue_depth.val();
        self.addr.d.next = self.regs.base.val() + bit_cast::<64, 32>(self.ci.q.val() & self.regs.mask.val());
        if self.state.q.val() == self.st_data.val() {
            self.addr.d.next = self.regs.base.val() + bit_cast::<64, 32>(self.rd_pos.q.val() & self.regs.mask.val());
        }

        self.m_rd_req_addr.next = self.addr.q.val();
        self.m_rd_req_len.next = self.chunk.q.val();
        self.m_rd_req_valid.next = false;
        self.owed_add.next = 0.into();
        if self.state.q.val() == self.st_idle.val() {
            // A header, once the last record is all in and the host has published more.
            self.m_rd_req_len.next = 8.into();
            self.m_rd_req_valid.next =
                self.regs.on.val() & !self.failed.q.val() & self.idle_ok.q.val() & !self.restarted.q.val();
        }
        if self.state.q.val() == self.st_data.val() {
            self.m_rd_req_valid.next = (self.fresh.q.val() == self.planned.val()) & self.fits.q.val();
        }
        self.take.next = self.m_rd_req_valid.val() & self.m_rd_req_ready.val();
        if self.take.val() & (self.state.q.val() == self.st_idle.val()) {
            self.state.d.next = self.st_header.val();
        }
        if self.take.val() & (self.state.q.val() == self.st_data.val()) {
            self.rd_pos.d.next = self.rd_pos.q.val() + self.chunk.q.val();
            self.ask_left.d.next = self.ask_left.q.val() - self.chunk.q.val();
            self.owed_add.next = bit_cast::<8, 6>(self.chunk.q.val().get_bits::<6>(3));
            self.fresh.d.next = 0.into();
            if self.chunk_last.q.val() {
                self.state.d.next = self.st_idle.val();
            }
        }

        // Returned octets: the header in HEADER, the record's beats otherwise.
        self.s_rd_tready.next = true;
        self.arrive.next = false;
        if self.s_rd_tvalid.val() & (self.state.q.val() == self.st_header.val()) {
            self.state.d.next = self.st_check.val();
            self.hdr_len.d.next = self.s_rd_tdata.val().get_bits::<32>(0);
            self.qp.d.next = self.s_rd_tdata.val().get_bits::<16>(32);
            self.hdr_error.d.next = self.s_rd_terror.val();
        }
        // The header's checks, and the record's reading set up.
        self.padded.next = (self.hdr_len.q.val() + 7) & 0xffff_fff8_u64;
        if self.state.q.val() == self.st_check.val() {
            self.state.d.next = self.st_data.val();
            self.fresh.d.next = 0.into();
            self.rd_pos.d.next = self.ci_next.q.val();
            self.ask_left.d.next = self.padded.val();
            self.beats_left.d.next = self.padded.val() >> 3;
            self.at_last.d.next = self.padded.val() == 8;
            self.rec_end.d.next = self.ci_next.q.val() + self.padded.val();
            self.last_keep.d.next = 0xff.into();
            if self.hdr_len.q.val().get_bits::<3>(0).any() {
                self.last_keep.d.next = (self.one_lane.val() << self.hdr_len.q.val().get_bits::<3>(0)) - 1;
            }
            // Length 0, a record past PI (or one longer than the ring), or a failed read.
            if (self.hdr_len.q.val() == 0)
                | (self.padded.val() > self.room.q.val())
                | (self.hdr_len.q.val() > 0x7fff_fff0_u64)
                | self.hdr_error.q.val()
            {
                self.state.d.next = self.st_idle.val();
                self.failed.d.next = true;
            }
        }
        if self.state.q.val() != self.st_header.val() {
            self.s_rd_tready.next = self.out.s_ready.val();
            self.arrive.next = self.s_rd_tvalid.val() & self.out.s_ready.val();
        }
        self.keep.next = 0xff.into();
        self.is_last.next = 0.into();
        if self.at_last.q.val() {
            self.keep.next = self.last_keep.q.val();
            self.is_last.next = 1.into();
        }
        self.out.s_valid.next = self.arrive.val();
        self.out.s_data.next = bit_cast::<89, 64>(self.s_rd_tdata.val())
            | (bit_cast::<89, 8>(self.keep.val()) << 64)
            | (bit_cast::<89, 1>(self.is_last.val()) << 72)
            | (bit_cast::<89, 16>(self.qp.q.val()) << 73);
        self.owed.d.next = self.owed.q.val() + self.owed_add.val();
        if self.arrive.val() {
            self.owed.d.next = self.owed.q.val() + self.owed_add.val() - 1;
            self.beats_left.d.next = self.beats_left.q.val() - 1;
            self.at_last.d.next = self.beats_left.q.val() == 2;
            if self.at_last.q.val() {
                self.ci.d.next = self.rec_end.q.val();
            }
            if self.s_rd_terror.val() {
                self.failed.d.next = true;
            }
        }

        // The stream to the RNIC: from the queue while on, from the port while off.
        self.m_rx_tdata.next = self.s_rx_tdata.val();
        self.m_rx_tkeep.next = self.s_rx_tkeep.val();
        self.m_rx_tlast.next = self.s_rx_tlast.val();
        self.m_rx_tuser.next = self.s_rx_tuser.val();
        self.m_rx_tvalid.next = self.s_rx_tvalid.val();
        self.s_rx_tready.next = self.m_rx_tready.val();
        self.out.m_ready.next = false;
        if self.regs.on.val() {
            self.m_rx_tdata.next = self.out.m_data.val().get_bits::<64>(0);
            self.m_rx_tkeep.next = self.out.m_data.val().get_bits::<8>(64);
            self.m_rx_tlast.next = self.out.m_data.val().get_bit(72);
            self.m_rx_tuser.next = self.out.m_data.val().get_bits::<16>(73);
            self.m_rx_tvalid.next = self.out.m_valid.val();
            self.s_rx_tready.next = false;
            self.out.m_ready.next = self.m_rx_tready.val();
        }

        // A restart (the size written) starts over at position 0.
        if self.regs.restart.val() {
            self.ci.d.next = 0.into();
            self.restarted.d.next = true;
            self.failed.d.next = false;
            self.state.d.next = self.st_idle.val();
        }
        if self.reset.val() {
            self.ci.d.next = 0.into();
            self.restarted.d.next = true;
            self.failed.d.next = false;
            self.state.d.next = self.st_idle.val();
            self.owed.d.next = 0.into();
        }
    }
}
