//! A small first-in first-out queue in registers (eight entries of `W` bits and the head
//! register), for the short queues between engines: tags that follow packets through a
//! pipeline, jobs waiting for a shared unit. `m_data` is the oldest entry, valid while
//! `m_valid`.
//!
//! Both come straight from registers: the oldest entry waits in the head register, the
//! rest in the entries. As the head is taken (or while it is empty) it is refilled from the
//! oldest entry, or straight from `s_data` when there is none, so a word pushed into an
//! empty queue is out the next cycle, and a taken head is replaced the next cycle. The
//! consumer's logic thus starts at a register, not at an eight-way select of the entries.
use rust_hdl::prelude::*;

/// Entries behind the head register.
const FIFO_DEPTH: usize = 8;
const _: () = assert!(FIFO_DEPTH == 8, "the head's select lists eight entries");

#[derive(LogicBlock, Default)]
pub struct SmallFifo<const W: usize> {
    pub clock: Signal<In, Clock>,
    pub reset: Signal<In, Bit>,
    pub s_valid: Signal<In, Bit>,
    pub s_ready: Signal<Out, Bit>,
    pub s_data: Signal<In, Bits<W>>,
    pub m_valid: Signal<Out, Bit>,
    pub m_ready: Signal<In, Bit>,
    pub m_data: Signal<Out, Bits<W>>,
    entries: [DFF<Bits<W>>; FIFO_DEPTH],
    head: DFF<Bits<4>>,
    tail: DFF<Bits<4>>,
    out_data: DFF<Bits<W>>,
    out_valid: DFF<Bit>,
    count: Signal<Local, Bits<4>>,
    /// Entries are waiting; the head register takes one this cycle; the push goes
    /// straight into the head register.
    waiting: Signal<Local, Bit>,
    refill: Signal<Local, Bit>,
    bypass: Signal<Local, Bit>,
    push: Signal<Local, Bit>,
    oldest: Signal<Local, Bits<W>>,
}

impl<const W: usize> Logic for SmallFifo<W> {
    #[hdl_gen]
    fn update(&mut self) {
        dff_setup!(self, clock, head, tail, out_data, out_valid);
        for i in 0..FIFO_DEPTH {
            self.entries[i].clock.next = self.clock.val();
            self.entries[i].d.next = self.entries[i].q.val();
        }
        self.count.next = self.tail.q.val() - self.head.q.val();
        self.waiting.next = self.count.val() != 0;
        self.s_ready.next = self.count.val() != 8;
        self.push.next = self.s_valid.val() & (self.count.val() != 8);
        self.refill.next = !self.out_valid.q.val() | self.m_ready.val();
        self.bypass.next = self.refill.val() & !self.waiting.val();
        // (A case, a parallel select: not a chain of overriding ifs. Entry 0 is the
        // default.)
        self.oldest.next = self.entries[0].q.val();
        match self.head.q.val().get_bits::<3>(0).index() {
            1 => self.oldest.next = self.entries[1].q.val(),
            2 => self.oldest.next = self.entries[2].q.val(),
            3 => self.oldest.next = self.entries[3].q.val(),
            4 => self.oldest.next = self.entries[4].q.val(),
            5 => self.oldest.next = self.entries[5].q.val(),
            6 => self.oldest.next = self.entries[6].q.val(),
            7 => self.oldest.next = self.entries[7].q.val(),
            _ => {}
        }
        // (A push that goes straight to the head register is written behind the tail too,
        // not counted: the entries' write enables do not wait for `m_ready`.)
        if self.push.val() {
            for i in 0..FIFO_DEPTH {
                if self.tail.q.val().get_bits::<3>(0).index() == i {
                    self.entries[i].d.next = self.s_data.val();
                }
            }
        }
        if self.push.val() & !self.bypass.val() {
            self.tail.d.next = self.tail.q.val() + 1;
        }
        if self.refill.val() {
            self.out_valid.d.next = self.waiting.val() | self.s_valid.val();
            self.out_data.d.next = self.s_data.val();
            if self.waiting.val() {
                self.out_data.d.next = self.oldest.val();
                self.head.d.next = self.head.q.val() + 1;
            }
        }
        self.m_valid.next = self.out_valid.q.val();
        self.m_data.next = self.out_data.q.val();
        if self.reset.val() {
            self.head.d.next = 0.into();
            self.tail.d.next = 0.into();
            self.out_valid.d.next = false;
        }
    }
}
