//! The driver's control path on the real RTL: the control block (`rnic_host_ctrl`, BAR0
//! and the command unit, no engines) in Verilator behind `SimHal`. Commands go over
//! AXI4-Lite cycle by cycle; doorbells are watched on the block's `db_*` outputs, which
//! the engines would receive.
#![cfg(feature = "sim")]

use std::cell::RefCell;
use std::rc::Rc;
use std::time::Duration;

use rnic_driver::sim::{Phase, SimHal};
use rnic_driver::{
    CompletionQueue, Connection, CqeOpcode, CqeStatus, Device, DeviceInfo, DriverError, Features, Hal, HalError,
    MemoryRegion, MrAccess, ProtectionDomain, QpCaps, QpState, QueuePair, RecvRequest, Rejection, Sge, WorkQueue,
    WorkRequest,
};
use rnic_proto::host::context::{stag_key, CqContext, MrContext, QpContext};
use rnic_proto::host::desc::CQE_LEN;
use rnic_proto::host::regs::{self, CmdOpcode};
use rnic_proto::host::{cqe_phase, Cqe};
use rnic_proto::model::RnicConfig;
use rnic_sim::host_ctrl::Doorbell;

/// `db_kind` values.
const DB_SQ: u8 = 0;
const DB_RQ: u8 = 1;
const DB_CQ_CI: u8 = 2;
const DB_CQ_ARM: u8 = 3;

const RIGHTS: MrAccess = MrAccess { local_write: true, remote_read: true, remote_write: false, remote_atomic: false };
const CAPS: QpCaps = QpCaps {
    sq_log_size: 2,
    rq_log_size: 3,
    mulpdu: 1460,
    ird: 4,
    ord: 2,
    crc: true,
    markers_tx: false,
    markers_rx: false,
    conn_id: 9,
};

fn open() -> Device<SimHal> {
    let hal = SimHal::open("rnic_host_ctrl").expect("rnic_host_ctrl model");
    Device::open(hal).expect("the control block identifies as an RNIC")
}

/// Records every doorbell the block hands to the engines from now on.
fn watch_doorbells(hal: &SimHal) -> Rc<RefCell<Vec<Doorbell>>> {
    let [valid, kind, index, value] =
        hal.with_model(|m| ["db_valid", "db_kind", "db_index", "db_value"].map(|name| m.port(name)));
    let seen = Rc::new(RefCell::new(Vec::new()));
    let log = Rc::clone(&seen);
    hal.on_cycle(move |m, phase| {
        if phase == Phase::Observe && m.get_bit(valid) {
            let db = Doorbell { kind: m.get(kind) as u8, queue: m.get(index) as u16, value: m.get(value) as u32 };
            log.borrow_mut().push(db);
        }
    });
    seen
}

/// Cycles from a doorbell write's response to its event on `db_*`, with margin: the
/// block registers the event after the write, so it may show after the access returns.
const DOORBELL_SETTLE: u64 = 4;

/// The doorbells seen so far, after letting the last write's event through.
fn take(dev: &Device<SimHal>, seen: &Rc<RefCell<Vec<Doorbell>>>) -> Vec<Doorbell> {
    dev.hal().run_idle(DOORBELL_SETTLE);
    std::mem::take(&mut *seen.borrow_mut())
}

fn db(kind: u8, queue: u32, value: u32) -> Doorbell {
    Doorbell { kind, queue: queue as u16, value }
}

fn send(wr_id: u64, local: Sge) -> WorkRequest {
    WorkRequest::Send { wr_id, local, solicited: false, invalidate: None, signaled: true }
}

#[test]
fn open_reads_the_identity_and_geometry_of_the_control_block() {
    let dev = open();
    let config = RnicConfig::default();
    assert_eq!(
        *dev.info(),
        DeviceInfo {
            version: regs::VERSION_VALUE,
            datapath_bytes: config.datapath_bytes,
            num_qps: config.num_qps,
            num_cqs: config.num_cqs,
            num_mrs: config.num_mrs,
            features: Features { crc: true, markers: true, atomics: true, immediate: true, device_memory: true },
            dm_size: config.dm_size,
            dm_base: config.dm_base,
        }
    );
}

