//! AXI4 slave bus model: host memory as the RNIC's DMA master (`m_axi_*`) sees it.
//!
//! [`AxiSlaveCore`] is the bus logic at cycle level with no simulator in it, so tests can
//! drive it from behavioural masters; [`AxiSlave`] maps it onto a [`Model`]'s ports.
//!
//! What the slave does:
//! - INCR bursts of full-width beats, 1 to 256 of them, from any start address (the lanes
//!   below an unaligned start are not part of the transfer); the data width is the width
//!   of the `wdata` port.
//! - Up to `max_outstanding` bursts per direction in flight, answered in request order with
//!   their IDs: the first R beat `read_latency` cycles after the AR handshake, B
//!   `write_latency` cycles after the last W beat. Back-to-back bursts therefore stream at
//!   one beat per cycle, as a PCIe host does once its pipeline is full.
//! - Read data is taken from memory when its burst's first beat is due, and write data is
//!   stored when its B is given: a device that tells the host a write is done before it
//!   has the B response is caught handing over stale memory.
//! - WREADY waits until the burst's AW has been taken (AXI lets a slave do that).
//! - Random back-pressure (`ready_rate`) and response gaps (`valid_rate`).
//! - An access to unmapped memory or across 4 KiB is answered DECERR or SLVERR with
//!   nothing written, and recorded by [`HostMemory`] (which panics on it by default).
//! - A master that breaks the AXI rules makes it panic with the rule named.
//!
//! Per clock cycle a bench calls, in order: [`AxiSlave::drive`] (and the other bus models'
//! `drive`), `Model::eval`, [`AxiSlave::observe`] (and the others' `observe`), then
//! `Model::tick`. The slave's outputs never depend on the master's in the same cycle, so
//! the order among bus models within a phase does not matter.
use std::collections::VecDeque;
use std::fmt;

use rand::Rng;

use crate::axis::lane_mask;
use crate::host_memory::{FaultKind, HostMemory};
use crate::{Model, Port};

/// AXI response codes.
pub const RESP_OKAY: u8 = 0;
pub const RESP_SLVERR: u8 = 2;
pub const RESP_DECERR: u8 = 3;

/// AWBURST/ARBURST for incrementing bursts, the only kind supported.
pub const BURST_INCR: u8 = 1;

/// An address-channel request (AW or AR).
#[derive(Clone, Copy, PartialEq, Eq, Default)]
pub struct AxiAddr {
    pub id: u64,
    pub addr: u64,
    /// Beats minus one.
    pub len: u8,
    /// log2 of the octets per beat.
    pub size: u8,
    pub burst: u8,
}

impl AxiAddr {
    pub fn beats(&self) -> usize {
        usize::from(self.len) + 1
    }
}

impl fmt::Debug for AxiAddr {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "id {} addr {:#x} len {} size {} burst {}", self.id, self.addr, self.len, self.size, self.burst)
    }
}

/// A W beat: `data` has one octet per lane, `strb` bit i enables lane i.
#[derive(Clone, Debug, PartialEq, Eq, Default)]
pub struct WBeat {
    pub data: Vec<u8>,
    pub strb: u64,
    pub last: bool,
}

/// A B response.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct BResp {
    pub id: u64,
    pub resp: u8,
}

/// An R beat.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct RBeat {
    pub id: u64,
    pub data: Vec<u8>,
    pub resp: u8,
    pub last: bool,
}

/// What the master drives in one cycle; `None` means that channel's valid is low.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct AxiMasterSignals {
    pub aw: Option<AxiAddr>,
    pub w: Option<WBeat>,
    pub bready: bool,
    pub ar: Option<AxiAddr>,
    pub rready: bool,
}

/// What the slave drives in one cycle; `None` means that channel's valid is low.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct AxiSlaveSignals {
    pub awready: bool,
    pub wready: bool,
    pub b: Option<BResp>,
    pub arready: bool,
    pub r: Option<RBeat>,
}

