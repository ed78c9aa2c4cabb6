//! A test bench for the register queues of `common/` (the skid buffer, the bit FIFO),
//! against a software queue of the same capacity: every cycle `m_valid` exactly when a
//! word is held, `m_data` the oldest, `s_ready` exactly when fewer than the capacity are
//! held, and neither `s_ready` nor `m_valid` depends on this cycle's `s_valid` or
//! `m_ready` (both are registers: nothing combinational crosses the queue).
#![allow(dead_code)]

use std::collections::VecDeque;

use rand::rngs::StdRng;
use rand::{Rng, SeedableRng};
use rnic_sim::{Model, Port};

pub struct Bench {
    pub m: Model,
    s_valid: Port,
    s_ready: Port,
    s_data: Port,
    m_valid: Port,
    m_ready: Port,
    m_data: Port,
    reset: Port,
    /// Data width in bits, and words held at most.
    bits: u32,
    pub hold: usize,
    pub rng: StdRng,
    pub cycle: u64,
    pub queue: VecDeque<u128>,
    pub pushed: u64,
    pub popped: u64,
    pub full_cycles: u64,
}

impl Bench {
    /// The queue `design` of `bits`-bit words (at most 128) and capacity `hold`, reset.
    pub fn new(design: &str, bits: u32, hold: usize, seed: u64) -> Bench {
        let mut m = Model::new(design).unwrap_or_else(|e| panic!("{design} model: {e}"));
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
            bits,
            hold,
            rng: StdRng::seed_from_u64(seed),
            cycle: 0,
            queue: VecDeque::new(),
            pushed: 0,
            popped: 0,
            full_cycles: 0,
        }
    }

    fn octets(&self) -> usize {
        self.bits.div_ceil(8) as usize
    }

    /// One cycle with the given chances of offering and of taking a word; checks the
    /// outputs and returns whether a word went in and whether one came out.
    pub fn cycle(&mut self, push_rate: f64, pop_rate: f64) -> (bool, bool) {
        let valid = self.rng.gen_bool(push_rate);
        let ready = self.rng.gen_bool(pop_rate);
        let word = self.rng.gen::<u128>() & (u128::MAX >> (128 - self.bits));
        let (c, octets) = (self.cycle, self.octets());
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
        self.m.set_bytes(self.s_data, &word.to_le_bytes()[..octets]);
        self.m.set_bit(self.m_ready, ready);
        self.m.eval();
        let held = self.queue.len();
        let s_ready = self.m.get_bit(self.s_ready);
        assert_eq!(s_ready, held < self.hold, "cycle {c}: s_ready with {held} words held");
        let m_valid = self.m.get_bit(self.m_valid);
        assert_eq!(m_valid, held > 0, "cycle {c}: m_valid with {held} words held");
        if let Some(&head) = self.queue.front() {
            let mut out = [0u8; 16];
            self.m.get_bytes(self.m_data, &mut out[..octets]);
            assert_eq!(u128::from_le_bytes(out), head, "cycle {c}: m_data is not word {}", self.popped);
        }
        let (push, pop) = (valid && s_ready, ready && m_valid);
        if pop {
            self.queue.pop_front();
            self.popped += 1;
        }
        if push {
            self.queue.push_back(word);
            self.pushed += 1;
        }
        self.full_cycles += u64::from(held == self.hold);
        self.m.tick();
        self.cycle += 1;
        (push, pop)
    }

    /// A reset in the middle: the queue is empty afterwards.
    pub fn reset(&mut self) {
        self.m.set_bit(self.reset, true);
        self.m.tick();
        self.m.set_bit(self.reset, false);
        self.queue.clear();
        for _ in 0..10 {
            self.cycle(0.0, 1.0);
        }
        assert_eq!(self.queue.len(), 0);
    }
}

/// 20 000 cycles of random `s_valid`/`m_ready` in changing regimes (streaming, filling,
/// draining, stalled either side) for each of three seeds, then drained: no word lost,
/// duplicated or reordered, and the queue was full for at least 1 000 cycles.
pub fn random_traffic(design: &str, bits: u32, hold: usize) {
    const REGIMES: [(f64, f64); 6] = [(1.0, 1.0), (0.9, 0.2), (0.2, 0.9), (0.5, 0.5), (1.0, 0.0), (0.0, 1.0)];
    for seed in 1..=3 {
        let mut b = Bench::new(design, bits, hold, seed);
        while b.cycle < 20_000 {
            let (push_rate, pop_rate) = REGIMES[b.rng.gen_range(0..REGIMES.len())];
            for _ in 0..b.rng.gen_range(5..200) {
                b.cycle(push_rate, pop_rate);
            }
        }
        for _ in 0..hold + 1 {
            b.cycle(0.0, 1.0);
        }
        assert!(b.queue.is_empty(), "seed {seed}: {} words never came out", b.queue.len());
        assert_eq!(b.pushed, b.popped, "seed {seed}: words in and out");
        assert!(
            b.full_cycles > 1_000 && b.pushed > 5_000,
            "seed {seed}: too little coverage: {} cycles full, {} words",
            b.full_cycles,
            b.pushed
        );
    }
}
