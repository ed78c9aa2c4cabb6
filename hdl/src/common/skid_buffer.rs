//! A register slice for a valid/ready stream with a registered `s_ready`: the boundary
//! between two blocks, so that no combinational path runs across it in either direction
//! (the role of verilog-axis `axis_register` with REG_TYPE=2).
//!
//! Two registers of `W` bits: the output word (`m_data`, valid while `m_valid`) and a
//! skid word. `s_ready` is the skid word being empty, so it depends on nothing but this
//! block's own registers. A word offered while the output is stalled lands in the skid
//! word and `s_ready` falls a cycle later; when the output moves again the skid word goes
//! out first. One word per cycle flows through while `m_ready` stays high; a word taken
//! at `s_*` is offered at `m_*` from the next cycle on.
use rust_hdl::prelude::*;

/// `W` bits of payload (the user packs data, last, user, ... into it).
#[derive(LogicBlock, Default)]
pub struct SkidBuffer<const W: usize> {
    pub clock: Signal<In, Clock>,
    pub reset: Signal<In, Bit>,
    pub s_valid: Signal<In, Bit>,
    pub s_ready: Signal<Out, Bit>,
    pub s_data: Signal<In, Bits<W>>,
    pub m_valid: Signal<Out, Bit>,
    pub m_ready: Signal<In, Bit>,
    pub m_data: Signal<Out, Bits<W>>,
    out_valid: DFF<Bit>,
    out_data: DFF<Bits<W>>,
    skid_valid: DFF<Bit>,
    skid_data: DFF<Bits<W>>,
    /// The output word leaves or the output is empty: it can be loaded this cycle.
    out_free: Signal<Local, Bit>,
    /// A word is taken at the input this cycle.
    take: Signal<Local, Bit>,
}

impl<const W: usize> Logic for SkidBuffer<W> {
    #[hdl_gen]
    fn update(&mut self) {
        dff_setup!(self, clock, out_valid, out_data, skid_valid, skid_data);
        self.s_ready.next = !self.skid_valid.q.val();
        self.m_valid.next = self.out_valid.q.val();
        self.m_data.next = self.out_data.q.val();
        self.out_free.next = !self.out_valid.q.val() | self.m_ready.val();
        self.take.next = self.s_valid.val() & !self.skid_valid.q.val();
        // The output word: the skid word first, else the word taken now, else empty. The
        // skid word: the word taken now when the output cannot take it. (While the skid
        // word is full nothing is taken, so the two never compete.) The skid word follows
        // the input while it is empty, so its load enable is a register, not the
        // producer's valid: a wide slice's enable fans out to every bit.
        if self.out_free.val() & self.skid_valid.q.val() {
            self.out_data.d.next = self.skid_data.q.val();
        }
        if self.out_free.val() & !self.skid_valid.q.val() {
            self.out_data.d.next = self.s_data.val();
        }
        if self.out_free.val() {
            self.out_valid.d.next = self.skid_valid.q.val() | self.take.val();
            self.skid_valid.d.next = false;
        }
        if !self.skid_valid.q.val() {
            self.skid_data.d.next = self.s_data.val();
        }
        if !self.out_free.val() & self.take.val() {
            self.skid_valid.d.next = true;
        }
        if self.reset.val() {
            self.out_valid.d.next = false;
            self.skid_valid.d.next = false;
        }
    }
}
