//! RX stage 1: TCP payload octets in, FPDU content out — FPDUs found, markers removed,
//! CRCs and markers checked (RFC 5044 §4, §5.2, §8).
//!
//! Octets collect in a buffer of three beats, oldest in lane 0, so the front of the
//! buffer is always the next unread octet of the stream, whatever the input beats look
//! like. An FPDU is read from the front a beat at a time: its ULPDU_Length (behind a
//! leading marker if one falls there) gives the number of content words, the stream
//! position gives where markers fall. Each cycle one beat of content leaves, taking its
//! words from a window of one beat plus one word: the extra word covers a marker inside
//! the beat, which is dropped, and the CRC word after the last content word.
//!
//! The pipelined CRC unit runs over the same window (markers included, CRC field
//! excluded) as the words leave, while the content beats travel through a [`Pipe`] of the
//! same length; an FPDU's last beat comes out of the pipe together with its CRC and with
//! the CRC field and marker check result it carried along, and gets its verdict there.
//! A bad FPDU is still passed on, flagged, and then nothing more: MPA must not deliver it or
//! any later FPDU (§8, MPA-08, MPA-25); the rest of the stream is accepted and dropped so
//! the connection never backs up.
use rust_hdl::prelude::*;

use super::crc32c::CRC_LATENCY;
use super::Crc32c;
use crate::common::Pipe;

/// `D` = data bits (`8 K`), `K` = byte lanes, `B` = buffer bits (`3 D`), `DW`/`KW` = CRC
/// window bits and lanes (`D + 32`, `K + 4`).
#[derive(LogicBlock)]
pub struct RxAlign<const D: usize, const K: usize, const B: usize, const DW: usize, const KW: usize>
{
    pub clock: Signal<In, Clock>,
    pub reset: Signal<In, Bit>,
    pub markers_en: Signal<In, Bit>,
    pub crc_en: Signal<In, Bit>,
    /// TCP payload octets; `tkeep` contiguous from lane 0.
    pub s_axis_tdata: Signal<In, Bits<D>>,
    pub s_axis_tkeep: Signal<In, Bits<K>>,
    pub s_axis_tvalid: Signal<In, Bit>,
    pub s_axis_tready: Signal<Out, Bit>,
    /// FPDU content (ULPDU_Length, ULPDU, PAD), lane 0 first, whole beats but the last.
    pub m_data: Signal<Out, Bits<D>>,
    pub m_last: Signal<Out, Bit>,
    pub m_valid: Signal<Out, Bit>,
    pub m_ready: Signal<In, Bit>,
    /// The FPDU's verdict, with its last beat.
    pub m_crc_ok: Signal<Out, Bit>,
    pub m_marker_ok: Signal<Out, Bit>,
    /// Latched by a bad FPDU; `error_code` is its MPA error code (2 CRC, 3 marker).
    pub failed: Signal<Out, Bit>,
    pub error_code: Signal<Out, Bits<8>>,
    crc_unit: Crc32c<DW, KW, true>,
    buffer: DFF<Bits<B>>,
    /// Octets in the buffer.
    fill: DFF<Bits<8>>,
    /// Stream position (mod 2^16) of the octet at the front of the buffer.
    position: DFF<Bits<16>>,
    in_fpdu: DFF<Bit>,
    /// Content words of the current FPDU still to leave.
    remaining: DFF<Bits<16>>,
    /// Stream position of the current FPDU's ULPDU_Length field.
    length_position: DFF<Bits<16>>,
    marker_bad: DFF<Bit>,
    failed_held: DFF<Bit>,
    code_held: DFF<Bits<8>>,
    pipe_data: Pipe<D, CRC_LATENCY>,
    pipe_last: Pipe<1, CRC_LATENCY>,
    pipe_marker_bad: Pipe<1, CRC_LATENCY>,
    pipe_crc_field: Pipe<32, CRC_LATENCY>,
    pipe_valid: Pipe<1, CRC_LATENCY>,
    ce: Signal<Local, Bit>,
    head_valid: Signal<Local, Bit>,
    head_last: Signal<Local, Bit>,
    marker_bad_now: Signal<Local, Bit>,
    start: Signal<Local, Bit>,
    to_marker: Signal<Local, Bits<16>>,
    marker_slot: Signal<Local, Bits<16>>,
    marker_shift: Signal<Local, Bits<16>>,
    marker_window: Signal<Local, Bit>,
    leading: Signal<Local, Bit>,
    length_shift: Signal<Local, Bits<16>>,
    length_word: Signal<Local, Bits<32>>,
    length: Signal<Local, Bits<16>>,
    content: Signal<Local, Bits<16>>,
    marker_in: Signal<Local, Bit>,
    take: Signal<Local, Bits<16>>,
    all_content: Signal<Local, Bit>,
    marker_taken: Signal<Local, Bit>,
    crc_slot: Signal<Local, Bits<16>>,
    crc_taken: Signal<Local, Bit>,
    used: Signal<Local, Bits<16>>,
    covered: Signal<Local, Bits<16>>,
    need: Signal<Local, Bits<16>>,
    crc_ok_now: Signal<Local, Bit>,
    marker_ok_now: Signal<Local, Bit>,
    fire: Signal<Local, Bit>,
    front: Signal<Local, Bits<D>>,
    after: Signal<Local, Bits<D>>,
    beat: Signal<Local, Bits<D>>,
    crc_word: Signal<Local, Bits<32>>,
    marker_word: Signal<Local, Bits<32>>,
    fpduptr: Signal<Local, Bits<16>>,
    this_length_position: Signal<Local, Bits<16>>,
    expected_fpduptr: Signal<Local, Bits<16>>,
    consumed: Signal<Local, Bits<8>>,
    kept: Signal<Local, Bits<B>>,
    in_bytes: Signal<Local, Bits<8>>,
    in_clean: Signal<Local, Bits<D>>,
    accept: Signal<Local, Bit>,
    ones: Constant<Bits<D>>,
    window_ones: Constant<Bits<KW>>,
    words_per_beat: Constant<Bits<16>>,
    accept_limit: Constant<Bits<8>>,
}

