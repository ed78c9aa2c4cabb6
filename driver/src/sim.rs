//! The Verilated RTL as a backend: [`SimHal`] runs a model from `rnic-sim` and plays the
//! host around it.
//!
//! Every register access is an AXI4-Lite transaction on the model's `s_axil_*` port,
//! clocked cycle by cycle until it completes; DMA memory is a
//! [`HostMemory`] (host memory behind an IOMMU), which
//! the model reaches through an AXI4 slave on `m_axi_*` if it has that port. Time passes
//! only while the driver touches the device or waits: each cycle of a register access,
//! an interrupt wait or [`SimHal::run_idle`] also runs the other bus models (the DMA
//! slave, then any registered with [`SimHal::on_cycle`]) and samples the interrupt
//! output.
//!
//! Ownership: one `RefCell` holds the model and everything clocked with it. The host
//! memory is owned by exactly one party: by the AXI slave when the model has a DMA port
//! (the slave must reach it every cycle), and by the backend directly otherwise;
//! `dma_alloc` reaches it through either. Models are not `Send`, and neither is this.
use std::cell::{Cell, RefCell};
use std::collections::{BTreeSet, VecDeque};
use std::ptr::NonNull;
use std::rc::{Rc, Weak};
use std::time::Duration;

use rand::rngs::StdRng;
use rand::SeedableRng;
use rnic_sim::axi::AxiSlave;
use rnic_sim::host_memory::HostMemory;
use rnic_sim::Port;

pub use crate::bridge::BridgeCounts;
use crate::bridge::SocketConn;
use rnic_proto::cm::{FrameKind, MpaFrame};
use rnic_proto::pcap::{ConnId, Endpoint, Side, TcpCapture};

use crate::{DmaRegion, Hal, HalError};

pub use rnic_sim::axil::Phase;
pub use rnic_sim::Model;

/// Simulated clock cycles per microsecond of a wait: the RNIC's 250 MHz clock.
pub const CYCLES_PER_US: u64 = 250;

/// The largest single DMA allocation. The simulated host memory is the test process's
/// heap; this keeps a runaway request an error instead of an abort.
pub const MAX_DMA_ALLOC: usize = 1 << 30;

/// Cycles the model is held in reset when opened.
const RESET_CYCLES: usize = 4;

/// Engine-side inputs of a control block simulated on its own (`rnic_host_ctrl`): with
/// no engines behind it nothing fails, invalidates or reports idle, so they are held
/// low. Designs without these ports are not affected.
const ENGINE_INPUTS: [&str; 7] =
    ["idle", "fail", "fail_qp", "fail_term", "fail_received", "invalidate", "invalidate_mr"];

/// A bus model run every cycle: called in [`Phase::Drive`] before the model settles (to
/// set its inputs) and in [`Phase::Observe`] after (to sample its outputs), as the bus
/// models of `rnic-sim` are.
pub type CycleHook = Box<dyn FnMut(&mut Model, Phase)>;

/// A [`Hal`] over a Verilated model.
pub struct SimHal {
    sim: Rc<RefCell<Sim>>,
    /// A device connected by [`SimHal::connect`]: clocked in step with this one.
    peer: RefCell<Weak<RefCell<Sim>>>,
    /// Octets this device has sent on its link (see [`SimHal::tx_octets`]).
    tx_octets: Rc<Cell<u64>>,
}

/// Beats a link direction holds before it pushes back.
pub const LINK_BEATS: usize = 64;

/// How a link between two devices behaves.
#[derive(Clone, Copy, Debug)]
pub struct LinkConfig {
    /// Chance per cycle that a receiving side's queue takes a beat (1.0: always).
    pub ready_rate: f64,
    /// Seed of the back-pressure pattern.
    pub seed: u64,
}

impl Default for LinkConfig {
    fn default() -> Self {
        LinkConfig { ready_rate: 1.0, seed: 0 }
    }
}

/// One beat on a stream link: data, keep, last, user.
type LinkBeat = (u64, u64, bool, u64);

struct Sim {
    model: Model,
    bar: rnic_sim::axil::AxilMaster,
    others: Others,
}

/// Everything clocked with the model besides BAR0.
struct Others {
    memory: Memory,
    irq: Option<IrqPorts>,
    /// Vectors that fired and nobody has waited for yet. A set, because interrupts that
    /// fire again before they are taken merge, as pending MSI-X vectors do.
    fired: BTreeSet<u16>,
    hooks: Vec<CycleHook>,
    rng: StdRng,
}

