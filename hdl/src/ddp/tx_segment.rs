//! DDP segmentation on transmit: a message in, ULPDUs of at most MULPDU octets out, each
//! a DDP/RDMAP header followed by its share of the payload (RFC 5041 §5, §6; RFC 5040
//! §4), ready for the MPA framer (`tuser` = ULPDU length).
//!
//! A message is a job: tagged (RDMA Write, Read Response: STag and TO, the TO advancing by
//! segment) or untagged (Sends, Read Request: the 4-octet field after the RDMAP control —
//! the Invalidate STag or 0 —, queue number, MSN, the MO advancing by segment), an RDMAP
//! opcode, the payload's IOVA and length, and up to 52 inline octets that follow the
//! header (the body of a Read Request, an Atomic Request or Response, a Terminate, or
//! Immediate Data). Every segment carries `mulpdu` − header octets of
//! payload but the last; an empty message is one segment with L set.
//!
//! Two halves run one segment apart. The walker cuts the message into segments, builds
//! each header and asks the DMA read engine for that segment's payload (so a payload
//! stream never spans two segments and the engine's requests in flight hide its
//! latency); segments wait in a block-RAM queue of 32, their reads in flight. The packer
//! sends a segment's header eight octets a beat, then its payload behind the header's
//! last octets: a header of `h` octets past its last full beat carries them over, and
//! each payload beat, rotated by `h` lanes, fills the beat's other lanes and leaves its
//! own last `h` octets to carry (one more beat of carried octets alone ends a segment
//! whose last payload beat does not fit). The rotation is the segment's, so every beat's
//! plan (from the header or the payload, the last beat, its keep) is a register set a
//! cycle ahead from down-counters and the lengths the walker queued.
//!
//! A message can be dropped (`drop`, while it is walked: its QP was reset, so its memory
//! may be freed): the walker then queues a void segment, which asks for no payload, and
//! stops. The packer sends nothing for a void segment, and reports the message done as
//! for its last ULPDU, so that whoever waits for the message is not held up. Segments
//! queued before it still go out.
use rust_hdl::prelude::*;

use crate::common::{constant, Bswap32, Bswap64, RamFifo, SkidBuffer};

/// Segments queued between walker and packer: `1 << QUEUE_BITS`, each with its payload
/// read in flight (enough to hide a 200-cycle memory behind short messages).
const QUEUE_BITS: usize = 5;
/// A queued segment: its header (576 bits) and its info (`INFO_BITS`: header length,
/// payload length, last of the message, tag, void; see `info_word`).
const HEADER_BITS: usize = 576;
const INFO_BITS: usize = 57;
const SEGMENT_BITS: usize = HEADER_BITS + INFO_BITS;
/// Fields of a queued segment's info.
const INFO_HEADER_LEN: usize = 0;
const INFO_PAYLOAD_LEN: usize = 7;
const INFO_LAST: usize = 23;
const INFO_TAG: usize = 24;
const INFO_VOID: usize = 56;

