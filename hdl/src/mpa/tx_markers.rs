//! TX stage 2: FPDU content words in, FPDU beats out, with markers inserted and a slot
//! left for the CRC (RFC 5044 §4.2, §4.3).
//!
//! The stream position of every output word is known, so a word is a marker exactly when
//! its position is a multiple of 512 (counted from the first octet of Full Operation). At
//! most one marker falls in a beat. Content words wait in a buffer of three beats; each
//! output beat takes the words it needs from the front of the buffer, one fewer when a
//! marker takes a slot, so the buffer absorbs the shift a marker causes and the input
//! rarely waits.
//!
//! Several connections may share the block, FPDU by FPDU: `markers_en` is taken at each
//! FPDU's start (`fpdu_start`) and holds for that FPDU, and with `fpdu_load` the FPDU
//! starts at stream position `fpdu_position` (its connection's) instead of where the last
//! one ended; `fpdu_end` gives the position after it (`end_position`) to keep for the next.
//! `fpdu_wait` holds an FPDU's first beat until they are in.
//!
//! Each FPDU leaves as its own packet starting in lane 0: any markers that fall inside it,
//! then the CRC slot after the content. A marker that falls exactly between two FPDUs is
//! the first word of the following one (FPDUPTR 0); one that falls right after the PAD is
//! covered by this FPDU's CRC (§4.3).
use rust_hdl::prelude::*;

/// `D` = data bits (`8 K`), `K` = byte lanes, `B` = buffer bits (`3 D`).
#[derive(LogicBlock)]
pub struct TxMarkers<const D: usize, const K: usize, const B: usize> {
    pub clock: Signal<In, Clock>,
    pub reset: Signal<In, Bit>,
    pub markers_en: Signal<In, Bit>,
    pub fpdu_load: Signal<In, Bit>,
    pub fpdu_position: Signal<In, Bits<16>>,
    pub fpdu_wait: Signal<In, Bit>,
    pub fpdu_start: Signal<Out, Bit>,
    pub fpdu_end: Signal<Out, Bit>,
    pub end_position: Signal<Out, Bits<16>>,
    /// FPDU content (ULPDU_Length, ULPDU, PAD), `s_words` whole words per beat.
    pub s_data: Signal<In, Bits<D>>,
    pub s_words: Signal<In, Bits<8>>,
    pub s_valid: Signal<In, Bit>,
    pub s_ready: Signal<Out, Bit>,
    /// FPDU beats: `m_words` words, the CRC slot (if `m_crc_here`) still to be filled.
    pub m_data: Signal<Out, Bits<D>>,
    pub m_words: Signal<Out, Bits<8>>,
    pub m_first: Signal<Out, Bit>,
    pub m_last: Signal<Out, Bit>,
    pub m_crc_slot: Signal<Out, Bits<8>>,
    pub m_valid: Signal<Out, Bit>,
    pub m_ready: Signal<In, Bit>,
    buffer: DFF<Bits<B>>,
    /// Words in the buffer.
    fill: DFF<Bits<8>>,
    /// Stream position (mod 2^16) of the next output word.
    position: DFF<Bits<16>>,
    in_fpdu: DFF<Bit>,
    /// `markers_en` as the current FPDU started.
    fpdu_markers: DFF<Bit>,
    here: Signal<Local, Bits<16>>,
    markers_on: Signal<Local, Bit>,
    /// Content words of the current FPDU not yet sent.
    remaining: DFF<Bits<16>>,
    /// Stream position of the current FPDU's ULPDU_Length field.
    length_position: DFF<Bits<16>>,
    out_data: DFF<Bits<D>>,
    out_words: DFF<Bits<8>>,
    out_first: DFF<Bit>,
    out_last: DFF<Bit>,
    out_crc_slot: DFF<Bits<8>>,
    out_valid: DFF<Bit>,
    load: Signal<Local, Bit>,
    start: Signal<Local, Bit>,
    length: Signal<Local, Bits<16>>,
    content: Signal<Local, Bits<16>>,
    to_marker: Signal<Local, Bits<16>>,
    marker_slot: Signal<Local, Bits<8>>,
    marker_here: Signal<Local, Bit>,
    slots: Signal<Local, Bits<16>>,
    take: Signal<Local, Bits<16>>,
    crc_here: Signal<Local, Bit>,
    crc_slot: Signal<Local, Bits<16>>,
    used: Signal<Local, Bits<16>>,
    fire: Signal<Local, Bit>,
    this_length_position: Signal<Local, Bits<16>>,
    fpduptr: Signal<Local, Bits<16>>,
    marker_word: Signal<Local, Bits<32>>,
    front: Signal<Local, Bits<D>>,
    marker_shift: Signal<Local, Bits<16>>,
    beat: Signal<Local, Bits<D>>,
    append_fired: Signal<Local, Bits<16>>,
    fill_fired: Signal<Local, Bits<8>>,
    consumed_shift: Signal<Local, Bits<16>>,
    kept: Signal<Local, Bits<B>>,
    accept: Signal<Local, Bit>,
    in_shift: Signal<Local, Bits<16>>,
    in_clean: Signal<Local, Bits<D>>,
    append_shift: Signal<Local, Bits<16>>,
    ones: Constant<Bits<D>>,
    words_per_beat: Constant<Bits<16>>,
    accept_limit: Constant<Bits<8>>,
    /// A beat's slots less one, and the buffer's word counts' bits (`K / 4`, `K` powers
    /// of two).
    slot_mask: Constant<Bits<16>>,
    fill_mask: Constant<Bits<16>>,
}

