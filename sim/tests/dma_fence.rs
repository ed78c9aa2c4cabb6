//! `host/dma_fence` in Verilator (`DmaFence<5, 4>`), against a cycle-exact reference.
//! Behavioural clients hold requests at the two arbiters until granted; the engines
//! complete them in order after random latencies. For every fence the bench notes, at the
//! cycle the fence must look (`SETTLE` cycles after `start`), the requests issued so far
//! and those still waiting for a grant, and predicts the cycle `done` rises: one after the
//! later of the look, the last grant and the last completion among them. `done` must be
//! low until then and high exactly then. Long enough for the 16-bit counts to wrap.
use std::collections::VecDeque;

use rand::rngs::StdRng;
use rand::{Rng, SeedableRng};
use rnic_sim::{Model, Port};

/// `SETTLE` of hdl/src/host/dma_fence.rs.
const SETTLE: u64 = 4;
const CYCLES: u64 = 200_000;

/// One arbiter and its engine as the fence sees them.
struct Side {
    clients: usize,
    /// Each client's request waiting for a grant: its id.
    waiting: Vec<Option<u64>>,
    /// Issued requests: (id, cycle it completes), in order.
    in_flight: VecDeque<(u64, u64)>,
    next_id: u64,
    /// When each request was granted and completed, by id.
    granted: Vec<u64>,
    completed: Vec<u64>,
    ports: [Port; 4],
}

/// What one side drives in a cycle.
struct Drive {
    pending: u64,
    taken: u64,
    issue: bool,
    complete: bool,
}

impl Side {
    fn new(m: &Model, prefix: &str, clients: usize) -> Side {
        let p = |n: &str| m.port(&format!("{prefix}_{n}"));
        Side {
            clients,
            waiting: vec![None; clients],
            in_flight: VecDeque::new(),
            next_id: 0,
            granted: Vec::new(),
            completed: Vec::new(),
            ports: [p("pending"), p("taken"), p("issue"), p("complete")],
        }
    }

    /// New requests, a grant and a completion for `cycle`, in regimes that change with it.
    fn step(&mut self, rng: &mut StdRng, cycle: u64) -> Drive {
        let busy = (cycle / 5000) % 3;
        let (ask, grant_rate, latency) = match busy {
            0 => (0.3, 0.9, 20..60),
            1 => (0.05, 0.5, 150..250),
            _ => (0.6, 0.3, 1..5),
        };
        for w in &mut self.waiting {
            if w.is_none() && rng.gen_bool(ask) {
                *w = Some(self.next_id);
                self.granted.push(u64::MAX);
                self.completed.push(u64::MAX);
                self.next_id += 1;
            }
        }
        let pending: u64 = (0..self.clients).filter(|&c| self.waiting[c].is_some()).fold(0, |m, c| m | 1 << c);
        let mut taken = 0;
        if pending != 0 && rng.gen_bool(grant_rate) {
            let k = rng.gen_range(0..pending.count_ones() as usize);
            let c = (0..self.clients).filter(|&c| self.waiting[c].is_some()).nth(k).expect("k-th waiting");
            let id = self.waiting[c].take().expect("waiting");
            taken = 1 << c;
            self.granted[id as usize] = cycle;
            // In order: never before the one ahead.
            let after = self.in_flight.back().map_or(0, |&(_, due)| due);
            self.in_flight.push_back((id, (cycle + rng.gen_range(latency)).max(after)));
        }
        let complete = match self.in_flight.front() {
            Some(&(id, due)) if due <= cycle => {
                self.completed[id as usize] = cycle;
                self.in_flight.pop_front();
                true
            }
            _ => false,
        };
        Drive { pending, taken, issue: taken != 0, complete }
    }

    fn set(&self, m: &mut Model, d: &Drive) {
        m.set(self.ports[0], d.pending);
        m.set(self.ports[1], d.taken);
        m.set_bit(self.ports[2], d.issue);
        m.set_bit(self.ports[3], d.complete);
    }

    /// The requests the fence must wait for when it looks in a cycle are every one made so
    /// far; those already completed cannot move its `done`, so only the rest are kept: the
    /// ones waiting for a grant and the ones in flight.
    fn look(&self) -> Vec<u64> {
        self.waiting.iter().flatten().chain(self.in_flight.iter().map(|(id, _)| id)).copied().collect()
    }

    /// The last grant and the last completion among `ids`, once all happened.
    fn last_events(&self, ids: &[u64]) -> Option<u64> {
        ids.iter().try_fold(0, |latest, &id| {
            let (g, c) = (self.granted[id as usize], self.completed[id as usize]);
            (g != u64::MAX && c != u64::MAX).then(|| latest.max(g).max(c))
        })
    }
}

#[test]
fn done_rises_exactly_when_every_request_made_before_the_look_has_completed() {
    let mut m = Model::new("rnic_host_dma_fence").expect("rnic_host_dma_fence model");
    let (start, done) = (m.port("start"), m.port("done"));
    m.reset_for(2);
    let mut rng = StdRng::seed_from_u64(0x66656e6365);
    let mut reads = Side::new(&m, "rd", 5);
    let mut writes = Side::new(&m, "wr", 4);
    // The fence running: (start cycle, requests of each side to wait for once it looked).
    #[allow(clippy::type_complexity)]
    let mut fence: Option<(u64, Option<(Vec<u64>, Vec<u64>)>)> = None;
    let mut next_start = 10;
    let (mut fences, mut waited) = (0u64, 0u64);
    for cycle in 0..CYCLES {
        let (r, w) = (reads.step(&mut rng, cycle), writes.step(&mut rng, cycle));
        reads.set(&mut m, &r);
        writes.set(&mut m, &w);
        let starting = fence.is_none() && cycle >= next_start;
        m.set_bit(start, starting);
        if starting {
            fence = Some((cycle, None));
        }
        if let Some((t0, look)) = &mut fence {
            if cycle == *t0 + SETTLE {
                *look = Some((reads.look(), writes.look()));
            }
        }
        m.eval();
        // The predicted cycle of `done`, once every waited-for request is granted and
        // completed.
        let due = fence.as_ref().and_then(|(t0, look)| {
            let (r, w) = look.as_ref()?;
            let last = reads.last_events(r)?.max(writes.last_events(w)?);
            Some((t0 + SETTLE + 1).max(last + 1) + 1)
        });
        let high = m.get_bit(done);
        match due {
            Some(due) if cycle == due => {
                assert!(high, "cycle {cycle}: done low when due");
                let (t0, _) = fence.take().expect("running");
                waited += cycle - t0;
                fences += 1;
                next_start = cycle + 1 + rng.gen_range(0..40);
            }
            _ => assert!(!high, "cycle {cycle}: done high, due {due:?} for the fence {fence:?}"),
        }
        m.tick();
    }
    assert!(fences > 500, "only {fences} fences in {CYCLES} cycles");
    assert!(reads.next_id > 1 << 16 && writes.next_id > 1 << 16, "the counts wrapped");
    eprintln!("{fences} fences, {} cycles each on average", waited / fences);
}