#[derive(LogicBlock)]
pub struct TxSegment {
    pub clock: Signal<In, Clock>,
    pub reset: Signal<In, Bit>,
    /// A message.
    pub s_job_valid: Signal<In, Bit>,
    pub s_job_ready: Signal<Out, Bit>,
    pub s_job_tagged: Signal<In, Bit>,
    pub s_job_opcode: Signal<In, Bits<4>>,
    /// Tagged: the STag; untagged: the field after the RDMAP control (Invalidate STag).
    pub s_job_stag: Signal<In, Bits<32>>,
    pub s_job_to: Signal<In, Bits<64>>,
    pub s_job_qn: Signal<In, Bits<32>>,
    pub s_job_msn: Signal<In, Bits<32>>,
    pub s_job_addr: Signal<In, Bits<64>>,
    pub s_job_len: Signal<In, Bits<32>>,
    /// Octets 0..n of `s_job_inline` follow the header (untagged, single segment).
    pub s_job_inline: Signal<In, Bits<416>>,
    pub s_job_inline_len: Signal<In, Bits<6>>,
    pub s_job_mulpdu: Signal<In, Bits<16>>,
    pub s_job_tag: Signal<In, Bits<32>>,
    /// The tag of the message walked next cycle (a job's, as it is taken), and the order
    /// to drop the rest of the one being walked (valid while `walking`): the user decides
    /// it a cycle ahead, from `walk_tag_next`, into a register.
    pub walk_tag_next: Signal<Out, Bits<32>>,
    pub walking: Signal<Out, Bit>,
    pub drop: Signal<In, Bit>,
    /// Payload reads.
    pub m_rd_req_valid: Signal<Out, Bit>,
    pub m_rd_req_ready: Signal<In, Bit>,
    pub m_rd_req_addr: Signal<Out, Bits<64>>,
    pub m_rd_req_len: Signal<Out, Bits<32>>,
    pub s_rd_tdata: Signal<In, Bits<64>>,
    pub s_rd_tkeep: Signal<In, Bits<8>>,
    pub s_rd_tlast: Signal<In, Bit>,
    pub s_rd_tvalid: Signal<In, Bit>,
    pub s_rd_tready: Signal<Out, Bit>,
    /// ULPDUs, `tkeep` contiguous from lane 0; octets past it are not cleared.
    pub m_axis_tdata: Signal<Out, Bits<64>>,
    pub m_axis_tkeep: Signal<Out, Bits<8>>,
    pub m_axis_tlast: Signal<Out, Bit>,
    pub m_axis_tuser: Signal<Out, Bits<16>>,
    /// The job's tag, on every beat of its ULPDUs.
    pub m_axis_tid: Signal<Out, Bits<32>>,
    pub m_axis_tvalid: Signal<Out, Bit>,
    pub m_axis_tready: Signal<In, Bit>,
    /// A message's last ULPDU has left: one cycle, with the job's tag.
    pub m_done_valid: Signal<Out, Bit>,
    pub m_done_tag: Signal<Out, Bits<32>>,
    // Walker: the message being cut.
    walk: DFF<Bit>,
    is_tagged: DFF<Bit>,
    opcode: DFF<Bits<4>>,
    stag: DFF<Bits<32>>,
    to: DFF<Bits<64>>,
    qn: DFF<Bits<32>>,
    msn: DFF<Bits<32>>,
    addr: DFF<Bits<64>>,
    offset: DFF<Bits<32>>,
    left: DFF<Bits<32>>,
    inline_data: DFF<Bits<416>>,
    inline_len: DFF<Bits<6>>,
    per_segment: DFF<Bits<32>>,
    tag: DFF<Bits<32>>,
    req_valid: DFF<Bit>,
    req_addr: DFF<Bits<64>>,
    req_len: DFF<Bits<32>>,
    /// Segments for the packer: header (576 bits), header octets (7), payload octets (16),
    /// last segment of its message (1), the message's tag (32).
    segments: RamFifo<SEGMENT_BITS, QUEUE_BITS, { QUEUE_BITS + 1 }>,
    /// The queue's head, through a register slice: the packer starts a segment from
    /// registers.
    segments_out: SkidBuffer<SEGMENT_BITS>,
    // Packer: the segment being packed.
    packing: DFF<Bit>,
    /// Its header beats are going out (else its payload beats).
    in_header: DFF<Bit>,
    /// The header, its next beat in the low 64 bits; in the payload beats, the low 64
    /// bits hold the octets carried over (lanes below `h`).
    header: DFF<Bits<576>>,
    /// Full header beats left, and whether the next is the last of them.
    header_beats: DFF<Bits<4>>,
    header_last: DFF<Bit>,
    /// Nothing follows the full header beats (no octet carried over, no payload).
    header_ends: DFF<Bit>,
    /// Payload octets not yet taken; whether one is left, and whether they fit in one beat.
    payload_left: DFF<Bits<16>>,
    payload_more: DFF<Bit>,
    payload_last: DFF<Bit>,
    /// The next beat takes a payload beat (a payload beat of the segment, one left).
    wants_payload: DFF<Bit>,
    /// The carried octets and the last payload beat fill more than one beat: a beat of
    /// carried octets alone ends the segment.
    spills: DFF<Bit>,
    /// The payload's rotation, one-hot: lane `i` of a payload beat goes out in lane
    /// `i + h` (mod 8), `h` the header's octets past its last full beat.
    rotation: DFF<Bits<8>>,
    /// Lanes of the next beat taken from `header` (all in the header beats; those below
    /// `h` in the payload beats), and those of the header's carried octets.
    from_header: DFF<Bits<64>>,
    carry_lanes: DFF<Bits<64>>,
    /// The segment's last beat's keep (its length mod 8 lanes, or all eight).
    final_keep: DFF<Bits<8>>,
    ulpdu_len: DFF<Bits<16>>,
    message_end: DFF<Bit>,
    seg_tag: DFF<Bits<32>>,
    out_valid: DFF<Bit>,
    out_data: DFF<Bits<64>>,
    out_keep: DFF<Bits<8>>,
    out_last: DFF<Bit>,
    out_user: DFF<Bits<16>>,
    out_tid: DFF<Bits<32>>,
    done_valid: DFF<Bit>,
    done_tag: DFF<Bits<32>>,
    // Walker signals.
    info_word: Signal<Local, Bits<INFO_BITS>>,
    /// Where a queued segment's info starts, and where its fields start in it.
    at_info: Constant<Bits<16>>,
    at_header_len: Constant<Bits<8>>,
    at_payload_len: Constant<Bits<8>>,
    at_last: Constant<Bits<8>>,
    at_tag: Constant<Bits<8>>,
    at_void: Constant<Bits<8>>,
    header_len: Signal<Local, Bits<7>>,
    seg_len: Signal<Local, Bits<32>>,
    last: Signal<Local, Bit>,
    voided: Signal<Local, Bit>,
    ctrl: Signal<Local, Bits<16>>,
    field_be: Bswap32,
    qn_be: Bswap32,
    msn_be: Bswap32,
    mo_be: Bswap32,
    seg_to: Signal<Local, Bits<64>>,
    to_be: Bswap64,
    built: Signal<Local, Bits<576>>,
    push: Signal<Local, Bit>,
    // Packer signals.
    head_header: Signal<Local, Bits<576>>,
    head_info: Signal<Local, Bits<INFO_BITS>>,
    /// The queue head's header length, its octets past the last full beat (`h`), and its
    /// payload length.
    head_header_len: Signal<Local, Bits<7>>,
    head_carry: Signal<Local, Bits<3>>,
    head_payload_len: Signal<Local, Bits<16>>,
    head_payload_tail: Signal<Local, Bits<4>>,
    head_final_n: Signal<Local, Bits<3>>,
    start: Signal<Local, Bit>,
    /// The output register takes a beat; a beat goes out, and it is the segment's last.
    load: Signal<Local, Bit>,
    fire: Signal<Local, Bit>,
    final_beat: Signal<Local, Bit>,
    /// The payload beat rotated by `h` lanes, and the beat out.
    rotated: Signal<Local, Bits<64>>,
    beat: Signal<Local, Bits<64>>,
    /// `payload_left` after this beat: more than eight octets, and a last beat of them.
    payload_after_more: Signal<Local, Bit>,
    payload_after_last: Signal<Local, Bit>,
    lane_ones: Constant<Bits<8>>,
    ones_64: Constant<Bits<64>>,
}

