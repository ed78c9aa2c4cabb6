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
//! appends a segment's payload to its header octet by octet, eight per beat, through a
//! 16-octet accumulator.
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
/// A queued segment: its header (576 bits) and its info (56: header length, payload
/// length, last of the message, tag; see `info_word`).
const HEADER_BITS: usize = 576;
const SEGMENT_BITS: usize = HEADER_BITS + 56;

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
    /// The tag of the message being walked (valid while `walking`), and the order to drop
    /// the rest of it.
    pub walk_tag: Signal<Out, Bits<32>>,
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
    /// ULPDUs.
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
    header: DFF<Bits<576>>,
    header_left: DFF<Bits<7>>,
    payload_left: DFF<Bits<16>>,
    ulpdu_len: DFF<Bits<16>>,
    message_end: DFF<Bit>,
    seg_tag: DFF<Bits<32>>,
    acc: DFF<Bits<128>>,
    acc_n: DFF<Bits<5>>,
    /// The octets of the next header chunk and payload beat, and their masks, set a
    /// cycle ahead: every chunk and beat is eight octets but a segment's last, whose
    /// length its first cycle knows (the tail: the length mod 8, or 8).
    chunk_n: DFF<Bits<5>>,
    chunk_mask: DFF<Bits<64>>,
    rd_bytes: DFF<Bits<5>>,
    rd_mask: DFF<Bits<64>>,
    header_tail: DFF<Bits<5>>,
    payload_tail: DFF<Bits<5>>,
    /// Whether the header / the payload is all taken (`header_left` / `payload_left` at
    /// zero), set a cycle ahead.
    header_done: DFF<Bit>,
    payload_done: DFF<Bit>,
    out_valid: DFF<Bit>,
    out_data: DFF<Bits<64>>,
    out_keep: DFF<Bits<8>>,
    out_last: DFF<Bit>,
    out_user: DFF<Bits<16>>,
    out_tid: DFF<Bits<32>>,
    done_valid: DFF<Bit>,
    done_tag: DFF<Bits<32>>,
    // Walker signals.
    info_word: Signal<Local, Bits<56>>,
    /// Where a queued segment's info starts.
    at_info: Constant<Bits<16>>,
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
    head_info: Signal<Local, Bits<56>>,
    load: Signal<Local, Bit>,
    emit_n: Signal<Local, Bits<5>>,
    emit_full: Signal<Local, Bit>,
    emit_rest: Signal<Local, Bit>,
    /// Room behind what stays for a piece (a header chunk or a payload beat), the piece,
    /// and the accumulator with it appended when nothing leaves or eight octets leave.
    room: Signal<Local, Bit>,
    piece: Signal<Local, Bits<64>>,
    piece_n: Signal<Local, Bits<5>>,
    stay_none: Signal<Local, Bits<128>>,
    stay_after: Signal<Local, Bits<128>>,
    chunk: Signal<Local, Bits<64>>,
    /// A new segment's tails, and its first chunk's and beat's octets.
    head_header_tail: Signal<Local, Bits<5>>,
    head_payload_tail: Signal<Local, Bits<5>>,
    head_chunk_n: Signal<Local, Bits<5>>,
    head_rd_bytes: Signal<Local, Bits<5>>,
    /// The next chunk's and beat's octets once this one is taken.
    next_chunk_n: Signal<Local, Bits<5>>,
    next_rd_bytes: Signal<Local, Bits<5>>,
    take_header: Signal<Local, Bit>,
    take_payload: Signal<Local, Bit>,
    finished: Signal<Local, Bit>,
    rd_data: Signal<Local, Bits<64>>,
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
            walk_tag: Default::default(),
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
            header: Default::default(),
            header_left: Default::default(),
            payload_left: Default::default(),
            ulpdu_len: Default::default(),
            message_end: Default::default(),
            seg_tag: Default::default(),
            acc: Default::default(),
            acc_n: Default::default(),
            header_tail: Default::default(),
            payload_tail: Default::default(),
            header_done: Default::default(),
            payload_done: Default::default(),
            head_header_tail: Default::default(),
            head_payload_tail: Default::default(),
            head_chunk_n: Default::default(),
            head_rd_bytes: Default::default(),
            next_chunk_n: Default::default(),
            next_rd_bytes: Default::default(),
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
            load: Default::default(),
            emit_n: Default::default(),
            emit_full: Default::default(),
            emit_rest: Default::default(),
            room: Default::default(),
            piece: Default::default(),
            piece_n: Default::default(),
            stay_none: Default::default(),
            stay_after: Default::default(),
            chunk: Default::default(),
            chunk_n: Default::default(),
            take_header: Default::default(),
            take_payload: Default::default(),
            rd_bytes: Default::default(),
            finished: Default::default(),
            chunk_mask: Default::default(),
            rd_mask: Default::default(),
            rd_data: Default::default(),
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
            header,
            header_left,
            payload_left,
            ulpdu_len,
            message_end,
            seg_tag,
            acc,
            acc_n,
            chunk_n,
            chunk_mask,
            rd_bytes,
            rd_mask,
            header_tail,
            payload_tail,
            header_done,
            payload_done,
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
        // Info: header length (7 bits), payload length (16), last of the message (1), tag (32).
        self.info_word.next = bit_cast::<56, 7>(self.header_len.val())
            | (bit_cast::<56, 16>(self.seg_len.val().get_bits::<16>(0)) << 7)
            | (bit_cast::<56, 1>(self.last.val().into()) << 23)
            | (bit_cast::<56, 32>(self.tag.q.val()) << 24);
        self.segments.s_valid.next = self.push.val();
        self.segments.s_data.next = bit_cast::<SEGMENT_BITS, HEADER_BITS>(self.built.val())
            | (bit_cast::<SEGMENT_BITS, 56>(self.info_word.val()) << self.at_info.val());
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

        // Packer: start the next segment.
        self.head_header.next = self.segments_out.m_data.val().get_bits::<HEADER_BITS>(0);
        self.head_info.next = self.segments_out.m_data.val().get_bits::<56>(self.at_info.val().index());
        self.segments_out.m_ready.next = !self.packing.q.val();
        // A segment's tails, and its first chunk and beat: eight octets, or the tail.
        self.head_header_tail.next = bit_cast::<5, 3>(self.head_info.val().get_bits::<3>(0));
        if !self.head_info.val().get_bits::<3>(0).any() {
            self.head_header_tail.next = 8.into();
        }
        self.head_payload_tail.next = bit_cast::<5, 3>(self.head_info.val().get_bits::<3>(7));
        if !self.head_info.val().get_bits::<3>(7).any() {
            self.head_payload_tail.next = 8.into();
        }
        self.head_chunk_n.next = self.head_header_tail.val();
        if self.head_info.val().get_bits::<4>(3).any() {
            self.head_chunk_n.next = 8.into();
        }
        self.head_rd_bytes.next = self.head_payload_tail.val();
        if self.head_info.val().get_bits::<13>(10).any() {
            self.head_rd_bytes.next = 8.into();
        }
        self.done_valid.d.next = false;
        // A void segment (no header) only ends its message.
        if !self.packing.q.val() & self.segments_out.m_valid.val() & !self.head_info.val().get_bits::<7>(0).any() {
            self.done_valid.d.next = true;
            self.done_tag.d.next = self.head_info.val().get_bits::<32>(24);
        }
        if !self.packing.q.val() & self.segments_out.m_valid.val() & self.head_info.val().get_bits::<7>(0).any() {
            self.packing.d.next = true;
            self.header.d.next = self.head_header.val();
            self.header_left.d.next = self.head_info.val().get_bits::<7>(0);
            self.payload_left.d.next = self.head_info.val().get_bits::<16>(7);
            self.ulpdu_len.d.next =
                bit_cast::<16, 7>(self.head_info.val().get_bits::<7>(0)) + self.head_info.val().get_bits::<16>(7);
            self.message_end.d.next = self.head_info.val().get_bit(23);
            self.seg_tag.d.next = self.head_info.val().get_bits::<32>(24);
            self.header_done.d.next = false;
            self.payload_done.d.next = !self.head_info.val().get_bits::<16>(7).any();
            self.header_tail.d.next = self.head_header_tail.val();
            self.payload_tail.d.next = self.head_payload_tail.val();
            self.chunk_n.d.next = self.head_chunk_n.val();
            self.rd_bytes.d.next = self.head_rd_bytes.val();
            self.chunk_mask.d.next = !(self.ones_64.val() << (bit_cast::<64, 5>(self.head_chunk_n.val()) << 3));
            self.rd_mask.d.next = !(self.ones_64.val() << (bit_cast::<64, 5>(self.head_rd_bytes.val()) << 3));
        }
        // After a chunk or beat: eight more octets if at least 16 were left, else the tail.
        self.next_chunk_n.next = self.header_tail.q.val();
        if self.header_left.q.val() >= 16 {
            self.next_chunk_n.next = 8.into();
        }
        self.next_rd_bytes.next = self.payload_tail.q.val();
        if self.payload_left.q.val() >= 16 {
            self.next_rd_bytes.next = 8.into();
        }
        // The output register takes a beat when empty or being emptied.
        self.load.next = !self.out_valid.q.val() | self.m_axis_tready.val();
        if self.m_axis_tready.val() {
            self.out_valid.d.next = false;
        }
        self.finished.next = self.header_done.q.val() & self.payload_done.q.val();
        // The beat out: eight octets once there are eight, or the segment's rest at its end
        // (after which nothing stays: the accumulator holds nothing past `acc_n`).
        self.emit_full.next = self.packing.q.val() & self.load.val() & (self.acc_n.q.val() >= 8);
        self.emit_rest.next = self.packing.q.val() & self.load.val() & (self.acc_n.q.val() < 8) & self.finished.val();
        self.emit_n.next = 0.into();
        if self.emit_full.val() {
            self.emit_n.next = 8.into();
        }
        if self.emit_rest.val() {
            self.emit_n.next = self.acc_n.q.val();
        }
        // Then append the next header chunk or payload beat, if it fits behind what stays
        // (it always does once eight octets leave). Octets past a chunk's end must not
        // reach the accumulator.
        self.chunk.next = self.header.q.val().get_bits::<64>(0) & self.chunk_mask.q.val();
        self.rd_data.next = self.s_rd_tdata.val() & self.rd_mask.q.val();
        self.room.next = self.emit_full.val() | self.emit_rest.val() | (self.acc_n.q.val() <= 8);
        self.take_header.next = self.packing.q.val() & !self.header_done.q.val() & self.room.val();
        self.take_payload.next = self.packing.q.val()
            & self.header_done.q.val()
            & !self.payload_done.q.val()
            & self.room.val()
            & self.s_rd_tvalid.val();
        self.s_rd_tready.next =
            self.packing.q.val() & self.header_done.q.val() & !self.payload_done.q.val() & self.room.val();
        // The accumulator's next value in each case, each from registers (what stays, and
        // the piece appended behind it at a shift known from `acc_n`); the beat's
        // decisions pick one at the end.
        self.piece.next = self.rd_data.val();
        self.piece_n.next = self.rd_bytes.q.val();
        if !self.header_done.q.val() {
            self.piece.next = self.chunk.val();
            self.piece_n.next = self.chunk_n.q.val();
        }
        self.stay_none.next =
            self.acc.q.val() | (bit_cast::<128, 64>(self.piece.val()) << (bit_cast::<128, 5>(self.acc_n.q.val()) << 3));
        self.stay_after.next = (self.acc.q.val() >> 64)
            | (bit_cast::<128, 64>(self.piece.val()) << (bit_cast::<128, 5>(self.acc_n.q.val() - 8) << 3));
        self.acc.d.next = self.acc.q.val();
        self.acc_n.d.next = self.acc_n.q.val();
        if self.emit_full.val() {
            self.acc.d.next = self.acc.q.val() >> 64;
            self.acc_n.d.next = self.acc_n.q.val() - 8;
        }
        if self.emit_rest.val() {
            self.acc.d.next = 0.into();
            self.acc_n.d.next = 0.into();
        }
        if self.take_header.val() | self.take_payload.val() {
            self.acc.d.next = self.stay_none.val();
            self.acc_n.d.next = self.acc_n.q.val() + self.piece_n.val();
            if self.emit_full.val() {
                self.acc.d.next = self.stay_after.val();
                self.acc_n.d.next = self.acc_n.q.val() - 8 + self.piece_n.val();
            }
            if self.emit_rest.val() {
                self.acc.d.next = bit_cast::<128, 64>(self.piece.val());
                self.acc_n.d.next = self.piece_n.val();
            }
        }
        if self.take_header.val() {
            self.header.d.next = self.header.q.val() >> 64;
            self.header_left.d.next = self.header_left.q.val() - bit_cast::<7, 5>(self.chunk_n.q.val());
            self.chunk_n.d.next = self.next_chunk_n.val();
            self.header_done.d.next = self.header_left.q.val() <= 8;
            self.chunk_mask.d.next = !(self.ones_64.val() << (bit_cast::<64, 5>(self.next_chunk_n.val()) << 3));
        }
        if self.take_payload.val() {
            self.payload_left.d.next = self.payload_left.q.val() - bit_cast::<16, 5>(self.rd_bytes.q.val());
            self.rd_bytes.d.next = self.next_rd_bytes.val();
            self.payload_done.d.next = self.payload_left.q.val() <= 8;
            self.rd_mask.d.next = !(self.ones_64.val() << (bit_cast::<64, 5>(self.next_rd_bytes.val()) << 3));
        }
        if self.emit_n.val().any() {
            self.out_valid.d.next = true;
            self.out_data.d.next = self.acc.q.val().get_bits::<64>(0);
            self.out_keep.d.next = !(self.lane_ones.val() << bit_cast::<8, 5>(self.emit_n.val()));
            self.out_last.d.next = self.finished.val() & (self.acc_n.q.val() == self.emit_n.val());
            self.out_user.d.next = self.ulpdu_len.q.val();
            self.out_tid.d.next = self.seg_tag.q.val();
            if self.finished.val() & (self.acc_n.q.val() == self.emit_n.val()) {
                self.packing.d.next = false;
                self.done_valid.d.next = self.message_end.q.val();
                self.done_tag.d.next = self.seg_tag.q.val();
            }
        }
        if self.reset.val() {
            self.walk.d.next = false;
            self.req_valid.d.next = false;
            self.packing.d.next = false;
            self.acc_n.d.next = 0.into();
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
        self.walk_tag.next = self.tag.q.val();
        self.walking.next = self.walk.q.val();
    }
}
