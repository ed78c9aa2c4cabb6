//! The serial bridge of the board build: how a host on a UART reaches the RNIC's BAR0, the
//! board's host memory and its interrupts (`hdl/src/board/uart_bridge.rs`), and a
//! reference model of the bridge that the RTL is tested against.
//!
//! **Line.** 8N1. Frames are SLIP-delimited (RFC 1055): [`END`] ends a frame, and a sender
//! also starts each frame with one, so line noise before it becomes an empty or bad frame
//! of its own; inside a frame [`END`] is sent as `ESC ESC_END` and [`ESC`] as `ESC
//! ESC_ESC`. A lost or corrupted octet therefore spoils one frame, never the next.
//!
//! **Frame.** A body and one CRC-8 octet over it ([`crc8`]: polynomial 0x07, initial value
//! 0, no reflection, no final XOR, so the CRC over body and CRC octet is 0).
//!
//! **Request body:** sequence number, opcode, address (two octets, little-endian), then:
//!
//! | opcode | request | response data |
//! |---|---|---|
//! | [`Op::Bar0Write`] `0x01` | the value (4 octets, LE) | – |
//! | [`Op::Bar0Read`] `0x02` | – | the value (4) |
//! | [`Op::MemWrite`] `0x03` | `n` (1..=[`MAX_WORDS`]), strobes, `n` words (4n) | – |
//! | [`Op::MemRead`] `0x04` | `n` (1..=[`MAX_WORDS`]) | `n` words (4n) |
//! | [`Op::Identify`] `0x05` | – | [`VERSION`], log2 of the host memory's octets, [`MAX_WORDS`] |
//! | [`Op::Irq`] `0x06` | – | the interrupt vectors 0..31 that fired since the last `Irq`, a bit each (4, LE) |
//!
//! Host memory is addressed by octet; the two low bits of the address are ignored and `n`
//! words from it are written or read, wrapping at the end of the memory. A write's strobes
//! octet gives the first word's octet enables in its low nibble and the last word's in its
//! high nibble (words between are whole; a one-word write uses both nibbles ANDed).
//!
//! **Response body:** the request's sequence number, a status octet `0x80 | opcode` (bit 6
//! also set if the AXI4-Lite response was not OKAY; a read still returns the data), the
//! data. A frame that is no request (a bad CRC, a length that does not fit its opcode, an
//! unknown opcode, `n` out of range) is answered with the body `[0, `[`NAK`]`]` and
//! otherwise ignored.
//!
//! **Exactly once.** Requests run one at a time. The bridge keeps the sequence number and
//! response of the last request it ran: a request with that sequence number again is
//! answered from it and not run again, so a host that lost a response repeats the request
//! safely. [`Op::Identify`] always runs, and forgets the kept response: a host starts a
//! session with it and then numbers its requests from any value.
use std::fmt;

/// Ends a frame.
pub const END: u8 = 0xC0;
/// Escapes [`END`] and itself inside a frame.
pub const ESC: u8 = 0xDB;
/// After [`ESC`]: an [`END`] octet of the frame.
pub const ESC_END: u8 = 0xDC;
/// After [`ESC`]: an [`ESC`] octet of the frame.
pub const ESC_ESC: u8 = 0xDD;
/// The status octet of a NAK.
pub const NAK: u8 = 0xFE;
/// The protocol version [`Op::Identify`] reports.
pub const VERSION: u8 = 2;
/// Words a host-memory request moves at most.
pub const MAX_WORDS: u8 = 16;
/// Status bit: the bus answered with an error.
pub const STATUS_BUS_ERROR: u8 = 0x40;
/// Status bit: a response (always set).
pub const STATUS_RESPONSE: u8 = 0x80;
/// Octets of a request body before its data: sequence number, opcode, address.
pub const REQUEST_HEADER: usize = 4;
/// The longest request frame, CRC included: a [`MAX_WORDS`] host-memory write.
pub const MAX_REQUEST: usize = REQUEST_HEADER + 2 + 4 * MAX_WORDS as usize + 1;

