//! Driver for the `rnic_atomic_unit` model (hdl/src/atomic/unit.rs), with a memory model
//! on its DMA read and write client ports.
//!
//! The memory plays the DMA engines as the unit sees them: any number of requests in
//! flight, read data and write acknowledgements in request order, each `latency` cycles
//! after its request (read) or data beat (write) was taken, at most one per cycle. To
//! catch hazards it is as strict as a real memory may be: a read returns the word as it is
//! when the request is taken, and a write lands only when it is acknowledged.
use std::collections::{HashMap, VecDeque};

use rand::rngs::StdRng;
use rand::{Rng, SeedableRng};

use crate::{Model, Port, SimError};

/// One op presented to the unit.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Default)]
pub struct UnitOp {
    /// IOVA of the target word, 8-aligned.
    pub addr: u64,
    /// 0x0 FetchAdd, 0x2 CmpSwap.
    pub aopcode: u8,
    /// Add Data or Swap Data.
    pub data: u64,
    /// Add Mask or Swap Mask.
    pub mask: u64,
    pub compare: u64,
    pub compare_mask: u64,
    /// Memory may have been written by someone else since the previous op.
    pub fresh: bool,
    /// The op may act once `done_count` has reached this.
    pub after: u16,
}

/// How often the environment is willing, per cycle: the probability that the op source
/// offers its next op and that each ready is high.
#[derive(Clone, Copy, Debug)]
pub struct Pressure {
    pub op_valid: f64,
    pub rd_req_ready: f64,
    pub wr_req_ready: f64,
    pub wr_tready: f64,
    pub res_ready: f64,
}

impl Pressure {
    /// Everything at full rate.
    pub const NONE: Pressure =
        Pressure { op_valid: 1.0, rd_req_ready: 1.0, wr_req_ready: 1.0, wr_tready: 1.0, res_ready: 1.0 };

    /// Random probabilities between `low` and 1 for each.
    pub fn random(rng: &mut impl Rng, low: f64) -> Pressure {
        let mut p = || rng.gen_range(low..=1.0);
        Pressure { op_valid: p(), rd_req_ready: p(), wr_req_ready: p(), wr_tready: p(), res_ready: p() }
    }
}

/// The memory behind the read and write client ports.
#[derive(Debug, Default)]
pub struct Memory {
    /// Words by address; a word never written reads as 0.
    pub words: HashMap<u64, u64>,
    /// Cycles from a read request (a write's data beat) taken to its data (its ack).
    pub latency: u64,
    /// Read data on its way: (cycle due, data).
    reads: VecDeque<(u64, u64)>,
    /// Write requests taken whose data beat has not come yet.
    write_addrs: VecDeque<u64>,
    /// Writes on their way to the ack: (cycle due, address, data).
    writes: VecDeque<(u64, u64, u64)>,
    /// Read requests taken so far.
    pub reads_taken: u64,
    /// Write acknowledgements given so far.
    pub writes_done: u64,
}

impl Memory {
    pub fn new(latency: u64) -> Memory {
        Memory { latency: latency.max(1), ..Default::default() }
    }

    /// The word at `addr`.
    pub fn word(&self, addr: u64) -> u64 {
        self.words.get(&addr).copied().unwrap_or(0)
    }

    /// Writes still on their way (requested or not yet acknowledged).
    pub fn writes_in_flight(&self) -> usize {
        self.write_addrs.len() + self.writes.len()
    }

    /// Reads still on their way.
    pub fn reads_in_flight(&self) -> usize {
        self.reads.len()
    }

    /// The cycle the next response of a queue is due: `latency` from now, after the last.
    fn due(&self, now: u64, last: Option<u64>) -> u64 {
        (now + self.latency).max(last.map_or(0, |l| l + 1))
    }
}

/// The unit with its ports resolved, the memory and an op source and result sink around
/// it; one call to [`AtomicUnitDriver::cycle`] per clock.
pub struct AtomicUnitDriver {
    pub model: Model,
    pub memory: Memory,
    pub pressure: Pressure,
    /// The unit's `done_count` input.
    pub done_count: u16,
    /// Ops still to present, in order.
    pub queue: VecDeque<UnitOp>,
    /// Original values out, in order, and the cycle each was taken.
    pub results: Vec<u64>,
    pub result_cycles: Vec<u64>,
    /// The cycle each op was taken.
    pub accept_cycles: Vec<u64>,
    /// Cycles since reset.
    pub cycle: u64,
    rng: StdRng,
    /// The source offers the queue's head (and must keep offering it until taken).
    offering: bool,
    ports: Ports,
}

