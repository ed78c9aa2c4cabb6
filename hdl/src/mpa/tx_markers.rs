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
//! Each beat is planned a cycle before it is sent ([`TxPlan`]): how many content words it
//! takes, where its marker and CRC slot fall, and where the next beat stands. The plan
//! needs no content, only counts: an FPDU's content words are worked out from its
//! ULPDU_Length as its first word is offered (before the buffer has room for it) and wait
//! in a small queue for its first beat's plan. A beat leaves when the buffer holds the words its plan takes, and the next plan
//! is taken in the same cycle, so the send decision starts from registers.
//!
//! Several connections may share the block, FPDU by FPDU: `markers_en` is taken as each
//! FPDU's first beat is planned (`fpdu_start`) and holds for that FPDU, and with
//! `fpdu_load` the FPDU starts at stream position `fpdu_position` (its connection's)
//! instead of where the last one ended; `fpdu_end` (as the FPDU's last beat is planned)
//! gives the position after it (`end_position`) to keep for the next. `fpdu_wait` holds
//! the plan of an FPDU's first beat until they are in. With `fpdu_chain` the FPDU is its
//! connection's next after the last one: it goes on from where that ended, with its
//! marker setting, and need not wait.
//!
//! Each FPDU leaves as its own packet starting in lane 0: any markers that fall inside it,
//! then the CRC slot after the content. A marker that falls exactly between two FPDUs is
//! the first word of the following one (FPDUPTR 0); one that falls right after the PAD is
//! covered by this FPDU's CRC (§4.3).
use rust_hdl::prelude::*;

use super::tx_plan::TxPlan;
use crate::common::SmallFifo;

/// FPDUs `TxMarkers` queues the content words of (its queue holds nine: eight and the head).
const CONTENTS_ROOM: usize = 8;