#[test]
fn enable_and_disable_show_in_status() {
    let dev = open();
    assert!(!dev.status().enabled);
    dev.enable();
    let status = dev.status();
    assert!(status.enabled && !status.idle, "no engines report idle: {status:?}");
    dev.disable();
    assert!(!dev.status().enabled);
}

#[test]
fn a_registered_mr_reads_back_from_the_device_and_deregistering_clears_valid() {
    let dev = open();
    let pd = ProtectionDomain::new(&dev).expect("pd");
    let buf = dev.alloc_dma(3 * 4096).expect("dma");
    let mr = MemoryRegion::register_range(&pd, &buf, 4096, 5000, RIGHTS).expect("register");
    let expected = MrContext {
        key: stag_key(mr.lkey()),
        access: RIGHTS,
        valid: true,
        pd: pd.pdn(),
        va: buf.iova() + 4096,
        length: 5000,
        iova: buf.iova() + 4096,
    };
    assert_eq!(dev.query_mr(mr.index()).expect("query"), expected);
    let index = mr.index();
    mr.deregister().expect("deregister");
    assert_eq!(dev.query_mr(index).expect("query"), MrContext { valid: false, ..expected });
}

#[test]
fn a_dropped_mr_is_invalid_and_its_reused_index_has_a_new_key_on_the_device() {
    let dev = open();
    let pd = ProtectionDomain::new(&dev).expect("pd");
    let buf = dev.alloc_dma(64).expect("dma");
    let first = MemoryRegion::register(&pd, &buf, RIGHTS).expect("register");
    let (index, old_key) = (first.index(), stag_key(first.lkey()));
    drop(first);
    assert!(!dev.query_mr(index).expect("query").valid);
    let second = MemoryRegion::register(&pd, &buf, RIGHTS).expect("register");
    assert_eq!(second.index(), index);
    let on_device = dev.query_mr(index).expect("query");
    assert!(on_device.valid);
    assert_ne!(on_device.key, old_key);
    assert_eq!(on_device.key, stag_key(second.rkey()));
}

#[test]
fn a_cq_context_names_its_ring_in_host_memory_and_drop_disables_it() {
    let dev = open();
    let cq = CompletionQueue::new(&dev, 5, 3).expect("cq");
    let cqn = cq.cqn();
    let (ctx, status) = dev.query_cq(cqn).expect("query");
    assert_eq!((ctx.log_size, ctx.enable, ctx.vector), (5, true, 3));
    assert_eq!((status.pi, status.overflow), (0, false));
    // The last entry of the ring lies in mapped host memory (peek panics otherwise).
    dev.hal().with_memory(|m| m.peek(ctx.base + (32 - 1) * CQE_LEN as u64, &mut [0; CQE_LEN]));
    drop(cq);
    assert_eq!(dev.query_cq(cqn).expect("query").0, CqContext { enable: false, ..ctx });
}

#[test]
fn the_qp_context_on_the_device_matches_the_caps_and_objects() {
    let dev = open();
    let pd = ProtectionDomain::new(&dev).expect("pd");
    let scq = CompletionQueue::new(&dev, 2, 0).expect("cq");
    let rcq = CompletionQueue::new(&dev, 2, 0).expect("cq");
    let qp = QueuePair::new(&dev, &pd, &scq, &rcq, CAPS).expect("qp");
    let (ctx, status) = qp.query().expect("query");
    let expected = QpContext {
        state: QpState::Reset,
        crc_enable: true,
        markers_tx: false,
        markers_rx: false,
        pd: pd.pdn(),
        conn_id: 9,
        mulpdu: 1460,
        send_cq: scq.cqn() as u16,
        recv_cq: rcq.cqn() as u16,
        sq_log_size: 2,
        rq_log_size: 3,
        ird: 4,
        ord: 2,
        sq_base: ctx.sq_base,
        rq_base: ctx.rq_base,
    };
    assert_eq!(ctx, expected);
    assert_ne!(ctx.sq_base, ctx.rq_base);
    dev.hal().with_memory(|m| {
        m.peek(ctx.sq_base + 3 * 128, &mut [0; 128]);
        m.peek(ctx.rq_base + 7 * 32, &mut [0; 32]);
    });
    assert_eq!((status.sq_ci, status.rq_ci, status.terminate), (0, 0, None));
}

