//! RFC 7306 measurements on a [`Pair`]: A runs atomics on B's memory, or sends B Immediate
//! Data. Figures are in RNIC clock cycles, as in [`crate::perf`], and every run checks its
//! result: each FetchAdd(+1) returns a distinct ticket and the counter ends at their count;
//! each CmpSwap returns the value the one before it left; each Immediate Data arrives with
//! its octets. Targets lie in B's host memory, or in B's device memory when the pair has
//! it ([`End::dm`]).
use std::time::Instant;

use rnic_driver::{Completion, CqeOpcode, CqeStatus, RecvRequest, WorkRequest};

pub use crate::cli::AtomicKind;
use crate::pair::{End, Pair, DEPTH};
use crate::perf::{next_completion, CYCLE_BUDGET};

/// What an atomic run measured, and the original values each QP got back, in its order.
#[derive(Clone, Debug)]
pub struct AtomicRun {
    pub ops: u64,
    pub cycles: u64,
    pub seconds: f64,
    pub originals: Vec<Vec<u64>>,
}

impl AtomicRun {
    pub fn ops_per_cycle(&self) -> f64 {
        self.ops as f64 / self.cycles as f64
    }
}

/// Where B's target word for QP `q` lies (an offset in B's target memory): one word for
/// all when contended, else a word of QP `q`'s own (in a 64-octet line of its own).
fn target(q: usize, contended: bool) -> u64 {
    if contended {
        0
    } else {
        64 * q as u64
    }
}

/// The buffer B's target at `offset` of its target memory names.
fn remote(end: &End<'_>, offset: u64) -> Result<rnic_driver::RemoteBuf, String> {
    let mr = end.dm.as_ref().map_or(&end.mr, |dm| &dm.mr);
    mr.remote(offset).map_err(|e| e.to_string())
}

/// The 64-bit word at `offset` of an end's target memory.
fn target_word(end: &End<'_>, offset: u64) -> Result<u64, String> {
    match &end.dm {
        Some(dm) => dm.memory.read_u64(offset as usize).map_err(|e| e.to_string()),
        None => Ok(word(end, offset)),
    }
}

fn set_target_word(end: &End<'_>, offset: u64, value: u64) -> Result<(), String> {
    match &end.dm {
        Some(dm) => dm.memory.write_u64(offset as usize, value).map_err(|e| e.to_string()),
        None => {
            end.buf.write_bytes(offset as usize, &value.to_le_bytes());
            Ok(())
        }
    }
}

fn request(
    kind: AtomicKind,
    wr_id: u64,
    local: rnic_driver::Sge,
    remote: rnic_driver::RemoteBuf,
    n: u64,
) -> WorkRequest {
    match kind {
        AtomicKind::Fadd => WorkRequest::FetchAdd { wr_id, local, remote, add: 1, add_mask: 0, signaled: true },
        AtomicKind::Cswap => WorkRequest::CmpSwap {
            wr_id,
            local,
            remote,
            compare: 0,
            compare_mask: 0,
            swap: n,
            swap_mask: u64::MAX,
            signaled: true,
        },
    }
}

fn word(end: &End<'_>, offset: u64) -> u64 {
    u64::from_le_bytes(end.bytes(offset, 8).try_into().expect("8 octets"))
}

/// `iters` atomics per QP, up to [`DEPTH`] in flight each; QP `q`'s `i`-th original value
/// lands at `sink(q) + 8 i` (the pair's slots must hold `8 iters` octets). Contended: every
/// QP on one word; otherwise each QP on a word of its own. Then checks the results.
pub fn atomic_bandwidth(
    pair: &mut Pair<'_>,
    kind: AtomicKind,
    contended: bool,
    iters: u32,
) -> Result<AtomicRun, String> {
    let qps = pair.a.qps.len();
    for q in 0..qps {
        set_target_word(&pair.b, target(q, contended), 0)?;
    }
    let (mut posted, mut done) = (vec![0u32; qps], vec![0u32; qps]);
    let total = u64::from(iters) * qps as u64;
    let (wall, start) = (Instant::now(), pair.a.hal().cycles());
    let (mut completed, mut last) = (0u64, start);
    while completed < total {
        for q in 0..qps {
            let room = (DEPTH - (posted[q] - done[q])).min(iters - posted[q]);
            let remote = remote(&pair.b, target(q, contended))?;
            let mut wrs = Vec::new();
            for i in posted[q]..posted[q] + room {
                let local = pair.a.mr.sge(pair.a.sink(q) + 8 * u64::from(i), 8).map_err(|e| e.to_string())?;
                let n = (q as u64) << 32 | u64::from(i);
                wrs.push(request(kind, n, local, remote, n + 1));
            }
            pair.a.qps[q].post_send_batch(&wrs).map_err(|e| e.to_string())?;
            posted[q] += room;
        }
        let mut any = false;
        while let Some(c) = pair.a.cq.poll().map_err(|e| e.to_string())? {
            check_atomic(&c)?;
            done[c.qpn as usize] += 1;
            completed += 1;
            last = pair.a.hal().cycles();
            any = true;
        }
        if !any {
            if pair.a.hal().cycles() - start > CYCLE_BUDGET {
                return Err(format!("{completed} of {total} atomics completed after {CYCLE_BUDGET} cycles"));
            }
            pair.a.hal().run_idle(4);
        }
    }
    let seconds = wall.elapsed().as_secs_f64();
    let returned: Vec<Vec<u64>> =
        (0..qps).map(|q| (0..u64::from(iters)).map(|i| word(&pair.a, pair.a.sink(q) + 8 * i)).collect()).collect();
    check_results(pair, kind, contended, &returned)?;
    Ok(AtomicRun { ops: total, cycles: last - start, seconds, originals: returned })
}

