//! The plan of an FPDU's next beat in TX stage 2 ([`super::tx_markers::TxMarkers`]): from
//! the beat's stream position, the content words left and whether the FPDU has markers,
//! how many content words the beat takes, whether a marker falls in it (its slot and its
//! FPDUPTR) and whether the CRC slot does, and where the next beat stands. Combinational;
//! the marker stage computes it a beat ahead (for an FPDU's first beat as the one before
//! it is planned, for the next beat as a beat's plan is taken) and keeps it in registers,
//! so a beat's send decision starts from registered counts (RFC 5044 §4.2, §4.3).
use rust_hdl::prelude::*;

/// `K` = byte lanes (a beat holds `K / 4` words).
#[derive(LogicBlock)]
pub struct TxPlan<const K: usize> {
    /// Stream position (mod 2^16) of the beat's first word.
    pub here: Signal<In, Bits<16>>,
    /// Content words of the FPDU not yet planned (CRC excluded).
    pub content: Signal<In, Bits<16>>,
    /// The FPDU's connection has markers; the beat is the FPDU's first.
    pub markers: Signal<In, Bit>,
    pub start: Signal<In, Bit>,
    /// Octets from the FPDU's ULPDU_Length field to the beat's first word (0 for the first
    /// beat).
    pub since: Signal<In, Bits<16>>,
    /// Content words the beat takes, and all words it sends (content, marker, CRC).
    pub take: Signal<Out, Bits<16>>,
    pub used: Signal<Out, Bits<16>>,
    /// A marker falls in the beat: its bit offset in the beat and its word (reserved 16
    /// bits of zero, then FPDUPTR big-endian).
    pub marker_here: Signal<Out, Bit>,
    pub marker_shift: Signal<Out, Bits<16>>,
    pub marker_word: Signal<Out, Bits<32>>,
    /// The beat ends the FPDU with the CRC in slot `crc_slot`.
    pub crc_here: Signal<Out, Bit>,
    pub crc_slot: Signal<Out, Bits<16>>,
    /// The next beat's position, content words and octets since the length field.
    pub next_here: Signal<Out, Bits<16>>,
    pub rest: Signal<Out, Bits<16>>,
    pub since_after: Signal<Out, Bits<16>>,
    to_marker: Signal<Local, Bits<16>>,
    marker_slot: Signal<Local, Bits<16>>,
    /// A marker in front of the FPDU: its length field follows the marker (FPDUPTR 0).
    lead: Signal<Local, Bit>,
    fpduptr: Signal<Local, Bits<16>>,
    words_per_beat: Constant<Bits<16>>,
    words_per_beat_less_one: Constant<Bits<16>>,
    beat_octets: Constant<Bits<16>>,
    /// A beat's slots less one.
    slot_mask: Constant<Bits<16>>,
}

impl<const K: usize> Default for TxPlan<K> {
    fn default() -> Self {
        const { assert!(K.is_power_of_two() && K >= 8 && K <= 64) };
        Self {
            here: Default::default(),
            content: Default::default(),
            markers: Default::default(),
            start: Default::default(),
            since: Default::default(),
            take: Default::default(),
            used: Default::default(),
            marker_here: Default::default(),
            marker_shift: Default::default(),
            marker_word: Default::default(),
            crc_here: Default::default(),
            crc_slot: Default::default(),
            next_here: Default::default(),
            rest: Default::default(),
            since_after: Default::default(),
            to_marker: Default::default(),
            marker_slot: Default::default(),
            lead: Default::default(),
            fpduptr: Default::default(),
            words_per_beat: Constant::new((K as u64 / 4).into()),
            words_per_beat_less_one: Constant::new((K as u64 / 4 - 1).into()),
            beat_octets: Constant::new((K as u64).into()),
            slot_mask: Constant::new((K as u64 / 4 - 1).into()),
        }
    }
}

impl<const K: usize> Logic for TxPlan<K> {
    #[hdl_gen]
    fn update(&mut self) {
        // Where the next marker falls: 0..511 octets ahead, a slot of this beat if less
        // than a beat ahead and before the FPDU's end (content + CRC).
        self.to_marker.next = (!self.here.val() + 1) & 0x1FF;
        self.marker_slot.next = self.to_marker.val() >> 2;
        self.marker_here.next = self.markers.val()
            & (self.marker_slot.val() < self.words_per_beat.val())
            & (self.marker_slot.val() <= self.content.val());
        self.lead.next = self.start.val() & self.marker_here.val() & (self.marker_slot.val() == 0);

        // The CRC goes right after the last content word (and the marker, if it falls
        // there): the beat ends the FPDU if that slot is in it. Otherwise the beat is
        // full: a beat's words of content, one fewer for a marker.
        self.crc_slot.next = self.content.val();
        if self.marker_here.val() {
            self.crc_slot.next = self.content.val() + 1;
        }
        // (Both compares are made beside the marker's, which picks one.)
        self.crc_here.next = self.content.val() < self.words_per_beat.val();
        if self.marker_here.val() {
            self.crc_here.next = self.content.val() < self.words_per_beat_less_one.val();
        }
        // Each outcome from its own sum, worked out beside the decision that picks it.
        self.take.next = self.words_per_beat.val();
        self.used.next = self.words_per_beat.val();
        self.next_here.next = self.here.val() + self.beat_octets.val();
        self.rest.next = self.content.val() - self.words_per_beat.val();
        if self.marker_here.val() {
            self.take.next = self.words_per_beat_less_one.val();
            self.rest.next = self.content.val() - self.words_per_beat_less_one.val();
        }
        if self.crc_here.val() {
            self.take.next = self.content.val();
            self.used.next = self.crc_slot.val() + 1;
            self.next_here.next = self.here.val() + (self.content.val() << 2) + 4;
            if self.marker_here.val() {
                self.next_here.next = self.here.val() + (self.content.val() << 2) + 8;
            }
            self.rest.next = 0.into();
        }

        // FPDUPTR: octets from the ULPDU_Length field back to the marker; 0 for a marker
        // in front of the FPDU, whose length field then follows the marker.
        self.fpduptr.next = self.since.val() + (self.marker_slot.val() << 2);
        if self.lead.val() {
            self.fpduptr.next = 0.into();
        }
        self.marker_word.next =
            (bit_cast::<32, 16>(self.fpduptr.val() >> 8) << 16) | (bit_cast::<32, 16>(self.fpduptr.val() & 0xFF) << 24);
        // (Used only when the marker is in the beat: the slot's low bits select it.)
        self.marker_shift.next = (self.marker_slot.val() & self.slot_mask.val()) << 5;
        // (Of use only while the FPDU goes on, after a full beat.)
        self.since_after.next = self.since.val() + self.beat_octets.val();
        if self.lead.val() {
            self.since_after.next = self.beat_octets.val() - 4;
        }
    }
}
