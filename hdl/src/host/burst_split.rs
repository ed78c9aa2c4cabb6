//! Cuts a run of 64-bit beats into AXI4 INCR bursts: none crosses a 4 KiB boundary (an
//! AXI rule) or exceeds 256 beats. Drives one address channel (AR or AW).
//!
//! The DMA write path cuts its W beats the same way, by the same two rules, so the two
//! sides agree on where each burst ends without passing lengths between them.
//!
//! Each burst is planned a cycle before it leaves: its length and whether it ends the run
//! are registers, made as the run is accepted (from the request) and, for a run of several
//! bursts, in the cycle after each burst leaves (from the registered address and beats
//! left). Issuing a burst only adds its length to the address and takes it from the beats
//! left. A run of one burst leaves as soon as before; each later burst of a run waits one
//! cycle for its plan, which its own data (tens to hundreds of beats) hides.
use rust_hdl::prelude::*;

/// The most beats of one AXI4 INCR burst: half a 4 KiB page of eight-octet beats.
const MAX_BURST_BEATS: u64 = 256;

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
    /// A run is being cut: its next burst's address and the beats not yet in a burst.
    busy: DFF<Bit>,
    next_addr: DFF<Bits<64>>,
    beats_left: DFF<Bits<32>>,
    /// The next burst's plan: made (`planned`), its beats, and whether it ends the run.
    planned: DFF<Bit>,
    plan_beats: DFF<Bits<9>>,
    plan_last: DFF<Bit>,
    valid: DFF<Bit>,
    addr: DFF<Bits<64>>,
    len: DFF<Bits<8>>,
    // The plan of a burst at `from_addr` with `from_beats` to go: the beats to the 4 KiB
    // boundary or 256 (whichever is fewer: `room`), or all that is left if they fit.
    from_addr: Signal<Local, Bits<12>>,
    from_beats: Signal<Local, Bits<32>>,
    room: Signal<Local, Bits<9>>,
    fits: Signal<Local, Bit>,
    max_burst: Constant<Bits<9>>,
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
            planned: Default::default(),
            plan_beats: Default::default(),
            plan_last: Default::default(),
            valid: Default::default(),
            addr: Default::default(),
            len: Default::default(),
            from_addr: Default::default(),
            from_beats: Default::default(),
            room: Default::default(),
            fits: Default::default(),
            max_burst: Constant::new(MAX_BURST_BEATS.to_bits()),
        }
    }
}

impl Logic for BurstSplit {
    #[hdl_gen]
    fn update(&mut self) {
        dff_setup!(self, clock, busy, next_addr, beats_left, planned, plan_beats, plan_last, valid, addr, len);
        self.s_ready.next = !self.busy.q.val();
        // The plan, from the request as it is accepted, else from the run's registers.
        self.from_addr.next = self.next_addr.q.val().get_bits::<12>(0);
        self.from_beats.next = self.beats_left.q.val();
        if !self.busy.q.val() {
            self.from_addr.next = self.s_addr.val().get_bits::<12>(0);
            self.from_beats.next = self.s_beats.val();
        }
        // In the upper half of a page the boundary is nearer than 256 beats: 256 less the
        // beat's place in that half.
        self.room.next = self.max_burst.val();
        if self.from_addr.val().get_bit(11) {
            self.room.next = self.max_burst.val() - bit_cast::<9, 8>(self.from_addr.val().get_bits::<8>(3));
        }
        self.fits.next = !self.from_beats.val().get_bits::<23>(9).any()
            & (bit_cast::<9, 32>(self.from_beats.val()) <= self.room.val());
        if !self.busy.q.val() | !self.planned.q.val() {
            self.planned.d.next = true;
            self.plan_last.d.next = self.fits.val();
            self.plan_beats.d.next = self.room.val();
            if self.fits.val() {
                self.plan_beats.d.next = bit_cast::<9, 32>(self.from_beats.val());
            }
        }
        if self.s_valid.val() & !self.busy.q.val() {
            self.busy.d.next = true;
            self.next_addr.d.next = self.s_addr.val();
            self.beats_left.d.next = self.s_beats.val();
        }
        if self.m_ready.val() {
            self.valid.d.next = false;
        }
        if self.busy.q.val() & self.planned.q.val() & (!self.valid.q.val() | self.m_ready.val()) {
            self.valid.d.next = true;
            self.addr.d.next = self.next_addr.q.val();
            self.len.d.next = bit_cast::<8, 9>(self.plan_beats.q.val() - 1);
            self.next_addr.d.next = self.next_addr.q.val() + (bit_cast::<64, 9>(self.plan_beats.q.val()) << 3);
            self.beats_left.d.next = self.beats_left.q.val() - bit_cast::<32, 9>(self.plan_beats.q.val());
            self.busy.d.next = !self.plan_last.q.val();
            self.planned.d.next = false;
        }
        if self.reset.val() {
            self.busy.d.next = false;
            self.planned.d.next = false;
            self.valid.d.next = false;
        }
        self.m_addr.next = self.addr.q.val();
        self.m_len.next = self.len.q.val();
        self.m_valid.next = self.valid.q.val();
    }
}
