//! RX stage 1: TCP payload octets in, FPDU content out — FPDUs found, markers removed,
//! CRCs and markers checked (RFC 5044 §4, §5.2, §8).
//!
//! Octets go into a ring of four beats. Input beats may hold any number of octets, so each
//! is rotated as it is taken to where it belongs in the ring, by the registered write
//! cursor, and merged in a cycle later. With only that one beat in flight, the ring can
//! run with two beats of content ahead of the reader: enough for a beat plus a marker plus
//! a CRC word, so markers and FPDU ends cost no input cycles. Reading is simpler: FPDUs and markers sit on 4-octet boundaries of
//! the stream, so the read pointer moves in whole words and the window it shows — one beat
//! plus one word — is a word rotation of the ring.
//!
//! An FPDU takes one cycle to parse: its ULPDU_Length (behind a leading marker if one falls
//! there) gives the number of content words. Then one beat of content leaves per cycle;
//! the extra word of the window covers a marker inside the beat (cut out) and the CRC word
//! after the last content word. All these decisions come from small registered counts.
//!
//! The pipelined CRC unit runs over the same window (markers included, CRC field
//! excluded) as the words leave, while the content beats travel through a [`Pipe`] of the
//! same length; an FPDU's last beat comes out of the pipe together with its CRC and with
//! the CRC field and marker check result it carried along, and gets its verdict there.
//!
//! Each packet of the input is one FPDU (the stream contract of `rnic_top`: whoever feeds
//! it cuts each connection's stream at the FPDU boundaries, and packets of different
//! connections follow each other). The aligner checks that contract as it reads: the end
//! of every packet is queued as its last beat is taken (rounded up to a word, so the next
//! packet starts on a word boundary as an FPDU must), and an FPDU that runs past its
//! packet's end, ends before it, or sits in a packet that is not whole words long is *out
//! of step*: its last beat is flagged, and what is left of its packet is skipped. Every packet thus gives exactly one FPDU's verdict,
//! and a bad one, whatever its ULPDU_Length said, never puts the next packet out of step:
//! a bad FPDU is passed on flagged and the next packet is read as the FPDU it is. Not
//! delivering anything more of the failed connection (§8, MPA-08, MPA-25) is the job of
//! the QP state behind: the failure goes there in order with the ULPDUs.
use rust_hdl::prelude::*;

use super::crc32c::CRC_LATENCY;
use super::rx_plan::{count_mask, count_values, RxPlan};
use super::Crc32c;
use crate::common::{Pipe, SmallFifo};

