//! Tearing objects down under traffic, on two Verilated RNICs (`rnic_top`): once the
//! command that resets a QP, disables a CQ or invalidates an MR has completed, the RNIC
//! touches none of that object's memory again, so the driver may free it at once. The
//! simulated IOMMU unmaps what is freed, and an access to it afterwards is a fault.
#![cfg(feature = "sim")]

mod common;

use common::{collect, linked_pair, raw_device};
use rnic_driver::sim::{Phase, SimHal};
use rnic_driver::{
    CompletionQueue, CqeStatus, Device, MemoryRegion, MrAccess, ProtectionDomain, QpCaps, QpState, QueuePair,
    RecvRequest, RemoteBuf, WorkRequest,
};

const BUFFER: usize = 64 * 1024;
const ALL: MrAccess = MrAccess { local_write: true, remote_read: true, remote_write: true, remote_atomic: false };
/// Large enough that the payload reads and placement writes of one message outlast the
/// 200-cycle DMA round trip many times over.
const MESSAGE: u32 = 16 * 1024;

fn caps() -> QpCaps {
    QpCaps {
        sq_log_size: 5,
        rq_log_size: 5,
        mulpdu: 1460,
        ird: 4,
        ord: 4,
        crc: true,
        markers_tx: false,
        markers_rx: false,
        conn_id: 0,
    }
}

fn record_faults(dev: &Device<SimHal>) {
    dev.hal().with_memory(|m| m.fail_on_fault(false));
}

fn faults(dev: &Device<SimHal>) -> Vec<String> {
    dev.hal().with_memory(|m| m.faults().iter().map(ToString::to_string).collect())
}

/// A's QP, CQ, MR and buffers are dropped (reset, disabled, invalidated, freed) while A
/// sends Writes and Sends out of its buffer and B writes into it: DMA of A's that the
/// commands found in flight has finished before each command completed.
#[test]
fn objects_freed_right_after_their_commands_complete_are_never_touched_again() {
    for wait in [150, 400, 900] {
        let (a, b) = linked_pair();
        record_faults(&a);
        let (pda, pdb) = (ProtectionDomain::new(&a).expect("PD"), ProtectionDomain::new(&b).expect("PD"));
        let (bufa, bufb) = (a.alloc_dma(BUFFER).expect("DMA"), b.alloc_dma(BUFFER).expect("DMA"));
        let mra = MemoryRegion::register(&pda, &bufa, ALL).expect("MR");
        let mrb = MemoryRegion::register(&pdb, &bufb, ALL).expect("MR");
        let (cqa, cqb) = (CompletionQueue::new(&a, 6, 0).expect("CQ"), CompletionQueue::new(&b, 6, 0).expect("CQ"));
        let mut qpa = QueuePair::new(&a, &pda, &cqa, &cqa, caps()).expect("QP");
        let mut qpb = QueuePair::new(&b, &pdb, &cqb, &cqb, caps()).expect("QP");
        qpa.ready().expect("RTS");
        qpb.ready().expect("RTS");

        for i in 0..4 {
            qpb.post_recv(&RecvRequest { wr_id: i, local: mrb.sge(0, MESSAGE).unwrap() }).expect("recv B");
            qpa.post_recv(&RecvRequest { wr_id: i, local: mra.sge(0, MESSAGE).unwrap() }).expect("recv A");
        }
        let at = |k: u64| k * u64::from(MESSAGE);
        for i in 0..4 {
            let remote = mrb.remote(at(1)).unwrap();
            let local = mra.sge(at(1), MESSAGE).unwrap();
            qpa.post_send(&WorkRequest::Write { wr_id: 10 + i, local, remote, signaled: true }).expect("write A");
            let local = mra.sge(at(2), MESSAGE).unwrap();
            let send = WorkRequest::Send { wr_id: 20 + i, local, solicited: false, invalidate: None, signaled: true };
            qpa.post_send(&send).expect("send A");
            let remote = mra.remote(at(3)).unwrap();
            let local = mrb.sge(at(3), MESSAGE).unwrap();
            qpb.post_send(&WorkRequest::Write { wr_id: 30 + i, local, remote, signaled: true }).expect("write B");
            let local = mrb.sge(at(2), MESSAGE).unwrap();
            let send = WorkRequest::Send { wr_id: 40 + i, local, solicited: false, invalidate: None, signaled: true };
            qpb.post_send(&send).expect("send B");
        }
        // Traffic both ways, then A's objects go in the order a program frees them.
        a.hal().run_idle(wait);
        let busy = a.hal().with_memory(|m| m.regions());
        drop(qpa);
        drop(mra);
        drop(bufa);
        drop(cqa);
        assert!(a.hal().with_memory(|m| m.regions()) < busy, "A's rings and buffer are unmapped");
        // Long enough for everything the RNIC had in flight, twice over.
        for _ in 0..10 {
            a.hal().run_idle(1000);
            collect(&b, &cqb, 1);
        }
        assert_eq!(faults(&a), Vec::<String>::new(), "A touched freed memory (teardown after {wait} cycles)");
    }
}

