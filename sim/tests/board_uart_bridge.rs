//! `board/uart_bridge` (`rnic_board_uart_bridge`) in Verilator, with the serial line driven
//! bit by bit from Rust at 8 clock cycles per bit, an AXI4-Lite slave model (random ready
//! delays, random response delays, random SLVERR), a host-memory port model and interrupt
//! pulses, against `rnic_proto::bridge::BridgeModel`, the protocol's reference:
//! - random sequences of every request, with repeated sequence numbers, IDENTIFY, frames
//!   that are no request (a bad CRC, a wrong length, an unknown opcode, a word count of 0
//!   or 17) and line errors (an octet dropped, a bit flipped): every response frame
//!   byte-exact as the reference gives it for the octets the bridge received, every bus
//!   access as the reference makes it (a repeated request makes none), the transmitter's
//!   frames exact to the cycle;
//! - a frame that arrives while the bridge is busy is dropped unanswered, and the next
//!   one works;
//! - a low pulse shorter than half a bit on an idle line is no start bit, and a byte with
//!   a low stop bit is dropped.
use std::collections::{HashMap, VecDeque};

use rand::rngs::StdRng;
use rand::{Rng, SeedableRng};
use rnic_proto::bridge::{frame, BridgeBus, BridgeModel, Deframer, Op, Request, END, ESC, MAX_WORDS, NAK};
use rnic_sim::{trace, Model, Port};

/// Clock cycles per bit on the serial line.
const CPB: u64 = 8;
/// Cycles in one 8N1 frame.
const FRAME: u64 = 10 * CPB;
/// log2 of the host memory's octets (the board's 64 KiB).
const MEM_LOG2: u8 = 16;
const RESP_SLVERR: u8 = 2;

// ------------------------------------------------------------------------ serial line

/// The host's transmitter: levels to put on `rxd`, one per cycle, high when idle.
#[derive(Default)]
struct LineDriver {
    levels: VecDeque<bool>,
}

impl LineDriver {
    fn idle(&mut self, cycles: u64) {
        self.levels.extend((0..cycles).map(|_| true));
    }

    /// One 8N1 frame; `stop` is the stop bit's level (low for a framing error).
    fn frame(&mut self, byte: u8, stop: bool) {
        let bits = std::iter::once(false).chain((0..8).map(|i| byte >> i & 1 != 0)).chain(std::iter::once(stop));
        for bit in bits {
            self.levels.extend((0..CPB).map(|_| bit));
        }
    }

    fn glitch(&mut self, cycles: u64) {
        self.levels.extend((0..cycles).map(|_| false));
    }

    fn next_level(&mut self) -> bool {
        self.levels.pop_front().unwrap_or(true)
    }
}

/// The host's receiver: decodes `txd` and checks every bit lasts exactly `CPB` cycles.
#[derive(Default)]
struct LineMonitor {
    /// Cycle of the current frame's start edge, and its bits so far.
    frame: Option<(u64, Vec<bool>)>,
    received: VecDeque<u8>,
}

impl LineMonitor {
    fn observe(&mut self, cycle: u64, level: bool) {
        match &mut self.frame {
            None => {
                if !level {
                    self.frame = Some((cycle, vec![false]));
                }
            }
            Some((start, bits)) => {
                let offset = cycle - *start;
                let bit = (offset / CPB) as usize;
                if offset.is_multiple_of(CPB) {
                    bits.push(level);
                } else {
                    assert_eq!(
                        level, bits[bit],
                        "txd changed inside bit {bit} of the frame that started at cycle {start} (cycle {cycle})"
                    );
                }
                if offset == FRAME - 1 {
                    assert!(!bits[0] && bits[9], "txd frame at cycle {start}: start or stop bit wrong: {bits:?}");
                    let byte = (0..8).fold(0u8, |b, i| b | u8::from(bits[1 + i]) << i);
                    self.received.push_back(byte);
                    self.frame = None;
                }
            }
        }
    }
}

// ------------------------------------------------------------------------ bus models

