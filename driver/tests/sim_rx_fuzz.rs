//! A fuzz harness on the receive path of one `rnic_top` (Verilated), fed by a raw peer on
//! its streams, with an exact oracle: every case is also run through the reference model
//! (`rnic_proto::model`), which predicts every octet of memory, every FPDU the device
//! sends and every completion, and the harness compares all of it after every case. The
//! RX error paths it found broken are pinned down in `sim_errors.rs`.
//!
//! **Cases.** 1 to 6 FPDUs, mostly to one of four QPs (PD A with CRC; PD A with CRC and
//! receive markers; PD B with CRC; PD A with markers and no CRC), a few to a QP in RESET
//! (CRC, no markers) or a QP number nobody has (neither)
//! nobody has. Segments start out valid for the model's view of each QP (MSNs, posted
//! receives, the Reads and atomics it had the device send): Writes, Sends (multi-segment,
//! SE, Invalidate), Immediate Data, Read and Atomic Requests and Responses, Terminates,
//! random octets, with STags and TOs drawn around the MRs (in bounds, just past, below,
//! wrapping, other PD, missing right, stale key, random). Most cases then mutate ULPDUs
//! before framing (bit flips, header fields, opcode, truncation, extension, splices,
//! swapped or duplicated FPDUs), so the DDP/RDMAP checks are what is exercised. One case in
//! sixteen corrupts an FPDU after framing instead (bit flips, truncation, a rewritten
//! ULPDU_Length, splices, garbage appended, a zeroed CRC field), on a QP with or without
//! CRC; one in fifty sends a well-framed Write longer than the RX buffer holds (up to 64
//! KiB). Packets stay one per FPDU *as sent*: a corrupted one is a packet out of step with
//! the FPDU its ULPDU_Length announces, which the device must catch too.
//!
//! **The oracle.** The harness sets the model up from its own description of the device
//! (MR, QP and CQ contexts from the layout below and the numbers the driver gave out,
//! never read back from the device), makes itself each fuzzed QP's peer
//! (`Fabric::connect_external`), and hands it every packet the device gets, in order: a
//! per-QP `Deframer::pop_packet` (the packet contract of `rnic_top`) gives the ULPDU or
//! the MPA error, a ULPDU longer than the RX buffer is MPA error 0x05, and the model takes
//! the ULPDU (`Fabric::deliver`) or the failure (`Fabric::deliver_mpa_error`). A Read or
//! Atomic Request is followed by a pause until the device is quiet: RDMAP-18 and ATOM-14
//! let a Read Response or an atomic's result see placements that came after the request,
//! which the model, taking one ULPDU at a time, does not; with the pause every case is
//! predictable, and no case falls back to a weaker check.
//!
//! **Checks after every case.**
//! - *Memory*: the MRs (both PDs, every combination of rights, empty, across a page,
//!   overlapping another PD's, at both ends of a 16 KiB host buffer before the IOMMU's
//!   unmapped guard pages, two in device memory) lie among guard zones; every octet of the
//!   host buffer, of the device memory pieces and of the probe's buffer must be what the
//!   model holds. Every DMA access must lie in those regions or the rings, and an IOMMU
//!   fault fails the case; every eighth epoch all 32 KiB of device memory are compared.
//! - *What the device sends*: every FPDU well framed (its QP's CRC setting, no markers),
//!   and each QP's Terminates, Read Responses and Atomic Responses, octet for octet and in
//!   order, those the model sent; the Read and Atomic Requests it sends for the harness's
//!   posts too.
//! - *Completions*: every CQE, all of its fields, per QP and queue in the model's order
//!   (`Cq::check`).
//! - *QP states*: each fuzzed QP's state and first Terminate (code, sent or received) as
//!   QUERY_QP reports them, against the model's.
//! - *Progress*: a probe Write on a QP of a PD the fuzzer never addresses follows each case.
//!   The RX path is in order, so the device must place it, take the stream and go quiet
//!   within 60 000 cycles plus 4 per octet, never holding `tready` low for 5 000 cycles,
//!   whatever the case did to the other QPs (one connection's failure is its own).
//! - *No panic*: bus model rules, driver errors.
//!
//! Each QP in ERROR then goes RESET → RTS with fresh receives, in the device and in the
//! model, and invalidated MRs are registered again (their old STags become stale keys).
//!
//! **The CRC test**: 10 000 fresh devices with one CRC QP (markers a quarter of the time):
//! up to two good Writes, a Write with one bit flipped (anywhere, or aimed at ULPDU_Length,
//! the CRC field or the headers), a good Write, each its own packet. The flipped FPDU is
//! dropped whole and nothing after it is delivered on that QP (MPA-08, MPA-25): only the
//! Writes before it are placed, the stream is still taken, no completion, no fault, and
//! the device sends exactly the Terminate `Deframer::pop_packet` calls for: 0x20020000
//! for a CRC error, 0x20050000 where the flip made ULPDU_Length announce a longer or
//! shorter FPDU than its packet. One case in twenty flips nothing and must place
//! everything.
//!
//! **Running it.** The default run (20 000 fuzz cases in two tests of half each, 10 000
//! CRC cases, self-tests showing the checks can fail) takes about two minutes of CPU in release, on two cores. A failure
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
//! packets, a long FPDU deadlocked the receive path), a bad FPDU's failure overtaking the
//! good ULPDUs before it, and the receive a failing Send claimed never completing.
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
    CompletionQueue, Device, DeviceMemory, DmaBuffer, DriverError, Hal, MemoryRegion, MrAccess, ProtectionDomain,
    QpCaps, QpState, QueuePair, RecvRequest, RemoteBuf, Sge, WorkRequest,
};
use rnic_proto::host::context::{CqContext, MrContext};
use rnic_proto::host::desc::{Cqe, CqeOpcode};
use rnic_proto::host::regs;
use rnic_proto::model::{Fabric, RnicConfig, Side, TxLog};
use rnic_proto::mpa::{crc32c, crc_field, pad_len, Deframer, Framer, FramingConfig};
use rnic_proto::rdmap::{parse_ulpdu, AtomicRequest, AtomicResponse, Opcode, RdmapHeader, ReadRequest, Segment};
use rnic_proto::terminate::{TermCode, Terminate, TerminatedDdpHeader};
use rnic_sim::host_memory::{Access, Dir};

use common::workload::qp_context;

// ---- Settings and randomness -------------------------------------------------------------

/// The default seed ("RXFUZZ").
const BASE_SEED: u64 = 0x5258_4655_5A5A;
/// Cases of the fuzz test and of the CRC test in the normal test run.
const CI_CASES: u64 = 20_000;
const CRC_CASES: u64 = 10_000;
/// Cases on one device.
const EPOCH_CASES: u64 = 64;
/// Every this many epochs all of device memory is compared, not only its MR and guard pieces.
const FULL_DM_EVERY: u64 = 8;
/// The largest ULPDU the RX buffer holds: a longer one fails its QP with 2/0/0x05.
const RX_BUFFER_OCTETS: usize = 16_384;
/// A stream beat not taken for this many cycles is a hang.
const RX_STALL_CYCLES: u64 = 5_000;
/// Cycles without bus or TX activity that make the device quiescent.
const IDLE_CYCLES: u64 = 128;
const IDLE_CYCLES_NO_PROBE: u64 = 400;
/// The model is side A; nothing is connected to it but the harness.
const DEVICE: Side = Side::A;

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

