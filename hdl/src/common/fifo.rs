//! A small first-in first-out queue in registers (eight entries of `W` bits), for the
//! short queues between engines: tags that follow packets through a pipeline, jobs
//! waiting for a shared unit. `m_data` is the oldest entry, valid while `m_valid`.
use rust_hdl::prelude::*;

/// Entries.
const FIFO_DEPTH: usize = 8;

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
    count: Signal<Local, Bits<4>>,
}

impl<const W: usize> Logic for SmallFifo<W> {
    #[hdl_gen]
    fn update(&mut self) {
        dff_setup!(self, clock, head, tail);
        for i in 0..FIFO_DEPTH {
            self.entries[i].clock.next = self.clock.val();
            self.entries[i].d.next = self.entries[i].q.val();
        }
        self.count.next = self.tail.q.val() - self.head.q.val();
        self.s_ready.next = self.count.val() != 8;
        self.m_valid.next = self.count.val() != 0;
        self.m_data.next = self.entries[0].q.val();
        for i in 1..FIFO_DEPTH {
            if self.head.q.val().get_bits::<3>(0).index() == i {
                self.m_data.next = self.entries[i].q.val();
            }
        }
        if self.s_valid.val() & (self.count.val() != 8) {
            for i in 0..FIFO_DEPTH {
                if self.tail.q.val().get_bits::<3>(0).index() == i {
                    self.entries[i].d.next = self.s_data.val();
                }
            }
            self.tail.d.next = self.tail.q.val() + 1;
        }
        if self.m_ready.val() & (self.count.val() != 0) {
            self.head.d.next = self.head.q.val() + 1;
        }
        if self.reset.val() {
            self.head.d.next = 0.into();
            self.tail.d.next = 0.into();
        }
    }
}