/// A bus access the bridge made, as the slave saw it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Access {
    Write { addr: u16, data: u32, strb: u8, resp: u8 },
    Read { addr: u16, data: u32, resp: u8 },
}

/// An AXI4-Lite slave: registers in a map; AWREADY, WREADY and ARREADY at random, the
/// response after a random delay, SLVERR at random (a write answered SLVERR is not done).
struct AxilSlave {
    regs: HashMap<u16, u32>,
    ready_rate: f64,
    error_rate: f64,
    aw: Option<u16>,
    w: Option<(u32, u8)>,
    /// What the master offered last cycle without a handshake: it must hold it.
    offered_aw: Option<u16>,
    offered_w: Option<(u32, u8)>,
    offered_ar: Option<u16>,
    /// Response (data, resp) and the cycles until it is offered.
    b: Option<(u8, u32)>,
    r: Option<(u32, u8, u32)>,
    /// Ready signals for this cycle (chosen before the model settles).
    awready: bool,
    wready: bool,
    arready: bool,
    log: VecDeque<Access>,
}

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

impl AxilSlave {
    fn new() -> Self {
        AxilSlave {
            regs: HashMap::new(),
            ready_rate: 0.5,
            error_rate: 0.2,
            aw: None,
            w: None,
            offered_aw: None,
            offered_w: None,
            offered_ar: None,
            b: None,
            r: None,
            awready: false,
            wready: false,
            arready: false,
            log: VecDeque::new(),
        }
    }

    fn drive(&mut self, m: &mut Model, p: &AxilPorts, rng: &mut StdRng) {
        self.awready = self.aw.is_none() && rng.gen_bool(self.ready_rate);
        self.wready = self.w.is_none() && rng.gen_bool(self.ready_rate);
        self.arready = self.r.is_none() && rng.gen_bool(self.ready_rate);
        m.set_bit(p.awready, self.awready);
        m.set_bit(p.wready, self.wready);
        m.set_bit(p.arready, self.arready);
        m.set_bit(p.bvalid, matches!(self.b, Some((_, 0))));
        m.set(p.bresp, self.b.map_or(0, |(resp, _)| resp.into()));
        m.set_bit(p.rvalid, matches!(self.r, Some((_, _, 0))));
        m.set(p.rdata, self.r.map_or(0, |(data, _, _)| data.into()));
        m.set(p.rresp, self.r.map_or(0, |(_, resp, _)| resp.into()));
    }

    /// Samples the master after the model settled; the clock edge follows.
    fn observe(&mut self, m: &Model, p: &AxilPorts, rng: &mut StdRng) {
        let aw = m.get_bit(p.awvalid).then(|| m.get(p.awaddr) as u16);
        let w = m.get_bit(p.wvalid).then(|| (m.get(p.wdata) as u32, m.get(p.wstrb) as u8));
        let ar = m.get_bit(p.arvalid).then(|| m.get(p.araddr) as u16);
        // AXI: once offered, a request stays, unchanged, until taken.
        assert!(
            self.offered_aw.is_none() || aw == self.offered_aw,
            "AW changed before AWREADY: {:?} -> {aw:?}",
            self.offered_aw
        );
        assert!(
            self.offered_w.is_none() || w == self.offered_w,
            "W changed before WREADY: {:?} -> {w:?}",
            self.offered_w
        );
        assert!(
            self.offered_ar.is_none() || ar == self.offered_ar,
            "AR changed before ARREADY: {:?} -> {ar:?}",
            self.offered_ar
        );
        // One access at a time.
        let write_busy = self.aw.is_some() || self.w.is_some() || self.b.is_some();
        assert!(ar.is_none() || !write_busy, "AR offered while a write is under way");
        assert!((aw.is_none() && w.is_none()) || self.r.is_none(), "AW or W offered while a read is under way");
        self.offered_aw = aw.filter(|_| !self.awready);
        self.offered_w = w.filter(|_| !self.wready);
        self.offered_ar = ar.filter(|_| !self.arready);

        if let Some((_, 0)) = self.b {
            if m.get_bit(p.bready) {
                self.b = None;
            }
        } else if let Some((resp, delay)) = self.b {
            self.b = Some((resp, delay - 1));
        }
        if let Some((_, _, 0)) = self.r {
            if m.get_bit(p.rready) {
                self.r = None;
            }
        } else if let Some((data, resp, delay)) = self.r {
            self.r = Some((data, resp, delay - 1));
        }
        if self.awready && aw.is_some() {
            self.aw = aw;
        }
        if self.wready && w.is_some() {
            self.w = w;
        }
        if let (Some(addr), Some((data, strb)), None) = (self.aw, self.w, self.b) {
            let resp = if rng.gen_bool(self.error_rate) { RESP_SLVERR } else { 0 };
            if resp == 0 {
                self.regs.insert(addr, data);
            }
            self.log.push_back(Access::Write { addr, data, strb, resp });
            self.b = Some((resp, rng.gen_range(0..6)));
            self.aw = None;
            self.w = None;
        }
        if let (true, Some(addr)) = (self.arready, ar) {
            let resp = if rng.gen_bool(self.error_rate) { RESP_SLVERR } else { 0 };
            // An erroring slave returns whatever it likes; the bridge passes it on.
            let data = if resp == 0 { self.regs.get(&addr).copied().unwrap_or(0) } else { rng.gen() };
            self.log.push_back(Access::Read { addr, data, resp });
            self.r = Some((data, resp, rng.gen_range(0..6)));
        }
    }
}

