//! The board build's backend: the RNIC on a ULX3S board, reached through the UART bridge of
//! its shell (`rnic_proto::bridge` describes the protocol).
//!
//! - **BAR0**: each [`Hal::read32`] and [`Hal::write32`] is one request.
//! - **DMA memory** is the board's own memory, `2^mem_log2` octets at device addresses 0..
//!   (the RNIC's DMA addresses wrap at that size), learnt from `Identify`. It is not in the
//!   host's address space, so regions are remote ([`DmaRegion::remote`]): every access goes
//!   over the bridge, a range of octets in bursts of up to [`MAX_WORDS`] words, the partial
//!   first and last words with byte strobes. A page allocator hands out 4 KiB pages from
//!   page 1 on, so IOVA 0 is never used.
//! - **Interrupts**: [`Hal::wait_irq`] polls with `Irq` requests; vectors that fired for
//!   other waits are kept for them.
//!
//! The client is stop-and-wait: one request outstanding, numbered by a sequence number that
//! counts up by one (mod 256) per new request. After a NAK, a response frame that is corrupt
//! (bad CRC, or not the shape of an answer to the request) or no response within
//! [`RESPONSE_TIMEOUT`], it sends the same request again with the same sequence number: the
//! bridge keeps the response of the last request it ran and answers a repeat from it, so a
//! request runs exactly once however often its response was lost. Responses with another
//! sequence number answer an earlier request and are ignored. After [`MAX_RETRIES`] resends
//! the link is taken as lost.
//!
//! The [`Hal`] methods cannot fail, so a lost link behaves as a PCIe device that fell off the
//! bus: reads return all-ones, writes go nowhere, and the error is latched
//! ([`SerialHal::error`]); [`Hal::dma_alloc`] and [`Hal::wait_irq`] report it. A bus error
//! the bridge reports (the RNIC answered with an AXI error) is latched as well.
use std::cell::{Cell, RefCell};
use std::collections::BTreeMap;
use std::io::{self, ErrorKind, Read, Write};
use std::ops::Range;
use std::time::{Duration, Instant};

use rnic_proto::bridge::{
    self, Deframer, Op, Request, Response, MAX_WORDS, STATUS_BUS_ERROR, STATUS_RESPONSE, VERSION,
};

use crate::dma::RemoteMemory;
use crate::{DmaRegion, Hal, HalError};

/// The baud rate the board build's bridge runs at unless built with another.
pub const DEFAULT_BAUD: u32 = 3_000_000;
/// How long a response may take to start arriving (the port's read timeout) before the
/// request is sent again.
pub const RESPONSE_TIMEOUT: Duration = Duration::from_millis(100);
/// How often one request is sent again before the link is taken as lost.
pub const MAX_RETRIES: u32 = 8;
/// Interrupt vectors an `Irq` response reports, a bit each.
pub const IRQ_VECTORS: u16 = 32;
/// Pause between two `Irq` polls of [`Hal::wait_irq`].
const IRQ_POLL_INTERVAL: Duration = Duration::from_micros(500);
/// Octets of a DMA page: the allocator's unit and alignment.
const PAGE: u64 = 4096;
/// Octets of a host-memory word.
const WORD: usize = 4;
/// Octet enables of a whole word.
const ALL_OCTETS: u8 = 0b1111;
/// What a read returns once the link is lost.
const ALL_ONES: u32 = u32::MAX;
/// The status bits that carry the opcode answered.
const STATUS_OP: u8 = !(STATUS_RESPONSE | STATUS_BUS_ERROR);
/// Bits of a bridge address: host memory can be at most this large (log2 of its octets).
const MAX_MEM_LOG2: u8 = u16::BITS as u8;
/// The smallest host memory this driver takes (log2 of its octets): one word.
const MIN_MEM_LOG2: u8 = WORD.trailing_zeros() as u8;
/// Octets of an `Identify` answer: version, log2 of the memory's octets, words per burst.
const IDENTIFY_LEN: usize = 3;
/// Octets read from the link at once.
const RX_CHUNK: usize = 256;

/// The byte link to the bridge: a serial port, or in tests a fake board. A read that finds
/// nothing within the link's timeout returns 0 octets or fails with
/// [`ErrorKind::TimedOut`] or [`ErrorKind::WouldBlock`].
pub trait Link: Read + Write {}

impl<T: Read + Write + ?Sized> Link for T {}

/// The serial port type of this platform ([`SerialHal::open`]).
#[cfg(unix)]
pub type NativePort = serialport::TTYPort;
/// The serial port type of this platform ([`SerialHal::open`]).
#[cfg(windows)]
pub type NativePort = serialport::COMPort;

/// Why the bridge could not be opened or reached; each message says what to check.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
pub enum SerialError {
    /// The port does not exist.
    #[error("no serial port {0}: list the ports with `ls /dev/ttyUSB* /dev/ttyACM*`")]
    NoSuchPort(String),
    /// The port exists but this user may not open it.
    #[error("no permission to open {0}: add the user to group `dialout` (`sudo usermod -aG dialout $USER`, then log in again)")]
    NoPermission(String),
    /// Another program holds the port.
    #[error("serial port {0} is in use by another program")]
    Busy(String),
    /// A request was sent [`MAX_RETRIES`] more times and never answered.
    #[error(
        "no answer from the bridge on {port}: is the bitstream loaded and the baud rate {baud}? ({op} sent {tries} \
         times: {naks} NAKs, {corrupt} corrupt answers, {silent} without an answer)"
    )]
    NoAnswer {
        /// The port.
        port: String,
        /// Its baud rate.
        baud: u32,
        /// The request that went unanswered.
        op: Op,
        /// How often it was sent.
        tries: u32,
        /// Sends answered with a NAK.
        naks: u32,
        /// Sends answered with a corrupt frame.
        corrupt: u32,
        /// Sends without an answer in [`RESPONSE_TIMEOUT`].
        silent: u32,
    },
    /// `Identify` reported a protocol version this driver does not speak.
    #[error("bridge protocol version {0}, this driver speaks {VERSION}: rebuild the bitstream")]
    WrongVersion(u8),
    /// `Identify` answered with something this driver cannot use.
    #[error("the bridge on {port} answered Identify with {what}")]
    BadIdentify {
        /// The port.
        port: String,
        /// What was wrong.
        what: String,
    },
    /// The RNIC answered a BAR0 access with an AXI error (the bridge's bus-error bit).
    #[error("bus error: the RNIC answered {op} at BAR0 offset {offset:#06x} with an error response")]
    BusError {
        /// The access.
        op: Op,
        /// Its BAR0 offset.
        offset: u16,
    },
    /// A BAR0 offset the bridge's 16-bit address cannot carry.
    #[error("BAR0 offset {0:#x} is beyond the bridge's 16-bit address")]
    BadOffset(u32),
    /// The port failed.
    #[error("serial port {port}: {message}")]
    Io {
        /// The port.
        port: String,
        /// What failed.
        message: String,
    },
}

