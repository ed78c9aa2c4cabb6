//! The atomic responder on its own: one `rnic_top` whose streams a raw peer plays. With no
//! requester RNIC there is no SQ fetch and no ORD in the way: the peer offers FetchAdd(+1)
//! requests on every QP as fast as the link takes them, keeping each QP's IRD full, and
//! the RNIC answers from a word of its host memory (behind the DMA latency) or of its
//! device memory. What it measures is what RFC 7306 asks of a responder: Atomic Responses
//! per cycle, against the link's own bound (W octets per cycle over the request FPDU).
//!
//! Every response is checked: QN 3, the Request Identifier of a request still owed on
//! that QP, in order; the originals of a word are 0..n, each once, and the word ends at n.
use rnic_driver::sim::{RawPeer, SimHal};
use rnic_driver::{CompletionQueue, Device, MemoryRegion, MrAccess, ProtectionDomain, QpCaps, QueuePair};
use rnic_proto::ddp::DdpHeader;
use rnic_proto::host::context::MAX_READS;
use rnic_proto::mpa::{Framer, FramingConfig};
use rnic_proto::rdmap::{parse_ulpdu, AtomicRequest, RdmapHeader, Segment};

use crate::perf::CYCLE_BUDGET;

/// Inbound atomics each QP accepts at once (its IRD, the most a QP may have), all used.
const IRD: u32 = MAX_READS as u32;
const ALL: MrAccess = MrAccess { local_write: true, remote_read: true, remote_write: true, remote_atomic: true };

/// What the responder did.
#[derive(Clone, Debug)]
pub struct ResponderRun {
    pub ops: u64,
    pub cycles: u64,
    /// Octets of one Atomic Request FPDU on the wire.
    pub request_octets: usize,
}

impl ResponderRun {
    pub fn ops_per_cycle(&self) -> f64 {
        self.ops as f64 / self.cycles as f64
    }

    /// The most requests per cycle an 8-octet link carries.
    pub fn link_bound(&self) -> f64 {
        8.0 / self.request_octets.next_multiple_of(8) as f64
    }
}

/// How the run is set up.
#[derive(Clone, Copy, Debug)]
pub struct ResponderConfig {
    pub qps: u16,
    pub iters: u32,
    pub contended: bool,
    pub device_memory: bool,
    pub dma_latency: u64,
    pub crc: bool,
}

/// The word QP `q` targets: one for all when contended, else one of its own.
fn word_of(q: usize, contended: bool) -> u64 {
    if contended {
        0
    } else {
        64 * q as u64
    }
}

/// Runs `config.iters` FetchAdd(+1) per QP against one RNIC and checks every answer.
pub fn atomic_responder(config: ResponderConfig) -> Result<ResponderRun, String> {
    let hal = SimHal::open("rnic_top").map_err(|e| format!("cannot open the rnic_top model: {e}"))?;
    hal.with_dma_timing(|t| {
        t.read_latency = config.dma_latency;
        t.write_latency = config.dma_latency;
    });
    let peer = hal.attach_raw_peer();
    let dev = Device::open(hal).map_err(|e| format!("RNIC: {e}"))?;
    dev.enable();
    let pd = ProtectionDomain::new(&dev).map_err(|e| e.to_string())?;
    let cq = CompletionQueue::new(&dev, 6, 0).map_err(|e| e.to_string())?;
    let mut qps = Vec::new();
    for q in 0..config.qps {
        let caps = QpCaps {
            sq_log_size: 4,
            rq_log_size: 4,
            mulpdu: 1460,
            ird: IRD as u8,
            ord: 1,
            crc: config.crc,
            markers_tx: false,
            markers_rx: false,
            conn_id: q,
        };
        let mut qp = QueuePair::new(&dev, &pd, &cq, &cq, caps).map_err(|e| e.to_string())?;
        qp.ready().map_err(|e| e.to_string())?;
        qps.push(qp);
    }
    let run = |mr: &MemoryRegion<'_, SimHal>, word: &dyn Fn(u64) -> u64| drive(&dev, &peer, &qps, mr, word, config);
    if config.device_memory {
        let dm = dev.alloc_device_memory(4096).map_err(|e| e.to_string())?;
        let mr = MemoryRegion::register_device(&pd, &dm, ALL).map_err(|e| e.to_string())?;
        run(&mr, &|at| dm.read_u64(at as usize).unwrap_or(u64::MAX))
    } else {
        let buf = dev.alloc_dma(4096).map_err(|e| e.to_string())?;
        let mr = MemoryRegion::register(&pd, &buf, ALL).map_err(|e| e.to_string())?;
        run(&mr, &|at| buf.read_u64(at as usize))
    }
}