/// The host port of the board's host memory (`DevMem`): 64 KiB, writes in the cycle of
/// `h_wr_en`, read data from the cycle after `h_rd_en` on, held until the next read.
struct HostMemory {
    bytes: Vec<u8>,
    held: u32,
    writes: VecDeque<(u16, u32, u8)>,
    reads: VecDeque<u16>,
    ports: HostPorts,
}

struct HostPorts {
    wr_en: Port,
    wr_addr: Port,
    wr_data: Port,
    wr_strb: Port,
    rd_en: Port,
    rd_addr: Port,
    rd_data: Port,
}

impl HostMemory {
    fn word(&self, addr: u16) -> u32 {
        let a = usize::from(addr & !3);
        u32::from_le_bytes(self.bytes[a..a + 4].try_into().expect("4 bytes"))
    }

    fn drive(&self, m: &mut Model) {
        m.set(self.ports.rd_data, self.held.into());
    }

    /// Samples the bridge after the model settled; the clock edge follows.
    fn observe(&mut self, m: &Model) {
        let p = &self.ports;
        let (wr, rd) = (m.get_bit(p.wr_en), m.get_bit(p.rd_en));
        assert!(!(wr && rd), "host-memory read and write in one cycle");
        if rd {
            let addr = m.get(p.rd_addr) as u16;
            self.held = self.word(addr);
            self.reads.push_back(addr);
        }
        if wr {
            let (addr, data, strb) = (m.get(p.wr_addr) as u16, m.get(p.wr_data) as u32, m.get(p.wr_strb) as u8);
            let a = usize::from(addr & !3);
            for (i, byte) in data.to_le_bytes().into_iter().enumerate() {
                if strb >> i & 1 != 0 {
                    self.bytes[a + i] = byte;
                }
            }
            self.writes.push_back((addr, data, strb));
        }
    }
}

// ------------------------------------------------------------------------ the bench

/// The reference's view of the bus: each access it makes is checked against the one the
/// bridge made (the oldest not yet looked at), and answered as the slave answered it.
struct Oracle<'a> {
    slave: &'a mut AxilSlave,
    mem: &'a mut HostMemory,
    ref_regs: &'a mut HashMap<u16, u32>,
    ref_mem: &'a mut [u8],
    irqs: &'a mut u32,
}