/// The requests.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[repr(u8)]
pub enum Op {
    /// Write a BAR0 register.
    Bar0Write = 0x01,
    /// Read a BAR0 register.
    Bar0Read = 0x02,
    /// Write words of host memory.
    MemWrite = 0x03,
    /// Read words of host memory.
    MemRead = 0x04,
    /// The bridge's version and host memory size; starts a session.
    Identify = 0x05,
    /// Take the interrupt vectors that fired.
    Irq = 0x06,
}

impl Op {
    /// The opcode of an octet, if it is one.
    pub fn from_u8(op: u8) -> Option<Op> {
        [Op::Bar0Write, Op::Bar0Read, Op::MemWrite, Op::MemRead, Op::Identify, Op::Irq]
            .into_iter()
            .find(|o| *o as u8 == op)
    }
}

/// CRC-8 (polynomial 0x07, initial 0, not reflected, no final XOR) of `data`.
pub fn crc8(data: &[u8]) -> u8 {
    data.iter().fold(0u8, |crc, &b| crc8_byte(crc, b))
}

/// One octet's step of [`crc8`].
pub fn crc8_byte(crc: u8, byte: u8) -> u8 {
    (0..8).fold(crc ^ byte, |c, _| if c & 0x80 != 0 { (c << 1) ^ 0x07 } else { c << 1 })
}

/// A frame on the line: [`END`], the body and its CRC escaped, [`END`].
pub fn frame(body: &[u8]) -> Vec<u8> {
    let mut out = vec![END];
    for &b in body.iter().chain(&[crc8(body)]) {
        match b {
            END => out.extend([ESC, ESC_END]),
            ESC => out.extend([ESC, ESC_ESC]),
            b => out.push(b),
        }
    }
    out.push(END);
    out
}

/// Cuts a line into frames: feed it octets, it returns each frame's octets (CRC still
/// on, escapes undone) when its [`END`] arrives. Empty frames are skipped.
#[derive(Clone, Debug, Default)]
pub struct Deframer {
    current: Vec<u8>,
    escaped: bool,
}

impl Deframer {
    /// Takes one octet; a whole frame when it ends one.
    pub fn push(&mut self, b: u8) -> Option<Vec<u8>> {
        match (self.escaped, b) {
            (_, END) => {
                self.escaped = false;
                return (!self.current.is_empty()).then(|| std::mem::take(&mut self.current));
            }
            (false, ESC) => self.escaped = true,
            (true, ESC_END) => (self.current.push(END), self.escaped = false).1,
            (true, ESC_ESC) => (self.current.push(ESC), self.escaped = false).1,
            // An escape of nothing: kept as the octet, which spoils the frame's CRC.
            (true, b) => (self.current.push(b), self.escaped = false).1,
            (false, b) => self.current.push(b),
        }
        None
    }
}

/// The body of a frame whose CRC is right.
pub fn check(frame: &[u8]) -> Option<&[u8]> {
    (frame.len() >= 2 && crc8(frame) == 0).then(|| &frame[..frame.len() - 1])
}

/// A request, decoded.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Request {
    /// Sequence number.
    pub seq: u8,
    /// What to do.
    pub op: Op,
    /// BAR0 offset, or host-memory octet address.
    pub addr: u16,
    /// [`Op::Bar0Write`]: the value; [`Op::MemWrite`]: the words.
    pub words: Vec<u32>,
    /// [`Op::MemRead`]: the word count; [`Op::MemWrite`]: `words.len()`.
    pub count: u8,
    /// [`Op::MemWrite`]: first word's octet enables (low nibble), last word's (high).
    pub strobes: u8,
}

impl Request {
    fn new(seq: u8, op: Op, addr: u16) -> Request {
        Request { seq, op, addr, words: Vec::new(), count: 0, strobes: 0 }
    }

    /// A BAR0 write.
    pub fn bar0_write(seq: u8, addr: u16, value: u32) -> Request {
        Request { words: vec![value], ..Request::new(seq, Op::Bar0Write, addr) }
    }

    /// A BAR0 read.
    pub fn bar0_read(seq: u8, addr: u16) -> Request {
        Request::new(seq, Op::Bar0Read, addr)
    }

    /// Writes `words` from octet address `addr`, the first and last with these enables.
    pub fn mem_write(seq: u8, addr: u16, words: Vec<u32>, first: u8, last: u8) -> Request {
        assert!((1..=MAX_WORDS as usize).contains(&words.len()), "1 to {MAX_WORDS} words");
        let count = words.len() as u8;
        Request { words, count, strobes: (first & 15) | (last & 15) << 4, ..Request::new(seq, Op::MemWrite, addr) }
    }

