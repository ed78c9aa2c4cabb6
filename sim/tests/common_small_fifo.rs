//! `common/fifo` in Verilator (`SmallFifo<73>`: a head register and eight entries of 73
//! bits), against a `VecDeque`. Nearly every queue between engines is one, and its head is
//! a register refilled from the entries or straight from the input, so the cases that
//! matter are the edges: pushing into an empty queue (the word goes straight to the head),
//! popping and pushing in the same cycle, long stretches full and long stretches empty.
//! Random `s_valid`/`m_ready` in changing regimes; every cycle `m_data` must be the
//! reference's oldest entry while `m_valid`, `m_valid` never set on an empty queue and set
//! the cycle after a write, `s_ready` low exactly when nine words are held; no entry lost,
//! duplicated or reordered. A reset in the middle empties the queue.
use std::collections::VecDeque;

use rand::rngs::StdRng;
use rand::{Rng, SeedableRng};
use rnic_sim::{trace, Model, Port};

/// The head register and the eight entries behind it.
const DEPTH: usize = 9;
/// A write is readable this many cycles after the cycle it was taken in.
const LATENCY: u64 = 1;
const MASK: u128 = (1 << 73) - 1;

struct Ports {
    s_valid: Port,
    s_ready: Port,
    s_data: Port,
    m_valid: Port,
    m_ready: Port,
    m_data: Port,
}

struct Bench {
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
    fn new(seed: u64) -> Bench {
        let mut m = Model::new("rnic_common_small_fifo").expect("rnic_common_small_fifo model");
        let p = Ports {
            s_valid: m.port("s_valid"),
            s_ready: m.port("s_ready"),
            s_data: m.port("s_data"),
            m_valid: m.port("m_valid"),
            m_ready: m.port("m_ready"),
            m_data: m.port("m_data"),
        };
        m.reset_for(4);
        Bench {
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
        let s_ready = self.m.get_bit(p.s_ready);
        assert_eq!(s_ready, held < DEPTH, "cycle {c}: s_ready with {held} of {DEPTH} entries held");
        let m_valid = self.m.get_bit(p.m_valid);
        match self.queue.front() {
            None => assert!(!m_valid, "cycle {c}: m_valid on an empty queue"),
            Some(&(head, at)) => {
                assert_eq!(
                    m_valid,
                    at + LATENCY <= c,
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
        if held == DEPTH {
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
        for _ in 0..DEPTH as u64 * 4 + 10 {
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

#[test]
fn small_fifo_matches_a_queue_under_random_traffic() {
    trace::on_failure("small_fifo_matches_a_queue_under_random_traffic", || {
        let mut total = 0;
        for seed in 1..=4 {
            let mut b = Bench::new(seed);
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

#[test]
fn small_fifo_streams_one_word_per_cycle() {
    trace::on_failure("small_fifo_streams_one_word_per_cycle", || {
        let mut b = Bench::new(5);
        // Offered and taken every cycle: after the one-cycle latency, one word out per cycle.
        let mut pops = 0;
        for i in 0..1_000 {
            let (push, pop) = b.cycle(1.0, 1.0);
            assert!(push, "cycle {i}: a word offered to a queue of {} was refused", b.queue.len());
            assert_eq!(pop, i >= LATENCY, "cycle {i}: one word out per cycle once streaming");
            pops += u64::from(pop);
        }
        assert_eq!(pops, 1_000 - LATENCY);
        // Full, then popped and offered in the same cycle: the pop frees room only for the
        // next cycle (`s_ready` does not look at `m_ready`).
        b.drain();
        for _ in 0..DEPTH {
            assert!(b.cycle(1.0, 0.0).0);
        }
        assert_eq!(b.queue.len(), DEPTH);
        let (push, pop) = b.cycle(1.0, 1.0);
        assert!(!push && pop, "full queue, both sides active: pushed {push}, popped {pop}");
        b.drain();
    });
}

#[test]
fn small_fifo_reset_in_the_middle_empties_it() {
    trace::on_failure("small_fifo_reset_in_the_middle_empties_it", || {
        let mut b = Bench::new(6);
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
                assert_eq!(b.queue.len(), DEPTH);
            }
            resets_full += u64::from(b.queue.len() == DEPTH);
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