impl BridgeBus for Oracle<'_> {
    fn bar0_write(&mut self, addr: u16, value: u32) -> bool {
        let access = self.slave.log.pop_front();
        let Some(Access::Write { addr: a, data, strb, resp }) = access else {
            panic!("BAR0 write of {value:#x} at {addr:#x}: the bridge made {access:?}")
        };
        assert_eq!((a, data, strb), (addr, value, 0xF), "AXI-Lite write (address, data, strobes)");
        if resp == 0 {
            self.ref_regs.insert(addr, value);
        }
        resp == 0
    }

    fn bar0_read(&mut self, addr: u16) -> (u32, bool) {
        let access = self.slave.log.pop_front();
        let Some(Access::Read { addr: a, data, resp }) = access else {
            panic!("BAR0 read at {addr:#x}: the bridge made {access:?}")
        };
        assert_eq!(a, addr, "AXI-Lite read address");
        if resp == 0 {
            assert_eq!(data, self.ref_regs.get(&addr).copied().unwrap_or(0), "slave model out of step");
        }
        (data, resp == 0)
    }

    fn mem_write(&mut self, index: u32, value: u32, strobes: u8) {
        let write = self.mem.writes.pop_front();
        let Some((addr, data, strb)) = write else { panic!("host-memory write of word {index:#x}: none made") };
        assert_eq!((u32::from(addr >> 2), data, strb), (index, value, strobes), "host-memory write");
        for (i, byte) in value.to_le_bytes().into_iter().enumerate() {
            if strobes >> i & 1 != 0 {
                self.ref_mem[index as usize * 4 + i] = byte;
            }
        }
    }

    fn mem_read(&mut self, index: u32) -> u32 {
        let read = self.mem.reads.pop_front();
        assert_eq!(read.map(|a| u32::from(a >> 2)), Some(index), "host-memory read");
        let a = index as usize * 4;
        u32::from_le_bytes(self.ref_mem[a..a + 4].try_into().expect("4 octets"))
    }

    fn take_irqs(&mut self) -> u32 {
        std::mem::take(self.irqs)
    }
}

struct Bench {
    model: Model,
    rng: StdRng,
    line: LineDriver,
    monitor: LineMonitor,
    slave: AxilSlave,
    mem: HostMemory,
    axil: AxilPorts,
    rxd: Port,
    txd: Port,
    irq_valid: Port,
    irq_vector: Port,
    /// An interrupt vector to pulse in the next cycle.
    irq_pulse: Option<u16>,
    /// The reference: the protocol, the octets sent cut into frames, the BAR registers and
    /// host memory as the requests leave them, the interrupts raised and not yet taken.
    reference: BridgeModel,
    sent: Deframer,
    /// Frames the bridge received whole and has not answered (as far as the bench knows).
    unanswered: VecDeque<Vec<u8>>,
    ref_regs: HashMap<u16, u32>,
    ref_mem: Vec<u8>,
    ref_irqs: u32,
    /// What arrived from the bridge, cut into frames.
    received: Deframer,
    /// Frames answered so far, and how many of them were NAKs and repeats.
    answered: usize,
    naks: usize,
}