/// A QP's CONN_ID can be set after it exists (loopback: the peer QP's number), in RESET
/// only, and the device holds the new one.
#[test]
fn the_conn_id_of_a_qp_in_reset_can_change_and_not_after() {
    let dev = open();
    let pd = ProtectionDomain::new(&dev).expect("pd");
    let cq = CompletionQueue::new(&dev, 2, 0).expect("cq");
    let mut qp = QueuePair::new(&dev, &pd, &cq, &cq, CAPS).expect("qp");
    qp.set_conn_id(0x1234).expect("in RESET");
    assert_eq!(qp.query().expect("query").0.conn_id, 0x1234);
    qp.ready().expect("RESET -> RTS");
    assert_eq!(qp.query().expect("query").0.conn_id, 0x1234, "RTS keeps it");
    let err = qp.set_conn_id(7).expect_err("in RTS");
    assert!(matches!(err, DriverError::ConnIdOutsideReset { state: QpState::Rts, .. }), "{err}");
    assert_eq!(qp.query().expect("query").0.conn_id, 0x1234);
}

/// What a connection's setup decided (CONN_ID, CRC, IRD, ORD) reaches the device's QP
/// context in RESET, and is refused after.
#[test]
fn the_connection_of_a_qp_in_reset_is_set_whole_and_not_after() {
    let dev = open();
    let pd = ProtectionDomain::new(&dev).expect("pd");
    let cq = CompletionQueue::new(&dev, 2, 0).expect("cq");
    let mut qp = QueuePair::new(&dev, &pd, &cq, &cq, CAPS).expect("qp");
    let conn = Connection { conn_id: 0x8003, crc: false, markers_tx: false, markers_rx: false, ird: 1, ord: 2 };
    qp.set_connection(conn).expect("in RESET");
    let ctx = qp.query().expect("query").0;
    assert_eq!((ctx.conn_id, ctx.crc_enable, ctx.ird, ctx.ord), (0x8003, false, 1, 2));
    qp.ready().expect("RESET -> RTS");
    let err = qp.set_connection(Connection { conn_id: 1, ..conn }).expect_err("in RTS");
    assert!(matches!(err, DriverError::ConnIdOutsideReset { state: QpState::Rts, .. }), "{err}");
    assert_eq!(qp.query().expect("query").0.conn_id, 0x8003);
}

#[test]
fn a_qp_moves_reset_rts_error_reset_and_the_device_refuses_error_to_rts() {
    let dev = open();
    let pd = ProtectionDomain::new(&dev).expect("pd");
    let cq = CompletionQueue::new(&dev, 2, 0).expect("cq");
    let mut qp = QueuePair::new(&dev, &pd, &cq, &cq, CAPS).expect("qp");
    let on_device = |qp: &QueuePair<'_, SimHal>| qp.query().expect("query").0.state;
    assert_eq!(on_device(&qp), QpState::Reset);
    qp.ready().expect("RESET -> RTS");
    assert_eq!(on_device(&qp), QpState::Rts);
    qp.modify(QpState::Error).expect("RTS -> ERROR");
    assert_eq!(on_device(&qp), QpState::Error);
    let err = qp.ready().expect_err("ERROR -> RTS");
    assert!(
        matches!(err, DriverError::Rejected { opcode: 0x01, reason: Rejection::BadState, .. }),
        "unexpected error: {err}"
    );
    assert_eq!((qp.state(), on_device(&qp)), (QpState::Error, QpState::Error));
    qp.modify(QpState::Reset).expect("ERROR -> RESET");
    assert_eq!(on_device(&qp), QpState::Reset);
    qp.ready().expect("RESET -> RTS again");
    let qpn = qp.qpn();
    drop(qp);
    assert_eq!(dev.query_qp(qpn).expect("query").0.state, QpState::Reset, "a dropped QP is reset");
}

