//! The TX stream ring: the RNIC's transmit stream (one packet per FPDU, `tuser` = CONN_ID)
//! written into a ring in host memory, for cards without a TCP engine, where the driver
//! carries each connection's octets over a kernel socket (`docs/REGISTERS.md`, "Stream
//! rings").
//!
//! - **Records.** Each FPDU becomes one record at an 8-octet-aligned ring position: an
//!   8-octet header (octets 0..3 the FPDU's length, 4..5 its CONN_ID, 6..7 zero, little
//!   endian) and then the FPDU, padded to a multiple of 8. A record may wrap around the
//!   ring's end. The stream is packed: every beat but a packet's last is full.
//! - **Order.** The FPDU's octets go out in chunks of at most 32 beats as they arrive
//!   (never across the ring's end), and the header last, once the length is known. `PI`
//!   moves past a record only when the header's write has completed; since the DMA
//!   engine completes in request order, the whole record is in memory by then.
//! - **Room.** A beat is taken only if the ring has room for it (and for the header, on an
//!   FPDU's first beat) behind the host's `CI`; so a ring must hold the largest record.
//!   The room is decided a cycle ahead, from `CI` as registered the cycle before: the
//!   stream's ready starts from registers.
//! - **Registers** ([`super::RingRegs`]): `PI` is the RNIC's, `CI` the host's; status bit 0
//!   says a DMA write failed (the ring then takes nothing more until restarted). While the
//!   ring is off the stream passes to `m_tx_*` untouched.
use rust_hdl::prelude::*;

use super::RingRegs;
use crate::common::{constant, RamFifo, SmallFifo};

#[derive(LogicBlock)]
pub struct StreamTxRing {
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
    /// The transmit stream in, and on to the port while the ring is off.
    pub s_tx_tdata: Signal<In, Bits<64>>,
    pub s_tx_tkeep: Signal<In, Bits<8>>,
    pub s_tx_tlast: Signal<In, Bit>,
    pub s_tx_tuser: Signal<In, Bits<16>>,
    pub s_tx_tvalid: Signal<In, Bit>,
    pub s_tx_tready: Signal<Out, Bit>,
    pub m_tx_tdata: Signal<Out, Bits<64>>,
    pub m_tx_tkeep: Signal<Out, Bits<8>>,
    pub m_tx_tlast: Signal<Out, Bit>,
    pub m_tx_tuser: Signal<Out, Bits<16>>,
    pub m_tx_tvalid: Signal<Out, Bit>,
    pub m_tx_tready: Signal<In, Bit>,
    /// DMA write client: whole beats, a completion per request.
    pub m_wr_req_valid: Signal<Out, Bit>,
    pub m_wr_req_ready: Signal<In, Bit>,
    pub m_wr_req_addr: Signal<Out, Bits<64>>,
    pub m_wr_req_len: Signal<Out, Bits<32>>,
    pub m_wr_tdata: Signal<Out, Bits<64>>,
    pub m_wr_tkeep: Signal<Out, Bits<8>>,
    pub m_wr_tlast: Signal<Out, Bit>,
    pub m_wr_tvalid: Signal<Out, Bit>,
    pub m_wr_tready: Signal<In, Bit>,
    pub s_wr_done_valid: Signal<In, Bit>,
    pub s_wr_done_error: Signal<In, Bit>,
    /// Base, size, and the host's consumer position (CI).
    regs: RingRegs,
    /// Free-running octet positions: the next free octet, the published end of the
    /// records complete in memory.
    tail: DFF<Bits<32>>,
    pi: DFF<Bits<32>>,
    failed: DFF<Bit>,
    /// The FPDU being taken: where its header goes, its octets so far, its CONN_ID.
    in_rec: DFF<Bit>,
    hdr_pos: DFF<Bits<32>>,
    rec_len: DFF<Bits<32>>,
    conn: DFF<Bits<16>>,
    /// Its last beat was taken: the header goes out next.
    hdr_due: DFF<Bit>,
    /// The chunk being gathered: its first beat's position and its beats so far.
    chunk_pos: DFF<Bits<32>>,
    chunk_beats: DFF<Bits<6>>,
    /// From the registers as they will be next cycle: the ring has room for the next beat
    /// (and the header, if it is a first beat) behind `CI` as last registered, and the
    /// beat queue has room for a beat more than it may take this cycle. The stream's ready
    /// starts from these, not from the room's 32-bit compare.
    room_ok: DFF<Bit>,
    beats_ok: DFF<Bit>,
    /// Beats to write, bit 64 ending a request.
    beats: RamFifo<65, 6, 7>,
    /// Requests: ring position (0..32), octets (32..41), header (41), `PI` after it (42..74).
    requests: SmallFifo<74>,
    /// Requests issued and not completed: header (0), `PI` after it (1..33).
    in_flight: SmallFifo<33>,
    on: Signal<Local, Bit>,
    first: Signal<Local, Bit>,
    beat_pos: Signal<Local, Bits<32>>,
    need: Signal<Local, Bits<32>>,
    take: Signal<Local, Bit>,
    octets: Signal<Local, Bits<32>>,
    chunk_start: Signal<Local, Bits<32>>,
    chunk_end: Signal<Local, Bit>,
    issue: Signal<Local, Bit>,
    set: Constant<Bits<1>>,
    /// Beats queued below which the beat queue takes one more after this cycle's.
    beats_limit: Constant<Bits<7>>,
    /// A request's length (8 octets) and header flag.
    header_request: Constant<Bits<74>>,
}