impl Bench {
    fn new(seed: u64) -> Bench {
        let mut model = Model::new("rnic_board_uart_bridge").expect("rnic_board_uart_bridge model");
        let p = |n: &str| model.port(n);
        let a = |n: &str| model.port(&format!("m_axil_{n}"));
        let axil = AxilPorts {
            awaddr: a("awaddr"),
            awvalid: a("awvalid"),
            awready: a("awready"),
            wdata: a("wdata"),
            wstrb: a("wstrb"),
            wvalid: a("wvalid"),
            wready: a("wready"),
            bresp: a("bresp"),
            bvalid: a("bvalid"),
            bready: a("bready"),
            araddr: a("araddr"),
            arvalid: a("arvalid"),
            arready: a("arready"),
            rdata: a("rdata"),
            rresp: a("rresp"),
            rvalid: a("rvalid"),
            rready: a("rready"),
        };
        let ports = HostPorts {
            wr_en: p("h_wr_en"),
            wr_addr: p("h_wr_addr"),
            wr_data: p("h_wr_data"),
            wr_strb: p("h_wr_strb"),
            rd_en: p("h_rd_en"),
            rd_addr: p("h_rd_addr"),
            rd_data: p("h_rd_data"),
        };
        let (rxd, txd, irq_valid, irq_vector) = (p("rxd"), p("txd"), p("irq_valid"), p("irq_vector"));
        let mut rng = StdRng::seed_from_u64(seed);
        let bytes: Vec<u8> = (0..1 << MEM_LOG2).map(|_| rng.gen()).collect();
        let (clks_per_bit, mem_log2) = (model.port("clks_per_bit"), model.port("mem_log2"));
        model.set(clks_per_bit, CPB);
        model.set(mem_log2, MEM_LOG2.into());
        model.set_bit(rxd, true);
        model.reset_for(4);
        Bench {
            model,
            rng,
            line: LineDriver::default(),
            monitor: LineMonitor::default(),
            slave: AxilSlave::new(),
            ref_mem: bytes.clone(),
            mem: HostMemory { bytes, held: 0, writes: VecDeque::new(), reads: VecDeque::new(), ports },
            axil,
            rxd,
            txd,
            irq_valid,
            irq_vector,
            irq_pulse: None,
            reference: BridgeModel::new(MEM_LOG2),
            sent: Deframer::default(),
            unanswered: VecDeque::new(),
            ref_regs: HashMap::new(),
            ref_irqs: 0,
            received: Deframer::default(),
            answered: 0,
            naks: 0,
        }
    }

    fn cycle(&mut self) {
        let level = self.line.next_level();
        let m = &mut self.model;
        m.set_bit(self.rxd, level);
        m.set_bit(self.irq_valid, self.irq_pulse.is_some());
        m.set(self.irq_vector, self.irq_pulse.take().unwrap_or(0).into());
        self.mem.drive(m);
        self.slave.drive(m, &self.axil, &mut self.rng);
        m.eval();
        self.monitor.observe(m.cycles(), m.get_bit(self.txd));
        self.slave.observe(m, &self.axil, &mut self.rng);
        self.mem.observe(m);
        m.tick();
    }

    fn run(&mut self, cycles: u64) {
        for _ in 0..cycles {
            self.cycle();
        }
    }

    /// Pulses interrupt `vector` (a vector of 32 or more is not latched).
    fn irq(&mut self, vector: u16) {
        self.irq_pulse = Some(vector);
        self.cycle();
        if vector < 32 {
            self.ref_irqs |= 1 << vector;
        }
    }

    /// Puts `octets` on the line, each after 0..=`max_gap` idle cycles; the frames they
    /// complete are the bridge's to answer.
    fn send(&mut self, octets: &[u8], max_gap: u64) {
        for &b in octets {
            let gap = self.rng.gen_range(0..=max_gap);
            self.line.idle(gap);
            self.line.frame(b, true);
            if let Some(whole) = self.sent.push(b) {
                self.unanswered.push_back(whole);
            }
        }
    }

    /// Runs until every frame sent is answered, then checks each answer, byte for byte,
    /// against the reference's for the octets the bridge received, and the bus accesses
    /// the bridge made against the reference's.
    fn answer_all(&mut self, what: &str) {
        let mut limit = 400 * FRAME + self.line.levels.len() as u64;
        while !self.unanswered.is_empty() {
            while let Some(b) = self.monitor.received.pop_front() {
                if let Some(response) = self.received.push(b) {
                    let request = self
                        .unanswered
                        .pop_front()
                        .unwrap_or_else(|| panic!("{what}: a response {response:02x?} to no request"));
                    self.check(&request, &response, what);
                }
            }
            assert!(limit > 0, "{what}: {} frames unanswered", self.unanswered.len());
            limit -= 1;
            self.cycle();
        }
        // Nothing more comes.
        self.run(2 * FRAME);
        assert!(self.monitor.received.is_empty() && self.monitor.frame.is_none(), "{what}: an unasked response");
    }