/// Who owns the host memory.
enum Memory {
    /// No DMA port: the backend itself.
    Plain(HostMemory),
    /// The AXI slave serving the model's DMA master.
    Bus(Box<AxiSlave>),
}

impl Memory {
    fn get(&mut self) -> &mut HostMemory {
        match self {
            Memory::Plain(m) => m,
            Memory::Bus(slave) => slave.core.memory_mut(),
        }
    }
}

/// The interrupt output: a one-cycle pulse of `irq_valid` with the vector on `irq_vector`.
#[derive(Clone, Copy)]
struct IrqPorts {
    valid: Port,
    vector: Port,
}

impl Others {
    /// Runs the bus models for one phase of a cycle.
    fn cycle(&mut self, model: &mut Model, phase: Phase) {
        if let Memory::Bus(slave) = &mut self.memory {
            match phase {
                Phase::Drive => slave.drive(model, &mut self.rng),
                Phase::Observe => slave.observe(model),
            }
        }
        if let (Phase::Observe, Some(irq)) = (phase, self.irq) {
            if model.get_bit(irq.valid) {
                self.fired.insert(model.get(irq.vector) as u16);
            }
        }
        for hook in &mut self.hooks {
            hook(model, phase);
        }
    }
}

impl Sim {
    /// One clock cycle with BAR0 idle; `peer`, if any, runs its cycle in step.
    fn idle_cycle(&mut self, peer: &Weak<RefCell<Sim>>) {
        let Sim { model, bar, others } = self;
        bar.drive(model);
        others.cycle(model, Phase::Drive);
        model.eval();
        bar.observe(model);
        others.cycle(model, Phase::Observe);
        step_peer(peer);
        model.tick();
    }
}

/// Runs the peer's cycle (it has no peer of its own in that call).
fn step_peer(peer: &Weak<RefCell<Sim>>) {
    if let Some(p) = peer.upgrade() {
        p.borrow_mut().idle_cycle(&Weak::new());
    }
}

/// One direction of a stream link: a queue between one model's `m_axis_tx_*` and the
/// other's `s_axis_rx_*`, as a network between two RNICs would be.
type LinkQueue = Rc<RefCell<VecDeque<LinkBeat>>>;

/// A model's stream ports: TX (`m_axis_tx_*`) and RX (`s_axis_rx_*`), each data, keep,
/// last, valid, ready, user.
struct StreamPorts {
    tx: [Port; 6],
    rx: [Port; 6],
}

impl StreamPorts {
    fn of(model: &Model) -> StreamPorts {
        let ports = |dir: &str| {
            ["tdata", "tkeep", "tlast", "tvalid", "tready", "tuser"].map(|f| model.port(&format!("{dir}_{f}")))
        };
        StreamPorts { tx: ports("m_axis_tx"), rx: ports("s_axis_rx") }
    }

    /// Drive phase: offers the front of `inp` on RX.
    fn offer(&self, m: &mut Model, inp: &LinkQueue) {
        match inp.borrow().front() {
            Some(&(data, keep, last, user)) => {
                m.set(self.rx[0], data);
                m.set(self.rx[1], keep);
                m.set_bit(self.rx[2], last);
                m.set_bit(self.rx[3], true);
                m.set(self.rx[5], user);
            }
            None => m.set_bit(self.rx[3], false),
        }
    }

    /// Observe phase: drops the front of `inp` if RX took it; returns the TX beat taken
    /// (if `taking` and the model offered one).
    fn exchange(&self, m: &mut Model, inp: &LinkQueue, taking: bool) -> Option<LinkBeat> {
        if m.get_bit(self.rx[4]) && !inp.borrow().is_empty() {
            inp.borrow_mut().pop_front();
        }
        (taking && m.get_bit(self.tx[3]))
            .then(|| (m.get(self.tx[0]), m.get(self.tx[1]), m.get_bit(self.tx[2]), m.get(self.tx[5])))
    }
}

/// What one side of a link records in a [`LinkCapture`]: the capture and whether this
/// side is A.
type CaptureSide = (Rc<RefCell<LinkCapture>>, bool);

/// Sees, and may change, every packet (FPDU) that crosses a link before the far end gets
/// it: whether it comes from A, its `tuser` (the CONN_ID, the far end's QP), its octets.
/// A test plays a faulty network this way ([`SimHal::connect_tapped`]).
pub type LinkTap = Rc<RefCell<dyn FnMut(bool, u64, &mut Vec<u8>)>>;

