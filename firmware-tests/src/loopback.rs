//! Every operation once on one RNIC whose stream is looped back into itself: QP A and QP
//! B of the same device, each one's CONN_ID the other's QP number, each with its own
//! protection domain, buffer, memory region and CQ, as two ends of a connection would be.
//!
//! The run is the same on every backend: the Verilated RNIC looped in the simulator, a
//! card whose stream rings the driver loops, the board whose shell loops TX into RX. It
//! checks every octet each operation moves or leaves alone, every completion (opcode,
//! status, length, solicited, invalidated STag, immediate octets), the atomics' results
//! against `rnic-proto`'s functions, and ends with an error: an RDMA Write to an STag B
//! invalidated, which B must refuse with the exact Terminate.
use std::collections::VecDeque;
use std::time::{Duration, Instant};

use rnic_driver::stream::{StreamRings, TxRecord};
use rnic_driver::{
    Completion, CompletionQueue, CqeOpcode, CqeStatus, Device, DmaBuffer, Hal, MemoryRegion, MrAccess,
    ProtectionDomain, QpCaps, QpError, QpState, QueuePair, RecvRequest, Sge, TermCode, WorkRequest,
};
use rnic_proto::atomic::{masked_cmp_swap, masked_fetch_add};
use rnic_proto::host::context::MAX_READS;

/// Octets of each end's buffer, and where things live in it.
const BUF_LEN: usize = 16 * 1024;
/// What an end sends, writes from and is read at.
const SOURCE: u64 = 0;
/// Where an end is written (RDMA Write) and receives Sends.
const SINK: u64 = 4096;
/// Where an end places what it reads.
const READ_SINK: u64 = 8192;
/// Receive buffers: one slot per posted receive.
const RECV: u64 = 10 * 1024;
const RECV_SLOT: u64 = 512;
/// B's atomic target word, and where A's atomics land their original value.
const ATOMIC_TARGET: u64 = 14 * 1024;
const ATOMIC_RESULT: u64 = ATOMIC_TARGET + 64;
/// B's region that A's Send with Invalidate invalidates, and A's Write then targets.
const VICTIM: usize = 15 * 1024;
const VICTIM_LEN: usize = 1024;

/// How long one operation may take to complete: generous, for a slow serial line or a
/// slow simulator; a missing completion is an error, not a wait.
const OP_TIMEOUT: Duration = Duration::from_secs(120);
const QP_CAPS: QpCaps = QpCaps {
    sq_log_size: 4,
    rq_log_size: 4,
    mulpdu: 512,
    ird: MAX_READS,
    ord: MAX_READS,
    crc: true,
    markers_tx: false,
    markers_rx: false,
    conn_id: 0,
};
const ALL: MrAccess = MrAccess { local_write: true, remote_read: true, remote_write: true, remote_atomic: true };

/// One end: its PD, buffer, MR, CQ and QP.
struct End<'d, H: Hal> {
    buf: &'d DmaBuffer<'d, H>,
    mr: &'d MemoryRegion<'d, H>,
    cq: &'d CompletionQueue<'d, H>,
    qp: QueuePair<'d, H>,
}

impl<H: Hal> End<'_, H> {
    fn sge(&self, offset: u64, length: u32) -> Result<Sge, String> {
        self.mr.sge(offset, length).map_err(|e| e.to_string())
    }

    fn bytes(&self, offset: u64, len: usize) -> Vec<u8> {
        let mut out = vec![0; len];
        self.buf.read_bytes(offset as usize, &mut out);
        out
    }
}

/// The octets each end's buffer starts with: different per end and per octet.
fn pattern(side: u32) -> Vec<u8> {
    (0..BUF_LEN as u32).map(|i| (i.wrapping_mul(2_654_435_761) >> (side * 8 + 7)) as u8).collect()
}

