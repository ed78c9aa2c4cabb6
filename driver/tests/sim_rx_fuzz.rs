//! A fuzz harness on the receive path of one `rnic_top` (Verilated), fed by a raw peer on
//! its streams: random and mutated FPDU streams against several QPs and MRs, every case
//! checked. The RX error paths it found broken are pinned down in `sim_errors.rs`.
//!
//! **Cases.** 1 to 6 FPDUs, mostly to one of four QPs (PD A with CRC; PD A with CRC and
//! receive markers; PD B with CRC; PD A without CRC), a few to a QP in RESET or a QP number
//! nobody has. Segments start out valid for the harness's view of each QP (MSNs, posted
//! receives, the Reads and atomics it had the device send): Writes, Sends (multi-segment,
//! SE, Invalidate), Immediate Data, Read and Atomic Requests and Responses, Terminates,
//! random octets, with STags and TOs drawn around the MRs (in bounds, just past, below,
//! wrapping, other PD, missing right, stale key, random). Most cases then mutate ULPDUs
//! before framing (bit flips, header fields, opcode, truncation, extension, splices,
//! swapped or duplicated FPDUs), so the DDP/RDMAP checks are what is exercised. The last of
//! an epoch's 64 cases on one device corrupts an FPDU after framing instead: a CRC QP's MPA
//! receiver must catch it; without CRC the stream falls out of step with its packets,
//! outside the `rnic_top` stream contract (one packet per FPDU), so only safety is checked.
//! One such case in five sends instead a well-framed Write longer than the RX buffer holds
//! (up to 64 KiB), which must fail its QP with 2/0/0x05 and place nothing.
//!
//! **Checks after every case.**
//! - *Memory*: the MRs (both PDs, every combination of rights, empty, across a page,
//!   overlapping another PD's, at both ends of a 16 KiB host buffer before the IOMMU's
//!   unmapped guard pages, two in device memory) lie among guard zones. Every DMA access
//!   must lie in what the case allows: MRs of an addressed QP's PD with the right
//!   (REMOTE_ATOMIC only: one aligned word), its posted receives as far as their lkey's MR
//!   covers them, its Read and atomic sinks, the rings, the probe MR. Host and device
//!   memory are compared octet for octet with their last content (all 32 KiB of device
//!   memory every eighth epoch). An IOMMU fault fails the case.
//! - *Progress*: a probe Write on a QP of a PD the fuzzer never addresses follows each
//!   case. The RX path is in order, so the device must place it, take the stream and go
//!   quiet within 60 000 cycles plus 4 per octet, never holding `tready` low for 5 000
//!   cycles; after an FPDU corrupted on a CRC QP the probe must *not* be placed.
//! - *What the device says*: every CQE matches the harness's receives (in RQ order, within
//!   what the lkey's MR covers) or its Reads and atomics; a Send with Invalidate only
//!   invalidates a valid MR of its QP's PD; every FPDU sent is well framed, parses, and is
//!   a Terminate, an Atomic Response, or a Read Response to a Read Request of the case
//!   whose source passes the checks, carrying the source's octets; a QP that sent a
//!   Terminate is in ERROR, and one in ERROR has a Terminate.
//! - *No panic*: bus model rules, driver errors.
//!
//! Each QP the harness can no longer predict then goes RESET → RTS with fresh receives,
//! and invalidated MRs are registered again (their old STags become stale keys).
//!
//! **The CRC test**: 10 000 fresh devices with one CRC QP (markers a quarter of the time):
//! up to two good Writes, a Write with one bit flipped (anywhere, or aimed at ULPDU_Length,
//! the CRC field or the headers; a longer ULPDU_Length gets filler up to its CRC), a good
//! Write. The flipped FPDU is dropped whole and nothing after it is delivered (CONFORMANCE
//! MPA-08): only the Writes before it are placed, the stream is still taken, no completion,
//! no fault, nothing sent but an LLP Terminate. One case in twenty flips nothing and must
//! place everything.
//!
//! **Running it.** The default run (20 000 fuzz cases, 10 000 CRC cases, self-tests showing
//! the checks can fail) takes about 85 s of CPU in release, on two cores. A failure
//! prints what failed, the case's packets and the device's answers, and the
//! `RNIC_FUZZ_SEED=… RNIC_FUZZ_FIRST=… RNIC_FUZZ_CASES=…` that reproduce it with
//! `cargo test -p rnic-driver --release --test sim_rx_fuzz rx_fuzz -- --nocapture`
//! (`crc` for the CRC test). `RNIC_FUZZ_CASES=1000000` is the long run, `RNIC_FUZZ_SEED`
//! picks another sequence, `RNIC_FUZZ_VERBOSE=1` logs every case.
//!
//! **RTL bugs it found**, all fixed, with their tests in `sim_errors.rs`: KB-READ (a
//! refused Read Request was also answered with memory), KB-INV (a later segment of a Send
//! with Invalidate invalidated an unchecked STag), KB-RXBUF (a ULPDU longer than the RX
//! buffer wedged the receive path; now the `Overlong` cases), KB-STEP (out of step with its
//! packets, outside the stream contract, a long FPDU deadlocked the receive path), a bad
//! FPDU's failure overtaking the good ULPDUs before it, and the receive a failing Send
//! claimed never completing. A failure that looks like KB-READ or KB-INV says so.
#![cfg(feature = "sim")]

mod common;

use std::cell::{Cell, RefCell};
use std::collections::{BTreeMap, VecDeque};
use std::fmt::Write as _;
use std::rc::Rc;
use std::time::Instant;

use rand::rngs::StdRng;
use rand::{Rng, SeedableRng};
use rnic_driver::sim::{Phase, RawPeer, SimHal};
use rnic_driver::{
    CompletionQueue, CqeOpcode, Device, DeviceMemory, DmaBuffer, DriverError, Hal, MemoryRegion, MrAccess,
    ProtectionDomain, QpCaps, QpState, QueuePair, RecvRequest, RemoteBuf, Sge, WorkRequest,
};
use rnic_proto::ddp::{DdpHeader, UntaggedHeader};
use rnic_proto::host::desc::{CQE_LEN, RQ_WQE_LEN, SQ_WQE_SLOT_LEN};
use rnic_proto::host::regs;
use rnic_proto::mpa::{crc32c, crc_field, pad_len, Framer, FramingConfig};
use rnic_proto::rdmap::{parse_ulpdu, AtomicRequest, AtomicResponse, Opcode, RdmapHeader, ReadRequest, Segment};
use rnic_proto::terminate::{TermCode, Terminate, TerminatedDdpHeader};
use rnic_sim::host_memory::{Access, Dir};

// ---- Settings and randomness -------------------------------------------------------------

/// The default seed ("RXFUZZ").
const BASE_SEED: u64 = 0x5258_4655_5A5A;
/// Cases of the fuzz test and of the CRC test in the normal test run.
const CI_CASES: u64 = 20_000;
const CRC_CASES: u64 = 10_000;
/// Cases on one device; the last one may corrupt the stream after framing.
const EPOCH_CASES: u64 = 64;
/// Every this many epochs all of device memory is compared, not only its MR and guard pieces.
const FULL_DM_EVERY: u64 = 8;
/// The largest ULPDU the RX buffer holds: a longer one fails its QP with 2/0/0x05.
const RX_BUFFER_OCTETS: usize = 16_384;
/// A stream beat not taken for this many cycles is a hang.
const RX_STALL_CYCLES: u64 = 5_000;
/// Cycles without bus or TX activity that make the device quiescent after the probe, and
/// after a corrupted stream, where no probe marks the end.
const IDLE_CYCLES: u64 = 128;
const IDLE_CYCLES_NO_PROBE: u64 = 400;

/// How a run is parameterised, from the environment (module docs).
#[derive(Clone, Copy, Debug, Default)]
struct Settings {
    seed: u64,
    first: u64,
    cases: u64,
    verbose: bool,
}

fn settings(default_cases: u64) -> Settings {
    let var = |name: &str| std::env::var(name).ok();
    let number = |name: &str, default| {
        var(name).map_or(default, |v| parse_number(&v).unwrap_or_else(|| panic!("{name}={v}: not a number")))
    };
    let flag = |name: &str| var(name).is_some_and(|v| !v.is_empty() && v != "0");
    Settings {
        seed: number("RNIC_FUZZ_SEED", BASE_SEED),
        first: number("RNIC_FUZZ_FIRST", 0),
        cases: number("RNIC_FUZZ_CASES", default_cases),
        verbose: flag("RNIC_FUZZ_VERBOSE"),
    }
}

/// A decimal or `0x` hexadecimal number (seeds are printed in hex); `_` allowed.
fn parse_number(s: &str) -> Option<u64> {
    let s = s.trim().replace('_', "");
    s.strip_prefix("0x").map_or_else(|| s.parse().ok(), |hex| u64::from_str_radix(hex, 16).ok())
}

const SALT_CASE: u64 = 0xCA5E;
const SALT_EPOCH: u64 = 0xE90C;
const SALT_CRC: u64 = 0xC4C;

/// The generator of case `index` of `seed` for one purpose (`salt`). `seed_from_u64`
/// spreads its seed, so that neighbouring indices give unrelated generators.
fn case_rng(seed: u64, index: u64, salt: u64) -> StdRng {
    StdRng::seed_from_u64(seed ^ salt.rotate_left(48) ^ index.wrapping_mul(0x9E37_79B9_7F4A_7C15))
}

fn random_octets(rng: &mut StdRng, n: usize) -> Vec<u8> {
    (0..n).map(|_| rng.gen()).collect()
}

/// One of `choices`, each as likely as its weight.
fn weighted<T: Copy>(rng: &mut StdRng, choices: &[(T, u32)]) -> T {
    let mut r = rng.gen_range(0..choices.iter().map(|c| c.1).sum::<u32>());
    for &(choice, weight) in choices {
        if r < weight {
            return choice;
        }
        r -= weight;
    }
    unreachable!("r is below the sum of the weights")
}

fn hex(bytes: &[u8]) -> String {
    bytes.iter().map(|b| format!("{b:02x}")).collect()
}

/// What a ULPDU says, for the log.
fn summary(ulpdu: &[u8]) -> String {
    match parse_ulpdu(ulpdu) {
        Ok(s) => format!("{:?} {:?} {:?} +{} octets", s.opcode, s.ddp, s.header, s.payload.len()),
        Err(e) => format!("{} octets ({e:?})", ulpdu.len()),
    }
}

// ---- The layout: MRs and QPs -------------------------------------------------------------

const PD_A: usize = 0;
const PD_B: usize = 1;
/// The probe's PD: nothing the fuzzer addresses is in it.
const PD_PROBE: usize = 2;

/// MR rights as bits: LOCAL_WRITE, REMOTE_READ, REMOTE_WRITE, REMOTE_ATOMIC.
const LW: u8 = 1;
const RR: u8 = 2;
const RW: u8 = 4;
const RA: u8 = 8;
const ALL: u8 = LW | RR | RW | RA;

fn access(rights: u8) -> MrAccess {
    let has = |r| rights & r != 0;
    MrAccess { local_write: has(LW), remote_read: has(RR), remote_write: has(RW), remote_atomic: has(RA) }
}

/// Where an MR's memory is: offset and length in the host arena, or a device memory piece.
#[derive(Clone, Copy)]
enum Place {
    Host(usize, usize),
    Dm(usize),
}