/// The hook that connects `model`'s TX stream to `out` and its RX stream to `inp`.
fn link_hook(
    model: &Model,
    out: LinkQueue,
    inp: LinkQueue,
    sent: Rc<Cell<u64>>,
    config: LinkConfig,
    capture: Option<CaptureSide>,
    tap: Option<(LinkTap, bool)>,
) -> impl FnMut(&mut Model, Phase) + 'static {
    use rand::Rng;
    let mut rng = StdRng::seed_from_u64(config.seed);
    let mut taking = true;
    let ports = StreamPorts::of(model);
    let (mut cycle, mut packet, mut tapped) = (0u64, Vec::new(), Vec::new());
    move |m: &mut Model, phase: Phase| match phase {
        Phase::Drive => {
            cycle += 1;
            taking = out.borrow().len() < LINK_BEATS && (config.ready_rate >= 1.0 || rng.gen_bool(config.ready_rate));
            m.set_bit(ports.tx[4], taking);
            ports.offer(m, &inp);
        }
        Phase::Observe => {
            if let Some(beat) = ports.exchange(m, &inp, taking) {
                sent.set(sent.get() + u64::from(beat.1.count_ones()));
                if let Some((capture, from_a)) = &capture {
                    let octets = beat.0.to_le_bytes();
                    packet.extend_from_slice(&octets[..beat.1.count_ones() as usize]);
                    if beat.2 {
                        capture.borrow_mut().record(*from_a, beat.3, &packet, cycle);
                        packet.clear();
                    }
                }
                match &tap {
                    None => out.borrow_mut().push_back(beat),
                    // Store and forward: the tap sees each packet whole.
                    Some((tap, from_a)) => {
                        tapped.extend_from_slice(&beat.0.to_le_bytes()[..beat.1.count_ones() as usize]);
                        if beat.2 {
                            (tap.borrow_mut())(*from_a, beat.3, &mut tapped);
                            queue_packet(&out, &tapped, beat.3);
                            tapped.clear();
                        }
                    }
                }
            }
        }
    }
}

/// Records the streams of two linked devices as a packet capture
/// ([`rnic_proto::pcap`]): each QP pair's FPDUs become one TCP connection from A
/// (10.0.0.1) to B (10.0.0.2), opened by a handshake and MPA Request and Reply with the
/// pair's framing, timed at [`CYCLES_PER_US`].
#[derive(Default)]
pub struct LinkCapture {
    tcp: TcpCapture,
    /// (A's QP, B's QP, connection).
    pairs: Vec<(u64, u64, ConnId)>,
    /// FPDUs for QPs no pair was declared for.
    unpaired: u64,
}

impl LinkCapture {
    /// An empty capture.
    pub fn new() -> Self {
        Self::default()
    }

    /// Declares that A's QP `a_qp` and B's QP `b_qp` are connected, with MPA CRCs and
    /// markers as given: their connection opens in the capture now.
    pub fn pair(&mut self, a_qp: u32, b_qp: u32, crc: bool, markers: bool) {
        let frame = |kind| MpaFrame { crc, markers, ..MpaFrame::new(kind) };
        let (a, b) = (
            Endpoint { ip: [10, 0, 0, 1], port: 49_152 + a_qp as u16 },
            Endpoint { ip: [10, 0, 0, 2], port: 4_000 + b_qp as u16 },
        );
        let conn = self.tcp.connect(a, b, &frame(FrameKind::Request), &frame(FrameKind::Reply), 0);
        self.pairs.push((u64::from(a_qp), u64::from(b_qp), conn));
    }

    /// One FPDU crossing the link: from A (`tuser` = B's QP) or from B (A's QP).
    fn record(&mut self, from_a: bool, tuser: u64, fpdu: &[u8], cycle: u64) {
        let found = self.pairs.iter().find(|&&(a, b, _)| if from_a { b == tuser } else { a == tuser });
        match found {
            Some(&(_, _, conn)) => {
                let side = if from_a { Side::Initiator } else { Side::Responder };
                self.tcp.data(conn, side, fpdu, cycle / CYCLES_PER_US);
            }
            None => self.unpaired += 1,
        }
    }

    /// The capture file's octets.
    pub fn bytes(&self) -> &[u8] {
        self.tcp.bytes()
    }

    /// FPDUs that crossed the link for QPs no [`LinkCapture::pair`] declared, and so are
    /// missing from the capture.
    pub fn unpaired(&self) -> u64 {
        self.unpaired
    }
}

