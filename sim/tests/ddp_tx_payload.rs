//! `ddp/tx_payload` in Verilator (`TxPayload<5, 6>`: a 32-beat buffer). The bench plays
//! the segmenter (random requests of 0..400 octets at random addresses, random readiness
//! for the payload) and the DMA read engine (random readiness for requests, ⌈len/8⌉ beats
//! per request — one for an empty one — after 1..60 cycles, in request order, random gaps).
//!
//! Why: the read engine's one data stream also carries the RQ fetch's data, so payload
//! must never stall it waiting for the link, or two RNICs sending to each other deadlock.
//! The block guarantees that by forwarding a request only when the buffer has room for all
//! of its beats, decided a cycle ahead. Checked every cycle: a request is forwarded
//! unchanged exactly when it has been on offer for two cycles before and, in the last of
//! them, its beats fit beside those requested and not yet taken by the segmenter (or
//! nothing was reserved at all), so the beats outstanding never exceed 32 except for one request
//! larger than the buffer; the engine's data is taken whenever presented, except for the
//! beats of such an oversized request; the segmenter gets exactly the engine's beats
//! (data, keep, last), in order, none lost, invented or repeated.
use std::collections::VecDeque;

use rand::rngs::StdRng;
use rand::{Rng, SeedableRng};
use rnic_sim::{trace, Model, Port};

/// Buffer size in beats.
const SIZE: u64 = 32;

/// The octet at `addr` of the pretend host memory.
fn octet(addr: u64) -> u8 {
    (addr ^ (addr >> 8) ^ (addr >> 16) ^ (addr >> 59)) as u8
}

/// Beats the engine returns for `len` octets.
fn beats(len: u32) -> u64 {
    u64::from(len).div_ceil(8).max(1)
}

/// One beat of the read stream: data, keep, last.
type Beat = (u64, u64, bool);

/// Beat `k` of a read of `len` octets at `addr`: realigned to lane 0, lanes past the end
/// filled with a pattern (they must come through unchanged too).
fn beat_of(addr: u64, len: u32, k: u64) -> Beat {
    let n = (u64::from(len) - (8 * k).min(u64::from(len))).min(8);
    let mut data = [0u8; 8];
    for (i, d) in data.iter_mut().enumerate() {
        let i = i as u64;
        *d = if i < n { octet(addr.wrapping_add(8 * k + i)) } else { 0xE0 | i as u8 };
    }
    (u64::from_le_bytes(data), (1u64 << n) - 1, k + 1 == beats(len))
}

struct Ports {
    req_valid: Port,
    req_ready: Port,
    req_addr: Port,
    req_len: Port,
    m_req_valid: Port,
    m_req_ready: Port,
    m_req_addr: Port,
    m_req_len: Port,
    tdata: Port,
    tkeep: Port,
    tlast: Port,
    tvalid: Port,
    tready: Port,
    c_tdata: Port,
    c_tkeep: Port,
    c_tlast: Port,
    c_tvalid: Port,
    c_tready: Port,
}

fn ports(m: &Model) -> Ports {
    let p = |n: &str| m.port(n);
    Ports {
        req_valid: p("s_req_valid"),
        req_ready: p("s_req_ready"),
        req_addr: p("s_req_addr"),
        req_len: p("s_req_len"),
        m_req_valid: p("m_req_valid"),
        m_req_ready: p("m_req_ready"),
        m_req_addr: p("m_req_addr"),
        m_req_len: p("m_req_len"),
        tdata: p("s_rd_tdata"),
        tkeep: p("s_rd_tkeep"),
        tlast: p("s_rd_tlast"),
        tvalid: p("s_rd_tvalid"),
        tready: p("s_rd_tready"),
        c_tdata: p("m_rd_tdata"),
        c_tkeep: p("m_rd_tkeep"),
        c_tlast: p("m_rd_tlast"),
        c_tvalid: p("m_rd_tvalid"),
        c_tready: p("m_rd_tready"),
    }
}

/// The chances, each cycle, of the segmenter offering its next request, the engine taking a
/// request, the engine presenting a due beat, the segmenter taking a beat.
#[derive(Clone, Copy, Debug)]
struct Rates {
    issue: f64,
    req_ready: f64,
    tvalid: f64,
    tready: f64,
}

/// A request the engine took: address, length, cycle its data may start, beats sent.
struct Read {
    addr: u64,
    len: u32,
    due: u64,
    sent: u64,
}