struct Ports {
    s_op_valid: Port,
    s_op_ready: Port,
    s_op_addr: Port,
    s_op_aopcode: Port,
    s_op_data: Port,
    s_op_mask: Port,
    s_op_compare: Port,
    s_op_compare_mask: Port,
    s_op_fresh: Port,
    s_op_after: Port,
    done_count: Port,
    m_rd_req_valid: Port,
    m_rd_req_ready: Port,
    m_rd_req_addr: Port,
    m_rd_req_len: Port,
    s_rd_tdata: Port,
    s_rd_tkeep: Port,
    s_rd_tlast: Port,
    s_rd_tvalid: Port,
    s_rd_tready: Port,
    m_wr_req_valid: Port,
    m_wr_req_ready: Port,
    m_wr_req_addr: Port,
    m_wr_req_len: Port,
    m_wr_tdata: Port,
    m_wr_tkeep: Port,
    m_wr_tlast: Port,
    m_wr_tvalid: Port,
    m_wr_tready: Port,
    s_wr_done_valid: Port,
    m_res_valid: Port,
    m_res_ready: Port,
    m_res_original: Port,
}

impl AtomicUnitDriver {
    /// Opens the model, resets it, and puts a memory of `latency` cycles behind it;
    /// `seed` drives the random back-pressure.
    pub fn new(latency: u64, pressure: Pressure, seed: u64) -> Result<Self, SimError> {
        let mut model = Model::new("rnic_atomic_unit")?;
        let p = |n: &str| model.port(n);
        let ports = Ports {
            s_op_valid: p("s_op_valid"),
            s_op_ready: p("s_op_ready"),
            s_op_addr: p("s_op_addr"),
            s_op_aopcode: p("s_op_aopcode"),
            s_op_data: p("s_op_data"),
            s_op_mask: p("s_op_mask"),
            s_op_compare: p("s_op_compare"),
            s_op_compare_mask: p("s_op_compare_mask"),
            s_op_fresh: p("s_op_fresh"),
            s_op_after: p("s_op_after"),
            done_count: p("done_count"),
            m_rd_req_valid: p("m_rd_req_valid"),
            m_rd_req_ready: p("m_rd_req_ready"),
            m_rd_req_addr: p("m_rd_req_addr"),
            m_rd_req_len: p("m_rd_req_len"),
            s_rd_tdata: p("s_rd_tdata"),
            s_rd_tkeep: p("s_rd_tkeep"),
            s_rd_tlast: p("s_rd_tlast"),
            s_rd_tvalid: p("s_rd_tvalid"),
            s_rd_tready: p("s_rd_tready"),
            m_wr_req_valid: p("m_wr_req_valid"),
            m_wr_req_ready: p("m_wr_req_ready"),
            m_wr_req_addr: p("m_wr_req_addr"),
            m_wr_req_len: p("m_wr_req_len"),
            m_wr_tdata: p("m_wr_tdata"),
            m_wr_tkeep: p("m_wr_tkeep"),
            m_wr_tlast: p("m_wr_tlast"),
            m_wr_tvalid: p("m_wr_tvalid"),
            m_wr_tready: p("m_wr_tready"),
            s_wr_done_valid: p("s_wr_done_valid"),
            m_res_valid: p("m_res_valid"),
            m_res_ready: p("m_res_ready"),
            m_res_original: p("m_res_original"),
        };
        model.reset_for(2);
        Ok(AtomicUnitDriver {
            model,
            memory: Memory::new(latency),
            pressure,
            done_count: 0,
            queue: VecDeque::new(),
            results: Vec::new(),
            result_cycles: Vec::new(),
            accept_cycles: Vec::new(),
            cycle: 0,
            rng: StdRng::seed_from_u64(seed),
            offering: false,
            ports,
        })
    }

    /// Ops taken by the unit so far.
    pub fn accepted(&self) -> usize {
        self.accept_cycles.len()
    }

    /// Every op presented has been taken and its result has come out.
    pub fn drained(&self) -> bool {
        self.queue.is_empty() && self.results.len() == self.accepted()
    }

    /// Whether the unit was ready for an op during the last cycle.
    pub fn op_ready(&self) -> bool {
        self.model.get_bit(self.ports.s_op_ready)
    }

