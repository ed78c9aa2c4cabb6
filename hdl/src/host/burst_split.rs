//! Cuts a run of 64-bit beats into AXI4 INCR bursts: none crosses a 4 KiB boundary (an
//! AXI rule) or exceeds 256 beats. Drives one address channel (AR or AW).
//!
//! The DMA write path cuts its W beats the same way, by the same two rules, so the two
//! sides agree on where each burst ends without passing lengths between them.
use rust_hdl::prelude::*;

#[derive(LogicBlock)]
pub struct BurstSplit {
    pub clock: Signal<In, Clock>,
    pub reset: Signal<In, Bit>,
    /// A run: its first beat's address (8-aligned) and its beats (at least one).
    pub s_valid: Signal<In, Bit>,
    pub s_ready: Signal<Out, Bit>,
    pub s_addr: Signal<In, Bits<64>>,
    pub s_beats: Signal<In, Bits<32>>,
    /// The address channel.
    pub m_addr: Signal<Out, Bits<64>>,
    pub m_len: Signal<Out, Bits<8>>,
    pub m_valid: Signal<Out, Bit>,
    pub m_ready: Signal<In, Bit>,
    busy: DFF<Bit>,
    next_addr: DFF<Bits<64>>,
    beats_left: DFF<Bits<32>>,
    valid: DFF<Bit>,
    addr: DFF<Bits<64>>,
    len: DFF<Bits<8>>,
    to_boundary: Signal<Local, Bits<32>>,
    burst: Signal<Local, Bits<32>>,
    page: Constant<Bits<13>>,
}

impl Default for BurstSplit {
    fn default() -> Self {
        BurstSplit {
            clock: Default::default(),
            reset: Default::default(),
            s_valid: Default::default(),
            s_ready: Default::default(),
            s_addr: Default::default(),
            s_beats: Default::default(),
            m_addr: Default::default(),
            m_len: Default::default(),
            m_valid: Default::default(),
            m_ready: Default::default(),
            busy: Default::default(),
            next_addr: Default::default(),
            beats_left: Default::default(),
            valid: Default::default(),
            addr: Default::default(),
            len: Default::default(),
            to_boundary: Default::default(),
            burst: Default::default(),
            page: Constant::new(0x1000_u64.to_bits()),
        }
    }
}

impl Logic for BurstSplit {
    #[hdl_gen]
    fn update(&mut self) {
        dff_setup!(self, clock, busy, next_addr, beats_left, valid, addr, len);
        self.s_ready.next = !self.busy.q.val();
        if self.s_valid.val() & !self.busy.q.val() {
            self.busy.d.next = true;
            self.next_addr.d.next = self.s_addr.val();
            self.beats_left.d.next = self.s_beats.val();
        }
        // The next burst: what is left, up to the 4 KiB boundary, at most 256 beats.
        self.to_boundary.next =
            bit_cast::<32, 13>(self.page.val() - bit_cast::<13, 12>(self.next_addr.q.val().get_bits::<12>(0))) >> 3;
        self.burst.next = self.beats_left.q.val();
        if self.to_boundary.val() < self.burst.val() {
            self.burst.next = self.to_boundary.val();
        }
        if self.burst.val() > 256 {
            self.burst.next = 256.into();
        }
        if self.m_ready.val() {
            self.valid.d.next = false;
        }
        if self.busy.q.val() & (!self.valid.q.val() | self.m_ready.val()) {
            self.valid.d.next = true;
            self.addr.d.next = self.next_addr.q.val();
            self.len.d.next = bit_cast::<8, 32>(self.burst.val() - 1);
            self.next_addr.d.next = self.next_addr.q.val() + bit_cast::<64, 32>(self.burst.val() << 3);
            self.beats_left.d.next = self.beats_left.q.val() - self.burst.val();
            self.busy.d.next = self.beats_left.q.val() != self.burst.val();
        }
        if self.reset.val() {
            self.busy.d.next = false;
            self.valid.d.next = false;
        }
        self.m_addr.next = self.addr.q.val();
        self.m_len.next = self.len.q.val();
        self.m_valid.next = self.valid.q.val();
    }
}