/// Counters for bandwidth figures: beats over busy cycles is the achieved rate.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct AxiStats {
    pub beats_read: u64,
    pub beats_written: u64,
    /// Bursts whose last R beat was taken.
    pub read_bursts: u64,
    /// Bursts whose B was taken.
    pub write_bursts: u64,
    /// Cycles with a read requested or in flight.
    pub read_busy_cycles: u64,
    /// Cycles with a write requested or in flight.
    pub write_busy_cycles: u64,
}

/// `true` with probability `p`; draws nothing at the extremes, so a run at full rate uses
/// no random numbers.
pub(crate) fn coin(rng: &mut impl Rng, p: f64) -> bool {
    p >= 1.0 || (p > 0.0 && rng.gen_bool(p))
}

/// Checks the sending side of one valid/ready channel: once valid is up it stays up, with
/// the same payload, until ready takes it (AXI A3.2.1). `who` names the sender and channel
/// in the panic message.
#[derive(Debug)]
pub(crate) struct Handshake<T> {
    who: &'static str,
    waiting: Option<T>,
}

impl<T: Clone + PartialEq + fmt::Debug> Handshake<T> {
    pub(crate) fn new(who: &'static str) -> Self {
        Handshake { who, waiting: None }
    }

    /// `offer` is the payload presented this cycle (`None`: valid low). Returns whether the
    /// transfer happens at the coming edge.
    pub(crate) fn check(&mut self, offer: Option<&T>, ready: bool) -> bool {
        if let Some(held) = &self.waiting {
            let who = self.who;
            let now = offer.unwrap_or_else(|| panic!("{who}: valid dropped before ready (payload {held:?})"));
            assert!(now == held, "{who}: payload changed while waiting for ready: {held:?} became {now:?}");
        }
        self.waiting = offer.filter(|_| !ready).cloned();
        offer.is_some() && ready
    }
}

struct ReadBurst {
    req: AxiAddr,
    issued: u64,
    due: u64,
    /// The whole burst and its response, read from memory when the first beat is due.
    data: Option<(Vec<u8>, u8)>,
    sent: usize,
}

struct WriteBurst {
    req: AxiAddr,
    issued: u64,
    data: Vec<u8>,
    enable: Vec<bool>,
    received: usize,
    /// When B may be given; set by the last W beat.
    due: Option<u64>,
}

/// The slave's bus logic. Call [`AxiSlaveCore::drive`] then [`AxiSlaveCore::edge`] once
/// per cycle.
pub struct AxiSlaveCore {
    memory: HostMemory,
    lanes: usize,
    /// Cycles from an AR handshake to the first R beat (at least 1).
    pub read_latency: u64,
    /// Cycles from the last W beat to B (at least 1).
    pub write_latency: u64,
    /// Probability of AWREADY, WREADY and ARREADY on a cycle when there is room.
    pub ready_rate: f64,
    /// Probability that a due B or R beat is presented on a cycle.
    pub valid_rate: f64,
    /// Bursts per direction accepted and not yet answered. It only bounds the queues: the
    /// default is enough for single-beat bursts to stream at the default latency.
    pub max_outstanding: usize,
    pub stats: AxiStats,
    cycle: u64,
    reads: VecDeque<ReadBurst>,
    writes: VecDeque<WriteBurst>,
    out: AxiSlaveSignals,
    aw: Handshake<AxiAddr>,
    w: Handshake<WBeat>,
    ar: Handshake<AxiAddr>,
}

impl AxiSlaveCore {
    /// A slave `lanes` octets wide (a power of two up to 64) in front of `memory`, with
    /// 200-cycle latencies and no back-pressure or gaps.
    pub fn new(memory: HostMemory, lanes: usize) -> Self {
        assert!(lanes.is_power_of_two() && lanes <= 64, "AXI data width of {lanes} octets unsupported");
        AxiSlaveCore {
            memory,
            lanes,
            read_latency: 200,
            write_latency: 200,
            ready_rate: 1.0,
            valid_rate: 1.0,
            max_outstanding: 256,
            stats: AxiStats::default(),
            cycle: 0,
            reads: VecDeque::new(),
            writes: VecDeque::new(),
            out: AxiSlaveSignals::default(),
            aw: Handshake::new("AXI master, AW channel"),
            w: Handshake::new("AXI master, W channel"),
            ar: Handshake::new("AXI master, AR channel"),
        }
    }

