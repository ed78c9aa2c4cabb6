//! AXI4-Lite master bus model: the host CPU reaching the RNIC's BAR0 (`s_axil_*`).
//!
//! [`AxilMasterCore`] is the bus logic at cycle level with no simulator in it;
//! [`AxilMaster`] maps it onto a [`Model`]'s ports and adds the blocking
//! [`AxilMaster::read32`] / [`AxilMaster::write32`] the driver's simulation backend calls.
//!
//! Transactions go one at a time, in queue order: a CPU's uncached accesses to a device
//! complete in program order, and the driver counts on a register read seeing every
//! earlier write, which issuing them one at a time gives without modelling write posting.
//! Within a write, AW and W are presented independently with random gaps, so either may
//! come first, as from a PCIe bridge: a register slave that expects them together is
//! caught. The responses are checked against the AXI-Lite rules, and a slave that breaks
//! them makes the master panic with the rule named.
//!
//! Per clock cycle a bench calls, in order: [`AxilMaster::drive`] (and the other bus
//! models' `drive`), `Model::eval`, [`AxilMaster::observe`] (and the others' `observe`),
//! then `Model::tick`. The blocking helpers run that cycle themselves and call back for
//! the other bus models in each [`Phase`].
use std::collections::VecDeque;
use std::fmt;

use rand::rngs::StdRng;
use rand::{Rng, SeedableRng};

use crate::axi::{coin, Handshake, RESP_OKAY};
use crate::{Model, Port};

/// One register access; `strb` bit i enables octet i of `data`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum AxilOp {
    Read { addr: u32 },
    Write { addr: u32, data: u32, strb: u8 },
}

impl fmt::Display for AxilOp {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            AxilOp::Read { addr } => write!(f, "read of {addr:#x}"),
            AxilOp::Write { addr, data, strb } => write!(f, "write of {data:#x} (strobes {strb:#x}) to {addr:#x}"),
        }
    }
}

/// A completed access: `data` is what a read returned (0 for writes).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct AxilDone {
    pub op: AxilOp,
    pub data: u32,
    pub resp: u8,
    /// Cycle the access started being presented, and cycle its response was taken.
    pub issued: u64,
    pub finished: u64,
}

/// What the master drives in one cycle; `None` means that channel's valid is low.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct AxilMasterSignals {
    pub aw: Option<u32>,
    /// Data and strobes.
    pub w: Option<(u32, u8)>,
    pub bready: bool,
    pub ar: Option<u32>,
    pub rready: bool,
}

/// What the slave drives in one cycle; `None` means that channel's valid is low.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct AxilSlaveSignals {
    pub awready: bool,
    pub wready: bool,
    /// BRESP.
    pub b: Option<u8>,
    pub arready: bool,
    /// RDATA and RRESP.
    pub r: Option<(u32, u8)>,
}

/// Where in a clock cycle a bus model is called: `Drive` before `Model::eval` to set its
/// outputs, `Observe` after it to sample the design and take the edge.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Phase {
    Drive,
    Observe,
}

/// The access being carried out.
struct Current {
    op: AxilOp,
    issued: u64,
    addr_taken: bool,
    data_taken: bool,
}

/// The master's bus logic. Call [`AxilMasterCore::drive`] then [`AxilMasterCore::edge`]
/// once per cycle.
pub struct AxilMasterCore {
    /// Probability of starting to present an address or data on a cycle.
    pub valid_rate: f64,
    /// Probability of BREADY and RREADY on a cycle.
    pub ready_rate: f64,
    queue: VecDeque<AxilOp>,
    current: Option<Current>,
    done: VecDeque<AxilDone>,
    out: AxilMasterSignals,
    b: Handshake<u8>,
    r: Handshake<(u32, u8)>,
    cycle: u64,
}

impl Default for AxilMasterCore {
    fn default() -> Self {
        Self::new()
    }
}

impl AxilMasterCore {
    /// An idle master with no gaps or back-pressure.
    pub fn new() -> Self {
        AxilMasterCore {
            valid_rate: 1.0,
            ready_rate: 1.0,
            queue: VecDeque::new(),
            current: None,
            done: VecDeque::new(),
            out: AxilMasterSignals::default(),
            b: Handshake::new("AXI-Lite slave, B channel"),
            r: Handshake::new("AXI-Lite slave, R channel"),
            cycle: 0,
        }
    }

    /// Queues an access.
    pub fn push(&mut self, op: AxilOp) {
        self.queue.push_back(op);
    }

    /// The oldest completed access not yet popped.
    pub fn pop_done(&mut self) -> Option<AxilDone> {
        self.done.pop_front()
    }

    /// Whether nothing is queued or under way.
    pub fn idle(&self) -> bool {
        self.queue.is_empty() && self.current.is_none()
    }

    /// Numbers cycles from `cycle` on, to match the model's count.
    pub fn set_cycle(&mut self, cycle: u64) {
        self.cycle = cycle;
    }