#[derive(Default, Debug)]
struct Stats {
    /// Requests forwarded, of them larger than the buffer, of them empty.
    forwarded: usize,
    oversized: usize,
    empty: usize,
    /// Cycles a request was offered and held back for want of room.
    withheld: u64,
    /// Cycles the engine's beat waited (only allowed for oversized requests).
    stalls: u64,
    /// Cycles with all 32 beats of the buffer reserved, or more.
    full: u64,
    beats: u64,
}

struct Bench {
    m: Model,
    p: Ports,
    rng: StdRng,
    cycle: u64,
    rates: Rates,
    latency: std::ops::RangeInclusive<u64>,
    /// Segmenter: requests still to make, whether the head one is on offer, for how many
    /// cycles before this one, and whether it fitted in the last of them.
    pending: VecDeque<(u64, u32)>,
    offering: bool,
    offered_for: u64,
    fitted: bool,
    /// Engine: requests taken, whose data is not all sent; whether a beat waits.
    reads: VecDeque<Read>,
    holding: bool,
    /// Beats the engine sent that the segmenter has not taken yet, oldest first.
    in_flight: VecDeque<Beat>,
    /// Per forwarded request not wholly taken by the segmenter: its beats still to take.
    owed: VecDeque<u64>,
    /// Beats requested and not yet taken by the segmenter (the block's reservation).
    outstanding: u64,
    /// Requests as the engine saw them, and beats as the segmenter got them.
    forwarded: Vec<(u64, u32)>,
    received: Vec<Beat>,
    stats: Stats,
}

impl Bench {
    fn new(seed: u64, requests: Vec<(u64, u32)>, rates: Rates) -> Bench {
        let mut m = Model::new("rnic_ddp_tx_payload").expect("rnic_ddp_tx_payload model");
        let p = ports(&m);
        m.reset_for(4);
        Bench {
            m,
            p,
            rng: StdRng::seed_from_u64(seed),
            cycle: 0,
            rates,
            latency: 1..=60,
            pending: requests.into(),
            offering: false,
            offered_for: 0,
            fitted: false,
            reads: VecDeque::new(),
            holding: false,
            in_flight: VecDeque::new(),
            owed: VecDeque::new(),
            outstanding: 0,
            forwarded: Vec::new(),
            received: Vec::new(),
            stats: Stats::default(),
        }
    }

    fn done(&self) -> bool {
        self.pending.is_empty() && self.owed.is_empty()
    }

    fn state(&self) -> String {
        format!(
            "cycle {}: {} requests to make, {} forwarded, {} beats outstanding ({} with the engine, {} sent and not taken)",
            self.cycle,
            self.pending.len(),
            self.forwarded.len(),
            self.outstanding,
            self.reads.iter().map(|r| beats(r.len) - r.sent).sum::<u64>(),
            self.in_flight.len()
        )
    }