impl SerialError {
    /// Whether the link is gone: no more requests are sent after such an error.
    fn is_link_lost(&self) -> bool {
        matches!(self, SerialError::NoAnswer { .. } | SerialError::Io { .. })
    }
}

impl From<SerialError> for HalError {
    fn from(e: SerialError) -> HalError {
        HalError::Backend(e.to_string())
    }
}

/// The client's counters since the link was opened.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct LinkStats {
    /// Requests sent, each counted once however often it was resent.
    pub requests: u64,
    /// Resends of a request: after a NAK, a corrupt response or none.
    pub retries: u64,
    /// NAKs received (the bridge got a frame that was no request).
    pub naks: u64,
    /// Response frames with a bad CRC or that did not fit their request.
    pub corrupt: u64,
    /// Sends that got no response within [`RESPONSE_TIMEOUT`].
    pub timeouts: u64,
    /// Responses to an earlier request (a resend's duplicate), ignored.
    pub stale: u64,
}

/// What one send of a request got back, when it was not the answer.
enum Miss {
    Nak,
    Corrupt,
    Silence,
}

/// The protocol's client: one request outstanding, resent until answered.
struct Client<L> {
    link: L,
    port: String,
    baud: u32,
    deframer: Deframer,
    rx: Box<[u8; RX_CHUNK]>,
    /// The octets of `rx` read from the link and not yet deframed.
    unread: Range<usize>,
    /// The next request's sequence number.
    seq: u8,
    stats: LinkStats,
    /// How long an answer may take before the request is sent again.
    timeout: Duration,
}

impl<L: Link> Client<L> {
    /// Sends the request `build` makes with the next sequence number until it is answered;
    /// its status octet and data.
    fn transact(&mut self, build: impl FnOnce(u8) -> Request) -> Result<(u8, Vec<u8>), SerialError> {
        let req = build(self.seq);
        self.seq = self.seq.wrapping_add(1);
        self.stats.requests += 1;
        let line = bridge::frame(&req.body());
        let (mut naks, mut corrupt, mut silent) = (0, 0, 0);
        for attempt in 0..=MAX_RETRIES {
            if attempt > 0 {
                self.stats.retries += 1;
            }
            self.send(&line)?;
            match self.answer(&req)? {
                Ok(answer) => return Ok(answer),
                Err(Miss::Nak) => (naks, self.stats.naks) = (naks + 1, self.stats.naks + 1),
                Err(Miss::Corrupt) => (corrupt, self.stats.corrupt) = (corrupt + 1, self.stats.corrupt + 1),
                Err(Miss::Silence) => (silent, self.stats.timeouts) = (silent + 1, self.stats.timeouts + 1),
            }
        }
        let (port, baud) = (self.port.clone(), self.baud);
        Err(SerialError::NoAnswer { port, baud, op: req.op, tries: MAX_RETRIES + 1, naks, corrupt, silent })
    }

    fn send(&mut self, line: &[u8]) -> Result<(), SerialError> {
        self.link.write_all(line).and_then(|()| self.link.flush()).map_err(|e| self.io_error("writing", e))
    }

    /// Waits for the answer to `req`: its status and data, or what came instead.
    fn answer(&mut self, req: &Request) -> Result<Result<(u8, Vec<u8>), Miss>, SerialError> {
        let deadline = Instant::now() + self.timeout;
        loop {
            let Some(frame) = self.next_frame(deadline)? else { return Ok(Err(Miss::Silence)) };
            match bridge::check(&frame).and_then(Response::parse) {
                None => return Ok(Err(Miss::Corrupt)),
                Some(Response::Nak) => return Ok(Err(Miss::Nak)),
                Some(Response::Done { seq, .. }) if seq != req.seq => self.stats.stale += 1,
                Some(Response::Done { status, data, .. }) => {
                    let fits = status & STATUS_OP == req.op as u8 && answer_len(req).is_none_or(|n| n == data.len());
                    return Ok(if fits { Ok((status, data)) } else { Err(Miss::Corrupt) });
                }
            }
        }
    }

    /// The next frame from the link, or `None` if the link fell silent or `deadline` passed.
    fn next_frame(&mut self, deadline: Instant) -> Result<Option<Vec<u8>>, SerialError> {
        loop {
            for i in self.unread.clone() {
                self.unread.start = i + 1;
                if let Some(frame) = self.deframer.push(self.rx[i]) {
                    return Ok(Some(frame));
                }
            }
            if Instant::now() >= deadline {
                return Ok(None);
            }
            match self.link.read(&mut self.rx[..]) {
                Ok(0) => return Ok(None),
                Ok(n) => self.unread = 0..n,
                Err(e) if matches!(e.kind(), ErrorKind::TimedOut | ErrorKind::WouldBlock) => return Ok(None),
                Err(e) if e.kind() == ErrorKind::Interrupted => {}
                Err(e) => return Err(self.io_error("reading", e)),
            }
        }
    }

    fn io_error(&self, what: &str, e: io::Error) -> SerialError {
        SerialError::Io { port: self.port.clone(), message: format!("{what}: {e}") }
    }
}

/// The data octets an answer to `req` has; `None` for `Identify`, whose length depends on
/// its version.
fn answer_len(req: &Request) -> Option<usize> {
    match req.op {
        Op::Bar0Write | Op::MemWrite => Some(0),
        Op::Bar0Read | Op::Irq => Some(WORD),
        Op::MemRead => Some(WORD * usize::from(req.count)),
        Op::Identify => None,
    }
}

/// The little-endian word at the start of `data` (an answer whose length was checked).
fn word(data: &[u8]) -> u32 {
    data.get(..WORD).map_or(0, |w| u32::from_le_bytes(w.try_into().expect("one word")))
}