impl<const D: usize, const K: usize, const B: usize, const DW: usize, const KW: usize> Default
    for RxAlign<D, K, B, DW, KW>
{
    fn default() -> Self {
        const {
            assert!(D == 8 * K && K % 4 == 0 && K >= 8 && B == 3 * D && DW == D + 32 && KW == K + 4)
        };
        Self {
            clock: Default::default(),
            reset: Default::default(),
            markers_en: Default::default(),
            crc_en: Default::default(),
            s_axis_tdata: Default::default(),
            s_axis_tkeep: Default::default(),
            s_axis_tvalid: Default::default(),
            s_axis_tready: Default::default(),
            m_data: Default::default(),
            m_last: Default::default(),
            m_valid: Default::default(),
            m_ready: Default::default(),
            m_crc_ok: Default::default(),
            m_marker_ok: Default::default(),
            failed: Default::default(),
            error_code: Default::default(),
            crc_unit: Default::default(),
            buffer: Default::default(),
            fill: Default::default(),
            position: Default::default(),
            in_fpdu: Default::default(),
            remaining: Default::default(),
            length_position: Default::default(),
            marker_bad: Default::default(),
            failed_held: Default::default(),
            code_held: Default::default(),
            pipe_data: Default::default(),
            pipe_last: Default::default(),
            pipe_marker_bad: Default::default(),
            pipe_crc_field: Default::default(),
            pipe_valid: Default::default(),
            ce: Default::default(),
            head_valid: Default::default(),
            head_last: Default::default(),
            marker_bad_now: Default::default(),
            start: Default::default(),
            to_marker: Default::default(),
            marker_slot: Default::default(),
            marker_shift: Default::default(),
            marker_window: Default::default(),
            leading: Default::default(),
            length_shift: Default::default(),
            length_word: Default::default(),
            length: Default::default(),
            content: Default::default(),
            marker_in: Default::default(),
            take: Default::default(),
            all_content: Default::default(),
            marker_taken: Default::default(),
            crc_slot: Default::default(),
            crc_taken: Default::default(),
            used: Default::default(),
            covered: Default::default(),
            need: Default::default(),
            crc_ok_now: Default::default(),
            marker_ok_now: Default::default(),
            fire: Default::default(),
            front: Default::default(),
            after: Default::default(),
            beat: Default::default(),
            crc_word: Default::default(),
            marker_word: Default::default(),
            fpduptr: Default::default(),
            this_length_position: Default::default(),
            expected_fpduptr: Default::default(),
            consumed: Default::default(),
            kept: Default::default(),
            in_bytes: Default::default(),
            in_clean: Default::default(),
            accept: Default::default(),
            ones: Constant::new(!Bits::<D>::default()),
            window_ones: Constant::new(!Bits::<KW>::default()),
            words_per_beat: Constant::new((K as u64 / 4).into()),
            // Take input while two beats or less are buffered, so one more fits.
            accept_limit: Constant::new((2 * K as u64).into()),
        }
    }
}

