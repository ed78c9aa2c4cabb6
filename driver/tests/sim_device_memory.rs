//! Device memory on `rnic_top`: on-chip RAM registered as an MR like host memory, written
//! and read by the peer's RDMA Writes and Reads, the target of its atomics, and filled and
//! read by the host through the BAR0 window. None of it reaches the host bus: the host
//! memory model faults (and panics) on any access outside what the driver mapped.
#![cfg(feature = "sim")]

mod common;

use common::{collect, linked_pair};
use rand::rngs::StdRng;
use rand::{Rng, SeedableRng};
use rnic_driver::sim::SimHal;
use rnic_driver::{
    CompletionQueue, CqeStatus, Device, DeviceMemory, DmaBuffer, MemoryRegion, MrAccess, ProtectionDomain, QpCaps,
    QueuePair, WorkRequest,
};

const ALL: MrAccess = MrAccess { local_write: true, remote_read: true, remote_write: true, remote_atomic: true };

/// B's device memory in use.
const DM_LEN: usize = 16384;

struct Requester<'d> {
    dev: &'d Device<SimHal>,
    buf: &'d DmaBuffer<'d, SimHal>,
    mr: MemoryRegion<'d, SimHal>,
    cq: &'d CompletionQueue<'d, SimHal>,
    qp: QueuePair<'d, SimHal>,
}

/// Runs `f` on A (host memory, a QP in RTS) and B's device memory with its MR, B's QP
/// connected to A's.
fn with_device_memory(f: impl for<'d> FnOnce(Requester<'d>, &DeviceMemory<'d, SimHal>, &MemoryRegion<'d, SimHal>)) {
    let (a, b) = linked_pair();
    let (pda, pdb) = (ProtectionDomain::new(&a).expect("PD"), ProtectionDomain::new(&b).expect("PD"));
    let buf = a.alloc_dma(65536).expect("DMA");
    let dm = b.alloc_device_memory(DM_LEN).expect("device memory");
    let (cqa, cqb) = (CompletionQueue::new(&a, 8, 0).expect("CQ"), CompletionQueue::new(&b, 8, 0).expect("CQ"));
    let caps = QpCaps {
        sq_log_size: 6,
        rq_log_size: 5,
        mulpdu: 1460,
        ird: 4,
        ord: 4,
        crc: true,
        markers_tx: false,
        markers_rx: false,
        conn_id: 0,
    };
    let mut qpa = QueuePair::new(&a, &pda, &cqa, &cqa, caps).expect("QP");
    let mut qpb = QueuePair::new(&b, &pdb, &cqb, &cqb, caps).expect("QP");
    qpa.ready().expect("RTS");
    qpb.ready().expect("RTS");
    let mra = MemoryRegion::register(&pda, &buf, ALL).expect("MR");
    let mrb = MemoryRegion::register_device(&pdb, &dm, ALL).expect("device memory MR");
    f(Requester { dev: &a, buf: &buf, mr: mra, cq: &cqa, qp: qpa }, &dm, &mrb);
}

fn dm_bytes(dm: &DeviceMemory<'_, SimHal>, offset: usize, len: usize) -> Vec<u8> {
    let mut out = vec![0; len];
    dm.read_bytes(offset, &mut out).expect("in the piece");
    out
}

fn buf_bytes(buf: &DmaBuffer<'_, SimHal>, offset: usize, len: usize) -> Vec<u8> {
    let mut out = vec![0; len];
    buf.read_bytes(offset, &mut out);
    out
}

