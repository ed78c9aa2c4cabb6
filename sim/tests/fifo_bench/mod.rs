//! The bench the two queue designs share (`common_ram_fifo`, `common_small_fifo`): a
//! 73-bit queue in Verilator against a `VecDeque`, under random `s_valid`/`m_ready` in
//! changing regimes. Every cycle `m_data` must be the reference's oldest entry while
//! `m_valid`, `m_valid` never set on an empty queue and set `latency` cycles after a
//! write, `s_ready` low exactly when `depth` entries are held, and `count` (where the
//! queue has one) equal to the entries held; no entry lost, duplicated or reordered.
#![allow(dead_code)]

use std::collections::VecDeque;

use rand::rngs::StdRng;
use rand::{Rng, SeedableRng};
use rnic_sim::{trace, Model, Port};

const MASK: u128 = (1 << 73) - 1;

/// The queue under test.
#[derive(Clone, Copy)]
pub struct Shape {
    /// The Verilated design.
    pub model: &'static str,
    /// Entries it holds.
    pub depth: usize,
    /// A write is readable this many cycles after the cycle it was taken in.
    pub latency: u64,
    /// Whether it has a `count` output.
    pub counted: bool,
}

struct Ports {
    s_valid: Port,
    s_ready: Port,
    s_data: Port,
    m_valid: Port,
    m_ready: Port,
    m_data: Port,
    count: Option<Port>,
}

pub struct Bench {
    shape: Shape,
    m: Model,
    p: Ports,
    rng: StdRng,
    cycle: u64,
    /// The reference: (word, cycle it was pushed in).
    queue: VecDeque<(u128, u64)>,
    pushed: u64,
    popped: u64,
    full_cycles: u64,
    empty_cycles: u64,
}

impl Bench {
    fn new(shape: Shape, seed: u64) -> Bench {
        let mut m = Model::new(shape.model).expect(shape.model);
        let p = Ports {
            s_valid: m.port("s_valid"),
            s_ready: m.port("s_ready"),
            s_data: m.port("s_data"),
            m_valid: m.port("m_valid"),
            m_ready: m.port("m_ready"),
            m_data: m.port("m_data"),
            count: shape.counted.then(|| m.port("count")),
        };
        m.reset_for(4);
        Bench {
            shape,
            m,
            p,
            rng: StdRng::seed_from_u64(seed),
            cycle: 0,
            queue: VecDeque::new(),
            pushed: 0,
            popped: 0,
            full_cycles: 0,
            empty_cycles: 0,
        }
    }

    /// One cycle with the given chances of offering a word and of taking one; checks the
    /// outputs against the reference and returns whether a word was pushed and popped.
    fn cycle(&mut self, push_rate: f64, pop_rate: f64) -> (bool, bool) {
        let p = &self.p;
        let valid = self.rng.gen_bool(push_rate);
        let ready = self.rng.gen_bool(pop_rate);
        let word = self.rng.gen::<u128>() & MASK;
        self.m.set_bit(p.s_valid, valid);
        self.m.set_bytes(p.s_data, &word.to_le_bytes()[..10]);
        self.m.set_bit(p.m_ready, ready);
        self.m.eval();

        let (c, held) = (self.cycle, self.queue.len());
        if let Some(count) = p.count {
            assert_eq!(self.m.get(count) as usize, held, "cycle {c}: count with {held} entries held");
        }
        let s_ready = self.m.get_bit(p.s_ready);
        assert_eq!(
            s_ready,
            held < self.shape.depth,
            "cycle {c}: s_ready with {held} of {} entries held",
            self.shape.depth
        );
        let m_valid = self.m.get_bit(p.m_valid);
        match self.queue.front() {
            None => assert!(!m_valid, "cycle {c}: m_valid on an empty queue"),
            Some(&(head, at)) => {
                assert_eq!(
                    m_valid,
                    at + self.shape.latency <= c,
                    "cycle {c}: m_valid for the oldest entry, pushed in cycle {at} ({held} held)"
                );
                if m_valid {
                    let mut out = [0u8; 16];
                    self.m.get_bytes(p.m_data, &mut out[..10]);
                    let got = u128::from_le_bytes(out);
                    assert_eq!(
                        got, head,
                        "cycle {c}: m_data is not the oldest entry (entry {} pushed in cycle {at}, {held} held)",
                        self.popped
                    );
                }
            }
        }
        let push = valid && s_ready;
        let pop = ready && m_valid;
        if pop {
            self.queue.pop_front();
            self.popped += 1;
        }
        if push {
            self.queue.push_back((word, c));
            self.pushed += 1;
        }
        if held == self.shape.depth {
            self.full_cycles += 1;
        } else if held == 0 {
            self.empty_cycles += 1;
        }
        self.m.tick();
        self.cycle += 1;
        (push, pop)
    }

