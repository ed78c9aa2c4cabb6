//! `common/bit_fifo` in Verilator (`BitFifo<5, 6, 32>`), against a queue of at most 32
//! bits. Every cycle: `m_valid` exactly when a bit is held, `m_data` the oldest,
//! `s_ready` exactly when fewer than 32 are held, and neither depends on this cycle's
//! `s_valid` or `m_ready` (both are registers). Random `s_valid`/`m_ready` in
//! changing regimes, filling it and draining it; no bit lost, duplicated or reordered; one
//! bit per cycle when both sides stream, a bit pushed into the empty queue is out the next
//! cycle; a reset in the middle empties it.
use std::collections::VecDeque;

use rand::rngs::StdRng;
use rand::{Rng, SeedableRng};
use rnic_sim::{trace, Model, Port};

/// Bits the queue holds at most.
const HOLD: usize = 32;

struct Bench {
    m: Model,
    s_valid: Port,
    s_ready: Port,
    s_data: Port,
    m_valid: Port,
    m_ready: Port,
    m_data: Port,
    reset: Port,
    rng: StdRng,
    cycle: u64,
    queue: VecDeque<bool>,
    pushed: u64,
    popped: u64,
    full_cycles: u64,
}

impl Bench {
    fn new(seed: u64) -> Bench {
        let mut m = Model::new("rnic_common_bit_fifo").expect("rnic_common_bit_fifo model");
        let port = |name| m.port(name);
        let (s_valid, s_ready, s_data) = (port("s_valid"), port("s_ready"), port("s_data"));
        let (m_valid, m_ready, m_data, reset) = (port("m_valid"), port("m_ready"), port("m_data"), port("reset"));
        m.reset_for(2);
        Bench {
            m,
            s_valid,
            s_ready,
            s_data,
            m_valid,
            m_ready,
            m_data,
            reset,
            rng: StdRng::seed_from_u64(seed),
            cycle: 0,
            queue: VecDeque::new(),
            pushed: 0,
            popped: 0,
            full_cycles: 0,
        }
    }

    /// One cycle with the given chances of offering and of taking a bit; checks the
    /// outputs and returns whether a bit went in and whether one came out.
    fn cycle(&mut self, push_rate: f64, pop_rate: f64) -> (bool, bool) {
        let valid = self.rng.gen_bool(push_rate);
        let ready = self.rng.gen_bool(pop_rate);
        let bit = self.rng.gen::<bool>();
        let c = self.cycle;
        // `s_ready` and `m_valid` under all four combinations of this cycle's inputs.
        let mut seen = [(false, false); 4];
        for (i, r) in seen.iter_mut().enumerate() {
            self.m.set_bit(self.s_valid, i & 1 != 0);
            self.m.set_bit(self.m_ready, i & 2 != 0);
            self.m.eval();
            *r = (self.m.get_bit(self.s_ready), self.m.get_bit(self.m_valid));
        }
        assert!(seen.iter().all(|&r| r == seen[0]), "cycle {c}: s_ready or m_valid depends on this cycle's inputs");
        self.m.set_bit(self.s_valid, valid);
        self.m.set_bit(self.s_data, bit);
        self.m.set_bit(self.m_ready, ready);
        self.m.eval();
        let held = self.queue.len();
        let s_ready = self.m.get_bit(self.s_ready);
        assert_eq!(s_ready, held < HOLD, "cycle {c}: s_ready with {held} bits held");
        let m_valid = self.m.get_bit(self.m_valid);
        assert_eq!(m_valid, held > 0, "cycle {c}: m_valid with {held} bits held");
        if let Some(&head) = self.queue.front() {
            assert_eq!(self.m.get_bit(self.m_data), head, "cycle {c}: m_data is not bit {}", self.popped);
        }
        let (push, pop) = (valid && s_ready, ready && m_valid);
        if pop {
            self.queue.pop_front();
            self.popped += 1;
        }
        if push {
            self.queue.push_back(bit);
            self.pushed += 1;
        }
        self.full_cycles += u64::from(held == HOLD);
        self.m.tick();
        self.cycle += 1;
        (push, pop)
    }
}

#[test]
fn bit_fifo_matches_a_queue_of_32_under_random_traffic() {
    trace::on_failure("bit_fifo_matches_a_queue_of_32_under_random_traffic", || {
        const REGIMES: [(f64, f64); 6] = [(1.0, 1.0), (0.9, 0.2), (0.2, 0.9), (0.5, 0.5), (1.0, 0.0), (0.0, 1.0)];
        for seed in 1..=3 {
            let mut b = Bench::new(seed);
            while b.cycle < 20_000 {
                let (push_rate, pop_rate) = REGIMES[b.rng.gen_range(0..REGIMES.len())];
                for _ in 0..b.rng.gen_range(5..200) {
                    b.cycle(push_rate, pop_rate);
                }
            }
            for _ in 0..HOLD + 1 {
                b.cycle(0.0, 1.0);
            }
            assert!(b.queue.is_empty(), "seed {seed}: {} bits never came out", b.queue.len());
            assert_eq!(b.pushed, b.popped, "seed {seed}: bits in and out");
            assert!(
                b.full_cycles > 1_000 && b.pushed > 5_000,
                "seed {seed}: too little coverage: {} cycles full, {} bits",
                b.full_cycles,
                b.pushed
            );
        }
    });
}

#[test]
fn bit_fifo_streams_one_bit_per_cycle_and_resets_empty() {
    trace::on_failure("bit_fifo_streams_one_bit_per_cycle_and_resets_empty", || {
        let mut b = Bench::new(7);
        for i in 0..1_000 {
            let (push, pop) = b.cycle(1.0, 1.0);
            assert!(push, "cycle {i}: a bit refused while streaming");
            assert_eq!(
                pop,
                i >= 1,
                "cycle {i}: one bit out per cycle once streaming, the first a cycle after its push"
            );
        }
        // Stalled: it takes bits until it holds 32, then refuses.
        let taken = (0..HOLD + 4).filter(|_| b.cycle(1.0, 0.0).0).count();
        assert_eq!(b.queue.len(), HOLD, "stalled, it fills to {HOLD} bits ({taken} more taken)");
        // Full, then reset: nothing is offered afterwards.
        b.m.set_bit(b.reset, true);
        b.m.tick();
        b.m.set_bit(b.reset, false);
        b.queue.clear();
        for _ in 0..10 {
            b.cycle(0.0, 1.0);
        }
        assert_eq!(b.queue.len(), 0);
    });
}