    fn check(&mut self, request: &[u8], response: &[u8], what: &str) {
        let mut oracle = Oracle {
            slave: &mut self.slave,
            mem: &mut self.mem,
            ref_regs: &mut self.ref_regs,
            ref_mem: &mut self.ref_mem,
            irqs: &mut self.ref_irqs,
        };
        let body = self.reference.handle(&mut oracle, request);
        // The frame as cut from the line: no delimiters or escapes, CRC still on.
        let mut cut = Deframer::default();
        let want = frame(&body).into_iter().find_map(|b| cut.push(b)).expect("one frame");
        assert_eq!(response, &want[..], "{what}: the answer to frame {request:02x?}");
        self.answered += 1;
        self.naks += usize::from(body == [0, NAK]);
    }

    /// Sends `request` and checks its answer.
    fn roundtrip(&mut self, request: &Request, max_gap: u64) {
        self.send(&frame(&request.body()), max_gap);
        self.answer_all(&format!("{request:?}"));
    }

    /// Once every answer is checked: no access beyond the reference's, and both memories
    /// as the reference has them.
    fn check_memory(&self) {
        assert!(self.slave.log.is_empty(), "AXI-Lite accesses the reference did not make: {:?}", self.slave.log);
        assert!(self.mem.writes.is_empty(), "host-memory writes the reference did not make: {:x?}", self.mem.writes);
        assert!(self.mem.reads.is_empty(), "host-memory reads the reference did not make: {:x?}", self.mem.reads);
        assert!(self.mem.bytes == self.ref_mem, "host memory differs from the reference");
        assert_eq!(self.slave.regs, self.ref_regs, "BAR registers differ from the reference");
    }
}

/// A random request; addresses cluster so reads find what writes left.
fn random_request(rng: &mut StdRng, seq: u8) -> Request {
    let addr: u16 = rng.gen_range(0..64) * 4 + if rng.gen_bool(0.5) { 0xff00 } else { 0x1000 };
    let count = rng.gen_range(1..=MAX_WORDS);
    match rng.gen_range(0..100) {
        0..=19 => Request::bar0_write(seq, addr, rng.gen()),
        20..=39 => Request::bar0_read(seq, addr),
        40..=64 => {
            let words = (0..count).map(|_| rng.gen()).collect();
            Request::mem_write(seq, addr | rng.gen_range(0..4), words, rng.gen(), rng.gen())
        }
        65..=89 => Request::mem_read(seq, addr | rng.gen_range(0..4), count),
        90..=94 => Request::irq(seq),
        _ => Request::identify(seq),
    }
}

/// A frame that is no request: a bad CRC, a wrong length, an unknown opcode or count.
fn bad_frame(rng: &mut StdRng, seq: u8) -> Vec<u8> {
    let good = random_request(rng, seq).body();
    match rng.gen_range(0..4) {
        0 => {
            let mut line = frame(&good);
            let n = line.len();
            // The CRC octet (or an octet of the body) changed, never into END or ESC.
            let at = rng.gen_range(1..n - 1);
            line[at] = match line[at] ^ 0x10 {
                END | ESC => line[at] ^ 0x01,
                b => b,
            };
            line
        }
        1 => frame(&[good.as_slice(), &[rng.gen()]].concat()),
        2 => frame(&[seq, rng.gen_range(7..=255), 0, 0]),
        _ => frame(&[seq, Op::MemRead as u8, 0, 0, if rng.gen_bool(0.5) { 0 } else { MAX_WORDS + 1 }]),
    }
}

// ------------------------------------------------------------------------ tests

