//! Store-and-forward of received ULPDUs: nothing is placed before the MPA receiver has
//! checked a ULPDU's CRC (RFC 5044 §8: a bad FPDU is not delivered), so every ULPDU waits
//! here whole until its last beat brings the verdict.
//!
//! Beats are written into a ring of `1 << AB` beats as they come; a good last beat commits
//! the ULPDU (its octet count and connection id go into a descriptor queue), a bad one
//! rewinds the write pointer and pulses `m_drop`. Committed ULPDUs leave as packets, the
//! descriptor in `tuser` (`length << 16 | connection`) on every beat.
//!
//! A ULPDU longer than the ring (16 KiB at AB = 11) cannot be held, so it cannot be checked
//! before delivery: once it fills the ring alone it is discarded up to its last beat
//! (`m_overlong` during that beat), and the buffer takes and discards everything after it,
//! as the MPA receiver does after a bad FPDU (`m_dead`): a peer cannot wedge the receive
//! path with a long FPDU, and nothing after it is delivered out of its place.
use rust_hdl::prelude::*;

use crate::common::constant;
use crate::common::SmallFifo;

/// `AB` = ring address bits, `AB1` = `AB + 1`.
#[derive(LogicBlock)]
pub struct RxBuffer<const AB: usize, const AB1: usize> {
    pub clock: Signal<In, Clock>,
    pub reset: Signal<In, Bit>,
    /// ULPDUs from the MPA receiver; `tuser` on the last beat: non-zero = bad FPDU.
    pub s_axis_tdata: Signal<In, Bits<64>>,
    pub s_axis_tkeep: Signal<In, Bits<8>>,
    pub s_axis_tlast: Signal<In, Bit>,
    pub s_axis_tuser: Signal<In, Bits<2>>,
    pub s_axis_tvalid: Signal<In, Bit>,
    pub s_axis_tready: Signal<Out, Bit>,
    /// The connection the arriving ULPDU belongs to (read at its last beat).
    pub s_conn: Signal<In, Bits<16>>,
    pub m_axis_tdata: Signal<Out, Bits<64>>,
    pub m_axis_tkeep: Signal<Out, Bits<8>>,
    pub m_axis_tlast: Signal<Out, Bit>,
    pub m_axis_tuser: Signal<Out, Bits<32>>,
    pub m_axis_tvalid: Signal<Out, Bit>,
    pub m_axis_tready: Signal<In, Bit>,
    /// A bad ULPDU was dropped (one cycle).
    pub m_drop: Signal<Out, Bit>,
    /// No committed ULPDU waits or leaves: everything that came before a dropped one is out.
    pub m_empty: Signal<Out, Bit>,
    /// The arriving ULPDU is longer than the ring and is being discarded.
    pub m_overlong: Signal<Out, Bit>,
    /// An over-long ULPDU was discarded: everything since is too (until reset).
    pub m_dead: Signal<Out, Bit>,
    ring: RAM<Bits<73>, AB>,
    wr_ptr: DFF<Bits<AB1>>,
    committed: DFF<Bits<AB1>>,
    /// `committed` one cycle later: the ring's read sees a write one cycle after it.
    readable: DFF<Bits<AB1>>,
    rd_ptr: DFF<Bits<AB1>>,
    length: DFF<Bits<16>>,
    /// Committed ULPDUs: octets `<< 16` | connection.
    descs: SmallFifo<32>,
    out_valid: DFF<Bit>,
    out_beat: DFF<Bits<73>>,
    drop: DFF<Bit>,
    overlong: DFF<Bit>,
    dead: DFF<Bit>,
    keep_n: Signal<Local, Bits<16>>,
    room: Signal<Local, Bit>,
    take: Signal<Local, Bit>,
    load: Signal<Local, Bit>,
    next_rd: Signal<Local, Bits<AB1>>,
    ring_size: Constant<Bits<AB1>>,
}

impl<const AB: usize, const AB1: usize> Default for RxBuffer<AB, AB1> {
    fn default() -> Self {
        const { assert!(AB1 == AB + 1) };
        RxBuffer {
            clock: Default::default(),
            reset: Default::default(),
            s_axis_tdata: Default::default(),
            s_axis_tkeep: Default::default(),
            s_axis_tlast: Default::default(),
            s_axis_tuser: Default::default(),
            s_axis_tvalid: Default::default(),
            s_axis_tready: Default::default(),
            s_conn: Default::default(),
            m_axis_tdata: Default::default(),
            m_axis_tkeep: Default::default(),
            m_axis_tlast: Default::default(),
            m_axis_tuser: Default::default(),
            m_axis_tvalid: Default::default(),
            m_empty: Default::default(),
            m_overlong: Default::default(),
            m_dead: Default::default(),
            overlong: Default::default(),
            dead: Default::default(),
            m_axis_tready: Default::default(),
            m_drop: Default::default(),
            ring: Default::default(),
            wr_ptr: Default::default(),
            committed: Default::default(),
            readable: Default::default(),
            rd_ptr: Default::default(),
            length: Default::default(),
            descs: Default::default(),
            out_valid: Default::default(),
            out_beat: Default::default(),
            drop: Default::default(),
            keep_n: Default::default(),
            room: Default::default(),
            take: Default::default(),
            load: Default::default(),
            next_rd: Default::default(),
            ring_size: constant(1 << AB),
        }
    }
}