/// The RNIC of the board build, through its UART bridge: [`SerialHal::open`] on a serial
/// port, or [`SerialHal::with_link`] on any [`Link`]. Its memory is also reachable directly
/// as [`RemoteMemory`], at device addresses.
pub struct SerialHal<L: Link> {
    client: RefCell<Client<L>>,
    /// log2 of the board memory's octets.
    mem_log2: u8,
    /// Words one host-memory request moves at most.
    burst: u8,
    /// Allocated DMA ranges: first page, page count.
    live: RefCell<BTreeMap<u64, u64>>,
    /// Vectors that fired and that no wait has taken yet.
    pending_irqs: Cell<u32>,
    /// The first error, or the link's loss if that came later.
    error: RefCell<Option<SerialError>>,
}

impl SerialHal<NativePort> {
    /// Opens the bridge on serial port `path` (e.g. `/dev/ttyUSB0`; a pty works too) at
    /// `baud`, 8N1, and starts the session with `Identify`.
    pub fn open(path: &str, baud: u32) -> Result<Self, SerialError> {
        Self::open_with_timeout(path, baud, RESPONSE_TIMEOUT)
    }

    /// [`SerialHal::open`], resending a request when its answer takes longer than
    /// `timeout` (a simulated board is slower than a real one).
    pub fn open_with_timeout(path: &str, baud: u32, timeout: Duration) -> Result<Self, SerialError> {
        let port = serialport::new(path, baud).timeout(timeout).open_native().map_err(|e| open_error(path, e))?;
        // Octets left in the buffers from before would only be stale answers.
        serialport::SerialPort::clear(&port, serialport::ClearBuffer::All).map_err(|e| open_error(path, e))?;
        SerialHal::with_link_timeout(port, path, baud, timeout)
    }
}

/// The error for a port that did not open, naming the fix.
fn open_error(path: &str, e: serialport::Error) -> SerialError {
    match io::Error::from(e.clone()).kind() {
        ErrorKind::NotFound => SerialError::NoSuchPort(path.to_string()),
        ErrorKind::PermissionDenied => SerialError::NoPermission(path.to_string()),
        _ if e.kind() == serialport::ErrorKind::NoDevice => SerialError::Busy(path.to_string()),
        _ => SerialError::Io { port: path.to_string(), message: format!("opening: {e}") },
    }
}

impl<L: Link> SerialHal<L> {
    /// The bridge at the far end of `link` (named `port`, at `baud`, for messages): starts
    /// the session with `Identify`, which checks the protocol version and learns the
    /// board memory's size.
    pub fn with_link(link: L, port: &str, baud: u32) -> Result<Self, SerialError> {
        Self::with_link_timeout(link, port, baud, RESPONSE_TIMEOUT)
    }

    /// [`SerialHal::with_link`], resending a request whose answer takes longer than `timeout`.
    pub fn with_link_timeout(link: L, port: &str, baud: u32, timeout: Duration) -> Result<Self, SerialError> {
        let mut client = Client {
            timeout,
            link,
            port: port.to_string(),
            baud,
            deframer: Deframer::default(),
            rx: Box::new([0; RX_CHUNK]),
            unread: 0..0,
            seq: 0,
            stats: LinkStats::default(),
        };
        let (_, id) = client.transact(Request::identify)?;
        let bad = |what: String| SerialError::BadIdentify { port: port.to_string(), what };
        match id[..] {
            [version, ..] if version != VERSION => Err(SerialError::WrongVersion(version)),
            [_, mem_log2, _] if !(MIN_MEM_LOG2..=MAX_MEM_LOG2).contains(&mem_log2) => Err(bad(format!(
                "a host memory of 2^{mem_log2} octets (this driver takes 2^{MIN_MEM_LOG2} to 2^{MAX_MEM_LOG2})"
            ))),
            [_, _, 0] => Err(bad("bursts of 0 words".into())),
            [_, mem_log2, burst] => Ok(SerialHal {
                client: RefCell::new(client),
                mem_log2,
                burst: burst.min(MAX_WORDS),
                live: RefCell::new(BTreeMap::new()),
                pending_irqs: Cell::new(0),
                error: RefCell::new(None),
            }),
            _ => Err(bad(format!("{} octets of data, not {IDENTIFY_LEN}", id.len()))),
        }
    }

    /// Octets of the board's memory, at device addresses `0..memory_len()`.
    pub fn memory_len(&self) -> u64 {
        1 << self.mem_log2
    }

    /// The client's counters.
    pub fn stats(&self) -> LinkStats {
        self.client.borrow().stats
    }

    /// Requests sent so far, each counted once.
    pub fn requests(&self) -> u64 {
        self.stats().requests
    }

    /// Resends so far: requests sent again after a NAK, a corrupt answer or none.
    pub fn retries(&self) -> u64 {
        self.stats().retries
    }

    /// The latched error: the first one, or the link's loss if that came later.
    pub fn error(&self) -> Option<SerialError> {
        self.error.borrow().clone()
    }

    fn latch(&self, e: SerialError) {
        let mut error = self.error.borrow_mut();
        if error.as_ref().is_none_or(|first| !first.is_link_lost() && e.is_link_lost()) {
            *error = Some(e);
        }
    }

    /// The latched error, as the [`Hal`] reports it.
    fn check_error(&self) -> Result<(), HalError> {
        self.error().map_or(Ok(()), |e| Err(e.into()))
    }

    /// Runs one request unless the link is lost: its status and data. A failure is latched.
    fn request(&self, build: impl FnOnce(u8) -> Request) -> Result<(u8, Vec<u8>), SerialError> {
        if let Some(lost) = self.error().filter(SerialError::is_link_lost) {
            return Err(lost);
        }
        let result = self.client.borrow_mut().transact(build);
        result.inspect_err(|e| self.latch(e.clone()))
    }

    /// A BAR0 access: the value read (0 for a write). A bus error is latched.
    fn bar0(&self, op: Op, offset: u32, value: u32) -> Result<u32, SerialError> {
        let at = u16::try_from(offset).map_err(|_| SerialError::BadOffset(offset))?;
        let (status, data) = self.request(|seq| match op {
            Op::Bar0Write => Request::bar0_write(seq, at, value),
            _ => Request::bar0_read(seq, at),
        })?;
        if status & STATUS_BUS_ERROR != 0 {
            self.latch(SerialError::BusError { op, offset: at });
        }
        Ok(word(&data))
    }

    /// The bridge's address of device address `addr` (memory wraps at its size).
    fn mem_addr(&self, addr: u64) -> u16 {
        (addr & (self.memory_len() - 1)) as u16
    }

