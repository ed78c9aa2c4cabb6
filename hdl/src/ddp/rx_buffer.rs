//! Store-and-forward of received ULPDUs: nothing is placed before the MPA receiver has
//! checked a ULPDU's CRC (RFC 5044 §8: a bad FPDU is not delivered), so every ULPDU waits
//! here whole until its last beat brings the verdict.
//!
//! Beats are written into a ring of `1 << AB` beats as they come; a good last beat commits
//! the ULPDU (its octet count and connection go into a descriptor queue). A bad one (its
//! last beat's `tuser`, the MPA error code, is not 0) rewinds the write pointer and leaves
//! in its place a one-beat *failure* packet, whose descriptor carries the error code: the
//! failure reaches the receive engine in order with the ULPDUs around it, so the good
//! ULPDUs before it are handled first, and its connection fails before anything after it
//! is looked at. Committed packets leave with their descriptor in `tuser` on every beat
//! (fields at [`DESC_CONN`], [`DESC_LENGTH`], [`DESC_MPA_ERROR`]).
//!
//! A ULPDU longer than the ring (16 KiB at AB = 11) cannot be held, so it cannot be checked
//! before delivery: once it fills the ring alone its beats so far are given back and the
//! rest of it is discarded; its last beat leaves as a failure packet with MPA error 0x05
//! (local catastrophic), or its own error code if it had one. A peer cannot wedge the
//! receive path with a long FPDU, and every other connection goes on.
use rnic_proto::terminate::TermCode;
use rust_hdl::prelude::*;

use crate::common::constant;
use crate::common::SmallFifo;

/// The descriptor in `m_axis_tuser`: the connection (the QP the packet was for), from bit 0.
pub const DESC_CONN: usize = 0;
/// The ULPDU's octets, from bit 16 (0 for a failure packet).
pub const DESC_LENGTH: usize = 16;
/// The MPA error code of a failure packet, from bit 32 (0 for a ULPDU).
pub const DESC_MPA_ERROR: usize = 32;
/// Bits of the descriptor.
pub const DESC_BITS: usize = 40;

/// `AB` = ring address bits, `AB1` = `AB + 1`.
#[derive(LogicBlock)]
pub struct RxBuffer<const AB: usize, const AB1: usize> {
    pub clock: Signal<In, Clock>,
    pub reset: Signal<In, Bit>,
    /// ULPDUs from the MPA receiver; `tuser` on the last beat: the MPA error code (0 good).
    pub s_axis_tdata: Signal<In, Bits<64>>,
    pub s_axis_tkeep: Signal<In, Bits<8>>,
    pub s_axis_tlast: Signal<In, Bit>,
    pub s_axis_tuser: Signal<In, Bits<8>>,
    pub s_axis_tvalid: Signal<In, Bit>,
    pub s_axis_tready: Signal<Out, Bit>,
    /// The connection the arriving ULPDU belongs to (read at its last beat).
    pub s_conn: Signal<In, Bits<16>>,
    /// ULPDUs and failure packets, the descriptor in `tuser`.
    pub m_axis_tdata: Signal<Out, Bits<64>>,
    pub m_axis_tkeep: Signal<Out, Bits<8>>,
    pub m_axis_tlast: Signal<Out, Bit>,
    pub m_axis_tuser: Signal<Out, Bits<DESC_BITS>>,
    pub m_axis_tvalid: Signal<Out, Bit>,
    pub m_axis_tready: Signal<In, Bit>,
    ring: RAM<Bits<73>, AB>,
    wr_ptr: DFF<Bits<AB1>>,
    committed: DFF<Bits<AB1>>,
    /// `committed` one cycle later: the ring's read sees a write one cycle after it.
    readable: DFF<Bits<AB1>>,
    rd_ptr: DFF<Bits<AB1>>,
    length: DFF<Bits<16>>,
    /// Committed packets' descriptors.
    descs: SmallFifo<DESC_BITS>,
    out_valid: DFF<Bit>,
    out_beat: DFF<Bits<73>>,
    /// The arriving ULPDU is longer than the ring: its beats are discarded.
    overlong: DFF<Bit>,
    keep_n: Signal<Local, Bits<16>>,
    end_length: Signal<Local, Bits<16>>,
    room: Signal<Local, Bit>,
    take: Signal<Local, Bit>,
    /// The beat taken ends a ULPDU that fails: its place is taken by a failure packet.
    fails: Signal<Local, Bit>,
    code: Signal<Local, Bits<8>>,
    load: Signal<Local, Bit>,
    next_rd: Signal<Local, Bits<AB1>>,
    ring_size: Constant<Bits<AB1>>,
    code_overlong: Constant<Bits<8>>,
    at_conn: Constant<Bits<8>>,
    at_length: Constant<Bits<8>>,
    at_mpa_error: Constant<Bits<8>>,
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
            m_axis_tready: Default::default(),
            ring: Default::default(),
            wr_ptr: Default::default(),
            committed: Default::default(),
            readable: Default::default(),
            rd_ptr: Default::default(),
            length: Default::default(),
            descs: Default::default(),
            out_valid: Default::default(),
            out_beat: Default::default(),
            overlong: Default::default(),
            keep_n: Default::default(),
            end_length: Default::default(),
            room: Default::default(),
            take: Default::default(),
            fails: Default::default(),
            code: Default::default(),
            load: Default::default(),
            next_rd: Default::default(),
            ring_size: constant(1 << AB),
            code_overlong: constant(TermCode::MPA_LOCAL_CATASTROPHIC.code.into()),
            at_conn: constant(DESC_CONN as u64),
            at_length: constant(DESC_LENGTH as u64),
            at_mpa_error: constant(DESC_MPA_ERROR as u64),
        }
    }
}