/// An MR of the layout: name, PD, place, rights.
type MrSpec = (&'static str, usize, Place, u8);

/// Octets of host memory the MRs live in (4 pages; the IOMMU's unmapped guard pages lie on
/// either side).
const ARENA: usize = 16_384;
/// Device memory pieces: guard, dm_A, guard, dm_B, guard.
const DM_PIECES: [usize; 5] = [64, 128, 64, 128, 64];

static MR_SPECS: [MrSpec; 13] = [
    ("B_all@start", PD_B, Place::Host(0, 512), ALL),
    ("A_write", PD_A, Place::Host(1024, 512), LW | RW),
    ("A_read", PD_A, Place::Host(2048, 256), RR),
    ("A_atomic", PD_A, Place::Host(2560, 256), RA),
    ("A_none", PD_A, Place::Host(3072, 256), 0),
    ("A_empty", PD_A, Place::Host(3584, 0), ALL),
    ("A_recv", PD_A, Place::Host(4096, 2048), LW),
    ("B_recv", PD_B, Place::Host(6656, 1024), LW),
    ("A_big", PD_A, Place::Host(8200, 4096), RR | RW | RA),
    ("B_read_over_A_big", PD_B, Place::Host(9000, 512), RR),
    ("A_all@end", PD_A, Place::Host(ARENA - 512, 512), ALL),
    ("dm_A", PD_A, Place::Dm(1), ALL),
    ("dm_B", PD_B, Place::Dm(3), RR | RA),
];
const MR_A_NONE: usize = 4;
const MR_A_RECV: usize = 6;
const MR_B_RECV: usize = 7;

#[derive(Clone, Copy, Debug)]
struct QpSpec {
    pd: usize,
    crc: bool,
    markers: bool,
    mulpdu: u16,
    ird: u8,
    ord: u8,
    /// The MR its receive buffers and Read sinks are in, and its area there.
    recv_mr: usize,
    recv_off: u64,
}

const fn qp_spec(pd: usize, crc: bool, markers: bool, mulpdu: u16, ird: u8, ord: u8, recv: (usize, u64)) -> QpSpec {
    QpSpec { pd, crc, markers, mulpdu, ird, ord, recv_mr: recv.0, recv_off: recv.1 }
}

const QP_SPECS: [QpSpec; 4] = [
    qp_spec(PD_A, true, false, 1024, 4, 4, (MR_A_RECV, 0)),
    qp_spec(PD_A, true, true, 512, 1, 2, (MR_A_RECV, 512)),
    qp_spec(PD_B, true, false, 256, 2, 1, (MR_B_RECV, 0)),
    qp_spec(PD_A, false, false, 128, 0, 4, (MR_A_RECV, 1024)),
];
/// Octets of a QP's area in its receive MR.
const RECV_AREA: u64 = 512;
/// Receives kept posted on each QP.
const RECVS_POSTED: usize = 4;

/// The CONN_ID (the device's TX `tuser`) of fuzzed QP `i`, of the RESET QP and of the probe QP.
fn conn_id(i: usize) -> u16 {
    100 + i as u16
}
const RESET_QP_CONN: u16 = 150;
const PROBE_CONN: u16 = 160;

fn caps(spec: &QpSpec, conn_id: u16) -> QpCaps {
    let QpSpec { mulpdu, ird, ord, crc, markers, .. } = *spec;
    QpCaps { sq_log_size: 4, rq_log_size: 4, mulpdu, ird, ord, crc, markers_tx: false, markers_rx: markers, conn_id }
}

// ---- What the harness knows --------------------------------------------------------------

/// A registered MR as the harness sees it.
struct Mr<'a> {
    spec: &'static MrSpec,
    mr: Option<MemoryRegion<'a, SimHal>>,
    stag: u32,
    va: u64,
    len: u64,
    /// False once a Send with Invalidate invalidated it (until registered again).
    valid: bool,
}

impl Mr<'_> {
    fn name(&self) -> &'static str {
        self.spec.0
    }

    fn pd(&self) -> usize {
        self.spec.1
    }

    fn has(&self, rights: u8) -> bool {
        self.spec.3 & rights == rights
    }

    fn contains(&self, at: u64, len: u64) -> bool {
        at >= self.va && at.checked_add(len).is_some_and(|end| end <= self.va + self.len)
    }
}

/// A Read or atomic the harness posted and the device sent.
#[derive(Clone, Copy, Debug)]
struct Outstanding {
    wr_id: u64,
    sink: u64,
    len: u64,
    /// Whether its local buffer passes the checks (the device may write its sink).
    good: bool,
    /// The Read Request, or `None` for an atomic (with its Request Identifier).
    read: Option<ReadRequest>,
    atomic_id: u32,
}

struct FuzzQp<'a> {
    spec: QpSpec,
    qp: QueuePair<'a, SimHal>,
    framer: Framer,
    /// The MSN the harness expects the QP to want next on QN 0, 1 and 3 (index 2 unused).
    msn: [u32; 4],
    recvs: VecDeque<RecvRequest>,
    outstanding: VecDeque<Outstanding>,
}

/// Where a packet goes: a fuzzed QP, the QP in RESET, or a QP number nobody has.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Target {
    Fuzz(usize),
    Reset,
    Absent(u16),
}

/// How the stream of a case is corrupted.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Mode {
    /// FPDUs frame correctly; only their ULPDUs are mutated.
    Framed,
    /// An FPDU of a CRC QP is corrupted after framing: the MPA receiver must catch it.
    Wire,
    /// An FPDU of the QP without CRC is corrupted after framing: the stream falls out of
    /// step with the packets (outside the stream contract), only safety is checked.
    Desync,
    /// A Write of the primary QP longer than the RX buffer holds, framed correctly: it
    /// cannot be checked, so like a corrupted FPDU it must fail its QP (2/0/0x05) and
    /// nothing of it or after it be placed.
    Overlong,
}

/// One packet of a case.
#[derive(Clone)]
struct Packet {
    target: Target,
    /// The ULPDU as generated and (maybe) mutated, before framing.
    ulpdu: Vec<u8>,
    fpdu: Vec<u8>,
    /// Where ULPDU_Length sits in `fpdu` (4 after a leading marker).
    length_at: usize,
    /// What mutated it, if anything.
    mutations: String,
}

/// What the generator believes of a QP while it builds a case.
#[derive(Clone, Copy)]
struct GenState {
    msn: [u32; 4],
    /// The receive the case's next message claims (index into the QP's posted ones).
    recv_cursor: usize,
    /// How far the case's Read Responses got: sink STag, octets.
    read_resp: Option<(u32, u64)>,
}

impl GenState {
    fn next_msn(&mut self, qn: usize) -> u32 {
        self.msn[qn] += 1;
        self.msn[qn] - 1
    }
}

/// IOVAs a case may touch: any octets, or only within one aligned 8-octet word (atomics
/// into an MR with REMOTE_ATOMIC but not REMOTE_WRITE).
#[derive(Clone, Copy)]
struct Range {
    what: &'static str,
    start: u64,
    end: u64,
    words_only: bool,
}

impl Range {
    fn new(start: u64, len: u64, what: &'static str) -> Range {
        Range { what, start, end: start + len, words_only: false }
    }

    fn covers(&self, at: u64, len: u64) -> bool {
        let end = at.saturating_add(len);
        at >= self.start && end <= self.end && (!self.words_only || at / 8 == (end - 1) / 8)
    }
}

impl std::fmt::Debug for Range {
    fn fmt(&self, f: &mut std::fmt::Formatter) -> std::fmt::Result {
        let words = if self.words_only { " (words)" } else { "" };
        write!(f, "{} {:#x}..{:#x}{words}", self.what, self.start, self.end)
    }
}

#[derive(Clone, Default)]
struct Allowed {
    writes: Vec<Range>,
    reads: Vec<Range>,
}

impl Allowed {
    /// Whether `len` octets at `at` may be accessed; reads come in whole 8-octet beats, so
    /// a read range is widened to them.
    fn ok(&self, dir: Dir, at: u64, len: u64) -> bool {
        match dir {
            Dir::Write => self.writes.iter().any(|r| r.covers(at, len)),
            Dir::Read => self
                .reads
                .iter()
                .any(|r| Range { start: r.start & !7, end: r.end.next_multiple_of(8), ..*r }.covers(at, len)),
        }
    }
}

/// Counts for the summary, as `group/what`.
#[derive(Default)]
struct Stats {
    cases: u64,
    counts: BTreeMap<String, u64>,
}

impl Stats {
    fn count(&mut self, what: impl Into<String>, n: u64) {
        *self.counts.entry(what.into()).or_default() += n;
    }

    fn summary(&self) -> String {
        let mut groups: BTreeMap<&str, Vec<String>> = BTreeMap::new();
        for (key, n) in &self.counts {
            let (group, what) = key.split_once('/').unwrap_or(("", key));
            groups.entry(group).or_default().push(format!("{what} {n}"));
        }
        let mut s = format!("{} cases", self.cases);
        for (group, items) in groups {
            let _ = write!(s, "\n  {group}: {}", items.join(", "));
        }
        s
    }
}

/// Knobs for the harness's own tests: each makes it blind to something it must catch.
#[derive(Clone, Copy, Default, Debug)]
struct Knobs {
    /// Leave the posted receive buffers out of the allowed writes.
    forget_receives: bool,
    /// Force the DMA slave's ready rate (0: it never takes a write).
    dma_ready: Option<f64>,
    /// End every epoch with a "corrupted" FPDU that is not corrupted at all.
    wire_without_corruption: bool,
}

/// Host memory (the arena) and the device memory pieces, as (IOVA, octets).
type Image = Vec<(u64, Vec<u8>)>;

/// `len` octets at `iova` in an image, if one piece holds them all.
fn octets_at(image: &Image, iova: u64, len: u64) -> Option<&[u8]> {
    image.iter().find_map(|(base, octets)| {
        let at = iova.checked_sub(*base)? as usize;
        octets.get(at..at.checked_add(len as usize)?)
    })
}

// ---- The device, waiting on it, reading what it sends ------------------------------------

/// One `rnic_top` against a raw peer, whose IOMMU records faults instead of panicking and
/// whose host memory logs every DMA access; and the cycle it last did anything outside (a
/// beat taken on RX or offered on TX, a valid on a DMA channel).
fn watched_device() -> (Device<SimHal>, RawPeer, Rc<Cell<u64>>) {
    let (dev, peer) = common::raw_device();
    dev.hal().with_memory(|m| {
        m.fail_on_fault(false);
        m.log_accesses(true);
    });
    let busy = ["m_axis_tx_tvalid", "m_axi_awvalid", "m_axi_wvalid", "m_axi_arvalid", "m_axi_rvalid", "m_axi_bvalid"];
    let (rx_valid, rx_ready, busy) =
        dev.hal().with_model(|m| (m.port("s_axis_rx_tvalid"), m.port("s_axis_rx_tready"), busy.map(|n| m.port(n))));
    let last = Rc::new(Cell::new(0));
    let last_seen = Rc::clone(&last);
    dev.hal().on_cycle(move |m, phase| {
        let rx_beat = m.get_bit(rx_valid) && m.get_bit(rx_ready);
        if phase == Phase::Observe && (rx_beat || busy.iter().any(|&p| m.get_bit(p))) {
            last_seen.set(m.cycles());
        }
    });
    (dev, peer, last)
}

/// Clocks until the stream is taken, `done` holds and nothing moved for `idle` cycles;
/// returns how many cycles that took. A beat left untaken for [`RX_STALL_CYCLES`], or no
/// quiescence within `bound` cycles, is a hang.
fn settle(
    dev: &Device<SimHal>,
    peer: &RawPeer,
    activity: &Cell<u64>,
    bound: u64,
    idle: u64,
    mut done: impl FnMut() -> bool,
) -> Result<u64, String> {
    let start = dev.hal().cycles();
    let (mut pending, mut pending_since) = (peer.pending(), start);
    loop {
        dev.hal().run_idle(8);
        let now = dev.hal().cycles();
        if peer.pending() != pending {
            (pending, pending_since) = (peer.pending(), now);
        }
        if pending > 0 && now - pending_since > RX_STALL_CYCLES {
            let stalled = now - pending_since;
            return Err(format!(
                "HANG: the RX stream has taken no beat for {stalled} cycles ({pending} beats waiting: tready held low)"
            ));
        }
        let finished = done();
        if pending == 0 && finished && now - activity.get() >= idle {
            return Ok(now - start);
        }
        if now - start > bound {
            let sent = peer.sent();
            let first: Vec<String> =
                sent.iter().take(4).map(|(f, c)| format!("conn {c}: {}", hex(&f[..f.len().min(64)]))).collect();
            return Err(format!(
                "HANG: not quiescent after {bound} cycles: probe {}, {pending} beats waiting, last activity {} cycles ago; \
                 the device sent {} FPDUs meanwhile, the first: {}",
                if finished { "placed or not awaited" } else { "not placed" },
                now - activity.get(),
                sent.len(),
                first.join("; ")
            ));
        }
    }
}

/// The segment in an FPDU the device sent, or why it is not a well-framed one (no markers;
/// ULPDU_Length, PAD, the CRC field of its QP's setting, zero without CRC) that parses.
fn parse_fpdu(fpdu: &[u8], crc: bool) -> Result<Segment<'_>, String> {
    if fpdu.len() < 8 {
        return Err(format!("a bad FPDU of {} octets", fpdu.len()));
    }
    let len = usize::from(u16::from_be_bytes([fpdu[0], fpdu[1]]));
    let total = 2 + len + pad_len(len) + 4;
    if total != fpdu.len() {
        return Err(format!("a bad FPDU: ULPDU_Length {len} makes {total} octets, the packet has {}", fpdu.len()));
    }
    let (body, field) = fpdu.split_at(total - 4);
    let due = if crc { crc_field(crc32c(body)) } else { [0; 4] };
    if field != due {
        return Err(format!("a bad FPDU: CRC field {} where {} was due", hex(field), hex(&due)));
    }
    parse_ulpdu(&fpdu[2..2 + len]).map_err(|e| format!("a ULPDU that does not parse ({e:?})"))
}