fn drive(
    dev: &Device<SimHal>,
    peer: &RawPeer,
    qps: &[QueuePair<'_, SimHal>],
    mr: &MemoryRegion<'_, SimHal>,
    word: &dyn Fn(u64) -> u64,
    config: ResponderConfig,
) -> Result<ResponderRun, String> {
    let mut framer = Framer::new(FramingConfig { markers: false, crc: config.crc });
    let n = qps.len();
    // Per QP: requests sent (their MSNs and Request Identifiers are 1..=sent), answered.
    let (mut sent, mut answered) = (vec![0u32; n], vec![0u32; n]);
    let mut originals: Vec<Vec<u64>> = vec![Vec::new(); n];
    let total = u64::from(config.iters) * n as u64;
    let mut request_octets = 0;
    let start = dev.hal().cycles();
    let mut done = 0u64;
    while done < total {
        for q in 0..n {
            while sent[q] < config.iters && sent[q] - answered[q] < IRD {
                sent[q] += 1;
                let req = AtomicRequest::fetch_add(sent[q], mr.rkey(), mr.va() + word_of(q, config.contended), 1, 0);
                let mut fpdu = Vec::new();
                framer
                    .frame(&Segment::atomic_request(sent[q], req).to_vec(), &mut fpdu)
                    .map_err(|e| format!("{e:?}"))?;
                request_octets = fpdu.len();
                peer.send(&fpdu, u64::from(qps[q].qpn()));
            }
        }
        dev.hal().run_idle(4);
        for (fpdu, conn) in peer.take_sent() {
            let q = conn as usize;
            let len = usize::from(u16::from_be_bytes([fpdu[0], fpdu[1]]));
            let seg = parse_ulpdu(&fpdu[2..2 + len]).map_err(|e| format!("QP {q}: {e:?}"))?;
            let (RdmapHeader::AtomicResponse(resp), DdpHeader::Untagged(ddp)) = (seg.header, seg.ddp) else {
                return Err(format!("QP {q}: expected an Atomic Response, got {seg:?}"));
            };
            let want = answered.get(q).map(|a| a + 1);
            if ddp.qn != 3 || Some(ddp.msn) != want || Some(resp.request_id) != want {
                return Err(format!(
                    "QP {q}: response QN {} MSN {} for request {}, expected {want:?}",
                    ddp.qn, ddp.msn, resp.request_id
                ));
            }
            answered[q] += 1;
            originals[q].push(resp.original);
            done += 1;
        }
        if dev.hal().cycles() - start > CYCLE_BUDGET {
            return Err(format!("{done} of {total} atomics answered after {CYCLE_BUDGET} cycles"));
        }
    }
    let cycles = dev.hal().cycles() - start;
    let groups: Vec<Vec<u64>> = match config.contended {
        true => vec![originals.concat()],
        false => originals,
    };
    for (g, mut values) in groups.into_iter().enumerate() {
        let at = word_of(g, config.contended);
        values.sort_unstable();
        let count = values.len() as u64;
        if values.iter().enumerate().any(|(i, &v)| v != i as u64) || word(at) != count {
            return Err(format!(
                "word at {at:#x}: {count} FetchAdds left {} and originals that are not 0..{count}",
                word(at)
            ));
        }
    }
    Ok(ResponderRun { ops: total, cycles, request_octets })
}
