//! AXI4 master bus model: plays the RNIC's DMA master on a design's 64-bit slave port
//! (`<prefix>_*`, no ID ports), for blocks that sit behind it.
//!
//! What the master does:
//! - INCR bursts of full 8-octet beats, 1 to 256 of them, from any start address, one ID,
//!   responses expected in request order; requests are issued in the order they were
//!   queued ([`AxiMaster::read`], [`AxiMaster::write`]).
//! - Each channel presents its next item as soon as the last one is taken, or after
//!   random gaps (`valid_rate`); W beats are presented without waiting for their AW, as
//!   AXI allows. RREADY and BREADY are random (`ready_rate`).
//! - It checks the slave: R beats and B responses only for requests taken, `rlast` on
//!   each burst's last beat and only there, B only after the burst's AW and last W beat,
//!   valid and payload held until ready. A broken rule panics with the rule named.
//!
//! Finished requests come out in [`AxiMaster::done_reads`] and [`AxiMaster::done_writes`]
//! with the cycles of their handshakes. A read is marked `raced` when one of this
//! master's writes to any of its octets was in flight (AW taken, B not yet) at some time
//! during it: a slave may then return either value.
//!
//! Per clock cycle a bench calls [`AxiMaster::drive`] (and the other bus models' `drive`),
//! `Model::eval`, [`AxiMaster::observe`], then `Model::tick`.
use std::collections::VecDeque;

use rand::Rng;

use crate::axi::{coin, AxiAddr, Handshake, BURST_INCR};
use crate::{Model, Port};

/// Octets per beat.
const LANES: u64 = 8;

/// A read whose last beat was taken.
#[derive(Clone, Debug)]
pub struct ReadDone {
    /// Its number among all requests queued (reads and writes), from 0.
    pub seq: u64,
    pub req: AxiAddr,
    pub data: Vec<u64>,
    /// The worst response of its beats.
    pub resp: u8,
    /// Cycles of the AR handshake, the first beat and the last beat.
    pub start: u64,
    pub first: u64,
    pub end: u64,
    pub raced: bool,
}

/// A write whose B was taken.
#[derive(Clone, Debug)]
pub struct WriteDone {
    pub seq: u64,
    pub req: AxiAddr,
    pub data: Vec<u64>,
    pub strb: Vec<u8>,
    pub resp: u8,
    /// Cycles of the AW and B handshakes.
    pub start: u64,
    pub end: u64,
}

struct Read {
    seq: u64,
    req: AxiAddr,
    start: u64,
    first: u64,
    data: Vec<u64>,
    resp: u8,
}

struct Write {
    seq: u64,
    req: AxiAddr,
    data: Vec<u64>,
    strb: Vec<u8>,
    /// Cycle of the AW handshake.
    start: Option<u64>,
}

/// The octets a burst's beats cover.
fn span(req: &AxiAddr) -> (u64, u64) {
    let lo = req.addr & !(LANES - 1);
    (lo, lo + req.beats() as u64 * LANES)
}

/// An INCR request of `beats` full beats at `addr`, which must stay in its 4 KiB page.
fn request(addr: u64, beats: usize) -> AxiAddr {
    assert!((1..=256).contains(&beats), "a burst has 1 to 256 beats, not {beats}");
    let req = AxiAddr { id: 0, addr, len: (beats - 1) as u8, size: LANES.trailing_zeros() as u8, burst: BURST_INCR };
    let (lo, hi) = span(&req);
    assert_eq!(lo / 4096, (hi - 1) / 4096, "burst at {addr:#x} of {beats} beats crosses 4 KiB");
    req
}

struct AddrPorts {
    addr: Port,
    len: Port,
    size: Port,
    burst: Port,
    valid: Port,
    ready: Port,
}

impl AddrPorts {
    fn new(model: &Model, prefix: &str) -> Self {
        let port = |name: &str| model.port(&format!("{prefix}{name}"));
        AddrPorts {
            addr: port("addr"),
            len: port("len"),
            size: port("size"),
            burst: port("burst"),
            valid: port("valid"),
            ready: port("ready"),
        }
    }

    fn drive(&self, model: &mut Model, req: Option<&AxiAddr>) {
        model.set_bit(self.valid, req.is_some());
        if let Some(r) = req {
            model.set(self.addr, r.addr);
            model.set(self.len, r.len.into());
            model.set(self.size, r.size.into());
            model.set(self.burst, r.burst.into());
        }
    }
}