impl<const D: usize, const K: usize, const B: usize> Default for TxMarkers<D, K, B> {
    fn default() -> Self {
        const { assert!(D == 8 * K && K.is_power_of_two() && K >= 8 && B == 3 * D) };
        Self {
            clock: Default::default(),
            reset: Default::default(),
            markers_en: Default::default(),
            fpdu_load: Default::default(),
            fpdu_position: Default::default(),
            fpdu_wait: Default::default(),
            fpdu_start: Default::default(),
            fpdu_end: Default::default(),
            end_position: Default::default(),
            fpdu_markers: Default::default(),
            here: Default::default(),
            markers_on: Default::default(),
            s_data: Default::default(),
            s_words: Default::default(),
            s_valid: Default::default(),
            s_ready: Default::default(),
            m_data: Default::default(),
            m_words: Default::default(),
            m_first: Default::default(),
            m_last: Default::default(),
            m_crc_slot: Default::default(),
            m_valid: Default::default(),
            m_ready: Default::default(),
            buffer: Default::default(),
            fill: Default::default(),
            position: Default::default(),
            in_fpdu: Default::default(),
            remaining: Default::default(),
            length_position: Default::default(),
            out_data: Default::default(),
            out_words: Default::default(),
            out_first: Default::default(),
            out_last: Default::default(),
            out_crc_slot: Default::default(),
            out_valid: Default::default(),
            load: Default::default(),
            start: Default::default(),
            length: Default::default(),
            content: Default::default(),
            to_marker: Default::default(),
            marker_slot: Default::default(),
            marker_here: Default::default(),
            slots: Default::default(),
            take: Default::default(),
            crc_here: Default::default(),
            crc_slot: Default::default(),
            used: Default::default(),
            fire: Default::default(),
            this_length_position: Default::default(),
            fpduptr: Default::default(),
            marker_word: Default::default(),
            front: Default::default(),
            marker_shift: Default::default(),
            beat: Default::default(),
            append_fired: Default::default(),
            fill_fired: Default::default(),
            consumed_shift: Default::default(),
            kept: Default::default(),
            accept: Default::default(),
            in_shift: Default::default(),
            in_clean: Default::default(),
            append_shift: Default::default(),
            ones: Constant::new(!Bits::<D>::default()),
            words_per_beat: Constant::new((K as u64 / 4).into()),
            // Accept a beat while the buffer has room for it: at most two beats held.
            accept_limit: Constant::new((K as u64 / 2).into()),
            slot_mask: Constant::new((K as u64 / 4 - 1).into()),
            fill_mask: Constant::new((K as u64 - 1).into()),
        }
    }
}