impl Default for StreamTxRing {
    fn default() -> Self {
        StreamTxRing {
            clock: Default::default(),
            reset: Default::default(),
            wr_en: Default::default(),
            wr_addr: Default::default(),
            wr_data: Default::default(),
            rd_addr: Default::default(),
            rd_data: Default::default(),
            page: Default::default(),
            s_tx_tdata: Default::default(),
            s_tx_tkeep: Default::default(),
            s_tx_tlast: Default::default(),
            s_tx_tuser: Default::default(),
            s_tx_tvalid: Default::default(),
            s_tx_tready: Default::default(),
            m_tx_tdata: Default::default(),
            m_tx_tkeep: Default::default(),
            m_tx_tlast: Default::default(),
            m_tx_tuser: Default::default(),
            m_tx_tvalid: Default::default(),
            m_tx_tready: Default::default(),
            m_wr_req_valid: Default::default(),
            m_wr_req_ready: Default::default(),
            m_wr_req_addr: Default::default(),
            m_wr_req_len: Default::default(),
            m_wr_tdata: Default::default(),
            m_wr_tkeep: Default::default(),
            m_wr_tlast: Default::default(),
            m_wr_tvalid: Default::default(),
            m_wr_tready: Default::default(),
            s_wr_done_valid: Default::default(),
            s_wr_done_error: Default::default(),
            regs: Default::default(),
            tail: Default::default(),
            pi: Default::default(),
            failed: Default::default(),
            in_rec: Default::default(),
            hdr_pos: Default::default(),
            rec_len: Default::default(),
            conn: Default::default(),
            hdr_due: Default::default(),
            chunk_pos: Default::default(),
            chunk_beats: Default::default(),
            beats: Default::default(),
            requests: Default::default(),
            in_flight: Default::default(),
            on: Default::default(),
            first: Default::default(),
            beat_pos: Default::default(),
            need: Default::default(),
            room_ok: Default::default(),
            beats_ok: Default::default(),
            take: Default::default(),
            octets: Default::default(),
            chunk_start: Default::default(),
            chunk_end: Default::default(),
            issue: Default::default(),
            set: constant(1),
            beats_limit: constant(63),
            header_request: constant(8 << 32 | 1 << 41),
        }
    }
}