/// `D` = data bits (`8 K`), `K` = byte lanes, `R` = ring bits (`4 D`), `DW`/`KW` = CRC
/// window bits and lanes (`D + 32`, `K + 4`).
#[derive(LogicBlock)]
pub struct RxAlign<const D: usize, const K: usize, const R: usize, const DW: usize, const KW: usize> {
    pub clock: Signal<In, Clock>,
    pub reset: Signal<In, Bit>,
    /// Whether the FPDU parsed now (`fpdu_start`) has markers; with `fpdu_load` it starts
    /// `fpdu_to_marker` octets before its connection's next marker, instead of where the
    /// last FPDU left off. `fpdu_end` gives that distance after it (`end_to_marker`), to
    /// keep for the connection's next FPDU: several connections may share the stream.
    pub markers_en: Signal<In, Bit>,
    pub fpdu_load: Signal<In, Bit>,
    pub fpdu_to_marker: Signal<In, Bits<16>>,
    pub fpdu_end: Signal<Out, Bit>,
    pub end_to_marker: Signal<Out, Bits<16>>,
    /// Whether the FPDU parsed now (`fpdu_start`) has its CRC checked: sampled once per
    /// FPDU, so FPDUs of connections with and without CRCs may follow each other.
    pub crc_en: Signal<In, Bit>,
    pub fpdu_start: Signal<Out, Bit>,
    /// Holds the next FPDU's parse while its connection's settings are not ready yet.
    pub fpdu_wait: Signal<In, Bit>,
    /// TCP payload octets; `tkeep` contiguous from lane 0; `tlast` ends each FPDU's packet.
    pub s_axis_tdata: Signal<In, Bits<D>>,
    pub s_axis_tkeep: Signal<In, Bits<K>>,
    pub s_axis_tlast: Signal<In, Bit>,
    pub s_axis_tvalid: Signal<In, Bit>,
    pub s_axis_tready: Signal<Out, Bit>,
    /// FPDU content (ULPDU_Length, ULPDU, PAD), lane 0 first, whole beats but the last.
    pub m_data: Signal<Out, Bits<D>>,
    pub m_last: Signal<Out, Bit>,
    pub m_valid: Signal<Out, Bit>,
    pub m_ready: Signal<In, Bit>,
    /// The FPDU's verdict, with its last beat: CRC, markers, and whether its packet held
    /// exactly the FPDU (in step).
    pub m_crc_ok: Signal<Out, Bit>,
    pub m_marker_ok: Signal<Out, Bit>,
    pub m_step_ok: Signal<Out, Bit>,
    crc_unit: Crc32c<DW, KW, true>,
    /// Where the packets taken in and not yet read end: the stream position, and above it
    /// a bit for a packet whose length is not a whole number of words (out of step).
    ends: SmallFifo<17>,
    /// An FPDU ended before its packet did: the rest of the packet is being skipped.
    skipping: DFF<Bit>,
    // Input: the beat as taken, rotated to its place in the ring.
    put_valid: DFF<Bit>,
    put_data: DFF<Bits<R>>,
    put_mask: DFF<Bits<R>>,
    put_bytes: DFF<Bits<8>>,
    ring: DFF<Bits<R>>,
    /// Stream positions (octets, mod 2^16; the ring holds position p at lane p mod 4K):
    /// where the beat entering `put_*` goes, how far the ring is written, and the front,
    /// the next octet to leave (always on a word boundary).
    cursor: DFF<Bits<16>>,
    written: DFF<Bits<16>>,
    rp: DFF<Bits<16>>,
    /// Whole words between the front and `written`.
    avail: DFF<Bits<16>>,
    /// Octets taken in and not yet consumed (ring and `put_*`), for flow control: the
    /// distance from the front to the cursor, from the two registers (not a count of its
    /// own, which would wait for the beat's decision to consume).
    held: Signal<Local, Bits<16>>,
    /// Octets from the front to the next marker position (0..511).
    to_marker: DFF<Bits<16>>,
    /// `markers_en` as the current FPDU was parsed.
    fpdu_markers: DFF<Bit>,
    /// The FPDU being parsed: where its connection's next marker is, and whether one
    /// leads it. Only the parse uses them; the FPDU's beats run from the registers.
    parse_tm: Signal<Local, Bits<16>>,
    lead_marker: Signal<Local, Bit>,
    in_fpdu: DFF<Bit>,
    /// The next beat is the FPDU's first.
    first_beat: DFF<Bit>,
    /// Content words of the current FPDU still to leave (CRC excluded).
    remaining: DFF<Bits<16>>,
    /// The plan of the FPDU's next beat ([`RxPlan`]), made a cycle ahead: for the first
    /// beat from the parse, for the next from the beat that leaves.
    /// (The first beat's plan both ways, the leading marker's decision picking one.)
    first_plan: RxPlan<K>,
    first_plan_led: RxPlan<K>,
    next_plan: RxPlan<K>,
    start_words: Signal<Local, Bits<16>>,
    /// The length as it sits (behind a leading marker or not), and the first beat's
    /// content words clipped for the plan ([`RxPlan::remaining`]).
    lead_length: Signal<Local, Bits<16>>,
    start_near: Signal<Local, Bits<8>>,
    start_near_led: Signal<Local, Bits<8>>,
    short: Signal<Local, Bit>,
    short_led: Signal<Local, Bit>,
    plan_take: DFF<Bits<16>>,
    plan_marker_taken: DFF<Bit>,
    plan_marker_cut: DFF<Bit>,
    plan_crc_slot: DFF<Bits<16>>,
    plan_crc_taken: DFF<Bit>,
    plan_covered: DFF<Bits<16>>,
    plan_used: DFF<Bits<16>>,
    length_position: DFF<Bits<16>>,
    marker_bad: DFF<Bit>,
    pipe_data: Pipe<D, CRC_LATENCY>,
    pipe_last: Pipe<1, CRC_LATENCY>,
    pipe_marker_bad: Pipe<1, CRC_LATENCY>,
    pipe_step_bad: Pipe<1, CRC_LATENCY>,
    pipe_crc_field: Pipe<32, CRC_LATENCY>,
    pipe_crc_en: Pipe<1, CRC_LATENCY>,
    fpdu_crc_en: DFF<Bit>,
    pipe_valid: Pipe<1, CRC_LATENCY>,
    ce: Signal<Local, Bit>,
    head_valid: Signal<Local, Bit>,
    head_last: Signal<Local, Bit>,
    take_input: Signal<Local, Bit>,
    keep_bytes: Signal<Local, Bits<8>>,
    beat_end: Signal<Local, Bits<16>>,
    packet_end: Signal<Local, Bits<16>>,
    ragged: Signal<Local, Bit>,
    in_bytes: Signal<Local, Bits<16>>,
    pe_words: Signal<Local, Bits<16>>,
    used_low: Signal<Local, Bits<8>>,
    avail_low: Signal<Local, Bits<8>>,
    avail_high: Signal<Local, Bit>,
    pe_low: Signal<Local, Bits<8>>,
    pe_high: Signal<Local, Bit>,
    avail_ge_used: Signal<Local, Bit>,
    avail_gt_used: Signal<Local, Bit>,
    pe_lt_used: Signal<Local, Bit>,
    pe_gt_used: Signal<Local, Bit>,
    whole: Signal<Local, Bit>,
    start: Signal<Local, Bit>,
    trunc: Signal<Local, Bit>,
    end_known: Signal<Local, Bit>,
    ready_full: Signal<Local, Bit>,
    ready_trunc: Signal<Local, Bit>,
    fire_full: Signal<Local, Bit>,
    fire_trunc: Signal<Local, Bit>,
    final_beat: Signal<Local, Bit>,
    extra: Signal<Local, Bit>,
    step_ok_now: Signal<Local, Bit>,
    window: Signal<Local, Bits<R>>,
    marker_slot: Signal<Local, Bits<16>>,
    marker_window: Signal<Local, Bit>,
    leading: Signal<Local, Bit>,
    length: Signal<Local, Bits<16>>,
    length_led: Signal<Local, Bits<16>>,
    parse: Signal<Local, Bit>,
    take: Signal<Local, Bits<16>>,
    marker_taken: Signal<Local, Bit>,
    crc_slot: Signal<Local, Bits<16>>,
    crc_taken: Signal<Local, Bit>,
    covered: Signal<Local, Bits<16>>,
    used: Signal<Local, Bits<16>>,
    fire: Signal<Local, Bit>,
    beat: Signal<Local, Bits<D>>,
    front: Signal<Local, Bits<D>>,
    after: Signal<Local, Bits<D>>,
    below_marker: Signal<Local, Bits<D>>,
    marker_shift: Signal<Local, Bits<16>>,
    crc_word: Signal<Local, Bits<32>>,
    marker_word: Signal<Local, Bits<32>>,
    fpduptr: Signal<Local, Bits<16>>,
    expected_fpduptr: Signal<Local, Bits<16>>,
    marker_bad_now: Signal<Local, Bit>,
    crc_ok_now: Signal<Local, Bit>,
    marker_ok_now: Signal<Local, Bit>,
    arrived: Signal<Local, Bits<16>>,
    put_shift: Signal<Local, Bits<16>>,
    in_mask: Signal<Local, Bits<D>>,
    front_word: Signal<Local, Bits<16>>,
    ring_bits: Constant<Bits<16>>,
    put_back: Signal<Local, Bits<16>>,
    written_next: Signal<Local, Bits<16>>,
    written_past: Signal<Local, Bits<16>>,
    /// The octets past the last whole word written, and the whole words they make; the
    /// words the front will have ahead of it, kept, after a full beat, after a move.
    new_octets: Signal<Local, Bits<8>>,
    new_words: Signal<Local, Bits<16>>,
    avail_keep: Signal<Local, Bits<16>>,
    avail_full: Signal<Local, Bits<16>>,
    avail_other: Signal<Local, Bits<16>>,
    /// The front's next place after a full beat, and after a truncated beat or a skip;
    /// the marker distance from each; whether the front moves by the second.
    rp_full: Signal<Local, Bits<16>>,
    rp_other: Signal<Local, Bits<16>>,
    tm_full: Signal<Local, Bits<16>>,
    tm_other: Signal<Local, Bits<16>>,
    moved: Signal<Local, Bit>,
    ones: Constant<Bits<D>>,
    lane_ones: Constant<Bits<K>>,
    window_ones: Constant<Bits<KW>>,
    byte_ones: Constant<Bits<D>>,
    ring_lanes: Constant<Bits<16>>,
    ring_lanes_mask: Constant<Bits<16>>,
    words_per_beat: Constant<Bits<16>>,
    /// The window's word slots (`K`, a power of two) less one.
    slot_mask: Constant<Bits<16>>,
    /// The plan's clip (a beat and a word of content words), the lengths below which the
    /// content is a beat or less, and the content words beyond which a beat leaves the
    /// clip or more.
    near_cap: Constant<Bits<16>>,
    lane_mask: Constant<Bits<16>>,
    two_beats: Constant<Bits<16>>,
    hold_limit: Constant<Bits<16>>,
    word_mask: Constant<Bits<16>>,
    /// All ones over the bits that number `0..=K / 4 + 2`, the words a beat may use.
    clip_mask: Constant<Bits<16>>,
}