/// The segment in a packet the device sent, with only as much checking as finding its
/// length takes (for explaining stalls, where what was sent need not be complete).
fn loose_segment(fpdu: &[u8]) -> Option<Segment<'_>> {
    let len = usize::from(u16::from_be_bytes([*fpdu.first()?, *fpdu.get(1)?]));
    parse_ulpdu(fpdu.get(2..2 + len)?).ok()
}

/// The Read Request fields of a ULPDU that is an untagged opcode-1 segment long enough to
/// hold them, read without validating anything else.
fn raw_read_request(u: &[u8]) -> Option<ReadRequest> {
    let is_read = u.len() >= 46 && u[0] & 0x80 == 0 && u[1] & 0x0F == 1;
    is_read.then(|| ReadRequest::from_bytes(u[18..46].try_into().expect("28 octets")))
}

// ---- The world of an epoch: one device and what the harness knows of it ------------------

struct World<'a> {
    dev: &'a Device<SimHal>,
    peer: &'a RawPeer,
    activity: &'a Cell<u64>,
    pds: &'a [ProtectionDomain<'a, SimHal>],
    arena: &'a DmaBuffer<'a, SimHal>,
    dm: &'a [DeviceMemory<'a, SimHal>],
    cq: &'a CompletionQueue<'a, SimHal>,
    probe_buf: &'a DmaBuffer<'a, SimHal>,
    probe_mr: MemoryRegion<'a, SimHal>,
    probe_qp: QueuePair<'a, SimHal>,
    reset_qp: QueuePair<'a, SimHal>,
    mrs: Vec<Mr<'a>>,
    /// STags of earlier registrations (stale keys).
    stale: Vec<u32>,
    qps: Vec<FuzzQp<'a>>,
    /// Reads and atomics of QPs that were reset: their completions may still come.
    flushing: Vec<u64>,
    next_wr_id: u64,
    /// What every case may touch: the CQ rings and the probe MR (writes), the rings (reads).
    always: Allowed,
    shadow: Image,
    probe_shadow: Vec<u8>,
    faults_seen: usize,
    /// The running case: its mode, its packets, the probe FPDU after them, and the fuzzed
    /// QPs that sent a Terminate.
    mode: Mode,
    packets: Vec<Packet>,
    probe_fpdu: Vec<u8>,
    terminated: Vec<usize>,
    /// An over-long FPDU's Terminate (2/0/0x05) was sent in this case.
    overlong_terminated: bool,
    log: Rc<RefCell<String>>,
    stats: &'a mut Stats,
    settings: Settings,
    knobs: Knobs,
}

/// Why a case failed, for the report.
type CaseResult<T> = Result<T, String>;

macro_rules! note {
    ($world:expr, $($arg:tt)*) => {{
        let _ = writeln!($world.log.borrow_mut(), $($arg)*);
    }};
}

impl<'a> World<'a> {
    fn wr_id(&mut self) -> u64 {
        self.next_wr_id += 1;
        self.next_wr_id
    }

    fn qpn_of(&self, target: Target) -> u64 {
        match target {
            Target::Fuzz(i) => self.qps[i].qp.qpn().into(),
            Target::Reset => self.reset_qp.qpn().into(),
            Target::Absent(n) => n.into(),
        }
    }

    fn register(&self, spec: &'static MrSpec) -> CaseResult<Mr<'a>> {
        let (pd, rights) = (&self.pds[spec.1], access(spec.3));
        let mr = match spec.2 {
            Place::Host(offset, len) => MemoryRegion::register_range(pd, self.arena, offset, len, rights),
            Place::Dm(piece) => MemoryRegion::register_device(pd, &self.dm[piece], rights),
        }
        .map_err(|e| format!("registering {}: {e}", spec.0))?;
        let (stag, va, len) = (mr.rkey(), mr.va(), mr.len());
        Ok(Mr { spec, mr: Some(mr), stag, va, len, valid: true })
    }

    /// The valid MR of `pd` that `stag` names, if it grants `rights`.
    fn mr_for(&self, pd: usize, stag: u32, rights: u8) -> Option<&Mr<'a>> {
        self.mrs.iter().find(|m| m.stag == stag && m.valid && m.pd() == pd && m.has(rights))
    }

    /// Whether `len` octets at `at` pass the checks for a QP of `pd`: they lie in the
    /// valid MR of `pd` with `rights` that `stag` names (no octets always pass).
    fn passes(&self, pd: usize, stag: u32, at: u64, len: u64, rights: u8) -> bool {
        len == 0 || self.mr_for(pd, stag, rights).is_some_and(|m| m.contains(at, len))
    }

    fn image(&self) -> CaseResult<Image> {
        let mut arena = vec![0; ARENA];
        self.arena.read_bytes(0, &mut arena);
        let mut image = vec![(self.arena.iova(), arena)];
        for piece in self.dm {
            let mut octets = vec![0; piece.len()];
            piece.read_bytes(0, &mut octets).map_err(|e| format!("reading device memory: {e}"))?;
            image.push((piece.iova(), octets));
        }
        Ok(image)
    }

    fn probe_now(&self) -> Vec<u8> {
        let mut now = vec![0; 64];
        self.probe_buf.read_bytes(0, &mut now);
        now
    }

    /// All of device memory, through BAR0.
    fn dm_full_now(&self) -> Vec<u8> {
        let words = self.dev.info().dm_size / 4;
        (0..words).flat_map(|w| self.dev.hal().read32(regs::DEVICE_MEMORY + 4 * w).to_le_bytes()).collect()
    }

    /// What lies at an IOVA, for reports.
    fn describe(&self, iova: u64) -> String {
        match self.mrs.iter().find(|m| m.contains(iova, 1)) {
            Some(m) => format!("in {} of PD {}{}", m.name(), m.pd(), if m.valid { "" } else { ", invalidated" }),
            None if octets_at(&self.shadow, iova, 1).is_some() => "guard zone".into(),
            None => "no MR".into(),
        }
    }

    /// What an STag names, for reports.
    fn describe_stag(&self, stag: u32) -> String {
        let mr = self.mrs.iter().find(|m| m.stag == stag);
        mr.map_or("no MR".into(), |m| {
            format!("{} of PD {}{}", m.name(), m.pd(), if m.valid { "" } else { ", invalid" })
        })
    }

    // ---- Posting receives, Reads and atomics ---------------------------------------------

    /// Posts receives until `qi` has [`RECVS_POSTED`]; some are tried with a bad lkey or buffer,
    /// which the driver refuses.
    fn post_receives(&mut self, qi: usize, rng: &mut StdRng) -> CaseResult<()> {
        let spec = self.qps[qi].spec;
        let own = &self.mrs[spec.recv_mr];
        let (area, own_end, own_key) = (own.va + spec.recv_off, own.va + own.len, own.stag);
        let other_pds = self.mrs[if spec.pd == PD_A { MR_B_RECV } else { MR_A_RECV }].stag;
        let no_rights = self.mrs[MR_A_NONE].stag;
        while self.qps[qi].recvs.len() < RECVS_POSTED {
            let length: u32 = match rng.gen_range(0..10) {
                0 => 0,
                1..=4 => rng.gen_range(1..=64),
                _ => rng.gen_range(64..=RECV_AREA as u32),
            };
            let (mut addr, mut lkey) = (area + rng.gen_range(0..=RECV_AREA - u64::from(length)), own_key);
            if rng.gen_bool(0.08) {
                match rng.gen_range(0..4) {
                    0 => lkey = no_rights,
                    1 => lkey = other_pds,
                    2 => addr = own_end - u64::from(length) / 2 + 1,
                    _ => lkey = rng.gen(),
                }
            }
            let recv = RecvRequest { wr_id: self.wr_id(), local: Sge { lkey, addr, length } };
            match self.qps[qi].qp.post_recv(&recv) {
                Ok(()) => self.qps[qi].recvs.push_back(recv),
                // The driver checks local buffers itself: a bad one never reaches the RNIC.
                Err(
                    DriverError::UnknownLkey { .. }
                    | DriverError::WrongPd { .. }
                    | DriverError::NoLocalWrite { .. }
                    | DriverError::SgeOutOfBounds { .. },
                ) => {}
                Err(e) => return Err(format!("posting a receive on QP {qi}: {e}")),
            }
        }
        Ok(())
    }

    /// Posts a Read or an atomic on `qi` (unless its ORD is used up) and takes the request
    /// the device sends for it.
    fn post_request(&mut self, qi: usize, rng: &mut StdRng) -> CaseResult<()> {
        let spec = self.qps[qi].spec;
        if self.qps[qi].outstanding.len() >= usize::from(spec.ord) {
            return Ok(());
        }
        let area = self.mrs[spec.recv_mr].va + spec.recv_off;
        let lkey = self.mrs[if rng.gen_bool(0.05) { MR_A_NONE } else { spec.recv_mr }].stag;
        let (wr_id, remote, signaled) = (self.wr_id(), RemoteBuf { stag: rng.gen(), to: rng.gen() }, true);
        let is_read = rng.gen_bool(0.6);
        let length = if is_read { rng.gen_range(0..=256) } else { 8 };
        let sink = match is_read {
            true => area + rng.gen_range(0..=RECV_AREA - u64::from(length)),
            false => area + 8 * rng.gen_range(0..RECV_AREA / 8),
        };
        let local = Sge { lkey, addr: sink, length };
        let wr = match (is_read, rng.gen_bool(0.5)) {
            (true, _) => WorkRequest::Read { wr_id, local, remote, signaled },
            (false, true) => WorkRequest::FetchAdd { wr_id, local, remote, add: rng.gen(), add_mask: 0, signaled },
            (false, false) => {
                let (compare, compare_mask, swap, swap_mask) = rng.gen();
                WorkRequest::CmpSwap { wr_id, local, remote, compare, compare_mask, swap, swap_mask, signaled }
            }
        };
        let good = self.passes(spec.pd, lkey, sink, length.into(), LW);
        note!(self, "  harness posts on QP {qi}: {wr:?} (local buffer good: {good})");
        match self.qps[qi].qp.post_send(&wr) {
            Ok(()) => {}
            // The driver checks local buffers itself: a bad one never reaches the RNIC.
            Err(
                DriverError::UnknownLkey { .. }
                | DriverError::WrongPd { .. }
                | DriverError::NoLocalWrite { .. }
                | DriverError::SgeOutOfBounds { .. },
            ) if !good => return Ok(()),
            Err(e) => return Err(format!("posting {wr:?}: {e}")),
        }
        let before = self.peer.sent_count();
        common::run_until(self.dev, || self.peer.sent_count() > before);
        let sent = self.peer.take_sent();
        let [(fpdu, conn)] = &sent[..] else {
            let hang = if sent.is_empty() { "HANG: " } else { "" };
            return Err(format!(
                "{hang}posting {wr:?} on QP {qi} made the device send {} FPDUs: {sent:02x?}",
                sent.len()
            ));
        };
        note!(self, "  <- conn {conn}: {}", hex(fpdu));
        let seg = parse_fpdu(fpdu, spec.crc).map_err(|e| format!("QP {qi} sent {e}: {}", hex(fpdu)))?;
        let (read, atomic_id) = match (seg.header, is_read) {
            _ if *conn != u64::from(conn_id(qi)) => return Err(format!("QP {qi}'s request went out on conn {conn}")),
            (RdmapHeader::ReadRequest(r), true) => (Some(r), 0),
            (RdmapHeader::AtomicRequest(r), false) => (None, r.request_id),
            // A local protection error: the WQE completes with an error, the QP fails.
            (RdmapHeader::Terminate(t), _) if !good => {
                self.stats.count(format!("Terminates sent/{}", t.code), 1);
                self.terminated.push(qi);
                self.flushing.push(wr_id);
                return Ok(());
            }
            _ => return Err(format!("QP {qi}: {wr:?} went out as {seg:?}")),
        };
        let outstanding = Outstanding { wr_id, sink, len: length.into(), good, read, atomic_id };
        self.qps[qi].outstanding.push_back(outstanding);
        self.stats.count("harness/Reads and atomics sent", 1);
        Ok(())
    }