    pub fn memory(&self) -> &HostMemory {
        &self.memory
    }

    /// For allocating and freeing DMA memory while the simulation runs.
    pub fn memory_mut(&mut self) -> &mut HostMemory {
        &mut self.memory
    }

    pub fn lanes(&self) -> usize {
        self.lanes
    }

    /// The current cycle: edges seen so far, plus the start set by [`AxiSlaveCore::set_cycle`].
    pub fn cycle(&self) -> u64 {
        self.cycle
    }

    /// Numbers cycles from `cycle` on, so that fault reports match the model's count.
    pub fn set_cycle(&mut self, cycle: u64) {
        self.cycle = cycle;
    }

    /// Bursts accepted and not yet answered, both directions.
    pub fn in_flight(&self) -> usize {
        self.reads.len() + self.writes.len()
    }

    /// The slave's outputs for this cycle. They stay as they are until [`AxiSlaveCore::edge`].
    pub fn drive(&mut self, rng: &mut impl Rng) -> &AxiSlaveSignals {
        let receiving = self.writes.iter().any(|w| w.due.is_none());
        self.out.awready = self.writes.len() < self.max_outstanding && coin(rng, self.ready_rate);
        self.out.wready = receiving && coin(rng, self.ready_rate);
        self.out.arready = self.reads.len() < self.max_outstanding && coin(rng, self.ready_rate);
        if self.out.b.is_none() && self.b_due() && coin(rng, self.valid_rate) {
            self.out.b = Some(self.store_head_write());
        }
        let r_due = self.reads.front().is_some_and(|r| r.due <= self.cycle);
        if self.out.r.is_none() && r_due && coin(rng, self.valid_rate) {
            self.out.r = Some(self.next_read_beat());
        }
        &self.out
    }

    /// The master's signals this cycle (sampled after it settled); applies the clock edge.
    pub fn edge(&mut self, m: &AxiMasterSignals) {
        if self.aw.check(m.aw.as_ref(), self.out.awready) {
            self.accept_aw(m.aw.expect("checked"));
        }
        if self.w.check(m.w.as_ref(), self.out.wready) {
            self.accept_w(m.w.as_ref().expect("checked"));
        }
        if self.ar.check(m.ar.as_ref(), self.out.arready) {
            let req = m.ar.expect("checked");
            self.check_request("AR", &req);
            let due = self.cycle + self.read_latency.max(1);
            self.reads.push_back(ReadBurst { req, issued: self.cycle, due, data: None, sent: 0 });
        }
        if self.out.b.is_some() && m.bready {
            self.out.b = None;
            self.writes.pop_front();
            self.stats.write_bursts += 1;
        }
        if let Some(r) = self.out.r.take_if(|_| m.rready) {
            self.stats.beats_read += 1;
            let head = self.reads.front_mut().expect("an R beat belongs to the head burst");
            head.sent += 1;
            if r.last {
                self.reads.pop_front();
                self.stats.read_bursts += 1;
            }
        }
        self.stats.read_busy_cycles += u64::from(m.ar.is_some() || !self.reads.is_empty());
        self.stats.write_busy_cycles += u64::from(m.aw.is_some() || m.w.is_some() || !self.writes.is_empty());
        self.cycle += 1;
    }

    /// Panics unless the request is one this slave serves.
    fn check_request(&self, channel: &str, req: &AxiAddr) {
        assert_eq!(req.burst, BURST_INCR, "AXI master, {channel} channel: only INCR bursts are supported ({req:?})");
        assert_eq!(
            1usize << req.size,
            self.lanes,
            "AXI master, {channel} channel: only full-width {}-octet beats are supported ({req:?})",
            self.lanes
        );
    }

