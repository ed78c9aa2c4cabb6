//! `board/uart_bridge` (`rnic_board_uart_bridge`) in Verilator, with the serial line driven
//! bit by bit from Rust at 8 clock cycles per bit, an AXI4-Lite slave model (random ready
//! delays, random response delays, random SLVERR) and a host-memory port model, against a
//! Rust reference of both:
//! - random sequences of all four requests, byte gaps and overlapping requests: every
//!   response byte-exact, the error bit exactly when the slave answered SLVERR, every bus
//!   access as requested, and the transmitter's frames exact to the cycle;
//! - every opcode byte other than 1..=4 is answered 0xFF and leaves the parser at a frame
//!   start;
//! - a frame whose bytes are more than 65 536 cycles apart is dropped, and one whose bytes
//!   come just within that is not;
//! - a low pulse shorter than half a bit on an idle line is no start bit, and a byte with
//!   a low stop bit is dropped.
use std::collections::{HashMap, VecDeque};

use rand::rngs::StdRng;
use rand::{Rng, SeedableRng};
use rnic_sim::{trace, Model, Port};

/// Clock cycles per bit on the serial line.
const CPB: u64 = 8;
/// Cycles in one 8N1 frame.
const FRAME: u64 = 10 * CPB;
/// A frame is dropped when its next byte comes more than this many cycles after the last.
const BYTE_TIMEOUT: u64 = 65_536;

const OP_BAR_WRITE: u8 = 0x01;
const OP_BAR_READ: u8 = 0x02;
const OP_HOST_WRITE: u8 = 0x03;
const OP_HOST_READ: u8 = 0x04;
const RESP_SLVERR: u8 = 2;

/// One request as the host sends it.
#[derive(Clone, Copy, Debug)]
enum Request {
    BarWrite { addr: u16, data: u32 },
    BarRead { addr: u16 },
    HostWrite { addr: u16, data: u32 },
    HostRead { addr: u16 },
    Unknown(u8),
}

impl Request {
    fn bytes(&self) -> Vec<u8> {
        let with_addr = |op: u8, addr: u16| vec![op, addr as u8, (addr >> 8) as u8];
        match *self {
            Request::BarWrite { addr, data } => [with_addr(OP_BAR_WRITE, addr), data.to_le_bytes().to_vec()].concat(),
            Request::BarRead { addr } => with_addr(OP_BAR_READ, addr),
            Request::HostWrite { addr, data } => [with_addr(OP_HOST_WRITE, addr), data.to_le_bytes().to_vec()].concat(),
            Request::HostRead { addr } => with_addr(OP_HOST_READ, addr),
            Request::Unknown(op) => vec![op],
        }
    }

    /// Bytes of the response.
    fn response_len(&self) -> usize {
        match self {
            Request::BarRead { .. } | Request::HostRead { .. } => 5,
            _ => 1,
        }
    }

    fn random(rng: &mut StdRng) -> Request {
        let addr = rng.gen();
        let data = rng.gen();
        match rng.gen_range(0..100) {
            0..=24 => Request::BarWrite { addr, data },
            25..=49 => Request::BarRead { addr },
            50..=71 => Request::HostWrite { addr, data },
            72..=94 => Request::HostRead { addr },
            _ => Request::Unknown(unknown_opcode(rng)),
        }
    }
}

