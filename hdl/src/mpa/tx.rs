//! The MPA transmitter (RFC 5044 §4): ULPDUs in, FPDUs out.
//!
//! Three stages with ready/valid between them: [`TxHeader`] puts ULPDU_Length in front
//! and the PAD behind, [`TxMarkers`] inserts markers and leaves a slot for the CRC, and the
//! last stage (here) feeds each beat to the pipelined CRC32c unit while the beat itself
//! travels through a [`Pipe`] of the same length; an FPDU's final beat comes out of the
//! pipe together with its CRC, which is written into the slot. With `crc_en` low the CRC
//! field is zero (CRCs were not negotiated, §7.1.1).
//!
//! Output: one AXI-Stream packet per FPDU, starting in lane 0, whole 4-octet words, the
//! last beat possibly partial. The stream position counts from reset, which is the first
//! octet of Full Operation: with markers on, the first octets sent are a zero marker.
use rust_hdl::prelude::*;

use super::crc32c::CRC_LATENCY;
use super::tx_header::TxHeader;
use super::tx_markers::TxMarkers;
use super::Crc32c;
use crate::common::Pipe;

/// `D` = data bits, `K` = byte lanes (`D = 8 K`), `B` = marker buffer bits (`3 D`).
#[derive(LogicBlock)]
pub struct MpaTx<const D: usize, const K: usize, const B: usize> {
    pub clock: Signal<In, Clock>,
    pub reset: Signal<In, Bit>,
    /// Markers for the FPDU starting now, its stream position (with `fpdu_load`), a hold
    /// on its start until they are in (`fpdu_wait`), an FPDU that follows its connection's
    /// last (`fpdu_chain`), and where each FPDU ends (see [`TxMarkers`]): what several
    /// connections sharing the framer need.
    pub markers_en: Signal<In, Bit>,
    pub fpdu_load: Signal<In, Bit>,
    pub fpdu_position: Signal<In, Bits<16>>,
    pub fpdu_wait: Signal<In, Bit>,
    pub fpdu_chain: Signal<In, Bit>,
    pub fpdu_start: Signal<Out, Bit>,
    pub fpdu_end: Signal<Out, Bit>,
    pub end_position: Signal<Out, Bits<16>>,
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
    crc_unit: Crc32c<D, K, false>,
    pipe_data: Pipe<D, CRC_LATENCY>,
    pipe_words: Pipe<8, CRC_LATENCY>,
    pipe_last: Pipe<1, CRC_LATENCY>,
    pipe_crc_slot: Pipe<8, CRC_LATENCY>,
    pipe_valid: Pipe<1, CRC_LATENCY>,
    ce: Signal<Local, Bit>,
    head_valid: Signal<Local, Bit>,
    head_last: Signal<Local, Bit>,
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
            fpdu_load: Default::default(),
            fpdu_position: Default::default(),
            fpdu_wait: Default::default(),
            fpdu_chain: Default::default(),
            fpdu_start: Default::default(),
            fpdu_end: Default::default(),
            end_position: Default::default(),
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
            pipe_data: Default::default(),
            pipe_words: Default::default(),
            pipe_last: Default::default(),
            pipe_crc_slot: Default::default(),
            pipe_valid: Default::default(),
            ce: Default::default(),
            head_valid: Default::default(),
            head_last: Default::default(),
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
        self.header.clock.next = self.clock.val();
        self.header.reset.next = self.reset.val();
        self.markers.clock.next = self.clock.val();
        self.markers.reset.next = self.reset.val();
        self.crc_unit.clock.next = self.clock.val();
        self.crc_unit.reset.next = self.reset.val();
        self.pipe_data.clock.next = self.clock.val();
        self.pipe_data.reset.next = self.reset.val();
        self.pipe_words.clock.next = self.clock.val();
        self.pipe_words.reset.next = self.reset.val();
        self.pipe_last.clock.next = self.clock.val();
        self.pipe_last.reset.next = self.reset.val();
        self.pipe_crc_slot.clock.next = self.clock.val();
        self.pipe_crc_slot.reset.next = self.reset.val();
        self.pipe_valid.clock.next = self.clock.val();
        self.pipe_valid.reset.next = self.reset.val();

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
        self.markers.fpdu_load.next = self.fpdu_load.val();
        self.markers.fpdu_position.next = self.fpdu_position.val();
        self.markers.fpdu_wait.next = self.fpdu_wait.val();
        self.markers.fpdu_chain.next = self.fpdu_chain.val();
        self.fpdu_start.next = self.markers.fpdu_start.val();
        self.fpdu_end.next = self.markers.fpdu_end.val();
        self.end_position.next = self.markers.end_position.val();
        self.markers.s_data.next = self.header.m_data.val();
        self.markers.s_words.next = self.header.m_words.val();
        self.markers.s_last.next = self.header.m_last.val();
        self.markers.s_valid.next = self.header.m_valid.val();
        self.header.m_ready.next = self.markers.s_ready.val();