    fn accept_aw(&mut self, req: AxiAddr) {
        self.check_request("AW", &req);
        let bytes = req.beats() * self.lanes;
        self.writes.push_back(WriteBurst {
            req,
            issued: self.cycle,
            data: Vec::with_capacity(bytes),
            enable: Vec::with_capacity(bytes),
            received: 0,
            due: None,
        });
    }

    fn accept_w(&mut self, beat: &WBeat) {
        let lanes = self.lanes;
        let burst = self.writes.iter_mut().find(|w| w.due.is_none()).expect("WREADY only with a burst receiving data");
        let req = burst.req;
        let last = burst.received + 1 == req.beats();
        assert_eq!(beat.data.len(), lanes, "W beat of {} octets on a {lanes}-octet bus", beat.data.len());
        assert!(
            beat.last == last,
            "AXI master, W channel: wlast {} on beat {} of a {}-beat burst ({req:?})",
            beat.last,
            burst.received,
            req.beats()
        );
        let skipped = req.addr as usize % lanes;
        assert!(
            burst.received > 0 || beat.strb & lane_mask(skipped) == 0,
            "AXI master, W channel: wstrb {:#x} enables lanes below the unaligned start ({req:?})",
            beat.strb
        );
        burst.data.extend_from_slice(&beat.data);
        burst.enable.extend((0..lanes).map(|lane| beat.strb >> lane & 1 != 0));
        burst.received += 1;
        if last {
            burst.due = Some(self.cycle + self.write_latency.max(1));
        }
        self.stats.beats_written += 1;
    }

    fn b_due(&self) -> bool {
        self.writes.front().and_then(|w| w.due).is_some_and(|due| due <= self.cycle)
    }

    /// Writes the head burst to memory (unless it faults) and returns its response.
    fn store_head_write(&mut self) -> BResp {
        let head = self.writes.front().expect("B due");
        let base = aligned(head.req.addr, self.lanes);
        let resp = match self.memory.dma_write(head.issued, base, &head.data, &head.enable) {
            Ok(()) => RESP_OKAY,
            Err(kind) => fault_resp(kind),
        };
        BResp { id: head.req.id, resp }
    }

    /// The head read burst's next beat, reading the burst from memory on its first beat.
    fn next_read_beat(&mut self) -> RBeat {
        let lanes = self.lanes;
        let head = self.reads.front_mut().expect("R due");
        let (req, issued) = (head.req, head.issued);
        let memory = &mut self.memory;
        let (data, resp) = head.data.get_or_insert_with(|| {
            let mut data = vec![0; req.beats() * lanes];
            let resp = match memory.dma_read(issued, aligned(req.addr, lanes), &mut data) {
                Ok(()) => RESP_OKAY,
                Err(kind) => fault_resp(kind),
            };
            (data, resp)
        });
        RBeat {
            id: req.id,
            data: data[head.sent * lanes..][..lanes].to_vec(),
            resp: *resp,
            last: head.sent + 1 == req.beats(),
        }
    }
}

/// `addr` rounded down to a beat: where a burst's first beat starts.
fn aligned(addr: u64, lanes: usize) -> u64 {
    addr & !(lanes as u64 - 1)
}

/// DECERR for no memory at the address, SLVERR for a request the memory refuses.
fn fault_resp(kind: FaultKind) -> u8 {
    match kind {
        FaultKind::Unmapped => RESP_DECERR,
        FaultKind::CrossesPage => RESP_SLVERR,
    }
}

/// One address channel's ports (`aw*` or `ar*`).
struct AddrPorts {
    id: Option<Port>,
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
            id: model.try_port(&format!("{prefix}id")),
            addr: port("addr"),
            len: port("len"),
            size: port("size"),
            burst: port("burst"),
            valid: port("valid"),
            ready: port("ready"),
        }
    }

    fn sample(&self, model: &Model) -> Option<AxiAddr> {
        model.get_bit(self.valid).then(|| AxiAddr {
            id: self.id.map_or(0, |p| model.get(p)),
            addr: model.get(self.addr),
            len: model.get(self.len) as u8,
            size: model.get(self.size) as u8,
            burst: model.get(self.burst) as u8,
        })
    }
}

