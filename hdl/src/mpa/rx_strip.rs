//! RX stage 2: FPDU content in, ULPDU out — ULPDU_Length and PAD removed (RFC 5044 §4.1).
//!
//! Every ULPDU octet sits two lanes above where it must leave, so each output beat is the
//! held content beat shifted down 16 bits with the two low octets of the next beat on top;
//! the final beat of an FPDU may need one more cycle to drain. The output is cut short at
//! the length the FPDU announced, so the PAD never leaves.
//!
//! The ULPDU's last beat carries the FPDU's verdict in `tuser`, as its MPA error code
//! (RFC 5044 §8, RFC 6581 §8): 0 good, 0x02 CRC mismatch, 0x03 marker mismatch, 0x05 a
//! packet out of step with its FPDU (which outranks the others: its CRC and markers were
//! not read where they should be). Octets leave as they arrive (cut-through), so a
//! consumer must not act on a ULPDU before its last beat says it was good. An FPDU cut
//! short by its packet ends where it is cut.
use rnic_proto::terminate::TermCode;
use rust_hdl::prelude::*;

use crate::common::constant;

/// `D` = data bits, `K` = byte lanes (`D = 8 K`).
#[derive(LogicBlock)]
pub struct RxStrip<const D: usize, const K: usize> {
    pub clock: Signal<In, Clock>,
    pub reset: Signal<In, Bit>,
    /// FPDU content from the aligner.
    pub s_data: Signal<In, Bits<D>>,
    pub s_last: Signal<In, Bit>,
    pub s_valid: Signal<In, Bit>,
    pub s_ready: Signal<Out, Bit>,
    /// The FPDU's verdict, with its last beat.
    pub s_crc_ok: Signal<In, Bit>,
    pub s_marker_ok: Signal<In, Bit>,
    pub s_step_ok: Signal<In, Bit>,
    /// ULPDUs, lane 0 first, one packet each.
    pub m_axis_tdata: Signal<Out, Bits<D>>,
    pub m_axis_tkeep: Signal<Out, Bits<K>>,
    pub m_axis_tlast: Signal<Out, Bit>,
    pub m_axis_tuser: Signal<Out, Bits<8>>,
    pub m_axis_tvalid: Signal<Out, Bit>,
    pub m_axis_tready: Signal<In, Bit>,
    hold: DFF<Bits<D>>,
    hold_valid: DFF<Bit>,
    hold_last: DFF<Bit>,
    /// ULPDU octets of the current FPDU still to send.
    left: DFF<Bits<18>>,
    out_data: DFF<Bits<D>>,
    out_bytes: DFF<Bits<8>>,
    out_last: DFF<Bit>,
    out_valid: DFF<Bit>,
    /// `tuser` of the output beat, and the verdict of a held last beat.
    out_user: DFF<Bits<8>>,
    hold_user: DFF<Bits<8>>,
    load: Signal<Local, Bit>,
    in_user: Signal<Local, Bits<8>>,
    drain: Signal<Local, Bit>,
    take_in: Signal<Local, Bit>,
    length: Signal<Local, Bits<18>>,
    send: Signal<Local, Bits<18>>,
    rest: Signal<Local, Bits<18>>,
    joined: Signal<Local, Bits<D>>,
    ones: Constant<Bits<K>>,
    lanes: Constant<Bits<18>>,
    top_shift: Constant<Bits<16>>,
    code_crc: Constant<Bits<8>>,
    code_marker: Constant<Bits<8>>,
    code_step: Constant<Bits<8>>,
}

impl<const D: usize, const K: usize> Default for RxStrip<D, K> {
    fn default() -> Self {
        const { assert!(D == 8 * K && K.is_multiple_of(4) && K >= 8) };
        Self {
            clock: Default::default(),
            reset: Default::default(),
            s_data: Default::default(),
            s_last: Default::default(),
            s_valid: Default::default(),
            s_ready: Default::default(),
            s_crc_ok: Default::default(),
            s_marker_ok: Default::default(),
            s_step_ok: Default::default(),
            m_axis_tdata: Default::default(),
            m_axis_tkeep: Default::default(),
            m_axis_tlast: Default::default(),
            m_axis_tuser: Default::default(),
            m_axis_tvalid: Default::default(),
            m_axis_tready: Default::default(),
            hold: Default::default(),
            hold_valid: Default::default(),
            hold_last: Default::default(),
            left: Default::default(),
            out_data: Default::default(),
            out_bytes: Default::default(),
            out_last: Default::default(),
            out_valid: Default::default(),
            out_user: Default::default(),
            hold_user: Default::default(),
            load: Default::default(),
            in_user: Default::default(),
            drain: Default::default(),
            take_in: Default::default(),
            length: Default::default(),
            send: Default::default(),
            rest: Default::default(),
            joined: Default::default(),
            ones: Constant::new(!Bits::<K>::default()),
            lanes: Constant::new((K as u64).into()),
            top_shift: Constant::new((D as u64 - 16).into()),
            code_crc: constant(TermCode::MPA_CRC.code.into()),
            code_marker: constant(TermCode::MPA_MARKER.code.into()),
            code_step: constant(TermCode::MPA_LOCAL_CATASTROPHIC.code.into()),
        }
    }
}

