//! The plan of an FPDU's next beat in RX stage 1 ([`super::rx_align::RxAlign`]): from the
//! content words left (only up to a beat and a word of them matter) and where the
//! connection's next marker is, how many content words the beat takes, whether the marker
//! and the CRC word fall in it, and how many words of the window it uses. Combinational;
//! the aligner computes it a cycle ahead (for the first beat as the FPDU is parsed, for
//! the next beat as a beat leaves) and keeps it in registers, so a beat's decisions start
//! from registered counts.
use rust_hdl::prelude::*;

/// The values a beat's word counts may have with `K` byte lanes: `0..=K / 4 + 2` (a beat
/// of content, the marker and the CRC word).
pub const fn count_values(k: usize) -> usize {
    k / 4 + 3
}

/// All ones over the bits that number [`count_values`]: the mask that tells synthesis how
/// few bits a count has.
pub const fn count_mask(k: usize) -> u64 {
    (count_values(k).next_power_of_two() - 1) as u64
}

/// `K` = byte lanes (the window is `K / 4` words of content plus one).
#[derive(LogicBlock)]
pub struct RxPlan<const K: usize> {
    /// Content words of the FPDU still to leave (CRC excluded), or `K / 4 + 1` for any
    /// more than a beat holds: the aligner gives it clipped, from small compares rather
    /// than a subtraction.
    pub remaining: Signal<In, Bits<8>>,
    /// Octets from the front to the connection's next marker (0..511), and whether the
    /// FPDU's connection has markers.
    pub to_marker: Signal<In, Bits<16>>,
    pub markers: Signal<In, Bit>,
    /// Content words the beat takes.
    pub take: Signal<Out, Bits<16>>,
    /// The marker is in the beat: among its content words, or right before the CRC.
    pub marker_taken: Signal<Out, Bit>,
    /// The marker is among the beat's content words: the words after it move down a slot.
    pub marker_cut: Signal<Out, Bit>,
    /// The window slot of the CRC word, and whether the beat ends the FPDU with it.
    pub crc_slot: Signal<Out, Bits<16>>,
    pub crc_taken: Signal<Out, Bit>,
    /// Words of the window the CRC covers (content and marker), and all the beat uses.
    pub covered: Signal<Out, Bits<16>>,
    pub used: Signal<Out, Bits<16>>,
    /// (The counts, in 8 bits, but masked to the few low bits their range needs
    /// (`clip_mask`), so the compares and sums below are a handful of LUT inputs each.)
    all_content: Signal<Local, Bit>,
    rem: Signal<Local, Bits<8>>,
    marker_slot: Signal<Local, Bits<8>>,
    marker_far: Signal<Local, Bit>,
    marker_near: Signal<Local, Bit>,
    slot_lt_taken: Signal<Local, Bit>,
    rem_1: Signal<Local, Bits<8>>,
    taken_1: Signal<Local, Bits<8>>,
    taken_2: Signal<Local, Bits<8>>,
    slot_near: Signal<Local, Bits<8>>,
    marker_in: Signal<Local, Bit>,
    taken: Signal<Local, Bits<8>>,
    slot: Signal<Local, Bits<8>>,
    cover_words: Signal<Local, Bits<8>>,
    use_words: Signal<Local, Bits<8>>,
    words_per_beat: Constant<Bits<8>>,
    /// All ones over the bits that number `0..=K / 4 + 2`, every count's range here.
    clip_mask: Constant<Bits<8>>,
}

impl<const K: usize> Default for RxPlan<K> {
    fn default() -> Self {
        const { assert!(K.is_multiple_of(4) && K >= 8 && K <= 64) };
        Self {
            remaining: Default::default(),
            to_marker: Default::default(),
            markers: Default::default(),
            take: Default::default(),
            marker_taken: Default::default(),
            marker_cut: Default::default(),
            crc_slot: Default::default(),
            crc_taken: Default::default(),
            covered: Default::default(),
            used: Default::default(),
            all_content: Default::default(),
            rem: Default::default(),
            marker_slot: Default::default(),
            marker_far: Default::default(),
            marker_near: Default::default(),
            slot_lt_taken: Default::default(),
            rem_1: Default::default(),
            taken_1: Default::default(),
            taken_2: Default::default(),
            slot_near: Default::default(),
            marker_in: Default::default(),
            taken: Default::default(),
            slot: Default::default(),
            cover_words: Default::default(),
            use_words: Default::default(),
            words_per_beat: Constant::new(((K / 4) as u64).into()),
            clip_mask: Constant::new(count_mask(K).into()),
        }
    }
}

