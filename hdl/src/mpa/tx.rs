//! The MPA transmitter (RFC 5044 §4): ULPDUs in, FPDUs out.
//!
//! Three stages, each with a registered output and ready/valid between them:
//! [`TxHeader`] puts ULPDU_Length in front and the PAD behind, [`TxMarkers`] inserts
//! markers and leaves a slot for the CRC, and the last stage (here) runs the CRC32c over
//! each beat as it enters the output register and writes the finished CRC into the slot
//! of the FPDU's final beat. With `crc_en` low the CRC field is zero (CRCs were not
//! negotiated, §7.1.1).
//!
//! Output: one AXI-Stream packet per FPDU, starting in lane 0, whole 4-octet words, the
//! last beat possibly partial. The stream position counts from reset, which is the first
//! octet of Full Operation: with markers on, the first octets sent are a zero marker.
use rust_hdl::prelude::*;

use super::tx_header::TxHeader;
use super::tx_markers::TxMarkers;
use super::Crc32c;

/// `D` = data bits, `K` = byte lanes (`D = 8 K`), `B` = marker buffer bits (`3 D`).
#[derive(LogicBlock)]
pub struct MpaTx<const D: usize, const K: usize, const B: usize> {
    pub clock: Signal<In, Clock>,
    pub reset: Signal<In, Bit>,
    pub markers_en: Signal<In, Bit>,
    pub crc_en: Signal<In, Bit>,
    /// ULPDUs; `tuser` = ULPDU length on the first beat; `tkeep` contiguous from lane 0.
    pub s_axis_tdata: Signal<In, Bits<D>>,
    pub s_axis_tkeep: Signal<In, Bits<K>>,
    pub s_axis_tvalid: Signal<In, Bit>,
    pub s_axis_tlast: Signal<In, Bit>,
    pub s_axis_tuser: Signal<In, Bits<16>>,
    pub s_axis_tready: Signal<Out, Bit>,
    /// FPDUs, one packet each.
    pub m_axis_tdata: Signal<Out, Bits<D>>,
    pub m_axis_tkeep: Signal<Out, Bits<K>>,
    pub m_axis_tvalid: Signal<Out, Bit>,
    pub m_axis_tlast: Signal<Out, Bit>,
    pub m_axis_tready: Signal<In, Bit>,
    /// Latched when a ULPDU's length disagreed with `tuser` (see [`TxHeader`]).
    pub length_error: Signal<Out, Bit>,
    header: TxHeader<D, K>,
    markers: TxMarkers<D, K, B>,
    crc_unit: Crc32c<D, K>,
    out_data: DFF<Bits<D>>,
    out_words: DFF<Bits<8>>,
    out_last: DFF<Bit>,
    out_crc_slot: DFF<Bits<8>>,
    out_valid: DFF<Bit>,
    load: Signal<Local, Bit>,
    crc_words: Signal<Local, Bits<8>>,
    crc_shift: Signal<Local, Bits<16>>,
    slot_shift: Signal<Local, Bits<16>>,
    crc_field: Signal<Local, Bits<32>>,
    keep_shift: Signal<Local, Bits<16>>,
    lane_ones: Constant<Bits<K>>,
    word_mask: Constant<Bits<D>>,
}

impl<const D: usize, const K: usize, const B: usize> Default for MpaTx<D, K, B> {
    fn default() -> Self {
        Self {
            clock: Default::default(),
            reset: Default::default(),
            markers_en: Default::default(),
            crc_en: Default::default(),
            s_axis_tdata: Default::default(),
            s_axis_tkeep: Default::default(),
            s_axis_tvalid: Default::default(),
            s_axis_tlast: Default::default(),
            s_axis_tuser: Default::default(),
            s_axis_tready: Default::default(),
            m_axis_tdata: Default::default(),
            m_axis_tkeep: Default::default(),
            m_axis_tvalid: Default::default(),
            m_axis_tlast: Default::default(),
            m_axis_tready: Default::default(),
            length_error: Default::default(),
            header: Default::default(),
            markers: Default::default(),
            crc_unit: Default::default(),
            out_data: Default::default(),
            out_words: Default::default(),
            out_last: Default::default(),
            out_crc_slot: Default::default(),
            out_valid: Default::default(),
            load: Default::default(),
            crc_words: Default::default(),
            crc_shift: Default::default(),
            slot_shift: Default::default(),
            crc_field: Default::default(),
            keep_shift: Default::default(),
            lane_ones: Constant::new(!Bits::<K>::default()),
            word_mask: Constant::new(0xFFFF_FFFF_u64.into()),
        }
    }
}