#[test]
fn the_device_rejects_invalid_raw_commands_with_typed_errors() {
    let dev = open();
    let reason = |r: Result<[u32; 16], DriverError>| match r {
        Err(DriverError::Rejected { reason, .. }) => reason,
        other => panic!("expected a rejection, got {other:?}"),
    };
    assert_eq!(reason(dev.raw_command(0x42, 0, &[0; 16])), Rejection::BadOpcode);
    assert_eq!(reason(dev.raw_command(CmdOpcode::QueryQp.code(), 64, &[0; 16])), Rejection::BadIndex);

    let good = QpContext { mulpdu: 512, sq_base: 0x10_0000, rq_base: 0x20_0000, ..QpContext::default() };
    let write_qp = |ctx: QpContext| dev.raw_command(CmdOpcode::WriteQp.code(), 5, &ctx.to_words());
    assert_eq!(reason(write_qp(QpContext { sq_base: 0x10_0040, ..good })), Rejection::BadValue, "misaligned SQ");
    assert_eq!(reason(write_qp(QpContext { send_cq: 64, ..good })), Rejection::BadValue, "no CQ 64");
    assert_eq!(reason(write_qp(QpContext { state: QpState::Rts, mulpdu: 100, ..good })), Rejection::BadValue);
    write_qp(good).expect("a good context");
    write_qp(QpContext { state: QpState::Rts, ..good }).expect("RTS");
    assert_eq!(reason(write_qp(QpContext { state: QpState::Rts, sq_log_size: 3, ..good })), Rejection::BadState);

    let pd = ProtectionDomain::new(&dev).expect("pd");
    let buf = dev.alloc_dma(64).expect("dma");
    let mr = MemoryRegion::register(&pd, &buf, RIGHTS).expect("register");
    let mut wrong_key = [0u32; 16];
    wrong_key[0] = u32::from(stag_key(mr.lkey()).wrapping_add(1));
    assert_eq!(reason(dev.raw_command(CmdOpcode::InvalidateMr.code(), mr.index(), &wrong_key)), Rejection::BadState);
    assert!(dev.query_mr(mr.index()).expect("query").valid, "still valid");
}

#[test]
fn post_send_and_post_recv_ring_their_doorbells_with_absolute_indices() {
    let dev = open();
    let doorbells = watch_doorbells(dev.hal());
    let pd = ProtectionDomain::new(&dev).expect("pd");
    let cq = CompletionQueue::new(&dev, 2, 0).expect("cq");
    let buf = dev.alloc_dma(4096).expect("dma");
    let mr = MemoryRegion::register(&pd, &buf, RIGHTS).expect("register");
    let mut qp = QueuePair::new(&dev, &pd, &cq, &cq, QpCaps { sq_log_size: 3, ..CAPS }).expect("qp");
    qp.ready().expect("rts");
    assert_eq!(take(&dev, &doorbells), [], "commands ring no doorbells");

    qp.post_send(&send(1, mr.sge(0, 100).expect("sge"))).expect("post");
    assert_eq!(take(&dev, &doorbells), [db(DB_SQ, qp.qpn(), 1)]);
    let batch: Vec<_> = (2..5).map(|i| send(i, mr.sge(100 * i, 100).expect("sge"))).collect();
    qp.post_send_batch(&batch).expect("post");
    assert_eq!(take(&dev, &doorbells), [db(DB_SQ, qp.qpn(), 4)], "one doorbell for the batch");

    let rr = RecvRequest { wr_id: 7, local: mr.sge(2048, 2048).expect("sge") };
    qp.post_recv(&rr).expect("post");
    qp.post_recv_batch(&[rr, rr]).expect("post");
    assert_eq!(take(&dev, &doorbells), [db(DB_RQ, qp.qpn(), 1), db(DB_RQ, qp.qpn(), 3)]);
}

#[test]
fn a_full_send_queue_is_refused_and_rings_nothing() {
    let dev = open();
    let doorbells = watch_doorbells(dev.hal());
    let pd = ProtectionDomain::new(&dev).expect("pd");
    let cq = CompletionQueue::new(&dev, 2, 0).expect("cq");
    let mut qp = QueuePair::new(&dev, &pd, &cq, &cq, CAPS).expect("qp");
    qp.ready().expect("rts");
    let local = Sge { lkey: 0, addr: 0, length: 0 };
    qp.post_send_batch(&(0..4).map(|i| send(i, local)).collect::<Vec<_>>()).expect("four fit");
    // Without engines the block takes nothing: QUERY_QP keeps reporting sq_ci 0.
    let err = qp.post_send(&send(4, local)).expect_err("full");
    assert!(
        matches!(err, DriverError::QueueFull { queue: WorkQueue::Send, needed: 1, free: 0, .. }),
        "unexpected error: {err}"
    );
    assert_eq!(take(&dev, &doorbells), [db(DB_SQ, qp.qpn(), 4)]);
}