impl Logic for StreamTxRing {
    #[hdl_gen]
    fn update(&mut self) {
        clock!(self, clock, regs, beats, requests, in_flight);
        dff_setup!(
            self,
            clock,
            tail,
            pi,
            failed,
            in_rec,
            hdr_pos,
            rec_len,
            conn,
            hdr_due,
            chunk_pos,
            chunk_beats,
            room_ok,
            beats_ok
        );
        self.regs.reset.next = self.reset.val();
        self.regs.wr_en.next = self.wr_en.val();
        self.regs.wr_addr.next = self.wr_addr.val();
        self.regs.wr_data.next = self.wr_data.val();
        self.regs.rd_addr.next = self.rd_addr.val();
        self.regs.page.next = self.page.val();
        self.regs.host_pi.next = false;
        self.regs.dev_index.next = self.pi.q.val();
        self.regs.stopped.next = self.failed.q.val();
        self.rd_data.next = self.regs.rd_data.val();
        self.beats.reset.next = self.reset.val();
        self.requests.reset.next = self.reset.val();
        self.in_flight.reset.next = self.reset.val();
        self.on.next = self.regs.on.val();

        // The stream: through to the port while off, into the ring while on. A beat is
        // taken when the ring has room for it (and the header on a first beat) and both
        // queues can hold it (`room_ok`, `beats_ok`, decided last cycle); none while the
        // header is due or after a failure.
        self.first.next = !self.in_rec.q.val();
        self.beat_pos.next = self.tail.q.val();
        if self.first.val() {
            self.beat_pos.next = self.tail.q.val() + 8;
        }
        self.take.next = self.on.val()
            & self.s_tx_tvalid.val()
            & self.room_ok.q.val()
            & !self.hdr_due.q.val()
            & !self.failed.q.val()
            & self.beats_ok.q.val()
            & self.requests.s_ready.val();
        self.m_tx_tdata.next = self.s_tx_tdata.val();
        self.m_tx_tkeep.next = self.s_tx_tkeep.val();
        self.m_tx_tlast.next = self.s_tx_tlast.val();
        self.m_tx_tuser.next = self.s_tx_tuser.val();
        self.m_tx_tvalid.next = self.s_tx_tvalid.val() & !self.on.val();
        self.s_tx_tready.next = self.m_tx_tready.val();
        if self.on.val() {
            self.s_tx_tready.next = self.take.val();
        }

        // Octets in the beat: its keep is a run of ones from lane 0.
        self.octets.next = 0.into();
        if self.s_tx_tkeep.val().get_bit(0) {
            self.octets.next = 1.into();
        }
        if self.s_tx_tkeep.val().get_bit(1) {
            self.octets.next = 2.into();
        }
        if self.s_tx_tkeep.val().get_bit(2) {
            self.octets.next = 3.into();
        }
        if self.s_tx_tkeep.val().get_bit(3) {
            self.octets.next = 4.into();
        }
        if self.s_tx_tkeep.val().get_bit(4) {
            self.octets.next = 5.into();
        }
        if self.s_tx_tkeep.val().get_bit(5) {
            self.octets.next = 6.into();
        }
        if self.s_tx_tkeep.val().get_bit(6) {
            self.octets.next = 7.into();
        }
        if self.s_tx_tkeep.val().get_bit(7) {
            self.octets.next = 8.into();
        }

        // A chunk ends at the FPDU's end, at 32 beats, or at the ring's end.
        self.chunk_start.next = self.chunk_pos.q.val();
        if self.chunk_beats.q.val() == 0 {
            self.chunk_start.next = self.beat_pos.val();
        }
        self.chunk_end.next = self.s_tx_tlast.val()
            | (self.chunk_beats.q.val() == 31)
            | (((self.beat_pos.val() + 8) & self.regs.mask.val()) == 0);
        self.beats.s_valid.next = self.take.val();
        self.beats.s_data.next =
            bit_cast::<65, 64>(self.s_tx_tdata.val()) | (bit_cast::<65, 1>(self.chunk_end.val().into()) << 64);
        self.requests.s_valid.next = self.take.val() & self.chunk_end.val();
        // (Octets: the chunk's beats, counting this one, times 8.)
        self.requests.s_data.next = bit_cast::<74, 32>(self.chunk_start.val())
            | (bit_cast::<74, 7>(bit_cast::<7, 6>(self.chunk_beats.q.val()) + 1) << 35);
        if self.take.val() {
            self.tail.d.next = self.beat_pos.val() + 8;
            self.chunk_pos.d.next = self.chunk_start.val();
            self.chunk_beats.d.next = self.chunk_beats.q.val() + 1;
            if self.chunk_end.val() {
                self.chunk_beats.d.next = 0.into();
            }
            self.rec_len.d.next = self.rec_len.q.val() + self.octets.val();
            if self.first.val() {
                self.in_rec.d.next = true;
                self.hdr_pos.d.next = self.tail.q.val();
                self.rec_len.d.next = self.octets.val();
                self.conn.d.next = self.s_tx_tuser.val();
            }
            if self.s_tx_tlast.val() {
                self.hdr_due.d.next = true;
            }
        }
        // The header, once the FPDU is all taken: its request publishes the record.
        if self.hdr_due.q.val() & !self.take.val() {
            self.beats.s_valid.next = self.requests.s_ready.val();
            self.beats.s_data.next = bit_cast::<65, 32>(self.rec_len.q.val())
                | (bit_cast::<65, 16>(self.conn.q.val()) << 32)
                | (bit_cast::<65, 1>(self.set.val()) << 64);
            self.requests.s_valid.next = self.beats.s_ready.val();
            self.requests.s_data.next = bit_cast::<74, 32>(self.hdr_pos.q.val())
                | self.header_request.val()
                | (bit_cast::<74, 32>(self.tail.q.val()) << 42);
            if self.beats.s_ready.val() & self.requests.s_ready.val() {
                self.hdr_due.d.next = false;
                self.in_rec.d.next = false;
            }
        }

        // Requests to the DMA write engine, and their completions.
        self.issue.next = self.requests.m_valid.val() & self.in_flight.s_ready.val() & self.m_wr_req_ready.val();
        self.m_wr_req_valid.next = self.requests.m_valid.val() & self.in_flight.s_ready.val();
        self.m_wr_req_addr.next = self.regs.base.val()
            + bit_cast::<64, 32>(self.requests.m_data.val().get_bits::<32>(0) & self.regs.mask.val());
        self.m_wr_req_len.next = bit_cast::<32, 9>(self.requests.m_data.val().get_bits::<9>(32));
        self.requests.m_ready.next = self.issue.val();
        self.in_flight.s_valid.next = self.issue.val();
        self.in_flight.s_data.next = self.requests.m_data.val().get_bits::<33>(41);
        self.m_wr_tdata.next = self.beats.m_data.val().get_bits::<64>(0);
        self.m_wr_tkeep.next = 0xff.into();
        self.m_wr_tlast.next = self.beats.m_data.val().get_bit(64);
        self.m_wr_tvalid.next = self.beats.m_valid.val();
        self.beats.m_ready.next = self.m_wr_tready.val();
        self.in_flight.m_ready.next = self.s_wr_done_valid.val();
        // (Nothing is published from a failed write on: the record, or one before it, may
        // not be whole in memory.)
        if self.s_wr_done_valid.val() {
            if self.in_flight.m_data.val().get_bit(0) & !self.s_wr_done_error.val() & !self.failed.q.val() {
                self.pi.d.next = self.in_flight.m_data.val().get_bits::<32>(1);
            }
            if self.s_wr_done_error.val() {
                self.failed.d.next = true;
            }
        }

        // A restart (the size written) starts over at position 0.
        if self.regs.restart.val() {
            self.tail.d.next = 0.into();
            self.pi.d.next = 0.into();
            self.failed.d.next = false;
            self.in_rec.d.next = false;
            self.hdr_due.d.next = false;
            self.chunk_beats.d.next = 0.into();
        }
        if self.reset.val() {
            self.tail.d.next = 0.into();
            self.pi.d.next = 0.into();
            self.failed.d.next = false;
            self.in_rec.d.next = false;
            self.hdr_due.d.next = false;
            self.chunk_beats.d.next = 0.into();
        }

        // Next cycle's room, from registers: past this cycle's beat if one is taken (the
        // next is then not a first beat, or the header is due and nothing is taken), else
        // for the beat waiting (a first beat's, with its header, if the record is done or
        // its header is due). `CI` as registered can only understate it. None in the cycle
        // after a restart, whose `CI` and size are not yet the new ones.
        self.need.next = 8.into();
        if !self.in_rec.q.val() | self.hdr_due.q.val() {
            self.need.next = 16.into();
        }
        self.room_ok.d.next =
            (self.tail.q.val() + self.need.val() - self.regs.host_index.val()) <= self.regs.size.val();
        if self.take.val() {
            self.room_ok.d.next = (self.beat_pos.val() + 16 - self.regs.host_index.val()) <= self.regs.size.val();
        }
        self.beats_ok.d.next = self.beats.count.val() < self.beats_limit.val();
        if self.regs.restart.val() | self.reset.val() {
            self.room_ok.d.next = false;
        }
    }
}