/// The first octets of a long FPDU, for the log.
fn hex_short(bytes: &[u8]) -> String {
    match bytes.len() {
        0..=160 => hex(bytes),
        n => format!("{}… ({n} octets)", hex(&bytes[..160])),
    }
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
/// Octets of the probe's buffer.
const PROBE_OCTETS: usize = 64;

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
    qp_spec(PD_A, false, true, 128, 0, 4, (MR_A_RECV, 1024)),
];
/// Octets of a QP's area in its receive MR.
const RECV_AREA: u64 = 512;
/// Receives kept posted on each QP.
const RECVS_POSTED: usize = 4;
/// Every QP's rings have 16 slots; the CQ has 256.
const RING_LOG_SIZE: u8 = 4;
const CQ_LOG_SIZE: u8 = 8;

/// The CONN_ID (the device's TX `tuser`) of fuzzed QP `i`, of the RESET QP and of the probe QP.
fn conn_id(i: usize) -> u16 {
    100 + i as u16
}
const RESET_QP_CONN: u16 = 150;
const PROBE_CONN: u16 = 160;

fn caps(spec: &QpSpec, conn_id: u16) -> QpCaps {
    let QpSpec { mulpdu, ird, ord, crc, markers, .. } = *spec;
    QpCaps {
        sq_log_size: RING_LOG_SIZE,
        rq_log_size: RING_LOG_SIZE,
        mulpdu,
        ird,
        ord,
        crc,
        markers_tx: false,
        markers_rx: markers,
        conn_id,
    }
}

// ---- What the harness knows --------------------------------------------------------------

/// A registered MR as the harness sees it.
struct Mr<'a> {
    spec: &'static MrSpec,
    mr: Option<MemoryRegion<'a, SimHal>>,
    stag: u32,
    va: u64,
    len: u64,
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

    fn index(&self) -> u32 {
        self.stag >> 8
    }

    /// The context the driver writes for it (IOVA = VA, as the driver registers).
    fn context(&self, pdn: u16, valid: bool) -> MrContext {
        let (key, access, va, length) = (self.stag as u8, access(self.spec.3), self.va, self.len);
        MrContext { key, access, valid, pd: pdn, va, length, iova: va }
    }
}

/// A Read or atomic the harness posted and the device sent.
#[derive(Clone, Copy, Debug)]
struct Outstanding {
    wr_id: u64,
    /// The Read Request, or `None` for an atomic (with its Request Identifier).
    read: Option<ReadRequest>,
    atomic_id: u32,
}

struct FuzzQp<'a> {
    spec: QpSpec,
    caps: QpCaps,
    qp: QueuePair<'a, SimHal>,
    /// Frames what the harness sends it (its stream position).
    framer: Framer,
    /// The device's view of its stream: one packet per FPDU.
    deframer: Deframer,
    recvs: VecDeque<RecvRequest>,
    outstanding: VecDeque<Outstanding>,
    /// How much of the model's transmit log the device's was compared with.
    tx_seen: TxLog,
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
    /// An FPDU of the primary QP is corrupted after framing: with CRC the MPA receiver
    /// must catch it, without CRC a changed length puts the packet out of step.
    Wire,
    /// A Write of the primary QP longer than the RX buffer holds, framed correctly: it
    /// cannot be checked, so it must fail its QP (2/0/0x05) and place nothing.
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

/// IOVAs a case may touch.
#[derive(Clone, Copy)]
struct Range {
    what: &'static str,
    start: u64,
    end: u64,
}

impl Range {
    fn new(start: u64, len: u64, what: &'static str) -> Range {
        Range { what, start, end: start + len }
    }

    fn covers(&self, at: u64, len: u64) -> bool {
        at >= self.start && at.saturating_add(len) <= self.end
    }
}

impl std::fmt::Debug for Range {
    fn fmt(&self, f: &mut std::fmt::Formatter) -> std::fmt::Result {
        write!(f, "{} {:#x}..{:#x}", self.what, self.start, self.end)
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
        let mut s = format!("{} cases, every one predicted exactly by the reference model", self.cases);
        for (group, items) in groups {
            let _ = write!(s, "\n  {group}: {}", items.join(", "));
        }
        s
    }
}

/// Knobs for the harness's own tests: each makes the oracle wrong or the device stuck in
/// one way, and the harness must notice.
#[derive(Clone, Copy, Default, Debug)]
struct Knobs {
    /// Force the DMA slave's ready rate (0: it never takes a write).
    dma_ready: Option<f64>,
    /// The model places every RDMA Write 8 octets past its TO.
    model_writes_off_by_8: bool,
    /// The model's Terminates are not expected.
    model_sends_no_terminates: bool,
    /// The model's completions of receives are not expected.
    model_completes_no_receives: bool,
    /// Run the random-reset `rnic_top` (`rnic_top_x`), each epoch's device from this seed
    /// plus the epoch's first case.
    random_reset: Option<u64>,
}

/// Host memory (the arena), the device memory pieces and the probe's buffer, as (IOVA,
/// octets).
type Image = Vec<(u64, Vec<u8>)>;

// ---- The device, waiting on it, reading what it sends ------------------------------------