    /// Reads `out.len()` octets at device address `addr`: the words that hold them, in bursts.
    fn mem_read(&self, addr: u64, out: &mut [u8]) -> Result<(), SerialError> {
        if out.is_empty() {
            return Ok(());
        }
        let skip = (addr % WORD as u64) as usize;
        let words = (skip + out.len()).div_ceil(WORD);
        let mut octets = Vec::with_capacity(words * WORD);
        let first = addr - skip as u64;
        for start in (0..words).step_by(usize::from(self.burst)) {
            let n = (words - start).min(usize::from(self.burst)) as u8;
            let at = self.mem_addr(first + (start * WORD) as u64);
            octets.extend(self.request(|seq| Request::mem_read(seq, at, n))?.1);
        }
        out.copy_from_slice(&octets[skip..skip + out.len()]);
        Ok(())
    }

    /// Writes `data` at device address `addr`, in bursts; octets of the first and last word
    /// outside `data` are left alone (strobes).
    fn mem_write(&self, addr: u64, data: &[u8]) -> Result<(), SerialError> {
        if data.is_empty() {
            return Ok(());
        }
        let skip = (addr % WORD as u64) as usize;
        let words = (skip + data.len()).div_ceil(WORD);
        let mut octets = vec![0; words * WORD];
        octets[skip..skip + data.len()].copy_from_slice(data);
        let wanted = skip..skip + data.len();
        let strobes = |word: usize| -> u8 {
            (0..WORD).filter(|&i| wanted.contains(&(word * WORD + i))).fold(0, |s, i| s | 1 << i)
        };
        let first = addr - skip as u64;
        for start in (0..words).step_by(usize::from(self.burst)) {
            let end = (start + usize::from(self.burst)).min(words);
            let chunk = octets[start * WORD..end * WORD]
                .chunks(WORD)
                .map(|w| u32::from_le_bytes(w.try_into().expect("one word")))
                .collect();
            let at = self.mem_addr(first + (start * WORD) as u64);
            let (first_on, last_on) = (strobes(start), strobes(end - 1));
            debug_assert!((start + 1..end - 1).all(|w| strobes(w) == ALL_OCTETS), "only the ends are partial");
            self.request(|seq| Request::mem_write(seq, at, chunk, first_on, last_on))?;
        }
        Ok(())
    }

    /// First page of a free run of `pages` pages, page 0 excluded.
    fn free_pages(&self, pages: u64) -> Option<u64> {
        let total = self.memory_len() / PAGE;
        let mut next = 1;
        for (&first, &count) in self.live.borrow().iter() {
            if first - next >= pages {
                return Some(next);
            }
            next = next.max(first + count);
        }
        (total.saturating_sub(next) >= pages).then_some(next)
    }
}

impl<L: Link> RemoteMemory for SerialHal<L> {
    /// Reads over the bridge; all-ones if the link is lost (the error is latched).
    fn read(&self, addr: u64, out: &mut [u8]) {
        if self.mem_read(addr, out).is_err() {
            out.fill(ALL_ONES as u8);
        }
    }

    /// Writes over the bridge; nothing if the link is lost (the error is latched).
    fn write(&self, addr: u64, data: &[u8]) {
        // A failure is latched by `request`; the Hal methods report it.
        let _ = self.mem_write(addr, data);
    }
}

impl<L: Link> Hal for SerialHal<L> {
    /// A `Bar0Read`; all-ones if the link is lost (the error is latched).
    fn read32(&self, offset: u32) -> u32 {
        self.bar0(Op::Bar0Read, offset, 0).unwrap_or_else(|e| {
            self.latch(e);
            ALL_ONES
        })
    }

    /// A `Bar0Write`; nothing if the link is lost (the error is latched).
    fn write32(&self, offset: u32, value: u32) {
        if let Err(e) = self.bar0(Op::Bar0Write, offset, value) {
            self.latch(e);
        }
    }

    /// Pages of the board's memory, zeroed through the bridge; fails with the latched error.
    fn dma_alloc(&self, len: usize) -> Result<DmaRegion<'_>, HalError> {
        if len == 0 {
            return Err(HalError::EmptyDmaRequest);
        }
        self.check_error()?;
        let pages = (len as u64).div_ceil(PAGE);
        let first = self.free_pages(pages).ok_or(HalError::OutOfDmaMemory(len))?;
        self.live.borrow_mut().insert(first, pages);
        let iova = first * PAGE;
        if let Err(e) = self.mem_write(iova, &vec![0; len.next_multiple_of(WORD)]) {
            self.live.borrow_mut().remove(&first);
            return Err(e.into());
        }
        Ok(DmaRegion::remote(self, len, iova))
    }

    /// Panics if `region` is not one of this backend's: a bug in the caller.
    fn dma_free(&self, region: DmaRegion<'_>) {
        let first = region.iova() / PAGE;
        let freed =
            region.is_remote() && region.iova().is_multiple_of(PAGE) && self.live.borrow_mut().remove(&first).is_some();
        assert!(freed, "a region this backend allocated (IOVA {:#x})", region.iova());
    }

    /// Polls with `Irq` requests until `vector` fired or `timeout` passed (at least once).
    fn wait_irq(&self, vector: u16, timeout: Duration) -> Result<bool, HalError> {
        if vector >= IRQ_VECTORS {
            return Err(HalError::NoSuchVector(vector));
        }
        self.check_error()?;
        let bit = 1u32 << vector;
        let start = Instant::now();
        loop {
            if self.pending_irqs.get() & bit == 0 {
                let (_, fired) = self.request(Request::irq)?;
                self.pending_irqs.set(self.pending_irqs.get() | word(&fired));
            }
            if self.pending_irqs.get() & bit != 0 {
                self.pending_irqs.set(self.pending_irqs.get() & !bit);
                return Ok(true);
            }
            let left = timeout.saturating_sub(start.elapsed());
            if left.is_zero() {
                return Ok(false);
            }
            std::thread::sleep(left.min(IRQ_POLL_INTERVAL));
        }
    }
}

#[cfg(test)]
mod tests {
    use std::collections::VecDeque;
    use std::rc::Rc;

    use rnic_proto::bridge::{BridgeBus, BridgeModel};

    use super::*;

    /// A BAR0 register: the fake board counts the writes to it.
    const COUNTED: u32 = 0x40;
    /// A BAR0 offset the fake RNIC answers with a bus error.
    const FAULTY: u32 = 0x1fc;
    /// The board build's memory: 64 KiB.
    const MEM_LOG2: u8 = 16;
    const PORT: &str = "fake";