impl<const D: usize, const K: usize, const B: usize, const DW: usize, const KW: usize> Logic
    for RxAlign<D, K, B, DW, KW>
{
    #[hdl_gen]
    fn update(&mut self) {
        dff_setup!(self, clock, buffer, fill, position, in_fpdu, remaining, length_position, marker_bad, failed_held, code_held);
        self.crc_unit.clock.next = self.clock.val();
        self.crc_unit.reset.next = self.reset.val();
        self.pipe_data.clock.next = self.clock.val();
        self.pipe_data.reset.next = self.reset.val();
        self.pipe_last.clock.next = self.clock.val();
        self.pipe_last.reset.next = self.reset.val();
        self.pipe_marker_bad.clock.next = self.clock.val();
        self.pipe_marker_bad.reset.next = self.reset.val();
        self.pipe_crc_field.clock.next = self.clock.val();
        self.pipe_crc_field.reset.next = self.reset.val();
        self.pipe_valid.clock.next = self.clock.val();
        self.pipe_valid.reset.next = self.reset.val();
        // Content leaves through the pipe, which advances whenever its head can go.
        self.head_valid.next = self.pipe_valid.q.val().any();
        self.head_last.next = self.pipe_last.q.val().any();
        self.ce.next = !self.head_valid.val() | self.m_ready.val();
        self.start.next = !self.in_fpdu.q.val();

        // Where the next marker is: 0..511 octets ahead of the front. A slot of the window
        // (words 0..N) if close enough.
        self.to_marker.next = (!self.position.q.val() + 1) & 0x1FF;
        self.marker_slot.next = self.to_marker.val() >> 2;
        self.marker_shift.next = self.marker_slot.val() << 5;
        self.marker_window.next =
            self.markers_en.val() & (self.marker_slot.val() <= self.words_per_beat.val());
        self.leading.next = self.start.val() & self.marker_window.val() & (self.marker_slot.val() == 0);

        // ULPDU_Length of a new FPDU, big-endian, behind a leading marker if there is one.
        self.length_shift.next = 0.into();
        if self.leading.val() {
            self.length_shift.next = 32.into();
        }
        self.length_word.next = bit_cast::<32, B>(self.buffer.q.val() >> self.length_shift.val());
        self.length.next = bit_cast::<16, 32>(
            ((self.length_word.val() & 0xFF) << 8) | ((self.length_word.val() >> 8) & 0xFF),
        );
        self.content.next = self.remaining.q.val();
        if self.start.val() {
            // ceil((2 + length) / 4) words, excluding the CRC.
            self.content.next =
                bit_cast::<16, 18>((bit_cast::<18, 16>(self.length.val()) + 5) >> 2);
        }

        // This beat: up to a beat of content, the marker if it lies among it (or right
        // before the CRC), and the CRC word if the content ends and it fits the window.
        self.marker_in.next = self.marker_window.val() & (self.marker_slot.val() <= self.content.val());
        self.take.next = self.content.val();
        if self.content.val() > self.words_per_beat.val() {
            self.take.next = self.words_per_beat.val();
        }
        self.all_content.next = self.take.val() == self.content.val();
        self.marker_taken.next = self.marker_in.val()
            & ((self.marker_slot.val() < self.take.val()) | self.all_content.val());
        self.crc_slot.next = self.content.val();
        if self.marker_taken.val() {
            self.crc_slot.next = self.content.val() + 1;
        }
        self.crc_taken.next =
            self.all_content.val() & (self.crc_slot.val() <= self.words_per_beat.val());
        self.covered.next = self.take.val();
        if self.marker_taken.val() {
            self.covered.next = self.take.val() + 1;
        }
        self.used.next = self.covered.val();
        if self.crc_taken.val() {
            self.used.next = self.covered.val() + 1;
        }
        self.need.next = self.used.val() << 2;

        self.fire.next = self.ce.val()
            & (bit_cast::<16, 8>(self.fill.q.val()) >= self.need.val())
            & !self.failed_held.q.val();

        // Content leaves with the marker cut out: words after it move down one slot.
        self.front.next = bit_cast::<D, B>(self.buffer.q.val());
        self.after.next = bit_cast::<D, B>(self.buffer.q.val() >> 32);
        self.beat.next = self.front.val();
        if self.marker_taken.val() & (self.marker_slot.val() < self.take.val()) {
            self.beat.next = (self.front.val() & !(self.ones.val() << self.marker_shift.val()))
                | (self.after.val() & (self.ones.val() << self.marker_shift.val()));
        }
        self.crc_word.next =
            bit_cast::<32, B>(self.buffer.q.val() >> (self.crc_slot.val() << 5));

        // A marker must point back at this FPDU's ULPDU_Length (0 when it leads the FPDU);
        // its reserved half and the two low FPDUPTR bits are ignored (§4.2, MPA-10).
        self.marker_word.next = bit_cast::<32, B>(self.buffer.q.val() >> self.marker_shift.val());
        self.fpduptr.next = bit_cast::<16, 32>(
            (((self.marker_word.val() >> 16) & 0xFF) << 8) | ((self.marker_word.val() >> 24) & 0xFC),
        );
        self.this_length_position.next = self.length_position.q.val();
        if self.start.val() {
            self.this_length_position.next = self.position.q.val();
            if self.leading.val() {
                self.this_length_position.next = self.position.q.val() + 4;
            }
        }
        self.expected_fpduptr.next =
            self.position.q.val() + (self.marker_slot.val() << 2) - self.this_length_position.val();
        if self.leading.val() {
            self.expected_fpduptr.next = 0.into();
        }

        self.marker_bad_now.next = self.marker_bad.q.val() & !self.start.val();
        if self.marker_taken.val() & (self.fpduptr.val() != self.expected_fpduptr.val()) {
            self.marker_bad_now.next = true;
        }

        // The CRC covers the octets that leave, markers included, up to the CRC field.
        self.crc_unit.ce.next = self.ce.val();
        self.crc_unit.s_valid.next = self.fire.val();
        self.crc_unit.s_first.next = self.start.val();
        self.crc_unit.s_last.next = self.crc_taken.val();
        self.crc_unit.s_data.next = bit_cast::<DW, B>(self.buffer.q.val());
        self.crc_unit.s_keep.next = !(self.window_ones.val() << (self.covered.val() << 2));

        // Buffer: drop what left, append an accepted input beat behind the rest.
        self.consumed.next = 0.into();
        if self.fire.val() {
            self.consumed.next = bit_cast::<8, 16>(self.need.val());
        }
        self.kept.next = self.buffer.q.val() >> (bit_cast::<16, 8>(self.consumed.val()) << 3);
        self.in_bytes.next = 0.into();
        for i in 0..K {
            if self.s_axis_tkeep.val().get_bit(i) {
                self.in_bytes.next = (i + 1).to_bits();
            }
        }
        self.in_clean.next = self.s_axis_tdata.val()
            & !(self.ones.val() << (bit_cast::<16, 8>(self.in_bytes.val()) << 3));
        self.s_axis_tready.next =
            (self.fill.q.val() <= self.accept_limit.val()) | self.failed_held.q.val();
        self.accept.next = self.s_axis_tvalid.val()
            & (self.fill.q.val() <= self.accept_limit.val())
            & !self.failed_held.q.val();
        self.buffer.d.next = self.kept.val();
        self.fill.d.next = self.fill.q.val() - self.consumed.val();
        if self.accept.val() {
            self.buffer.d.next = self.kept.val()
                | (bit_cast::<B, D>(self.in_clean.val())
                    << (bit_cast::<16, 8>(self.fill.q.val() - self.consumed.val()) << 3));
            self.fill.d.next = self.fill.q.val() - self.consumed.val() + self.in_bytes.val();
        }

        self.pipe_data.ce.next = self.ce.val();
        self.pipe_last.ce.next = self.ce.val();
        self.pipe_marker_bad.ce.next = self.ce.val();
        self.pipe_crc_field.ce.next = self.ce.val();
        self.pipe_valid.ce.next = self.ce.val();
        self.pipe_data.d.next = self.beat.val();
        self.pipe_last.d.next = self.crc_taken.val().into();
        self.pipe_marker_bad.d.next = self.marker_bad_now.val().into();
        self.pipe_crc_field.d.next = self.crc_word.val();
        self.pipe_valid.d.next = self.fire.val().into();
        if self.fire.val() {
            self.position.d.next = self.position.q.val() + self.need.val();
            self.in_fpdu.d.next = !self.crc_taken.val();
            self.remaining.d.next = self.content.val() - self.take.val();
            self.length_position.d.next = self.this_length_position.val();
            self.marker_bad.d.next = self.marker_bad_now.val();
        }

        // The verdict, where an FPDU's last beat meets its CRC. After a bad FPDU nothing
        // more leaves, and the MPA error code waits for the Terminate.
        self.crc_ok_now.next =
            !self.crc_en.val() | (self.crc_unit.m_crc.val() == self.pipe_crc_field.q.val());
        self.marker_ok_now.next = !self.pipe_marker_bad.q.val().any();
        if self.head_valid.val()
            & self.head_last.val()
            & self.m_ready.val()
            & !self.failed_held.q.val()
            & !(self.crc_ok_now.val() & self.marker_ok_now.val())
        {
            self.failed_held.d.next = true;
            self.code_held.d.next = 3.into();
            if !self.crc_ok_now.val() {
                self.code_held.d.next = 2.into();
            }
        }
        if self.reset.val() {
            self.buffer.d.next = 0.into();
            self.fill.d.next = 0.into();
            self.position.d.next = 0.into();
            self.in_fpdu.d.next = false;
            self.failed_held.d.next = false;
            self.code_held.d.next = 0.into();
        }

        self.m_data.next = self.pipe_data.q.val();
        self.m_last.next = self.head_last.val();
        self.m_valid.next = self.head_valid.val() & !self.failed_held.q.val();
        self.m_crc_ok.next = self.crc_ok_now.val();
        self.m_marker_ok.next = self.marker_ok_now.val();
        self.failed.next = self.failed_held.q.val();
        self.error_code.next = self.code_held.q.val();
    }
}