/// One `rnic_top` against a raw peer, whose IOMMU records faults instead of panicking and
/// whose host memory logs every DMA access; and the cycle it last did anything outside (a
/// beat taken on RX or offered on TX, a valid on a DMA channel).
fn watched_device(random_reset: Option<u64>) -> (Device<SimHal>, RawPeer, Rc<Cell<u64>>) {
    let (dev, peer) = match random_reset {
        Some(seed) => common::raw_device_random_reset(seed),
        None => common::raw_device(),
    };
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
            let first: Vec<String> = sent.iter().take(4).map(|(f, c)| format!("conn {c}: {}", hex_short(f))).collect();
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

/// The ULPDU in an FPDU the device sent, or why it is not a well-framed one (no markers;
/// ULPDU_Length, PAD, the CRC field of its QP's setting, zero without CRC).
fn ulpdu_in(fpdu: &[u8], crc: bool) -> Result<&[u8], String> {
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
    Ok(&fpdu[2..2 + len])
}

/// The first place two transmit logs differ, class by class, in order.
fn tx_difference(device: &TxLog, model: &TxLog) -> Option<String> {
    let classes = [
        ("request", &device.requests, &model.requests),
        ("Read Response", &device.read_responses, &model.read_responses),
        ("Atomic Response", &device.atomic_responses, &model.atomic_responses),
        ("Terminate", &device.terminates, &model.terminates),
    ];
    for (class, is, want) in classes {
        for i in 0..is.len().max(want.len()) {
            match (is.get(i), want.get(i)) {
                (Some(a), Some(b)) if a == b => {}
                (a, b) => {
                    let show = |u: Option<&Vec<u8>>| {
                        u.map_or("nothing".to_string(), |u| format!("{} = {}", hex_short(u), summary(u)))
                    };
                    return Some(format!("{class} {i}: the device sent {}, the model {}", show(a), show(b)));
                }
            }
        }
    }
    None
}

/// The part of `log` after what `seen` already covered, class by class.
fn tx_since(log: &TxLog, seen: &TxLog) -> TxLog {
    let rest = |all: &Vec<Vec<u8>>, old: &Vec<Vec<u8>>| all.get(old.len()..).unwrap_or_default().to_vec();
    TxLog {
        requests: rest(&log.requests, &seen.requests),
        read_responses: rest(&log.read_responses, &seen.read_responses),
        atomic_responses: rest(&log.atomic_responses, &seen.atomic_responses),
        terminates: rest(&log.terminates, &seen.terminates),
    }
}

/// Whether a ULPDU makes the device read memory for its answer (a Read or Atomic Request).
fn is_request(ulpdu: &[u8]) -> bool {
    parse_ulpdu(ulpdu).is_ok_and(|s| matches!(s.opcode, Opcode::ReadRequest | Opcode::AtomicRequest))
}

// ---- The world of an epoch: one device, its model, and what the harness knows ------------

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
    next_wr_id: u64,
    /// The reference model: side A is this device.
    model: Fabric,
    /// Every CQE the device wrote this epoch, in order.
    cqes: Vec<Cqe>,
    /// Where the device may read and write outside the data regions: the rings.
    rings: Vec<Range>,
    faults_seen: usize,
    /// The running case: its mode and packets.
    mode: Mode,
    packets: Vec<Packet>,
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

    fn model_mr_valid(&self, m: &Mr) -> bool {
        self.model.rnic(DEVICE).mrs()[m.index() as usize].valid
    }

    /// Registers an MR of the layout with the driver, and its context with the model.
    fn register(&mut self, spec: &'static MrSpec) -> CaseResult<Mr<'a>> {
        let (pd, rights) = (&self.pds[spec.1], access(spec.3));
        let mr = match spec.2 {
            Place::Host(offset, len) => MemoryRegion::register_range(pd, self.arena, offset, len, rights),
            Place::Dm(piece) => MemoryRegion::register_device(pd, &self.dm[piece], rights),
        }
        .map_err(|e| format!("registering {}: {e}", spec.0))?;
        let (stag, va, len) = (mr.rkey(), mr.va(), mr.len());
        let m = Mr { spec, mr: Some(mr), stag, va, len };
        let ctx = m.context(pd.pdn(), true);
        self.model.rnic_mut(DEVICE).write_mr(m.index(), &ctx).map_err(|e| format!("model WRITE_MR: {e:?}"))?;
        Ok(m)
    }

    /// The data regions as the device holds them.
    fn image(&self) -> CaseResult<Image> {
        let mut arena = vec![0; ARENA];
        self.arena.read_bytes(0, &mut arena);
        let mut image = vec![(self.arena.iova(), arena)];
        for piece in self.dm {
            let mut octets = vec![0; piece.len()];
            piece.read_bytes(0, &mut octets).map_err(|e| format!("reading device memory: {e}"))?;
            image.push((piece.iova(), octets));
        }
        let mut probe = vec![0; PROBE_OCTETS];
        self.probe_buf.read_bytes(0, &mut probe);
        image.push((self.probe_buf.iova(), probe));
        Ok(image)
    }

    /// The data regions as the model holds them.
    fn model_image(&self) -> Image {
        let regions = std::iter::once((self.arena.iova(), ARENA))
            .chain(self.dm.iter().map(|p| (p.iova(), p.len())))
            .chain([(self.probe_buf.iova(), PROBE_OCTETS)]);
        let mem = &self.model.rnic(DEVICE).mem;
        regions.map(|(iova, len)| (iova, mem.read(iova, len).expect("a model region").to_vec())).collect()
    }

    /// All of device memory, through BAR0.
    fn dm_full_now(&self) -> Vec<u8> {
        let words = self.dev.info().dm_size / 4;
        (0..words).flat_map(|w| self.dev.hal().read32(regs::DEVICE_MEMORY + 4 * w).to_le_bytes()).collect()
    }

    /// What lies at an IOVA, for reports.
    fn describe(&self, iova: u64) -> String {
        match self.mrs.iter().find(|m| m.contains(iova, 1)) {
            Some(m) => {
                let valid = if self.model_mr_valid(m) { "" } else { ", invalidated" };
                format!("in {} of PD {}{valid}", m.name(), m.pd())
            }
            None if iova.wrapping_sub(self.probe_buf.iova()) < PROBE_OCTETS as u64 => "the probe's buffer".into(),
            None => "guard zone".into(),
        }
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
                Ok(()) => {
                    let qpn = self.qps[qi].qp.qpn();
                    self.model.post_recv(DEVICE, qpn, recv.wqe()).map_err(|e| format!("model post_recv: {e}"))?;
                    self.qps[qi].recvs.push_back(recv);
                }
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

    /// Posts a Read or an atomic on `qi` (unless its ORD is used up, or another QP has one
    /// outstanding), in the device and the model, and checks the request the device sends
    /// for it against the model's.
    ///
    /// (One QP at a time: the SQ completions of all QPs leave the requester through one
    /// queue in WQE order, so a completion of one QP, a flushed Read say, would wait behind
    /// another QP's Read until that one's response came: later than the model, which
    /// orders completions per QP only, says. See ARCHITECTURE, "Completions in order".)
    fn post_request(&mut self, qi: usize, rng: &mut StdRng) -> CaseResult<()> {
        let spec = self.qps[qi].spec;
        let others_waiting = (0..self.qps.len()).any(|q| q != qi && !self.qps[q].outstanding.is_empty());
        if self.qps[qi].outstanding.len() >= usize::from(spec.ord) || others_waiting {
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
        note!(self, "  harness posts on QP {qi}: {wr:?}");
        match self.qps[qi].qp.post_send(&wr) {
            Ok(()) => {}
            // The driver checks local buffers itself: a bad one never reaches the RNIC.
            Err(
                DriverError::UnknownLkey { .. }
                | DriverError::WrongPd { .. }
                | DriverError::NoLocalWrite { .. }
                | DriverError::SgeOutOfBounds { .. },
            ) => return Ok(()),
            Err(e) => return Err(format!("posting {wr:?}: {e}")),
        }
        let qpn = self.qps[qi].qp.qpn();
        self.model.post_send(DEVICE, qpn, wr.wqe()).map_err(|e| format!("model post_send: {e}"))?;
        self.model.run().map_err(|e| format!("model run: {e}"))?;
        let before = self.peer.sent_count();
        common::run_until(self.dev, || self.peer.sent_count() > before);
        let read = |u: &[u8]| match parse_ulpdu(u).map(|s| s.header) {
            Ok(RdmapHeader::ReadRequest(r)) => Some(r),
            _ => None,
        };
        let atomic_id = |u: &[u8]| match parse_ulpdu(u).map(|s| s.header) {
            Ok(RdmapHeader::AtomicRequest(a)) => a.request_id,
            _ => 0,
        };
        let sent = self.peer.take_sent();
        if sent.is_empty() {
            return Err(format!("HANG: posting {wr:?} on QP {qi} made the device send nothing"));
        }
        self.check_tx_of(sent)?;
        let model_qp = self.model.rnic(DEVICE).qp(qpn).expect("model QP");
        if let Some(req) = model_qp.tx().requests.last().filter(|_| model_qp.state() == QpState::Rts) {
            let (read, atomic_id) = (read(req), atomic_id(req));
            self.qps[qi].outstanding.push_back(Outstanding { wr_id, read, atomic_id });
            self.stats.count("harness/Reads and atomics sent", 1);
        }
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
            0..=54 => pick(rng, &|m| m.pd() == pd && self.model_mr_valid(m) && m.has(rights)),
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

    /// The segments of one message for fuzzed QP `qi`: valid as far as the model's state
    /// goes, or deliberately random.
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

    /// The model's view of QP `qi`'s expected MSNs (QN 0, 1 and 3).
    fn model_msns(&self, qi: usize) -> [u32; 4] {
        let qp = self.model.rnic(DEVICE).qp(self.qps[qi].qp.qpn()).expect("model QP");
        let m = qp.msns();
        [m.recv, m.read_request_recv, 0, m.atomic_response_recv]
    }

    /// The packets of a case, mostly for `primary`.
    fn gen_packets(&mut self, rng: &mut StdRng, primary: usize) -> Vec<Packet> {
        let mut states: Vec<GenState> = (0..self.qps.len())
            .map(|qi| GenState { msn: self.model_msns(qi), recv_cursor: 0, read_resp: None })
            .collect();
        let mut packets = Vec::new();
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
            for ulpdu in self.gen_message(rng, qi, scratch.as_mut().unwrap_or(&mut states[qi])) {
                packets.push(Packet { target, ulpdu, fpdu: Vec::new(), length_at: 0, mutations: String::new() });
            }
        }
        packets
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
            // The RESET QP's context has CRCs on; a QP number nobody has reads as a zeroed
            // context (no CRC, no markers), whose CRC field is not looked at.
            _ => p.fpdu = common::frame(&p.ulpdu, p.target == Target::Reset || rng.gen_bool(0.5)),
        }
    }

    /// Corrupts one FPDU of `primary` after framing.
    fn corrupt_after_framing(&mut self, rng: &mut StdRng, packets: &mut [Packet], primary: usize) {
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
                90..=94 => {
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

    /// One case.
    fn run_case(&mut self, index: u64, reproduce: &str) -> CaseResult<()> {
        let mut rng = case_rng(self.settings.seed, index, SALT_CASE);
        let primary = weighted(&mut rng, &[(0, 30), (1, 25), (2, 25), (3, 20)]);
        self.mode = weighted(&mut rng, &[(Mode::Framed, 92), (Mode::Wire, 6), (Mode::Overlong, 2)]);
        let mode = self.mode;
        self.stats.count(format!("modes/{mode:?}"), 1);
        note!(self, "case {index} ({reproduce}): primary QP {primary} ({:?}), {mode:?}", self.qps[primary].spec);
        self.packets.clear();
        // With RNIC_TRACE set, the waveform keeps the last case only.
        self.dev.hal().with_model(|m| m.trace_restart());
        if rng.gen_bool(0.25) {
            self.post_request(primary, &mut rng)?;
        }
        let packets = self.build_case(&mut rng, primary);
        let octets: usize = packets.iter().map(|p| p.fpdu.len()).sum();
        self.stats.count("packets/sent", packets.len() as u64);
        self.stats.count("packets/octets", octets as u64);
        let bound = 60_000 + 4 * octets as u64;
        for p in packets {
            let request = self.model_packet(&p)?;
            self.send_packet(p);
            if request {
                // A pause until the device has answered: see the module docs.
                settle(self.dev, self.peer, self.activity, bound, IDLE_CYCLES_NO_PROBE, || true)?;
                self.stats.count("harness/pauses after a request", 1);
            }
        }
        // The probe, which the device must place whatever the case did to other QPs.
        let (slot, value) = self.send_probe(index)?;
        let placed = |w: &Self| {
            let mut now = [0; 8];
            w.probe_buf.read_bytes(slot, &mut now);
            now == value.to_le_bytes()
        };
        let cycles = settle(self.dev, self.peer, self.activity, bound, IDLE_CYCLES, || placed(self))?;
        self.stats.count("device/cycles", cycles);
        self.model.run().map_err(|e| format!("model run: {e}"))?;
        self.check_case()?;
        self.restore(&mut rng)?;
        self.stats.cases += 1;
        Ok(())
    }

    /// The case's packets: generated mostly for `primary`, mutated, framed, or corrupted
    /// after framing.
    fn build_case(&mut self, rng: &mut StdRng, primary: usize) -> Vec<Packet> {
        let mut packets = self.gen_packets(rng, primary);
        if self.mode == Mode::Framed && rng.gen_bool(0.65) {
            self.mutate_packets(rng, &mut packets);
        }
        if self.mode == Mode::Overlong {
            let first = packets.iter().position(|p| p.target == Target::Fuzz(primary));
            let p = &mut packets[first.expect("the primary has a packet")];
            let len = rng.gen_range(RX_BUFFER_OCTETS - 13..=usize::from(u16::MAX) - 14);
            p.ulpdu = self.gen_tagged(rng, self.qps[primary].spec.pd, Opcode::RdmaWrite, RW, len);
            p.mutations = "longer than the RX buffer".into();
        }
        for p in &mut packets {
            self.frame(p, rng);
        }
        if self.mode == Mode::Wire {
            self.corrupt_after_framing(rng, &mut packets, primary);
        }
        packets
    }

    /// Hands the model what the device makes of a packet: for a fuzzed QP, the ULPDU its
    /// deframer finds or the MPA error (a ULPDU longer than the RX buffer is one too); a
    /// packet for a QP in RESET or one nobody has changes nothing. Returns whether the
    /// packet is a request whose answer reads memory.
    fn model_packet(&mut self, p: &Packet) -> CaseResult<bool> {
        let Target::Fuzz(qi) = p.target else { return Ok(false) };
        let qpn = self.qps[qi].qp.qpn();
        let Some(verdict) = self.qps[qi].deframer.pop_packet(&p.fpdu) else {
            // Its stream failed earlier in the case: the QP is in ERROR and drops it.
            return Ok(false);
        };
        let err = |e| format!("model: {e}");
        match verdict {
            Ok(ulpdu) if ulpdu.len() > RX_BUFFER_OCTETS => {
                self.stats.count("MPA errors/ULPDU longer than the RX buffer", 1);
                self.model.deliver_mpa_error(DEVICE, qpn, TermCode::MPA_LOCAL_CATASTROPHIC).map_err(err)?;
                Ok(false)
            }
            Ok(mut ulpdu) => {
                if self.knobs.model_writes_off_by_8 && ulpdu.len() >= 14 && ulpdu[0] & 0x80 != 0 && ulpdu[1] & 0x0F == 0
                {
                    let to = u64::from_be_bytes(ulpdu[6..14].try_into().expect("8 octets")).wrapping_add(8);
                    ulpdu[6..14].copy_from_slice(&to.to_be_bytes());
                }
                self.model.deliver(DEVICE, qpn, &ulpdu).map_err(err)?;
                Ok(is_request(&ulpdu))
            }
            Err(e) => {
                let code = e.term_code().expect("a receive error has a code");
                self.stats.count(format!("MPA errors/{code}"), 1);
                self.model.deliver_mpa_error(DEVICE, qpn, code).map_err(err)?;
                Ok(false)
            }
        }
    }

    /// Sends a packet (keeping it for the report).
    fn send_packet(&mut self, p: Packet) {
        let tuser = self.qpn_of(p.target);
        let (target, mutations, says) = (p.target, &p.mutations, summary(&p.ulpdu));
        note!(self, "  -> tuser {tuser:>2} {target:?} [{mutations}] {says}: {}", hex_short(&p.fpdu));
        self.peer.send(&p.fpdu, tuser);
        self.packets.push(p);
    }

    /// Sends the probe, a Write of a value unique to the case to one of 8 slots, to the
    /// device and the model; returns the slot's offset and the value.
    fn send_probe(&mut self, index: u64) -> CaseResult<(usize, u64)> {
        let (slot, value) = ((index % 8) as usize * 8, 0x9B0B_0000_0000_0000 | index);
        let to = self.probe_mr.va() + slot as u64;
        let ulpdu = Segment::write(self.probe_mr.rkey(), to, &value.to_le_bytes()).to_vec();
        self.peer.send(&common::frame(&ulpdu, true), self.probe_qp.qpn().into());
        self.model.deliver(DEVICE, self.probe_qp.qpn(), &ulpdu).map_err(|e| format!("model: {e}"))?;
        Ok((slot, value))
    }

    // ---- Checking a case -----------------------------------------------------------------

    /// Checks what the device did in the case against the model: its DMA accesses and
    /// IOMMU faults, memory, what it sent, its completions, its QPs' states.
    fn check_case(&mut self) -> CaseResult<()> {
        let (faults, accesses) =
            self.dev.hal().with_memory(|m| (m.faults()[self.faults_seen..].to_vec(), m.take_accesses()));
        self.faults_seen += faults.len();
        if let Some(f) = faults.first() {
            return Err(format!("IOMMU FAULT: {f}"));
        }
        self.check_accesses(&accesses)?;
        let sent = self.peer.take_sent();
        self.check_tx_of(sent)?;
        self.check_memory()?;
        self.check_completions()?;
        self.check_states()
    }

    /// Every DMA access lies in the data regions (compared octet for octet) or the rings.
    fn check_accesses(&mut self, accesses: &[Access]) -> CaseResult<()> {
        let data = [
            Range::new(self.arena.iova(), ARENA as u64, "the MRs' host memory"),
            Range::new(self.probe_buf.iova(), PROBE_OCTETS as u64, "the probe's buffer"),
        ];
        for a in accesses {
            let len = a.len as u64;
            let in_data = data.iter().any(|r| r.covers(a.iova, len))
                || self.dm.iter().any(|p| Range::new(p.iova(), p.len() as u64, "").covers(a.iova, len));
            let in_ring = self.rings.iter().any(|r| Range { start: r.start & !7, ..*r }.covers(a.iova, len));
            if !(in_data || in_ring) {
                return Err(format!(
                    "DMA {:?} OUTSIDE the data regions and rings: {} octets at {:#x} at cycle {}\n  rings: {:?}",
                    a.dir, a.len, a.iova, a.cycle, self.rings
                ));
            }
            if a.dir == Dir::Write && in_data {
                self.stats.count("device/data writes", 1);
            }
        }
        Ok(())
    }

    /// Every octet of the data regions is what the model holds.
    fn check_memory(&mut self) -> CaseResult<()> {
        let (device, model) = (self.image()?, self.model_image());
        for ((base, is), (_, want)) in device.iter().zip(&model) {
            let differ: Vec<usize> = (0..is.len()).filter(|&i| is[i] != want[i]).collect();
            if let Some(&i) = differ.first() {
                let iova = base + i as u64;
                return Err(format!(
                    "MEMORY differs from the model in {} octets, first at {iova:#x} ({}): device {:#04x}, model {:#04x}",
                    differ.len(),
                    self.describe(iova),
                    is[i],
                    want[i]
                ));
            }
        }
        Ok(())
    }

    /// Checks FPDUs the device sent: each well framed, for a fuzzed QP (or, with nothing,
    /// for the probe), and each QP's transmissions equal to the model's since the last check.
    fn check_tx_of(&mut self, sent: Vec<(Vec<u8>, u64)>) -> CaseResult<()> {
        let mut logs: Vec<TxLog> = vec![TxLog::default(); self.qps.len()];
        for (fpdu, conn) in sent {
            note!(self, "  <- conn {conn}: {}", hex_short(&fpdu));
            let Some(qi) = (0..self.qps.len()).find(|&i| u64::from(conn_id(i)) == conn) else {
                return Err(format!(
                    "TX: the device sent an FPDU on connection {conn}, no fuzzed QP's: {}",
                    hex(&fpdu)
                ));
            };
            let ulpdu = ulpdu_in(&fpdu, self.qps[qi].spec.crc).map_err(|e| format!("TX: QP {qi} sent {e}"))?;
            logs[qi].push(ulpdu.to_vec());
        }
        for (qi, device) in logs.iter().enumerate() {
            let qpn = self.qps[qi].qp.qpn();
            let mut model = tx_since(self.model.rnic(DEVICE).qp(qpn).expect("model QP").tx(), &self.qps[qi].tx_seen);
            if self.knobs.model_sends_no_terminates {
                model.terminates.clear();
            }
            if let Some(d) = tx_difference(device, &model) {
                return Err(format!("TX of QP {qi}: {d}"));
            }
            for t in &device.terminates {
                let code = parse_ulpdu(t).map(|s| s.header);
                if let Ok(RdmapHeader::Terminate(t)) = code {
                    self.stats.count(format!("Terminates sent/{}", t.code), 1);
                }
            }
            self.stats.count("device/Read Responses", device.read_responses.len() as u64);
            self.stats.count("device/Atomic Responses", device.atomic_responses.len() as u64);
            let seen = &mut self.qps[qi].tx_seen;
            for (all, new) in [
                (&mut seen.requests, &model.requests),
                (&mut seen.read_responses, &model.read_responses),
                (&mut seen.atomic_responses, &model.atomic_responses),
                (&mut seen.terminates, &model.terminates),
            ] {
                all.extend(new.iter().cloned());
            }
        }
        let probe = self.model.rnic(DEVICE).qp(self.probe_qp.qpn()).expect("model QP").tx();
        if *probe != TxLog::default() {
            return Err(format!("the model has the probe QP send {probe:?}"));
        }
        Ok(())
    }

    /// The completions, all of them this epoch, against the model's; then what they mean
    /// for the harness's own lists.
    fn check_completions(&mut self) -> CaseResult<()> {
        while let Some(c) = self.cq.poll_cqe().map_err(|e| format!("a CQE that does not decode: {e}"))? {
            note!(self, "  CQE {c:?}");
            let Some(qi) = self.qps.iter().position(|q| q.qp.qpn() == u32::from(c.qpn)) else {
                return Err(format!("COMPLETION for QP {}, which is not a fuzzed QP: {c:?}", c.qpn));
            };
            let result = if c.status == rnic_proto::host::CqeStatus::Success { "ok" } else { "with errors" };
            let q = &mut self.qps[qi];
            match c.opcode {
                CqeOpcode::Recv | CqeOpcode::RecvImm => {
                    self.stats.count(format!("completions/receives {result}"), 1);
                    q.recvs.retain(|r| r.wr_id != c.wr_id);
                }
                _ => {
                    self.stats.count(format!("completions/SQ {result}"), 1);
                    q.outstanding.retain(|o| o.wr_id != c.wr_id);
                }
            }
            self.cqes.push(c);
        }
        let mut observed = self.cqes.clone();
        if self.knobs.model_completes_no_receives {
            observed.retain(|c| !c.opcode.is_receive());
        }
        let cq = self.model.rnic(DEVICE).cq(self.cq.cqn()).expect("model CQ");
        cq.check(&observed).map_err(|m| {
            let waiting: Vec<String> = self
                .qps
                .iter()
                .enumerate()
                .map(|(qi, q)| format!("QP {qi}: {:?}", q.outstanding.iter().map(|o| o.wr_id).collect::<Vec<_>>()))
                .collect();
            format!(
                "COMPLETIONS differ from the model: {m}
  Reads and atomics outstanding: {}",
                waiting.join(", ")
            )
        })
    }

    /// Each fuzzed QP's state and first Terminate, as QUERY_QP reports them, are the
    /// model's.
    fn check_states(&mut self) -> CaseResult<()> {
        for qi in 0..self.qps.len() {
            let (ctx, status) = self.qps[qi].qp.query().map_err(|e| format!("QUERY_QP {qi}: {e}"))?;
            let model = self.model.rnic(DEVICE).qp(self.qps[qi].qp.qpn()).expect("model QP");
            let (is, want) = ((ctx.state, status.terminate), (model.state(), model.terminate()));
            if is != want {
                return Err(format!("QP STATE of QP {qi}: the device has {is:?}, the model {want:?}"));
            }
        }
        Ok(())
    }

    /// Resets the QPs the case left in ERROR (and a few others), in the device and the
    /// model, and tops their receives up; registers invalidated MRs again (the old STag
    /// goes on the stale list).
    fn restore(&mut self, rng: &mut StdRng) -> CaseResult<()> {
        let pd_numbers: Vec<u16> = self.pds.iter().map(|p| p.pdn()).collect();
        let cqn = self.cq.cqn();
        for qi in 0..self.qps.len() {
            let qpn = self.qps[qi].qp.qpn();
            let state = self.model.rnic(DEVICE).qp(qpn).expect("model QP").state();
            let idle = self.qps[qi].outstanding.is_empty();
            if state != QpState::Rts || (idle && rng.gen_bool(0.03)) {
                note!(self, "  QP {qi} ({state:?}) goes RESET -> RTS");
                let q = &mut self.qps[qi];
                let pd = pd_numbers[q.spec.pd];
                for state in [QpState::Reset, QpState::Rts] {
                    q.qp.modify(state).map_err(|e| format!("QP {qi} to {state:?}: {e}"))?;
                    let ctx = qp_context(&q.caps, state, pd, cqn);
                    self.model.rnic_mut(DEVICE).write_qp(qpn, &ctx).map_err(|e| format!("model WRITE_QP: {e:?}"))?;
                }
                let cfg = q.framer.config();
                (q.framer, q.deframer) = (Framer::new(cfg), Deframer::new(cfg));
                q.recvs.clear();
                q.outstanding.clear();
                q.tx_seen = TxLog::default();
                self.stats.count("harness/QP resets", 1);
            }
            self.post_receives(qi, rng)?;
        }
        let invalidated: Vec<usize> = (0..self.mrs.len()).filter(|&i| !self.model_mr_valid(&self.mrs[i])).collect();
        for i in invalidated {
            let (spec, old) = (self.mrs[i].spec, &self.mrs[i]);
            self.stale.push(old.stag);
            // Deregistering writes the entry back invalid.
            let ctx = old.context(pd_numbers[old.pd()], false);
            self.model.rnic_mut(DEVICE).write_mr(old.index(), &ctx).map_err(|e| format!("model WRITE_MR: {e:?}"))?;
            self.mrs[i].mr = None;
            self.mrs[i] = self.register(spec)?;
            self.stats.count("device/MRs invalidated", 1);
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

/// The IOVAs of a QP's SQ and RQ rings, and of a CQ's ring: where else the device may
/// touch host memory.
fn rings_of(qp: &QueuePair<SimHal>, caps: &QpCaps) -> [Range; 2] {
    let (ctx, _) = qp.query().expect("QUERY_QP");
    [
        Range::new(ctx.sq_base, (rnic_proto::host::desc::SQ_WQE_SLOT_LEN << caps.sq_log_size) as u64, "SQ ring"),
        Range::new(ctx.rq_base, (rnic_proto::host::desc::RQ_WQE_LEN << caps.rq_log_size) as u64, "RQ ring"),
    ]
}

fn cq_ring(dev: &Device<SimHal>, cq: &CompletionQueue<SimHal>) -> (Range, u64) {
    let (ctx, _) = dev.query_cq(cq.cqn()).expect("QUERY_CQ");
    (Range::new(ctx.base, (rnic_proto::host::desc::CQE_LEN << ctx.log_size) as u64, "CQ ring"), ctx.base)
}

/// One epoch: a fresh device and its model, set up, `n` cases from `start`.
fn run_epoch(s: Settings, knobs: Knobs, start: u64, n: u64, stats: &mut Stats) -> Result<(), String> {
    let mut erng = case_rng(s.seed, start, SALT_EPOCH);
    let (dev, peer, activity) = watched_device(knobs.random_reset.map(|seed| seed + start));
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

    let mut model = Fabric::new(RnicConfig::default());
    let pds: Vec<ProtectionDomain<SimHal>> = (0..3).map(|_| ProtectionDomain::new(&dev).expect("PD")).collect();
    let arena = dev.alloc_dma(ARENA).expect("DMA");
    let dm: Vec<DeviceMemory<SimHal>> = DM_PIECES.iter().map(|&l| dev.alloc_device_memory(l).expect("DM")).collect();
    let probe_buf = dev.alloc_dma(PROBE_OCTETS).expect("DMA");
    let regions = std::iter::once((arena.iova(), ARENA))
        .chain(dm.iter().map(|p| (p.iova(), p.len())))
        .chain([(probe_buf.iova(), PROBE_OCTETS)]);
    for (iova, len) in regions {
        let content = random_octets(&mut erng, len);
        model.rnic_mut(DEVICE).mem.add_region(iova, len).expect("a model region");
        model.rnic_mut(DEVICE).mem.write(iova, &content).expect("model memory");
        if iova == arena.iova() {
            arena.write_bytes(0, &content);
        } else if iova == probe_buf.iova() {
            probe_buf.write_bytes(0, &content);
        } else if let Some(piece) = dm.iter().find(|p| p.iova() == iova) {
            piece.write_bytes(0, &content).expect("DM");
        }
    }
    let cq = CompletionQueue::new(&dev, CQ_LOG_SIZE, 0).expect("CQ");
    let cq_ctx = CqContext { log_size: CQ_LOG_SIZE, enable: true, vector: 0, base: 0 };
    model.rnic_mut(DEVICE).write_cq(cq.cqn(), &cq_ctx).expect("model CQ");
    let probe_mr = MemoryRegion::register(&pds[PD_PROBE], &probe_buf, access(RW)).expect("MR");
    let probe_ctx = MrContext {
        key: probe_mr.rkey() as u8,
        access: access(RW),
        valid: true,
        pd: pds[PD_PROBE].pdn(),
        va: probe_mr.va(),
        length: PROBE_OCTETS as u64,
        iova: probe_mr.va(),
    };
    model.rnic_mut(DEVICE).write_mr(probe_mr.index(), &probe_ctx).expect("model MR");
    let probe_caps = QpCaps { ird: 0, ord: 0, conn_id: PROBE_CONN, ..QpCaps::default() };
    let mut probe_qp = QueuePair::new(&dev, &pds[PD_PROBE], &cq, &cq, probe_caps).expect("QP");
    probe_qp.ready().expect("RTS");
    let probe_ctx = qp_context(&probe_caps, QpState::Rts, pds[PD_PROBE].pdn(), cq.cqn());
    model.rnic_mut(DEVICE).write_qp(probe_qp.qpn(), &probe_ctx).expect("model QP");
    let reset_caps = caps(&QP_SPECS[2], RESET_QP_CONN);
    let reset_qp = QueuePair::new(&dev, &pds[PD_B], &cq, &cq, reset_caps).expect("QP");
    let reset_ctx = qp_context(&reset_caps, QpState::Reset, pds[PD_B].pdn(), cq.cqn());
    model.rnic_mut(DEVICE).write_qp(reset_qp.qpn(), &reset_ctx).expect("model QP");
    let mut rings = vec![cq_ring(&dev, &cq).0];
    rings.extend(rings_of(&probe_qp, &probe_caps).into_iter().chain(rings_of(&reset_qp, &reset_caps)));

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
        next_wr_id: 0,
        model,
        cqes: Vec::new(),
        rings,
        faults_seen: 0,
        mode: Mode::Framed,
        packets: Vec::new(),
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
        let ctx = qp_context(&caps, QpState::Rts, pds[spec.pd].pdn(), cq.cqn());
        world.model.rnic_mut(DEVICE).write_qp(qp.qpn(), &ctx).expect("model QP");
        world.model.connect_external(DEVICE, qp.qpn()).expect("model peer");
        world.rings.extend(rings_of(&qp, &caps));
        let cfg = FramingConfig { markers: spec.markers, crc: spec.crc };
        let (framer, deframer) = (Framer::new(cfg), Deframer::new(cfg));
        let (recvs, outstanding, tx_seen) = (VecDeque::new(), VecDeque::new(), TxLog::default());
        world.qps.push(FuzzQp { spec: *spec, caps, qp, framer, deframer, recvs, outstanding, tx_seen });
        world.post_receives(i, &mut erng)?;
    }
    let full_dm_before = ((start - s.first) / EPOCH_CASES).is_multiple_of(FULL_DM_EVERY).then(|| world.dm_full_now());
    // Everything the setup did is allowed.
    dev.hal().run_idle(IDLE_CYCLES);
    dev.hal().with_memory(|m| m.take_accesses());
    world.stats.count("harness/epochs", 1);

    for index in start..start + n {
        let reproduce =
            format!("RNIC_FUZZ_SEED={seed:#x} RNIC_FUZZ_FIRST={start} RNIC_FUZZ_CASES={}", index - start + 1);
        if !s.verbose {
            // Keep the epoch's setup line, drop older cases.
            let mut l = log.borrow_mut();
            let keep = l.find("\ncase ").map_or(l.len(), |i| i + 1);
            l.truncate(keep);
        }
        let result = world.run_case(index, &reproduce);
        if s.verbose {
            eprint!("{}", log.borrow());
            log.borrow_mut().clear();
        }
        if let Err(e) = result {
            let log = log.borrow();
            let case = format!("seed {seed:#x}, case {index}; reproduce with {reproduce}");
            return Err(format!("{e}\n\n{case}\n\nwhat the epoch did (this case in full):\n{log}"));
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
    Ok(())
}

fn fuzz(s: Settings, knobs: Knobs) -> Result<Stats, String> {
    let (mut stats, t) = (Stats::default(), Instant::now());
    let (mut start, end, mut report_at) = (s.first, s.first + s.cases, s.first + 50_000);
    while start < end {
        let n = EPOCH_CASES.min(end - start);
        run_epoch(s, knobs, start, n, &mut stats)?;
        start += n;
        if start >= report_at {
            eprintln!("rx fuzz: {} cases done in {:.0?}", start - s.first, t.elapsed());
            report_at += 50_000;
        }
    }
    Ok(stats)
}

/// The fuzz run's cases in two tests, so that the test harness runs them on two threads:
/// `half` 0 has the first whole epochs of the run (as near half as whole epochs come),
/// `half` 1 the rest. Epochs start where they would in one run.
fn fuzz_half(half: u64) {
    let run = settings(CI_CASES);
    let split = run.cases / 2 / EPOCH_CASES * EPOCH_CASES;
    let (first, cases) = if half == 0 { (run.first, split) } else { (run.first + split, run.cases - split) };
    let (s, t) = (Settings { first, cases, ..run }, Instant::now());
    eprintln!("rx fuzz: {} cases from {} of seed {:#x}", s.cases, s.first, s.seed);
    match fuzz(s, Knobs::default()) {
        Ok(stats) => eprintln!("rx fuzz: all checks passed in {:.1?}\n{}", t.elapsed(), stats.summary()),
        Err(report) => panic!("rx fuzz FAILED after {:.1?}:\n{report}", t.elapsed()),
    }
}

#[test]
fn rx_fuzz_random_and_mutated_fpdu_streams_match_the_reference_model_exactly_first_half() {
    fuzz_half(0);
}

#[test]
fn rx_fuzz_random_and_mutated_fpdu_streams_match_the_reference_model_exactly_second_half() {
    fuzz_half(1);
}

/// Cases per seed on the random-reset model.
const X_CASES: u64 = 2_000;

/// The fuzz cases from the normal run's start, on the random-reset `rnic_top` (every
/// register powered up and every X assigned at random): each epoch's device from
/// `reset_seed` plus its first case.
fn random_reset(reset_seed: u64) {
    let (s, t) = (Settings { cases: X_CASES, ..settings(X_CASES) }, Instant::now());
    match fuzz(s, Knobs { random_reset: Some(reset_seed), ..Knobs::default() }) {
        Ok(stats) => {
            eprintln!("rx fuzz (random reset {reset_seed}): passed in {:.1?}\n{}", t.elapsed(), stats.summary())
        }
        Err(report) => panic!("rx fuzz on the random-reset model, reset seed {reset_seed}, FAILED:\n{report}"),
    }
}

#[test]
fn x_random_reset_rx_fuzz_matches_the_reference_model_exactly_seed_1() {
    random_reset(1);
}

#[test]
fn x_random_reset_rx_fuzz_matches_the_reference_model_exactly_seed_2() {
    random_reset(1_000_001);
}

// ---- CRC: one flipped bit anywhere in an FPDU --------------------------------------------

/// One case of the CRC test (module docs): a fresh device with one CRC QP, a few good
/// Writes, a Write with one bit flipped, a good Write after it.
fn crc_case(s: Settings, index: u64, stats: &mut Stats) -> Result<(), String> {
    let mut rng = case_rng(s.seed, index, SALT_CRC);
    let (markers, control) = (rng.gen_bool(0.25), rng.gen_range(0..20) == 0);
    let (dev, peer, activity) = watched_device(None);
    let pd = ProtectionDomain::new(&dev).expect("PD");
    let buf = dev.alloc_dma(4096).expect("DMA");
    let mut expected = random_octets(&mut rng, 4096);
    buf.write_bytes(0, &expected);
    let mr = MemoryRegion::register(&pd, &buf, access(RW)).expect("MR");
    let cq = CompletionQueue::new(&dev, 4, 0).expect("CQ");
    let caps = QpCaps { markers_rx: markers, conn_id: 7, ..QpCaps::default() };
    let mut qp = QueuePair::new(&dev, &pd, &cq, &cq, caps).expect("QP");
    qp.ready().expect("RTS");
    dev.hal().run_idle(IDLE_CYCLES);
    dev.hal().with_memory(|m| m.take_accesses());

    let cfg = FramingConfig { markers, crc: true };
    let mut framer = Framer::new(cfg);
    // A Write of `len` random octets to `at`: its FPDU, payload and where ULPDU_Length is.
    let mut write = |rng: &mut StdRng, at: usize, len: usize| {
        let (position, length_at) =
            (framer.position(), if markers && framer.position().is_multiple_of(512) { 4 } else { 0 });
        let (payload, mut fpdu) = (random_octets(rng, len), Vec::new());
        framer.frame(&Segment::write(mr.rkey(), mr.va() + at as u64, &payload).to_vec(), &mut fpdu).expect("frame");
        (fpdu, payload, length_at, position)
    };
    let mut log = format!("CRC case {index} (seed {:#x}): markers {markers}, control {control}\n", s.seed);
    let mut stream = Vec::new();
    for _ in 0..rng.gen_range(0..=2) {
        let (at, len) = (rng.gen_range(0..128) * 8, rng.gen_range(1..=64));
        let (fpdu, payload, ..) = write(&mut rng, at, len);
        expected[at..at + len].copy_from_slice(&payload);
        stream.push(fpdu);
    }
    let (victim_at, victim_len) = (1024 + rng.gen_range(0..512), rng.gen_range(1..=300));
    let (mut fpdu, payload, length_at, position) = write(&mut rng, victim_at, victim_len);
    let (after, after_payload, ..) = write(&mut rng, 3072, 8);
    let n = fpdu.len();
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
        let _ = writeln!(log, "  flipped bit {bit} ({aim})");
    }
    // The Terminate the device owes: what the packet contract makes of the flipped FPDU.
    let owed = match Deframer::at(cfg, position).pop_packet(&fpdu) {
        Some(Ok(_)) => None,
        Some(Err(e)) => Some(e.term_code().expect("a receive error")),
        None => unreachable!("a fresh deframer"),
    };
    stream.extend([fpdu, after]);
    for octets in &stream {
        let _ = writeln!(log, "  -> {}", hex_short(octets));
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
        let what = match control {
            true => "a good FPDU was not placed as sent",
            false => "something of the flipped FPDU or after it was PLACED",
        };
        return fail(format!("{what}: octet {at} is {:#04x}, expected {:#04x}", now[at], expected[at]));
    }
    if let Some(a) = accesses.iter().find(|a| a.dir == Dir::Write && !mr_range.covers(a.iova, a.len as u64)) {
        return fail(format!("a DMA write outside the MR: {a:?}"));
    }
    if let Some(c) = cq.poll().map_err(|e| e.to_string())? {
        return fail(format!("a completion for Writes: {c:?}"));
    }
    // MPA-08: exactly the Terminate owed, octet for octet (no headers), and nothing else.
    let owed_fpdu = owed.map(|code| common::frame(&Segment::terminate(1, Terminate::new(code)).to_vec(), true));
    let sent: Vec<Vec<u8>> = peer.take_sent().into_iter().map(|(f, _)| f).collect();
    if sent != owed_fpdu.iter().cloned().collect::<Vec<_>>() {
        let sent: Vec<String> = sent.iter().map(|f| hex(f)).collect();
        return fail(format!("the device sent {sent:?} where it owed the Terminate {owed:?}"));
    }
    if let Some(code) = owed {
        stats.count(format!("device/MPA Terminates {code}"), 1);
    }
    match (qp.query().map_err(|e| e.to_string())?.0.state, owed) {
        (QpState::Rts, None) => {}
        (QpState::Error, Some(_)) => stats.count("device/QPs in ERROR after", 1),
        (state, _) => return fail(format!("the QP is in {state:?} after the case")),
    }
    stats.cases += 1;
    Ok(())
}

#[test]
fn crc_one_flipped_bit_anywhere_in_an_fpdu_is_caught_with_its_exact_terminate_and_places_nothing() {
    let (s, t, mut stats) = (settings(CRC_CASES), Instant::now(), Stats::default());
    for index in s.first..s.first + s.cases {
        if let Err(report) = crc_case(s, index, &mut stats) {
            let seed = s.seed;
            let reproduce = format!("RNIC_FUZZ_SEED={seed:#x} RNIC_FUZZ_FIRST={index} RNIC_FUZZ_CASES=1");
            panic!("CRC test FAILED in case {index}: {report}\nreproduce with {reproduce}");
        }
    }
    eprintln!(
        "CRC test: every flip caught with its exact MPA Terminate, nothing placed from it or after it, in {:.1?}\n{}",
        t.elapsed(),
        stats.summary()
    );
    let count = |k: &str| stats.counts.get(k).copied().unwrap_or(0);
    let (controls, crc, step) = (
        count("flips/none (controls)"),
        count(&format!("device/MPA Terminates {}", TermCode::MPA_CRC)),
        count(&format!("device/MPA Terminates {}", TermCode::MPA_LOCAL_CATASTROPHIC)),
    );
    assert!(s.cases < 100 || (controls > 0 && crc > 0 && step > 0), "controls, CRC errors and out of step all ran");
}

// ---- The harness's own checks: each knob makes the oracle wrong, and it must notice ------

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
fn harness_self_test_a_model_placing_writes_8_octets_off_is_caught() {
    // In memory, or first in the header a refused Write's Terminate carries.
    let report = fuzz_must_fail(Knobs { model_writes_off_by_8: true, ..Knobs::default() }, 200);
    assert!(report.starts_with("MEMORY differs") || report.starts_with("TX of QP"), "{report}");
}

#[test]
fn harness_self_test_a_model_that_sends_no_terminates_is_caught_on_the_wire() {
    let report = fuzz_must_fail(Knobs { model_sends_no_terminates: true, ..Knobs::default() }, 200);
    assert!(report.starts_with("TX of QP") && report.contains("Terminate"), "{report}");
}

#[test]
fn harness_self_test_receive_completions_the_model_did_not_write_are_caught() {
    let report = fuzz_must_fail(Knobs { model_completes_no_receives: true, ..Knobs::default() }, 200);
    assert!(report.starts_with("COMPLETIONS differ"), "{report}");
}

#[test]
fn harness_self_test_a_dma_bus_that_never_takes_a_write_is_a_hang() {
    let report = fuzz_must_fail(Knobs { dma_ready: Some(0.0), ..Knobs::default() }, 10);
    assert!(report.starts_with("HANG"), "{report}");
}