impl<const D: usize, const K: usize, const B: usize> Logic for TxMarkers<D, K, B> {
    #[hdl_gen]
    fn update(&mut self) {
        dff_setup!(
            self,
            clock,
            buffer,
            fill,
            position,
            in_fpdu,
            fpdu_markers,
            remaining,
            length_position,
            out_data,
            out_words,
            out_first,
            out_last,
            out_crc_slot,
            out_valid
        );
        self.load.next = !self.out_valid.q.val() | self.m_ready.val();
        self.start.next = !self.in_fpdu.q.val();

        // At the start of an FPDU its first content word holds ULPDU_Length (big-endian).
        self.length.next =
            (bit_cast::<16, B>(self.buffer.q.val() & 0xFF) << 8) | bit_cast::<16, B>((self.buffer.q.val() >> 8) & 0xFF);
        self.content.next = self.remaining.q.val();
        if self.start.val() {
            // ceil((2 + length) / 4) words of ULPDU_Length, ULPDU and PAD.
            self.content.next = bit_cast::<16, 18>((bit_cast::<18, 16>(self.length.val()) + 5) >> 2);
        }

        // The stream position of this beat's first word, and whether this FPDU has markers.
        self.here.next = self.position.q.val();
        self.markers_on.next = self.fpdu_markers.q.val();
        if self.start.val() {
            self.markers_on.next = self.markers_en.val();
            if self.fpdu_load.val() {
                self.here.next = self.fpdu_position.val();
            }
        }

        // Where the next marker falls: 0..511 octets ahead, a slot of this beat if less
        // than a beat ahead and before the FPDU's end (content + CRC).
        self.to_marker.next = (!self.here.val() + 1) & 0x1FF;
        self.marker_slot.next = bit_cast::<8, 16>(self.to_marker.val() >> 2);
        self.marker_here.next = self.markers_on.val()
            & (bit_cast::<16, 8>(self.marker_slot.val()) < self.words_per_beat.val())
            & (bit_cast::<16, 8>(self.marker_slot.val()) < self.content.val() + 1);

        // Slots for content and CRC; the CRC goes right after the last content word.
        self.slots.next = self.words_per_beat.val();
        if self.marker_here.val() {
            self.slots.next = self.words_per_beat.val() - 1;
        }
        self.take.next = self.content.val();
        if self.content.val() > self.slots.val() {
            self.take.next = self.slots.val();
        }
        self.crc_here.next = self.content.val() < self.slots.val();
        self.crc_slot.next = self.content.val();
        if self.marker_here.val() {
            self.crc_slot.next = self.content.val() + 1;
        }
        self.used.next = self.take.val();
        if self.marker_here.val() {
            self.used.next = self.take.val() + 1;
        }
        if self.crc_here.val() {
            self.used.next = self.used.val() + 1;
        }
        self.fire.next = self.load.val()
            & (bit_cast::<16, 8>(self.fill.q.val()) >= self.take.val())
            & !(self.start.val() & self.fpdu_wait.val());

        // FPDUPTR: octets from the ULPDU_Length field back to the marker; 0 for a marker
        // in front of the FPDU, whose length field then follows the marker.
        self.this_length_position.next = self.length_position.q.val();
        if self.start.val() {
            self.this_length_position.next = self.here.val();
            if self.marker_here.val() & (self.marker_slot.val() == 0) {
                self.this_length_position.next = self.here.val() + 4;
            }
        }
        self.fpduptr.next =
            self.here.val() + (bit_cast::<16, 8>(self.marker_slot.val()) << 2) - self.this_length_position.val();
        if self.start.val() & (self.marker_slot.val() == 0) {
            self.fpduptr.next = 0.into();
        }
        // Reserved 16 bits of zero, then FPDUPTR big-endian.
        self.marker_word.next =
            (bit_cast::<32, 16>(self.fpduptr.val() >> 8) << 16) | (bit_cast::<32, 16>(self.fpduptr.val() & 0xFF) << 24);

        // The beat: buffer words in order, the marker spliced in at its slot.
        self.front.next = bit_cast::<D, B>(self.buffer.q.val());
        // (Used only when the marker is in the beat: the slot's low bits select it.)
        self.marker_shift.next = (bit_cast::<16, 8>(self.marker_slot.val()) & self.slot_mask.val()) << 5;
        self.beat.next = self.front.val();
        if self.marker_here.val() {
            self.beat.next = (self.front.val() & !(self.ones.val() << self.marker_shift.val()))
                | (bit_cast::<D, 32>(self.marker_word.val()) << self.marker_shift.val())
                | ((self.front.val() << 32) & (self.ones.val() << (self.marker_shift.val() + 32)));
        }

        // Buffer: drop what this beat sent, append an accepted input beat behind the rest.
        // Both outcomes are worked out from the plan (each shift by a count the buffer can
        // hold, not by a whole register), and the beat's `fire` picks one at the end.
        self.accept.next = self.s_valid.val() & (self.fill.q.val() <= self.accept_limit.val());
        self.s_ready.next = self.fill.q.val() <= self.accept_limit.val();
        self.in_shift.next = (bit_cast::<16, 8>(self.s_words.val()) & self.fill_mask.val()) << 5;
        self.in_clean.next = self.s_data.val() & !(self.ones.val() << self.in_shift.val());
        self.consumed_shift.next = (self.take.val() & self.fill_mask.val()) << 5;
        self.kept.next = self.buffer.q.val() >> self.consumed_shift.val();
        self.append_shift.next = (bit_cast::<16, 8>(self.fill.q.val()) & self.fill_mask.val()) << 5;
        self.append_fired.next = ((bit_cast::<16, 8>(self.fill.q.val()) - self.take.val()) & self.fill_mask.val()) << 5;
        self.fill_fired.next = self.fill.q.val() - bit_cast::<8, 16>(self.take.val());
        self.buffer.d.next = self.buffer.q.val();
        if self.accept.val() {
            self.buffer.d.next =
                self.buffer.q.val() | (bit_cast::<B, D>(self.in_clean.val()) << self.append_shift.val());
            self.fill.d.next = self.fill.q.val() + self.s_words.val();
        }
        if self.fire.val() {
            self.buffer.d.next = self.kept.val();
            self.fill.d.next = self.fill_fired.val();
            if self.accept.val() {
                self.buffer.d.next =
                    self.kept.val() | (bit_cast::<B, D>(self.in_clean.val()) << self.append_fired.val());
                self.fill.d.next = self.fill_fired.val() + self.s_words.val();
            }
        }

        if self.m_ready.val() {
            self.out_valid.d.next = false;
        }
        if self.fire.val() {
            self.out_data.d.next = self.beat.val();
            self.out_words.d.next = bit_cast::<8, 16>(self.used.val());
            self.out_first.d.next = self.start.val();
            self.out_last.d.next = self.crc_here.val();
            self.out_crc_slot.d.next = bit_cast::<8, 16>(self.crc_slot.val());
            self.out_valid.d.next = true;
            self.position.d.next = self.here.val() + (self.used.val() << 2);
            self.in_fpdu.d.next = !self.crc_here.val();
            self.fpdu_markers.d.next = self.markers_on.val();
            self.remaining.d.next = self.content.val() - self.take.val();
            self.length_position.d.next = self.this_length_position.val();
        }
        if self.reset.val() {
            self.fill.d.next = 0.into();
            self.buffer.d.next = 0.into();
            self.position.d.next = 0.into();
            self.in_fpdu.d.next = false;
            self.out_valid.d.next = false;
        }
        self.fpdu_start.next = self.fire.val() & self.start.val();
        self.fpdu_end.next = self.fire.val() & self.crc_here.val();
        self.end_position.next = self.here.val() + (self.used.val() << 2);
        self.m_data.next = self.out_data.q.val();
        self.m_words.next = self.out_words.q.val();
        self.m_first.next = self.out_first.q.val();
        self.m_last.next = self.out_last.q.val();
        self.m_crc_slot.next = self.out_crc_slot.q.val();
        self.m_valid.next = self.out_valid.q.val();
    }
}