impl<const D: usize, const K: usize> Logic for RxStrip<D, K> {
    #[hdl_gen]
    fn update(&mut self) {
        dff_setup!(
            self, clock, hold, hold_valid, hold_last, left, out_data, out_bytes, out_last, out_valid, out_user,
            hold_user
        );
        // The verdict as an MPA error code.
        self.in_user.next = 0.into();
        if !self.s_marker_ok.val() {
            self.in_user.next = self.code_marker.val();
        }
        if !self.s_crc_ok.val() {
            self.in_user.next = self.code_crc.val();
        }
        if !self.s_step_ok.val() {
            self.in_user.next = self.code_step.val();
        }
        self.load.next = !self.out_valid.q.val() | self.m_axis_tready.val();
        // The FPDU's last content beat is held: its octets above lane 1 still have to go.
        self.drain.next = self.hold_valid.q.val() & self.hold_last.q.val();
        self.s_ready.next = self.load.val() & !self.drain.val();
        self.take_in.next = self.s_valid.val() & self.load.val() & !self.drain.val();

        // ULPDU_Length, big-endian in lanes 0 and 1 of an FPDU's first beat.
        self.length.next = bit_cast::<18, D>(((self.s_data.val() & 0xFF) << 8) | ((self.s_data.val() >> 8) & 0xFF));
        // Octets to send now: at most a beat of what is left.
        self.rest.next = self.left.q.val();
        if !self.hold_valid.q.val() {
            self.rest.next = self.length.val();
        }
        self.send.next = self.rest.val();
        if self.rest.val() > self.lanes.val() {
            self.send.next = self.lanes.val();
        }
        self.joined.next = (self.hold.q.val() >> 16) | (self.s_data.val() << self.top_shift.val());

        if self.m_axis_tready.val() {
            self.out_valid.d.next = false;
        }
        if self.load.val() & self.drain.val() {
            // Last beat of the FPDU: what is left of the ULPDU, if anything.
            self.hold_valid.d.next = false;
            if self.left.q.val() != 0 {
                self.out_data.d.next = self.hold.q.val() >> 16;
                self.out_bytes.d.next = bit_cast::<8, 18>(self.send.val());
                self.out_last.d.next = true;
                self.out_user.d.next = self.hold_user.q.val();
                self.out_valid.d.next = true;
                self.left.d.next = 0.into();
            }
        } else if self.take_in.val() & !self.hold_valid.q.val() {
            // First beat of an FPDU. A one-beat FPDU's ULPDU leaves at once.
            self.left.d.next = self.length.val();
            self.hold.d.next = self.s_data.val();
            self.hold_valid.d.next = !self.s_last.val();
            if self.s_last.val() {
                self.out_data.d.next = self.s_data.val() >> 16;
                self.out_bytes.d.next = bit_cast::<8, 18>(self.send.val());
                self.out_last.d.next = true;
                self.out_user.d.next = self.in_user.val();
                self.out_valid.d.next = true;
                self.left.d.next = 0.into();
            }
        } else if self.take_in.val() {
            // A following beat: the held beat's octets with two of this one's on top.
            self.hold.d.next = self.s_data.val();
            self.hold_last.d.next = self.s_last.val();
            self.hold_user.d.next = self.in_user.val();
            if self.left.q.val() != 0 {
                self.out_data.d.next = self.joined.val();
                self.out_bytes.d.next = bit_cast::<8, 18>(self.send.val());
                self.out_last.d.next = self.left.q.val() == self.send.val();
                self.out_user.d.next = self.in_user.val();
                self.out_valid.d.next = true;
                self.left.d.next = self.left.q.val() - self.send.val();
            }
            if self.s_last.val() & (self.left.q.val() == self.send.val()) {
                // Nothing of the ULPDU left in the last beat: no drain cycle.
                self.hold_valid.d.next = false;
            }
        }
        if self.take_in.val() & !self.hold_valid.q.val() {
            self.hold_last.d.next = false;
        }
        if self.reset.val() {
            self.hold_valid.d.next = false;
            self.out_valid.d.next = false;
        }
        self.m_axis_tdata.next = self.out_data.q.val();
        self.m_axis_tkeep.next = !(self.ones.val() << self.out_bytes.q.val());
        self.m_axis_tlast.next = self.out_last.q.val();
        self.m_axis_tuser.next = self.out_user.q.val();
        self.m_axis_tvalid.next = self.out_valid.q.val();
    }
}
