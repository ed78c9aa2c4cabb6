//! Payload buffer between the segmenter and the DMA read engine: a segment's payload is
//! requested only when the buffer has room for all of it, so the engine's data stream
//! never waits for the transmit link.
//!
//! Why: the read engine returns every client's data on one stream, in request order. If
//! payload stalled there while the link is held up, the RQ fetch behind it would stall
//! too — and with it the receive engine that drains the peer's link, which may be the very
//! reason this link is held up. Two RNICs sending to each other would deadlock.
//!
//! Room is counted in beats (the engine realigns to lane 0: a request of `n` octets comes
//! back as ⌈n / 8⌉ beats, an empty one as one beat) and reserved when a request leaves. A
//! request larger than the whole buffer waits until the buffer is empty and then streams
//! through, back-pressure and all: MULPDU should stay below the buffer's size (16 KiB at
//! `AB` = 11).
//!
//! Decided a cycle ahead. A request's beats are counted in the cycle it is first offered
//! (`need`, clamped to the buffer's size, and `need_all`), compared with the free room in
//! the next (`fits`), and the request goes out from the cycle after: `s_req_ready` and
//! `m_req_valid` are the offer and the engine's ready gated by that register, so no path
//! runs from the request's length into its acceptance. Room only grows while a request
//! waits (the buffer's own grant is the only thing that takes it), so a `fits` a cycle
//! old is still true. The room is kept as `free` = size − beats reserved, negative while an
//! oversized request's beats are outstanding, so a request fits exactly when its clamped
//! beats are at most `free`: for an oversized one, when nothing is reserved.
use rust_hdl::prelude::*;

use crate::common::{constant, RamFifo};

/// `AB` = buffer address bits (`1 << AB` beats), `AB1` = `AB + 1`.
#[derive(LogicBlock)]
pub struct TxPayload<const AB: usize, const AB1: usize> {
    pub clock: Signal<In, Clock>,
    pub reset: Signal<In, Bit>,
    /// Requests from the segmenter, passed on when they fit.
    pub s_req_valid: Signal<In, Bit>,
    pub s_req_ready: Signal<Out, Bit>,
    pub s_req_addr: Signal<In, Bits<64>>,
    pub s_req_len: Signal<In, Bits<32>>,
    pub m_req_valid: Signal<Out, Bit>,
    pub m_req_ready: Signal<In, Bit>,
    pub m_req_addr: Signal<Out, Bits<64>>,
    pub m_req_len: Signal<Out, Bits<32>>,
    /// Data from the read engine, always taken.
    pub s_rd_tdata: Signal<In, Bits<64>>,
    pub s_rd_tkeep: Signal<In, Bits<8>>,
    pub s_rd_tlast: Signal<In, Bit>,
    pub s_rd_tvalid: Signal<In, Bit>,
    pub s_rd_tready: Signal<Out, Bit>,
    /// Data to the segmenter, at its pace.
    pub m_rd_tdata: Signal<Out, Bits<64>>,
    pub m_rd_tkeep: Signal<Out, Bits<8>>,
    pub m_rd_tlast: Signal<Out, Bit>,
    pub m_rd_tvalid: Signal<Out, Bit>,
    pub m_rd_tready: Signal<In, Bit>,
    buffer: RamFifo<73, AB, AB1>,
    /// The buffer's size less the beats requested and not yet handed to the segmenter
    /// (two's complement: negative while an oversized request's beats are outstanding).
    free: DFF<Bits<32>>,
    /// The request on offer was on offer last cycle too, not granted: `need` and
    /// `need_all` are its beats.
    counted: DFF<Bit>,
    /// The offered request's beats, clamped to the buffer's size; and unclamped.
    need: DFF<Bits<AB1>>,
    need_all: DFF<Bits<32>>,
    /// The request counted last cycle fits (its beats were at most `free`).
    fits: DFF<Bit>,
    /// The request on offer fits: `fits`, and it is the one counted.
    decided: Signal<Local, Bit>,
    beats: Signal<Local, Bits<32>>,
    /// The request on offer has no octets (it still takes a beat).
    empty: Signal<Local, Bit>,
    room: Signal<Local, Bit>,
    granted: Signal<Local, Bit>,
    taken: Signal<Local, Bit>,
    /// The buffer's size in beats.
    size: Constant<Bits<32>>,
}