    // ---- Generating a case ---------------------------------------------------------------

    /// An STag for a segment of a QP of `pd` that needs `rights`, and the MR it names.
    fn pick_stag(&self, rng: &mut StdRng, pd: usize, rights: u8) -> (u32, Option<usize>) {
        let pick = |rng: &mut StdRng, fits: &dyn Fn(&Mr) -> bool| {
            let fitting: Vec<usize> = (0..self.mrs.len()).filter(|&i| fits(&self.mrs[i])).collect();
            (!fitting.is_empty()).then(|| fitting[rng.gen_range(0..fitting.len())])
        };
        let chosen = match rng.gen_range(0..100) {
            0..=54 => pick(rng, &|m| m.pd() == pd && m.valid && m.has(rights)),
            55..=69 => pick(rng, &|_| true),
            70..=77 => pick(rng, &|m| m.pd() == pd && !m.has(rights)),
            78..=80 if !self.stale.is_empty() => return (self.stale[rng.gen_range(0..self.stale.len())], None),
            78..=83 => {
                return ((self.mrs[rng.gen_range(0..self.mrs.len())].stag & !0xFF) | u32::from(rng.gen::<u8>()), None)
            }
            84..=89 => return (rng.gen(), None),
            90..=94 => return (0, None),
            // An index past the MR table's.
            _ => return ((rng.gen_range(256..1 << 24) << 8) | u32::from(rng.gen::<u8>()), None),
        };
        chosen.map_or_else(|| (rng.gen(), None), |i| (self.mrs[i].stag, Some(i)))
    }

    /// A TO for `size` octets (aligned to `align`) relative to an MR, or anywhere.
    fn pick_to(&self, rng: &mut StdRng, mr: Option<usize>, size: u64, align: u64) -> u64 {
        let m = match mr {
            Some(i) => &self.mrs[i],
            None if rng.gen_bool(0.5) => return rng.gen(),
            None => &self.mrs[rng.gen_range(0..self.mrs.len())],
        };
        let (va, len) = (m.va, m.len);
        match rng.gen_range(0..100) {
            0..=59 if len >= size => (va + rng.gen_range(0..=len - size)) & !(align - 1),
            0..=69 => va + (len + rng.gen_range(1..=8)).saturating_sub(size),
            70..=76 => va.wrapping_sub(rng.gen_range(1..=16)),
            77..=81 => u64::MAX - rng.gen_range(0..64),
            82..=89 => va + rng.gen_range(0..2 * len + 64),
            90..=94 => va + len,
            _ => rng.gen(),
        }
    }

    /// A tagged segment to an STag and TO drawn for `rights`.
    fn gen_tagged(&mut self, rng: &mut StdRng, pd: usize, opcode: Opcode, rights: u8, len: usize) -> Vec<u8> {
        let (stag, mr) = self.pick_stag(rng, pd, rights);
        let to = self.pick_to(rng, mr, len as u64, 1);
        let last = opcode == Opcode::ReadResponse || rng.gen_bool(0.9);
        Segment::tagged(opcode, last, stag, to, &random_octets(rng, len)).to_vec()
    }

    /// The segments of one message for fuzzed QP `qi`: valid as far as the harness can tell,
    /// or deliberately random.
    fn gen_message(&mut self, rng: &mut StdRng, qi: usize, st: &mut GenState) -> Vec<Vec<u8>> {
        let (spec, pd) = (self.qps[qi].spec, self.qps[qi].spec.pd);
        let read = self.qps[qi].outstanding.front().and_then(|o| o.read);
        let atomic = self.qps[qi].outstanding.iter().find(|o| o.read.is_none()).map(|o| o.atomic_id);
        let kinds = [
            ("write", 25),
            ("send", 20),
            ("immediate", 7),
            ("read request", 12),
            ("atomic request", 12),
            ("read response", if read.is_some() { 40 } else { 4 }),
            ("atomic response", if atomic.is_some() { 40 } else { 3 }),
            ("terminate", 2),
            ("random", 3),
        ];
        let kind = weighted(rng, &kinds);
        self.stats.count(format!("segments/{kind}"), 1);
        let payload_len = |rng: &mut StdRng| match rng.gen_range(0..100) {
            0..=4 => 0,
            5..=89 => rng.gen_range(0..=(usize::from(spec.mulpdu) - 14).min(512)),
            _ => rng.gen_range(0..=2048),
        };
        let segment = match kind {
            "write" => {
                let len = payload_len(rng);
                self.gen_tagged(rng, pd, Opcode::RdmaWrite, RW, len)
            }
            "send" => return self.gen_send(rng, qi, st),
            "immediate" => {
                st.recv_cursor += 1;
                Segment::immediate(st.next_msn(0), rng.gen(), rng.gen()).to_vec()
            }
            "read request" => {
                let size = match rng.gen_range(0..100) {
                    0..=19 => rng.gen_range(0..=64),
                    20..=96 => rng.gen_range(0..=512),
                    _ => rng.gen_range(0..=8192),
                };
                let (src_stag, mr) = self.pick_stag(rng, pd, RR);
                let src_to = self.pick_to(rng, mr, size.into(), 1);
                let (sink_stag, sink_to) = (rng.gen(), rng.gen());
                Segment::read_request(st.next_msn(1), ReadRequest { sink_stag, sink_to, size, src_stag, src_to })
                    .to_vec()
            }
            "atomic request" => {
                let (stag, mr) = self.pick_stag(rng, pd, RA);
                let align = if rng.gen_bool(0.9) { 8 } else { 1 };
                let (to, msn) = (self.pick_to(rng, mr, 8, align), st.next_msn(1));
                let mut req = match rng.gen_bool(0.5) {
                    true => AtomicRequest::fetch_add(
                        msn,
                        stag,
                        to,
                        rng.gen(),
                        if rng.gen_bool(0.5) { 0 } else { rng.gen() },
                    ),
                    false => AtomicRequest::cmp_swap(msn, stag, to, rng.gen(), rng.gen(), rng.gen(), rng.gen()),
                };
                if rng.gen_bool(0.1) {
                    req.aopcode = rng.gen_range(0..16);
                }
                Segment::atomic_request(msn, req).to_vec()
            }
            // The next piece of the Read in front, possibly not its last.
            "read response" if read.is_some() => {
                let r = read.expect("a Read in front");
                let done = st.read_resp.filter(|(stag, _)| *stag == r.sink_stag).map_or(0, |(_, done)| done);
                let left = u64::from(r.size).saturating_sub(done);
                let take = if left > 1 && rng.gen_bool(0.3) { rng.gen_range(1..left) } else { left };
                st.read_resp = Some((r.sink_stag, done + take));
                let last = done + take == u64::from(r.size);
                Segment::tagged(
                    Opcode::ReadResponse,
                    last,
                    r.sink_stag,
                    r.sink_to + done,
                    &random_octets(rng, take as usize),
                )
                .to_vec()
            }
            "read response" => {
                let len = payload_len(rng);
                self.gen_tagged(rng, pd, Opcode::ReadResponse, LW, len)
            }
            "atomic response" => {
                let request_id = atomic.filter(|_| rng.gen_bool(0.9)).unwrap_or_else(|| rng.gen_range(0..8));
                Segment::atomic_response(st.next_msn(3), AtomicResponse { request_id, original: rng.gen() }).to_vec()
            }
            "terminate" => {
                let mut t = Terminate::new(TermCode::from_control_word(rng.gen()).0);
                let header = Segment::write(rng.gen(), rng.gen(), &[]).to_vec();
                if let Some(h) = TerminatedDdpHeader::from_segment(&header).filter(|_| rng.gen_bool(0.5)) {
                    t = t.with_ddp(rng.gen(), h);
                }
                Segment::terminate(1, t).to_vec()
            }
            _ => {
                let len = rng.gen_range(0..=96);
                let mut seg = random_octets(rng, len);
                if len >= 2 && rng.gen_bool(0.6) {
                    // DDP control octets of valid shapes, RDMAP version 1, any opcode.
                    seg[0] = [0x41, 0xC1, 0x01, 0x81][rng.gen_range(0..4)];
                    seg[1] = 0x40 | rng.gen_range(0..16);
                }
                seg
            }
        };
        vec![segment]
    }

    /// A Send (of each kind, maybe with Invalidate) in one to three segments, mostly
    /// fitting the receive it claims.
    fn gen_send(&mut self, rng: &mut StdRng, qi: usize, st: &mut GenState) -> Vec<Vec<u8>> {
        let spec = self.qps[qi].spec;
        let room = self.qps[qi].recvs.get(st.recv_cursor).map_or(64, |r| r.local.length as usize);
        st.recv_cursor += 1;
        let total = if rng.gen_range(0..10) == 0 { rng.gen_range(0..=1024) } else { rng.gen_range(0..=room) };
        let opcodes = [Opcode::Send, Opcode::SendSolicited, Opcode::SendInvalidate, Opcode::SendSolicitedInvalidate];
        let opcode = opcodes[rng.gen_range(0..4)];
        let inv = if opcode.has_invalidate_stag() { self.pick_stag(rng, spec.pd, 0).0 } else { 0 };
        let (msn, payload) = (st.next_msn(0), random_octets(rng, total));
        let pieces = if total > 1 && rng.gen_bool(0.3) { rng.gen_range(2..=3) } else { 1 };
        let cut = total.div_ceil(pieces).clamp(1, usize::from(spec.mulpdu) - 18);
        let chunks: Vec<&[u8]> = if total == 0 { vec![&payload[..]] } else { payload.chunks(cut).collect() };
        let n = chunks.len();
        let segment = |i: usize, chunk| {
            Segment::untagged(opcode, i + 1 == n, inv, msn, (i * cut) as u32, RdmapHeader::None, chunk).to_vec()
        };
        chunks.into_iter().enumerate().map(|(i, chunk)| segment(i, chunk)).collect()
    }

    /// The packets of a case, mostly for `primary`; returns them, the fuzzed QPs they
    /// address and what the generator believes of each QP after them.
    fn gen_packets(&mut self, rng: &mut StdRng, primary: usize) -> (Vec<Packet>, Vec<usize>, Vec<GenState>) {
        let mut states: Vec<GenState> =
            self.qps.iter().map(|q| GenState { msn: q.msn, recv_cursor: 0, read_resp: None }).collect();
        let (mut packets, mut targets) = (Vec::new(), vec![primary]);
        let n = [1, 1, 2, 2, 3, 3, 4, 5, 6][rng.gen_range(0..9)];
        while packets.len() < n {
            let target = match rng.gen_range(0..100) {
                _ if packets.is_empty() => Target::Fuzz(primary),
                0..=84 => Target::Fuzz(primary),
                85..=93 => Target::Fuzz(rng.gen_range(0..self.qps.len())),
                94..=96 => Target::Reset,
                _ => {
                    let used: Vec<u32> =
                        self.qps.iter().map(|q| q.qp.qpn()).chain([self.reset_qp.qpn(), self.probe_qp.qpn()]).collect();
                    let free: Vec<u16> = (0..64).filter(|n| !used.contains(&u32::from(*n))).collect();
                    Target::Absent(free[rng.gen_range(0..free.len())])
                }
            };
            // A message for another target is built as for some fuzzed QP, which does not
            // see it.
            let (qi, mut scratch) = match target {
                Target::Fuzz(i) => (i, None),
                _ => {
                    let i = rng.gen_range(0..self.qps.len());
                    (i, Some(GenState { read_resp: None, ..states[i] }))
                }
            };
            if matches!(target, Target::Fuzz(i) if !targets.contains(&i)) {
                targets.push(qi);
            }
            for ulpdu in self.gen_message(rng, qi, scratch.as_mut().unwrap_or(&mut states[qi])) {
                packets.push(Packet { target, ulpdu, fpdu: Vec::new(), length_at: 0, mutations: String::new() });
            }
        }
        (packets, targets, states)
    }

    /// Mutates some ULPDUs before framing (at least one), and may swap or duplicate two.
    fn mutate_packets(&mut self, rng: &mut StdRng, packets: &mut Vec<Packet>) {
        let first = rng.gen_range(0..packets.len());
        for i in 0..packets.len() {
            if i == first || rng.gen_bool(0.3) {
                let other = packets[rng.gen_range(0..packets.len())].ulpdu.clone();
                let what = mutate(rng, &mut packets[i].ulpdu, &other);
                packets[i].mutations += what;
                self.stats.count(format!("mutations/{what}"), 1);
            }
        }
        if packets.len() >= 2 && rng.gen_bool(0.15) {
            let i = rng.gen_range(0..packets.len() - 1);
            let what = if rng.gen_bool(0.5) {
                packets.swap(i, i + 1);
                "swapped"
            } else {
                packets.insert(i + 1, Packet { mutations: "duplicated".into(), ..packets[i].clone() });
                "duplicated"
            };
            self.stats.count(format!("mutations/{what}"), 1);
        }
    }