/// Queues `packet` on `queue` as beats of 8 octets, `tuser` on each.
fn queue_packet(queue: &LinkQueue, packet: &[u8], tuser: u64) {
    let chunks: Vec<&[u8]> = packet.chunks(8).collect();
    for (i, chunk) in chunks.iter().enumerate() {
        let mut beat = [0u8; 8];
        beat[..chunk.len()].copy_from_slice(chunk);
        let keep = (1u64 << chunk.len()) - 1;
        queue.borrow_mut().push_back((u64::from_le_bytes(beat), keep, i + 1 == chunks.len(), tuser));
    }
}

/// Cycles between two polls of a [`SocketBridge`]'s sockets: a system call per socket
/// per cycle would slow the simulation down many times.
const BRIDGE_POLL_CYCLES: u64 = 32;

/// Beats waiting for the device beyond which a [`SocketBridge`] stops reading its sockets,
/// so that TCP's flow control reaches the peer instead of the bridge buffering without
/// bound.
const BRIDGE_RX_BEATS: usize = 8 * 1024;

/// Carries a device's streams over kernel TCP connections, as the host socket bridge of a
/// card does (here on the model's stream ports): each FPDU the device sends goes to the
/// socket of its `CONN_ID`, and the octets a socket receives are cut at the FPDU
/// boundaries their ULPDU_Lengths (and markers) give, each FPDU fed to the device as one
/// packet for the connection's QP (the `rnic_top` stream contract).
pub struct SocketBridge {
    conns: Rc<RefCell<Vec<BridgedConn>>>,
    cycle: Rc<Cell<u64>>,
}

struct BridgedConn {
    socket: SocketConn,
    qpn: u64,
    conn_id: u64,
    /// Where its FPDUs are recorded, and which side of the connection this end is.
    capture: Option<(Rc<RefCell<TcpCapture>>, ConnId, Side)>,
    /// The device's cycle count, for capture timestamps.
    cycle: Rc<Cell<u64>>,
}

impl SocketBridge {
    /// Carries QP `qpn` (whose CONN_ID is `conn_id`) over `stream`, in Full Operation
    /// from its next octet; `rx_markers` says whether the peer sends markers.
    pub fn add(&self, stream: std::net::TcpStream, qpn: u32, conn_id: u16, rx_markers: bool) -> std::io::Result<()> {
        self.conns.borrow_mut().push(BridgedConn {
            socket: SocketConn::new(stream, rx_markers)?,
            qpn: u64::from(qpn),
            conn_id: u64::from(conn_id),
            capture: None,
            cycle: Rc::clone(&self.cycle),
        });
        Ok(())
    }

    /// Records connection `conn_id`'s FPDUs, both ways, as connection `conn` of
    /// `capture`, this end being `side` (a capture opened with the connection's MPA
    /// frames, so that Wireshark knows its framing).
    pub fn capture(&self, conn_id: u16, capture: Rc<RefCell<TcpCapture>>, conn: ConnId, side: Side) {
        if let Some(c) = self.conns.borrow_mut().iter_mut().find(|c| c.conn_id == u64::from(conn_id)) {
            c.capture = Some((capture, conn, side));
        }
    }

    /// Stops carrying connection `conn_id` and closes its socket (the peer sees the TCP
    /// connection end). Whether it was there.
    pub fn remove(&self, conn_id: u16) -> bool {
        let mut conns = self.conns.borrow_mut();
        let before = conns.len();
        conns.retain(|c| c.conn_id != u64::from(conn_id));
        conns.len() != before
    }

    /// Why connection `conn_id` ended (closed by the peer, a socket error), if it did.
    pub fn ended(&self, conn_id: u16) -> Option<String> {
        let conns = self.conns.borrow();
        conns.iter().find(|c| c.conn_id == u64::from(conn_id)).and_then(|c| c.socket.ended().map(str::to_string))
    }

    /// What connection `conn_id` has carried, and the octets received that do not make a
    /// whole FPDU yet.
    pub fn counts(&self, conn_id: u16) -> Option<(BridgeCounts, usize)> {
        self.conns.borrow().iter().find(|c| c.conn_id == u64::from(conn_id)).map(|c| c.socket.counts())
    }

    /// Octets the device sent that wait for their socket, over all connections.
    pub fn unsent(&self) -> usize {
        self.conns.borrow().iter().map(|c| c.socket.unsent()).sum()
    }
}

