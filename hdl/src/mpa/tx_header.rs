//! TX stage 1: ULPDU in, FPDU content out: the ULPDU_Length field, the ULPDU, the PAD
//! (RFC 5044 §4.1).
//!
//! Every byte moves two lanes up to make room for the length field, so each output beat is
//! the input beat shifted by 16 bits with the two top bytes of the previous beat carried
//! in. The content ends on a 4-octet boundary (the PAD), counted from the length field,
//! which is taken from `s_axis_tuser` on the first beat of each ULPDU: the DDP segmenter
//! knows a segment's length before it sends it, and the length goes out first.
//!
//! The length field rules the output. If a ULPDU turns out shorter than its length, the
//! rest is sent as zeros; if longer, the extra octets are dropped. Either way
//! `length_error` latches, and the byte stream stays well framed for the peer.
use rust_hdl::prelude::*;

/// `D` = data bits, `K` = byte lanes (`D = 8 K`, `K` a multiple of 4).
#[derive(LogicBlock)]
pub struct TxHeader<const D: usize, const K: usize> {
    pub clock: Signal<In, Clock>,
    pub reset: Signal<In, Bit>,
    /// ULPDUs, lane 0 first; `tkeep` contiguous from lane 0; `tuser` = ULPDU length,
    /// read on the first beat.
    pub s_axis_tdata: Signal<In, Bits<D>>,
    pub s_axis_tkeep: Signal<In, Bits<K>>,
    pub s_axis_tvalid: Signal<In, Bit>,
    pub s_axis_tlast: Signal<In, Bit>,
    pub s_axis_tuser: Signal<In, Bits<16>>,
    pub s_axis_tready: Signal<Out, Bit>,
    /// FPDU content in whole 4-octet words; `m_words` of them are valid.
    pub m_data: Signal<Out, Bits<D>>,
    pub m_words: Signal<Out, Bits<8>>,
    pub m_last: Signal<Out, Bit>,
    pub m_valid: Signal<Out, Bit>,
    pub m_ready: Signal<In, Bit>,
    pub length_error: Signal<Out, Bit>,
    out_data: DFF<Bits<D>>,
    out_words: DFF<Bits<8>>,
    out_last: DFF<Bit>,
    out_valid: DFF<Bit>,
    /// The two top octets of the previous beat (or the length field before the first).
    carry: DFF<Bits<16>>,
    /// Content octets (ULPDU_Length + ULPDU + PAD) still to send.
    left: DFF<Bits<18>>,
    /// ULPDU octets still expected from the input.
    data_left: DFF<Bits<18>>,
    in_packet: DFF<Bit>,
    flushing: DFF<Bit>,
    error: DFF<Bit>,
    load: Signal<Local, Bit>,
    in_bytes: Signal<Local, Bits<18>>,
    take: Signal<Local, Bits<18>>,
    take_shift: Signal<Local, Bits<16>>,
    clean: Signal<Local, Bits<D>>,
    head: Signal<Local, Bits<16>>,
    budget: Signal<Local, Bits<18>>,
    ulpdu_left: Signal<Local, Bits<18>>,
    emit: Signal<Local, Bits<18>>,
    ones: Constant<Bits<D>>,
    lanes: Constant<Bits<18>>,
    top_lanes: Constant<Bits<16>>,
}

impl<const D: usize, const K: usize> Default for TxHeader<D, K> {
    fn default() -> Self {
        const { assert!(D == 8 * K && K.is_multiple_of(4) && K >= 8) };
        Self {
            clock: Default::default(),
            reset: Default::default(),
            s_axis_tdata: Default::default(),
            s_axis_tkeep: Default::default(),
            s_axis_tvalid: Default::default(),
            s_axis_tlast: Default::default(),
            s_axis_tuser: Default::default(),
            s_axis_tready: Default::default(),
            m_data: Default::default(),
            m_words: Default::default(),
            m_last: Default::default(),
            m_valid: Default::default(),
            m_ready: Default::default(),
            length_error: Default::default(),
            out_data: Default::default(),
            out_words: Default::default(),
            out_last: Default::default(),
            out_valid: Default::default(),
            carry: Default::default(),
            left: Default::default(),
            data_left: Default::default(),
            in_packet: Default::default(),
            flushing: Default::default(),
            error: Default::default(),
            load: Default::default(),
            in_bytes: Default::default(),
            take: Default::default(),
            take_shift: Default::default(),
            clean: Default::default(),
            head: Default::default(),
            budget: Default::default(),
            ulpdu_left: Default::default(),
            emit: Default::default(),
            ones: Constant::new(!Bits::<D>::default()),
            lanes: Constant::new((K as u64).into()),
            top_lanes: Constant::new((D as u64 - 16).into()),
        }
    }
}