/// Runs the loopback checks on `dev`, whose TX stream must reach its own RX stream;
/// `pump` runs between polls (it moves FPDUs where the driver is the loop) and fails if
/// the loop failed. Returns one line per check passed.
pub fn loopback_selftest<H: Hal>(
    dev: &Device<H>,
    pump: &mut dyn FnMut() -> Result<(), String>,
) -> Result<Vec<String>, String> {
    let e = |what: &'static str| move |err: rnic_driver::DriverError| format!("{what}: {err}");
    dev.enable();
    let pds = [ProtectionDomain::new(dev).map_err(e("PD"))?, ProtectionDomain::new(dev).map_err(e("PD"))?];
    let bufs = [dev.alloc_dma(BUF_LEN).map_err(e("DMA buffer"))?, dev.alloc_dma(BUF_LEN).map_err(e("DMA buffer"))?];
    for (side, buf) in bufs.iter().enumerate() {
        buf.write_bytes(0, &pattern(side as u32));
    }
    let mrs = [
        MemoryRegion::register(&pds[0], &bufs[0], ALL).map_err(e("MR"))?,
        MemoryRegion::register(&pds[1], &bufs[1], ALL).map_err(e("MR"))?,
    ];
    let victim = MemoryRegion::register_range(&pds[1], &bufs[1], VICTIM, VICTIM_LEN, ALL).map_err(e("MR"))?;
    let cqs = [CompletionQueue::new(dev, 6, 0).map_err(e("CQ"))?, CompletionQueue::new(dev, 6, 0).map_err(e("CQ"))?];
    let mut qa = QueuePair::new(dev, &pds[0], &cqs[0], &cqs[0], QP_CAPS).map_err(e("QP"))?;
    let mut qb = QueuePair::new(dev, &pds[1], &cqs[1], &cqs[1], QP_CAPS).map_err(e("QP"))?;
    let (na, nb) = (conn_id(&qa)?, conn_id(&qb)?);
    qa.set_conn_id(nb).map_err(e("CONN_ID"))?;
    qb.set_conn_id(na).map_err(e("CONN_ID"))?;
    qa.ready().map_err(e("QP to RTS"))?;
    qb.ready().map_err(e("QP to RTS"))?;
    let mut a = End { buf: &bufs[0], mr: &mrs[0], cq: &cqs[0], qp: qa };
    let mut b = End { buf: &bufs[1], mr: &mrs[1], cq: &cqs[1], qp: qb };
    let mut run = Run { pump, done: Vec::new() };
    run.done.push(format!("one RNIC in loopback: QP {na} (A) and QP {nb} (B), MPA CRCs on, MULPDU 512"));
    run.sends(&mut a, &mut b, &victim)?;
    run.write_read(&mut a, &mut b)?;
    run.atomics(&mut a, &mut b)?;
    run.immediate(&mut a, &mut b)?;
    run.terminate(&mut a, &mut b, &victim)?;
    Ok(run.done)
}

/// A QP number as a CONN_ID.
fn conn_id<H: Hal>(qp: &QueuePair<'_, H>) -> Result<u16, String> {
    u16::try_from(qp.qpn()).map_err(|_| format!("QP {} has no 16-bit CONN_ID", qp.qpn()))
}

/// The checks run so far, and the loop's pump.
struct Run<'p> {
    pump: &'p mut dyn FnMut() -> Result<(), String>,
    done: Vec<String>,
}

/// What a completion must say; `None` fields are not checked.
struct Expect {
    wr_id: u64,
    opcode: CqeOpcode,
    status: CqeStatus,
    byte_len: Option<u32>,
    solicited: bool,
    invalidated: Option<u32>,
    imm: Option<[u8; 8]>,
}

impl Expect {
    fn ok(wr_id: u64, opcode: CqeOpcode, byte_len: u32) -> Expect {
        Expect {
            wr_id,
            opcode,
            status: CqeStatus::Success,
            byte_len: Some(byte_len),
            solicited: false,
            invalidated: None,
            imm: None,
        }
    }
}