impl BridgedConn {
    /// Records an FPDU this end sent (`ours`) or received, if the connection is captured.
    fn record(&self, fpdu: &[u8], ours: bool) {
        if let Some((capture, conn, side)) = &self.capture {
            let from = match (ours, side) {
                (true, _) => *side,
                (false, Side::Initiator) => Side::Responder,
                (false, Side::Responder) => Side::Initiator,
            };
            capture.borrow_mut().data(*conn, from, fpdu, self.cycle.get() / CYCLES_PER_US);
        }
    }

    /// Writes what the socket takes, reads what it has, and queues every whole FPDU
    /// (reading only while the device is not too far behind).
    fn pump(&mut self, rx: &LinkQueue) {
        self.socket.flush();
        while rx.borrow().len() < BRIDGE_RX_BEATS && self.socket.read() {
            while let Some(fpdu) = self.socket.next_fpdu().map(<[u8]>::to_vec) {
                self.record(&fpdu, false);
                queue_packet(rx, &fpdu, self.qpn);
                self.socket.consume_fpdu();
            }
        }
    }
}

/// An FPDU the device sent: its octets and its `tuser` (CONN_ID).
type SentFpdu = (Vec<u8>, u64);

/// Plays the network on one device's streams, for tests that speak to it octet by
/// octet: it takes every FPDU the device sends (always ready) and feeds it FPDUs queued
/// with [`RawPeer::send`]. The device must not also be [`SimHal::connect`]ed.
pub struct RawPeer {
    sent: Rc<RefCell<Vec<SentFpdu>>>,
    to_send: LinkQueue,
    tx_held: Rc<Cell<bool>>,
}

impl RawPeer {
    /// The peer's TX hold: while it is set, the peer takes nothing from the device's TX
    /// stream (`tready` low), a network that takes nothing. Set it between cycles, or in a
    /// hook's `Observe` phase (the peer's ready and what it records follow it from the
    /// next cycle).
    pub fn tx_hold(&self) -> Rc<Cell<bool>> {
        Rc::clone(&self.tx_held)
    }

    /// The FPDUs the device has sent so far: each packet's octets and its `tuser`.
    pub fn sent(&self) -> Vec<(Vec<u8>, u64)> {
        self.sent.borrow().clone()
    }

    /// Takes the FPDUs the device has sent since the last take (for a long run: `sent` and
    /// `sent_count` then hold only what comes after).
    pub fn take_sent(&self) -> Vec<(Vec<u8>, u64)> {
        std::mem::take(&mut *self.sent.borrow_mut())
    }

    /// How many FPDUs the device has sent so far (for waiting without copying them).
    pub fn sent_count(&self) -> usize {
        self.sent.borrow().len()
    }

    /// Beats queued with [`RawPeer::send`] that the device has not taken yet: what a test
    /// watches to tell a receive path that stopped taking input (`tready` held low).
    pub fn pending(&self) -> usize {
        self.to_send.borrow().len()
    }

    /// Queues `fpdu` for the device, in beats of 8 octets with `tuser` on each (the
    /// device's QP number for `rnic_top`).
    pub fn send(&self, fpdu: &[u8], tuser: u64) {
        queue_packet(&self.to_send, fpdu, tuser);
    }
}

impl SimHal {
    /// Opens the model of `design` (a file stem under `hdl/verilog/`), holds it in reset
    /// for a few cycles, and attaches the bus models its ports call for. The design must
    /// have a BAR0 (`s_axil_*`).
    pub fn open(design: &str) -> Result<SimHal, HalError> {
        Self::from_model(Model::new(design).map_err(|e| HalError::Backend(e.to_string()))?, design)
    }

    /// [`SimHal::open`] on the random-reset model of `design` (`<design>_x`): registers
    /// start, and X are assigned, with random values drawn from `seed`, so whatever
    /// depends on a power-up value or an X shows.
    pub fn open_random_reset(design: &str, seed: u64) -> Result<SimHal, HalError> {
        let model = Model::new_random_reset(design, seed).map_err(|e| HalError::Backend(e.to_string()))?;
        Self::from_model(model, design)
    }