/// An MR B keeps writing into is deregistered and its buffer freed at once, its QP left
/// up: placements checked against the MR before it went have landed when the command
/// completes, and later Writes are refused (B's QP is terminated), never placed.
#[test]
fn a_buffer_freed_right_after_its_mr_is_deregistered_is_never_written_again() {
    let mut placed = 0;
    for wait in [100, 300, 700] {
        let (a, b) = linked_pair();
        record_faults(&a);
        let (pda, pdb) = (ProtectionDomain::new(&a).expect("PD"), ProtectionDomain::new(&b).expect("PD"));
        let (bufa, bufb) = (a.alloc_dma(BUFFER).expect("DMA"), b.alloc_dma(BUFFER).expect("DMA"));
        let mra = MemoryRegion::register(&pda, &bufa, ALL).expect("MR");
        let mrb = MemoryRegion::register(&pdb, &bufb, ALL).expect("MR");
        let (cqa, cqb) = (CompletionQueue::new(&a, 6, 0).expect("CQ"), CompletionQueue::new(&b, 6, 0).expect("CQ"));
        let mut qpa = QueuePair::new(&a, &pda, &cqa, &cqa, caps()).expect("QP");
        let mut qpb = QueuePair::new(&b, &pdb, &cqb, &cqb, caps()).expect("QP");
        qpa.ready().expect("RTS");
        qpb.ready().expect("RTS");
        for i in 0..16 {
            let local = mrb.sge(0, MESSAGE).unwrap();
            let remote = mra.remote(u64::from(MESSAGE) * (i % 4)).unwrap();
            qpb.post_send(&WorkRequest::Write { wr_id: i, local, remote, signaled: true }).expect("write B");
        }
        a.hal().run_idle(wait);
        drop(mra);
        drop(bufa);
        let mut done = Vec::new();
        for _ in 0..10 {
            a.hal().run_idle(1000);
            done.extend(collect(&b, &cqb, 16 - done.len()));
        }
        assert_eq!(faults(&a), Vec::<String>::new(), "A wrote freed memory (deregistered after {wait} cycles)");
        // The MR went while Writes were on their way: some were refused.
        assert!(
            done.iter().any(|c| c.status != CqeStatus::Success),
            "deregistered after {wait} cycles, yet every Write completed: {done:?}"
        );
        placed += done.iter().filter(|c| c.status == CqeStatus::Success).count();
        drop(qpa);
    }
    assert!(placed > 0, "no Write was placed before its MR went: the test did not race them");
}