#[test]
fn cq_poll_reports_its_consumer_index_and_arm_rings_cq_arm() {
    let dev = open();
    let doorbells = watch_doorbells(dev.hal());
    let cq = CompletionQueue::new(&dev, 3, 0).expect("cq");
    let base = dev.query_cq(cq.cqn()).expect("query").0.base;
    // Play the engines: two CQEs in the ring, each with its lap's phase.
    for index in 0..2u32 {
        let mut cqe = Cqe::new(100 + u64::from(index), 4, CqeOpcode::Recv, CqeStatus::Success);
        cqe.byte_len = 64;
        cqe.phase = cqe_phase(index, 3);
        dev.hal().with_memory(|m| m.poke(base + u64::from(index) * CQE_LEN as u64, &cqe.encode()));
    }
    let first = cq.poll().expect("poll").expect("entry 0");
    assert_eq!((first.wr_id, first.qpn, first.opcode, first.byte_len), (100, 4, CqeOpcode::Recv, 64));
    assert_eq!(take(&dev, &doorbells), [], "less than a quarter ring: not reported yet");
    assert_eq!(cq.poll().expect("poll").map(|c| c.wr_id), Some(101));
    assert_eq!(take(&dev, &doorbells), [db(DB_CQ_CI, cq.cqn(), 2)], "a quarter of 8 consumed");
    assert_eq!(cq.poll().expect("poll"), None);
    assert_eq!(take(&dev, &doorbells), []);
    cq.arm(false);
    cq.arm(true);
    assert_eq!(take(&dev, &doorbells), [db(DB_CQ_ARM, cq.cqn(), 1), db(DB_CQ_ARM, cq.cqn(), 2)]);
}

#[test]
fn waiting_on_a_model_without_interrupts_runs_the_cycle_budget_of_the_timeout() {
    let dev = open();
    let before = dev.hal().cycles();
    assert_eq!(dev.hal().wait_irq(0, Duration::from_micros(4)), Ok(false));
    assert_eq!(dev.hal().cycles() - before, 4 * 250, "250 cycles per microsecond");

    let cq = CompletionQueue::new(&dev, 2, 1).expect("cq");
    let before = dev.hal().cycles();
    assert_eq!(cq.wait(Duration::from_micros(2)).expect("wait"), None);
    assert!(dev.hal().cycles() - before >= 500, "the wait let time pass");
}

#[test]
fn sim_dma_memory_is_zeroed_round_trips_and_never_sits_at_its_cpu_address() {
    let hal = SimHal::open("rnic_host_ctrl").expect("model");
    let region = hal.dma_alloc(100).expect("alloc");
    assert_ne!(region.iova(), region.as_ptr().expect("local memory").as_ptr() as u64);
    assert_eq!(region.read_u64(88), 0);
    region.write_u32(4, 0xcafe_f00d);
    let mut seen = [0u8; 4];
    hal.with_memory(|m| m.peek(region.iova() + 4, &mut seen));
    assert_eq!(u32::from_le_bytes(seen), 0xcafe_f00d, "the device's view is the CPU's");
    hal.with_memory(|m| assert_eq!(m.regions(), 1));
    hal.dma_free(region);
    hal.with_memory(|m| assert_eq!(m.regions(), 0));
    assert_eq!(hal.dma_alloc(0).err(), Some(HalError::EmptyDmaRequest));
    assert_eq!(hal.dma_alloc(2 << 30).err(), Some(HalError::OutOfDmaMemory(2 << 30)));
}

#[test]
fn a_design_without_bar0_is_refused_with_a_reason() {
    let err = SimHal::open("rnic_atomic_alu").err().expect("no BAR0");
    assert!(err.to_string().contains("no BAR0"), "{err}");
    let err = SimHal::open("no_such_design").err().expect("unknown");
    assert!(err.to_string().contains("no model named"), "{err}");
}
