//! Two RNICs linked stream to stream and the reference model of the same pair, both set
//! up from one description (the model never reads a context back from a device), with
//! random work of every kind the RNIC does and errors injected into it: what the
//! differential test (`sim_differential.rs`) and the fault isolation test
//! (`sim_isolation.rs`) share.
//!
//! Memory, per side: one host buffer and a piece of device memory.
//!
//! ```text
//! host:  SOURCE | per QP: INCOMING  SINK  ATOMIC  RESULT  INV | FOREIGN | WINDOW
//! dm:    per QP: ATOMIC (QP 0's atomics go to device memory)
//! ```
//!
//! SOURCE is read (by the peer's Reads, by local Sends and Writes) and never written;
//! each QP's Sends and Writes land in its INCOMING area on the peer, its Read Responses in
//! its own SINK, its atomics in the peer's ATOMIC words (each word at most once a round)
//! and their results in its own RESULT words: no two QPs touch the same octets, so the
//! order hardware interleaves them in cannot matter (the model runs one WQE at a time).
//! INV is a small MR per QP that a Send with Invalidate from the peer, or a local
//! invalidation, ends (it is registered again after the round). FOREIGN is an MR of the
//! other PD, WINDOW a small MR of the QPs' PD: targets of injected errors, with a read-only
//! MR over SOURCE and the STags of ended INV MRs.
//!
//! A round posts work on every QP pair in both directions (receives first), runs the model,
//! waits for the completions and compares both hosts' memory (every octet of both regions)
//! and every CQE with the model. A round may inject one error into one pair: that pair then
//! carries work in one direction only (the model does not predict what the other
//! direction's messages do once the pair fails, `rnic_proto::model` "Timing-dependent
//! outcomes"), and is reset on both sides after the round.
#![allow(dead_code)] // each test file uses its own part

use std::cell::{Cell, RefCell};
use std::collections::BTreeMap;
use std::fmt::Write as _;
use std::rc::Rc;

use rand::rngs::StdRng;
use rand::{Rng, SeedableRng};
use rnic_driver::sim::{LinkConfig, LinkTap, Phase, SimHal};
use rnic_driver::{
    CompletionQueue, Device, DeviceMemory, DmaBuffer, MemoryRegion, MrAccess, ProtectionDomain, QpCaps, QpState,
    QueuePair, RecvRequest, RemoteBuf, Sge, WorkRequest,
};
use rnic_proto::host::context::{CqContext, MrContext, QpContext, TermInfo};
use rnic_proto::host::desc::Cqe;
use rnic_proto::model::cq::Expected;
use rnic_proto::model::wire::segment_count;
use rnic_proto::model::{Fabric, RnicConfig, Side};
use rnic_proto::mpa::{crc32c, crc_field};
use rnic_proto::terminate::TermCode;

pub const SIDES: [Side; 2] = [Side::A, Side::B];
const ALL: MrAccess = MrAccess { local_write: true, remote_read: true, remote_write: true, remote_atomic: true };
const READ_ONLY: MrAccess =
    MrAccess { local_write: false, remote_read: true, remote_write: false, remote_atomic: false };
/// Atomic target and result words per QP.
const WORDS: usize = 64;
const INV_OCTETS: usize = 256;
const FOREIGN_OCTETS: usize = 4096;
const WINDOW_OCTETS: usize = 1024;
/// Cycles without a stream beat or a DMA valid on either device that make the pair quiet.
const QUIET_CYCLES: u64 = 300;
/// Headers of a tagged and an untagged segment (DDP and RDMAP).
const TAGGED_HEADER: usize = 14;
const UNTAGGED_HEADER: usize = 18;

/// What a pair of RNICs runs: the design, its sizes, the QP pairs' options, the sizes of
/// the work.
#[derive(Clone)]
pub struct Spec {
    pub design: &'static str,
    pub model: RnicConfig,
    /// One per QP pair (both ends alike but for CONN_ID, the peer's QP number).
    pub qps: Vec<QpCaps>,
    /// Octets of SOURCE, and of each QP's INCOMING and SINK area: the largest message.
    pub source: usize,
    pub area: usize,
    /// Chance a message is larger than 4 KiB (up to `area`).
    pub large: f64,
    pub seed: u64,
    /// Run the random-reset models (`<design>_x`), A's with this seed and B's with the next.
    pub random_reset: Option<u64>,
}

/// Where things are in a side's host buffer.
#[derive(Clone, Copy)]
pub struct Layout {
    qps: usize,
    source: usize,
    area: usize,
}

impl Layout {
    fn per_qp(&self) -> usize {
        2 * self.area + 2 * 8 * WORDS + INV_OCTETS
    }
    pub fn incoming(&self, q: usize) -> usize {
        self.source + q * self.per_qp()
    }
    pub fn sink(&self, q: usize) -> usize {
        self.incoming(q) + self.area
    }
    pub fn atomic(&self, q: usize) -> usize {
        self.sink(q) + self.area
    }
    pub fn result(&self, q: usize) -> usize {
        self.atomic(q) + 8 * WORDS
    }
    pub fn inv(&self, q: usize) -> usize {
        self.result(q) + 8 * WORDS
    }
    pub fn foreign(&self) -> usize {
        self.source + self.qps * self.per_qp()
    }
    pub fn window(&self) -> usize {
        self.foreign() + FOREIGN_OCTETS
    }
    pub fn size(&self) -> usize {
        self.window() + WINDOW_OCTETS
    }
    /// Every octet QP `q` (either end of its pair) may change on a side.
    pub fn areas_of(&self, q: usize) -> std::ops::Range<usize> {
        self.incoming(q)..self.inv(q) + INV_OCTETS
    }
}

