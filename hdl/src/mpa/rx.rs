//! The MPA receiver (RFC 5044 §4, §5.2, §8): TCP payload octets in, ULPDUs out.
//!
//! [`RxAlign`] finds the FPDUs in the octet stream, one per packet, removes markers and
//! checks CRCs, markers and that each packet holds exactly its FPDU; [`RxStrip`] removes
//! ULPDU_Length and PAD. Each packet's ULPDU leaves as one packet, `tuser` on its last beat
//! the FPDU's MPA error code (RFC 5044 §8, RFC 6581 §8; layer 2, type 0): 0 good, 0x02
//! CRC, 0x03 marker, 0x05 (local catastrophic) a packet out of step with its FPDU. A bad
//! FPDU never puts the next packet out of step, so every connection's next packet is
//! read as it should be: stopping the failed connection is the QP's business. The stream
//! position counts from reset, the first octet of Full Operation.
use rust_hdl::prelude::*;

use super::rx_align::RxAlign;
use super::rx_strip::RxStrip;

/// `D` = data bits, `K` = byte lanes, `B` = ring bits (`4 D`), `DW` = `D + 32`, `KW` = `K + 4`.
#[derive(LogicBlock, Default)]
pub struct MpaRx<const D: usize, const K: usize, const B: usize, const DW: usize, const KW: usize> {
    pub clock: Signal<In, Clock>,
    pub reset: Signal<In, Bit>,
    /// Per FPDU, for connections sharing the stream: see [`RxAlign`].
    pub markers_en: Signal<In, Bit>,
    pub fpdu_load: Signal<In, Bit>,
    pub fpdu_to_marker: Signal<In, Bits<16>>,
    pub fpdu_end: Signal<Out, Bit>,
    pub end_to_marker: Signal<Out, Bits<16>>,
    /// Sampled for each FPDU when `fpdu_start` is high (see [`RxAlign`]).
    pub crc_en: Signal<In, Bit>,
    pub fpdu_start: Signal<Out, Bit>,
    /// Holds the next FPDU's parse (see [`RxAlign`]).
    pub fpdu_wait: Signal<In, Bit>,
    /// TCP payload octets, one packet per FPDU; `tkeep` contiguous from lane 0.
    pub s_axis_tdata: Signal<In, Bits<D>>,
    pub s_axis_tkeep: Signal<In, Bits<K>>,
    pub s_axis_tlast: Signal<In, Bit>,
    pub s_axis_tvalid: Signal<In, Bit>,
    pub s_axis_tready: Signal<Out, Bit>,
    /// ULPDUs, one packet each; `tuser` on the last beat: the MPA error code (0 good).
    pub m_axis_tdata: Signal<Out, Bits<D>>,
    pub m_axis_tkeep: Signal<Out, Bits<K>>,
    pub m_axis_tlast: Signal<Out, Bit>,
    pub m_axis_tuser: Signal<Out, Bits<8>>,
    pub m_axis_tvalid: Signal<Out, Bit>,
    pub m_axis_tready: Signal<In, Bit>,
    align: RxAlign<D, K, B, DW, KW>,
    strip: RxStrip<D, K>,
}

impl<const D: usize, const K: usize, const B: usize, const DW: usize, const KW: usize> Logic
    for MpaRx<D, K, B, DW, KW>
{
    #[hdl_gen]
    fn update(&mut self) {
        self.align.clock.next = self.clock.val();
        self.align.reset.next = self.reset.val();
        self.align.markers_en.next = self.markers_en.val();
        self.align.fpdu_load.next = self.fpdu_load.val();
        self.align.fpdu_to_marker.next = self.fpdu_to_marker.val();
        self.fpdu_end.next = self.align.fpdu_end.val();
        self.end_to_marker.next = self.align.end_to_marker.val();
        self.align.crc_en.next = self.crc_en.val();
        self.fpdu_start.next = self.align.fpdu_start.val();
        self.align.fpdu_wait.next = self.fpdu_wait.val();
        self.align.s_axis_tdata.next = self.s_axis_tdata.val();
        self.align.s_axis_tkeep.next = self.s_axis_tkeep.val();
        self.align.s_axis_tlast.next = self.s_axis_tlast.val();
        self.align.s_axis_tvalid.next = self.s_axis_tvalid.val();
        self.s_axis_tready.next = self.align.s_axis_tready.val();

        self.strip.clock.next = self.clock.val();
        self.strip.reset.next = self.reset.val();
        self.strip.s_data.next = self.align.m_data.val();
        self.strip.s_last.next = self.align.m_last.val();
        self.strip.s_valid.next = self.align.m_valid.val();
        self.align.m_ready.next = self.strip.s_ready.val();
        self.strip.s_crc_ok.next = self.align.m_crc_ok.val();
        self.strip.s_marker_ok.next = self.align.m_marker_ok.val();
        self.strip.s_step_ok.next = self.align.m_step_ok.val();

        self.m_axis_tdata.next = self.strip.m_axis_tdata.val();
        self.m_axis_tkeep.next = self.strip.m_axis_tkeep.val();
        self.m_axis_tlast.next = self.strip.m_axis_tlast.val();
        self.m_axis_tuser.next = self.strip.m_axis_tuser.val();
        self.m_axis_tvalid.next = self.strip.m_axis_tvalid.val();
        self.strip.m_axis_tready.next = self.m_axis_tready.val();
    }
}