    fn frame(&mut self, p: &mut Packet, rng: &mut StdRng) {
        match p.target {
            Target::Fuzz(i) => {
                let framer = &mut self.qps[i].framer;
                p.length_at = if framer.config().markers && framer.position().is_multiple_of(512) { 4 } else { 0 };
                framer.frame(&p.ulpdu, &mut p.fpdu).expect("a ULPDU of at most 65535 octets");
            }
            // The RESET QP's context has CRCs on, and the deframer checks them whatever the
            // state; a QP number nobody has reads as a zeroed context (no CRC, no markers),
            // whose CRC field is not looked at.
            _ => p.fpdu = common::frame(&p.ulpdu, p.target == Target::Reset || rng.gen_bool(0.5)),
        }
    }

    /// Corrupts one FPDU of `primary` after framing (unless the knob says not to).
    fn corrupt_after_framing(&mut self, rng: &mut StdRng, packets: &mut [Packet], primary: usize) {
        if self.knobs.wire_without_corruption {
            return;
        }
        let mine: Vec<usize> = (0..packets.len()).filter(|&i| packets[i].target == Target::Fuzz(primary)).collect();
        let other = packets[rng.gen_range(0..packets.len())].fpdu.clone();
        let p = &mut packets[mine[rng.gen_range(0..mine.len())]];
        let (original, n) = (p.fpdu.clone(), p.fpdu.len());
        while p.fpdu == original {
            p.mutations = match rng.gen_range(0..100) {
                0..=39 => {
                    for _ in 0..rng.gen_range(1..=3) {
                        let bit = rng.gen_range(0..n * 8);
                        p.fpdu[bit / 8] ^= 1 << (bit % 8);
                    }
                    "bit flips"
                }
                40..=54 => {
                    p.fpdu.truncate(rng.gen_range(1..n));
                    "truncated"
                }
                55..=69 => {
                    let len: u16 = rng.gen();
                    p.fpdu[p.length_at..p.length_at + 2].copy_from_slice(&len.to_be_bytes());
                    "ULPDU_Length rewritten"
                }
                70..=79 => {
                    p.fpdu[rng.gen_range(0..n)] = rng.gen();
                    "octet rewritten"
                }
                80..=89 => {
                    p.fpdu.truncate(rng.gen_range(1..n));
                    p.fpdu.extend_from_slice(&other[rng.gen_range(0..other.len())..]);
                    "spliced"
                }
                _ if self.mode == Mode::Wire => {
                    p.fpdu[n - 4..].fill(0);
                    "CRC field zeroed (framed as without CRC)"
                }
                _ => {
                    let more = rng.gen_range(1..=12);
                    p.fpdu.extend(random_octets(rng, more));
                    "garbage appended"
                }
            }
            .into();
        }
        p.mutations.insert_str(0, "wire: ");
        self.stats.count(format!("mutations/{}", p.mutations), 1);
    }

    // ---- A case --------------------------------------------------------------------------

    /// One case. Returns whether the device is done for (the epoch must end).
    fn run_case(&mut self, index: u64, closing: bool, reproduce: &str) -> CaseResult<bool> {
        let mut rng = case_rng(self.settings.seed, index, SALT_CASE);
        let primary = match self.knobs.wire_without_corruption && closing {
            true => 0,
            false => weighted(&mut rng, &[(0, 30), (1, 25), (2, 25), (3, 20)]),
        };
        let corrupt = closing && (self.knobs.wire_without_corruption || rng.gen_bool(0.8));
        self.mode = match (corrupt, self.qps[primary].spec.crc) {
            (false, _) => Mode::Framed,
            (true, _) if !self.knobs.wire_without_corruption && rng.gen_bool(0.2) => Mode::Overlong,
            (true, true) => Mode::Wire,
            (true, false) => Mode::Desync,
        };
        let mode = self.mode;
        self.stats.count(format!("modes/{mode:?}"), 1);
        note!(self, "case {index} ({reproduce}): primary QP {primary} ({:?}), {mode:?}", self.qps[primary].spec);
        let (packets, targets, states) = self.build_case(&mut rng, primary)?;
        // Whose state the harness can no longer predict.
        let unsure: Vec<bool> = (0..self.qps.len())
            .map(|i| packets.iter().any(|p| !p.mutations.is_empty() && p.target == Target::Fuzz(i)))
            .collect();
        // Out of step, an FPDU may be taken for any fuzzed QP's, never the probe's PD's.
        let allowed = self.allowed(if mode == Mode::Desync { &[0, 1, 2, 3][..] } else { &targets[..] });
        let octets = self.send_packets(packets);

        // The probe, awaited unless the stream was corrupted after framing.
        let (slot, value) = self.send_probe(index);
        let placed = |w: &Self| w.probe_now()[slot..slot + 8] == value.to_le_bytes();
        let (await_probe, bound) = (mode == Mode::Framed, 60_000 + 4 * octets as u64);
        let idle = if await_probe { IDLE_CYCLES } else { IDLE_CYCLES_NO_PROBE };
        match settle(self.dev, self.peer, self.activity, bound, idle, || !await_probe || placed(self)) {
            Ok(cycles) => self.stats.count("device/cycles", cycles),
            Err(e) => {
                return Err(match self.known_stall() {
                    Some(bug) => bug_is_back(bug, e),
                    None => e,
                })
            }
        }
        // Nothing may be delivered after an FPDU corrupted on the wire; out of step, the
        // probe may or may not have been taken as a whole FPDU.
        let mut probe_expect = self.probe_shadow.clone();
        if placed(self) {
            if matches!(mode, Mode::Wire | Mode::Overlong) {
                let what = "the MPA receiver let it or what follows through";
                return Err(format!("the probe was PLACED after an FPDU corrupted on the wire: {what}"));
            }
            probe_expect[slot..slot + 8].copy_from_slice(&value.to_le_bytes());
        }
        self.check_case(&allowed, probe_expect)?;
        // The over-long FPDU fails its QP, unless an earlier FPDU of the case had.
        let terminated_before = self.terminated.contains(&primary) && !self.overlong_terminated;
        if mode == Mode::Overlong && !self.overlong_terminated && !terminated_before {
            return Err("an FPDU longer than the RX buffer did not fail its QP with Terminate 2/0/0x05".into());
        }
        self.restore(&targets, &unsure, &states, &mut rng)?;
        self.stats.cases += 1;
        Ok(mode != Mode::Framed)
    }

    /// The case's packets: generated mostly for `primary` (after maybe posting a Read or
    /// atomic there), mutated, framed, or corrupted after framing; with the fuzzed QPs they
    /// address and what the generator believes of each QP after them.
    fn build_case(&mut self, rng: &mut StdRng, primary: usize) -> CaseResult<(Vec<Packet>, Vec<usize>, Vec<GenState>)> {
        self.packets.clear();
        self.terminated.clear();
        self.overlong_terminated = false;
        if rng.gen_bool(0.25) {
            self.post_request(primary, rng)?;
        }
        let (mut packets, targets, states) = self.gen_packets(rng, primary);
        if self.mode == Mode::Framed && rng.gen_bool(0.65) {
            self.mutate_packets(rng, &mut packets);
        }
        if self.mode == Mode::Overlong {
            // The primary's first packet, so that its QP is still in RTS to fail.
            let first = packets.iter().position(|p| p.target == Target::Fuzz(primary));
            let p = &mut packets[first.expect("the primary has a packet")];
            let len = rng.gen_range(RX_BUFFER_OCTETS - 13..=usize::from(u16::MAX) - 14);
            p.ulpdu = self.gen_tagged(rng, self.qps[primary].spec.pd, Opcode::RdmaWrite, RW, len);
            p.mutations = "longer than the RX buffer".into();
        }
        for p in &mut packets {
            self.frame(p, rng);
        }
        if matches!(self.mode, Mode::Wire | Mode::Desync) {
            self.corrupt_after_framing(rng, &mut packets, primary);
        }
        Ok((packets, targets, states))
    }

    /// Sends the packets (keeping them for the checks); returns their octets.
    fn send_packets(&mut self, packets: Vec<Packet>) -> usize {
        let octets: usize = packets.iter().map(|p| p.fpdu.len()).sum();
        self.stats.count("packets/sent", packets.len() as u64);
        self.stats.count("packets/octets", octets as u64);
        for p in packets {
            let tuser = self.qpn_of(p.target);
            let (target, mutations, says) = (p.target, &p.mutations, summary(&p.ulpdu));
            note!(self, "  -> tuser {tuser:>2} {target:?} [{mutations}] {says}: {}", hex(&p.fpdu));
            self.peer.send(&p.fpdu, tuser);
            self.packets.push(p);
        }
        octets
    }

    /// Sends the probe, a Write of a value unique to the case to one of 8 slots; returns
    /// the slot's offset and the value.
    fn send_probe(&mut self, index: u64) -> (usize, u64) {
        let (slot, value) = ((index % 8) as usize * 8, 0x9B0B_0000_0000_0000 | index);
        let to = self.probe_mr.va() + slot as u64;
        self.probe_fpdu = common::frame(&Segment::write(self.probe_mr.rkey(), to, &value.to_le_bytes()).to_vec(), true);
        self.peer.send(&self.probe_fpdu, self.probe_qp.qpn().into());
        (slot, value)
    }

    // ---- Checking a case -----------------------------------------------------------------

    /// Checks what the device did in the case: what it sent, its DMA accesses and IOMMU
    /// faults, host, device and probe memory, its completions.
    fn check_case(&mut self, allowed: &Allowed, probe_expect: Vec<u8>) -> CaseResult<()> {
        let after = self.image()?;
        let (faults, accesses) =
            self.dev.hal().with_memory(|m| (m.faults()[self.faults_seen..].to_vec(), m.take_accesses()));
        self.faults_seen += faults.len();
        let excuse_reads = self.harvest_tx(&after, &accesses)?;
        if let Some(f) = faults.iter().find(|f| !(excuse_reads && f.dir == Dir::Read)) {
            return Err(format!("IOMMU FAULT: {f}"));
        }
        self.check_memory(allowed, &accesses, after, excuse_reads)?;
        let probe = self.probe_now();
        if probe != probe_expect {
            return Err(format!("probe memory is {} where {} was expected", hex(&probe), hex(&probe_expect)));
        }
        self.probe_shadow = probe;
        self.harvest_cq()
    }

    /// What a case addressing `targets` may touch.
    fn allowed(&self, targets: &[usize]) -> Allowed {
        let mut a = self.always.clone();
        let pds: Vec<usize> = targets.iter().map(|&t| self.qps[t].spec.pd).collect();
        for m in self.mrs.iter().filter(|m| m.valid && m.len > 0 && pds.contains(&m.pd())) {
            let range = Range::new(m.va, m.len, m.name());
            if m.has(RW) || m.has(RA) {
                a.writes.push(Range { words_only: !m.has(RW), ..range });
            }
            if m.has(RR) || m.has(RA) {
                a.reads.push(range);
            }
        }
        for q in targets.iter().map(|&t| &self.qps[t]) {
            for r in q.recvs.iter().filter(|_| !self.knobs.forget_receives) {
                // Segments are checked one by one: a buffer that runs past its MR is
                // written up to there.
                if let Some(m) = self.mr_for(q.spec.pd, r.local.lkey, LW) {
                    let start = r.local.addr.max(m.va);
                    let end = r.local.addr.saturating_add(r.local.length.into()).min(m.va + m.len);
                    if start < end {
                        a.writes.push(Range::new(start, end - start, "receive"));
                    }
                }
            }
            for o in q.outstanding.iter().filter(|o| o.good) {
                a.writes.push(Range::new(o.sink, o.len, "Read or atomic sink"));
            }
        }
        a
    }