/// Both QPs of a pair reset (then back in RTS) around the moment A's Read response is
/// placed: before it, while its completion waits beside A's receive engine for the
/// placement write's acknowledgement, or after. The reset starts A's count of Reads done
/// over, and a completion it found waiting must not add to the new count: the next Read
/// completes only once its own response is in place.
#[test]
fn a_read_after_a_reset_completes_only_with_its_own_data_in_place() {
    const LEN: usize = 64;
    for wait in (600..=1050).step_by(50) {
        let (a, b) = linked_pair();
        let (pda, pdb) = (ProtectionDomain::new(&a).expect("PD"), ProtectionDomain::new(&b).expect("PD"));
        let (bufa, bufb) = (a.alloc_dma(4096).expect("DMA"), b.alloc_dma(4096).expect("DMA"));
        bufa.write_bytes(0, &[0xEE; 2 * LEN]);
        bufb.write_bytes(0, &[0x11; LEN]);
        bufb.write_bytes(LEN, &[0x22; LEN]);
        let mra = MemoryRegion::register(&pda, &bufa, ALL).expect("MR");
        let mrb = MemoryRegion::register(&pdb, &bufb, ALL).expect("MR");
        let (cqa, cqb) = (CompletionQueue::new(&a, 6, 0).expect("CQ"), CompletionQueue::new(&b, 6, 0).expect("CQ"));
        let mut qpa = QueuePair::new(&a, &pda, &cqa, &cqa, caps()).expect("QP");
        let mut qpb = QueuePair::new(&b, &pdb, &cqb, &cqb, caps()).expect("QP");
        qpa.ready().expect("RTS");
        qpb.ready().expect("RTS");
        let read = |wr_id: u64, at: usize| WorkRequest::Read {
            wr_id,
            local: mra.sge(at as u64, LEN as u32).unwrap(),
            remote: mrb.remote(at as u64).unwrap(),
            signaled: true,
        };
        qpa.post_send(&read(1, 0)).expect("Read 1");
        a.hal().run_idle(wait);
        qpa.modify(QpState::Reset).expect("RESET A");
        qpb.modify(QpState::Reset).expect("RESET B");
        // What was in flight drains; then both start over.
        a.hal().run_idle(3000);
        qpa.ready().expect("RTS A");
        qpb.ready().expect("RTS B");
        qpa.post_send(&read(2, LEN)).expect("Read 2");
        let mut seen = None;
        for _ in 0..2000 {
            while let Some(c) = cqa.poll().expect("a CQE that decodes") {
                if c.wr_id == 2 {
                    let mut sink = [0u8; LEN];
                    bufa.read_bytes(LEN, &mut sink);
                    seen = Some((c.status, sink));
                }
            }
            if seen.is_some() {
                break;
            }
            a.hal().run_idle(20);
        }
        let (status, sink) = seen.unwrap_or_else(|| panic!("Read 2 never completed (reset after {wait} cycles)"));
        assert_eq!(status, CqeStatus::Success, "Read 2 (reset after {wait} cycles)");
        assert_eq!(sink, [0x22; LEN], "Read 2's sink when its completion came (reset after {wait} cycles)");
    }
}

/// A's QP is reset while its link takes nothing, so that a segment's payload read waits
/// for room in TxPayload's buffer (16 KiB, full of the segments before it). The read was
/// decided before the reset, so the reset completes only once it has been issued and
/// has completed, after the link moves again; A's buffer, freed at once, is then never
/// read. Fails when the fence sees the payload client only once its request fits: the
/// reset completes while the link is held, and the read of the freed buffer follows.
#[test]
fn a_reset_waits_for_a_payload_read_held_back_for_room() {
    const HOLD: u64 = 3000;
    let (dev, peer) = raw_device();
    record_faults(&dev);
    let pd = ProtectionDomain::new(&dev).expect("PD");
    let buf = dev.alloc_dma(BUFFER).expect("DMA");
    let mr = MemoryRegion::register(&pd, &buf, ALL).expect("MR");
    let cq = CompletionQueue::new(&dev, 6, 0).expect("CQ");
    let mut qp = QueuePair::new(&dev, &pd, &cq, &cq, caps()).expect("QP");
    qp.ready().expect("RTS");
    let held = peer.tx_hold();
    held.set(true);
    let remote = RemoteBuf { stag: 0x1234_5678, to: 0 };
    let local = mr.sge(0, BUFFER as u32).unwrap();
    qp.post_send(&WorkRequest::Write { wr_id: 1, local, remote, signaled: true }).expect("write");
    // 16 KiB of payload read into the buffer, and the next segment's read waiting.
    dev.hal().run_idle(4000);
    assert_eq!(peer.sent_count(), 0, "the link took nothing");
    let release_at = dev.hal().cycles() + HOLD;
    dev.hal().on_cycle(move |m, phase| {
        if matches!(phase, Phase::Observe) && m.cycles() >= release_at {
            held.set(false);
        }
    });
    qp.modify(QpState::Reset).expect("RESET");
    let done_at = dev.hal().cycles();
    assert!(done_at > release_at, "the reset completed at cycle {done_at}, with the link held until {release_at}");
    drop(mr);
    drop(buf);
    dev.hal().run_idle(5000);
    assert!(peer.sent_count() > 0, "the segments read before the reset went out");
    assert_eq!(faults(&dev), Vec::<String>::new(), "A read its freed buffer");
}