impl Default for TxSegment {
    fn default() -> Self {
        TxSegment {
            clock: Default::default(),
            reset: Default::default(),
            s_job_valid: Default::default(),
            s_job_ready: Default::default(),
            s_job_tagged: Default::default(),
            s_job_opcode: Default::default(),
            s_job_stag: Default::default(),
            s_job_to: Default::default(),
            s_job_qn: Default::default(),
            s_job_msn: Default::default(),
            s_job_addr: Default::default(),
            s_job_len: Default::default(),
            s_job_inline: Default::default(),
            s_job_inline_len: Default::default(),
            s_job_mulpdu: Default::default(),
            s_job_tag: Default::default(),
            walk_tag_next: Default::default(),
            walking: Default::default(),
            drop: Default::default(),
            m_rd_req_valid: Default::default(),
            m_rd_req_ready: Default::default(),
            m_rd_req_addr: Default::default(),
            m_rd_req_len: Default::default(),
            s_rd_tdata: Default::default(),
            s_rd_tkeep: Default::default(),
            s_rd_tlast: Default::default(),
            s_rd_tvalid: Default::default(),
            s_rd_tready: Default::default(),
            m_axis_tdata: Default::default(),
            m_axis_tkeep: Default::default(),
            m_axis_tlast: Default::default(),
            m_axis_tuser: Default::default(),
            m_axis_tvalid: Default::default(),
            m_axis_tready: Default::default(),
            m_done_valid: Default::default(),
            m_done_tag: Default::default(),
            walk: Default::default(),
            is_tagged: Default::default(),
            opcode: Default::default(),
            stag: Default::default(),
            to: Default::default(),
            qn: Default::default(),
            msn: Default::default(),
            addr: Default::default(),
            offset: Default::default(),
            left: Default::default(),
            inline_data: Default::default(),
            inline_len: Default::default(),
            per_segment: Default::default(),
            tag: Default::default(),
            req_valid: Default::default(),
            req_addr: Default::default(),
            req_len: Default::default(),
            segments: Default::default(),
            segments_out: Default::default(),
            packing: Default::default(),
            in_header: Default::default(),
            header: Default::default(),
            header_beats: Default::default(),
            header_last: Default::default(),
            header_ends: Default::default(),
            payload_left: Default::default(),
            payload_more: Default::default(),
            payload_last: Default::default(),
            wants_payload: Default::default(),
            spills: Default::default(),
            rotation: Default::default(),
            from_header: Default::default(),
            carry_lanes: Default::default(),
            final_keep: Default::default(),
            ulpdu_len: Default::default(),
            message_end: Default::default(),
            seg_tag: Default::default(),
            out_valid: Default::default(),
            out_data: Default::default(),
            out_keep: Default::default(),
            out_last: Default::default(),
            out_user: Default::default(),
            m_axis_tid: Default::default(),
            out_tid: Default::default(),
            done_valid: Default::default(),
            done_tag: Default::default(),
            info_word: Default::default(),
            at_info: constant(HEADER_BITS as u64),
            at_header_len: constant(INFO_HEADER_LEN as u64),
            at_payload_len: constant(INFO_PAYLOAD_LEN as u64),
            at_last: constant(INFO_LAST as u64),
            at_tag: constant(INFO_TAG as u64),
            at_void: constant(INFO_VOID as u64),
            header_len: Default::default(),
            seg_len: Default::default(),
            last: Default::default(),
            voided: Default::default(),
            ctrl: Default::default(),
            field_be: Default::default(),
            qn_be: Default::default(),
            msn_be: Default::default(),
            mo_be: Default::default(),
            seg_to: Default::default(),
            to_be: Default::default(),
            built: Default::default(),
            push: Default::default(),
            head_header: Default::default(),
            head_info: Default::default(),
            head_header_len: Default::default(),
            head_carry: Default::default(),
            head_payload_len: Default::default(),
            head_payload_tail: Default::default(),
            head_final_n: Default::default(),
            start: Default::default(),
            load: Default::default(),
            fire: Default::default(),
            final_beat: Default::default(),
            rotated: Default::default(),
            beat: Default::default(),
            payload_after_more: Default::default(),
            payload_after_last: Default::default(),
            lane_ones: Constant::new(0xFF_u64.to_bits()),
            ones_64: Constant::new(u64::MAX.to_bits()),
        }
    }
}