impl<const D: usize, const K: usize> Logic for TxHeader<D, K> {
    #[hdl_gen]
    fn update(&mut self) {
        dff_setup!(
            self, clock, out_data, out_words, out_last, out_valid, carry, left, data_left, in_packet, flushing, error
        );
        self.load.next = !self.out_valid.q.val() | self.m_ready.val();

        // Octets of this beat that belong to the ULPDU; the rest are cleared, so the PAD
        // and anything past the length are zeros.
        self.in_bytes.next = 0.into();
        for i in 0..K {
            if self.s_axis_tkeep.val().get_bit(i) {
                self.in_bytes.next = (i + 1).to_bits();
            }
        }
        self.ulpdu_left.next = self.data_left.q.val();
        self.head.next = self.carry.q.val();
        self.budget.next = self.left.q.val();
        if !self.in_packet.q.val() & !self.flushing.q.val() {
            self.ulpdu_left.next = bit_cast::<18, 16>(self.s_axis_tuser.val());
            // ULPDU_Length goes out big-endian: its high octet in lane 0.
            self.head.next = (self.s_axis_tuser.val() >> 8) | (self.s_axis_tuser.val() << 8);
            // 2 + length, rounded up to a multiple of 4 by the PAD.
            self.budget.next = (bit_cast::<18, 16>(self.s_axis_tuser.val()) + 5) & 0x3FFFC;
        }
        self.take.next = self.in_bytes.val();
        if self.in_bytes.val() > self.ulpdu_left.val() {
            self.take.next = self.ulpdu_left.val();
        }
        self.take_shift.next = bit_cast::<16, 18>(self.take.val()) << 3;
        self.clean.next = self.s_axis_tdata.val() & !(self.ones.val() << self.take_shift.val());
        self.emit.next = self.budget.val();
        if self.budget.val() > self.lanes.val() {
            self.emit.next = self.lanes.val();
        }

        self.s_axis_tready.next = self.load.val() & !self.flushing.q.val();
        if self.m_ready.val() {
            self.out_valid.d.next = false;
        }
        if self.load.val() & self.flushing.q.val() {
            // After the input ended: the carried octets, then zeros, up to the PAD.
            self.out_data.d.next = bit_cast::<D, 16>(self.carry.q.val());
            self.out_words.d.next = bit_cast::<8, 18>(self.emit.val() >> 2);
            self.out_last.d.next = self.budget.val() == self.emit.val();
            self.out_valid.d.next = true;
            self.carry.d.next = 0.into();
            self.left.d.next = self.budget.val() - self.emit.val();
            self.flushing.d.next = self.budget.val() != self.emit.val();
        } else if self.load.val() & self.s_axis_tvalid.val() {
            self.carry.d.next = self.clean.val().get_bits::<16>(self.top_lanes.val().index());
            self.data_left.d.next = self.ulpdu_left.val() - self.take.val();
            self.left.d.next = self.budget.val() - self.emit.val();
            self.in_packet.d.next = !self.s_axis_tlast.val();
            if self.budget.val() != 0 {
                self.out_data.d.next = (self.clean.val() << 16) | bit_cast::<D, 16>(self.head.val());
                self.out_words.d.next = bit_cast::<8, 18>(self.emit.val() >> 2);
                self.out_last.d.next = self.budget.val() == self.emit.val();
                self.out_valid.d.next = true;
            }
            if self.s_axis_tlast.val() & (self.budget.val() != self.emit.val()) {
                self.flushing.d.next = true;
            }
            if (self.in_bytes.val() > self.ulpdu_left.val())
                | (self.s_axis_tlast.val() & (self.in_bytes.val() < self.ulpdu_left.val()))
            {
                self.error.d.next = true;
            }
        }
        if self.reset.val() {
            self.out_valid.d.next = false;
            self.in_packet.d.next = false;
            self.flushing.d.next = false;
            self.carry.d.next = 0.into();
            self.error.d.next = false;
        }
        self.m_data.next = self.out_data.q.val();
        self.m_words.next = self.out_words.q.val();
        self.m_last.next = self.out_last.q.val();
        self.m_valid.next = self.out_valid.q.val();
        self.length_error.next = self.error.q.val();
    }
}