/// One side: a device and what the test registered on it.
pub struct Host<'d> {
    pub dev: &'d Device<SimHal>,
    pub buf: &'d DmaBuffer<'d, SimHal>,
    pub dm: &'d DeviceMemory<'d, SimHal>,
    pub pds: &'d [ProtectionDomain<'d, SimHal>],
    pub cq: &'d CompletionQueue<'d, SimHal>,
    /// PD 0, every right, the whole buffer; device memory; PD 1 over FOREIGN; read-only
    /// over SOURCE; PD 0 over WINDOW; each QP's INV.
    pub data: MemoryRegion<'d, SimHal>,
    pub dm_mr: MemoryRegion<'d, SimHal>,
    pub foreign: MemoryRegion<'d, SimHal>,
    pub read_only: MemoryRegion<'d, SimHal>,
    pub window: MemoryRegion<'d, SimHal>,
    pub inv: Vec<MemoryRegion<'d, SimHal>>,
    /// STags of INV MRs that were ended (invalidated STags).
    pub stale: Vec<u32>,
    pub qps: Vec<QueuePair<'d, SimHal>>,
    /// Every CQE this side wrote, in order.
    pub cqes: Vec<Cqe>,
}

/// The kinds of work, and of errors injected.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord)]
pub enum Kind {
    Send,
    SendSolicited,
    SendInvalidate,
    SendSolicitedInvalidate,
    Write,
    WriteWithImmediate,
    Read,
    FetchAdd,
    CmpSwap,
    Immediate,
    ImmediateSolicited,
    /// Errors: a wrong key, past an MR's end, a missing right, another PD's MR, an ended
    /// STag, a misaligned atomic, a Read of another PD's MR, a Send longer than its receive.
    BadStag,
    Bounds,
    Rights,
    OtherPd,
    Invalidated,
    Misaligned,
    ReadOtherPd,
    TooLong,
}

const WORK: [(Kind, u32); 11] = [
    (Kind::Send, 12),
    (Kind::SendSolicited, 4),
    (Kind::SendInvalidate, 3),
    (Kind::SendSolicitedInvalidate, 2),
    (Kind::Write, 16),
    (Kind::WriteWithImmediate, 5),
    (Kind::Read, 14),
    (Kind::FetchAdd, 6),
    (Kind::CmpSwap, 6),
    (Kind::Immediate, 3),
    (Kind::ImmediateSolicited, 2),
];
const ERRORS: [Kind; 8] = [
    Kind::BadStag,
    Kind::Bounds,
    Kind::Rights,
    Kind::OtherPd,
    Kind::Invalidated,
    Kind::Misaligned,
    Kind::ReadOtherPd,
    Kind::TooLong,
];

fn weighted(rng: &mut StdRng, choices: &[(Kind, u32)]) -> Kind {
    let mut r = rng.gen_range(0..choices.iter().map(|c| c.1).sum::<u32>());
    for &(choice, weight) in choices {
        if r < weight {
            return choice;
        }
        r -= weight;
    }
    unreachable!("r is below the sum of the weights")
}

/// The QP context the driver writes for `caps` (the model ignores the ring addresses).
pub fn qp_context(caps: &QpCaps, state: QpState, pd: u16, cqn: u32) -> QpContext {
    QpContext {
        state,
        crc_enable: caps.crc,
        markers_tx: caps.markers_tx,
        markers_rx: caps.markers_rx,
        pd,
        conn_id: caps.conn_id,
        mulpdu: caps.mulpdu,
        send_cq: cqn as u16,
        recv_cq: cqn as u16,
        sq_log_size: caps.sq_log_size,
        rq_log_size: caps.rq_log_size,
        ird: caps.ird,
        ord: caps.ord,
        sq_base: 0,
        rq_base: 0,
    }
}

/// The context the driver writes for an MR (IOVA = VA, as it registers).
pub fn mr_context(mr: &MemoryRegion<'_, SimHal>, pd: u16, valid: bool) -> MrContext {
    let (key, access, va, length) = (mr.rkey() as u8, mr.access(), mr.va(), mr.len());
    MrContext { key, access, valid, pd, va, length, iova: va }
}

/// Counts by kind, for the report.
#[derive(Default)]
pub struct Tally(pub BTreeMap<String, u64>);

impl Tally {
    pub fn add(&mut self, what: impl Into<String>, n: u64) {
        *self.0.entry(what.into()).or_default() += n;
    }

    pub fn summary(&self) -> String {
        self.0.iter().map(|(k, v)| format!("{k} {v}")).collect::<Vec<_>>().join(", ")
    }
}

/// The pair, its model, and the work's bookkeeping.
pub struct Pair<'d> {
    pub spec: Spec,
    pub layout: Layout,
    pub hosts: Vec<Host<'d>>,
    pub model: Fabric,
    pub rng: StdRng,
    next_wr_id: u64,
    /// Requests posted so far.
    pub posted: usize,
    /// The running round's work, for a failure's report.
    pub journal: String,
    /// The last cycle either device did anything outside (a stream beat, a DMA valid).
    activity: Rc<Cell<u64>>,
    pub tally: Tally,
    /// QP pairs the model does not run (their work is the devices' only): the victim of
    /// the isolation test. Their areas and completions are left out of the comparison.
    pub unmodelled: Vec<usize>,
}

/// Records in `last` the last cycle `hal` did anything outside: a beat on a stream, a
/// valid on a DMA channel.
fn watch(hal: &SimHal, last: &Rc<Cell<u64>>) {
    let busy = [
        "m_axis_tx_tvalid",
        "s_axis_rx_tvalid",
        "m_axi_awvalid",
        "m_axi_wvalid",
        "m_axi_arvalid",
        "m_axi_rvalid",
        "m_axi_bvalid",
    ];
    let ports = hal.with_model(|m| busy.map(|n| m.port(n)));
    let last = Rc::clone(last);
    hal.on_cycle(move |m, phase| {
        if phase == Phase::Observe && ports.iter().any(|&p| m.get_bit(p)) {
            last.set(last.get().max(m.cycles()));
        }
    });
}