    fn from_model(mut model: Model, design: &str) -> Result<SimHal, HalError> {
        if model.try_port("s_axil_awaddr").is_none() {
            return Err(HalError::Backend(format!("{design} has no BAR0 (s_axil_* ports)")));
        }
        let bar = rnic_sim::axil::AxilMaster::new(&model, "s_axil", 0);
        let memory = if model.try_port("m_axi_awaddr").is_some() {
            Memory::Bus(Box::new(AxiSlave::new(&model, "m_axi", HostMemory::new())))
        } else {
            Memory::Plain(HostMemory::new())
        };
        let irq = model
            .try_port("irq_valid")
            .zip(model.try_port("irq_vector"))
            .map(|(valid, vector)| IrqPorts { valid, vector });
        for name in ENGINE_INPUTS {
            if let Some(port) = model.try_port(name) {
                model.set(port, 0);
            }
        }
        // With no DMA behind it, the command unit's fence has nothing to wait for.
        if let Some(port) = model.try_port("fence_done") {
            model.set_bit(port, true);
        }
        // The host takes every interrupt at once, as an MSI-X block (and the board shell)
        // does: an interrupt the host never took would hold back every later CQE.
        if let Some(port) = model.try_port("irq_ready") {
            model.set_bit(port, true);
        }
        let reset = model.try_port("reset");
        let others = Others { memory, irq, fired: BTreeSet::new(), hooks: Vec::new(), rng: StdRng::seed_from_u64(0) };
        let mut sim = Sim { model, bar, others };
        if let Some(reset) = reset {
            sim.model.set_bit(reset, true);
            (0..RESET_CYCLES).for_each(|_| sim.idle_cycle(&Weak::new()));
            sim.model.set_bit(reset, false);
        }
        Ok(SimHal { sim: Rc::new(RefCell::new(sim)), peer: RefCell::new(Weak::new()), tx_octets: Rc::default() })
    }

    /// Connects two devices stream to stream (each one's TX to the other's RX, through
    /// queues of [`LINK_BEATS`] beats, `tuser` passed on) and clocks them in step from
    /// now on: whenever either runs a cycle, so does the other. The RX `tuser` of an RNIC
    /// is the number of its QP an FPDU is for, so a QP's CONN_ID must be the number of
    /// its peer QP. Both designs need the stream ports.
    pub fn connect(a: &SimHal, b: &SimHal, config: LinkConfig) {
        Self::connect_captured(a, b, config, None);
    }

    /// [`SimHal::connect`], recording every FPDU that crosses the link in `capture`.
    pub fn connect_captured(a: &SimHal, b: &SimHal, config: LinkConfig, capture: Option<Rc<RefCell<LinkCapture>>>) {
        Self::connect_with(a, b, config, capture, None);
    }

    /// [`SimHal::connect`] through a tap that sees, and may change, every FPDU on its way
    /// (each is held until its last octet, then passed on as the tap left it).
    pub fn connect_tapped(a: &SimHal, b: &SimHal, config: LinkConfig, tap: LinkTap) {
        Self::connect_with(a, b, config, None, Some(tap));
    }

    fn connect_with(
        a: &SimHal,
        b: &SimHal,
        config: LinkConfig,
        capture: Option<Rc<RefCell<LinkCapture>>>,
        tap: Option<LinkTap>,
    ) {
        let ab: LinkQueue = Rc::default();
        let ba: LinkQueue = Rc::default();
        let config_b = LinkConfig { seed: config.seed ^ 0x5eed, ..config };
        let (cap_a, cap_b) = (capture.clone().map(|c| (c, true)), capture.map(|c| (c, false)));
        let (tap_a, tap_b) = (tap.clone().map(|t| (t, true)), tap.map(|t| (t, false)));
        let hook_a = a.with_model(|m| link_hook(m, ab.clone(), ba.clone(), a.tx_octets.clone(), config, cap_a, tap_a));
        let hook_b = b.with_model(|m| link_hook(m, ba, ab, b.tx_octets.clone(), config_b, cap_b, tap_b));
        a.on_cycle(hook_a);
        b.on_cycle(hook_b);
        *a.peer.borrow_mut() = Rc::downgrade(&b.sim);
        *b.peer.borrow_mut() = Rc::downgrade(&a.sim);
    }

    /// Loops this device's TX stream back into its RX stream, through a queue of
    /// [`LINK_BEATS`] beats with `tuser` passed on, as the board build's loopback does: a
    /// QP whose CONN_ID is another QP's number of the same device talks to that QP. The
    /// device must not also be [`SimHal::connect`]ed or have another far end.
    pub fn loop_back(&self, config: LinkConfig) {
        let queue: LinkQueue = Rc::default();
        let hook = self.with_model(|m| link_hook(m, queue.clone(), queue, self.tx_octets.clone(), config, None, None));
        self.on_cycle(hook);
    }