impl<const AB: usize, const AB1: usize> Logic for RxBuffer<AB, AB1> {
    #[hdl_gen]
    fn update(&mut self) {
        dff_setup!(self, clock, wr_ptr, committed, readable, rd_ptr, length, out_valid, out_beat, overlong);
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
        // (An over-long ULPDU writes nothing until its failure packet, which goes where
        // the ULPDU began: there is room for it.)
        self.room.next = (((self.wr_ptr.q.val() - self.rd_ptr.q.val()) != self.ring_size.val())
            | self.overlong.q.val())
            & self.descs.s_ready.val();
        self.s_axis_tready.next = self.room.val();
        self.take.next = self.s_axis_tvalid.val() & self.room.val();
        self.code.next = self.s_axis_tuser.val();
        if self.overlong.q.val() & !self.s_axis_tuser.val().any() {
            self.code.next = self.code_overlong.val();
        }
        self.fails.next = self.take.val() & self.s_axis_tlast.val() & self.code.val().any();
        self.ring.write_enable.next = self.take.val() & (!self.overlong.q.val() | self.s_axis_tlast.val());
        self.ring.write_address.next = self.wr_ptr.q.val().get_bits::<AB>(0);
        if self.fails.val() {
            self.ring.write_address.next = self.committed.q.val().get_bits::<AB>(0);
        }
        self.ring.write_data.next = bit_cast::<73, 64>(self.s_axis_tdata.val())
            | (bit_cast::<73, 8>(self.s_axis_tkeep.val()) << 64)
            | (bit_cast::<73, 1>(self.s_axis_tlast.val().into()) << 72);
        // A ULPDU that fills the ring alone can never be committed: give its room back and
        // discard the rest of it.
        if ((self.wr_ptr.q.val() - self.committed.q.val()) == self.ring_size.val()) & !self.overlong.q.val() {
            self.overlong.d.next = true;
            self.wr_ptr.d.next = self.committed.q.val();
            self.length.d.next = 0.into();
        }
        // (Its own 16-bit signal: inside the wider descriptor the sum would not wrap.)
        self.end_length.next = self.length.q.val() + self.keep_n.val();
        self.descs.s_valid.next = self.take.val() & self.s_axis_tlast.val();
        self.descs.s_data.next = (bit_cast::<DESC_BITS, 16>(self.end_length.val()) << self.at_length.val())
            | (bit_cast::<DESC_BITS, 16>(self.s_conn.val()) << self.at_conn.val());
        if self.fails.val() {
            self.descs.s_data.next = (bit_cast::<DESC_BITS, 8>(self.code.val()) << self.at_mpa_error.val())
                | (bit_cast::<DESC_BITS, 16>(self.s_conn.val()) << self.at_conn.val());
        }
        if self.take.val() & !self.overlong.q.val() {
            self.wr_ptr.d.next = self.wr_ptr.q.val() + 1;
            self.length.d.next = self.length.q.val() + self.keep_n.val();
        }
        if self.take.val() & self.s_axis_tlast.val() {
            self.length.d.next = 0.into();
            self.overlong.d.next = false;
            self.committed.d.next = self.wr_ptr.q.val() + 1;
            if self.fails.val() {
                self.committed.d.next = self.committed.q.val() + 1;
                self.wr_ptr.d.next = self.committed.q.val() + 1;
            }
        }
        self.readable.d.next = self.committed.q.val();

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
        if self.reset.val() {
            self.wr_ptr.d.next = 0.into();
            self.committed.d.next = 0.into();
            self.readable.d.next = 0.into();
            self.rd_ptr.d.next = 0.into();
            self.length.d.next = 0.into();
            self.out_valid.d.next = false;
            self.overlong.d.next = false;
        }
    }
}