    /// One clock cycle of the unit with its environment.
    pub fn cycle(&mut self) {
        let (m, p, now) = (&mut self.model, &self.ports, self.cycle);
        let pressure = self.pressure;
        let rng = &mut self.rng;

        // Inputs for this cycle.
        if !self.offering && !self.queue.is_empty() {
            self.offering = rng.gen_bool(pressure.op_valid);
        }
        let op = self.queue.front().copied().filter(|_| self.offering).unwrap_or_default();
        m.set_bit(p.s_op_valid, self.offering);
        m.set(p.s_op_addr, op.addr);
        m.set(p.s_op_aopcode, u64::from(op.aopcode));
        m.set(p.s_op_data, op.data);
        m.set(p.s_op_mask, op.mask);
        m.set(p.s_op_compare, op.compare);
        m.set(p.s_op_compare_mask, op.compare_mask);
        m.set_bit(p.s_op_fresh, op.fresh);
        m.set(p.s_op_after, u64::from(op.after));
        m.set(p.done_count, u64::from(self.done_count));
        m.set_bit(p.m_rd_req_ready, rng.gen_bool(pressure.rd_req_ready));
        let read = self.memory.reads.front().copied().filter(|&(due, _)| due <= now);
        m.set_bit(p.s_rd_tvalid, read.is_some());
        m.set(p.s_rd_tdata, read.map_or(0, |(_, data)| data));
        m.set(p.s_rd_tkeep, 0xFF);
        m.set_bit(p.s_rd_tlast, true);
        m.set_bit(p.m_wr_req_ready, rng.gen_bool(pressure.wr_req_ready));
        m.set_bit(p.m_wr_tready, rng.gen_bool(pressure.wr_tready));
        // A write lands in memory as it is acknowledged.
        let ack = self.memory.writes.front().copied().filter(|&(due, _, _)| due <= now);
        if let Some((_, addr, data)) = ack {
            self.memory.writes.pop_front();
            self.memory.words.insert(addr, data);
            self.memory.writes_done += 1;
        }
        m.set_bit(p.s_wr_done_valid, ack.is_some());
        m.set_bit(p.m_res_ready, rng.gen_bool(pressure.res_ready));
        m.eval();

        // Handshakes of this cycle.
        if self.offering && m.get_bit(p.s_op_ready) {
            self.queue.pop_front();
            self.offering = false;
            self.accept_cycles.push(now);
        }
        if read.is_some() {
            assert!(m.get_bit(p.s_rd_tready), "cycle {now}: the unit did not take its read data");
            self.memory.reads.pop_front();
        }
        if m.get_bit(p.m_rd_req_valid) && m.get_bit(p.m_rd_req_ready) {
            let addr = m.get(p.m_rd_req_addr);
            assert_eq!(m.get(p.m_rd_req_len), 8, "cycle {now}: read length");
            assert_eq!(addr % 8, 0, "cycle {now}: read of an unaligned word {addr:#x}");
            let due = self.memory.due(now, self.memory.reads.back().map(|r| r.0));
            self.memory.reads.push_back((due, self.memory.word(addr)));
            self.memory.reads_taken += 1;
        }
        // The data beat before the request of this cycle: a beat must follow its request.
        if m.get_bit(p.m_wr_tvalid) && m.get_bit(p.m_wr_tready) {
            let addr = self
                .memory
                .write_addrs
                .pop_front()
                .unwrap_or_else(|| panic!("cycle {now}: write data beat before its request was taken"));
            assert_eq!(m.get(p.m_wr_tkeep), 0xFF, "cycle {now}: write tkeep");
            assert!(m.get_bit(p.m_wr_tlast), "cycle {now}: write beat without tlast");
            let due = self.memory.due(now, self.memory.writes.back().map(|w| w.0));
            self.memory.writes.push_back((due, addr, m.get(p.m_wr_tdata)));
        }
        if m.get_bit(p.m_wr_req_valid) && m.get_bit(p.m_wr_req_ready) {
            let addr = m.get(p.m_wr_req_addr);
            assert_eq!(m.get(p.m_wr_req_len), 8, "cycle {now}: write length");
            assert_eq!(addr % 8, 0, "cycle {now}: write of an unaligned word {addr:#x}");
            self.memory.write_addrs.push_back(addr);
        }
        if m.get_bit(p.m_res_valid) && m.get_bit(p.m_res_ready) {
            self.results.push(m.get(p.m_res_original));
            self.result_cycles.push(now);
        }
        m.tick();
        self.cycle += 1;
    }

    /// Runs until `done` holds (checked before each cycle), at most `limit` cycles;
    /// panics naming `what` if it never does.
    pub fn run_until(&mut self, limit: u64, what: &str, mut done: impl FnMut(&Self) -> bool) {
        let start = self.cycle;
        while !done(self) {
            assert!(
                self.cycle - start < limit,
                "no progress: {what} not reached in {limit} cycles (cycle {}, {} ops taken, {} results, \
                 {} queued, {} reads and {} writes in flight)",
                self.cycle,
                self.accepted(),
                self.results.len(),
                self.queue.len(),
                self.memory.reads_in_flight(),
                self.memory.writes_in_flight()
            );
            self.cycle();
        }
    }

    /// Runs until every queued op's result came out and no write is in flight.
    pub fn drain(&mut self, limit: u64) {
        self.run_until(limit, "all results out", |d| d.drained() && d.memory.writes_in_flight() == 0);
    }
}