    /// Checks every DMA access against `allowed` (reads excused for KB-READ), and that
    /// host and device memory changed only where a write was allowed.
    fn check_memory(
        &mut self,
        allowed: &Allowed,
        accesses: &[Access],
        after: Image,
        excuse_reads: bool,
    ) -> CaseResult<()> {
        for a in accesses {
            if !(allowed.ok(a.dir, a.iova, a.len as u64) || (excuse_reads && a.dir == Dir::Read)) {
                let ranges = if a.dir == Dir::Write { &allowed.writes } else { &allowed.reads };
                return Err(format!(
                    "DMA {:?} OUTSIDE what the case allows: {} octets at {:#x} ({}) at cycle {}\n  allowed: {ranges:?}",
                    a.dir,
                    a.len,
                    a.iova,
                    self.describe(a.iova),
                    a.cycle,
                ));
            }
            if a.dir == Dir::Write && a.iova.wrapping_sub(self.arena.iova()) < ARENA as u64 {
                self.stats.count("device/host writes placed", 1);
            }
        }
        for ((base, was), (_, is)) in self.shadow.iter().zip(&after) {
            if let Some(i) = (0..was.len()).find(|&i| was[i] != is[i] && !allowed.ok(Dir::Write, base + i as u64, 1)) {
                let iova = base + i as u64;
                return Err(format!(
                    "memory changed OUTSIDE what the case allows: octet {iova:#x} ({}) {:#04x} -> {:#04x}\n  allowed: {:?}",
                    self.describe(iova),
                    was[i],
                    is[i],
                    allowed.writes
                ));
            }
        }
        self.shadow = after;
        Ok(())
    }

    /// Takes what the device sent and checks every FPDU. Returns whether the case's reads
    /// are excused (KB-READ, or a request the harness cannot see out of step).
    fn harvest_tx(&mut self, after: &Image, accesses: &[Access]) -> CaseResult<bool> {
        let mut excuse_reads = false;
        for (fpdu, conn) in self.peer.take_sent() {
            note!(self, "  <- conn {conn}: {}", hex(&fpdu));
            let Some(qi) = (0..self.qps.len()).find(|&i| u64::from(conn_id(i)) == conn) else {
                // Out of step, octets of a fuzzed QP may be taken for the probe QP's; a
                // corrupted FPDU ending in the probe's packet fails the probe QP (the stream
                // contract, one packet per FPDU, is what names the QP).
                if conn == u64::from(PROBE_CONN) && self.mode != Mode::Framed {
                    let seg = parse_fpdu(&fpdu, true).map_err(|e| format!("the probe QP sent {e}: {}", hex(&fpdu)))?;
                    match seg.header {
                        RdmapHeader::Terminate(t)
                            if self.mode != Mode::Desync && t.code.layer != TermCode::LAYER_LLP =>
                        {
                            return Err(format!("the probe QP sent a Terminate that is not MPA's: {}", hex(&fpdu)))
                        }
                        RdmapHeader::Terminate(_) => self.stats.count("device/probe QP failed out of step", 1),
                        _ if self.mode != Mode::Desync => {
                            return Err(format!("after a corruption the probe QP sent {}", hex(&fpdu)))
                        }
                        _ => {}
                    }
                    continue;
                }
                return Err(format!("the device sent an FPDU on connection {conn}, no fuzzed QP's: {}", hex(&fpdu)));
            };
            let seg =
                parse_fpdu(&fpdu, self.qps[qi].spec.crc).map_err(|e| format!("QP {qi} sent {e}: {}", hex(&fpdu)))?;
            match (seg.header, seg.ddp) {
                (RdmapHeader::Terminate(t), _) => {
                    self.stats.count(format!("Terminates sent/{}", t.code), 1);
                    self.terminated.push(qi);
                    self.overlong_terminated |=
                        self.mode == Mode::Overlong && t.code == TermCode::MPA_LOCAL_CATASTROPHIC;
                }
                (RdmapHeader::AtomicResponse(_), _) => self.stats.count("device/responses", 1),
                (RdmapHeader::None, DdpHeader::Tagged(h)) if seg.opcode == Opcode::ReadResponse => {
                    self.stats.count("device/responses", h.last.into());
                    let len = seg.payload.len() as u64;
                    let answers = |r: &ReadRequest| {
                        r.sink_stag == h.stag && h.to.wrapping_sub(r.sink_to).saturating_add(len) <= r.size.into()
                    };
                    let Some(rr) = self.case_read_requests().find(|(q, r)| *q == qi && answers(r)).map(|(_, r)| r)
                    else {
                        // Out of step, the device parses requests the harness never framed:
                        // what it reads for them cannot be checked here.
                        if self.mode == Mode::Desync {
                            excuse_reads = true;
                            continue;
                        }
                        return Err(format!(
                            "QP {qi} sent a Read Response no Read Request of the case asked for: {}",
                            hex(&fpdu)
                        ));
                    };
                    let at = rr.src_to.wrapping_add(h.to.wrapping_sub(rr.sink_to));
                    if !self.passes(self.qps[qi].spec.pd, rr.src_stag, rr.src_to, rr.size.into(), RR) {
                        let what =
                            format!("QP {qi} answered {rr:?}, whose source fails the access checks: {}", hex(&fpdu));
                        return Err(bug_is_back(KB_READ, what));
                    } else if let Some(wrong) = self.read_payload_mismatch(at, seg.payload, after, accesses) {
                        let what = self.describe(at);
                        return Err(format!(
                            "QP {qi}: a Read Response's payload is not the memory at {at:#x} ({what}): {wrong}"
                        ));
                    }
                }
                _ => {
                    return Err(format!(
                        "QP {qi} sent {:?}, which no received FPDU asks for: {}",
                        seg.opcode,
                        hex(&fpdu)
                    ))
                }
            }
        }
        Ok(excuse_reads)
    }

    /// The Read Requests the case sent fuzzed QPs, as far as they can be read.
    fn case_read_requests(&self) -> impl Iterator<Item = (usize, ReadRequest)> + '_ {
        self.packets.iter().filter_map(|p| match p.target {
            Target::Fuzz(qi) => raw_read_request(&p.ulpdu).map(|r| (qi, r)),
            _ => None,
        })
    }

    /// The octets are read at some point of the case: each must be what memory held before
    /// or after it, or one a write of the case touched (in device memory, whose writes are
    /// not logged: one that changed). Returns what is wrong.
    fn read_payload_mismatch(&self, at: u64, payload: &[u8], after: &Image, accesses: &[Access]) -> Option<String> {
        let len = payload.len() as u64;
        let (before, now) = (octets_at(&self.shadow, at, len)?, octets_at(after, at, len)?);
        let written = |o: u64| accesses.iter().any(|a| a.dir == Dir::Write && o.wrapping_sub(a.iova) < a.len as u64);
        let wrong = (0..payload.len())
            .any(|i| payload[i] != before[i] && payload[i] != now[i] && before[i] == now[i] && !written(at + i as u64));
        wrong.then(|| {
            format!("sent {}, memory held {} before the case and {} after", hex(payload), hex(before), hex(now))
        })
    }

    /// Takes the completions and checks each against what the harness posted.
    fn harvest_cq(&mut self) -> CaseResult<()> {
        while let Some(c) = self.cq.poll().map_err(|e| format!("a CQE that does not decode: {e}"))? {
            note!(self, "  CQE {c:?}");
            let Some(qi) = self.qps.iter().position(|q| q.qp.qpn() == c.qpn) else {
                return Err(format!("a completion for QP {}, which is not a fuzzed QP: {c:?}", c.qpn));
            };
            let pd = self.qps[qi].spec.pd;
            let result = if c.is_ok() { "ok" } else { "with errors" };
            match c.opcode {
                CqeOpcode::Recv | CqeOpcode::RecvImm => {
                    self.stats.count(format!("completions/receives {result}"), 1);
                    let r = match self.qps[qi].recvs.pop_front() {
                        Some(r) if r.wr_id == c.wr_id => r.local,
                        next => {
                            return Err(format!(
                                "QP {qi}: receive completion {c:?} out of RQ order (next posted: {next:?})"
                            ))
                        }
                    };
                    let fits = match c.opcode {
                        CqeOpcode::RecvImm => c.byte_len == 8 && c.imm.is_some(),
                        _ => c.byte_len <= r.length && self.passes(pd, r.lkey, r.addr, c.byte_len.into(), LW),
                    };
                    if c.is_ok() && !fits {
                        return Err(format!("QP {qi}: completion {c:?} does not fit receive {r:?}"));
                    }
                    let Some(stag) = c.invalidated.filter(|_| c.is_ok()) else { continue };
                    match self.mrs.iter().position(|m| m.stag == stag) {
                        Some(mi) if self.mrs[mi].pd() == pd && self.mrs[mi].valid => {
                            self.mrs[mi].valid = false;
                            self.stats.count("device/MRs invalidated", 1);
                        }
                        _ if self.later_segment_invalidates(qi, stag) => {
                            let what = format!("QP {qi} invalidated STag {stag:#x} ({})", self.describe_stag(stag));
                            return Err(bug_is_back(KB_INV, what));
                        }
                        _ => {
                            let what = self.describe_stag(stag);
                            return Err(format!(
                                "QP {qi} (PD {pd}) completed a Send with Invalidate of STag {stag:#x}, \
                                 which is not a valid MR of its PD ({what}): {c:?}"
                            ));
                        }
                    }
                }
                CqeOpcode::RdmaRead | CqeOpcode::Atomic => {
                    self.stats.count(format!("completions/SQ {result}"), 1);
                    if let Some(at) = self.flushing.iter().position(|&w| w == c.wr_id) {
                        self.flushing.swap_remove(at);
                    } else if self.qps[qi].outstanding.front().is_some_and(|o| o.wr_id == c.wr_id) {
                        self.qps[qi].outstanding.pop_front();
                    } else {
                        return Err(format!("QP {qi}: SQ completion {c:?} for nothing outstanding"));
                    }
                    if c.is_ok() && c.opcode == CqeOpcode::Atomic {
                        self.qps[qi].msn[3] += 1;
                    }
                }
                _ => return Err(format!("QP {qi}: a completion the harness never asked for: {c:?}")),
            }
        }
        Ok(())
    }

    /// Checks the QPs the case addressed against the Terminates they sent; resets those the
    /// harness can no longer predict and tops their receives up; registers invalidated MRs
    /// again (the old STag goes on the stale list).
    fn restore(&mut self, targets: &[usize], unsure: &[bool], states: &[GenState], rng: &mut StdRng) -> CaseResult<()> {
        let mut touched: Vec<usize> = targets.iter().chain(&self.terminated).copied().collect();
        touched.sort_unstable();
        touched.dedup();
        for qi in touched {
            let (ctx, status) = self.qps[qi].qp.query().map_err(|e| format!("QUERY_QP {qi}: {e}"))?;
            let (sent_terminate, in_error) = (self.terminated.contains(&qi), ctx.state == QpState::Error);
            let bad = match status.terminate {
                _ if sent_terminate && !in_error => Some("sent a Terminate but is not in ERROR"),
                None if in_error => Some("is in ERROR with no Terminate recorded"),
                Some(t) if in_error && !sent_terminate && !t.received => {
                    Some("is in ERROR from a Terminate of its own it never sent")
                }
                _ => None,
            };
            if let Some(bad) = bad {
                return Err(format!("QP {qi} {bad}: {ctx:?} {status:?}"));
            }
            let q = &mut self.qps[qi];
            if ctx.state != QpState::Rts || unsure[qi] || !q.outstanding.is_empty() || rng.gen_bool(0.03) {
                note!(self, "  QP {qi} ({:?}, {:?}) goes RESET -> RTS", ctx.state, status.terminate);
                q.qp.modify(QpState::Reset).map_err(|e| format!("QP {qi} to RESET: {e}"))?;
                q.qp.modify(QpState::Rts).map_err(|e| format!("QP {qi} to RTS: {e}"))?;
                (q.framer, q.msn) = (Framer::new(q.framer.config()), [1; 4]);
                q.recvs.clear();
                self.flushing.extend(q.outstanding.drain(..).map(|o| o.wr_id));
                self.stats.count("harness/QP resets", 1);
            } else {
                q.msn = states[qi].msn;
            }
            self.post_receives(qi, rng)?;
        }
        let invalidated: Vec<usize> = (0..self.mrs.len()).filter(|&i| !self.mrs[i].valid).collect();
        for i in invalidated {
            self.stale.push(self.mrs[i].stag);
            self.mrs[i].mr = None;
            self.mrs[i] = self.register(self.mrs[i].spec)?;
            note!(self, "  {} registered again as {:#x}", self.mrs[i].name(), self.mrs[i].stag);
        }
        Ok(())
    }
}