    /// What the fake board's memory holds before anything is written: never 0.
    fn garbage(i: usize) -> u8 {
        0x80 | (i * 7) as u8
    }

    /// The fake board's side of the bridge: BAR0 registers, memory, interrupts.
    struct Bus {
        regs: BTreeMap<u16, u32>,
        /// Writes to each register.
        writes: BTreeMap<u16, u32>,
        mem: Vec<u8>,
        irqs: u32,
        /// Vectors that fire at the n-th `Irq` request: (n, vectors).
        raise_at_poll: Option<(u32, u32)>,
        irq_polls: u32,
    }

    impl BridgeBus for Bus {
        fn bar0_write(&mut self, addr: u16, value: u32) -> bool {
            *self.writes.entry(addr).or_default() += 1;
            self.regs.insert(addr, value);
            u32::from(addr) != FAULTY
        }

        fn bar0_read(&mut self, addr: u16) -> (u32, bool) {
            (self.regs.get(&addr).copied().unwrap_or(0), u32::from(addr) != FAULTY)
        }

        fn mem_write(&mut self, index: u32, value: u32, strobes: u8) {
            for (i, b) in value.to_le_bytes().into_iter().enumerate() {
                if strobes >> i & 1 != 0 {
                    self.mem[index as usize * WORD + i] = b;
                }
            }
        }

        fn mem_read(&mut self, index: u32) -> u32 {
            let at = index as usize * WORD;
            u32::from_le_bytes(self.mem[at..at + WORD].try_into().expect("a word"))
        }

        fn take_irqs(&mut self) -> u32 {
            self.irq_polls += 1;
            if let Some((poll, vectors)) = self.raise_at_poll {
                if self.irq_polls >= poll {
                    self.irqs |= vectors;
                    self.raise_at_poll = None;
                }
            }
            std::mem::take(&mut self.irqs)
        }
    }

    /// An error the line puts into one frame.
    #[derive(Clone, Copy, Debug)]
    enum Fault {
        /// Flips bit `bit` of the frame's octet `octet` on the line (delimiters included).
        Flip { octet: usize, bit: u8 },
        /// Drops the frame's octet `octet` on the line.
        Drop { octet: usize },
        /// Drops the whole frame.
        Lose,
    }

    impl Fault {
        fn apply(self, line: &mut Vec<u8>) {
            match self {
                Fault::Flip { octet, bit } => {
                    let at = octet % line.len();
                    line[at] ^= 1 << bit;
                }
                Fault::Drop { octet } => {
                    line.remove(octet % line.len());
                }
                Fault::Lose => line.clear(),
            }
        }
    }

    /// A fake board: the reference bridge in front of a [`Bus`], behind a faulty line.
    struct Board {
        bridge: BridgeModel,
        bus: Bus,
        deframer: Deframer,
        to_host: VecDeque<u8>,
        /// Faults for the next frames the host sends, one each.
        request_faults: VecDeque<Fault>,
        /// Faults for the next frames the board sends, one each.
        response_faults: VecDeque<Fault>,
        /// Responses to come that lose their last octet before they are framed (a right CRC
        /// over a wrong answer).
        short_answers: usize,
        /// A board that hears nothing.
        dead: bool,
        /// The version `Identify` reports, if not the bridge's.
        version: Option<u8>,
        /// Sequence number and opcode of every request that arrived intact, resends too.
        received: Vec<(u8, Op)>,
    }

    impl Board {
        fn new(mem_log2: u8) -> Board {
            let bus = Bus {
                regs: BTreeMap::new(),
                writes: BTreeMap::new(),
                mem: (0..1 << mem_log2).map(garbage).collect(),
                irqs: 0,
                raise_at_poll: None,
                irq_polls: 0,
            };
            Board {
                bridge: BridgeModel::new(mem_log2),
                bus,
                deframer: Deframer::default(),
                to_host: VecDeque::new(),
                request_faults: VecDeque::new(),
                response_faults: VecDeque::new(),
                short_answers: 0,
                dead: false,
                version: None,
                received: Vec::new(),
            }
        }

        /// Octets from the host (one frame per write, as the client sends them).
        fn hear(&mut self, octets: &[u8]) {
            let mut line = octets.to_vec();
            if let Some(fault) = self.request_faults.pop_front() {
                fault.apply(&mut line);
            }
            if self.dead {
                return;
            }
            for b in line {
                let Some(frame) = self.deframer.push(b) else { continue };
                if let Some(req) = bridge::check(&frame).and_then(Request::parse) {
                    self.received.push((req.seq, req.op));
                }
                let mut body = self.bridge.handle(&mut self.bus, &frame);
                if let (Some(v), [_, status, version, ..]) = (self.version, &mut body[..]) {
                    if *status == STATUS_RESPONSE | Op::Identify as u8 {
                        *version = v;
                    }
                }
                if self.short_answers > 0 {
                    self.short_answers -= 1;
                    body.pop();
                }
                let mut out = bridge::frame(&body);
                if let Some(fault) = self.response_faults.pop_front() {
                    fault.apply(&mut out);
                }
                self.to_host.extend(out);
            }
        }

        /// Writes the bridge has run on BAR0 register `offset`.
        fn writes(&self, offset: u32) -> u32 {
            self.bus.writes.get(&(offset as u16)).copied().unwrap_or(0)
        }

        fn mem(&self, at: u64, len: usize) -> &[u8] {
            &self.bus.mem[at as usize..at as usize + len]
        }
    }

    /// The host's end of the line to a fake board; a read finds what the board has sent,
    /// or times out at once.
    struct FakeLink(Rc<RefCell<Board>>);

    impl Read for FakeLink {
        fn read(&mut self, buf: &mut [u8]) -> io::Result<usize> {
            let mut board = self.0.borrow_mut();
            if board.to_host.is_empty() {
                return Err(ErrorKind::TimedOut.into());
            }
            let n = buf.len().min(board.to_host.len());
            buf.iter_mut().zip(board.to_host.drain(..n)).for_each(|(to, b)| *to = b);
            Ok(n)
        }
    }

    impl Write for FakeLink {
        fn write(&mut self, buf: &[u8]) -> io::Result<usize> {
            self.0.borrow_mut().hear(buf);
            Ok(buf.len())
        }

        fn flush(&mut self) -> io::Result<()> {
            Ok(())
        }
    }