    /// Random traffic in regimes of random length: filling, draining, balanced, streaming
    /// both ways, held full (nothing taken) and held empty (nothing offered).
    fn random_traffic(&mut self, cycles: u64) {
        const REGIMES: [(f64, f64); 8] =
            [(0.9, 0.1), (0.1, 0.9), (0.5, 0.5), (1.0, 1.0), (1.0, 0.0), (0.0, 1.0), (0.7, 0.6), (0.3, 0.35)];
        let end = self.cycle + cycles;
        while self.cycle < end {
            let (push_rate, pop_rate) = REGIMES[self.rng.gen_range(0..REGIMES.len())];
            let stretch = self.rng.gen_range(20..600).min(end - self.cycle);
            for _ in 0..stretch {
                self.cycle(push_rate, pop_rate);
            }
        }
    }

    /// Takes every entry left, checking each; bounded.
    fn drain(&mut self) {
        for _ in 0..self.shape.depth as u64 * 4 + 10 {
            if self.queue.is_empty() {
                break;
            }
            self.cycle(0.0, 1.0);
        }
        assert!(self.queue.is_empty(), "{} entries never came out", self.queue.len());
        self.cycle(0.0, 1.0);
        assert_eq!(self.pushed, self.popped, "words in and out");
    }
}

/// Four seeds of random traffic, each drained at the end; each must have spent long
/// stretches full and empty.
pub fn matches_a_queue_under_random_traffic(shape: Shape, name: &str) {
    trace::on_failure(name, || {
        let mut total = 0;
        for seed in 1..=4 {
            let mut b = Bench::new(shape, seed);
            b.random_traffic(10_000);
            b.drain();
            assert!(
                b.full_cycles > 500 && b.empty_cycles > 500 && b.pushed > 1_500,
                "seed {seed}: too little coverage: {} cycles full, {} empty, {} words",
                b.full_cycles,
                b.empty_cycles,
                b.pushed
            );
            total += b.cycle;
        }
        assert!(total >= 40_000);
    });
}

/// Offered and taken every cycle: one word out per cycle once the latency has passed; and
/// a full queue, popped and offered in the same cycle, refuses the offer.
pub fn streams_one_word_per_cycle(shape: Shape, name: &str) {
    trace::on_failure(name, || {
        let mut b = Bench::new(shape, 5);
        // Offered and taken every cycle: after the latency, one word out per cycle.
        let mut pops = 0;
        for i in 0..1_000 {
            let (push, pop) = b.cycle(1.0, 1.0);
            assert!(push, "cycle {i}: a word offered to a queue of {} was refused", b.queue.len());
            assert_eq!(pop, i >= shape.latency, "cycle {i}: one word out per cycle once streaming");
            pops += u64::from(pop);
        }
        assert_eq!(pops, 1_000 - shape.latency);
        // Full, then popped and offered in the same cycle: the pop frees room only for the
        // next cycle (`s_ready` does not look at `m_ready`).
        b.drain();
        for _ in 0..shape.depth {
            assert!(b.cycle(1.0, 0.0).0);
        }
        assert_eq!(b.queue.len(), shape.depth);
        let (push, pop) = b.cycle(1.0, 1.0);
        assert!(!push && pop, "full queue, both sides active: pushed {push}, popped {pop}");
        b.drain();
    });
}

/// Forty resets of 1 to 3 cycles amid random traffic, a third of them of a full queue.
pub fn reset_in_the_middle_empties_it(shape: Shape, name: &str) {
    trace::on_failure(name, || {
        let mut b = Bench::new(shape, 6);
        let mut rng = StdRng::seed_from_u64(0x6e5);
        let mut resets = 0;
        let mut resets_full = 0;
        for round in 0..40 {
            b.random_traffic(rng.gen_range(50..400));
            // Sometimes fill it up first, so that a full queue is reset too.
            if round % 3 == 0 {
                for _ in 0..60 {
                    b.cycle(1.0, 0.0);
                }
                assert_eq!(b.queue.len(), shape.depth);
            }
            resets_full += u64::from(b.queue.len() == shape.depth);
            let held = b.queue.len();
            // Reset for 1..3 cycles, nothing offered or taken meanwhile.
            b.m.set_bit(b.p.s_valid, false);
            b.m.set_bit(b.p.m_ready, false);
            let cycles = rng.gen_range(1..=3);
            b.m.reset_for(cycles);
            b.cycle += u64::from(cycles);
            b.queue.clear();
            b.pushed -= held as u64;
            b.m.eval();
            if let Some(count) = b.p.count {
                assert_eq!(b.m.get(count), 0, "round {round}: count after a reset with {held} held");
            }
            assert!(!b.m.get_bit(b.p.m_valid), "round {round}: m_valid after a reset with {held} held");
            assert!(b.m.get_bit(b.p.s_ready), "round {round}: s_ready after a reset with {held} held");
            // Checked for a few cycles with nothing offered: nothing comes back out.
            for _ in 0..5 {
                b.cycle(0.0, 1.0);
            }
            resets += 1;
        }
        b.random_traffic(2_000);
        b.drain();
        assert!(resets == 40 && resets_full >= 13, "{resets} resets, {resets_full} of a full queue");
    });
}
