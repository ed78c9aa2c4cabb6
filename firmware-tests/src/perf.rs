//! The measurements, perftest-style, on a [`Pair`]: every figure is in clock cycles of the
//! RNIC, counted by the simulator, and every run checks the data it moved.
//!
//! Time starts when the first doorbell write has completed and ends when the last
//! completion is visible in host memory (polling costs no cycles: the host memory is the
//! simulator's). Wire octets are whole MPA FPDUs on the link (length, ULPDU, pad, CRC).
use std::time::Instant;

use rnic_driver::{Completion, CqeOpcode, CqeStatus, RecvRequest, WorkRequest};

use crate::pair::{End, Pair, DEPTH};

/// No run may take longer than this many cycles (a hang is an error, not a wait).
pub(crate) const CYCLE_BUDGET: u64 = 500_000_000;

/// What a bandwidth run measured.
#[derive(Clone, Copy, Debug)]
pub struct Bandwidth {
    pub size: u32,
    pub messages: u64,
    pub cycles: u64,
    /// Octets of MPA FPDUs on the link carrying the data.
    pub wire_octets: u64,
    /// Beats (8 octets) A's DMA read, WQEs and payload: A's read channel is busy that
    /// many cycles at least.
    pub a_read_beats: u64,
    /// Wall-clock seconds and cycles simulated (per RNIC) in them.
    pub seconds: f64,
}

impl Bandwidth {
    pub fn bytes_per_cycle(&self) -> f64 {
        (self.messages * u64::from(self.size)) as f64 / self.cycles as f64
    }

    pub fn wire_bytes_per_cycle(&self) -> f64 {
        self.wire_octets as f64 / self.cycles as f64
    }

    pub fn messages_per_cycle(&self) -> f64 {
        self.messages as f64 / self.cycles as f64
    }

    pub fn a_read_beats_per_message(&self) -> f64 {
        self.a_read_beats as f64 / self.messages as f64
    }

    /// Simulated cycles per wall-clock second (each of the two RNICs runs this many).
    pub fn sim_cycles_per_second(&self) -> f64 {
        self.cycles as f64 / self.seconds
    }
}

/// Latencies in cycles, one per iteration, kept sorted.
#[derive(Clone, Debug)]
pub struct Latency {
    sorted: Vec<u64>,
}

impl Latency {
    /// The latencies of a run (at least one).
    pub fn from_samples(samples: Vec<u64>) -> Latency {
        Latency::new(samples)
    }

    fn new(mut samples: Vec<u64>) -> Latency {
        assert!(!samples.is_empty(), "at least one sample");
        samples.sort_unstable();
        Latency { sorted: samples }
    }

    pub fn count(&self) -> usize {
        self.sorted.len()
    }

    pub fn min(&self) -> u64 {
        self.sorted[0]
    }

    pub fn median(&self) -> u64 {
        self.sorted[self.sorted.len() / 2]
    }

    pub fn max(&self) -> u64 {
        self.sorted[self.sorted.len() - 1]
    }

    pub fn mean(&self) -> f64 {
        self.sorted.iter().sum::<u64>() as f64 / self.sorted.len() as f64
    }
}

/// The next completion on `end`'s CQ, clocking the pair one cycle at a time until it is
/// there; returns it with the cycle at which it was first visible.
pub(crate) fn next_completion(end: &End<'_>, start: u64) -> Result<(Completion, u64), String> {
    loop {
        let now = end.hal().cycles();
        if let Some(c) = end.cq.poll().map_err(|e| e.to_string())? {
            if c.status != CqeStatus::Success {
                return Err(format!("QP {} completed wr_id {} with {:?}", c.qpn, c.wr_id, c.status));
            }
            return Ok((c, now));
        }
        if now - start > CYCLE_BUDGET {
            return Err(format!("no completion after {CYCLE_BUDGET} cycles"));
        }
        end.hal().run_idle(1);
    }
}

/// What a bandwidth run posts.
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
pub enum Direction {
    /// A writes its sources into B's sinks.
    Write,
    /// A reads B's sources into its own sinks.
    Read,
}