    /// Makes something the far end of this device's streams (8-octet `tdata`): TX is
    /// taken whenever `held` is false, each packet whole handed to `on_packet` with its
    /// `tuser`; RX is fed from `inp`; `every_cycle` runs first in each cycle.
    fn attach_endpoint(
        &self,
        inp: LinkQueue,
        held: Rc<Cell<bool>>,
        mut every_cycle: impl FnMut() + 'static,
        mut on_packet: impl FnMut(Vec<u8>, u64) + 'static,
    ) {
        let ports = self.with_model(|m| StreamPorts::of(m));
        let mut current = Vec::new();
        let mut taking = true;
        self.on_cycle(move |m, phase| match phase {
            Phase::Drive => {
                every_cycle();
                taking = !held.get();
                m.set_bit(ports.tx[4], taking);
                ports.offer(m, &inp);
            }
            Phase::Observe => {
                if let Some((data, keep, last, user)) = ports.exchange(m, &inp, taking) {
                    let octets = data.to_le_bytes();
                    current.extend((0..8).filter(|i| keep >> i & 1 == 1).map(|i| octets[i]));
                    if last {
                        on_packet(std::mem::take(&mut current), user);
                    }
                }
            }
        });
    }

    /// Attaches a [`RawPeer`] to this device's streams.
    pub fn attach_raw_peer(&self) -> RawPeer {
        let peer = RawPeer { sent: Rc::default(), to_send: Rc::default(), tx_held: Rc::default() };
        let sent = Rc::clone(&peer.sent);
        let (inp, held) = (Rc::clone(&peer.to_send), Rc::clone(&peer.tx_held));
        self.attach_endpoint(inp, held, || {}, move |fpdu, user| sent.borrow_mut().push((fpdu, user)));
        peer
    }

    /// Attaches a [`SocketBridge`] to this device's streams; the device must not also be
    /// [`SimHal::connect`]ed or have a [`RawPeer`].
    pub fn attach_socket_bridge(&self) -> SocketBridge {
        self.attach_bridge(false)
    }

    /// [`SimHal::attach_socket_bridge`], with the streams of connections that have no
    /// socket looped back as [`SimHal::loop_back`] does (an FPDU for CONN_ID n goes to QP
    /// n of this device): QPs talk to QPs of the same device and, through sockets, to
    /// other hosts, as a card's switch would carry them.
    pub fn attach_switch(&self) -> SocketBridge {
        self.attach_bridge(true)
    }

    fn attach_bridge(&self, loop_unbridged: bool) -> SocketBridge {
        let bridge = SocketBridge { conns: Rc::default(), cycle: Rc::default() };
        let (conns, pumped) = (Rc::clone(&bridge.conns), Rc::clone(&bridge.conns));
        let inp: LinkQueue = Rc::default();
        let (rx, cycle, looped) = (Rc::clone(&inp), Rc::clone(&bridge.cycle), Rc::clone(&inp));
        let pump = move || {
            cycle.set(cycle.get() + 1);
            if cycle.get() % BRIDGE_POLL_CYCLES == 0 {
                pumped.borrow_mut().iter_mut().for_each(|conn| conn.pump(&rx));
            }
        };
        self.attach_endpoint(inp, Rc::default(), pump, move |fpdu, user| {
            match conns.borrow_mut().iter_mut().find(|c| c.conn_id == user) {
                Some(conn) => {
                    conn.record(&fpdu, true);
                    conn.socket.send(&fpdu);
                }
                None if loop_unbridged => queue_packet(&looped, &fpdu, user),
                None => eprintln!("socket bridge: an FPDU for CONN_ID {user}, which has no socket, is dropped"),
            }
        });
        bridge
    }

    /// Clock cycles simulated so far.
    pub fn cycles(&self) -> u64 {
        self.sim.borrow().model.cycles()
    }

    /// Octets sent on the link since [`SimHal::connect`] (or [`SimHal::loop_back`]): MPA FPDUs, whole (length,
    /// ULPDU, pad, CRC), as a network would carry them.
    pub fn tx_octets(&self) -> u64 {
        self.tx_octets.get()
    }

    /// Runs `cycles` clock cycles with BAR0 idle.
    pub fn run_idle(&self, cycles: u64) {
        let mut sim = self.sim.borrow_mut();
        let peer = self.peer.borrow();
        (0..cycles).for_each(|_| sim.idle_cycle(&peer));
    }

    /// Runs `hook` in both phases of every cycle from now on, after the backend's own
    /// bus models: how a test watches outputs or a stream model feeds inputs. A hook
    /// must not call back into this backend.
    pub fn on_cycle(&self, hook: impl FnMut(&mut Model, Phase) + 'static) {
        self.sim.borrow_mut().others.hooks.push(Box::new(hook));
    }