/// `D` = data bits (`8 K`), `K` = byte lanes, `B` = buffer bits (`3 D`).
#[derive(LogicBlock)]
pub struct TxMarkers<const D: usize, const K: usize, const B: usize> {
    pub clock: Signal<In, Clock>,
    pub reset: Signal<In, Bit>,
    pub markers_en: Signal<In, Bit>,
    pub fpdu_load: Signal<In, Bit>,
    pub fpdu_position: Signal<In, Bits<16>>,
    pub fpdu_wait: Signal<In, Bit>,
    pub fpdu_chain: Signal<In, Bit>,
    pub fpdu_start: Signal<Out, Bit>,
    pub fpdu_end: Signal<Out, Bit>,
    pub end_position: Signal<Out, Bits<16>>,
    /// FPDU content (ULPDU_Length, ULPDU, PAD), `s_words` whole words per beat; `s_last`
    /// on an FPDU's last beat (the next beat starts with the next ULPDU_Length).
    pub s_data: Signal<In, Bits<D>>,
    pub s_words: Signal<In, Bits<8>>,
    pub s_last: Signal<In, Bit>,
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
    /// The next input beat is an FPDU's first; its content words are queued (as soon as
    /// the beat is offered, before the buffer has room for it).
    in_first: DFF<Bit>,
    counted: DFF<Bit>,
    /// Content words of each FPDU whose first word is in, until its first beat is planned.
    contents: SmallFifo<16>,
    /// FPDUs in `contents`, and whether it has room for another (from the count, a cycle
    /// early: the input's ready starts at a register).
    queued: DFF<Bits<8>>,
    queue_room: DFF<Bit>,
    plan: TxPlan<K>,
    /// The plan of the next beat to send (see [`TxPlan`]), valid while `p_valid`.
    p_valid: DFF<Bit>,
    p_start: DFF<Bit>,
    p_take: DFF<Bits<8>>,
    p_used: DFF<Bits<8>>,
    p_marker_here: DFF<Bit>,
    p_marker_shift: DFF<Bits<16>>,
    p_marker_word: DFF<Bits<32>>,
    p_crc_here: DFF<Bit>,
    p_crc_slot: DFF<Bits<8>>,
    /// The buffer's shift for the words the beat takes.
    p_take_shift: DFF<Bits<16>>,
    /// Where the beat after it stands (kept after the beat is sent): its position, the
    /// FPDU's content words left, octets since the length field, the FPDU's markers.
    p_end: DFF<Bits<16>>,
    p_rest: DFF<Bits<16>>,
    p_since: DFF<Bits<16>>,
    p_markers: DFF<Bit>,
    out_data: DFF<Bits<D>>,
    out_words: DFF<Bits<8>>,
    out_first: DFF<Bit>,
    out_last: DFF<Bit>,
    out_crc_slot: DFF<Bits<8>>,
    out_valid: DFF<Bit>,
    load: Signal<Local, Bit>,
    fire: Signal<Local, Bit>,
    /// The next plan: of the current FPDU's next beat (`carry_on`), or of the next FPDU's
    /// first once its content words and connection settings are in.
    carry_on: Signal<Local, Bit>,
    take_plan: Signal<Local, Bit>,
    length: Signal<Local, Bits<16>>,
    front: Signal<Local, Bits<D>>,
    beat: Signal<Local, Bits<D>>,
    append_fired: Signal<Local, Bits<16>>,
    fill_fired: Signal<Local, Bits<8>>,
    kept: Signal<Local, Bits<B>>,
    accept: Signal<Local, Bit>,
    room: Signal<Local, Bit>,
    push: Signal<Local, Bit>,
    pop: Signal<Local, Bit>,
    in_shift: Signal<Local, Bits<16>>,
    in_clean: Signal<Local, Bits<D>>,
    append_shift: Signal<Local, Bits<16>>,
    ones: Constant<Bits<D>>,
    accept_limit: Constant<Bits<8>>,
    /// The buffer's word counts' bits (`K / 4`, `K` powers of two).
    fill_mask: Constant<Bits<16>>,
    queue_limit: Constant<Bits<8>>,
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
            fpdu_chain: Default::default(),
            fpdu_start: Default::default(),
            fpdu_end: Default::default(),
            end_position: Default::default(),
            s_data: Default::default(),
            s_words: Default::default(),
            s_last: Default::default(),
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
            in_first: Default::default(),
            counted: Default::default(),
            contents: Default::default(),
            queued: Default::default(),
            queue_room: Default::default(),
            plan: Default::default(),
            p_valid: Default::default(),
            p_start: Default::default(),
            p_take: Default::default(),
            p_used: Default::default(),
            p_marker_here: Default::default(),
            p_marker_shift: Default::default(),
            p_marker_word: Default::default(),
            p_crc_here: Default::default(),
            p_crc_slot: Default::default(),
            p_take_shift: Default::default(),
            p_end: Default::default(),
            p_rest: Default::default(),
            p_since: Default::default(),
            p_markers: Default::default(),
            out_data: Default::default(),
            out_words: Default::default(),
            out_first: Default::default(),
            out_last: Default::default(),
            out_crc_slot: Default::default(),
            out_valid: Default::default(),
            load: Default::default(),
            fire: Default::default(),
            carry_on: Default::default(),
            take_plan: Default::default(),
            length: Default::default(),
            front: Default::default(),
            beat: Default::default(),
            append_fired: Default::default(),
            fill_fired: Default::default(),
            kept: Default::default(),
            accept: Default::default(),
            room: Default::default(),
            push: Default::default(),
            pop: Default::default(),
            in_shift: Default::default(),
            in_clean: Default::default(),
            append_shift: Default::default(),
            ones: Constant::new(!Bits::<D>::default()),
            // Accept a beat while the buffer has room for it: at most two beats held.
            accept_limit: Constant::new((K as u64 / 2).into()),
            fill_mask: Constant::new((K as u64 - 1).into()),
            queue_limit: Constant::new((CONTENTS_ROOM as u64).into()),
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
            in_first,
            counted,
            queued,
            queue_room,
            p_valid,
            p_start,
            p_take,
            p_used,
            p_marker_here,
            p_marker_shift,
            p_marker_word,
            p_crc_here,
            p_crc_slot,
            p_take_shift,
            p_end,
            p_rest,
            p_since,
            p_markers,
            out_data,
            out_words,
            out_first,
            out_last,
            out_crc_slot,
            out_valid
        );
        self.contents.clock.next = self.clock.val();
        self.contents.reset.next = self.reset.val();
        self.load.next = !self.out_valid.q.val() | self.m_ready.val();

        // Input: an FPDU's first word holds its ULPDU_Length (big-endian); its content is
        // ceil((2 + length) / 4) words of ULPDU_Length, ULPDU and PAD. The count is queued
        // as the first beat is offered, and the beat is taken once it is.
        self.room.next = (self.fill.q.val() <= self.accept_limit.val())
            & (!self.in_first.q.val() | self.counted.q.val() | self.queue_room.q.val());
        self.s_ready.next = self.room.val();
        self.accept.next = self.s_valid.val() & self.room.val();
        self.length.next =
            (bit_cast::<16, D>(self.s_data.val() & 0xFF) << 8) | bit_cast::<16, D>((self.s_data.val() >> 8) & 0xFF);
        self.contents.s_data.next = bit_cast::<16, 18>((bit_cast::<18, 16>(self.length.val()) + 5) >> 2);
        self.push.next = self.s_valid.val() & self.in_first.q.val() & !self.counted.q.val() & self.queue_room.q.val();
        self.contents.s_valid.next = self.push.val();
        if self.push.val() {
            self.counted.d.next = true;
        }
        if self.accept.val() {
            self.in_first.d.next = self.s_last.val();
            self.counted.d.next = false;
        }

        // A beat leaves when the buffer holds the content words its plan takes.
        self.fire.next = self.load.val() & self.p_valid.q.val() & (self.fill.q.val() >= self.p_take.q.val());

        // The next plan: the current FPDU's next beat, or the next FPDU's first, which
        // starts at its connection's position with its connection's marker setting.
        self.carry_on.next = !self.p_crc_here.q.val();
        self.plan.here.next = self.p_end.q.val();
        self.plan.content.next = self.p_rest.q.val();
        self.plan.markers.next = self.p_markers.q.val();
        self.plan.start.next = !self.carry_on.val();
        self.plan.since.next = self.p_since.q.val();
        if !self.carry_on.val() {
            if self.fpdu_load.val() & !self.fpdu_chain.val() {
                self.plan.here.next = self.fpdu_position.val();
            }
            self.plan.content.next = self.contents.m_data.val();
            if !self.fpdu_chain.val() {
                self.plan.markers.next = self.markers_en.val();
            }
            self.plan.since.next = 0.into();
        }
        self.take_plan.next = (!self.p_valid.q.val() | self.fire.val())
            & (self.carry_on.val() | (self.contents.m_valid.val() & (self.fpdu_chain.val() | !self.fpdu_wait.val())));
        self.pop.next = self.take_plan.val() & !self.carry_on.val();
        self.contents.m_ready.next = self.pop.val();
        self.queued.d.next = self.queued.q.val();
        if self.push.val() & !self.pop.val() {
            self.queued.d.next = self.queued.q.val() + 1;
        }
        if self.pop.val() & !self.push.val() {
            self.queued.d.next = self.queued.q.val() - 1;
        }
        self.queue_room.d.next = self.queued.d.val() < self.queue_limit.val();
        if self.fire.val() {
            self.p_valid.d.next = false;
        }
        if self.take_plan.val() {
            self.p_valid.d.next = true;
            self.p_start.d.next = !self.carry_on.val();
            self.p_take.d.next = bit_cast::<8, 16>(self.plan.take.val());
            self.p_used.d.next = bit_cast::<8, 16>(self.plan.used.val());
            self.p_marker_here.d.next = self.plan.marker_here.val();
            self.p_marker_shift.d.next = self.plan.marker_shift.val();
            self.p_marker_word.d.next = self.plan.marker_word.val();
            self.p_crc_here.d.next = self.plan.crc_here.val();
            self.p_crc_slot.d.next = bit_cast::<8, 16>(self.plan.crc_slot.val());
            self.p_take_shift.d.next = (self.plan.take.val() & self.fill_mask.val()) << 5;
            self.p_end.d.next = self.plan.next_here.val();
            self.p_rest.d.next = self.plan.rest.val();
            self.p_since.d.next = self.plan.since_after.val();
            self.p_markers.d.next = self.plan.markers.val();
        }
        self.fpdu_start.next = self.pop.val();
        self.fpdu_end.next = self.take_plan.val() & self.plan.crc_here.val();
        self.end_position.next = self.plan.next_here.val();

        // The beat: buffer words in order, the marker spliced in at its slot.
        self.front.next = bit_cast::<D, B>(self.buffer.q.val());
        self.beat.next = self.front.val();
        if self.p_marker_here.q.val() {
            self.beat.next = (self.front.val() & !(self.ones.val() << self.p_marker_shift.q.val()))
                | (bit_cast::<D, 32>(self.p_marker_word.q.val()) << self.p_marker_shift.q.val())
                | ((self.front.val() << 32) & (self.ones.val() << (self.p_marker_shift.q.val() + 32)));
        }

        // Buffer: drop what this beat sent, append an accepted input beat behind the rest.
        // Both outcomes are worked out from the plan (each shift by a count the buffer can
        // hold, not by a whole register), and the beat's `fire` picks one at the end.
        self.in_shift.next = (bit_cast::<16, 8>(self.s_words.val()) & self.fill_mask.val()) << 5;
        self.in_clean.next = self.s_data.val() & !(self.ones.val() << self.in_shift.val());
        self.kept.next = self.buffer.q.val() >> self.p_take_shift.q.val();
        self.append_shift.next = (bit_cast::<16, 8>(self.fill.q.val()) & self.fill_mask.val()) << 5;
        self.append_fired.next =
            (bit_cast::<16, 8>(self.fill.q.val() - self.p_take.q.val()) & self.fill_mask.val()) << 5;
        self.fill_fired.next = self.fill.q.val() - self.p_take.q.val();
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
            self.out_words.d.next = self.p_used.q.val();
            self.out_first.d.next = self.p_start.q.val();
            self.out_last.d.next = self.p_crc_here.q.val();
            self.out_crc_slot.d.next = self.p_crc_slot.q.val();
            self.out_valid.d.next = true;
        }
        if self.reset.val() {
            self.fill.d.next = 0.into();
            self.buffer.d.next = 0.into();
            self.in_first.d.next = true;
            self.counted.d.next = false;
            self.queued.d.next = 0.into();
            self.queue_room.d.next = true;
            self.p_valid.d.next = false;
            // The first plan is of an FPDU's first beat, at position 0.
            self.p_crc_here.d.next = true;
            self.p_end.d.next = 0.into();
            self.out_valid.d.next = false;
        }
        self.m_data.next = self.out_data.q.val();
        self.m_words.next = self.out_words.q.val();
        self.m_first.next = self.out_first.q.val();
        self.m_last.next = self.out_last.q.val();
        self.m_crc_slot.next = self.out_crc_slot.q.val();
        self.m_valid.next = self.out_valid.q.val();
    }
}