impl<const AB: usize, const AB1: usize> Default for TxPayload<AB, AB1> {
    fn default() -> Self {
        TxPayload {
            clock: Default::default(),
            reset: Default::default(),
            s_req_valid: Default::default(),
            s_req_ready: Default::default(),
            s_req_addr: Default::default(),
            s_req_len: Default::default(),
            m_req_valid: Default::default(),
            m_req_ready: Default::default(),
            m_req_addr: Default::default(),
            m_req_len: Default::default(),
            s_rd_tdata: Default::default(),
            s_rd_tkeep: Default::default(),
            s_rd_tlast: Default::default(),
            s_rd_tvalid: Default::default(),
            s_rd_tready: Default::default(),
            m_rd_tdata: Default::default(),
            m_rd_tkeep: Default::default(),
            m_rd_tlast: Default::default(),
            m_rd_tvalid: Default::default(),
            m_rd_tready: Default::default(),
            buffer: Default::default(),
            free: Default::default(),
            counted: Default::default(),
            need: Default::default(),
            need_all: Default::default(),
            fits: Default::default(),
            decided: Default::default(),
            beats: Default::default(),
            empty: Default::default(),
            room: Default::default(),
            granted: Default::default(),
            taken: Default::default(),
            size: constant(1 << AB),
        }
    }
}

impl<const AB: usize, const AB1: usize> Logic for TxPayload<AB, AB1> {
    #[hdl_gen]
    fn update(&mut self) {
        dff_setup!(self, clock, free, counted, need, need_all, fits);
        self.buffer.clock.next = self.clock.val();
        self.buffer.reset.next = self.reset.val();

        // First cycle on offer: count the beats (an empty request is one beat).
        self.beats.next = (self.s_req_len.val() + 7) >> 3;
        self.empty.next = !self.s_req_len.val().any();
        self.need_all.d.next = self.beats.val() | bit_cast::<32, 1>(self.empty.val().into());
        self.need.d.next = self.size.val().get_bits::<AB1>(0);
        if self.beats.val() < self.size.val() {
            self.need.d.next = self.beats.val().get_bits::<AB1>(0) | bit_cast::<AB1, 1>(self.empty.val().into());
        }
        // Second: compare them with the room.
        self.room.next = !self.free.q.val().get_bit(31) & (self.need.q.val() <= self.free.q.val().get_bits::<AB1>(0));
        self.fits.d.next = self.counted.q.val() & self.room.val();
        // From the third, it goes out (`counted` is low the cycle after a grant: the offer
        // is the next request, `fits` still the last one's).
        self.decided.next = self.fits.q.val() & self.counted.q.val();
        self.m_req_valid.next = self.s_req_valid.val() & self.decided.val();
        self.s_req_ready.next = self.m_req_ready.val() & self.decided.val();
        self.m_req_addr.next = self.s_req_addr.val();
        self.m_req_len.next = self.s_req_len.val();

        self.granted.next = self.s_req_valid.val() & self.decided.val() & self.m_req_ready.val();
        self.counted.d.next = self.s_req_valid.val() & !self.granted.val();

        self.buffer.s_valid.next = self.s_rd_tvalid.val();
        self.buffer.s_data.next = bit_cast::<73, 64>(self.s_rd_tdata.val())
            | (bit_cast::<73, 8>(self.s_rd_tkeep.val()) << 64)
            | (bit_cast::<73, 1>(self.s_rd_tlast.val().into()) << 72);
        self.s_rd_tready.next = self.buffer.s_ready.val();
        self.m_rd_tvalid.next = self.buffer.m_valid.val();
        self.m_rd_tdata.next = self.buffer.m_data.val().get_bits::<64>(0);
        self.m_rd_tkeep.next = self.buffer.m_data.val().get_bits::<8>(64);
        self.m_rd_tlast.next = self.buffer.m_data.val().get_bit(72);
        self.buffer.m_ready.next = self.m_rd_tready.val();
        self.taken.next = self.buffer.m_valid.val() & self.m_rd_tready.val();

        // Room: reserved when a request goes out, given back as the segmenter takes beats.
        self.free.d.next = self.free.q.val() + bit_cast::<32, 1>(self.taken.val().into());
        if self.granted.val() {
            self.free.d.next = self.free.q.val() - self.need_all.q.val() + bit_cast::<32, 1>(self.taken.val().into());
        }
        if self.reset.val() {
            self.free.d.next = self.size.val();
            self.fits.d.next = false;
            self.counted.d.next = false;
        }
    }
}