/// An AXI4 slave on a model's master port `<prefix>_*` (`m_axi`). ID ports may be absent,
/// and so may the whole write side (AW, W, B) of a master that only reads.
pub struct AxiSlave {
    pub core: AxiSlaveCore,
    write: Option<WritePorts>,
    ar: AddrPorts,
    rid: Option<Port>,
    rdata: Port,
    rresp: Port,
    rlast: Port,
    rvalid: Port,
    rready: Port,
}

/// The AW, W and B channels.
struct WritePorts {
    aw: AddrPorts,
    wdata: Port,
    wstrb: Port,
    wlast: Port,
    wvalid: Port,
    wready: Port,
    bid: Option<Port>,
    bresp: Port,
    bvalid: Port,
    bready: Port,
}

impl AxiSlave {
    /// Finds the ports and serves `memory`; the data width comes from `<prefix>_rdata`.
    /// Cycles are numbered as the model counts them.
    pub fn new(model: &Model, prefix: &str, memory: HostMemory) -> Self {
        let port = |name: &str| model.port(&format!("{prefix}_{name}"));
        let rdata = port("rdata");
        let write = model.try_port(&format!("{prefix}_awvalid")).map(|_| WritePorts {
            aw: AddrPorts::new(model, &format!("{prefix}_aw")),
            wdata: port("wdata"),
            wstrb: port("wstrb"),
            wlast: port("wlast"),
            wvalid: port("wvalid"),
            wready: port("wready"),
            bid: model.try_port(&format!("{prefix}_bid")),
            bresp: port("bresp"),
            bvalid: port("bvalid"),
            bready: port("bready"),
        });
        if let Some(w) = &write {
            assert_eq!(w.wdata.width(), rdata.width(), "{prefix}: wdata and rdata differ in width");
        }
        let mut core = AxiSlaveCore::new(memory, rdata.width() as usize / 8);
        core.set_cycle(model.cycles());
        AxiSlave {
            core,
            write,
            ar: AddrPorts::new(model, &format!("{prefix}_ar")),
            rid: model.try_port(&format!("{prefix}_rid")),
            rdata,
            rresp: port("rresp"),
            rlast: port("rlast"),
            rvalid: port("rvalid"),
            rready: port("rready"),
        }
    }

    /// Before `Model::eval`: drives the slave's outputs for this cycle.
    pub fn drive(&mut self, model: &mut Model, rng: &mut impl Rng) {
        let out = self.core.drive(rng);
        if let Some(w) = &self.write {
            model.set_bit(w.aw.ready, out.awready);
            model.set_bit(w.wready, out.wready);
            model.set_bit(w.bvalid, out.b.is_some());
            if let Some(b) = out.b {
                if let Some(p) = w.bid {
                    model.set(p, b.id);
                }
                model.set(w.bresp, u64::from(b.resp));
            }
        }
        model.set_bit(self.ar.ready, out.arready);
        model.set_bit(self.rvalid, out.r.is_some());
        if let Some(r) = &out.r {
            if let Some(p) = self.rid {
                model.set(p, r.id);
            }
            model.set_bytes(self.rdata, &r.data);
            model.set(self.rresp, u64::from(r.resp));
            model.set_bit(self.rlast, r.last);
        }
    }

    /// After `Model::eval`, before `Model::tick`: samples the master's signals and applies
    /// the coming edge to the slave.
    pub fn observe(&mut self, model: &Model) {
        let lanes = self.core.lanes();
        let (aw, w, bready) = match &self.write {
            Some(p) => {
                let w = model.get_bit(p.wvalid).then(|| {
                    let mut data = vec![0; lanes];
                    model.get_bytes(p.wdata, &mut data);
                    WBeat { data, strb: model.get(p.wstrb), last: model.get_bit(p.wlast) }
                });
                (p.aw.sample(model), w, model.get_bit(p.bready))
            }
            None => (None, None, true),
        };
        let signals = AxiMasterSignals { aw, w, bready, ar: self.ar.sample(model), rready: model.get_bit(self.rready) };
        self.core.edge(&signals);
    }
}