    /// One cycle, both neighbours played and every rule checked.
    fn cycle(&mut self) {
        let (p, r) = (&self.p, self.rates);
        let c = self.cycle;

        // Segmenter: a request once offered stays offered until taken.
        if !self.offering && !self.pending.is_empty() {
            self.offering = self.rng.gen_bool(r.issue);
        }
        let (addr, len) = self.pending.front().copied().unwrap_or((0, 0));
        self.m.set_bit(p.req_valid, self.offering);
        self.m.set(p.req_addr, addr);
        self.m.set(p.req_len, u64::from(len));
        let c_ready = self.rng.gen_bool(r.tready);
        self.m.set_bit(p.c_tready, c_ready);

        // Engine: takes requests at random; presents the head read's next beat once due,
        // with gaps, and keeps a presented beat until it is taken.
        let req_ready = self.rng.gen_bool(r.req_ready);
        self.m.set_bit(p.m_req_ready, req_ready);
        let due = self.reads.front().is_some_and(|h| h.due <= c);
        let present = self.holding || (due && self.rng.gen_bool(r.tvalid));
        self.m.set_bit(p.tvalid, present);
        let beat = self.reads.front().filter(|_| present).map(|h| beat_of(h.addr, h.len, h.sent));
        if let Some((data, keep, last)) = beat {
            self.m.set(p.tdata, data);
            self.m.set(p.tkeep, keep);
            self.m.set_bit(p.tlast, last);
        }
        self.m.eval();

        // Requests: forwarded unchanged, exactly when they fit.
        if self.outstanding >= SIZE {
            self.stats.full += 1;
        }
        let need = beats(len);
        let fits = self.outstanding + need <= SIZE || self.outstanding == 0;
        let m_valid = self.m.get_bit(p.m_req_valid);
        let decided = self.offering && self.offered_for >= 2 && self.fitted;
        assert_eq!(
            m_valid,
            decided,
            "{}: request of {len} octets ({need} beats) offered: {} (for {} cycles before, fitting in the last: {}); forwarded: {m_valid}",
            self.state(),
            self.offering,
            self.offered_for,
            self.fitted
        );
        if self.offering {
            let s_ready = self.m.get_bit(p.req_ready);
            assert_eq!(s_ready, req_ready && decided, "{}: s_req_ready with m_req_ready {req_ready}", self.state());
            if !fits {
                self.stats.withheld += 1;
            }
        }
        if m_valid {
            let got = (self.m.get(p.m_req_addr), self.m.get(p.m_req_len) as u32);
            assert_eq!(got, (addr, len), "{}: request changed on its way to the engine", self.state());
        }
        (self.offered_for, self.fitted) = if self.offering { (self.offered_for + 1, fits) } else { (0, false) };
        if m_valid && req_ready {
            (self.offered_for, self.fitted) = (0, false);
            let latency = self.rng.gen_range(self.latency.clone());
            self.reads.push_back(Read { addr, len, due: c + latency, sent: 0 });
            self.forwarded.push((addr, len));
            self.pending.pop_front();
            self.offering = false;
            self.outstanding += need;
            self.owed.push_back(need);
            self.stats.forwarded += 1;
            self.stats.oversized += usize::from(need > SIZE);
            self.stats.empty += usize::from(len == 0);
        }
        assert!(
            self.outstanding <= SIZE || self.owed.iter().any(|&b| b > SIZE),
            "{}: more than {SIZE} beats outstanding, none of them for an oversized request",
            self.state()
        );

        // The engine's data: taken whenever presented, unless it is an oversized request's.
        let taken = present && self.m.get_bit(p.tready);
        if let Some(b) = beat {
            if taken {
                self.in_flight.push_back(b);
                let head = self.reads.front_mut().expect("a read to send");
                head.sent += 1;
                if head.sent == beats(head.len) {
                    self.reads.pop_front();
                }
            } else {
                let head = self.reads.front().expect("a read to send");
                let need = beats(head.len);
                assert!(
                    need > SIZE,
                    "{}: the read engine's data stream was held up, beat {} of a {}-octet ({need}-beat) read",
                    self.state(),
                    head.sent,
                    head.len
                );
                self.stats.stalls += 1;
            }
        }
        self.holding = present && !taken;

        // The segmenter's side: the oldest beat sent, nothing else.
        if self.m.get_bit(p.c_tvalid) {
            let got = (self.m.get(p.c_tdata), self.m.get(p.c_tkeep), self.m.get_bit(p.c_tlast));
            let want = self.in_flight.front().unwrap_or_else(|| {
                panic!("{}: m_rd_tvalid with no beat sent: {got:x?} after {} beats", self.state(), self.received.len())
            });
            assert_eq!(
                &got,
                want,
                "{}: beat {} to the segmenter (data, keep, last)",
                self.state(),
                self.received.len()
            );
            if c_ready {
                self.received.push(got);
                self.in_flight.pop_front();
                self.outstanding -= 1;
                self.stats.beats += 1;
                let head = self.owed.front_mut().expect("a request owed beats");
                *head -= 1;
                if *head == 0 {
                    self.owed.pop_front();
                }
            }
        }
        self.m.tick();
        self.cycle += 1;
    }

    /// Runs until `done` holds, failing after `limit` cycles.
    fn run_until(&mut self, what: &str, limit: u64, done: impl Fn(&Bench) -> bool) {
        let start = self.cycle;
        while !done(self) {
            assert!(self.cycle - start < limit, "{}: not {what} within {limit} cycles", self.state());
            self.cycle();
        }
    }

    /// Checks that every request reached the engine and its beats the segmenter, in order.
    fn check_complete(&self, requests: &[(u64, u32)]) {
        assert_eq!(self.forwarded, requests, "the engine's requests");
        let want: Vec<Beat> =
            requests.iter().flat_map(|&(a, l)| (0..beats(l)).map(move |k| beat_of(a, l, k))).collect();
        assert_eq!(self.received.len(), want.len(), "beats to the segmenter");
        for (i, (got, want)) in self.received.iter().zip(&want).enumerate() {
            assert_eq!(got, want, "beat {i} to the segmenter");
        }
        assert_eq!(self.outstanding, 0);
    }
}