impl Run<'_> {
    /// The next completion of `end`'s CQ, pumping the loop while it waits.
    fn next<H: Hal>(&mut self, end: &End<'_, H>) -> Result<Completion, String> {
        let deadline = Instant::now() + OP_TIMEOUT;
        loop {
            (self.pump)()?;
            if let Some(c) = end.cq.wait(Duration::from_millis(1)).map_err(|e| e.to_string())? {
                return Ok(c);
            }
            if Instant::now() > deadline {
                return Err(format!("QP {}: no completion within {OP_TIMEOUT:?}", end.qp.qpn()));
            }
        }
    }

    /// Waits for `end`'s next completion and checks it against `want`.
    fn expect<H: Hal>(&mut self, end: &End<'_, H>, want: Expect) -> Result<Completion, String> {
        let c = self.next(end)?;
        let fields = (c.wr_id, c.qpn, c.opcode, c.status, c.solicited, c.invalidated, c.imm);
        let wanted = (want.wr_id, end.qp.qpn(), want.opcode, want.status, want.solicited, want.invalidated, want.imm);
        if fields != wanted || want.byte_len.is_some_and(|n| n != c.byte_len) {
            return Err(format!(
                "completion {c:?}; expected wr_id {}, QP {}, {:?}, {:?}, length {:?}, solicited {}, invalidated \
                 {:?}, immediate {:?}",
                want.wr_id,
                end.qp.qpn(),
                want.opcode,
                want.status,
                want.byte_len,
                want.solicited,
                want.invalidated,
                want.imm
            ));
        }
        Ok(c)
    }

    /// Posts one receive on `end`, into receive slot `slot`.
    fn post_recv<H: Hal>(&mut self, end: &mut End<'_, H>, wr_id: u64, slot: u64) -> Result<(), String> {
        let local = end.sge(RECV + slot * RECV_SLOT, RECV_SLOT as u32)?;
        end.qp.post_recv(&RecvRequest { wr_id, local }).map_err(|e| format!("post_recv: {e}"))
    }

    fn post<H: Hal>(&mut self, end: &mut End<'_, H>, wr: WorkRequest) -> Result<(), String> {
        end.qp.post_send(&wr).map_err(|e| format!("post_send {wr:?}: {e}"))
    }

    /// Send, Send with Solicited Event, Send with Invalidate.
    fn sends<H: Hal>(
        &mut self,
        a: &mut End<'_, H>,
        b: &mut End<'_, H>,
        victim: &MemoryRegion<'_, H>,
    ) -> Result<(), String> {
        let variants: [(&str, bool, Option<u32>, u32); 3] = [
            ("Send", false, None, 300),
            ("Send with Solicited Event", true, None, 1),
            ("Send with Invalidate", false, Some(victim.rkey()), 512),
        ];
        for (n, (name, solicited, invalidate, len)) in variants.into_iter().enumerate() {
            let n = n as u64;
            self.post_recv(b, 100 + n, n)?;
            let local = a.sge(SOURCE + 64 * n, len)?;
            self.post(a, WorkRequest::Send { wr_id: 10 + n, local, solicited, invalidate, signaled: true })?;
            self.expect(a, Expect::ok(10 + n, CqeOpcode::Send, len))?;
            let got = Expect { solicited, invalidated: invalidate, ..Expect::ok(100 + n, CqeOpcode::Recv, len) };
            self.expect(b, got)?;
            same(&a.bytes(SOURCE + 64 * n, len as usize), &b.bytes(RECV + n * RECV_SLOT, len as usize), name)?;
            // The rest of the slot is as it was.
            let rest = RECV + n * RECV_SLOT + u64::from(len);
            let left = (RECV_SLOT - u64::from(len)) as usize;
            same(&pattern(1)[rest as usize..][..left], &b.bytes(rest, left), "the receive slot past the Send")?;
            self.done.push(format!("{name} of {len} octets: completions and every octet"));
        }
        Ok(())
    }

    /// RDMA Write A → B, RDMA Read by A from B; the octets around each target untouched.
    fn write_read<H: Hal>(&mut self, a: &mut End<'_, H>, b: &mut End<'_, H>) -> Result<(), String> {
        let (len, at) = (1000u32, 40u64);
        let remote = b.mr.remote(SINK + at).map_err(|e| e.to_string())?;
        let local = a.sge(SOURCE + 8, len)?;
        self.post(a, WorkRequest::Write { wr_id: 20, local, remote, signaled: true })?;
        self.expect(a, Expect::ok(20, CqeOpcode::RdmaWrite, len))?;
        // A Write has no completion at B: a Send after it arrives after it.
        self.post_recv(b, 120, 0)?;
        self.post(
            a,
            WorkRequest::Send { wr_id: 21, local: a.sge(0, 0)?, solicited: false, invalidate: None, signaled: true },
        )?;
        self.expect(a, Expect::ok(21, CqeOpcode::Send, 0))?;
        self.expect(b, Expect::ok(120, CqeOpcode::Recv, 0))?;
        let mut want = pattern(1)[SINK as usize..][..2048].to_vec();
        want[at as usize..][..len as usize].copy_from_slice(&pattern(0)[8..][..len as usize]);
        same(&want, &b.bytes(SINK, 2048), "RDMA Write target and the octets around it")?;
        self.done.push(format!("RDMA Write of {len} octets: placed, nothing around it touched"));

        let (len, from) = (1500u32, 200u64);
        let remote = b.mr.remote(SOURCE + from).map_err(|e| e.to_string())?;
        let local = a.sge(READ_SINK + 16, len)?;
        self.post(a, WorkRequest::Read { wr_id: 22, local, remote, signaled: true })?;
        self.expect(a, Expect::ok(22, CqeOpcode::RdmaRead, len))?;
        let mut want = pattern(0)[READ_SINK as usize..][..2048].to_vec();
        want[16..][..len as usize].copy_from_slice(&pattern(1)[from as usize..][..len as usize]);
        same(&want, &a.bytes(READ_SINK, 2048), "RDMA Read sink and the octets around it")?;
        self.done.push(format!("RDMA Read of {len} octets (three MULPDU-sized responses): placed exactly"));
        Ok(())
    }

    /// Masked FetchAdd and masked CmpSwap (RFC 7306), one that swaps and one that does not.
    fn atomics<H: Hal>(&mut self, a: &mut End<'_, H>, b: &mut End<'_, H>) -> Result<(), String> {
        let mut word = 0x00ff_00ff_7fff_fff0_u64;
        b.buf.write_u64(ATOMIC_TARGET as usize, word);
        let remote = b.mr.remote(ATOMIC_TARGET).map_err(|e| e.to_string())?;
        let local = a.sge(ATOMIC_RESULT, 8)?;
        let (add, add_mask) = (0x0101_0101_0000_0020_u64, 0x0000_8000_8000_0000_u64);
        self.post(a, WorkRequest::FetchAdd { wr_id: 30, local, remote, add, add_mask, signaled: true })?;
        self.expect(a, Expect::ok(30, CqeOpcode::Atomic, 8))?;
        self.check_atomic(a, b, word, masked_fetch_add(word, add, add_mask), "masked FetchAdd")?;
        word = masked_fetch_add(word, add, add_mask);

        for (n, compare) in [word, !word].into_iter().enumerate() {
            let (compare_mask, swap, swap_mask) =
                (0xffff_0000_ffff_0000_u64, 0x1234_5678_9abc_def0_u64, 0x00ff_ff00_0000_ffff);
            let wr_id = 31 + n as u64;
            let wr =
                WorkRequest::CmpSwap { wr_id, local, remote, compare, compare_mask, swap, swap_mask, signaled: true };
            self.post(a, wr)?;
            self.expect(a, Expect::ok(wr_id, CqeOpcode::Atomic, 8))?;
            let after = masked_cmp_swap(word, swap, swap_mask, compare, compare_mask);
            let what = if after == word { "masked CmpSwap, no match" } else { "masked CmpSwap, match" };
            self.check_atomic(a, b, word, after, what)?;
            word = after;
        }
        Ok(())
    }

    /// A's result word holds `before`, B's target `after`, and nothing beside them moved.
    fn check_atomic<H: Hal>(
        &mut self,
        a: &End<'_, H>,
        b: &End<'_, H>,
        before: u64,
        after: u64,
        what: &str,
    ) -> Result<(), String> {
        let (got_before, got_after) = (a.buf.read_u64(ATOMIC_RESULT as usize), b.buf.read_u64(ATOMIC_TARGET as usize));
        if (got_before, got_after) != (before, after) {
            return Err(format!(
                "{what}: original {got_before:#018x}, target now {got_after:#018x}; expected {before:#018x} and {after:#018x}"
            ));
        }
        let guard = |end: &End<'_, H>, side, at: u64| {
            let pat = pattern(side);
            same(&pat[at as usize + 8..][..56], &end.bytes(at + 8, 56), "the octets after an atomic's word")
        };
        guard(a, 0, ATOMIC_RESULT)?;
        guard(b, 1, ATOMIC_TARGET)?;
        self.done.push(format!("{what}: original {before:#018x} returned, target {after:#018x}"));
        Ok(())
    }

    /// Immediate Data with Solicited Event, and an RDMA Write with Immediate Data.
    fn immediate<H: Hal>(&mut self, a: &mut End<'_, H>, b: &mut End<'_, H>) -> Result<(), String> {
        let data = *b"imm-data";
        self.post_recv(b, 140, 1)?;
        self.post(a, WorkRequest::Immediate { wr_id: 40, data, solicited: true, signaled: true })?;
        self.expect(a, Expect::ok(40, CqeOpcode::Send, 8))?;
        let got = Expect { solicited: true, imm: Some(data), ..Expect::ok(140, CqeOpcode::RecvImm, 8) };
        self.expect(b, got)?;
        self.done.push("Immediate Data with Solicited Event: the eight octets in B's completion".into());

        let (data, len, at) = (*b"\x01\x02\x03\x04\xfd\xfe\xff\x00", 777u32, 2600u64);
        self.post_recv(b, 141, 2)?;
        let remote = b.mr.remote(SINK + at).map_err(|e| e.to_string())?;
        let local = a.sge(SOURCE + 1, len)?;
        self.post(
            a,
            WorkRequest::WriteWithImmediate { wr_id: 41, local, remote, data, solicited: false, signaled: true },
        )?;
        self.expect(a, Expect::ok(41, CqeOpcode::Send, 8))?;
        let got = Expect { imm: Some(data), ..Expect::ok(141, CqeOpcode::RecvImm, 8) };
        self.expect(b, got)?;
        same(&pattern(0)[1..][..len as usize], &b.bytes(SINK + at, len as usize), "RDMA Write with Immediate Data")?;
        self.done.push(format!("RDMA Write with Immediate Data: {len} octets placed before the immediate completed"));
        Ok(())
    }

    /// A Write to the STag B's Send with Invalidate invalidated. A's Write completes once
    /// sent, as every RDMA Write does; B refuses it with Terminate DDP / Tagged Buffer /
    /// Invalid STag (CHECKLIST: "STag invalid or invalidated: 1/1/0x00"), and both QPs end
    /// in ERROR, where A's next request completes FLUSHED.
    fn terminate<H: Hal>(
        &mut self,
        a: &mut End<'_, H>,
        b: &mut End<'_, H>,
        victim: &MemoryRegion<'_, H>,
    ) -> Result<(), String> {
        let remote = victim.remote(0).map_err(|e| e.to_string())?;
        let local = a.sge(SOURCE, 64)?;
        self.post(a, WorkRequest::Write { wr_id: 50, local, remote, signaled: true })?;
        self.expect(a, Expect::ok(50, CqeOpcode::RdmaWrite, 64))?;
        let deadline = Instant::now() + OP_TIMEOUT;
        while a.qp.error().map_err(|e| format!("QUERY_QP: {e}"))?.is_none() {
            (self.pump)()?;
            if Instant::now() > deadline {
                return Err(format!("no Terminate reached A within {OP_TIMEOUT:?}"));
            }
        }
        let code = TermCode::DDP_TAGGED_INVALID_STAG;
        for (end, by_peer) in [(&*a, true), (&*b, false)] {
            match end.qp.error().map_err(|e| format!("QUERY_QP: {e}"))? {
                Some(QpError::Terminated { by_peer: p, code: c, state: QpState::Error })
                    if (p, c) == (by_peer, code) => {}
                other => {
                    let who = if by_peer { "by the peer" } else { "by itself" };
                    return Err(format!(
                        "QP {}: {other:?}; expected Terminate {code} sent {who}, in ERROR",
                        end.qp.qpn()
                    ));
                }
            }
        }
        same(&pattern(1)[VICTIM..][..VICTIM_LEN], &b.bytes(VICTIM as u64, VICTIM_LEN), "the invalidated region")?;
        let local = a.sge(SOURCE, 16)?;
        self.post(a, WorkRequest::Send { wr_id: 51, local, solicited: false, invalidate: None, signaled: true })?;
        let flushed = Expect { status: CqeStatus::Flushed, byte_len: Some(0), ..Expect::ok(51, CqeOpcode::Send, 0) };
        self.expect(a, flushed)?;
        self.done.push(format!(
            "RDMA Write to an invalidated STag: Terminate {code} from B, both QPs in ERROR, the region untouched, \
             A's next Send FLUSHED"
        ));
        Ok(())
    }
}