/// Opens two devices of `spec.design`, links them (through `tap` if given), sets up both
/// hosts and the model from the description, and runs `body` on the pair.
pub fn with_pair<R>(spec: &Spec, tap: Option<LinkTap>, body: impl FnOnce(&mut Pair<'_>) -> R) -> R {
    let open = |i: u64| match spec.random_reset {
        Some(seed) => SimHal::open_random_reset(spec.design, seed + i).expect("random-reset model"),
        None => SimHal::open(spec.design).expect("model"),
    };
    let (ha, hb) = (open(0), open(1));
    let link = LinkConfig { ready_rate: 0.7, seed: spec.seed ^ 11 };
    match tap {
        Some(tap) => SimHal::connect_tapped(&ha, &hb, link, tap),
        None => SimHal::connect(&ha, &hb, link),
    }
    for (hal, rate) in [(&ha, 0.85), (&hb, 0.75)] {
        hal.with_dma_timing(|t| {
            t.ready_rate = rate;
            t.valid_rate = rate;
        });
    }
    let activity = Rc::new(Cell::new(0));
    for hal in [&ha, &hb] {
        watch(hal, &activity);
    }
    let devs = [Device::open(ha).expect("RNIC A"), Device::open(hb).expect("RNIC B")];
    for dev in &devs {
        let info = dev.info();
        let sizes = (info.num_qps, info.num_cqs, info.num_mrs);
        assert_eq!(
            sizes,
            (spec.model.num_qps, spec.model.num_cqs, spec.model.num_mrs),
            "{} reports its sizes",
            spec.design
        );
        dev.enable();
    }
    let layout = Layout { qps: spec.qps.len(), source: spec.source, area: spec.area };
    let mut rng = StdRng::seed_from_u64(spec.seed);
    let mut model = Fabric::new(spec.model);
    let pds: Vec<Vec<ProtectionDomain<SimHal>>> =
        devs.iter().map(|d| (0..2).map(|_| ProtectionDomain::new(d).expect("PD")).collect()).collect();
    let bufs: Vec<DmaBuffer<SimHal>> = devs.iter().map(|d| d.alloc_dma(layout.size()).expect("DMA")).collect();
    let dms: Vec<DeviceMemory<SimHal>> =
        devs.iter().map(|d| d.alloc_device_memory(layout.qps * 8 * WORDS).expect("DM")).collect();
    let cqs: Vec<CompletionQueue<SimHal>> = devs.iter().map(|d| CompletionQueue::new(d, 12, 0).expect("CQ")).collect();
    let mut hosts = Vec::new();
    for (i, dev) in devs.iter().enumerate() {
        let (side, buf, dm, cq, pds) = (SIDES[i], &bufs[i], &dms[i], &cqs[i], &pds[i][..]);
        let m = model.rnic_mut(side);
        for (iova, len) in [(buf.iova(), layout.size()), (dm.iova(), dm.len())] {
            let content: Vec<u8> = (0..len).map(|_| rng.gen()).collect();
            m.mem.add_region(iova, len).expect("model region");
            m.mem.write(iova, &content).expect("model memory");
            match iova == buf.iova() {
                true => buf.write_bytes(0, &content),
                false => dm.write_bytes(0, &content).expect("device memory"),
            }
        }
        m.write_cq(cq.cqn(), &CqContext { log_size: 12, enable: true, vector: 0, base: 0 }).expect("model CQ");
        let register = |pd: usize, at: usize, len: usize, access: MrAccess| {
            MemoryRegion::register_range(&pds[pd], buf, at, len, access).expect("MR")
        };
        let data = register(0, 0, layout.size(), ALL);
        let foreign = register(1, layout.foreign(), FOREIGN_OCTETS, ALL);
        let read_only = register(0, 0, layout.source, READ_ONLY);
        let window = register(0, layout.window(), WINDOW_OCTETS, ALL);
        let inv: Vec<_> = (0..layout.qps).map(|q| register(0, layout.inv(q), INV_OCTETS, ALL)).collect();
        let dm_mr = MemoryRegion::register_device(&pds[0], dm, ALL).expect("DM MR");
        let mut mrs = vec![(&data, 0), (&foreign, 1), (&read_only, 0), (&window, 0), (&dm_mr, 0)];
        mrs.extend(inv.iter().map(|m| (m, 0)));
        for (mr, pd) in mrs {
            m.write_mr(mr.index(), &mr_context(mr, pds[pd].pdn(), true)).expect("model MR");
        }
        let mut qps = Vec::new();
        for (q, caps) in spec.qps.iter().enumerate() {
            let caps = QpCaps { conn_id: q as u16, ..*caps };
            let mut qp = QueuePair::new(dev, &pds[0], cq, cq, caps).expect("QP");
            assert_eq!(qp.qpn(), q as u32, "QPs are numbered from 0 on both sides");
            qp.ready().expect("RTS");
            m.write_qp(q as u32, &qp_context(&caps, QpState::Rts, pds[0].pdn(), cq.cqn())).expect("model QP");
            qps.push(qp);
        }
        hosts.push(Host {
            dev,
            buf,
            dm,
            pds,
            cq,
            data,
            dm_mr,
            foreign,
            read_only,
            window,
            inv,
            stale: Vec::new(),
            qps,
            cqes: Vec::new(),
        });
    }
    for q in 0..layout.qps as u32 {
        model.connect(q, q).expect("model connect");
    }
    let mut pair = Pair {
        spec: spec.clone(),
        layout,
        hosts,
        model,
        rng: StdRng::seed_from_u64(spec.seed ^ 0x40_4b),
        next_wr_id: 0,
        posted: 0,
        journal: String::new(),
        activity,
        tally: Tally::default(),
        unmodelled: Vec::new(),
    };
    body(&mut pair)
}

/// A work request to post on one side, and the receives it needs at the other.
pub struct Work {
    pub from: usize,
    pub q: usize,
    pub kind: Kind,
    pub wr: WorkRequest,
    pub recvs: Vec<RecvRequest>,
}

impl Work {
    /// The ids of the WQEs this work posts on side `i`: its work request's there, or its
    /// receives.
    fn wqe_ids(&self, i: usize) -> Vec<u64> {
        match self.from == i {
            true => self.wr.wqes().map(|w| w.wr_id).collect(),
            false => self.recvs.iter().map(|r| r.wr_id).collect(),
        }
    }
}

impl Pair<'_> {
    fn wr_id(&mut self) -> u64 {
        self.next_wr_id += 1;
        self.next_wr_id
    }

    fn size(&mut self) -> usize {
        match self.rng.gen_range(0..100) {
            0..=4 => 0,
            _ if self.rng.gen_bool(self.spec.large) => self.rng.gen_range(4097..=self.spec.area),
            _ => self.rng.gen_range(1..=self.spec.area.min(4096)),
        }
    }

    /// Whether the model holds the MR of `mr` valid on `side`.
    fn valid(&self, side: usize, mr: &MemoryRegion<'_, SimHal>) -> bool {
        self.model.rnic(SIDES[side]).mrs()[mr.index() as usize].valid
    }

    /// One random request of `kind` on QP pair `q` from side `from`; `atomics` are the
    /// target words (and INV MRs, as `usize::MAX - q`) already taken this round.
    pub fn work(&mut self, from: usize, q: usize, kind: Kind, atomics: &mut Vec<(usize, usize)>) -> Work {
        let to = 1 - from;
        let wr_id = self.wr_id();
        let signaled = self.rng.gen_bool(0.8);
        let l = self.layout;
        let len = self.size();
        let source = self.rng.gen_range(0..=l.source - len);
        let local = self.hosts[from].data.sge(source as u64, len as u32).expect("in the MR");
        let at = l.incoming(q) + self.rng.gen_range(0..=l.area - len);
        let remote = self.hosts[to].data.remote(at as u64).expect("in the MR");
        let mut recvs = Vec::new();
        let recv = |pair: &mut Self, room: usize| {
            let at = l.incoming(q) + pair.rng.gen_range(0..=l.area - room);
            let wr_id = pair.wr_id();
            RecvRequest { wr_id, local: pair.hosts[to].data.sge(at as u64, room as u32).expect("in the MR") }
        };
        // An atomic's target word, once a round, and its result word.
        let mut atomic_target = |pair: &mut Self| {
            let word = loop {
                let w = pair.rng.gen_range(0..WORDS);
                if !atomics.contains(&(to, q * WORDS + w)) {
                    atomics.push((to, q * WORDS + w));
                    break w;
                }
            };
            let result = pair.hosts[from].data.sge((l.result(q) + 8 * word) as u64, 8).expect("in the MR");
            let target = match q {
                0 => pair.hosts[to].dm_mr.remote((8 * word) as u64).expect("in device memory"),
                _ => pair.hosts[to].data.remote((l.atomic(q) + 8 * word) as u64).expect("in the MR"),
            };
            (target, result)
        };
        let solicited = matches!(kind, Kind::SendSolicited | Kind::SendSolicitedInvalidate | Kind::ImmediateSolicited);
        let wr = match kind {
            Kind::Send | Kind::SendSolicited | Kind::SendInvalidate | Kind::SendSolicitedInvalidate => {
                let room = len + self.rng.gen_range(0..=(l.area - len).min(64));
                recvs.push(recv(self, room));
                // The peer's INV MR, unless something ended it already (once a round).
                let ends = matches!(kind, Kind::SendInvalidate | Kind::SendSolicitedInvalidate);
                let named = (to, usize::MAX - q);
                let fresh = self.valid(to, &self.hosts[to].inv[q]) && !atomics.contains(&named);
                let invalidate = (ends && fresh).then(|| {
                    atomics.push(named);
                    self.hosts[to].inv[q].rkey()
                });
                WorkRequest::Send { wr_id, local, solicited, invalidate, signaled }
            }
            Kind::Write => WorkRequest::Write { wr_id, local, remote, signaled },
            Kind::WriteWithImmediate => {
                recvs.push(recv(self, 8));
                WorkRequest::WriteWithImmediate { wr_id, local, remote, data: self.rng.gen(), solicited, signaled }
            }
            Kind::Read => {
                let sink = l.sink(q) + self.rng.gen_range(0..=l.area - len);
                let local = self.hosts[from].data.sge(sink as u64, len as u32).expect("in the MR");
                let remote = self.hosts[to].data.remote(source as u64).expect("in the MR");
                WorkRequest::Read { wr_id, local, remote, signaled }
            }
            Kind::FetchAdd => {
                let (remote, local) = atomic_target(self);
                let add_mask = if self.rng.gen_bool(0.3) { 0 } else { self.rng.gen() };
                WorkRequest::FetchAdd { wr_id, local, remote, add: self.rng.gen(), add_mask, signaled }
            }
            Kind::CmpSwap => {
                let (remote, local) = atomic_target(self);
                // Compare with the word's value half the time (it is the round's first
                // atomic on it), so that swaps happen.
                let now = self.model.rnic(SIDES[to]).mem.read(remote.to, 8).expect("target");
                let now = u64::from_le_bytes(now.try_into().expect("8 octets"));
                let compare = if self.rng.gen_bool(0.5) { now } else { self.rng.gen() };
                let (compare_mask, swap, swap_mask) = (self.rng.gen(), self.rng.gen(), self.rng.gen());
                let compare_mask = if self.rng.gen_bool(0.5) { u64::MAX } else { compare_mask };
                WorkRequest::CmpSwap { wr_id, local, remote, compare, compare_mask, swap, swap_mask, signaled }
            }
            Kind::Immediate | Kind::ImmediateSolicited => {
                recvs.push(recv(self, 8));
                WorkRequest::Immediate { wr_id, data: self.rng.gen(), solicited, signaled }
            }
            // The errors (of the requester's making, found at the responder).
            Kind::BadStag => {
                let stag = (remote.stag & !0xFF) | u32::from((remote.stag as u8).wrapping_add(1));
                WorkRequest::Write { wr_id, local, remote: RemoteBuf { stag, ..remote }, signaled }
            }
            Kind::Bounds => {
                let w = &self.hosts[to].window;
                let to = w.va() + WINDOW_OCTETS as u64 - self.rng.gen_range(0..len.clamp(1, 64)) as u64;
                let len = len.max(65) as u32;
                let local = Sge { length: len, ..self.hosts[from].data.sge(0, len).expect("in the MR") };
                WorkRequest::Write { wr_id, local, remote: RemoteBuf { stag: w.rkey(), to }, signaled }
            }
            Kind::Rights => {
                let remote = self.hosts[to].read_only.remote(0).expect("in the MR");
                let local = Sge { length: len.max(1) as u32, ..local };
                WorkRequest::Write { wr_id, local, remote, signaled }
            }
            Kind::OtherPd => {
                let remote = self.hosts[to].foreign.remote(0).expect("in the MR");
                let local = Sge { length: len.clamp(1, FOREIGN_OCTETS) as u32, ..local };
                WorkRequest::Write { wr_id, local, remote, signaled }
            }
            Kind::Invalidated => {
                // An INV STag the peer ended before (or ends now: `invalidate_first`).
                let stag = self.hosts[to].stale.last().copied().unwrap_or(self.hosts[to].inv[q].rkey());
                let local = Sge { length: len.clamp(1, INV_OCTETS) as u32, ..local };
                WorkRequest::Write {
                    wr_id,
                    local,
                    remote: RemoteBuf { stag, to: self.hosts[to].inv[q].va() },
                    signaled,
                }
            }
            Kind::Misaligned => {
                let (remote, local) = atomic_target(self);
                let remote = RemoteBuf { to: remote.to + 4, ..remote };
                WorkRequest::FetchAdd { wr_id, local, remote, add: 1, add_mask: 0, signaled }
            }
            Kind::ReadOtherPd => {
                let sink = l.sink(q) + self.rng.gen_range(0..=l.area - 64);
                let local = self.hosts[from].data.sge(sink as u64, 64).expect("in the MR");
                let remote = self.hosts[to].foreign.remote(0).expect("in the MR");
                WorkRequest::Read { wr_id, local, remote, signaled }
            }
            Kind::TooLong => {
                let len = len.max(2);
                recvs.push(recv(self, len - 1));
                let local = Sge { length: len as u32, ..local };
                WorkRequest::Send { wr_id, local, solicited: false, invalidate: None, signaled }
            }
        };
        Work { from, q, kind, wr, recvs }
    }

    /// Posts `work` (its receives first) on the devices and in the model.
    pub fn post(&mut self, work: &Work) {
        let (from, to, q) = (work.from, 1 - work.from, work.q);
        let modelled = !self.unmodelled.contains(&q);
        for r in &work.recvs {
            self.hosts[to].qps[q].post_recv(r).expect("receive");
            if modelled {
                self.model.post_recv(SIDES[to], q as u32, r.wqe()).expect("model receive");
            }
        }
        self.hosts[from].qps[q].post_send(&work.wr).expect("post");
        if modelled {
            for wqe in work.wr.wqes() {
                self.model.post_send(SIDES[from], q as u32, wqe).expect("model post");
            }
        }
        self.tally.add(format!("{:?}", work.kind), 1);
        self.posted += 1;
        let side = ["A", "B"][from];
        let _ = writeln!(self.journal, "  {side} QP {q} {:?}: {:?} (receives {:?})", work.kind, work.wr, work.recvs);
    }

    /// Polls both CQs.
    pub fn poll(&mut self) {
        for h in &mut self.hosts {
            while let Some(c) = h.cq.poll_cqe().expect("a CQE that decodes") {
                h.cqes.push(c);
            }
        }
    }

    /// Clocks the pair (both devices run in step) until every completion the model
    /// expects has come (those the model cannot be sure of aside, which then get a while
    /// to come), polling the CQs; panics after `budget` polls of 100 cycles.
    pub fn settle(&mut self, budget: usize) {
        let sure = |pair: &Self, i: usize| {
            let cq = pair.model.rnic(SIDES[i]).cq(pair.hosts[i].cq.cqn()).expect("model CQ");
            let certain = |e: &&Expected| !matches!(e, Expected::FlushedOrSent { sent: None, .. });
            let modelled = |e: &&Expected| !pair.unmodelled.contains(&usize::from(e.cqe().qpn));
            cq.expected().iter().filter(certain).filter(modelled).count()
        };
        let observed = |pair: &Self, i: usize| {
            pair.hosts[i].cqes.iter().filter(|c| !pair.unmodelled.contains(&usize::from(c.qpn))).count()
        };
        for round in 0.. {
            self.poll();
            if (0..2).all(|i| observed(self, i) >= sure(self, i)) {
                break;
            }
            if round == budget {
                // The comparison says which are missing.
                let counts = ([observed(self, 0), observed(self, 1)], [sure(self, 0), sure(self, 1)]);
                self.check(&format!("completions missing after {budget} polls ({:?} of {:?})", counts.0, counts.1));
                panic!("completions missing: {:?} of {:?}\n{}", counts.0, counts.1, self.journal);
            }
            self.hosts[0].dev.hal().run_idle(100);
        }
        // Then until nothing moves (an unsignaled Read may still be placing its data).
        for _ in 0..budget {
            let now = self.hosts[0].dev.hal().cycles();
            if now - self.activity.get() > QUIET_CYCLES {
                break;
            }
            self.hosts[0].dev.hal().run_idle(100);
        }
        self.poll();
    }

    /// Compares both hosts with the model: every octet of host and device memory (but the
    /// areas of unmodelled QP pairs), every CQE of modelled QPs, and each modelled QP's
    /// state and first Terminate.
    pub fn check(&self, what: &str) {
        let l = self.layout;
        // Every difference is reported, not only the first: together they tell the story.
        let mut problems = Vec::new();
        for (i, h) in self.hosts.iter().enumerate() {
            let m = self.model.rnic(SIDES[i]);
            let mut is = vec![0; l.size()];
            h.buf.read_bytes(0, &mut is);
            let want = m.mem.read(h.buf.iova(), l.size()).expect("model memory");
            let skip = |at: usize| self.unmodelled.iter().any(|&q| l.areas_of(q).contains(&at));
            let differ: Vec<usize> = (0..l.size()).filter(|&at| is[at] != want[at] && !skip(at)).collect();
            if let (Some(&at), Some(&last)) = (differ.first(), differ.last()) {
                problems.push(format!(
                    "side {i} host memory differs from the model in {} octets from offset {at} ({}) to {last} \
                     (iova {:#x}): {:#04x}, model {:#04x}",
                    differ.len(),
                    self.describe(at),
                    h.buf.iova() + at as u64,
                    is[at],
                    want[at],
                ));
            }
            let mut dm = vec![0; h.dm.len()];
            h.dm.read_bytes(0, &mut dm).expect("device memory");
            let want = m.mem.read(h.dm.iova(), h.dm.len()).expect("model memory");
            let skip = |at: usize| self.unmodelled.contains(&(at / (8 * WORDS)));
            if let Some(at) = (0..dm.len()).find(|&at| dm[at] != want[at] && !skip(at)) {
                problems.push(format!(
                    "side {i} device memory differs at offset {at}: {:#04x}, model {:#04x}",
                    dm[at], want[at]
                ));
            }
            let cq = m.cq(h.cq.cqn()).expect("model CQ");
            let skip: Vec<u16> = self.unmodelled.iter().map(|&q| q as u16).collect();
            if let Err(e) = cq.check_except(&h.cqes, &skip) {
                problems.push(format!("side {i} completions differ from the model: {e}"));
            }
            for q in (0..l.qps).filter(|q| !self.unmodelled.contains(q)) {
                let (ctx, status) = h.qps[q].query().expect("QUERY_QP");
                let model = m.qp(q as u32).expect("model QP");
                let (is, want) = ((ctx.state, status.terminate), (model.state(), model.terminate()));
                if is != want {
                    problems.push(format!("side {i} QP {q}: state and Terminate {is:?}, model {want:?}"));
                }
            }
        }
        if !problems.is_empty() {
            panic!("{what}:\n  {}\n{}", problems.join("\n  "), self.journal);
        }
    }

    /// What lies at an offset of a side's buffer, for reports.
    fn describe(&self, at: usize) -> String {
        let l = self.layout;
        if at < l.source {
            return "SOURCE".into();
        }
        for q in 0..l.qps {
            for (name, start, len) in [
                ("INCOMING", l.incoming(q), l.area),
                ("SINK", l.sink(q), l.area),
                ("ATOMIC", l.atomic(q), 8 * WORDS),
                ("RESULT", l.result(q), 8 * WORDS),
                ("INV", l.inv(q), INV_OCTETS),
            ] {
                if (start..start + len).contains(&at) {
                    return format!("QP {q}'s {name} + {}", at - start);
                }
            }
        }
        "FOREIGN or WINDOW".into()
    }

    /// Resets QP pair `q` on both sides, in the devices and the model (after an error).
    pub fn reset(&mut self, q: usize) {
        for (i, h) in self.hosts.iter_mut().enumerate() {
            let caps = QpCaps { conn_id: q as u16, ..self.spec.qps[q] };
            for state in [QpState::Reset, QpState::Rts] {
                h.qps[q].modify(state).expect("modify");
                let ctx = qp_context(&caps, state, h.pds[0].pdn(), h.cq.cqn());
                self.model.rnic_mut(SIDES[i]).write_qp(q as u32, &ctx).expect("model QP");
            }
        }
    }

    /// Registers again every INV MR the model holds ended (its old STag becomes stale).
    pub fn renew_invalidated(&mut self) {
        for i in 0..2 {
            for q in 0..self.layout.qps {
                if !self.valid(i, &self.hosts[i].inv[q]) {
                    self.renew_inv(i, q);
                }
            }
        }
    }

    /// Registers QP pair `q`'s INV MR on side `i` again, in the device and the model.
    fn renew_inv(&mut self, i: usize, q: usize) {
        let h = &mut self.hosts[i];
        h.stale.push(h.inv[q].rkey());
        // Deregistering writes the entry back invalid; registering takes a new key.
        let pdn = h.pds[0].pdn();
        let old = mr_context(&h.inv[q], pdn, false);
        self.model.rnic_mut(SIDES[i]).write_mr(h.inv[q].index(), &old).expect("model MR");
        let at = self.layout.inv(q);
        h.inv[q] = MemoryRegion::register_range(&h.pds[0], h.buf, at, INV_OCTETS, ALL).expect("MR");
        let new = mr_context(&h.inv[q], pdn, true);
        self.model.rnic_mut(SIDES[i]).write_mr(h.inv[q].index(), &new).expect("model MR");
        self.tally.add("INV MRs registered again", 1);
    }

    /// Ends QP pair `q`'s INV MR on `side` by local invalidation (INVALIDATE_MR), in the
    /// device and the model.
    pub fn invalidate_locally(&mut self, side: usize, q: usize) {
        let h = &self.hosts[side];
        if !self.valid(side, &h.inv[q]) {
            return;
        }
        h.inv[q].invalidate().expect("INVALIDATE_MR");
        let _ = writeln!(self.journal, "  side {side} QP {q}: INV MR invalidated locally");
        let (index, key) = (h.inv[q].index(), h.inv[q].rkey() as u8);
        self.model.rnic_mut(SIDES[side]).invalidate_mr(index, key).expect("model INVALIDATE_MR");
        self.tally.add("local invalidations", 1);
    }

    /// One round: work on every QP pair both ways (`per_direction` requests each), or, on
    /// the pair an error goes to, one way with the error among its requests; then the
    /// comparison, and the failed pair reset.
    pub fn round(&mut self, per_direction: usize, error_chance: f64, what: &str) {
        let qps = self.layout.qps;
        self.journal.clear();
        // With RNIC_TRACE set, the waveforms keep the last round only.
        for h in &self.hosts {
            h.dev.hal().with_model(|m| m.trace_restart());
        }
        let error = self.rng.gen_bool(error_chance).then(|| {
            let (q, from) = (self.rng.gen_range(0..qps), self.rng.gen_range(0..2));
            (q, from, ERRORS[self.rng.gen_range(0..ERRORS.len())])
        });
        // A local invalidation now and then, before the round's work (an ended STag for
        // Invalidated errors, and the path itself).
        if self.rng.gen_bool(0.1) {
            let (side, q) = (self.rng.gen_range(0..2), self.rng.gen_range(0..qps));
            if !matches!(error, Some((eq, _, _)) if eq == q) {
                self.invalidate_locally(side, q);
            }
        }
        let _ = writeln!(self.journal, "round with error {error:?}");
        if let Some((q, from, Kind::Invalidated)) = error {
            if self.hosts[1 - from].stale.is_empty() {
                self.invalidate_locally(1 - from, q);
            }
        }
        let mut atomics = Vec::new();
        let mut work = Vec::new();
        for q in 0..qps {
            for from in 0..2 {
                if matches!(error, Some((eq, ef, _)) if eq == q && ef != from) {
                    continue;
                }
                for _ in 0..self.rng.gen_range(1..=per_direction) {
                    let kind = weighted(&mut self.rng, &WORK);
                    work.push(self.work(from, q, kind, &mut atomics));
                }
                if let Some((eq, ef, kind)) = error.filter(|&(eq, ef, _)| eq == q && ef == from) {
                    let failing = self.work(ef, eq, kind, &mut atomics);
                    let at = self.rng.gen_range(0..=work.len());
                    work.insert(at, failing);
                }
            }
        }
        for w in &work {
            self.post(w);
        }
        self.model.run().expect("model run");
        if std::env::var_os("RNIC_WORKLOAD_VERBOSE").is_some() {
            eprint!("{what}: {}", self.journal);
        }
        self.settle(20_000);
        self.check(what);
        if let Some((q, _, kind)) = error {
            self.tally.add(format!("error {kind:?}"), 1);
            self.reset(q);
        }
        self.renew_invalidated();
    }
}