fn random_run(seed: u64, frames: usize) {
    let mut b = Bench::new(seed);
    let mut rng = StdRng::seed_from_u64(seed ^ 0xb71d6e);
    b.slave.ready_rate = rng.gen_range(0.2..=1.0);
    b.slave.error_rate = rng.gen_range(0.1..0.4);
    let mut seq: u8 = rng.gen();
    let mut last: Option<Request> = None;
    for n in 0..frames {
        if rng.gen_bool(0.2) {
            b.irq(rng.gen_range(0..40));
        }
        let max_gap = if rng.gen_bool(0.1) { 3 * FRAME } else { CPB };
        match rng.gen_range(0..100) {
            // The last request again, as a host that lost its answer sends it.
            0..=14 if last.is_some() => {
                let again = last.clone().expect("a last request");
                b.roundtrip(&again, max_gap);
            }
            15..=29 => {
                let bad = bad_frame(&mut rng, seq);
                b.send(&bad, max_gap);
                b.answer_all(&format!("frame {n}, no request"));
            }
            // A line error: an octet of a request dropped (its frame then fails its CRC or
            // its length, or loses an escape).
            30..=37 => {
                let mut line = frame(&random_request(&mut rng, seq).body());
                let at = rng.gen_range(1..line.len() - 1);
                line.remove(at);
                b.send(&line, max_gap);
                b.answer_all(&format!("frame {n}, an octet dropped"));
            }
            _ => {
                seq = seq.wrapping_add(1);
                let request = random_request(&mut rng, seq);
                b.roundtrip(&request, max_gap);
                last = Some(request);
            }
        }
    }
    b.check_memory();
    assert!(b.naks > frames / 20, "{} NAKs in {frames} frames: the error path went untested", b.naks);
}

#[test]
fn random_frames_match_the_reference() {
    trace::on_failure("random_frames_match_the_reference", || {
        for seed in 0..4 {
            random_run(seed, 250);
        }
    });
}

/// A repeated sequence number is answered from the kept response: no second bus access
/// (the oracle would see one too many), the same octets; IDENTIFY forgets it.
#[test]
fn a_repeated_request_is_answered_again_and_not_run_again() {
    trace::on_failure("a_repeated_request_is_answered_again_and_not_run_again", || {
        let mut b = Bench::new(41);
        b.slave.error_rate = 0.0;
        let write = Request::bar0_write(7, 0x40, 0x1234_5678);
        for _ in 0..3 {
            b.roundtrip(&write, CPB);
        }
        assert_eq!(b.slave.regs.get(&0x40), Some(&0x1234_5678));
        let writes = b.ref_regs.len();
        b.roundtrip(&Request::identify(7), CPB);
        b.roundtrip(&write, CPB);
        assert_eq!(b.ref_regs.len(), writes);
        b.check_memory();
    });
}

/// A host that sends while the bridge answers: the frame that arrives while it is busy is
/// dropped unanswered, and the next one is answered.
#[test]
fn a_frame_that_arrives_while_the_bridge_is_busy_is_dropped() {
    trace::on_failure("a_frame_that_arrives_while_the_bridge_is_busy_is_dropped", || {
        let mut b = Bench::new(51);
        let first = frame(&Request::mem_read(1, 0x100, MAX_WORDS).body());
        let second = frame(&Request::bar0_write(2, 0x44, 5).body());
        b.send(&first, 0);
        // While the 16-word answer goes out, the second request comes in whole.
        b.line.frame(0xff, true);
        b.line.levels.extend(std::iter::repeat_n(true, (5 * FRAME) as usize));
        for &o in &second {
            b.line.frame(o, true);
        }
        b.answer_all("a request while the bridge answers");
        assert_eq!(b.slave.log.len(), 0, "the dropped request made no access");
        b.roundtrip(&Request::bar0_write(3, 0x44, 6), CPB);
        b.check_memory();
    });
}

#[test]
fn glitches_and_framing_errors_are_ignored() {
    trace::on_failure("glitches_and_framing_errors_are_ignored", || {
        let mut b = Bench::new(31);
        for round in 0..40u8 {
            // A low pulse shorter than half a bit: sampled high in the start bit's middle.
            let width = b.rng.gen_range(1..CPB / 2);
            b.line.idle(b.rng.gen_range(0..3 * CPB));
            b.line.glitch(width);
            // A byte with a low stop bit, the line then held low a while (a break).
            b.line.frame(END, false);
            b.line.glitch(b.rng.gen_range(0..3 * FRAME));
            b.line.idle(CPB);
            b.run(4 * FRAME);
            assert!(b.monitor.received.is_empty(), "round {round}: a glitch or framing error was answered");
            let request = random_request(&mut b.rng, round);
            b.roundtrip(&request, CPB);
        }
        b.check_memory();
    });
}