impl<const D: usize, const K: usize, const R: usize, const DW: usize, const KW: usize> Default
    for RxAlign<D, K, R, DW, KW>
{
    fn default() -> Self {
        const {
            assert!(D == 8 * K && K.is_power_of_two() && K >= 8 && K <= 64 && R == 4 * D && DW == D + 32 && KW == K + 4)
        };
        let k = K as u64;
        Self {
            clock: Default::default(),
            reset: Default::default(),
            markers_en: Default::default(),
            fpdu_load: Default::default(),
            fpdu_to_marker: Default::default(),
            fpdu_end: Default::default(),
            end_to_marker: Default::default(),
            fpdu_markers: Default::default(),
            parse_tm: Default::default(),
            lead_marker: Default::default(),
            crc_en: Default::default(),
            s_axis_tdata: Default::default(),
            s_axis_tkeep: Default::default(),
            s_axis_tlast: Default::default(),
            s_axis_tvalid: Default::default(),
            s_axis_tready: Default::default(),
            m_data: Default::default(),
            m_last: Default::default(),
            m_valid: Default::default(),
            m_ready: Default::default(),
            m_crc_ok: Default::default(),
            m_marker_ok: Default::default(),
            m_step_ok: Default::default(),
            crc_unit: Default::default(),
            ends: Default::default(),
            skipping: Default::default(),
            put_valid: Default::default(),
            put_data: Default::default(),
            put_mask: Default::default(),
            put_bytes: Default::default(),
            ring: Default::default(),
            cursor: Default::default(),
            written: Default::default(),
            rp: Default::default(),
            avail: Default::default(),
            held: Default::default(),
            to_marker: Default::default(),
            in_fpdu: Default::default(),
            first_beat: Default::default(),
            remaining: Default::default(),
            first_plan: Default::default(),
            first_plan_led: Default::default(),
            next_plan: Default::default(),
            start_words: Default::default(),
            lead_length: Default::default(),
            start_near: Default::default(),
            start_near_led: Default::default(),
            short: Default::default(),
            short_led: Default::default(),
            plan_take: Default::default(),
            plan_marker_taken: Default::default(),
            plan_marker_cut: Default::default(),
            plan_crc_slot: Default::default(),
            plan_crc_taken: Default::default(),
            plan_covered: Default::default(),
            plan_used: Default::default(),
            length_position: Default::default(),
            marker_bad: Default::default(),
            pipe_data: Default::default(),
            pipe_last: Default::default(),
            pipe_marker_bad: Default::default(),
            pipe_step_bad: Default::default(),
            pipe_crc_field: Default::default(),
            pipe_crc_en: Default::default(),
            fpdu_crc_en: Default::default(),
            fpdu_start: Default::default(),
            fpdu_wait: Default::default(),
            pipe_valid: Default::default(),
            ce: Default::default(),
            head_valid: Default::default(),
            head_last: Default::default(),
            take_input: Default::default(),
            keep_bytes: Default::default(),
            beat_end: Default::default(),
            packet_end: Default::default(),
            ragged: Default::default(),
            in_bytes: Default::default(),
            pe_words: Default::default(),
            used_low: Default::default(),
            avail_low: Default::default(),
            avail_high: Default::default(),
            pe_low: Default::default(),
            pe_high: Default::default(),
            avail_ge_used: Default::default(),
            avail_gt_used: Default::default(),
            pe_lt_used: Default::default(),
            pe_gt_used: Default::default(),
            whole: Default::default(),
            start: Default::default(),
            trunc: Default::default(),
            end_known: Default::default(),
            ready_full: Default::default(),
            ready_trunc: Default::default(),
            fire_full: Default::default(),
            fire_trunc: Default::default(),
            final_beat: Default::default(),
            extra: Default::default(),
            step_ok_now: Default::default(),
            window: Default::default(),
            marker_slot: Default::default(),
            marker_window: Default::default(),
            leading: Default::default(),
            length: Default::default(),
            length_led: Default::default(),
            parse: Default::default(),
            take: Default::default(),
            marker_taken: Default::default(),
            crc_slot: Default::default(),
            crc_taken: Default::default(),
            covered: Default::default(),
            used: Default::default(),
            fire: Default::default(),
            beat: Default::default(),
            front: Default::default(),
            after: Default::default(),
            below_marker: Default::default(),
            marker_shift: Default::default(),
            crc_word: Default::default(),
            marker_word: Default::default(),
            fpduptr: Default::default(),
            expected_fpduptr: Default::default(),
            marker_bad_now: Default::default(),
            crc_ok_now: Default::default(),
            marker_ok_now: Default::default(),
            arrived: Default::default(),
            put_shift: Default::default(),
            in_mask: Default::default(),
            front_word: Default::default(),
            ring_bits: Constant::new((R as u64).into()),
            put_back: Default::default(),
            written_next: Default::default(),
            written_past: Default::default(),
            new_octets: Default::default(),
            new_words: Default::default(),
            avail_keep: Default::default(),
            avail_full: Default::default(),
            avail_other: Default::default(),
            rp_full: Default::default(),
            rp_other: Default::default(),
            tm_full: Default::default(),
            tm_other: Default::default(),
            moved: Default::default(),
            ones: Constant::new(!Bits::<D>::default()),
            lane_ones: Constant::new(!Bits::<K>::default()),
            window_ones: Constant::new(!Bits::<KW>::default()),
            byte_ones: Constant::new(0xFF_u64.into()),
            ring_lanes: Constant::new((4 * k).into()),
            ring_lanes_mask: Constant::new((4 * k - 1).into()),
            words_per_beat: Constant::new((k / 4).into()),
            slot_mask: Constant::new((k - 1).into()),
            near_cap: Constant::new((k / 4 + 1).into()),
            lane_mask: Constant::new((k - 1).into()),
            two_beats: Constant::new((k / 2).into()),
            // Take a beat while the ring has room for it on top of everything held.
            hold_limit: Constant::new((3 * k).into()),
            word_mask: Constant::new(0xFFFC_u64.into()),
            clip_mask: Constant::new(count_mask(K).into()),
        }
    }
}