/// Mutates a ULPDU in place; returns what it did.
fn mutate(rng: &mut StdRng, ulpdu: &mut Vec<u8>, other: &[u8]) -> &'static str {
    // (offset, width) of the header fields: DDP and RDMAP control octets, STag, TO (whole
    // and halves); untagged: QN, MSN, MO and the Read and Atomic Request fields.
    const TAGGED: &[(usize, usize)] = &[(0, 1), (1, 1), (2, 4), (6, 8), (6, 4), (10, 4)];
    const UNTAGGED: &[(usize, usize)] =
        &[(0, 1), (1, 1), (2, 4), (6, 4), (10, 4), (14, 4), (18, 4), (22, 8), (30, 4), (34, 4), (38, 8), (46, 8)];
    match rng.gen_range(0..100) {
        0..=24 => {
            for _ in 0..rng.gen_range(1..=3) {
                // Mostly in the headers.
                let span = if rng.gen_bool(0.7) { ulpdu.len().min(46) } else { ulpdu.len() };
                if span > 0 {
                    let bit = rng.gen_range(0..span * 8);
                    ulpdu[bit / 8] ^= 1 << (bit % 8);
                }
            }
            "bit flips"
        }
        25..=49 => {
            let fields = if ulpdu.first().is_some_and(|b| b & 0x80 != 0) { TAGGED } else { UNTAGGED };
            let (at, width) = fields[rng.gen_range(0..fields.len())];
            if let Some(field) = ulpdu.get_mut(at..at + width) {
                let mut old = [0; 8];
                old[8 - width..].copy_from_slice(field);
                let value: u64 = match rng.gen_range(0..6) {
                    0 => 0,
                    1 => u64::MAX,
                    2 => 1,
                    3 => u64::from_be_bytes(old).wrapping_add(if rng.gen_bool(0.5) { 1 } else { u64::MAX }),
                    _ => rng.gen(),
                };
                field.copy_from_slice(&value.to_be_bytes()[8 - width..]);
            }
            "header field"
        }
        50..=59 => {
            if ulpdu.len() >= 2 {
                match rng.gen_bool(0.7) {
                    true => ulpdu[1] = (ulpdu[1] & 0xF0) | rng.gen_range(0..16),
                    false => ulpdu[0] ^= [0x80, 0x40, 0x03, 0x3C][rng.gen_range(0..4)],
                }
            }
            "opcode or DDP flags"
        }
        60..=71 => {
            ulpdu.truncate(rng.gen_range(0..=ulpdu.len()));
            "truncated"
        }
        72..=79 => {
            let n = rng.gen_range(1..=64);
            ulpdu.extend(random_octets(rng, n));
            "extended"
        }
        80..=89 => {
            ulpdu.truncate(rng.gen_range(0..=ulpdu.len()));
            ulpdu.extend_from_slice(&other[rng.gen_range(0..=other.len())..]);
            "spliced"
        }
        _ => {
            let (len, keep) = (rng.gen_range(0..=80), rng.gen_range(0..=18));
            ulpdu.truncate(keep);
            ulpdu.extend(random_octets(rng, len));
            "random tail"
        }
    }
}

// =========================================================================================
// RTL BUGS THE HARNESS FOUND, all fixed (`sim_errors.rs` has their tests): recognised by
// their signature, so that a failure names the bug that came back.
// =========================================================================================

/// A Read Request refused by its source checks still gets a Read Response with the octets
/// at the unchecked address (then the Terminate).
const KB_READ: &str = "KB-READ: refused Read Request answered with memory";
/// The STag a Send with Invalidate invalidates is taken from its last segment, which is
/// never checked: a later segment can invalidate any MR (of another PD, or one that only
/// its STag's low index bits name).
const KB_INV: &str = "KB-INV: a later segment's unchecked Invalidate STag is invalidated";
/// A case's failure, named as `bug` come back.
fn bug_is_back(bug: &str, error: String) -> String {
    format!("KNOWN BUG {bug} is back: {error}")
}

/// The Invalidate STag of a Send with Invalidate segment that is not the first of its
/// message (MO > 0), read without validating anything.
fn later_invalidate_stag(ulpdu: &[u8]) -> Option<u32> {
    let h = UntaggedHeader::from_bytes(ulpdu.get(..UntaggedHeader::LEN)?.try_into().ok()?);
    let send_invalidate = ulpdu[0] & 0x80 == 0 && matches!(h.ulp_ctrl & 0x0F, 4 | 6);
    (send_invalidate && h.mo != 0).then_some(h.inv_stag)
}

impl World<'_> {
    /// Which known bug explains a case that did not settle: [`KB_READ`] streaming what a
    /// refused Read Request asked for (up to 4 GiB), or [`KB_INV`] having invalidated the
    /// probe's MR (the probe QP then sends a Terminate for it).
    fn known_stall(&self) -> Option<&'static str> {
        let sent = self.peer.sent();
        let refused_read_answered = sent.iter().any(|(fpdu, conn)| {
            let Some(DdpHeader::Tagged(h)) =
                loose_segment(fpdu).filter(|s| s.opcode == Opcode::ReadResponse).map(|s| s.ddp)
            else {
                return false;
            };
            self.case_read_requests().any(|(qi, r)| {
                *conn == u64::from(conn_id(qi))
                    && r.sink_stag == h.stag
                    && h.to.wrapping_sub(r.sink_to) <= r.size.into()
                    && !self.passes(self.qps[qi].spec.pd, r.src_stag, r.src_to, r.size.into(), RR)
            })
        });
        let probe_terminated = sent.iter().any(|(fpdu, conn)| {
            *conn == u64::from(PROBE_CONN) && loose_segment(fpdu).is_some_and(|s| s.opcode == Opcode::Terminate)
        });
        let names_probe = |stag: u32| (stag >> 8) & 0xFF == self.probe_mr.index();
        let probe_invalidated = self.packets.iter().any(|p| later_invalidate_stag(&p.ulpdu).is_some_and(names_probe));
        if refused_read_answered {
            Some(KB_READ)
        } else {
            (probe_terminated && probe_invalidated).then_some(KB_INV)
        }
    }

    /// Whether the case sent QP `qi` a later segment of a Send with Invalidate naming
    /// `stag`: the signature of [`KB_INV`].
    fn later_segment_invalidates(&self, qi: usize, stag: u32) -> bool {
        self.packets.iter().any(|p| p.target == Target::Fuzz(qi) && later_invalidate_stag(&p.ulpdu) == Some(stag))
    }
}

// ---- Epochs and the fuzz test ------------------------------------------------------------

/// Prints the running case's log if a panic unwinds through it (a driver error, a bus
/// model's rule, the simulator).
struct OnPanic(Rc<RefCell<String>>);

impl Drop for OnPanic {
    fn drop(&mut self) {
        if std::thread::panicking() {
            eprintln!("\n==== panic during the fuzz case below ====\n{}", self.0.borrow());
        }
    }
}

/// The IOVAs of a QP's SQ and RQ rings.
fn rings(qp: &QueuePair<SimHal>, caps: &QpCaps) -> [Range; 2] {
    let (ctx, _) = qp.query().expect("QUERY_QP");
    [
        Range::new(ctx.sq_base, (SQ_WQE_SLOT_LEN << caps.sq_log_size) as u64, "SQ ring"),
        Range::new(ctx.rq_base, (RQ_WQE_LEN << caps.rq_log_size) as u64, "RQ ring"),
    ]
}

fn cq_ring(dev: &Device<SimHal>, cq: &CompletionQueue<SimHal>) -> Range {
    let (ctx, _) = dev.query_cq(cq.cqn()).expect("QUERY_CQ");
    Range::new(ctx.base, (CQE_LEN << ctx.log_size) as u64, "CQ ring")
}

/// One epoch: a fresh device, set up, `n` cases from `start`. Returns where the next epoch
/// starts (earlier than `start + n` if the device was done for).
fn run_epoch(s: Settings, knobs: Knobs, start: u64, n: u64, stats: &mut Stats) -> Result<u64, String> {
    let mut erng = case_rng(s.seed, start, SALT_EPOCH);
    let (dev, peer, activity) = watched_device();
    let latencies = [1, 4, 16, 64];
    let (rl, wl) = (latencies[erng.gen_range(0..4)], latencies[erng.gen_range(0..4)]);
    let (ready, valid) =
        if erng.gen_range(0..10) < 7 { (1.0, 1.0) } else { (erng.gen_range(0.3..1.0), erng.gen_range(0.3..1.0)) };
    let ready = knobs.dma_ready.unwrap_or(ready);
    dev.hal()
        .with_dma_timing(|t| (t.read_latency, t.write_latency, t.ready_rate, t.valid_rate) = (rl, wl, ready, valid));
    let seed = s.seed;
    let log = format!(
        "epoch from case {start} of seed {seed:#x}: DMA latencies {rl}/{wl}, ready {ready:.2}, valid {valid:.2}\n"
    );
    let log = Rc::new(RefCell::new(log));
    let _on_panic = OnPanic(Rc::clone(&log));

    let pds: Vec<ProtectionDomain<SimHal>> = (0..3).map(|_| ProtectionDomain::new(&dev).expect("PD")).collect();
    let arena = dev.alloc_dma(ARENA).expect("DMA");
    arena.write_bytes(0, &random_octets(&mut erng, ARENA));
    let dm: Vec<DeviceMemory<SimHal>> = DM_PIECES.iter().map(|&l| dev.alloc_device_memory(l).expect("DM")).collect();
    for piece in &dm {
        piece.write_bytes(0, &random_octets(&mut erng, piece.len())).expect("DM");
    }
    let cq = CompletionQueue::new(&dev, 8, 0).expect("CQ");
    let probe_buf = dev.alloc_dma(64).expect("DMA");
    let probe_mr = MemoryRegion::register(&pds[PD_PROBE], &probe_buf, access(RW)).expect("MR");
    let probe_caps = QpCaps { ird: 0, ord: 0, conn_id: PROBE_CONN, ..QpCaps::default() };
    let mut probe_qp = QueuePair::new(&dev, &pds[PD_PROBE], &cq, &cq, probe_caps).expect("QP");
    probe_qp.ready().expect("RTS");
    let reset_caps = caps(&QP_SPECS[2], RESET_QP_CONN);
    let reset_qp = QueuePair::new(&dev, &pds[PD_B], &cq, &cq, reset_caps).expect("QP");
    let mut always = Allowed::default();
    always.writes.extend([cq_ring(&dev, &cq), Range::new(probe_mr.va(), 64, "probe")]);
    always.reads.extend(rings(&probe_qp, &probe_caps).into_iter().chain(rings(&reset_qp, &reset_caps)));

    let mut world = World {
        dev: &dev,
        peer: &peer,
        activity: &activity,
        pds: &pds,
        arena: &arena,
        dm: &dm,
        cq: &cq,
        probe_buf: &probe_buf,
        probe_mr,
        probe_qp,
        reset_qp,
        mrs: Vec::new(),
        stale: Vec::new(),
        qps: Vec::new(),
        flushing: Vec::new(),
        next_wr_id: 0,
        always,
        shadow: Vec::new(),
        probe_shadow: vec![0; 64],
        faults_seen: 0,
        mode: Mode::Framed,
        packets: Vec::new(),
        probe_fpdu: Vec::new(),
        terminated: Vec::new(),
        overlong_terminated: false,
        log: Rc::clone(&log),
        stats,
        settings: s,
        knobs,
    };
    for spec in &MR_SPECS {
        let mr = world.register(spec)?;
        world.mrs.push(mr);
    }
    for (i, spec) in QP_SPECS.iter().enumerate() {
        let caps = caps(spec, conn_id(i));
        let mut qp = QueuePair::new(&dev, &pds[spec.pd], &cq, &cq, caps).expect("QP");
        qp.ready().expect("RTS");
        world.always.reads.extend(rings(&qp, &caps));
        let framer = Framer::new(FramingConfig { markers: spec.markers, crc: spec.crc });
        let (recvs, outstanding) = (VecDeque::new(), VecDeque::new());
        world.qps.push(FuzzQp { spec: *spec, qp, framer, msn: [1; 4], recvs, outstanding });
        world.post_receives(i, &mut erng)?;
    }
    world.shadow = world.image()?;
    let full_dm_before = ((start - s.first) / EPOCH_CASES).is_multiple_of(FULL_DM_EVERY).then(|| world.dm_full_now());
    // Everything the setup did is allowed.
    dev.hal().run_idle(IDLE_CYCLES);
    dev.hal().with_memory(|m| m.take_accesses());
    world.stats.count("harness/epochs", 1);

    let mut next = start + n;
    for index in start..start + n {
        let reproduce =
            format!("RNIC_FUZZ_SEED={seed:#x} RNIC_FUZZ_FIRST={start} RNIC_FUZZ_CASES={}", index - start + 1);
        if !s.verbose {
            // Keep the epoch's setup line, drop older cases.
            let mut l = log.borrow_mut();
            let keep = l.find("\ncase ").map_or(l.len(), |i| i + 1);
            l.truncate(keep);
        }
        let result = world.run_case(index, index + 1 == start + EPOCH_CASES, &reproduce);
        if s.verbose {
            eprint!("{}", log.borrow());
            log.borrow_mut().clear();
        }
        match result {
            Err(e) => {
                let log = log.borrow();
                let case = format!("seed {seed:#x}, case {index}; reproduce with {reproduce}");
                return Err(format!("{e}\n\n{case}\n\nwhat the epoch did (this case in full):\n{log}"));
            }
            Ok(true) => {
                next = index + 1;
                break;
            }
            Ok(false) => {}
        }
    }
    if let Some(before) = full_dm_before {
        // Outside the MR and guard pieces nothing may have changed; the pieces were checked
        // after every case.
        let (base, now) = (dev.info().dm_base, world.dm_full_now());
        let in_piece = |iova: u64| dm.iter().any(|p| iova.wrapping_sub(p.iova()) < p.len() as u64);
        if let Some(i) = (0..before.len()).find(|&i| before[i] != now[i] && !in_piece(base + i as u64)) {
            let (was, is) = (before[i], now[i]);
            return Err(format!(
                "device memory octet {i}, outside every MR and guard piece, changed {was:#04x} -> {is:#04x} \
                 during the epoch from case {start} (seed {seed:#x})"
            ));
        }
        world.stats.count("harness/full device memory scans", 1);
    }
    Ok(next)
}