/// An AXI4 master on a model's slave port `<prefix>_*`.
pub struct AxiMaster {
    /// Probability that a channel with something to send presents it on a cycle.
    pub valid_rate: f64,
    /// Probability of RREADY and of BREADY on a cycle.
    pub ready_rate: f64,
    pub done_reads: VecDeque<ReadDone>,
    pub done_writes: VecDeque<WriteDone>,
    /// Beats taken: R, W.
    pub beats_read: u64,
    pub beats_written: u64,
    cycle: u64,
    seq: u64,
    /// Reads not yet taken, then those taken and not finished.
    queued_reads: VecDeque<Read>,
    reads: VecDeque<Read>,
    /// Writes not answered, in order; the first `aw_taken` have had their AW taken, the
    /// first `w_done` all their W beats, and `w_beat` beats of the next are taken.
    writes: VecDeque<Write>,
    aw_taken: usize,
    w_done: usize,
    w_beat: usize,
    /// Finished writes that a read still in flight may have raced: span, B cycle.
    recent: VecDeque<((u64, u64), u64)>,
    // What this cycle drives.
    ar_valid: bool,
    aw_valid: bool,
    w_valid: bool,
    rready: bool,
    bready: bool,
    r: Handshake<(u64, u8, bool)>,
    b: Handshake<u8>,
    ar_ports: AddrPorts,
    aw_ports: AddrPorts,
    wdata: Port,
    wstrb: Port,
    wlast: Port,
    wvalid: Port,
    wready: Port,
    bresp: Port,
    bvalid: Port,
    bready_port: Port,
    rdata: Port,
    rresp: Port,
    rlast: Port,
    rvalid: Port,
    rready_port: Port,
}

impl AxiMaster {
    /// Finds the ports; cycles are numbered as the model counts them.
    pub fn new(model: &Model, prefix: &str) -> Self {
        let port = |name: &str| model.port(&format!("{prefix}_{name}"));
        assert_eq!(port("rdata").width(), 64, "{prefix}: the master model is 64 bits wide");
        AxiMaster {
            valid_rate: 1.0,
            ready_rate: 1.0,
            done_reads: VecDeque::new(),
            done_writes: VecDeque::new(),
            beats_read: 0,
            beats_written: 0,
            cycle: model.cycles(),
            seq: 0,
            queued_reads: VecDeque::new(),
            reads: VecDeque::new(),
            writes: VecDeque::new(),
            aw_taken: 0,
            w_done: 0,
            w_beat: 0,
            recent: VecDeque::new(),
            ar_valid: false,
            aw_valid: false,
            w_valid: false,
            rready: false,
            bready: false,
            r: Handshake::new("AXI slave, R channel"),
            b: Handshake::new("AXI slave, B channel"),
            ar_ports: AddrPorts::new(model, &format!("{prefix}_ar")),
            aw_ports: AddrPorts::new(model, &format!("{prefix}_aw")),
            wdata: port("wdata"),
            wstrb: port("wstrb"),
            wlast: port("wlast"),
            wvalid: port("wvalid"),
            wready: port("wready"),
            bresp: port("bresp"),
            bvalid: port("bvalid"),
            bready_port: port("bready"),
            rdata: port("rdata"),
            rresp: port("rresp"),
            rlast: port("rlast"),
            rvalid: port("rvalid"),
            rready_port: port("rready"),
        }
    }

    /// Queues a read of `beats` beats at `addr`; returns its `seq`.
    pub fn read(&mut self, addr: u64, beats: usize) -> u64 {
        let req = request(addr, beats);
        self.seq += 1;
        self.queued_reads.push_back(Read { seq: self.seq - 1, req, start: 0, first: 0, data: Vec::new(), resp: 0 });
        self.seq - 1
    }

    /// Queues a write of one beat per element of `data` at `addr`, with its strobes;
    /// returns its `seq`.
    pub fn write(&mut self, addr: u64, data: &[u64], strb: &[u8]) -> u64 {
        assert_eq!(data.len(), strb.len(), "one strobe byte per beat");
        let req = request(addr, data.len());
        self.seq += 1;
        self.writes.push_back(Write { seq: self.seq - 1, req, data: data.to_vec(), strb: strb.to_vec(), start: None });
        self.seq - 1
    }

    /// Reads queued or in flight.
    pub fn reads_pending(&self) -> usize {
        self.queued_reads.len() + self.reads.len()
    }

    /// Writes queued or in flight.
    pub fn writes_pending(&self) -> usize {
        self.writes.len()
    }

    /// Writes whose AW was taken and whose B was not.
    pub fn writes_in_flight(&self) -> impl Iterator<Item = &AxiAddr> {
        self.writes.iter().take(self.aw_taken).map(|w| &w.req)
    }

    /// Nothing queued, nothing in flight.
    pub fn idle(&self) -> bool {
        self.reads_pending() == 0 && self.writes_pending() == 0
    }

    /// Cycles seen so far (as the model counts them).
    pub fn cycle(&self) -> u64 {
        self.cycle
    }