fn unknown_opcode(rng: &mut StdRng) -> u8 {
    loop {
        let op = rng.gen();
        if !(1..=4).contains(&op) {
            return op;
        }
    }
}

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

    fn busy(&self) -> bool {
        !self.levels.is_empty()
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
    /// The BAR registers and host memory as the bridge should have left them.
    ref_regs: HashMap<u16, u32>,
    ref_mem: Vec<u8>,
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
        let (rxd, txd) = (p("rxd"), p("txd"));
        let mut rng = StdRng::seed_from_u64(seed);
        let bytes: Vec<u8> = (0..1 << 16).map(|_| rng.gen()).collect();
        let clks_per_bit = model.port("clks_per_bit");
        model.set(clks_per_bit, CPB);
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
            ref_regs: HashMap::new(),
        }
    }

    fn cycle(&mut self) {
        let level = self.line.next_level();
        let m = &mut self.model;
        m.set_bit(self.rxd, level);
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

    /// Queues `bytes` on the line, each after 0..`max_gap` idle cycles.
    fn send(&mut self, bytes: &[u8], max_gap: u64) {
        for &b in bytes {
            let gap = self.rng.gen_range(0..=max_gap);
            self.line.idle(gap);
            self.line.frame(b, true);
        }
    }

    /// Runs until `n` response bytes have arrived (panics after `limit` cycles); returns them.
    fn receive(&mut self, n: usize, limit: u64, what: &str) -> Vec<u8> {
        for _ in 0..limit {
            if self.monitor.received.len() >= n {
                return self.monitor.received.drain(..n).collect();
            }
            self.cycle();
        }
        panic!(
            "{what}: {} of {n} response bytes after {limit} cycles: {:02x?}",
            self.monitor.received.len(),
            self.monitor.received
        );
    }

    /// Runs until the line is sent and `quiet` cycles pass without a response byte;
    /// panics if one comes.
    fn expect_silence(&mut self, quiet: u64, what: &str) {
        while self.line.busy() {
            self.cycle();
        }
        self.run(quiet);
        assert!(self.monitor.received.is_empty(), "{what}: unexpected response bytes {:02x?}", self.monitor.received);
        assert!(self.monitor.frame.is_none(), "{what}: a response is being sent");
    }

    /// The response `request` should have got, from the bus access it made (checked
    /// against the request and the reference). Accesses are made in request order, so
    /// this request's is the oldest not yet looked at; a request sent after it may have
    /// made its own already.
    fn expected_response(&mut self, request: Request) -> Vec<u8> {
        let error = |resp: u8| if resp == 0 { 0 } else { 0x40 };
        let mut access = || self.slave.log.pop_front().unwrap_or_else(|| panic!("{request:?}: no AXI-Lite access"));
        match request {
            Request::BarWrite { addr, data } => {
                let Access::Write { addr: a, data: d, strb, resp } = access() else {
                    panic!("{request:?}: the bridge read instead")
                };
                assert_eq!((a, d, strb), (addr, data, 0xF), "{request:?}: AXI-Lite write (address, data, strobes)");
                if resp == 0 {
                    self.ref_regs.insert(addr, data);
                }
                vec![0x81 | error(resp)]
            }
            Request::BarRead { addr } => {
                let Access::Read { addr: a, data, resp } = access() else {
                    panic!("{request:?}: the bridge wrote instead")
                };
                assert_eq!(a, addr, "{request:?}: AXI-Lite read address");
                if resp == 0 {
                    assert_eq!(data, self.ref_regs.get(&addr).copied().unwrap_or(0), "slave model out of step");
                }
                [vec![0x82 | error(resp)], data.to_le_bytes().to_vec()].concat()
            }
            Request::HostWrite { addr, data } => {
                let write = self.mem.writes.pop_front();
                assert_eq!(write, Some((addr, data, 0xF)), "{request:?}: host-memory write (address, data, strobes)");
                let a = usize::from(addr & !3);
                self.ref_mem[a..a + 4].copy_from_slice(&data.to_le_bytes());
                vec![0x83]
            }
            Request::HostRead { addr } => {
                assert_eq!(self.mem.reads.pop_front(), Some(addr), "{request:?}: host-memory read address");
                let a = usize::from(addr & !3);
                [vec![0x84], self.ref_mem[a..a + 4].to_vec()].concat()
            }
            Request::Unknown(_) => vec![0xFF],
        }
    }

    /// Sends `request`, waits for its whole response and checks it.
    fn roundtrip(&mut self, request: Request, max_gap: u64) {
        self.send(&request.bytes(), max_gap);
        let got = self.receive(request.response_len(), 40 * FRAME + 8 * max_gap, &format!("{request:?}"));
        let want = self.expected_response(request);
        assert_eq!(got, want, "response to {request:?}");
    }

    /// Once every response is checked: no access beyond the requests', and both memories
    /// as the reference has them.
    fn check_memory(&self) {
        assert!(self.slave.log.is_empty(), "AXI-Lite accesses no request asked for: {:?}", self.slave.log);
        assert!(self.mem.writes.is_empty(), "host-memory writes no request asked for: {:x?}", self.mem.writes);
        assert!(self.mem.reads.is_empty(), "host-memory reads no request asked for: {:x?}", self.mem.reads);
        assert!(self.mem.bytes == self.ref_mem, "host memory differs from the reference");
        assert_eq!(self.slave.regs, self.ref_regs, "BAR registers differ from the reference");
    }
}

// ------------------------------------------------------------------------ tests

fn random_run(seed: u64, requests: usize) {
    let mut b = Bench::new(seed);
    let mut rng = StdRng::seed_from_u64(seed ^ 0xb71d6e);
    b.slave.ready_rate = rng.gen_range(0.2..=1.0);
    b.slave.error_rate = rng.gen_range(0.1..0.4);
    // Requests in flight: sent, response not yet (all) checked.
    let mut pending: VecDeque<Request> = VecDeque::new();
    let mut errors = 0;
    let (mut sent, mut done) = (0, 0);
    while done < requests {
        // Sometimes the next request goes out while the previous response is arriving.
        let overlap = pending.len() == 1 && !b.monitor.received.is_empty() && rng.gen_bool(0.3);
        if sent < requests && (pending.is_empty() || overlap) {
            sent += 1;
            let request = Request::random(&mut rng);
            let max_gap = if rng.gen_bool(0.1) { 20 * FRAME } else { CPB };
            b.send(&request.bytes(), max_gap);
            pending.push_back(request);
        }
        let request = *pending.front().expect("a request in flight");
        if b.monitor.received.len() >= request.response_len() || pending.len() > 1 {
            let got = b.receive(request.response_len(), 200 * FRAME, &format!("{request:?}"));
            // The bus accesses of a request still being parsed have not happened yet.
            let want = b.expected_response(request);
            assert_eq!(got, want, "response to request {done}, {request:?}");
            errors += usize::from(got[0] & 0x40 != 0);
            pending.pop_front();
            done += 1;
        } else {
            b.cycle();
        }
    }
    b.check_memory();
    assert!(errors > 0, "no SLVERR in {requests} requests: the error path went untested");
}