impl Pair<'_> {
    /// One round of the fault isolation test: work on every QP pair both ways
    /// (`per_direction` requests each), and one FPDU of a random pair (the victim) going a
    /// random way corrupted on the link by `corruptor` at a random point of its traffic.
    /// Every other pair must end exactly as the model predicts, every octet and completion
    /// (`check`). The victim, which the model does not run, must fail alone: the side that
    /// received the bad FPDU in ERROR having sent an LLP Terminate, the other side in ERROR
    /// having received it, and every work request posted on the pair completed once (none
    /// lost, none twice, none invented). The victim pair is then reset, its areas of both
    /// hosts taken into the model as the devices left them, and its INV MRs registered
    /// again, so the next round starts from a state both agree on. Returns the mutation.
    pub fn isolation_round(
        &mut self,
        per_direction: usize,
        corruptor: &Rc<RefCell<Corruptor>>,
        what: &str,
    ) -> &'static str {
        let qps = self.layout.qps;
        self.journal.clear();
        for h in &self.hosts {
            h.dev.hal().with_model(|m| m.trace_restart());
        }
        let (victim, from) = (self.rng.gen_range(0..qps), self.rng.gen_range(0..2));
        self.unmodelled = vec![victim];
        let mut atomics = Vec::new();
        let mut work = Vec::new();
        for q in 0..qps {
            for side in 0..2 {
                for _ in 0..self.rng.gen_range(1..=per_direction) {
                    let kind = weighted(&mut self.rng, &WORK);
                    work.push(self.work(side, q, kind, &mut atomics));
                }
            }
        }
        // The bad FPDU is one of the requests' segments the victim sends `from` (Read and
        // Atomic Responses going the same way only make the point later).
        let mulpdu = self.spec.qps[victim].mulpdu;
        let segments: usize =
            work.iter().filter(|w| w.q == victim && w.from == from).map(|w| requests_on_wire(&w.wr, mulpdu)).sum();
        let nth = self.rng.gen_range(0..segments);
        corruptor.borrow_mut().arm(from == 0, victim as u64, nth);
        let _ = writeln!(self.journal, "victim QP {victim}, FPDU {nth} of {segments} from side {from} corrupted");
        for w in &work {
            self.post(w);
        }
        self.model.run().expect("model run");
        if std::env::var_os("RNIC_WORKLOAD_VERBOSE").is_some() {
            eprint!("{what}: {}", self.journal);
        }
        let before: Vec<usize> = self.hosts.iter().map(|h| h.cqes.len()).collect();
        self.settle(20_000);
        let mutation = corruptor.borrow().done.unwrap_or_else(|| panic!("{what}: the FPDU was never corrupted"));
        let _ = writeln!(self.journal, "mutation: {mutation}");
        self.check(what);
        self.check_victim(victim, from, &work, &before, what);

        // The victim starts again from what the devices hold.
        self.reset(victim);
        let areas = self.layout.areas_of(victim);
        for (i, h) in self.hosts.iter_mut().enumerate() {
            let mut left = vec![0; areas.len()];
            h.buf.read_bytes(areas.start, &mut left);
            let m = self.model.rnic_mut(SIDES[i]);
            m.mem.write(h.buf.iova() + areas.start as u64, &left).expect("model memory");
            let mut word = vec![0; 8 * WORDS];
            h.dm.read_bytes(victim * 8 * WORDS, &mut word).expect("device memory");
            m.mem.write(h.dm.iova() + (victim * 8 * WORDS) as u64, &word).expect("model memory");
            // The victim's completions of this round are not the model's.
            let mut at = before[i];
            while at < h.cqes.len() {
                match usize::from(h.cqes[at].qpn) == victim {
                    true => drop(h.cqes.remove(at)),
                    false => at += 1,
                }
            }
        }
        for i in 0..2 {
            self.renew_inv(i, victim);
        }
        self.unmodelled.clear();
        self.renew_invalidated();
        self.tally.add(mutation, 1);
        mutation
    }

    /// The victim of an isolation round failed alone and completed every request once
    /// (its completions of the round are those after `before`).
    fn check_victim(&self, victim: usize, from: usize, work: &[Work], before: &[usize], what: &str) {
        let receiver = 1 - from;
        let states: Vec<_> = self
            .hosts
            .iter()
            .map(|h| h.qps[victim].query().expect("QUERY_QP"))
            .map(|(c, s)| (c.state, s.terminate))
            .collect();
        let (state, sent) = states[receiver];
        let sent = sent.filter(|t| !t.received && t.code.layer == TermCode::LAYER_LLP);
        assert!(
            state == QpState::Error && sent.is_some(),
            "{what}: side {receiver}'s QP {victim} got the bad FPDU: in ERROR with an LLP Terminate sent, not \
             {state:?} {:?}\n{}",
            states[receiver].1,
            self.journal
        );
        let sent = sent.expect("checked");
        assert_eq!(
            states[from],
            (QpState::Error, Some(TermInfo { code: sent.code, received: true })),
            "{what}: side {from}'s QP {victim} in ERROR with the Terminate received\n{}",
            self.journal
        );
        for (i, h) in self.hosts.iter().enumerate() {
            let mut want: Vec<u64> = work
                .iter()
                .filter(|w| w.q == victim)
                .flat_map(|w| {
                    let sends = (w.from == i && w.wr.signaled()).then_some(w.wr.wr_id());
                    let recvs = w.recvs.iter().filter(|_| w.from != i).map(|r| r.wr_id);
                    sends.into_iter().chain(recvs)
                })
                .collect();
            let round = &h.cqes[before[i]..];
            let mut got: Vec<u64> = round.iter().filter(|c| usize::from(c.qpn) == victim).map(|c| c.wr_id).collect();
            // Each WQE completes at most once (a Write with Immediate is two, one id).
            let mut posted: Vec<u64> = work.iter().filter(|w| w.q == victim).flat_map(|w| w.wqe_ids(i)).collect();
            want.sort_unstable();
            got.sort_unstable();
            posted.sort_unstable();
            let count = |ids: &[u64], id: u64| ids.iter().filter(|&&x| x == id).count();
            let unknown: Vec<_> = got.iter().filter(|&&id| count(&posted, id) == 0).collect();
            let twice: Vec<_> = got.iter().filter(|&&id| count(&got, id) > count(&posted, id).max(1)).collect();
            let missing: Vec<_> = want.iter().filter(|id| !got.contains(id)).collect();
            assert!(
                unknown.is_empty() && twice.is_empty() && missing.is_empty(),
                "{what}: side {i}'s QP {victim}: completions of requests never posted {unknown:?}, twice {twice:?}, \
                 missing {missing:?}\n{}",
                self.journal
            );
        }
    }
}