/// Writes at any octet offset and length land byte-exact in device memory (what the host
/// reads through BAR0), nothing around them changes, and Reads return what is there,
/// including what the host wrote through BAR0.
#[test]
fn device_memory_takes_writes_and_serves_reads_byte_exact() {
    with_device_memory(|mut a, dm, mrb| {
        let mut rng = StdRng::seed_from_u64(62);
        let content: Vec<u8> = (0..65536).map(|_| rng.gen()).collect();
        a.buf.write_bytes(0, &content);
        let mut expected = vec![0u8; DM_LEN];
        // Unaligned starts and ends, one segment and many (MULPDU 1460), and one octet.
        let writes = [(3usize, 5000usize, 0usize), (8192, 64, 7000), (9001, 1, 9999), (10240, 6143, 20000)];
        let mut wrs = Vec::new();
        for (i, &(at, len, from)) in writes.iter().enumerate() {
            expected[at..at + len].copy_from_slice(&content[from..from + len]);
            let local = a.mr.sge(from as u64, len as u32).unwrap();
            wrs.push(WorkRequest::Write {
                wr_id: i as u64,
                local,
                remote: mrb.remote(at as u64).unwrap(),
                signaled: true,
            });
        }
        a.qp.post_send_batch(&wrs).expect("post");
        let done = collect(a.dev, a.cq, writes.len());
        assert!(done.iter().all(|c| c.status == CqeStatus::Success), "{done:?}");
        assert!(dm_bytes(dm, 0, DM_LEN) == expected, "device memory holds exactly the Writes");

        // The host's own octets, through BAR0, then everything read back by the peer.
        dm.write_bytes(14000, b"from the host").expect("BAR0 write");
        expected[14000..14013].copy_from_slice(b"from the host");
        let reads = [(0usize, DM_LEN, 32768usize), (9001, 13, 17)];
        let wrs: Vec<_> = (0..)
            .zip(reads)
            .map(|(i, (at, len, into))| WorkRequest::Read {
                wr_id: 10 + i,
                local: a.mr.sge(into as u64, len as u32).unwrap(),
                remote: mrb.remote(at as u64).unwrap(),
                signaled: true,
            })
            .collect();
        a.qp.post_send_batch(&wrs).expect("post");
        let done = collect(a.dev, a.cq, reads.len());
        assert!(done.iter().all(|c| c.status == CqeStatus::Success), "{done:?}");
        assert!(buf_bytes(a.buf, 32768, DM_LEN) == expected, "a Read of all of it returns what is there");
        assert_eq!(buf_bytes(a.buf, 17, 13), expected[9001..9014]);
    });
}

/// ATOM-14 on device memory: Write(X to T), FetchAdd(T), Read(T) in one batch; the atomic
/// sees the Write and the Read sees the atomic.
#[test]
fn atom_14_on_device_memory_write_then_fetch_add_then_read_see_each_other_in_order() {
    with_device_memory(|mut a, dm, mrb| {
        for round in 0..20u64 {
            let x = 0x2222_0000_0000_0000 | round << 8;
            a.buf.write_bytes(0, &x.to_le_bytes());
            dm.write_u64(0x800, 0xDEAD).expect("BAR0 write");
            let remote = mrb.remote(0x800).unwrap();
            let write = WorkRequest::Write { wr_id: 1, local: a.mr.sge(0, 8).unwrap(), remote, signaled: true };
            let local = a.mr.sge(64, 8).unwrap();
            let fa = WorkRequest::FetchAdd { wr_id: 2, local, remote, add: 5, add_mask: 0, signaled: true };
            let read = WorkRequest::Read { wr_id: 3, local: a.mr.sge(128, 8).unwrap(), remote, signaled: true };
            a.qp.post_send_batch(&[write, fa, read]).expect("post");
            let done = collect(a.dev, a.cq, 3);
            let got: Vec<_> = done.iter().map(|c| (c.wr_id, c.status)).collect();
            assert_eq!(got, [(1, CqeStatus::Success), (2, CqeStatus::Success), (3, CqeStatus::Success)]);
            let word = |at| u64::from_le_bytes(buf_bytes(a.buf, at, 8).try_into().unwrap());
            assert_eq!(word(64), x, "round {round}: the FetchAdd saw the Write");
            assert_eq!(word(128), x + 5, "round {round}: the Read saw the FetchAdd");
            assert_eq!(dm.read_u64(0x800).expect("BAR0 read"), x + 5, "round {round}: the host sees the result");
        }
    });
}