impl<const K: usize> Logic for RxPlan<K> {
    #[hdl_gen]
    fn update(&mut self) {
        // Up to a beat of content; the marker if it lies among it (or right before the
        // CRC); the CRC word if the content ends and it fits the window.
        // (The marker is at most 511 octets on: its word fits 8 bits. Only a marker within
        // a beat and a word matters: far, or its slot in the clip's few bits.)
        self.rem.next = self.remaining.val() & self.clip_mask.val();
        self.marker_slot.next = bit_cast::<8, 16>(self.to_marker.val() >> 2);
        self.marker_far.next = self.marker_slot.val() > self.words_per_beat.val();
        self.slot_near.next = self.marker_slot.val() & self.clip_mask.val();
        self.marker_near.next = self.markers.val() & !self.marker_far.val();
        // (The compares of the two small counts are an OR over the values the content
        // count may have, each with a constant side; the sums are made beside the
        // decisions that pick them. No chain of compares and adds.)
        self.marker_in.next = false;
        self.slot_lt_taken.next = false;
        for r in 0..count_values(K) {
            self.marker_in.next = self.marker_in.val()
                | (self.marker_near.val()
                    & (self.rem.val() == r.to_bits::<8>())
                    & (self.slot_near.val() <= r.to_bits::<8>()));
        }
        // (No slot is below a content count of zero: that loop starts at one.)
        for r in 1..count_values(K) {
            self.slot_lt_taken.next = self.slot_lt_taken.val()
                | ((self.rem.val() == r.to_bits::<8>())
                    & (r.to_bits::<8>() <= self.words_per_beat.val())
                    & (self.slot_near.val() < r.to_bits::<8>()));
        }
        self.all_content.next = self.rem.val() <= self.words_per_beat.val();
        self.slot_lt_taken.next =
            self.slot_lt_taken.val() | (!self.all_content.val() & (self.slot_near.val() < self.words_per_beat.val()));
        self.taken.next = self.rem.val();
        if !self.all_content.val() {
            self.taken.next = self.words_per_beat.val();
        }
        self.marker_cut.next = self.marker_in.val() & self.slot_lt_taken.val();
        self.marker_taken.next = self.marker_in.val() & (self.slot_lt_taken.val() | self.all_content.val());
        // (With all the content in the beat, the CRC fits unless the marker takes its
        // place at the window's end.)
        self.crc_taken.next =
            self.all_content.val() & (!self.marker_taken.val() | (self.rem.val() < self.words_per_beat.val()));
        self.rem_1.next = (self.rem.val() + 1) & self.clip_mask.val();
        self.taken_1.next = (self.taken.val() + 1) & self.clip_mask.val();
        self.taken_2.next = (self.taken.val() + 2) & self.clip_mask.val();
        self.slot.next = self.rem.val();
        if self.marker_taken.val() {
            self.slot.next = self.rem_1.val();
        }
        self.cover_words.next = self.taken.val();
        if self.marker_taken.val() {
            self.cover_words.next = self.taken_1.val();
        }
        self.use_words.next = self.cover_words.val();
        if self.crc_taken.val() {
            self.use_words.next = self.taken_1.val();
            if self.marker_taken.val() {
                self.use_words.next = self.taken_2.val();
            }
        }
        self.take.next = bit_cast::<16, 8>(self.taken.val());
        self.crc_slot.next = bit_cast::<16, 8>(self.slot.val());
        self.covered.next = bit_cast::<16, 8>(self.cover_words.val());
        self.used.next = bit_cast::<16, 8>(self.use_words.val());
    }
}