    /// Reads `count` words from octet address `addr`.
    pub fn mem_read(seq: u8, addr: u16, count: u8) -> Request {
        assert!((1..=MAX_WORDS).contains(&count), "1 to {MAX_WORDS} words");
        Request { count, ..Request::new(seq, Op::MemRead, addr) }
    }

    /// Starts a session: the bridge's identity.
    pub fn identify(seq: u8) -> Request {
        Request::new(seq, Op::Identify, 0)
    }

    /// Takes the interrupts that fired.
    pub fn irq(seq: u8) -> Request {
        Request::new(seq, Op::Irq, 0)
    }

    /// The body (no CRC).
    pub fn body(&self) -> Vec<u8> {
        let mut out = vec![self.seq, self.op as u8];
        out.extend(self.addr.to_le_bytes());
        match self.op {
            Op::Bar0Write => out.extend(self.words[0].to_le_bytes()),
            Op::MemWrite => {
                out.extend([self.count, self.strobes]);
                self.words.iter().for_each(|w| out.extend(w.to_le_bytes()));
            }
            Op::MemRead => out.push(self.count),
            Op::Bar0Read | Op::Identify | Op::Irq => {}
        }
        out
    }

    /// Decodes a body (CRC checked and removed); `None` if it is no request.
    pub fn parse(body: &[u8]) -> Option<Request> {
        if body.len() < REQUEST_HEADER {
            return None;
        }
        let mut r = Request::new(body[0], Op::from_u8(body[1])?, u16::from_le_bytes([body[2], body[3]]));
        let rest = &body[REQUEST_HEADER..];
        let words = |b: &[u8]| b.chunks(4).map(|c| u32::from_le_bytes(c.try_into().expect("4 octets"))).collect();
        match r.op {
            Op::Bar0Write if rest.len() == 4 => r.words = words(rest),
            Op::MemWrite
                if rest.len() >= 2 && (1..=MAX_WORDS).contains(&rest[0]) && rest.len() == 2 + 4 * rest[0] as usize =>
            {
                (r.count, r.strobes, r.words) = (rest[0], rest[1], words(&rest[2..]));
            }
            Op::MemRead if rest.len() == 1 && (1..=MAX_WORDS).contains(&rest[0]) => r.count = rest[0],
            Op::Bar0Read | Op::Identify | Op::Irq if rest.is_empty() => {}
            _ => return None,
        }
        Some(r)
    }
}

/// What the bridge drives: BAR0 and host memory (word addressed), and the interrupts.
pub trait BridgeBus {
    /// A BAR0 write; `false` if the bus answered with an error.
    fn bar0_write(&mut self, addr: u16, value: u32) -> bool;
    /// A BAR0 read: the value, and `false` if the bus answered with an error.
    fn bar0_read(&mut self, addr: u16) -> (u32, bool);
    /// Writes the octets of `value` whose bits of `strobes` are set, at word `index`.
    fn mem_write(&mut self, index: u32, value: u32, strobes: u8);
    /// Reads word `index`.
    fn mem_read(&mut self, index: u32) -> u32;
    /// The vectors that fired since the last call, a bit each, and forgets them.
    fn take_irqs(&mut self) -> u32;
}

/// The bridge's behaviour: frames in, response frames out.
#[derive(Clone, Debug)]
pub struct BridgeModel {
    /// log2 of the host memory's octets.
    pub mem_log2: u8,
    kept: Option<(u8, Vec<u8>)>,
}

impl BridgeModel {
    /// A bridge in front of `2^mem_log2` octets of host memory, nothing kept.
    pub fn new(mem_log2: u8) -> BridgeModel {
        BridgeModel { mem_log2, kept: None }
    }