    /// The master's outputs for this cycle. They stay as they are until
    /// [`AxilMasterCore::edge`].
    pub fn drive(&mut self, rng: &mut impl Rng) -> &AxilMasterSignals {
        if self.current.is_none() {
            let issued = self.cycle;
            self.current =
                self.queue.pop_front().map(|op| Current { op, issued, addr_taken: false, data_taken: false });
        }
        self.out.bready = coin(rng, self.ready_rate);
        self.out.rready = coin(rng, self.ready_rate);
        let Some(c) = &self.current else { return &self.out };
        match c.op {
            AxilOp::Write { addr, data, strb } => {
                if !c.addr_taken && self.out.aw.is_none() && coin(rng, self.valid_rate) {
                    self.out.aw = Some(addr);
                }
                if !c.data_taken && self.out.w.is_none() && coin(rng, self.valid_rate) {
                    self.out.w = Some((data, strb));
                }
            }
            AxilOp::Read { addr } => {
                if !c.addr_taken && self.out.ar.is_none() && coin(rng, self.valid_rate) {
                    self.out.ar = Some(addr);
                }
            }
        }
        &self.out
    }

    /// The slave's signals this cycle (sampled after it settled); applies the clock edge.
    pub fn edge(&mut self, s: &AxilSlaveSignals) {
        // A response may only follow its request's handshakes, so it is judged against the
        // state before this edge's handshakes count.
        let (write_answerable, read_answerable) = match &self.current {
            Some(c @ Current { op: AxilOp::Write { .. }, .. }) => (c.addr_taken && c.data_taken, false),
            Some(c) => (false, c.addr_taken),
            None => (false, false),
        };
        assert!(
            s.b.is_none() || write_answerable,
            "AXI-Lite slave, B channel: BVALID before both the write's address and data were taken ({})",
            self.describe()
        );
        assert!(
            s.r.is_none() || read_answerable,
            "AXI-Lite slave, R channel: RVALID before the read's address was taken ({})",
            self.describe()
        );
        let b_taken = self.b.check(s.b.as_ref(), self.out.bready);
        let r_taken = self.r.check(s.r.as_ref(), self.out.rready);
        if let Some(c) = &mut self.current {
            if self.out.aw.is_some() && s.awready {
                self.out.aw = None;
                c.addr_taken = true;
            }
            if self.out.ar.is_some() && s.arready {
                self.out.ar = None;
                c.addr_taken = true;
            }
            if self.out.w.is_some() && s.wready {
                self.out.w = None;
                c.data_taken = true;
            }
        }
        if b_taken {
            self.finish(0, s.b.expect("taken"));
        }
        if let Some((data, resp)) = s.r.filter(|_| r_taken) {
            self.finish(data, resp);
        }
        self.cycle += 1;
    }

    fn finish(&mut self, data: u32, resp: u8) {
        let c = self.current.take().expect("a response belongs to the current access");
        self.done.push_back(AxilDone { op: c.op, data, resp, issued: c.issued, finished: self.cycle });
    }

    /// The access under way and how far it got, for panic messages.
    fn describe(&self) -> String {
        match &self.current {
            None => "no access under way".into(),
            Some(c) => format!("{}: address taken {}, data taken {}", c.op, c.addr_taken, c.data_taken),
        }
    }

    /// Carries out `op` alone, calling `cycle` once per clock with the master's signals;
    /// `cycle` runs the rest of the clock and returns the slave's signals. Panics if the
    /// access has not completed within `limit` cycles, or if other accesses are queued
    /// (their completions would be mixed up with this one's).
    pub fn run(
        &mut self,
        op: AxilOp,
        rng: &mut impl Rng,
        limit: u64,
        mut cycle: impl FnMut(&AxilMasterSignals) -> AxilSlaveSignals,
    ) -> AxilDone {
        assert!(self.idle() && self.done.is_empty(), "blocking AXI-Lite {op} while other accesses are queued");
        self.push(op);
        for _ in 0..limit {
            let out = *self.drive(rng);
            let slave = cycle(&out);
            self.edge(&slave);
            if let Some(done) = self.pop_done() {
                return done;
            }
        }
        panic!("AXI-Lite {op} not complete after {limit} cycles ({})", self.describe());
    }
}

/// An AXI4-Lite master on a model's slave port `<prefix>_*` (`s_axil`).
pub struct AxilMaster {
    pub core: AxilMasterCore,
    /// Cycle limit of one blocking access.
    pub timeout: u64,
    /// The master's own random source: the blocking helpers are called from the driver's
    /// register accessors, which have none to pass.
    rng: StdRng,
    ports: AxilPorts,
}