/// `iters` messages of `size` octets on every QP, up to [`DEPTH`] in flight per QP, all
/// signaled; then checks that every sink holds its source.
pub fn bandwidth(pair: &mut Pair<'_>, direction: Direction, size: u32, iters: u32) -> Result<Bandwidth, String> {
    let qps = pair.a.qps.len();
    let (mut posted, mut done) = (vec![0u32; qps], vec![0u32; qps]);
    let total = u64::from(iters) * qps as u64;
    let wire = |p: &Pair<'_>| match direction {
        Direction::Write => p.a.hal().tx_octets(),
        Direction::Read => p.b.hal().tx_octets(),
    };
    let read_beats = |p: &Pair<'_>| p.a.hal().with_dma_timing(|t| t.stats.beats_read).unwrap_or(0);
    let (wall, wire0, beats0, start) = (Instant::now(), wire(pair), read_beats(pair), pair.a.hal().cycles());
    let (mut completed, mut last) = (0u64, start);
    while completed < total {
        for q in 0..qps {
            let room = (DEPTH - (posted[q] - done[q])).min(iters - posted[q]);
            if room == 0 {
                continue;
            }
            let (local, remote) = match direction {
                Direction::Write => (pair.a.mr.sge(pair.a.source(q), size), pair.b.mr.remote(pair.b.sink(q))),
                Direction::Read => (pair.a.mr.sge(pair.a.sink(q), size), pair.b.mr.remote(pair.b.source(q))),
            };
            let (local, remote) = (local.map_err(|e| e.to_string())?, remote.map_err(|e| e.to_string())?);
            let wrs: Vec<WorkRequest> = (0..room)
                .map(|i| {
                    let wr_id = (q as u64) << 32 | u64::from(posted[q] + i);
                    match direction {
                        Direction::Write => WorkRequest::Write { wr_id, local, remote, signaled: true },
                        Direction::Read => WorkRequest::Read { wr_id, local, remote, signaled: true },
                    }
                })
                .collect();
            pair.a.qps[q].post_send_batch(&wrs).map_err(|e| e.to_string())?;
            posted[q] += room;
        }
        let mut any = false;
        while let Some(c) = pair.a.cq.poll().map_err(|e| e.to_string())? {
            if c.status != CqeStatus::Success {
                return Err(format!("QP {} completed wr_id {:#x} with {:?}", c.qpn, c.wr_id, c.status));
            }
            done[c.qpn as usize] += 1;
            completed += 1;
            last = pair.a.hal().cycles();
            any = true;
        }
        if !any {
            if pair.a.hal().cycles() - start > CYCLE_BUDGET {
                return Err(format!("{completed} of {total} completions after {CYCLE_BUDGET} cycles"));
            }
            pair.a.hal().run_idle(4);
        }
    }
    let seconds = wall.elapsed().as_secs_f64();
    let wire_octets = wire(pair) - wire0;
    let a_read_beats = read_beats(pair) - beats0;
    // Writes complete when sent: give the last ones time to land before checking.
    pair.a.hal().run_idle(2 * pair.config.dma_latency + 2_000);
    for q in 0..qps {
        let (from, to) = match direction {
            Direction::Write => (pair.a.bytes(pair.a.source(q), size), pair.b.bytes(pair.b.sink(q), size)),
            Direction::Read => (pair.b.bytes(pair.b.source(q), size), pair.a.bytes(pair.a.sink(q), size)),
        };
        if from != to {
            return Err(format!("QP {q}: the {size} octets placed differ from their source"));
        }
    }
    Ok(Bandwidth { size, messages: total, cycles: last - start, wire_octets, a_read_beats, seconds })
}

/// One Read of `size` octets at a time on QP 0, `iters` times: cycles from the doorbell to
/// the Read's completion at A; the placed data is checked after each.
pub fn read_latency(pair: &mut Pair<'_>, size: u32, iters: u32) -> Result<Latency, String> {
    let local = pair.a.mr.sge(pair.a.sink(0), size).map_err(|e| e.to_string())?;
    let remote = pair.b.mr.remote(pair.b.source(0)).map_err(|e| e.to_string())?;
    let mut samples = Vec::new();
    for i in 0..iters {
        // A fresh source each time, so that every Read has something new to bring.
        let mark = (u64::from(i) << 8 | 0xa5).to_le_bytes();
        pair.b.buf.write_bytes(pair.b.source(0) as usize, &mark[..size.min(8) as usize]);
        pair.a.qps[0]
            .post_send(&WorkRequest::Read { wr_id: u64::from(i), local, remote, signaled: true })
            .map_err(|e| e.to_string())?;
        let start = pair.a.hal().cycles();
        let (c, at) = next_completion(&pair.a, start)?;
        if c.opcode != CqeOpcode::RdmaRead || c.wr_id != u64::from(i) {
            return Err(format!("expected Read {i}, got {c:?}"));
        }
        if pair.a.bytes(pair.a.sink(0), size) != pair.b.bytes(pair.b.source(0), size) {
            return Err(format!("Read {i}: the octets placed differ from the source"));
        }
        samples.push(at - start);
    }
    Ok(Latency::new(samples))
}

/// Ping-pong on QP 0: A sends `size` octets to B, B sends them back, `iters` times. Each
/// latency is one way, from the sender's doorbell to the receive's completion at the peer;
/// every message is checked where it lands.
pub fn pingpong(pair: &mut Pair<'_>, size: u32, iters: u32) -> Result<Latency, String> {
    let mut samples = Vec::new();
    for i in 0..iters {
        for (from, to) in [(0, 1), (1, 0)] {
            let (sender, receiver) = if from == 0 { (&mut pair.a, &mut pair.b) } else { (&mut pair.b, &mut pair.a) };
            let sink = receiver.mr.sge(receiver.sink(0), size).map_err(|e| e.to_string())?;
            receiver.qps[0].post_recv(&RecvRequest { wr_id: u64::from(i), local: sink }).map_err(|e| e.to_string())?;
            let mark = (u64::from(i) << 16 | from << 8 | to).to_le_bytes();
            sender.buf.write_bytes(sender.source(0) as usize, &mark[..size.min(8) as usize]);
            let local = sender.mr.sge(sender.source(0), size).map_err(|e| e.to_string())?;
            sender.qps[0]
                .post_send(&WorkRequest::Send {
                    wr_id: u64::from(i),
                    local,
                    solicited: false,
                    invalidate: None,
                    signaled: false,
                })
                .map_err(|e| e.to_string())?;
            let start = sender.hal().cycles();
            let (c, at) = next_completion(receiver, start)?;
            if c.opcode != CqeOpcode::Recv || c.wr_id != u64::from(i) || c.byte_len != size {
                return Err(format!("expected the receive of message {i}, got {c:?}"));
            }
            if receiver.bytes(receiver.sink(0), size) != sender.bytes(sender.source(0), size) {
                return Err(format!("message {i}: the octets received differ from those sent"));
            }
            samples.push(at - start);
        }
    }
    Ok(Latency::new(samples))
}