    /// The response body to a received frame (CRC still on).
    pub fn handle(&mut self, bus: &mut impl BridgeBus, frame: &[u8]) -> Vec<u8> {
        let Some(req) = check(frame).and_then(Request::parse) else {
            return vec![0, NAK];
        };
        if req.op != Op::Identify {
            if let Some((seq, body)) = &self.kept {
                if *seq == req.seq {
                    return body.clone();
                }
            }
        }
        let mut status = STATUS_RESPONSE | req.op as u8;
        let mut data = Vec::new();
        let words = 1u32 << (self.mem_log2 - 2);
        let index = |i: u32| (u32::from(req.addr >> 2) + i) % words;
        match req.op {
            Op::Bar0Write => status |= if bus.bar0_write(req.addr, req.words[0]) { 0 } else { STATUS_BUS_ERROR },
            Op::Bar0Read => {
                let (value, ok) = bus.bar0_read(req.addr);
                status |= if ok { 0 } else { STATUS_BUS_ERROR };
                data.extend(value.to_le_bytes());
            }
            Op::MemWrite => {
                let last = req.words.len() - 1;
                for (i, &w) in req.words.iter().enumerate() {
                    let strobes = match (i == 0, i == last) {
                        (true, true) => req.strobes & req.strobes >> 4,
                        (true, false) => req.strobes & 15,
                        (false, true) => req.strobes >> 4,
                        (false, false) => 15,
                    };
                    bus.mem_write(index(i as u32), w, strobes);
                }
            }
            Op::MemRead => (0..u32::from(req.count)).for_each(|i| data.extend(bus.mem_read(index(i)).to_le_bytes())),
            Op::Identify => data.extend([VERSION, self.mem_log2, MAX_WORDS]),
            Op::Irq => data.extend(bus.take_irqs().to_le_bytes()),
        }
        let mut body = vec![req.seq, status];
        body.extend(data);
        self.kept = match req.op {
            Op::Identify => None,
            _ => Some((req.seq, body.clone())),
        };
        body
    }
}

/// A response, decoded.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Response {
    /// The request's sequence number, its status octet and data.
    Done {
        /// Sequence number.
        seq: u8,
        /// Status octet.
        status: u8,
        /// Data.
        data: Vec<u8>,
    },
    /// The bridge received a frame that was no request.
    Nak,
}

impl Response {
    /// Decodes a body (CRC checked and removed).
    pub fn parse(body: &[u8]) -> Option<Response> {
        match body {
            [0, NAK] => Some(Response::Nak),
            [seq, status, data @ ..] if status & STATUS_RESPONSE != 0 => {
                Some(Response::Done { seq: *seq, status: *status, data: data.to_vec() })
            }
            _ => None,
        }
    }
}

impl fmt::Display for Op {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        fmt::Debug::fmt(self, f)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn crc8_is_the_smbus_crc() {
        // The CRC-8/SMBUS check value (the CRC of "123456789").
        assert_eq!(crc8(b"123456789"), 0xF4);
        let body = [1u8, 2, 3];
        let mut with = body.to_vec();
        with.push(crc8(&body));
        assert_eq!(crc8(&with), 0, "the CRC over body and CRC is 0");
    }

    #[test]
    fn frames_escape_end_and_esc_and_cut_back_exactly() {
        let body = [END, 1, ESC, ESC_END, END];
        let line = frame(&body);
        assert_eq!(line.iter().filter(|&&b| b == END).count(), 2, "only the delimiters: {line:x?}");
        let mut d = Deframer::default();
        let frames: Vec<_> = line.iter().filter_map(|&b| d.push(b)).collect();
        assert_eq!(frames.len(), 1);
        assert_eq!(check(&frames[0]), Some(&body[..]));
    }

    #[test]
    fn requests_round_trip_and_bad_lengths_are_no_request() {
        for r in [
            Request::bar0_write(7, 0x40, 0xdead_beef),
            Request::bar0_read(8, 0x44),
            Request::mem_write(9, 0x1000, vec![1, 2, 3], 0b1100, 0b0011),
            Request::mem_read(10, 0xfffc, 16),
            Request::identify(0),
            Request::irq(11),
        ] {
            assert_eq!(Request::parse(&r.body()), Some(r.clone()));
            let mut long = r.body();
            long.push(0);
            assert_eq!(Request::parse(&long), None, "{r:?} with an octet too many");
        }
        assert_eq!(Request::parse(&[1, 4, 0, 0, 17]), None, "17 words");
        assert_eq!(Request::parse(&[1, 9, 0, 0]), None, "no opcode 9");
    }
}