impl<const D: usize, const K: usize, const R: usize, const DW: usize, const KW: usize> Logic
    for RxAlign<D, K, R, DW, KW>
{
    #[hdl_gen]
    fn update(&mut self) {
        dff_setup!(
            self,
            clock,
            put_valid,
            put_data,
            put_mask,
            put_bytes,
            ring,
            cursor,
            written,
            rp,
            avail,
            to_marker,
            fpdu_markers,
            in_fpdu,
            first_beat,
            remaining,
            length_position,
            marker_bad,
            skipping,
            plan_take,
            plan_marker_taken,
            plan_marker_cut,
            plan_crc_slot,
            plan_crc_taken,
            plan_covered,
            plan_used
        );
        self.crc_unit.clock.next = self.clock.val();
        self.crc_unit.reset.next = self.reset.val();
        self.ends.clock.next = self.clock.val();
        self.ends.reset.next = self.reset.val();
        self.pipe_data.clock.next = self.clock.val();
        self.pipe_data.reset.next = self.reset.val();
        self.pipe_last.clock.next = self.clock.val();
        self.pipe_last.reset.next = self.reset.val();
        self.pipe_marker_bad.clock.next = self.clock.val();
        self.pipe_marker_bad.reset.next = self.reset.val();
        self.pipe_step_bad.clock.next = self.clock.val();
        self.pipe_step_bad.reset.next = self.reset.val();
        self.pipe_crc_field.clock.next = self.clock.val();
        self.pipe_crc_field.reset.next = self.reset.val();
        self.pipe_crc_en.clock.next = self.clock.val();
        self.pipe_crc_en.reset.next = self.reset.val();
        self.fpdu_crc_en.clock.next = self.clock.val();
        self.fpdu_crc_en.d.next = self.fpdu_crc_en.q.val();
        self.pipe_valid.clock.next = self.clock.val();
        self.pipe_valid.reset.next = self.reset.val();

        // Input: take a beat while there is room (and room to queue its packet's end),
        // count its octets and rotate it to its place in the ring; merge the one before it
        // into the ring. A packet's last beat also brings the stream up to the next word
        // boundary, where the next packet starts.
        self.held.next = self.cursor.q.val() - self.rp.q.val();
        self.s_axis_tready.next = (self.held.val() <= self.hold_limit.val()) & self.ends.s_ready.val();
        self.take_input.next =
            self.s_axis_tvalid.val() & (self.held.val() <= self.hold_limit.val()) & self.ends.s_ready.val();
        self.keep_bytes.next = 0.into();
        for i in 0..K {
            if self.s_axis_tkeep.val().get_bit(i) {
                self.keep_bytes.next = (i + 1).to_bits();
            }
        }
        self.beat_end.next = self.cursor.q.val() + bit_cast::<16, 8>(self.keep_bytes.val());
        self.packet_end.next = (self.beat_end.val() + 3) & self.word_mask.val();
        self.ragged.next = self.beat_end.val().get_bits::<2>(0).any();
        self.in_bytes.next = bit_cast::<16, 8>(self.keep_bytes.val());
        if self.s_axis_tlast.val() {
            self.in_bytes.next = self.packet_end.val() - self.cursor.q.val();
        }
        self.ends.s_valid.next = self.take_input.val() & self.s_axis_tlast.val();
        self.ends.s_data.next =
            bit_cast::<17, 16>(self.packet_end.val()) | (bit_cast::<17, 1>(self.ragged.val().into()) << 16);
        // A rotation is two shifts, each by a count of lanes (or words) the ring has: the
        // back shift's count is masked too (0 for no rotation, where both shifts give the
        // ring), so neither is a shifter by a 16-bit amount.
        self.put_shift.next = (self.cursor.q.val() & self.ring_lanes_mask.val()) << 3;
        self.put_back.next = ((self.ring_lanes.val() - self.cursor.q.val()) & self.ring_lanes_mask.val()) << 3;
        self.put_valid.d.next = self.take_input.val();
        self.put_bytes.d.next = 0.into();
        if self.take_input.val() {
            self.put_bytes.d.next = self.in_bytes.val().get_bits::<8>(0);
            self.cursor.d.next = self.cursor.q.val() + self.in_bytes.val();
        }
        self.put_data.d.next = (bit_cast::<R, D>(self.s_axis_tdata.val()) << self.put_shift.val())
            | (bit_cast::<R, D>(self.s_axis_tdata.val()) >> self.put_back.val());
        // (`tkeep` is contiguous from lane 0: each lane's octet is kept as its bit says.)
        self.in_mask.next = 0.into();
        for i in 0..K {
            if self.s_axis_tkeep.val().get_bit(i) {
                self.in_mask.next = self.in_mask.val() | (self.byte_ones.val() << (8 * i).to_bits::<16>());
            }
        }
        self.put_mask.d.next = (bit_cast::<R, D>(self.in_mask.val()) << self.put_shift.val())
            | (bit_cast::<R, D>(self.in_mask.val()) >> self.put_back.val());
        if self.put_valid.q.val() {
            self.ring.d.next =
                (self.ring.q.val() & !self.put_mask.q.val()) | (self.put_data.q.val() & self.put_mask.q.val());
        }

        // The window: one beat and one word from the front, a word rotation of the ring.
        // (The front is on a word boundary: the rotation is by whole words, the front's
        // word number in the ring.)
        // (A select among the ring's K word rotations, each fixed wiring, not shifts by a
        // computed amount.)
        self.front_word.next = (self.rp.q.val() >> 2) & self.slot_mask.val();
        self.window.next = 0.into();
        for i in 0..K {
            if self.front_word.val() == i.to_bits::<16>() {
                self.window.next = self.window.val()
                    | (self.ring.q.val() >> (32 * i).to_bits::<16>())
                    | (self.ring.q.val() << (self.ring_bits.val() - (32 * i).to_bits::<16>()));
            }
        }

        // The packet being read: the words left in it, once its last beat is in, and
        // whether they have all arrived.
        // (Whole: `written` has reached the end; both are within a ring of the front.)
        self.pe_words.next = (self.ends.m_data.val().get_bits::<16>(0) - self.rp.q.val()) >> 2;
        self.written_past.next = self.written.q.val() - self.ends.m_data.val().get_bits::<16>(0);
        self.whole.next = self.ends.m_valid.val() & !self.written_past.val().get_bit(15);

        // Content leaves through the pipe, which advances whenever its head can go.
        self.head_valid.next = self.pipe_valid.q.val().any();
        self.head_last.next = self.pipe_last.q.val().any();
        self.ce.next = !self.head_valid.val() | self.m_ready.val();

        // Between FPDUs the next one (the next packet) is parsed; its connection's marker
        // setting and distance apply from then on.
        self.parse.next = !self.in_fpdu.q.val() & !self.skipping.q.val();
        // The settings in (`markers_en`, `fpdu_to_marker`) reach only the parse: the
        // length, where it sits and the registers the FPDU's beats then run from
        // (`fpdu_markers`, `to_marker`). Nothing is consumed while parsing.
        self.parse_tm.next = self.to_marker.q.val();
        if self.fpdu_load.val() {
            self.parse_tm.next = self.fpdu_to_marker.val();
        }
        self.lead_marker.next = self.markers_en.val() & (self.parse_tm.val() == 0);

        // Where the next marker is, as a slot of the window. It is used only when it lies
        // within a beat and a word, so only the bits that number the window's words select
        // it (a shift by the whole count would be a 16-bit shifter).
        self.marker_slot.next = self.to_marker.q.val() >> 2;
        self.marker_shift.next = (self.marker_slot.val() & self.slot_mask.val()) << 5;
        self.marker_window.next = self.fpdu_markers.q.val() & (self.marker_slot.val() <= self.words_per_beat.val());
        self.leading.next = self.first_beat.q.val() & self.marker_window.val() & (self.marker_slot.val() == 0);

        // Parsing a new FPDU: ULPDU_Length, big-endian, behind a leading marker if one is
        // due. It takes a cycle; nothing leaves. A packet too short to hold the length is
        // parsed all the same, and found out of step at its first beat.
        // Both places are worked out, the marker's decision comes last: ceil((2 + length)
        // / 4) words, excluding the CRC.
        self.length.next =
            (bit_cast::<16, R>(self.window.val() & 0xFF) << 8) | bit_cast::<16, R>((self.window.val() >> 8) & 0xFF);
        self.length_led.next = (bit_cast::<16, R>((self.window.val() >> 32) & 0xFF) << 8)
            | bit_cast::<16, R>((self.window.val() >> 40) & 0xFF);
        self.start.next = self.parse.val() & !self.fpdu_wait.val() & ((self.avail.q.val() >= 2) | self.whole.val());
        self.lead_length.next = self.length.val();
        if self.lead_marker.val() {
            self.lead_length.next = self.length_led.val();
        }
        self.start_words.next = bit_cast::<16, 18>((bit_cast::<18, 16>(self.lead_length.val()) + 5) >> 2);
        // The plan needs only up to a beat and a word of them (the clip): from compares of
        // the length with constants beside a short sum of its low bits, not from the whole
        // sum. Both lengths are clipped, and both plans made, before the marker decides.
        self.short.next = ((self.length.val() & !self.lane_mask.val()) == 0)
            & ((self.length.val() & self.lane_mask.val()) != self.lane_mask.val());
        self.start_near.next = bit_cast::<8, 16>(self.near_cap.val());
        if self.short.val() {
            self.start_near.next = (bit_cast::<8, 16>(self.length.val() & self.lane_mask.val()) + 5) >> 2;
        }
        self.short_led.next = ((self.length_led.val() & !self.lane_mask.val()) == 0)
            & ((self.length_led.val() & self.lane_mask.val()) != self.lane_mask.val());
        self.start_near_led.next = bit_cast::<8, 16>(self.near_cap.val());
        if self.short_led.val() {
            self.start_near_led.next = (bit_cast::<8, 16>(self.length_led.val() & self.lane_mask.val()) + 5) >> 2;
        }

        // A beat, as planned a cycle ahead ([`RxPlan`]): up to a beat of content, the
        // marker if it lies among it (or right before the CRC), and the CRC word if the
        // content ends and it fits the window. The first beat's plan is made as the FPDU
        // is parsed; each next one from the words and marker distance left after a beat.
        self.first_plan.remaining.next = self.start_near.val();
        self.first_plan.to_marker.next = self.parse_tm.val() & 0x1FF;
        self.first_plan.markers.next = self.markers_en.val();
        // (Led by a marker: it is at the front.)
        self.first_plan_led.remaining.next = self.start_near_led.val();
        self.first_plan_led.to_marker.next = 0.into();
        self.first_plan_led.markers.next = true;
        // (What the beat leaves, clipped: nothing if it takes all, else a beat less.)
        self.next_plan.remaining.next = 0.into();
        if self.remaining.q.val() > self.words_per_beat.val() {
            self.next_plan.remaining.next =
                bit_cast::<8, 16>(self.remaining.q.val()) - bit_cast::<8, 16>(self.words_per_beat.val());
        }
        if self.remaining.q.val() > self.two_beats.val() {
            self.next_plan.remaining.next = bit_cast::<8, 16>(self.near_cap.val());
        }
        self.next_plan.markers.next = self.fpdu_markers.q.val();
        self.take.next = self.plan_take.q.val();
        self.marker_taken.next = self.plan_marker_taken.q.val();
        self.crc_slot.next = self.plan_crc_slot.q.val();
        self.crc_taken.next = self.plan_crc_taken.q.val();
        self.covered.next = self.plan_covered.q.val();
        self.used.next = self.plan_used.q.val();
        // Out of step: the packet ends before the words of this beat (truncated: the
        // beat takes what is left of the packet and ends the FPDU), or the FPDU ends before
        // its packet does (the rest of the packet is skipped). The last beat waits until
        // it is known which: the packet's end has come in, or more of it has.
        // (A beat uses at most a beat and two words, so the counts are compared with it
        // as "beyond the low bits" or a compare of the low bits with each value it may
        // have: logic the decisions below merge into, not carry chains in front of them.)
        self.used_low.next = bit_cast::<8, 16>(self.used.val() & self.clip_mask.val());
        self.avail_low.next = bit_cast::<8, 16>(self.avail.q.val() & self.clip_mask.val());
        self.avail_high.next = (self.avail.q.val() & !self.clip_mask.val()).any();
        self.pe_low.next = bit_cast::<8, 16>(self.pe_words.val() & self.clip_mask.val());
        self.pe_high.next = (self.pe_words.val() & !self.clip_mask.val()).any();
        // (A beat of no words is covered by any count and exceeds none: the loops of `>=`
        // and `<` start at one, so that no compare against zero is constant.)
        self.avail_ge_used.next = self.used_low.val() == 0;
        self.avail_gt_used.next = false;
        self.pe_lt_used.next = false;
        self.pe_gt_used.next = false;
        for u in 0..count_values(K) {
            self.avail_gt_used.next = self.avail_gt_used.val()
                | ((self.used_low.val() == u.to_bits::<8>()) & (self.avail_low.val() > u.to_bits::<8>()));
            self.pe_gt_used.next = self.pe_gt_used.val()
                | ((self.used_low.val() == u.to_bits::<8>()) & (self.pe_low.val() > u.to_bits::<8>()));
        }
        for u in 1..count_values(K) {
            self.avail_ge_used.next = self.avail_ge_used.val()
                | ((self.used_low.val() == u.to_bits::<8>()) & (self.avail_low.val() >= u.to_bits::<8>()));
            self.pe_lt_used.next = self.pe_lt_used.val()
                | ((self.used_low.val() == u.to_bits::<8>()) & (self.pe_low.val() < u.to_bits::<8>()));
        }
        self.avail_ge_used.next = self.avail_ge_used.val() | self.avail_high.val();
        self.avail_gt_used.next = self.avail_gt_used.val() | self.avail_high.val();
        self.pe_lt_used.next = self.pe_lt_used.val() & !self.pe_high.val();
        self.pe_gt_used.next = self.pe_gt_used.val() | self.pe_high.val();
        self.trunc.next = self.ends.m_valid.val() & self.pe_lt_used.val();
        self.end_known.next = self.ends.m_valid.val() | self.avail_gt_used.val();
        // (Whether each kind of beat could leave, from registers; the pipe's advance,
        // from outside, comes last.)
        self.ready_full.next = self.in_fpdu.q.val()
            & !self.trunc.val()
            & self.avail_ge_used.val()
            & (!self.crc_taken.val() | self.end_known.val());
        self.ready_trunc.next = self.in_fpdu.q.val() & self.trunc.val() & self.whole.val();
        self.fire_full.next = self.ce.val() & self.ready_full.val();
        self.fire_trunc.next = self.ce.val() & self.ready_trunc.val();
        self.fire.next = self.fire_full.val() | self.fire_trunc.val();
        self.final_beat.next = (self.fire_full.val() & self.crc_taken.val()) | self.fire_trunc.val();
        self.extra.next = self.fire_full.val()
            & self.crc_taken.val()
            & ((self.ends.m_valid.val() & self.pe_gt_used.val())
                | (!self.ends.m_valid.val() & self.avail_gt_used.val()));

        // Content with the marker cut out: words after it move down one slot.
        self.front.next = bit_cast::<D, R>(self.window.val());
        self.after.next = bit_cast::<D, R>(self.window.val() >> 32);
        self.below_marker.next = !(self.ones.val() << self.marker_shift.val());
        self.beat.next = self.front.val();
        if self.plan_marker_cut.q.val() {
            self.beat.next =
                (self.front.val() & self.below_marker.val()) | (self.after.val() & !self.below_marker.val());
        }
        // (The CRC and marker words, each one word of the ring: the front's word number plus
        // the slot picks it.)
        self.crc_word.next = bit_cast::<32, R>(
            self.ring.q.val() >> ((((self.rp.q.val() >> 2) + self.crc_slot.val()) & self.slot_mask.val()) << 5),
        );

        // A marker must point back at this FPDU's ULPDU_Length (0 when it leads the FPDU);
        // its reserved half and the two low FPDUPTR bits are ignored (§4.2, MPA-10).
        self.marker_word.next = bit_cast::<32, R>(
            self.ring.q.val() >> ((((self.rp.q.val() >> 2) + self.marker_slot.val()) & self.slot_mask.val()) << 5),
        );
        self.fpduptr.next = bit_cast::<16, 32>(
            (((self.marker_word.val() >> 16) & 0xFF) << 8) | ((self.marker_word.val() >> 24) & 0xFC),
        );
        self.expected_fpduptr.next = self.rp.q.val() + (self.marker_slot.val() << 2) - self.length_position.q.val();
        if self.leading.val() {
            self.expected_fpduptr.next = 0.into();
        }
        self.marker_bad_now.next = self.marker_bad.q.val() & !self.first_beat.q.val();
        if self.marker_taken.val() & (self.fpduptr.val() != self.expected_fpduptr.val()) {
            self.marker_bad_now.next = true;
        }

        // The CRC covers the octets that leave, markers included, up to the CRC field.
        self.crc_unit.ce.next = self.ce.val();
        self.crc_unit.s_valid.next = self.fire.val();
        self.crc_unit.s_first.next = self.first_beat.q.val();
        self.crc_unit.s_last.next = self.final_beat.val();
        self.crc_unit.s_data.next = bit_cast::<DW, R>(self.window.val());
        self.crc_unit.s_keep.next = !(self.window_ones.val() << (self.covered.val() << 2));

        self.pipe_data.ce.next = self.ce.val();
        self.pipe_last.ce.next = self.ce.val();
        self.pipe_marker_bad.ce.next = self.ce.val();
        self.pipe_step_bad.ce.next = self.ce.val();
        self.pipe_crc_field.ce.next = self.ce.val();
        self.pipe_crc_en.ce.next = self.ce.val();
        self.pipe_valid.ce.next = self.ce.val();
        self.pipe_data.d.next = self.beat.val();
        self.pipe_last.d.next = self.final_beat.val().into();
        self.pipe_marker_bad.d.next = self.marker_bad_now.val().into();
        self.pipe_step_bad.d.next = (self.fire_trunc.val()
            | self.extra.val()
            | (self.final_beat.val() & self.ends.m_valid.val() & self.ends.m_data.val().get_bit(16)))
        .into();
        self.pipe_crc_field.d.next = self.crc_word.val();
        self.pipe_crc_en.d.next = self.fpdu_crc_en.q.val().into();
        self.pipe_valid.d.next = self.fire.val().into();

        // Bookkeeping: what arrived, where the front goes; the packet's end is passed. The
        // front's next place, and the word count and marker distance that follow from it,
        // are worked out for each case from registers, beside the decision that picks one
        // (the cases exclude each other): a full beat moves it by the words it used; a
        // truncated beat, or a skip that reaches the packet's end, to that end; a skip
        // short of it, to the last whole word in.
        self.ends.m_ready.next =
            (self.final_beat.val() & !self.extra.val()) | (self.skipping.q.val() & self.whole.val());
        self.arrived.next = 0.into();
        if self.put_valid.q.val() {
            self.arrived.next = bit_cast::<16, 8>(self.put_bytes.q.val());
        }
        self.written_next.next = self.written.q.val() + self.arrived.val();
        self.written.d.next = self.written_next.val();
        // (`avail` is the whole words from the front to `written`, the front on a word
        // boundary: the next count is it plus the words the new octets complete, less
        // what the front moves by; each case's count is made beside the decision.)
        self.new_octets.next = bit_cast::<8, 16>(self.written.q.val() & 3) + bit_cast::<8, 16>(self.arrived.val());
        self.new_words.next = bit_cast::<16, 8>(self.new_octets.val() >> 2);
        self.avail_keep.next = self.avail.q.val() + self.new_words.val();
        self.avail_full.next = self.avail.q.val() + (self.new_words.val() - self.used.val());
        self.avail_other.next = self.new_words.val();
        if self.whole.val() {
            self.avail_other.next = (self.written_next.val() - self.ends.m_data.val().get_bits::<16>(0)) >> 2;
        }
        self.rp_full.next = self.rp.q.val() + (self.used.val() << 2);
        self.rp_other.next = self.written.q.val() & self.word_mask.val();
        if self.whole.val() {
            self.rp_other.next = self.ends.m_data.val().get_bits::<16>(0);
        }
        self.tm_full.next = (self.to_marker.q.val() - (self.used.val() << 2)) & 0x1FF;
        // (The next beat's plan starts from where a full beat leaves the marker.)
        self.next_plan.to_marker.next = self.tm_full.val();
        self.tm_other.next = (self.to_marker.q.val() + self.rp.q.val() - self.rp_other.val()) & 0x1FF;
        self.moved.next = self.fire_trunc.val() | self.skipping.q.val();
        self.rp.d.next = self.rp.q.val();
        self.avail.d.next = self.avail_keep.val();
        self.to_marker.d.next = self.to_marker.q.val();
        if self.moved.val() {
            self.rp.d.next = self.rp_other.val();
            self.avail.d.next = self.avail_other.val();
            self.to_marker.d.next = self.tm_other.val();
        }
        if self.fire_full.val() {
            self.rp.d.next = self.rp_full.val();
            self.avail.d.next = self.avail_full.val();
            self.to_marker.d.next = self.tm_full.val();
        }
        if self.parse.val() {
            self.to_marker.d.next = self.parse_tm.val() & 0x1FF;
        }
        // (An FPDU's last beat is truncated or full.)
        self.end_to_marker.next = self.tm_full.val();
        if self.trunc.val() {
            self.end_to_marker.next = self.tm_other.val();
        }
        self.fpdu_end.next = self.final_beat.val();
        self.fpdu_start.next = self.start.val();
        if self.start.val() {
            self.fpdu_crc_en.d.next = self.crc_en.val();
            self.remaining.d.next = self.start_words.val();
            self.plan_take.d.next = self.first_plan.take.val();
            self.plan_marker_taken.d.next = self.first_plan.marker_taken.val();
            self.plan_marker_cut.d.next = self.first_plan.marker_cut.val();
            self.plan_crc_slot.d.next = self.first_plan.crc_slot.val();
            self.plan_crc_taken.d.next = self.first_plan.crc_taken.val();
            self.plan_covered.d.next = self.first_plan.covered.val();
            self.plan_used.d.next = self.first_plan.used.val();
            if self.lead_marker.val() {
                self.plan_take.d.next = self.first_plan_led.take.val();
                self.plan_marker_taken.d.next = self.first_plan_led.marker_taken.val();
                self.plan_marker_cut.d.next = self.first_plan_led.marker_cut.val();
                self.plan_crc_slot.d.next = self.first_plan_led.crc_slot.val();
                self.plan_crc_taken.d.next = self.first_plan_led.crc_taken.val();
                self.plan_covered.d.next = self.first_plan_led.covered.val();
                self.plan_used.d.next = self.first_plan_led.used.val();
            }
            self.in_fpdu.d.next = true;
            self.first_beat.d.next = true;
            self.fpdu_markers.d.next = self.markers_en.val();
            self.length_position.d.next = self.rp.q.val();
            if self.lead_marker.val() {
                self.length_position.d.next = self.rp.q.val() + 4;
            }
        }
        if self.fire.val() {
            self.in_fpdu.d.next = !self.final_beat.val();
            self.first_beat.d.next = false;
            self.remaining.d.next = self.remaining.q.val() - self.take.val();
            self.plan_take.d.next = self.next_plan.take.val();
            self.plan_marker_taken.d.next = self.next_plan.marker_taken.val();
            self.plan_marker_cut.d.next = self.next_plan.marker_cut.val();
            self.plan_crc_slot.d.next = self.next_plan.crc_slot.val();
            self.plan_crc_taken.d.next = self.next_plan.crc_taken.val();
            self.plan_covered.d.next = self.next_plan.covered.val();
            self.plan_used.d.next = self.next_plan.used.val();
            self.marker_bad.d.next = self.marker_bad_now.val();
        }
        if self.extra.val() {
            self.skipping.d.next = true;
        }
        if self.skipping.q.val() & self.whole.val() {
            self.skipping.d.next = false;
        }

        // The verdict, where an FPDU's last beat meets its CRC.
        self.crc_ok_now.next =
            !self.pipe_crc_en.q.val().any() | (self.crc_unit.m_crc.val() == self.pipe_crc_field.q.val());
        self.marker_ok_now.next = !self.pipe_marker_bad.q.val().any();
        self.step_ok_now.next = !self.pipe_step_bad.q.val().any();
        if self.reset.val() {
            self.put_valid.d.next = false;
            self.put_bytes.d.next = 0.into();
            self.cursor.d.next = 0.into();
            self.written.d.next = 0.into();
            self.rp.d.next = 0.into();
            self.avail.d.next = 0.into();
            self.to_marker.d.next = 0.into();
            self.in_fpdu.d.next = false;
            self.skipping.d.next = false;
        }

        self.m_data.next = self.pipe_data.q.val();
        self.m_last.next = self.head_last.val();
        self.m_valid.next = self.head_valid.val();
        self.m_crc_ok.next = self.crc_ok_now.val();
        self.m_marker_ok.next = self.marker_ok_now.val();
        self.m_step_ok.next = self.step_ok_now.val();
    }
}