impl<const D: usize, const K: usize, const B: usize> Logic for MpaTx<D, K, B> {
    #[hdl_gen]
    fn update(&mut self) {
        dff_setup!(self, clock, out_data, out_words, out_last, out_crc_slot, out_valid);
        self.header.clock.next = self.clock.val();
        self.header.reset.next = self.reset.val();
        self.markers.clock.next = self.clock.val();
        self.markers.reset.next = self.reset.val();
        self.crc_unit.clock.next = self.clock.val();
        self.crc_unit.reset.next = self.reset.val();

        // ULPDU in -> content.
        self.header.s_axis_tdata.next = self.s_axis_tdata.val();
        self.header.s_axis_tkeep.next = self.s_axis_tkeep.val();
        self.header.s_axis_tvalid.next = self.s_axis_tvalid.val();
        self.header.s_axis_tlast.next = self.s_axis_tlast.val();
        self.header.s_axis_tuser.next = self.s_axis_tuser.val();
        self.s_axis_tready.next = self.header.s_axis_tready.val();
        self.length_error.next = self.header.length_error.val();

        // Content -> FPDU beats with markers.
        self.markers.markers_en.next = self.markers_en.val();
        self.markers.s_data.next = self.header.m_data.val();
        self.markers.s_words.next = self.header.m_words.val();
        self.markers.s_valid.next = self.header.m_valid.val();
        self.header.m_ready.next = self.markers.s_ready.val();

        // Output register; the CRC sees each beat as it moves in, up to the CRC slot.
        self.load.next = !self.out_valid.q.val() | self.m_axis_tready.val();
        self.markers.m_ready.next = self.load.val();
        self.crc_words.next = self.markers.m_words.val();
        if self.markers.m_last.val() {
            self.crc_words.next = self.markers.m_crc_slot.val();
        }
        self.crc_shift.next = bit_cast::<16, 8>(self.crc_words.val()) << 2;
        self.crc_unit.s_valid.next = self.markers.m_valid.val() & self.load.val();
        self.crc_unit.s_first.next = self.markers.m_first.val();
        self.crc_unit.s_data.next = self.markers.m_data.val();
        self.crc_unit.s_keep.next = !(self.lane_ones.val() << self.crc_shift.val());
        if self.load.val() {
            self.out_valid.d.next = self.markers.m_valid.val();
            self.out_data.d.next = self.markers.m_data.val();
            self.out_words.d.next = self.markers.m_words.val();
            self.out_last.d.next = self.markers.m_last.val();
            self.out_crc_slot.d.next = self.markers.m_crc_slot.val();
        }
        if self.reset.val() {
            self.out_valid.d.next = false;
        }

        // The CRC field: the CRC32c value least significant octet first (§4.4, RFC 3720),
        // which is the value itself in little-endian lane order.
        self.crc_field.next = 0.into();
        if self.crc_en.val() {
            self.crc_field.next = self.crc_unit.crc.val();
        }
        self.slot_shift.next = bit_cast::<16, 8>(self.out_crc_slot.q.val()) << 5;
        self.m_axis_tdata.next = self.out_data.q.val();
        if self.out_last.q.val() {
            self.m_axis_tdata.next = (self.out_data.q.val()
                & !(self.word_mask.val() << self.slot_shift.val()))
                | (bit_cast::<D, 32>(self.crc_field.val()) << self.slot_shift.val());
        }
        self.keep_shift.next = bit_cast::<16, 8>(self.out_words.q.val()) << 2;
        self.m_axis_tkeep.next = !(self.lane_ones.val() << self.keep_shift.val());
        self.m_axis_tvalid.next = self.out_valid.q.val();
        self.m_axis_tlast.next = self.out_last.q.val();
    }
}
