//! A delay line of `N` registers that advance together when `ce` is high, so that data
//! travels beside a pipeline with the same stall behaviour and arrives with its results.
use rust_hdl::prelude::*;

/// `W` bits delayed by `N` enabled clock edges; `reset` clears every stage.
#[derive(LogicBlock)]
pub struct Pipe<const W: usize, const N: usize> {
    pub clock: Signal<In, Clock>,
    pub reset: Signal<In, Bit>,
    pub ce: Signal<In, Bit>,
    pub d: Signal<In, Bits<W>>,
    pub q: Signal<Out, Bits<W>>,
    stages: [DFF<Bits<W>>; N],
}

impl<const W: usize, const N: usize> Default for Pipe<W, N> {
    fn default() -> Self {
        const { assert!(N >= 1) };
        Self {
            clock: Default::default(),
            reset: Default::default(),
            ce: Default::default(),
            d: Default::default(),
            q: Default::default(),
            stages: std::array::from_fn(|_| Default::default()),
        }
    }
}

impl<const W: usize, const N: usize> Logic for Pipe<W, N> {
    #[hdl_gen]
    fn update(&mut self) {
        for i in 0..N {
            self.stages[i].clock.next = self.clock.val();
            self.stages[i].d.next = self.stages[i].q.val();
        }
        if self.ce.val() {
            self.stages[0].d.next = self.d.val();
            for i in 1..N {
                self.stages[i].d.next = self.stages[i - 1].q.val();
            }
        }
        if self.reset.val() {
            for i in 0..N {
                self.stages[i].d.next = 0.into();
            }
        }
        for i in (N - 1)..N {
            self.q.next = self.stages[i].q.val();
        }
    }
}
