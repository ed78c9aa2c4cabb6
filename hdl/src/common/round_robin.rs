//! Round-robin choice: the first requester at or after `start`, else the first one at all.
//! Combinational; the user keeps `start` (one past its last grant) in a register.
use rust_hdl::prelude::*;

/// `N` requesters (at most 256).
#[derive(LogicBlock)]
pub struct RoundRobin<const N: usize> {
    pub requests: Signal<In, Bits<N>>,
    pub start: Signal<In, Bits<8>>,
    /// Whether any requester is chosen, and which.
    pub found: Signal<Out, Bit>,
    pub grant: Signal<Out, Bits<8>>,
    upper: Signal<Local, Bits<N>>,
    from_upper: Signal<Local, Bit>,
    picked: Signal<Local, Bit>,
    ones: Constant<Bits<N>>,
}

impl<const N: usize> Default for RoundRobin<N> {
    fn default() -> Self {
        const { assert!(N >= 2 && N <= 256) };
        RoundRobin {
            requests: Default::default(),
            start: Default::default(),
            found: Default::default(),
            grant: Default::default(),
            upper: Default::default(),
            from_upper: Default::default(),
            picked: Default::default(),
            ones: Constant::new(!Bits::<N>::default()),
        }
    }
}

impl<const N: usize> Logic for RoundRobin<N> {
    #[hdl_gen]
    fn update(&mut self) {
        self.upper.next = self.requests.val() & (self.ones.val() << self.start.val());
        self.from_upper.next = self.upper.val().any();
        self.grant.next = 0.into();
        self.picked.next = false;
        // (The scan only when someone asks: an idle simulation then skips it.)
        if self.requests.val().any() {
            for i in 0..N {
                if !self.picked.val()
                    & ((self.from_upper.val() & self.upper.val().get_bit(i))
                        | (!self.from_upper.val() & self.requests.val().get_bit(i)))
                {
                    self.grant.next = i.to_bits();
                    self.picked.next = true;
                }
            }
        }
        self.found.next = self.picked.val();
    }
}