/// Fails naming the first octet where `got` differs from `want`.
fn same(want: &[u8], got: &[u8], what: &str) -> Result<(), String> {
    match want.iter().zip(got).position(|(w, g)| w != g) {
        None if want.len() == got.len() => Ok(()),
        None => Err(format!("{what}: {} octets, expected {}", got.len(), want.len())),
        Some(i) => Err(format!("{what}: octet {i} is {:#04x}, expected {:#04x}", got[i], want[i])),
    }
}

/// The driver as the loop, for a device whose streams go through its stream rings (a
/// card without a TCP engine): every FPDU taken from the TX ring is written into the RX
/// ring for the QP its CONN_ID names, in order; what the RX ring has no room for yet
/// waits for the next call.
pub struct RingLoop<'h, H: Hal + ?Sized> {
    rings: StreamRings<'h, H>,
    waiting: VecDeque<TxRecord>,
    /// FPDUs carried so far.
    pub fpdus: u64,
}

/// Each stream ring holds 2^16 octets: many records of the largest FPDU.
const RING_LOG2: u32 = 16;

impl<'h, H: Hal + ?Sized> RingLoop<'h, H> {
    /// Turns the stream rings of the device behind `hal` on, looped.
    pub fn new(hal: &'h H) -> Result<Self, String> {
        let rings = StreamRings::new(hal, RING_LOG2, RING_LOG2).map_err(|e| format!("stream rings: {e}"))?;
        Ok(RingLoop { rings, waiting: VecDeque::new(), fpdus: 0 })
    }

    /// Moves what the device sent back into it.
    pub fn pump(&mut self) -> Result<(), String> {
        self.waiting.extend(self.rings.take_tx().map_err(|e| format!("TX ring: {e}"))?);
        while let Some(record) = self.waiting.front() {
            if !self.rings.push_rx(record.conn_id, &record.fpdu).map_err(|e| format!("RX ring: {e}"))? {
                break;
            }
            self.waiting.pop_front();
            self.fpdus += 1;
        }
        Ok(())
    }
}