impl Logic for TxSegment {
    #[hdl_gen]
    fn update(&mut self) {
        dff_setup!(
            self,
            clock,
            walk,
            is_tagged,
            opcode,
            stag,
            to,
            qn,
            msn,
            addr,
            offset,
            left,
            inline_data,
            inline_len,
            per_segment,
            tag,
            req_valid,
            req_addr,
            req_len,
            packing,
            in_header,
            header,
            header_beats,
            header_last,
            header_ends,
            payload_left,
            payload_more,
            payload_last,
            wants_payload,
            spills,
            rotation,
            from_header,
            carry_lanes,
            final_keep,
            ulpdu_len,
            message_end,
            seg_tag,
            out_valid,
            out_data,
            out_keep,
            out_last,
            out_user,
            out_tid,
            done_valid,
            done_tag
        );
        self.segments.clock.next = self.clock.val();
        self.segments.reset.next = self.reset.val();
        self.segments_out.clock.next = self.clock.val();
        self.segments_out.reset.next = self.reset.val();
        self.segments_out.s_valid.next = self.segments.m_valid.val();
        self.segments_out.s_data.next = self.segments.m_data.val();
        self.segments.m_ready.next = self.segments_out.s_ready.val();

        // Walker: take a message when idle.
        self.s_job_ready.next = !self.walk.q.val();
        if self.s_job_valid.val() & !self.walk.q.val() {
            self.walk.d.next = true;
            self.is_tagged.d.next = self.s_job_tagged.val();
            self.opcode.d.next = self.s_job_opcode.val();
            self.stag.d.next = self.s_job_stag.val();
            self.to.d.next = self.s_job_to.val();
            self.qn.d.next = self.s_job_qn.val();
            self.msn.d.next = self.s_job_msn.val();
            self.addr.d.next = self.s_job_addr.val();
            self.offset.d.next = 0.into();
            self.left.d.next = self.s_job_len.val();
            self.inline_data.d.next = self.s_job_inline.val();
            self.inline_len.d.next = self.s_job_inline_len.val();
            self.tag.d.next = self.s_job_tag.val();
            // Payload per segment: MULPDU less the header (RFC 5041 §5.2), at least one.
            self.per_segment.d.next = bit_cast::<32, 16>(self.s_job_mulpdu.val()) - 18;
            if self.s_job_tagged.val() {
                self.per_segment.d.next = bit_cast::<32, 16>(self.s_job_mulpdu.val()) - 14;
            }
        }
        // The next segment: its payload, its L flag, its header (big-endian fields).
        self.header_len.next = 18.into();
        if self.is_tagged.q.val() {
            self.header_len.next = 14.into();
        }
        self.header_len.next = self.header_len.val() + bit_cast::<7, 6>(self.inline_len.q.val());
        self.seg_len.next = self.left.q.val();
        if self.left.q.val() > self.per_segment.q.val() {
            self.seg_len.next = self.per_segment.q.val();
        }
        self.last.next = self.left.q.val() == self.seg_len.val();
        // A dropped message ends with a void segment: no header, no payload.
        self.voided.next = self.walk.q.val() & self.drop.val();
        if self.voided.val() {
            self.header_len.next = 0.into();
            self.seg_len.next = 0.into();
            self.last.next = true;
        }
        self.ctrl.next = 0x4001.into();
        if self.is_tagged.q.val() {
            self.ctrl.next = 0x4081.into();
        }
        if self.last.val() {
            self.ctrl.next = self.ctrl.val() | 0x40_u64;
        }
        self.ctrl.next = self.ctrl.val() | (bit_cast::<16, 4>(self.opcode.q.val()) << 8);
        self.field_be.d.next = self.stag.q.val();
        self.qn_be.d.next = self.qn.q.val();
        self.msn_be.d.next = self.msn.q.val();
        self.mo_be.d.next = self.offset.q.val();
        self.seg_to.next = self.to.q.val() + bit_cast::<64, 32>(self.offset.q.val());
        self.to_be.d.next = self.seg_to.val();
        // The RDMAP control octet holds RV = 1 (0x40) and the opcode.
        self.built.next = bit_cast::<576, 16>(self.ctrl.val())
            | (bit_cast::<576, 32>(self.field_be.q.val()) << 16)
            | (bit_cast::<576, 32>(self.qn_be.q.val()) << 48)
            | (bit_cast::<576, 32>(self.msn_be.q.val()) << 80)
            | (bit_cast::<576, 32>(self.mo_be.q.val()) << 112)
            | (bit_cast::<576, 416>(self.inline_data.q.val()) << 144);
        if self.is_tagged.q.val() {
            self.built.next = bit_cast::<576, 16>(self.ctrl.val())
                | (bit_cast::<576, 32>(self.field_be.q.val()) << 16)
                | (bit_cast::<576, 64>(self.to_be.q.val()) << 48);
        }
        // A segment goes into the queue together with its payload read (if any).
        self.push.next =
            self.walk.q.val() & self.segments.s_ready.val() & (!self.req_valid.q.val() | self.m_rd_req_ready.val());
        if self.m_rd_req_ready.val() {
            self.req_valid.d.next = false;
        }
        // Info: header length (7 bits), payload length (16), last of the message (1), tag
        // (32), void (1).
        self.info_word.next = (bit_cast::<INFO_BITS, 7>(self.header_len.val()) << self.at_header_len.val())
            | (bit_cast::<INFO_BITS, 16>(self.seg_len.val().get_bits::<16>(0)) << self.at_payload_len.val())
            | (bit_cast::<INFO_BITS, 1>(self.last.val().into()) << self.at_last.val())
            | (bit_cast::<INFO_BITS, 32>(self.tag.q.val()) << self.at_tag.val())
            | (bit_cast::<INFO_BITS, 1>(self.voided.val().into()) << self.at_void.val());
        self.segments.s_valid.next = self.push.val();
        self.segments.s_data.next = bit_cast::<SEGMENT_BITS, HEADER_BITS>(self.built.val())
            | (bit_cast::<SEGMENT_BITS, INFO_BITS>(self.info_word.val()) << self.at_info.val());
        if self.push.val() {
            if self.seg_len.val().any() {
                self.req_valid.d.next = true;
                self.req_addr.d.next = self.addr.q.val() + bit_cast::<64, 32>(self.offset.q.val());
                self.req_len.d.next = self.seg_len.val();
            }
            self.offset.d.next = self.offset.q.val() + self.seg_len.val();
            self.left.d.next = self.left.q.val() - self.seg_len.val();
            self.walk.d.next = !self.last.val();
        }
        self.m_rd_req_valid.next = self.req_valid.q.val();
        self.m_rd_req_addr.next = self.req_addr.q.val();
        self.m_rd_req_len.next = self.req_len.q.val();

        // Packer: start the next segment when idle; a void one (no header) only ends its
        // message.
        self.head_header.next = self.segments_out.m_data.val().get_bits::<HEADER_BITS>(0);
        self.head_info.next = self.segments_out.m_data.val().get_bits::<INFO_BITS>(self.at_info.val().index());
        self.head_header_len.next = self.head_info.val().get_bits::<7>(self.at_header_len.val().index());
        self.head_carry.next = self.head_header_len.val().get_bits::<3>(0);
        self.head_payload_len.next = self.head_info.val().get_bits::<16>(self.at_payload_len.val().index());
        self.segments_out.m_ready.next = !self.packing.q.val();
        self.start.next = !self.packing.q.val()
            & self.segments_out.m_valid.val()
            & !self.head_info.val().get_bit(self.at_void.val().index());
        self.done_valid.d.next = false;
        if !self.packing.q.val()
            & self.segments_out.m_valid.val()
            & self.head_info.val().get_bit(self.at_void.val().index())
        {
            self.done_valid.d.next = true;
            self.done_tag.d.next = self.head_info.val().get_bits::<32>(self.at_tag.val().index());
        }
        // The payload's last beat's octets (1..=8), and the ULPDU's last beat's (0 for 8).
        self.head_payload_tail.next = bit_cast::<4, 3>(self.head_payload_len.val().get_bits::<3>(0));
        if !self.head_payload_len.val().get_bits::<3>(0).any() {
            self.head_payload_tail.next = 8.into();
        }
        self.head_final_n.next = self.head_carry.val() + self.head_payload_len.val().get_bits::<3>(0);
        if self.start.val() {
            self.packing.d.next = true;
            self.in_header.d.next = true;
            self.header.d.next = self.head_header.val();
            self.header_beats.d.next = self.head_header_len.val().get_bits::<4>(3);
            self.header_last.d.next = self.head_header_len.val().get_bits::<4>(3) == 1;
            self.header_ends.d.next = !self.head_carry.val().any() & !self.head_payload_len.val().any();
            self.payload_left.d.next = self.head_payload_len.val();
            self.payload_more.d.next = self.head_payload_len.val().any();
            self.payload_last.d.next = self.head_payload_len.val().any() & (self.head_payload_len.val() <= 8);
            self.wants_payload.d.next = false;
            self.spills.d.next = self.head_payload_len.val().any()
                & ((bit_cast::<4, 3>(self.head_carry.val()) + self.head_payload_tail.val()) > 8);
            self.rotation.d.next = bit_cast::<8, 1>(true.into()) << self.head_carry.val();
            self.from_header.d.next = self.ones_64.val();
            self.carry_lanes.d.next = !(self.ones_64.val() << (bit_cast::<64, 3>(self.head_carry.val()) << 3));
            self.final_keep.d.next = !(self.lane_ones.val() << self.head_final_n.val());
            if !self.head_final_n.val().any() {
                self.final_keep.d.next = self.lane_ones.val();
            }
            self.ulpdu_len.d.next = bit_cast::<16, 7>(self.head_header_len.val()) + self.head_payload_len.val();
            self.message_end.d.next = self.head_info.val().get_bit(self.at_last.val().index());
            self.seg_tag.d.next = self.head_info.val().get_bits::<32>(self.at_tag.val().index());
        }

        // The beat: a beat goes out when the output register takes one and, if the beat
        // takes a payload beat, one is there.
        self.load.next = !self.out_valid.q.val() | self.m_axis_tready.val();
        if self.m_axis_tready.val() {
            self.out_valid.d.next = false;
        }
        self.s_rd_tready.next = self.wants_payload.q.val() & self.load.val();
        self.fire.next =
            self.packing.q.val() & self.load.val() & (!self.wants_payload.q.val() | self.s_rd_tvalid.val());
        self.final_beat.next = (self.in_header.q.val() & self.header_last.q.val() & self.header_ends.q.val())
            | (!self.in_header.q.val()
                & (!self.payload_more.q.val() | (self.payload_last.q.val() & !self.spills.q.val())));
        // Lane i of the payload beat goes out in lane i + h (mod 8): a select among eight
        // fixed rotations by the one-hot `rotation`.
        self.rotated.next = 0.into();
        if self.rotation.q.val().get_bit(0) {
            self.rotated.next = self.s_rd_tdata.val();
        }
        for k in 1..8 {
            if self.rotation.q.val().get_bit(k) {
                self.rotated.next = self.rotated.val()
                    | (self.s_rd_tdata.val() << (8 * k).to_bits::<7>())
                    | (self.s_rd_tdata.val() >> (64 - 8 * k).to_bits::<7>());
            }
        }
        // The beat's lanes from the header register or the rotated payload beat.
        self.beat.next = (self.header.q.val().get_bits::<64>(0) & self.from_header.q.val())
            | (self.rotated.val() & !self.from_header.q.val());
        // What the payload left says after this beat.
        self.payload_after_more.next = self.payload_left.q.val() > 8;
        self.payload_after_last.next = (self.payload_left.q.val() > 8) & (self.payload_left.q.val() <= 16);
        if self.fire.val() {
            self.out_valid.d.next = true;
            self.out_data.d.next = self.beat.val();
            self.out_keep.d.next = self.lane_ones.val();
            if self.final_beat.val() {
                self.out_keep.d.next = self.final_keep.q.val();
            }
            self.out_last.d.next = self.final_beat.val();
            self.out_user.d.next = self.ulpdu_len.q.val();
            self.out_tid.d.next = self.seg_tag.q.val();
            if self.in_header.q.val() {
                // The next header beat, or the carried octets.
                self.header.d.next = self.header.q.val() >> 64;
                self.header_beats.d.next = self.header_beats.q.val() - 1;
                self.header_last.d.next = self.header_beats.q.val() == 2;
                if self.header_last.q.val() {
                    self.in_header.d.next = false;
                    self.from_header.d.next = self.carry_lanes.q.val();
                    self.wants_payload.d.next = self.payload_more.q.val();
                }
            }
            if self.wants_payload.q.val() {
                // The payload beat's last h octets are carried over to the next beat.
                self.header.d.next = bit_cast::<576, 64>(self.rotated.val());
                self.payload_left.d.next = self.payload_left.q.val() - 8;
                self.payload_more.d.next = self.payload_after_more.val();
                self.payload_last.d.next = self.payload_after_last.val();
                self.wants_payload.d.next = self.payload_after_more.val();
            }
            if self.final_beat.val() {
                self.packing.d.next = false;
                self.done_valid.d.next = self.message_end.q.val();
                self.done_tag.d.next = self.seg_tag.q.val();
            }
        }
        if self.reset.val() {
            self.walk.d.next = false;
            self.req_valid.d.next = false;
            self.packing.d.next = false;
            self.wants_payload.d.next = false;
            self.out_valid.d.next = false;
            self.done_valid.d.next = false;
        }
        self.m_axis_tdata.next = self.out_data.q.val();
        self.m_axis_tkeep.next = self.out_keep.q.val();
        self.m_axis_tlast.next = self.out_last.q.val();
        self.m_axis_tuser.next = self.out_user.q.val();
        self.m_axis_tid.next = self.out_tid.q.val();
        self.m_axis_tvalid.next = self.out_valid.q.val();
        self.m_done_valid.next = self.done_valid.q.val();
        self.m_done_tag.next = self.done_tag.q.val();
        self.walk_tag_next.next = self.tag.q.val();
        if self.s_job_valid.val() & !self.walk.q.val() {
            self.walk_tag_next.next = self.s_job_tag.val();
        }
        self.walking.next = self.walk.q.val();
    }
}