    fn connect(board: Board) -> (Result<SerialHal<FakeLink>, SerialError>, Rc<RefCell<Board>>) {
        let board = Rc::new(RefCell::new(board));
        (SerialHal::with_link(FakeLink(board.clone()), PORT, DEFAULT_BAUD), board)
    }

    fn open_board(mem_log2: u8) -> (SerialHal<FakeLink>, Rc<RefCell<Board>>) {
        let (hal, board) = connect(Board::new(mem_log2));
        (hal.expect("Identify"), board)
    }

    #[test]
    fn bar0_registers_round_trip_through_the_bridge() {
        let (hal, board) = open_board(MEM_LOG2);
        for (offset, value) in [(COUNTED, 0x1234_5678), (0x44, 0xffff_0000), (0xfffc, 1)] {
            hal.write32(offset, value);
            assert_eq!(hal.read32(offset), value, "register {offset:#x}");
            assert_eq!(board.borrow().bus.regs.get(&(offset as u16)), Some(&value), "on the board");
        }
        assert_eq!(hal.read32(0x48), 0);
        assert_eq!(hal.stats(), LinkStats { requests: 8, ..LinkStats::default() }, "Identify, then one per access");
        assert_eq!(hal.error(), None);
        hal.write32(0x1_0000, 1);
        assert_eq!(hal.error(), Some(SerialError::BadOffset(0x1_0000)), "no 16-bit address");
    }

    #[test]
    fn identify_learns_the_memory_size_and_refuses_another_protocol_version() {
        let (hal, board) = open_board(14);
        assert_eq!(hal.memory_len(), 1 << 14);
        assert_eq!(board.borrow().received, [(0, Op::Identify)], "the session starts with Identify");
        let (err, _) = connect(Board { version: Some(3), ..Board::new(MEM_LOG2) });
        let err = err.err().expect("version 3 refused");
        assert_eq!(err.to_string(), "bridge protocol version 3, this driver speaks 2: rebuild the bitstream");
    }

    #[test]
    fn dma_regions_are_zeroed_page_aligned_distinct_never_at_page_0_and_reused() {
        let (hal, board) = open_board(MEM_LOG2);
        let a = hal.dma_alloc(100).expect("a");
        let b = hal.dma_alloc(5000).expect("b");
        let c = hal.dma_alloc(4096).expect("c");
        let mut spans = Vec::new();
        for r in [&a, &b, &c] {
            assert!(r.is_remote() && r.as_ptr().is_none());
            assert_eq!(r.iova() % PAGE, 0, "page aligned");
            assert_ne!(r.iova(), 0, "page 0 is never handed out");
            let mut seen = vec![0xee; r.len()];
            r.read_bytes(0, &mut seen);
            assert!(seen.iter().all(|&o| o == 0), "zeroed");
            assert!(board.borrow().mem(r.iova(), r.len()).iter().all(|&o| o == 0), "zeroed on the board");
            spans.push(r.iova()..r.iova() + r.len() as u64);
        }
        for (i, x) in spans.iter().enumerate() {
            for y in &spans[i + 1..] {
                assert!(x.end <= y.start || y.end <= x.start, "{x:x?} and {y:x?} overlap");
            }
        }
        let b_iova = b.iova();
        hal.dma_free(b);
        let d = hal.dma_alloc(8192).expect("d");
        assert_eq!(d.iova(), b_iova, "the freed range is handed out again");
        for r in [a, c, d] {
            hal.dma_free(r);
        }
        assert!(hal.live.borrow().is_empty());
        assert_eq!(hal.dma_alloc(0).unwrap_err(), HalError::EmptyDmaRequest);
    }

    #[test]
    fn dma_memory_runs_out_with_a_typed_error() {
        // 4 pages, of which page 0 is never handed out.
        let (hal, _board) = open_board(14);
        let all = hal.dma_alloc(3 * 4096).expect("three pages");
        assert_eq!(all.iova(), PAGE);
        assert_eq!(hal.dma_alloc(1).unwrap_err(), HalError::OutOfDmaMemory(1));
        hal.dma_free(all);
        let mut pages: Vec<_> = (0..3).map(|_| hal.dma_alloc(1).expect("one page")).collect();
        assert_eq!(pages.iter().map(DmaRegion::iova).collect::<Vec<_>>(), [PAGE, 2 * PAGE, 3 * PAGE]);
        hal.dma_free(pages.remove(1));
        assert_eq!(hal.dma_alloc(8192).unwrap_err(), HalError::OutOfDmaMemory(8192), "one free page, not two");
        assert_eq!(hal.dma_alloc(1 << 20).unwrap_err(), HalError::OutOfDmaMemory(1 << 20));
        pages.push(hal.dma_alloc(4096).expect("the free page"));
        assert_eq!(pages[2].iova(), 2 * PAGE);
        assert_eq!(hal.error(), None, "running out is no link error");
        pages.into_iter().for_each(|r| hal.dma_free(r));
    }

    #[test]
    fn remote_regions_move_any_octets_and_leave_their_neighbours_alone() {
        let (hal, board) = open_board(MEM_LOG2);
        let region = hal.dma_alloc(256).expect("region");
        let mut shadow: Vec<u8> = (0..256).map(garbage).collect();
        region.write_bytes(0, &shadow);
        for offset in 40..48 {
            for len in 0..=80 {
                let data: Vec<u8> = (0..len).map(|i| (offset * 97 + len * 13 + i) as u8).collect();
                region.write_bytes(offset, &data);
                shadow[offset..offset + len].copy_from_slice(&data);
                assert_eq!(board.borrow().mem(region.iova(), 256), shadow, "{len} octets written at {offset}");
                let mut back = vec![0; len];
                region.read_bytes(offset, &mut back);
                assert_eq!(back, data, "{len} octets read at {offset}");
            }
        }
        // Octets 1 and 2 of a word: 0 and 3 stay (the strobes).
        let word = region.iova() + 100;
        board.borrow_mut().bus.mem[word as usize..word as usize + 4].copy_from_slice(&[0xa0, 0xa1, 0xa2, 0xa3]);
        region.write_bytes(101, &[0x11, 0x22]);
        assert_eq!(board.borrow().mem(word, 4), [0xa0, 0x11, 0x22, 0xa3]);
        assert_eq!((region.read_u8(100), region.read_u8(103)), (0xa0, 0xa3));
        region.write_u64(200, 0x0102_0304_0506_0708);
        region.write_u32(212, 0xdead_beef);
        let mut expected = vec![8, 7, 6, 5, 4, 3, 2, 1];
        expected.extend((208..212).map(garbage));
        expected.extend(0xdead_beef_u32.to_le_bytes());
        assert_eq!(board.borrow().mem(region.iova() + 200, 16), expected, "octets 208..212 untouched");
        assert_eq!(region.read_u64(200), 0x0102_0304_0506_0708);
        assert_eq!(region.read_u32(212), 0xdead_beef);
        assert_eq!((0..8).map(|i| region.read_u8(200 + i)).collect::<Vec<_>>(), [8, 7, 6, 5, 4, 3, 2, 1]);
        assert_eq!(hal.stats().retries, 0);
    }