        // FPDU beats -> the CRC unit and, beside it, the pipe to the output. Both advance
        // whenever the output can take a beat.
        self.head_valid.next = self.pipe_valid.q.val().any();
        self.head_last.next = self.pipe_last.q.val().any();
        self.ce.next = !self.head_valid.val() | self.m_axis_tready.val();
        self.markers.m_ready.next = self.ce.val();
        self.crc_words.next = self.markers.m_words.val();
        if self.markers.m_last.val() {
            self.crc_words.next = self.markers.m_crc_slot.val();
        }
        self.crc_shift.next = bit_cast::<16, 8>(self.crc_words.val()) << 2;
        self.crc_unit.ce.next = self.ce.val();
        self.crc_unit.s_valid.next = self.markers.m_valid.val();
        self.crc_unit.s_first.next = self.markers.m_first.val();
        self.crc_unit.s_last.next = self.markers.m_last.val();
        self.crc_unit.s_data.next = self.markers.m_data.val();
        self.crc_unit.s_keep.next = !(self.lane_ones.val() << self.crc_shift.val());
        self.pipe_data.ce.next = self.ce.val();
        self.pipe_words.ce.next = self.ce.val();
        self.pipe_last.ce.next = self.ce.val();
        self.pipe_crc_slot.ce.next = self.ce.val();
        self.pipe_valid.ce.next = self.ce.val();
        self.pipe_data.d.next = self.markers.m_data.val();
        self.pipe_words.d.next = self.markers.m_words.val();
        self.pipe_last.d.next = self.markers.m_last.val().into();
        self.pipe_crc_slot.d.next = self.markers.m_crc_slot.val();
        self.pipe_valid.d.next = self.markers.m_valid.val().into();

        // The CRC field: the CRC32c value least significant octet first (§4.4, RFC 3720),
        // which is the value itself in little-endian lane order.
        self.crc_field.next = 0.into();
        if self.crc_en.val() {
            self.crc_field.next = self.crc_unit.m_crc.val();
        }
        self.slot_shift.next = bit_cast::<16, 8>(self.pipe_crc_slot.q.val()) << 5;
        self.m_axis_tdata.next = self.pipe_data.q.val();
        if self.head_last.val() {
            self.m_axis_tdata.next = (self.pipe_data.q.val() & !(self.word_mask.val() << self.slot_shift.val()))
                | (bit_cast::<D, 32>(self.crc_field.val()) << self.slot_shift.val());
        }
        self.keep_shift.next = bit_cast::<16, 8>(self.pipe_words.q.val()) << 2;
        self.m_axis_tkeep.next = !(self.lane_ones.val() << self.keep_shift.val());
        self.m_axis_tvalid.next = self.head_valid.val();
        self.m_axis_tlast.next = self.head_last.val();
    }
}