#[derive(Clone, Copy)]
struct AxilPorts {
    awaddr: Port,
    awvalid: Port,
    awready: Port,
    wdata: Port,
    wstrb: Port,
    wvalid: Port,
    wready: Port,
    bresp: Port,
    bvalid: Port,
    bready: Port,
    araddr: Port,
    arvalid: Port,
    arready: Port,
    rdata: Port,
    rresp: Port,
    rvalid: Port,
    rready: Port,
}

impl AxilPorts {
    fn new(model: &Model, prefix: &str) -> Self {
        let port = |name: &str| model.port(&format!("{prefix}_{name}"));
        AxilPorts {
            awaddr: port("awaddr"),
            awvalid: port("awvalid"),
            awready: port("awready"),
            wdata: port("wdata"),
            wstrb: port("wstrb"),
            wvalid: port("wvalid"),
            wready: port("wready"),
            bresp: port("bresp"),
            bvalid: port("bvalid"),
            bready: port("bready"),
            araddr: port("araddr"),
            arvalid: port("arvalid"),
            arready: port("arready"),
            rdata: port("rdata"),
            rresp: port("rresp"),
            rvalid: port("rvalid"),
            rready: port("rready"),
        }
    }

    fn drive(&self, model: &mut Model, out: &AxilMasterSignals) {
        model.set_bit(self.awvalid, out.aw.is_some());
        if let Some(addr) = out.aw {
            self.set_addr(model, self.awaddr, addr);
        }
        model.set_bit(self.wvalid, out.w.is_some());
        if let Some((data, strb)) = out.w {
            model.set(self.wdata, u64::from(data));
            model.set(self.wstrb, u64::from(strb));
        }
        model.set_bit(self.arvalid, out.ar.is_some());
        if let Some(addr) = out.ar {
            self.set_addr(model, self.araddr, addr);
        }
        model.set_bit(self.bready, out.bready);
        model.set_bit(self.rready, out.rready);
    }

    /// Drives an address, refusing one the port is too narrow for rather than letting
    /// `Model::set` wrap it onto another register.
    fn set_addr(&self, model: &mut Model, port: Port, addr: u32) {
        let width = port.width();
        assert!(width >= 32 || addr >> width == 0, "BAR0 offset {addr:#x} beyond the {width}-bit address port");
        model.set(port, u64::from(addr));
    }

    fn sample(&self, model: &Model) -> AxilSlaveSignals {
        AxilSlaveSignals {
            awready: model.get_bit(self.awready),
            wready: model.get_bit(self.wready),
            b: model.get_bit(self.bvalid).then(|| model.get(self.bresp) as u8),
            arready: model.get_bit(self.arready),
            r: model.get_bit(self.rvalid).then(|| (model.get(self.rdata) as u32, model.get(self.rresp) as u8)),
        }
    }
}

impl AxilMaster {
    /// Finds the ports; `seed` seeds the random gaps and back-pressure (none by default).
    pub fn new(model: &Model, prefix: &str, seed: u64) -> Self {
        let mut core = AxilMasterCore::new();
        core.set_cycle(model.cycles());
        let (rng, ports) = (StdRng::seed_from_u64(seed), AxilPorts::new(model, prefix));
        AxilMaster { core, timeout: 10_000, rng, ports }
    }

    /// Before `Model::eval`: drives the master's outputs for this cycle.
    pub fn drive(&mut self, model: &mut Model) {
        let out = *self.core.drive(&mut self.rng);
        self.ports.drive(model, &out);
    }

    /// After `Model::eval`, before `Model::tick`: samples the slave's signals and applies
    /// the coming edge to the master.
    pub fn observe(&mut self, model: &Model) {
        let s = self.ports.sample(model);
        self.core.edge(&s);
    }

    /// Writes a 32-bit register, clocking the model until the write is acknowledged;
    /// `others` runs the other bus models in each phase of every cycle. Panics on a
    /// timeout or an error response.
    pub fn write32(&mut self, model: &mut Model, offset: u32, value: u32, others: impl FnMut(&mut Model, Phase)) {
        self.blocking(model, AxilOp::Write { addr: offset, data: value, strb: 0xf }, others);
    }

    /// Reads a 32-bit register, as [`AxilMaster::write32`] writes one.
    pub fn read32(&mut self, model: &mut Model, offset: u32, others: impl FnMut(&mut Model, Phase)) -> u32 {
        self.blocking(model, AxilOp::Read { addr: offset }, others).data
    }

    fn blocking(&mut self, model: &mut Model, op: AxilOp, mut others: impl FnMut(&mut Model, Phase)) -> AxilDone {
        let ports = self.ports;
        let done = self.core.run(op, &mut self.rng, self.timeout, |out| {
            ports.drive(model, out);
            others(model, Phase::Drive);
            model.eval();
            let slave = ports.sample(model);
            others(model, Phase::Observe);
            model.tick();
            slave
        });
        assert_eq!(done.resp, RESP_OKAY, "BAR0 {op} answered with response {}", done.resp);
        done
    }
}