    /// Direct access to the model, between cycles: resolving ports, poking inputs.
    pub fn with_model<R>(&self, f: impl FnOnce(&mut Model) -> R) -> R {
        f(&mut self.sim.borrow_mut().model)
    }

    /// The DMA slave's timing (latencies, ready and valid rates), if the model has a DMA
    /// port.
    pub fn with_dma_timing<R>(&self, f: impl FnOnce(&mut rnic_sim::axi::AxiSlaveCore) -> R) -> Option<R> {
        match &mut self.sim.borrow_mut().others.memory {
            Memory::Bus(slave) => Some(f(&mut slave.core)),
            Memory::Plain(_) => None,
        }
    }

    /// Direct access to the host memory: faults, peeks and pokes by IOVA.
    pub fn with_memory<R>(&self, f: impl FnOnce(&mut HostMemory) -> R) -> R {
        f(self.sim.borrow_mut().others.memory.get())
    }
}

impl Hal for SimHal {
    fn read32(&self, offset: u32) -> u32 {
        let Sim { model, bar, others } = &mut *self.sim.borrow_mut();
        let peer = self.peer.borrow();
        bar.read32(model, offset, |m, phase| {
            others.cycle(m, phase);
            if phase == Phase::Observe {
                step_peer(&peer);
            }
        })
    }

    fn write32(&self, offset: u32, value: u32) {
        let Sim { model, bar, others } = &mut *self.sim.borrow_mut();
        let peer = self.peer.borrow();
        bar.write32(model, offset, value, |m, phase| {
            others.cycle(m, phase);
            if phase == Phase::Observe {
                step_peer(&peer);
            }
        })
    }

    fn dma_alloc(&self, len: usize) -> Result<DmaRegion<'_>, HalError> {
        if len == 0 {
            return Err(HalError::EmptyDmaRequest);
        }
        if len > MAX_DMA_ALLOC {
            return Err(HalError::OutOfDmaMemory(len));
        }
        let (ptr, iova) = self.sim.borrow_mut().others.memory.get().alloc(len);
        // SAFETY: HostMemory hands out page-aligned, zeroed memory of at least `len`
        // octets that stays allocated until `free(iova)` (only in `dma_free`, which takes
        // the region) or until the HostMemory is dropped with this backend, which the
        // region's lifetime outlasts. `iova` is where the model's DMA master sees it.
        Ok(unsafe { DmaRegion::new(ptr, len, iova) })
    }

    /// Panics if `region` is not one of this backend's: a bug in the caller.
    fn dma_free(&self, region: DmaRegion<'_>) {
        self.sim.borrow_mut().others.memory.get().free(region.iova());
    }

    unsafe fn map_user(&self, ptr: NonNull<u8>, len: usize) -> Result<DmaRegion<'_>, HalError> {
        if len == 0 {
            return Err(HalError::EmptyDmaRequest);
        }
        if len > MAX_DMA_ALLOC {
            return Err(HalError::OutOfDmaMemory(len));
        }
        // SAFETY: the caller keeps the pages allocated until `dma_free` unmaps them.
        let iova = unsafe { self.sim.borrow_mut().others.memory.get().map_external(ptr, len) };
        // SAFETY: `len` octets at `ptr` stay valid until `dma_free` takes the region (the
        // caller's promise), and the model's DMA master sees them at `iova`.
        Ok(unsafe { DmaRegion::new(ptr, len, iova) })
    }

    /// Clocks the model until `vector` fires (or has fired during an earlier access
    /// since the last wait), for at most `timeout` at [`CYCLES_PER_US`]. A model without
    /// an interrupt output just runs for the whole budget.
    fn wait_irq(&self, vector: u16, timeout: Duration) -> Result<bool, HalError> {
        let mut sim = self.sim.borrow_mut();
        let peer = self.peer.borrow();
        if let Some(irq) = sim.others.irq {
            if u64::from(vector).checked_shr(irq.vector.width()).unwrap_or(0) != 0 {
                return Err(HalError::NoSuchVector(vector));
            }
        }
        let budget = u64::try_from(timeout.as_nanos() * u128::from(CYCLES_PER_US) / 1000).unwrap_or(u64::MAX);
        for _ in 0..budget {
            if sim.others.fired.remove(&vector) {
                return Ok(true);
            }
            sim.idle_cycle(&peer);
        }
        Ok(sim.others.fired.remove(&vector))
    }
}