    #[test]
    fn empty_accesses_at_any_address_send_nothing() {
        let (hal, _board) = open_board(MEM_LOG2);
        let before = hal.requests();
        RemoteMemory::write(&hal, 0x1003, &[]);
        RemoteMemory::read(&hal, 0x1003, &mut []);
        assert_eq!(hal.requests(), before);
    }

    #[test]
    fn a_range_moves_in_bursts_of_16_words() {
        let (hal, _board) = open_board(MEM_LOG2);
        let region = hal.dma_alloc(4096).expect("region");
        let before = hal.requests();
        // Octets 3..203: words 0..=50, 51 words.
        region.write_bytes(3, &[0x5a; 200]);
        assert_eq!(hal.requests() - before, 4, "51 words in bursts of 16");
        let mut back = [0; 200];
        region.read_bytes(3, &mut back);
        assert_eq!(hal.requests() - before, 8);
        assert_eq!(back, [0x5a; 200]);
        region.write_u64(8, 1);
        assert_eq!(hal.requests() - before, 9, "a u64 in one request");
    }

    /// Faults in every octet of a frame on the line, of both kinds, and a lost frame.
    fn faults(octets: usize) -> Vec<Fault> {
        let flips = (0..octets).map(|octet| Fault::Flip { octet, bit: (octet % 8) as u8 });
        flips.chain((0..octets).map(|octet| Fault::Drop { octet })).chain([Fault::Lose]).collect()
    }

    #[test]
    fn every_line_error_is_recovered_by_resending_and_a_write_runs_exactly_once() {
        let (hal, board) = open_board(MEM_LOG2);
        let mut value = 0;
        // A BAR0 write's request is 11 octets on the line, its response 5 (unless escaped).
        for (to_board, octets) in [(true, 11), (false, 5)] {
            for fault in faults(octets) {
                let direction = if to_board { "request" } else { "response" };
                value += 1;
                let (retries, writes) = (hal.retries(), board.borrow().writes(COUNTED));
                let mut b = board.borrow_mut();
                if to_board { &mut b.request_faults } else { &mut b.response_faults }.push_back(fault);
                drop(b);
                hal.write32(COUNTED, value);
                assert_eq!(board.borrow().writes(COUNTED) - writes, 1, "{fault:?} in the {direction}: run once");
                assert_eq!(hal.read32(COUNTED), value, "{fault:?} in the {direction}");
                // A frame's leading END only guards against noise before it: without it the
                // END that ended the frame before delimits it.
                if !matches!(fault, Fault::Drop { octet: 0 }) {
                    assert!(hal.retries() > retries, "{fault:?} in the {direction} made the client resend");
                }
            }
        }
        let stats = hal.stats();
        assert!(stats.naks > 0 && stats.corrupt > 0 && stats.timeouts > 0 && stats.stale > 0, "{stats:?}");
        assert_eq!(hal.error(), None);
    }

    #[test]
    fn a_lost_response_to_a_write_is_answered_from_the_kept_one_not_run_again() {
        let (hal, board) = open_board(MEM_LOG2);
        board.borrow_mut().response_faults.push_back(Fault::Lose);
        hal.write32(COUNTED, 9);
        assert_eq!(board.borrow().writes(COUNTED), 1);
        assert_eq!(hal.stats().timeouts, 1);
        assert_eq!(hal.retries(), 1);
        let received = &board.borrow().received;
        assert_eq!(received[1..], [(1, Op::Bar0Write), (1, Op::Bar0Write)], "resent with its sequence number");
    }

    #[test]
    fn an_answer_of_the_wrong_length_is_not_taken_even_with_a_right_crc() {
        let (hal, board) = open_board(MEM_LOG2);
        hal.write32(COUNTED, 0x1234_5678);
        board.borrow_mut().short_answers = 1;
        assert_eq!(hal.read32(COUNTED), 0x1234_5678);
        assert_eq!((hal.stats().corrupt, hal.retries()), (1, 1));
    }

    #[test]
    fn sequence_numbers_count_up_by_one_per_request_mod_256() {
        let (hal, board) = open_board(MEM_LOG2);
        for i in 0..300 {
            hal.write32(COUNTED, i);
        }
        let seqs: Vec<u8> = board.borrow().received.iter().map(|&(seq, _)| seq).collect();
        assert_eq!(seqs.len(), 301);
        assert!(seqs.windows(2).all(|w| w[1] == w[0].wrapping_add(1)), "{seqs:?}");
        assert_eq!(board.borrow().writes(COUNTED), 300);
    }

    #[test]
    fn a_dead_link_reads_all_ones_then_fails_wait_irq_and_dma_alloc() {
        let (hal, board) = open_board(MEM_LOG2);
        let region = hal.dma_alloc(64).expect("region");
        board.borrow_mut().dead = true;
        assert_eq!(hal.read32(COUNTED), 0xffff_ffff);
        assert_eq!(hal.retries(), u64::from(MAX_RETRIES));
        let err = hal.error().expect("latched");
        let text = err.to_string();
        assert!(
            text.starts_with("no answer from the bridge on fake: is the bitstream loaded and the baud rate 3000000?"),
            "{text}"
        );
        hal.write32(COUNTED, 1);
        assert_eq!(region.read_u32(0), 0xffff_ffff);
        region.write_bytes(1, &[1, 2, 3]);
        assert_eq!(hal.retries(), u64::from(MAX_RETRIES), "a lost link is not tried again");
        assert_eq!(hal.wait_irq(0, Duration::from_millis(1)), Err(HalError::Backend(text.clone())));
        assert_eq!(hal.dma_alloc(64).unwrap_err(), HalError::Backend(text));
        hal.dma_free(region);
    }