    /// Before `Model::eval`: drives the master's outputs for this cycle.
    pub fn drive(&mut self, model: &mut Model, rng: &mut impl Rng) {
        // A valid once raised stays up until taken.
        self.ar_valid = self.ar_valid || (!self.queued_reads.is_empty() && coin(rng, self.valid_rate));
        self.aw_valid = self.aw_valid || (self.aw_taken < self.writes.len() && coin(rng, self.valid_rate));
        self.w_valid = self.w_valid || (self.w_done < self.writes.len() && coin(rng, self.valid_rate));
        self.rready = coin(rng, self.ready_rate);
        self.bready = coin(rng, self.ready_rate);
        self.ar_ports.drive(model, self.queued_reads.front().filter(|_| self.ar_valid).map(|r| &r.req));
        self.aw_ports.drive(model, self.writes.get(self.aw_taken).filter(|_| self.aw_valid).map(|w| &w.req));
        model.set_bit(self.wvalid, self.w_valid);
        if self.w_valid {
            let w = &self.writes[self.w_done];
            model.set(self.wdata, w.data[self.w_beat]);
            model.set(self.wstrb, w.strb[self.w_beat].into());
            model.set_bit(self.wlast, self.w_beat + 1 == w.data.len());
        }
        model.set_bit(self.rready_port, self.rready);
        model.set_bit(self.bready_port, self.bready);
    }

    /// After `Model::eval`, before `Model::tick`: samples the slave's signals and applies
    /// the coming edge. Responses are checked against what was taken before this cycle.
    pub fn observe(&mut self, model: &Model) {
        let now = self.cycle;
        let r = model
            .get_bit(self.rvalid)
            .then(|| (model.get(self.rdata), model.get(self.rresp) as u8, model.get_bit(self.rlast)));
        if self.r.check(r.as_ref(), self.rready) {
            let (data, resp, last) = r.expect("checked");
            let head = self.reads.front_mut().unwrap_or_else(|| panic!("cycle {now}: R beat with no read in flight"));
            if head.data.is_empty() {
                head.first = now;
            }
            head.data.push(data);
            head.resp = head.resp.max(resp);
            let done = head.data.len() == head.req.beats();
            assert_eq!(last, done, "cycle {now}: rlast {last} on beat {} of {:?}", head.data.len() - 1, head.req);
            self.beats_read += 1;
            if done {
                let read = self.reads.pop_front().expect("head");
                let raced = self.raced(&read);
                self.done_reads.push_back(ReadDone {
                    seq: read.seq,
                    req: read.req,
                    data: read.data,
                    resp: read.resp,
                    start: read.start,
                    first: read.first,
                    end: now,
                    raced,
                });
            }
        }
        let b = model.get_bit(self.bvalid).then(|| model.get(self.bresp) as u8);
        if self.b.check(b.as_ref(), self.bready) {
            assert!(self.aw_taken > 0 && self.w_done > 0, "cycle {now}: B before its burst's AW and last W beat");
            let w = self.writes.pop_front().expect("B for a write");
            self.aw_taken -= 1;
            self.w_done -= 1;
            let start = w.start.expect("AW taken");
            self.recent.push_back((span(&w.req), now));
            self.done_writes.push_back(WriteDone {
                seq: w.seq,
                req: w.req,
                data: w.data,
                strb: w.strb,
                resp: b.expect("checked"),
                start,
                end: now,
            });
        }
        if self.ar_valid && model.get_bit(self.ar_ports.ready) {
            let mut read = self.queued_reads.pop_front().expect("AR offered");
            read.start = now;
            self.reads.push_back(read);
            self.ar_valid = false;
        }
        if self.aw_valid && model.get_bit(self.aw_ports.ready) {
            self.writes[self.aw_taken].start = Some(now);
            self.aw_taken += 1;
            self.aw_valid = false;
        }
        if self.w_valid && model.get_bit(self.wready) {
            self.w_beat += 1;
            if self.w_beat == self.writes[self.w_done].data.len() {
                self.w_done += 1;
                self.w_beat = 0;
            }
            self.w_valid = false;
            self.beats_written += 1;
        }
        // Finished writes matter only to reads that began before they ended.
        let oldest = self.reads.front().map_or(now, |r| r.start);
        while self.recent.front().is_some_and(|&(_, end)| end < oldest) {
            self.recent.pop_front();
        }
        self.cycle += 1;
    }

    /// Whether a write to `read`'s octets was in flight at some time from its AR to now.
    fn raced(&self, read: &Read) -> bool {
        let (lo, hi) = span(&read.req);
        let overlaps = |(a, b): (u64, u64)| a < hi && lo < b;
        let finished = self.recent.iter().any(|&(s, end)| end >= read.start && overlaps(s));
        let in_flight = self.writes_in_flight().any(|w| overlaps(span(w)));
        finished || in_flight
    }
}