fn random_requests(rng: &mut StdRng, n: usize) -> Vec<(u64, u32)> {
    (0..n)
        .map(|_| {
            let len = match rng.gen_range(0..20) {
                0 => 0,
                1 => [8, 255, 256, 257, 264, 400][rng.gen_range(0..6)],
                2..=4 => rng.gen_range(1..=16),
                5..=14 => rng.gen_range(17..=256),
                _ => rng.gen_range(257..=400),
            };
            (rng.gen(), len)
        })
        .collect()
}

#[test]
fn tx_payload_requests_only_what_fits_and_never_stalls_the_read_stream() {
    trace::on_failure("tx_payload_requests_only_what_fits_and_never_stalls_the_read_stream", || {
        for seed in 1..=3u64 {
            let mut rng = StdRng::seed_from_u64(0x7a0 + seed);
            let requests = random_requests(&mut rng, 700);
            let total: u64 = requests.iter().map(|r| beats(r.1)).sum();
            let start = Rates { issue: 0.8, req_ready: 0.7, tvalid: 0.8, tready: 0.5 };
            let mut b = Bench::new(seed, requests.clone(), start);
            // Regimes of random length: the segmenter's pace from stopped to every cycle
            // (so the buffer runs full and empty), the engine's from sluggish to eager.
            // About 4 cycles a beat in practice; a stretch of 20k cycles without a request
            // forwarded or a beat taken is a hang (no regime lasts longer than 1500).
            let limit = 50 * total + 10_000;
            let (mut progress, mut since) = ((0, 0), 0);
            while !b.done() {
                assert!(b.cycle < limit, "{}: not done within {limit} cycles", b.state());
                if (b.stats.forwarded, b.stats.beats) != progress {
                    (progress, since) = ((b.stats.forwarded, b.stats.beats), b.cycle);
                }
                assert!(b.cycle - since < 20_000, "{}: no progress for {} cycles", b.state(), b.cycle - since);
                b.rates = Rates {
                    issue: [0.1, 0.5, 1.0][rng.gen_range(0..3)],
                    req_ready: [0.2, 0.6, 1.0][rng.gen_range(0..3)],
                    tvalid: [0.3, 0.8, 1.0][rng.gen_range(0..3)],
                    tready: [0.0, 0.1, 0.4, 0.8, 1.0][rng.gen_range(0..5)],
                };
                for _ in 0..rng.gen_range(50..1_500) {
                    b.cycle();
                }
            }
            b.check_complete(&requests);
            let s = &b.stats;
            assert!(
                s.oversized > 50 && s.empty > 10 && s.withheld > 2_000 && s.full > 2_000 && s.stalls > 100,
                "seed {seed}: too little coverage: {s:?}"
            );
        }
    });
}

#[test]
fn tx_payload_forwards_an_oversized_request_only_when_nothing_is_reserved() {
    trace::on_failure("tx_payload_forwards_an_oversized_request_only_when_nothing_is_reserved", || {
        // 4 beats, then 38 (more than the buffer), then 13.
        let requests = vec![(0x1000, 32), (0x2_0000_0003, 300), (0x3005, 100)];
        let eager = Rates { issue: 1.0, req_ready: 1.0, tvalid: 1.0, tready: 0.0 };
        let mut b = Bench::new(9, requests.clone(), eager);
        // The segmenter takes nothing: the first request's 4 beats are reserved and arrive,
        // and the oversized one waits however long that lasts.
        b.run_until("the first request's beats buffered", 200, |b| b.in_flight.len() == 4);
        for _ in 0..300 {
            b.cycle();
        }
        assert_eq!(b.forwarded.len(), 1, "{}: the oversized request went out with 4 beats reserved", b.state());
        // Once the segmenter has taken those 4 beats, the oversized request goes out.
        b.rates.tready = 1.0;
        b.run_until("the oversized request forwarded", 100, |b| b.forwarded.len() == 2);
        assert_eq!(b.outstanding, 38);
        // With the segmenter stopped again, its data fills the buffer and is then held
        // up (allowed for this request alone); the next request waits for room.
        b.rates.tready = 0.0;
        b.run_until("the read stream held up", 300, |b| b.stats.stalls > 0);
        assert_eq!(b.in_flight.len() as u64, SIZE, "{}: beats buffered when the stream was held up", b.state());
        for _ in 0..200 {
            b.cycle();
        }
        assert_eq!(b.forwarded.len(), 2, "{}: a 13-beat request went out with 38 reserved", b.state());
        // The segmenter drains it all; the last request goes out once 19 or fewer beats
        // remain reserved (checked every cycle by the bench), and its data flows freely.
        b.rates.tready = 0.3;
        b.run_until("all data taken by the segmenter", 2_000, Bench::done);
        b.check_complete(&requests);
    });
}