/// A tap that, once armed, corrupts the `nth` FPDU (from 0) for QP `qpn` going `from_a`
/// (or the other way) with one of the fuzzer's mutations, always into a packet whose MPA
/// CRC fails; `done` names the mutation once it has.
pub struct Corruptor {
    target: Option<(bool, u64, usize)>,
    seen: usize,
    pub done: Option<&'static str>,
    rng: StdRng,
    previous: Vec<u8>,
}

impl Corruptor {
    pub fn new(seed: u64) -> Self {
        Corruptor { target: None, seen: 0, done: None, rng: StdRng::seed_from_u64(seed), previous: Vec::new() }
    }

    /// Corrupts the `nth` FPDU for QP `qpn` going `from_a` from now on.
    pub fn arm(&mut self, from_a: bool, qpn: u64, nth: usize) {
        (self.target, self.seen, self.done) = (Some((from_a, qpn, nth)), 0, None);
    }

    /// Looks at one FPDU on the link.
    pub fn see(&mut self, from_a: bool, tuser: u64, fpdu: &mut Vec<u8>) {
        let Some((target_from_a, qpn, nth)) = self.target else {
            self.previous.clone_from(fpdu);
            return;
        };
        if from_a != target_from_a || tuser != qpn {
            self.previous.clone_from(fpdu);
            return;
        }
        self.seen += 1;
        if self.seen <= nth {
            self.previous.clone_from(fpdu);
            return;
        }
        self.target = None;
        let (original, n) = (fpdu.clone(), fpdu.len());
        let crc_holds = |f: &[u8]| f.len() >= 8 && crc_field(crc32c(&f[..f.len() - 4]))[..] == f[f.len() - 4..];
        assert!(crc_holds(&original), "the tap sees whole FPDUs with CRCs: {original:02x?}");
        let rng = &mut self.rng;
        let mut what = "";
        while *fpdu == original || crc_holds(fpdu) {
            fpdu.clone_from(&original);
            what = match rng.gen_range(0..7) {
                0 => {
                    for _ in 0..rng.gen_range(1..=3) {
                        let bit = rng.gen_range(0..n * 8);
                        fpdu[bit / 8] ^= 1 << (bit % 8);
                    }
                    "bit flips"
                }
                1 => {
                    fpdu.truncate(rng.gen_range(1..n));
                    "truncated"
                }
                2 => {
                    // ULPDU_Length (after a leading marker, if the FPDU begins with one).
                    let at = if fpdu[..2] == [0, 0] && n > 8 { 4 } else { 0 };
                    let len: u16 = rng.gen();
                    fpdu[at..at + 2].copy_from_slice(&len.to_be_bytes());
                    "ULPDU_Length rewritten"
                }
                3 => {
                    fpdu[rng.gen_range(0..n)] = rng.gen();
                    "octet rewritten"
                }
                4 if !self.previous.is_empty() => {
                    fpdu.truncate(rng.gen_range(1..n));
                    fpdu.extend_from_slice(&self.previous[rng.gen_range(0..self.previous.len())..]);
                    "spliced"
                }
                5 => {
                    fpdu[n - 4..].fill(0);
                    "CRC field zeroed"
                }
                _ => {
                    let more = rng.gen_range(1..=12);
                    fpdu.extend((0..more).map(|_| rng.gen::<u8>()));
                    "garbage appended"
                }
            };
        }
        self.previous.clone_from(fpdu);
        self.done = Some(what);
    }
}

/// The tap of a [`Corruptor`], for [`with_pair`].
pub fn tap_of(c: &Rc<RefCell<Corruptor>>) -> LinkTap {
    let c = Rc::clone(c);
    Rc::new(RefCell::new(move |from_a: bool, tuser: u64, fpdu: &mut Vec<u8>| c.borrow_mut().see(from_a, tuser, fpdu)))
}

/// Segments a request puts on the wire (for picking which FPDU of a pair to corrupt).
pub fn requests_on_wire(wr: &WorkRequest, mulpdu: u16) -> usize {
    let tagged = |len: u32| segment_count(len as usize, mulpdu, TAGGED_HEADER);
    let untagged = |len: u32| segment_count(len as usize, mulpdu, UNTAGGED_HEADER);
    match *wr {
        WorkRequest::Send { local, .. } => untagged(local.length),
        WorkRequest::Write { local, .. } => tagged(local.length),
        WorkRequest::WriteWithImmediate { local, .. } => tagged(local.length) + 1,
        _ => 1,
    }
}