    #[test]
    fn opening_a_silent_link_says_what_to_check() {
        let (err, _) = connect(Board { dead: true, ..Board::new(MEM_LOG2) });
        let err = err.err().expect("no answer");
        assert!(matches!(err, SerialError::NoAnswer { op: Op::Identify, tries: 9, silent: 9, .. }), "{err:?}");
        assert!(err
            .to_string()
            .starts_with("no answer from the bridge on fake: is the bitstream loaded and the baud rate"));
    }

    #[test]
    fn a_bus_error_is_latched_and_reported_by_the_calls_that_can_fail() {
        let (hal, _board) = open_board(MEM_LOG2);
        hal.write32(FAULTY - 4, 5);
        assert_eq!(hal.wait_irq(0, Duration::ZERO), Ok(false));
        hal.write32(FAULTY, 6);
        assert_eq!(hal.read32(FAULTY), 6, "a failed read still returns the data");
        let err = SerialError::BusError { op: Op::Bar0Write, offset: FAULTY as u16 };
        assert_eq!(hal.error(), Some(err.clone()), "the first error is kept");
        assert_eq!(hal.wait_irq(0, Duration::ZERO), Err(HalError::Backend(err.to_string())));
        assert_eq!(hal.dma_alloc(64).unwrap_err(), HalError::Backend(err.to_string()));
        assert_eq!(hal.read32(FAULTY - 4), 5, "the link still works");
    }

    #[test]
    fn wait_irq_takes_its_vector_and_keeps_the_others_for_later() {
        let (hal, board) = open_board(MEM_LOG2);
        assert_eq!(hal.wait_irq(3, Duration::ZERO), Ok(false));
        board.borrow_mut().bus.irqs = 1 << 3 | 1 << 5 | 1 << 31;
        assert_eq!(hal.wait_irq(3, Duration::ZERO), Ok(true));
        let polls = board.borrow().bus.irq_polls;
        assert_eq!(polls, 2);
        assert_eq!(hal.wait_irq(5, Duration::ZERO), Ok(true), "kept from the same poll");
        assert_eq!(hal.wait_irq(31, Duration::ZERO), Ok(true), "kept from the same poll");
        assert_eq!(board.borrow().bus.irq_polls, polls, "kept bits need no poll");
        assert_eq!(hal.wait_irq(5, Duration::ZERO), Ok(false), "taken once");
        assert_eq!(hal.wait_irq(32, Duration::ZERO), Err(HalError::NoSuchVector(32)));
    }

    #[test]
    fn wait_irq_polls_until_its_vector_fires_or_the_time_is_up() {
        let (hal, board) = open_board(MEM_LOG2);
        board.borrow_mut().bus.raise_at_poll = Some((5, 1 << 2));
        let start = Instant::now();
        assert_eq!(hal.wait_irq(2, Duration::from_secs(10)), Ok(true));
        assert_eq!(board.borrow().bus.irq_polls, 5);
        assert!(start.elapsed() >= 4 * IRQ_POLL_INTERVAL, "it paused between polls");
        let start = Instant::now();
        assert_eq!(hal.wait_irq(2, Duration::from_millis(20)), Ok(false));
        assert!(start.elapsed() >= Duration::from_millis(20));
        assert!(board.borrow().bus.irq_polls <= 5 + 41, "no busy polling: {}", board.borrow().bus.irq_polls);
    }

    #[test]
    fn opening_a_port_that_is_not_there_names_it_and_how_to_list_ports() {
        let err = SerialHal::open("/dev/nonexistent-port", DEFAULT_BAUD).err().expect("no such port");
        assert_eq!(err, SerialError::NoSuchPort("/dev/nonexistent-port".into()));
        assert!(err.to_string().contains("list the ports with `ls /dev/ttyUSB* /dev/ttyACM*`"), "{err}");
        let denied =
            serialport::Error::new(serialport::ErrorKind::Io(ErrorKind::PermissionDenied), "Permission denied");
        let err = open_error("/dev/ttyUSB0", denied);
        assert_eq!(err, SerialError::NoPermission("/dev/ttyUSB0".into()));
        assert!(err.to_string().contains("add the user to group `dialout`"), "{err}");
    }

    /// `open` on a real tty: a pty whose other end a thread serves as the board.
    #[cfg(target_os = "linux")]
    #[test]
    fn open_runs_the_bridge_protocol_over_a_tty() {
        use std::fs::File;
        use std::os::fd::FromRawFd;

        // SAFETY: plain libc calls on a fresh descriptor; the name buffer outlives the call.
        let (master, name) = unsafe {
            let fd = libc::posix_openpt(libc::O_RDWR | libc::O_NOCTTY);
            assert!(fd >= 0 && libc::grantpt(fd) == 0 && libc::unlockpt(fd) == 0, "a pty");
            let mut name = [0 as libc::c_char; 64];
            assert_eq!(libc::ptsname_r(fd, name.as_mut_ptr(), name.len()), 0);
            (File::from_raw_fd(fd), std::ffi::CStr::from_ptr(name.as_ptr()).to_string_lossy().into_owned())
        };
        // Held open until the end, so that the board's reads wait rather than fail.
        let holder = File::options().read(true).write(true).open(&name).expect("the pty's tty");
        let board = std::thread::spawn(move || {
            let (mut master, mut board, mut buf) = (master, Board::new(MEM_LOG2), [0; 256]);
            while let Ok(n @ 1..) = master.read(&mut buf) {
                board.hear(&buf[..n]);
                let out: Vec<u8> = board.to_host.drain(..).collect();
                if master.write_all(&out).is_err() {
                    break;
                }
            }
            board.bus
        });
        let hal = SerialHal::open(&name, DEFAULT_BAUD).expect("open the tty");
        hal.write32(COUNTED, 0x600d);
        assert_eq!(hal.read32(COUNTED), 0x600d);
        let region = hal.dma_alloc(300).expect("dma");
        region.write_bytes(1, &[0xc0; 250]);
        let mut back = [0; 252];
        region.read_bytes(0, &mut back);
        assert_eq!((back[0], back[1], back[250], back[251]), (0, 0xc0, 0xc0, 0), "END octets escaped and back");
        assert_eq!(hal.retries(), 0);
        hal.dma_free(region);
        drop(hal);
        drop(holder);
        let bus = board.join().expect("the board thread");
        assert_eq!(bus.writes.get(&(COUNTED as u16)), Some(&1));
    }
}