impl<const AB: usize, const AB1: usize> Logic for RxBuffer<AB, AB1> {
    #[hdl_gen]
    fn update(&mut self) {
        dff_setup!(self, clock, wr_ptr, committed, readable, rd_ptr, length, out_valid, out_beat, drop, overlong, dead);
        self.descs.clock.next = self.clock.val();
        self.descs.reset.next = self.reset.val();
        self.ring.read_clock.next = self.clock.val();
        self.ring.write_clock.next = self.clock.val();

        // Write side: room for a beat, and for a descriptor should this beat end a ULPDU.
        self.keep_n.next = 8.into();
        if !self.s_axis_tkeep.val().get_bit(7) {
            self.keep_n.next = 7.into();
        }
        if !self.s_axis_tkeep.val().get_bit(6) {
            self.keep_n.next = 6.into();
        }
        if !self.s_axis_tkeep.val().get_bit(5) {
            self.keep_n.next = 5.into();
        }
        if !self.s_axis_tkeep.val().get_bit(4) {
            self.keep_n.next = 4.into();
        }
        if !self.s_axis_tkeep.val().get_bit(3) {
            self.keep_n.next = 3.into();
        }
        if !self.s_axis_tkeep.val().get_bit(2) {
            self.keep_n.next = 2.into();
        }
        if !self.s_axis_tkeep.val().get_bit(1) {
            self.keep_n.next = 1.into();
        }
        if !self.s_axis_tkeep.val().get_bit(0) {
            self.keep_n.next = 0.into();
        }
        self.room.next = (((self.wr_ptr.q.val() - self.rd_ptr.q.val()) != self.ring_size.val())
            & self.descs.s_ready.val())
            | self.overlong.q.val()
            | self.dead.q.val();
        self.s_axis_tready.next = self.room.val();
        self.take.next = self.s_axis_tvalid.val() & self.room.val();
        self.ring.write_enable.next = self.take.val() & !self.overlong.q.val() & !self.dead.q.val();
        // A ULPDU that fills the ring alone can never be committed: give its room back and
        // discard the rest of it.
        if ((self.wr_ptr.q.val() - self.committed.q.val()) == self.ring_size.val()) & !self.overlong.q.val() {
            self.overlong.d.next = true;
            self.wr_ptr.d.next = self.committed.q.val();
            self.length.d.next = 0.into();
        }
        self.ring.write_address.next = self.wr_ptr.q.val().get_bits::<AB>(0);
        self.ring.write_data.next = bit_cast::<73, 64>(self.s_axis_tdata.val())
            | (bit_cast::<73, 8>(self.s_axis_tkeep.val()) << 64)
            | (bit_cast::<73, 1>(self.s_axis_tlast.val().into()) << 72);
        self.drop.d.next = false;
        self.descs.s_valid.next = false;
        self.descs.s_data.next =
            (bit_cast::<32, 16>(self.length.q.val() + self.keep_n.val()) << 16) | bit_cast::<32, 16>(self.s_conn.val());
        if self.take.val() & (self.overlong.q.val() | self.dead.q.val()) & self.s_axis_tlast.val() {
            self.dead.d.next = true;
            self.overlong.d.next = false;
        }
        if self.take.val() & !self.overlong.q.val() & !self.dead.q.val() {
            self.wr_ptr.d.next = self.wr_ptr.q.val() + 1;
            self.length.d.next = self.length.q.val() + self.keep_n.val();
            if self.s_axis_tlast.val() {
                self.length.d.next = 0.into();
                if self.s_axis_tuser.val().any() {
                    self.wr_ptr.d.next = self.committed.q.val();
                    self.drop.d.next = true;
                } else {
                    self.committed.d.next = self.wr_ptr.q.val() + 1;
                    self.descs.s_valid.next = true;
                }
            }
        }
        self.readable.d.next = self.committed.q.val();
        self.m_drop.next = self.drop.q.val();

        // Read side: the ring is read at the pointer it will have next cycle, so a beat
        // can leave every cycle.
        self.load.next =
            (self.rd_ptr.q.val() != self.readable.q.val()) & (!self.out_valid.q.val() | self.m_axis_tready.val());
        self.next_rd.next = self.rd_ptr.q.val();
        if self.load.val() {
            self.next_rd.next = self.rd_ptr.q.val() + 1;
        }
        self.rd_ptr.d.next = self.next_rd.val();
        self.ring.read_address.next = self.next_rd.val().get_bits::<AB>(0);
        self.descs.m_ready.next = self.out_valid.q.val() & self.m_axis_tready.val() & self.out_beat.q.val().get_bit(72);
        if self.out_valid.q.val() & self.m_axis_tready.val() {
            self.out_valid.d.next = false;
        }
        if self.load.val() {
            self.out_valid.d.next = true;
            self.out_beat.d.next = self.ring.read_data.val();
        }
        self.m_axis_tvalid.next = self.out_valid.q.val();
        self.m_axis_tdata.next = self.out_beat.q.val().get_bits::<64>(0);
        self.m_axis_tkeep.next = self.out_beat.q.val().get_bits::<8>(64);
        self.m_axis_tlast.next = self.out_beat.q.val().get_bit(72);
        self.m_axis_tuser.next = self.descs.m_data.val();
        self.m_overlong.next = self.overlong.q.val();
        self.m_dead.next = self.dead.q.val();
        self.m_empty.next = (self.rd_ptr.q.val() == self.committed.q.val()) & !self.out_valid.q.val();
        if self.reset.val() {
            self.wr_ptr.d.next = 0.into();
            self.committed.d.next = 0.into();
            self.readable.d.next = 0.into();
            self.rd_ptr.d.next = 0.into();
            self.length.d.next = 0.into();
            self.out_valid.d.next = false;
            self.drop.d.next = false;
            self.overlong.d.next = false;
            self.dead.d.next = false;
        }
    }
}