#[test]
fn random_requests_match_the_reference() {
    trace::on_failure("random_requests_match_the_reference", || {
        for seed in 0..4 {
            random_run(seed, 300);
        }
    });
}

#[test]
fn unknown_opcodes_are_answered_and_dropped() {
    trace::on_failure("unknown_opcodes_are_answered_and_dropped", || {
        let mut b = Bench::new(11);
        let mut ops: Vec<u8> = (0..=255u8).filter(|op| !(1..=4).contains(op)).collect();
        // Shuffle, and send them back to back: each is answered while the next arrives, and
        // the answers leave back to back too (a gap per frame would not fit in the limit).
        for i in (1..ops.len()).rev() {
            let j = b.rng.gen_range(0..=i);
            ops.swap(i, j);
        }
        b.send(&ops, 0);
        let got = b.receive(ops.len(), (ops.len() as u64 + 2) * FRAME, "back-to-back unknown opcodes");
        assert!(got.iter().all(|&r| r == 0xFF), "unknown opcodes answered {got:02x?}");
        b.expect_silence(4 * FRAME, "after the unknown opcodes");
        // Each followed by a request: the parser is at a frame start after each.
        for _ in 0..40 {
            let op = unknown_opcode(&mut b.rng);
            b.roundtrip(Request::Unknown(op), CPB);
            let request = Request::random(&mut b.rng);
            b.roundtrip(request, CPB);
        }
        b.check_memory();
    });
}

#[test]
fn a_stalled_frame_is_dropped_after_the_byte_timeout() {
    trace::on_failure("a_stalled_frame_is_dropped_after_the_byte_timeout", || {
        let mut b = Bench::new(21);
        b.slave.error_rate = 0.0;
        // The gap between two bytes' ends is the idle time plus one frame.
        let just_within = BYTE_TIMEOUT - FRAME - CPB;
        let just_over = BYTE_TIMEOUT - FRAME + CPB;
        let requests = [
            Request::BarWrite { addr: 0x1234, data: 0xdead_beef },
            Request::HostWrite { addr: 0x8766, data: 0x0bad_cafe },
            Request::BarRead { addr: 0x1234 },
            Request::HostRead { addr: 0x8766 },
        ];
        for request in requests {
            let bytes = request.bytes();
            for cut in 1..bytes.len() {
                // Within the limit: the frame goes on.
                b.send(&bytes[..cut], 0);
                b.line.idle(just_within);
                b.send(&bytes[cut..], 0);
                let got = b.receive(
                    request.response_len(),
                    2 * BYTE_TIMEOUT,
                    &format!("{request:?} paused after {cut} bytes"),
                );
                let want = b.expected_response(request);
                assert_eq!(got, want, "{request:?} paused for {just_within} idle cycles after {cut} bytes");
                // Over it: the start is dropped, and a whole request that follows works.
                b.send(&bytes[..cut], 0);
                b.line.idle(just_over);
                b.expect_silence(0, "a dropped frame");
                let next = Request::HostRead { addr: b.rng.gen() };
                b.roundtrip(next, 0);
            }
        }
        b.check_memory();
    });
}

#[test]
fn glitches_and_framing_errors_are_ignored() {
    trace::on_failure("glitches_and_framing_errors_are_ignored", || {
        let mut b = Bench::new(31);
        for round in 0..60 {
            // A low pulse shorter than half a bit: sampled high in the start bit's middle.
            let width = b.rng.gen_range(1..CPB / 2);
            b.line.idle(b.rng.gen_range(0..3 * CPB));
            b.line.glitch(width);
            b.expect_silence(2 * FRAME, &format!("a {width}-cycle glitch"));
            // A byte with a low stop bit (an unknown opcode if it were taken), the line
            // then held low a while (a break): no byte.
            let op = unknown_opcode(&mut b.rng);
            b.line.frame(op, false);
            b.line.glitch(b.rng.gen_range(0..3 * FRAME));
            b.line.idle(CPB);
            b.expect_silence(2 * FRAME, &format!("round {round}: framing error"));
            let request = Request::random(&mut b.rng);
            b.roundtrip(request, CPB);
        }
        b.check_memory();
    });
}
