//! `common/rr_arbiter` in Verilator (`RrArbiter<64>`), against its specification: in
//! cycle `c`, unless a grant was accepted in the four cycles before, `found` is whether
//! anyone requested in cycle `c - 4`, and `grant` is the first of those requesters at or
//! after one past the last accepted grant (wrapping), with `grant_onehot` its bit. Every
//! cycle is checked, under random requests in changing regimes (sparse, dense, one
//! requester, all of them) and random accepts; all 64 requesting and every grant taken
//! goes round 0, 1, ..., 63, 0 in order.
use std::collections::VecDeque;

use rand::rngs::StdRng;
use rand::{Rng, SeedableRng};
use rnic_sim::{trace, Model, Port};

const N: usize = 64;
/// Cycles from a request to its grant, and in which nothing is offered after an accept.
const LATENCY: usize = 4;

struct Bench {
    m: Model,
    requests: Port,
    accept: Port,
    found: Port,
    grant: Port,
    onehot: Port,
    /// Requests of the last `LATENCY` cycles, oldest first.
    history: VecDeque<u64>,
    /// One past the last accepted grant.
    next: usize,
    /// Cycles since the last accept (from 1 in the cycle after it).
    since_accept: usize,
    cycle: u64,
    grants: Vec<usize>,
}

impl Bench {
    fn new() -> Bench {
        let mut m = Model::new("rnic_common_rr_arbiter").expect("rnic_common_rr_arbiter model");
        let port = |name| m.port(name);
        let (requests, accept, found) = (port("requests"), port("accept"), port("found"));
        let (grant, onehot) = (port("grant"), port("grant_onehot"));
        m.reset_for(2);
        Bench {
            m,
            requests,
            accept,
            found,
            grant,
            onehot,
            history: VecDeque::from(vec![0; LATENCY]),
            next: 0,
            since_accept: LATENCY + 1,
            cycle: 0,
            grants: Vec::new(),
        }
    }

    /// The specification's grant for `requests`: the first requester at or after `next`.
    fn expected(&self, requests: u64) -> Option<usize> {
        (0..N).map(|k| (self.next + k) % N).find(|&i| requests >> i & 1 == 1)
    }

    /// One cycle with these requests; takes the grant on offer if `take`. Returns the
    /// grant taken.
    fn cycle(&mut self, requests: u64, take: bool) -> Option<usize> {
        let c = self.cycle;
        self.m.set(self.requests, requests);
        self.m.set_bit(self.accept, take);
        self.m.eval();
        let old = self.history.pop_front().unwrap();
        self.history.push_back(requests);
        let want = if self.since_accept <= LATENCY { None } else { self.expected(old) };
        let found = self.m.get_bit(self.found);
        assert_eq!(found, want.is_some(), "cycle {c}: found (requests of 4 cycles before {old:#x})");
        let mut taken = None;
        if let Some(g) = want {
            assert_eq!(self.m.get(self.grant) as usize, g, "cycle {c}: grant for {old:#x} after {}", self.next);
            assert_eq!(self.m.get(self.onehot), 1 << g, "cycle {c}: grant_onehot");
            if take {
                self.next = (g + 1) % N;
                self.since_accept = 0;
                self.grants.push(g);
                taken = Some(g);
            }
        }
        self.since_accept = (self.since_accept + 1).min(LATENCY + 1);
        self.m.tick();
        self.cycle += 1;
        taken
    }
}

#[test]
fn rr_arbiter_grants_as_specified_under_random_requests() {
    trace::on_failure("rr_arbiter_grants_as_specified_under_random_requests", || {
        let mut b = Bench::new();
        let mut rng = StdRng::seed_from_u64(3);
        let mut held = 0u64;
        while b.cycle < 40_000 {
            let regime = rng.gen_range(0..5);
            let take_rate = [1.0, 0.5, 0.1][rng.gen_range(0..3)];
            for _ in 0..rng.gen_range(10..300) {
                // Requests change a few bits at a time, as queues do.
                held = match regime {
                    0 => held ^ (1 << rng.gen_range(0..N)),
                    1 => rng.gen::<u64>() & rng.gen::<u64>() & rng.gen::<u64>(),
                    2 => rng.gen(),
                    3 => 1 << rng.gen_range(0..N),
                    _ => u64::MAX,
                };
                b.cycle(held, rng.gen_bool(take_rate));
            }
        }
        assert!(b.grants.len() > 3_000, "{} grants", b.grants.len());
        let distinct: std::collections::HashSet<_> = b.grants.iter().collect();
        assert_eq!(distinct.len(), N, "every requester granted at some point");
    });
}

#[test]
fn rr_arbiter_goes_round_in_order_with_everyone_asking() {
    trace::on_failure("rr_arbiter_goes_round_in_order_with_everyone_asking", || {
        let mut b = Bench::new();
        for _ in 0..(2 * N + 1) * (LATENCY + 1) {
            b.cycle(u64::MAX, true);
        }
        let want: Vec<usize> = (0..2 * N + 1).map(|i| i % N).collect();
        assert_eq!(b.grants, want);
        // One grant every LATENCY + 1 cycles when each is taken at once.
        assert_eq!(b.cycle as usize, b.grants.len() * (LATENCY + 1));
    });
}