fn fuzz(s: Settings, knobs: Knobs) -> Result<Stats, String> {
    let (mut stats, t) = (Stats::default(), Instant::now());
    let (mut start, end, mut report_at) = (s.first, s.first + s.cases, s.first + 50_000);
    while start < end {
        start = run_epoch(s, knobs, start, EPOCH_CASES.min(end - start), &mut stats)?;
        if start >= report_at {
            eprintln!("rx fuzz: {} cases done in {:.0?}", start - s.first, t.elapsed());
            report_at += 50_000;
        }
    }
    Ok(stats)
}

#[test]
fn rx_fuzz_random_and_mutated_fpdu_streams() {
    let (s, t) = (settings(CI_CASES), Instant::now());
    eprintln!("rx fuzz: {} cases from {} of seed {:#x}", s.cases, s.first, s.seed);
    match fuzz(s, Knobs::default()) {
        Ok(stats) => eprintln!("rx fuzz: all checks passed in {:.1?}\n{}", t.elapsed(), stats.summary()),
        Err(report) => panic!("rx fuzz FAILED after {:.1?}:\n{report}", t.elapsed()),
    }
}

// ---- CRC: one flipped bit anywhere in an FPDU --------------------------------------------

/// One case of the CRC test (module docs): a fresh device with one CRC QP, a few good
/// Writes, a Write with one bit flipped, a good Write after it.
fn crc_case(s: Settings, index: u64, stats: &mut Stats) -> Result<(), String> {
    let mut rng = case_rng(s.seed, index, SALT_CRC);
    let (markers, control) = (rng.gen_bool(0.25), rng.gen_range(0..20) == 0);
    let (dev, peer, activity) = watched_device();
    let pd = ProtectionDomain::new(&dev).expect("PD");
    let buf = dev.alloc_dma(4096).expect("DMA");
    let mut expected = random_octets(&mut rng, 4096);
    buf.write_bytes(0, &expected);
    let mr = MemoryRegion::register(&pd, &buf, access(RW)).expect("MR");
    let cq = CompletionQueue::new(&dev, 4, 0).expect("CQ");
    let mut qp = QueuePair::new(&dev, &pd, &cq, &cq, QpCaps { markers_rx: markers, conn_id: 7, ..QpCaps::default() })
        .expect("QP");
    qp.ready().expect("RTS");
    dev.hal().run_idle(IDLE_CYCLES);
    dev.hal().with_memory(|m| m.take_accesses());

    let mut framer = Framer::new(FramingConfig { markers, crc: true });
    // A Write of `len` random octets to `at`: its FPDU, payload and where ULPDU_Length is.
    let mut write = |rng: &mut StdRng, at: usize, len: usize| {
        let length_at = if markers && framer.position().is_multiple_of(512) { 4 } else { 0 };
        let (payload, mut fpdu) = (random_octets(rng, len), Vec::new());
        framer.frame(&Segment::write(mr.rkey(), mr.va() + at as u64, &payload).to_vec(), &mut fpdu).expect("frame");
        (fpdu, payload, length_at)
    };
    let mut log = format!("CRC case {index} (seed {:#x}): markers {markers}, control {control}\n", s.seed);
    let mut stream = Vec::new();
    for _ in 0..rng.gen_range(0..=2) {
        let (at, len) = (rng.gen_range(0..128) * 8, rng.gen_range(1..=64));
        let (fpdu, payload, _) = write(&mut rng, at, len);
        expected[at..at + len].copy_from_slice(&payload);
        stream.push(fpdu);
    }
    let (victim_at, victim_len) = (1024 + rng.gen_range(0..512), rng.gen_range(1..=300));
    let (mut fpdu, payload, length_at) = write(&mut rng, victim_at, victim_len);
    let (after, after_payload, _) = write(&mut rng, 3072, 8);
    let ulpdu_length = |f: &[u8]| usize::from(u16::from_be_bytes([f[length_at], f[length_at + 1]]));
    let (old, n) = (ulpdu_length(&fpdu), fpdu.len());
    let mut filler = 0;
    if control {
        expected[victim_at..victim_at + victim_len].copy_from_slice(&payload);
        expected[3072..3080].copy_from_slice(&after_payload);
        stats.count("flips/none (controls)", 1);
    } else {
        // Seven flips in ten anywhere; the others in ULPDU_Length, the CRC field or the
        // headers, which a uniform pick seldom hits in longer FPDUs.
        let (bit, aim) = match rng.gen_range(0..10) {
            0..=6 => (rng.gen_range(0..n * 8), "anywhere"),
            7 => (8 * length_at + rng.gen_range(0..16), "ULPDU_Length"),
            8 => (8 * (n - 4) + rng.gen_range(0..32), "CRC field"),
            _ => (8 * (length_at + 2) + rng.gen_range(0..14 * 8), "headers"),
        };
        fpdu[bit / 8] ^= 1 << (bit % 8);
        stats.count(format!("flips/{aim}"), 1);
        let new = ulpdu_length(&fpdu);
        let _ = writeln!(log, "  flipped bit {bit} ({aim}); ULPDU_Length {old} -> {new}");
        if new > old {
            // The receiver now waits for a longer FPDU (perhaps longer than the RX buffer):
            // give it the octets (and room for the markers among them) so that it reaches
            // the CRC.
            filler = (new - old) + 4 * (new - old).div_ceil(512) + 16;
            stats.count("flips/longer ULPDU_Length completed with filler", 1);
            if new > RX_BUFFER_OCTETS {
                stats.count("flips/longer than the RX buffer", 1);
            }
        }
    }
    stream.extend([fpdu, vec![0; filler], after]);
    stream.retain(|octets| !octets.is_empty());
    for octets in &stream {
        let _ = writeln!(log, "  -> {}", hex(octets));
        peer.send(octets, qp.qpn().into());
    }
    let octets: usize = stream.iter().map(Vec::len).sum();
    let fail = |what: String| Err(format!("{what}\n{log}"));
    if let Err(e) = settle(&dev, &peer, &activity, 20_000 + 4 * octets as u64, IDLE_CYCLES_NO_PROBE, || true) {
        return fail(e);
    }
    let (faults, accesses) = dev.hal().with_memory(|m| (m.faults().to_vec(), m.take_accesses()));
    let mut now = vec![0; 4096];
    buf.read_bytes(0, &mut now);
    let mr_range = Range::new(mr.va(), mr.len(), "MR");
    if let Some(f) = faults.first() {
        return fail(format!("IOMMU FAULT: {f}"));
    }
    if let Some(at) = (0..4096).find(|&i| now[i] != expected[i]) {
        let what = if control {
            "a good FPDU was not placed as sent"
        } else {
            "something of the flipped FPDU or after it was PLACED"
        };
        return fail(format!("{what}: octet {at} is {:#04x}, expected {:#04x}", now[at], expected[at]));
    }
    if let Some(a) = accesses.iter().find(|a| a.dir == Dir::Write && !mr_range.covers(a.iova, a.len as u64)) {
        return fail(format!("a DMA write outside the MR: {a:?}"));
    }
    if let Some(c) = cq.poll().map_err(|e| e.to_string())? {
        return fail(format!("a completion for Writes: {c:?}"));
    }
    let mut terminates = 0;
    for (f, conn) in peer.take_sent() {
        match parse_fpdu(&f, true).map(|seg| seg.header) {
            Ok(RdmapHeader::Terminate(t)) if !control && t.code.layer == TermCode::LAYER_LLP => terminates += 1,
            _ => {
                return fail(format!(
                    "the device sent conn {conn}: {} (only an MPA Terminate may follow a CRC error)",
                    hex(&f)
                ))
            }
        }
    }
    // MPA-08: a caught flip fails the stream with exactly one Terminate.
    match (terminates, control) {
        (0, true) => {}
        (1, false) => stats.count("device/MPA Terminates sent", 1),
        (n, _) => return fail(format!("{n} MPA Terminates sent")),
    }
    match (qp.query().map_err(|e| e.to_string())?.0.state, control) {
        (QpState::Rts, _) => {}
        (QpState::Error, false) => stats.count("device/QPs in ERROR after", 1),
        (state, _) => return fail(format!("the QP is in {state:?} after the case")),
    }
    stats.cases += 1;
    Ok(())
}

#[test]
fn crc_one_flipped_bit_anywhere_in_an_fpdu_is_caught_and_places_nothing() {
    let (s, t, mut stats) = (settings(CRC_CASES), Instant::now(), Stats::default());
    for index in s.first..s.first + s.cases {
        if let Err(report) = crc_case(s, index, &mut stats) {
            let seed = s.seed;
            let reproduce = format!("RNIC_FUZZ_SEED={seed:#x} RNIC_FUZZ_FIRST={index} RNIC_FUZZ_CASES=1");
            panic!("CRC test FAILED in case {index}: {report}\nreproduce with {reproduce}");
        }
    }
    eprintln!(
        "CRC test: every flip caught with one MPA Terminate, nothing placed from it or after it, in {:.1?}\n{}",
        t.elapsed(),
        stats.summary()
    );
    let controls = stats.counts.get("flips/none (controls)").copied().unwrap_or(0);
    assert!(s.cases < 100 || (controls > 0 && stats.cases > controls), "both flips and controls ran");
}

// ---- The harness's own checks: each knob blinds it to something, and it must notice ------

/// Runs a short fuzz with `knobs` and returns its report, which must exist.
fn fuzz_must_fail(knobs: Knobs, cases: u64) -> String {
    match fuzz(Settings { seed: BASE_SEED, cases, ..Settings::default() }, knobs) {
        Ok(stats) => panic!("the harness noticed nothing with {knobs:?}:\n{}", stats.summary()),
        Err(report) => {
            let case = report.lines().find(|l| l.starts_with("seed ")).unwrap_or_default();
            eprintln!("with {knobs:?} the harness reports: {}\n  ({case})", report.lines().next().unwrap_or_default());
            report
        }
    }
}

#[test]
fn harness_self_test_writes_to_receive_buffers_it_forgot_are_caught() {
    let report = fuzz_must_fail(Knobs { forget_receives: true, ..Knobs::default() }, 2_000);
    let first = report.lines().next().unwrap_or_default();
    assert!(first.contains("OUTSIDE") && (first.contains("A_recv") || first.contains("B_recv")), "{report}");
}

#[test]
fn harness_self_test_a_dma_bus_that_never_takes_a_write_is_a_hang() {
    let report = fuzz_must_fail(Knobs { dma_ready: Some(0.0), ..Knobs::default() }, 10);
    assert!(report.starts_with("HANG"), "{report}");
}

#[test]
fn harness_self_test_a_probe_placed_after_a_corruption_that_was_not_one_is_caught() {
    let report = fuzz_must_fail(Knobs { wire_without_corruption: true, ..Knobs::default() }, 2 * EPOCH_CASES);
    assert!(report.contains("PLACED after an FPDU corrupted"), "{report}");
}