fn check_atomic(c: &Completion) -> Result<(), String> {
    if c.status != CqeStatus::Success || c.opcode != CqeOpcode::Atomic {
        return Err(format!("QP {} completed wr_id {:#x} as {:?} with {:?}", c.qpn, c.wr_id, c.opcode, c.status));
    }
    Ok(())
}

/// FetchAdd(+1): the tickets of each word are 0..n, each once, and the word holds n.
/// CmpSwap: each word's originals chain — every value but one was swapped in by another
/// operation on the word, and the word holds the one no operation returned.
fn check_results(pair: &Pair<'_>, kind: AtomicKind, contended: bool, returned: &[Vec<u64>]) -> Result<(), String> {
    let groups: Vec<Vec<usize>> =
        if contended { vec![(0..returned.len()).collect()] } else { (0..returned.len()).map(|q| vec![q]).collect() };
    for group in groups {
        let mut values: Vec<u64> = group.iter().flat_map(|&q| returned[q].iter().copied()).collect();
        let at = target(group[0], contended);
        let now = target_word(&pair.b, at)?;
        let n = values.len() as u64;
        match kind {
            AtomicKind::Fadd => {
                values.sort_unstable();
                if values.iter().enumerate().any(|(i, &v)| v != i as u64) || now != n {
                    return Err(format!("word at {at:#x}: {n} FetchAdds left {now} and tickets that are not 0..{n}"));
                }
            }
            AtomicKind::Cswap => {
                // Swapped-in values are (q << 32 | i) + 1; the word started at 0.
                let mut written: Vec<u64> = group
                    .iter()
                    .flat_map(|&q| (0..returned[q].len() as u64).map(move |i| ((q as u64) << 32 | i) + 1))
                    .collect();
                written.push(0);
                values.push(now);
                values.sort_unstable();
                written.sort_unstable();
                if values != written {
                    return Err(format!("word at {at:#x}: the CmpSwap originals do not chain"));
                }
            }
        }
    }
    Ok(())
}

/// One atomic at a time on QP 0 against one word, `iters` times: cycles from the doorbell
/// to the atomic's completion (its original value in A's memory), checked each time.
pub fn atomic_latency(pair: &mut Pair<'_>, kind: AtomicKind, iters: u32) -> Result<Vec<u64>, String> {
    set_target_word(&pair.b, 0, 0)?;
    let remote = remote(&pair.b, 0)?;
    let local = pair.a.mr.sge(pair.a.sink(0), 8).map_err(|e| e.to_string())?;
    let mut samples = Vec::new();
    let mut expected = 0;
    for i in 0..u64::from(iters) {
        pair.a.qps[0].post_send(&request(kind, i, local, remote, i + 1)).map_err(|e| e.to_string())?;
        let start = pair.a.hal().cycles();
        let (c, at_cycle) = next_completion(&pair.a, start)?;
        check_atomic(&c)?;
        let got = word(&pair.a, pair.a.sink(0));
        if c.wr_id != i || got != expected {
            return Err(format!("atomic {i}: completion {c:?}, original {got}, expected {expected}"));
        }
        expected = match kind {
            AtomicKind::Fadd => expected + 1,
            AtomicKind::Cswap => i + 1,
        };
        samples.push(at_cycle - start);
    }
    Ok(samples)
}

/// Immediate Data ping-pong on QP 0: A sends 8 octets to B, B sends them back, `iters`
/// times; one way each, from the sender's doorbell to the receive's completion at the
/// peer, which must carry the octets sent.
pub fn imm_pingpong(pair: &mut Pair<'_>, iters: u32) -> Result<Vec<u64>, String> {
    let mut samples = Vec::new();
    for i in 0..iters {
        for (from, to) in [(0u8, 1u8), (1, 0)] {
            let (sender, receiver) = if from == 0 { (&mut pair.a, &mut pair.b) } else { (&mut pair.b, &mut pair.a) };
            // The receive is consumed and its buffer untouched (its length does not matter).
            let sink = receiver.mr.sge(receiver.sink(0), 0).map_err(|e| e.to_string())?;
            receiver.qps[0].post_recv(&RecvRequest { wr_id: u64::from(i), local: sink }).map_err(|e| e.to_string())?;
            let data = (u64::from(i) << 16 | u64::from(from) << 8 | u64::from(to)).to_be_bytes();
            sender.qps[0]
                .post_send(&WorkRequest::Immediate { wr_id: u64::from(i), data, solicited: false, signaled: false })
                .map_err(|e| e.to_string())?;
            let start = sender.hal().cycles();
            let (c, at) = next_completion(receiver, start)?;
            if c.opcode != CqeOpcode::RecvImm || c.wr_id != u64::from(i) || c.imm != Some(data) {
                return Err(format!("expected Immediate Data {data:02x?} for receive {i}, got {c:?}"));
            }
            samples.push(at - start);
        }
    }
    Ok(samples)
}

/// The sequencer: contended FetchAdd(+1) from every QP (checked as [`atomic_bandwidth`]
/// does), and each QP's own tickets must rise.
pub fn sequencer(pair: &mut Pair<'_>, iters: u32) -> Result<AtomicRun, String> {
    let run = atomic_bandwidth(pair, AtomicKind::Fadd, true, iters)?;
    if let Some(q) = run.originals.iter().position(|t| t.windows(2).any(|w| w[0] >= w[1])) {
        return Err(format!("QP {q}'s tickets do not rise: the responder reordered its requests"));
    }
    Ok(run)
}
