//! `host/ctrl` (BAR0 and the command unit) in Verilator, driven over AXI4-Lite exactly as
//! the driver does, against `rnic_proto::model::Rnic::command`: random commands with
//! mostly valid, sometimes broken contexts, random indices and opcodes; identity
//! registers; doorbells; engine failures and invalidations as QUERY_QP / QUERY_MR see them,
//! also in every cycle of a command.
use rand::rngs::StdRng;
use rand::{Rng, SeedableRng};
use rnic_proto::host::context::{CqContext, MrAccess, MrContext, QpContext, QpState, QpStatus, MAX_READS};
use rnic_proto::host::regs::{self, CmdOpcode, CmdResult};
use rnic_proto::model::{Rnic, RnicConfig};
use rnic_sim::host_ctrl::{Doorbell, EngineEvent, HostCtrlDriver};
use rnic_sim::trace;

/// Commands in the differential test.
const COMMANDS: usize = 10_000;

fn driver(seed: u64) -> HostCtrlDriver {
    HostCtrlDriver::new(seed).expect("rnic_host_ctrl model")
}

/// Mostly aligned, small, in-range values; now and then the edge that breaks a rule.
fn ring(rng: &mut StdRng, align: u64) -> (u64, u8) {
    match rng.gen_range(0..20) {
        0 => (rng.gen::<u64>() & !(align - 1), rng.gen_range(0..=40)),
        1 => (u64::MAX - rng.gen_range(0..1 << 20), rng.gen_range(0..12)),
        2 => (rng.gen::<u64>(), rng.gen_range(0..12)),
        _ => (rng.gen_range(0..1u64 << 40) & !(align - 1), rng.gen_range(0..12)),
    }
}

/// An IRD or ORD: mostly within `MAX_READS`, now and then the first value past it or any.
fn read_depth(rng: &mut StdRng) -> u8 {
    match rng.gen_range(0..10) {
        0 => MAX_READS + 1,
        1 => rng.gen(),
        _ => rng.gen_range(0..=MAX_READS),
    }
}

fn random_qp(rng: &mut StdRng, config: &RnicConfig) -> [u32; 16] {
    let state = match rng.gen_range(0..10) {
        0..=2 => QpState::Reset,
        3..=7 => QpState::Rts,
        _ => QpState::Error,
    };
    // Reuse one of a few ring layouts so that rewrites of a live QP often keep them.
    let layout_seed = rng.gen_range(0..4u64);
    let mut layout_rng = StdRng::seed_from_u64(layout_seed);
    let (sq_base, sq_log_size) = if rng.gen_bool(0.8) { ring(&mut layout_rng, 128) } else { ring(rng, 128) };
    let (rq_base, rq_log_size) = if rng.gen_bool(0.8) { ring(&mut layout_rng, 32) } else { ring(rng, 32) };
    let ctx = QpContext {
        state,
        crc_enable: rng.gen(),
        markers_tx: rng.gen(),
        markers_rx: rng.gen(),
        pd: rng.gen(),
        conn_id: rng.gen(),
        mulpdu: if rng.gen_bool(0.9) { rng.gen_range(128..9000) } else { rng.gen_range(0..128) },
        send_cq: rng.gen_range(0..config.num_cqs as u16 + 2),
        recv_cq: rng.gen_range(0..config.num_cqs as u16 + 2),
        sq_log_size,
        rq_log_size,
        ird: read_depth(rng),
        ord: read_depth(rng),
        sq_base,
        rq_base,
    };
    let mut w = ctx.to_words();
    garble(rng, &mut w);
    w
}

fn random_cq(rng: &mut StdRng) -> [u32; 16] {
    let (base, log_size) = ring(rng, 32);
    let mut w = CqContext { log_size, enable: rng.gen(), vector: rng.gen(), base }.to_words();
    garble(rng, &mut w);
    w
}

fn random_mr(rng: &mut StdRng) -> [u32; 16] {
    let length = match rng.gen_range(0..10) {
        0 => rng.gen(),
        1 => 0,
        _ => rng.gen_range(1..1 << 24),
    };
    let va = if rng.gen_bool(0.1) { u64::MAX - rng.gen_range(0..1 << 24) } else { rng.gen() };
    let iova = if rng.gen_bool(0.1) { u64::MAX - rng.gen_range(0..1 << 24) } else { rng.gen::<u64>() >> 8 };
    let ctx = MrContext {
        key: rng.gen(),
        access: MrAccess {
            local_write: rng.gen(),
            remote_read: rng.gen(),
            remote_write: rng.gen(),
            remote_atomic: rng.gen(),
        },
        valid: rng.gen_bool(0.8),
        pd: rng.gen(),
        va,
        length,
        iova,
    };
    let mut w = ctx.to_words();
    garble(rng, &mut w);
    w
}

/// Sometimes sets reserved bits (which must be dropped) or flips any bit at all.
fn garble(rng: &mut StdRng, w: &mut [u32; 16]) {
    if rng.gen_bool(0.15) {
        let i = rng.gen_range(0..16);
        w[i] ^= 1 << rng.gen_range(0..32);
    }
}

fn random_command(rng: &mut StdRng, config: &RnicConfig) -> (u8, u32, [u32; 16]) {
    let op = match rng.gen_range(0..40) {
        0 => rng.gen_range(8..=255),
        1 => 0,
        _ => rng.gen_range(1..=7),
    };
    let objects = match op {
        1 | 2 => config.num_qps,
        3 | 4 => config.num_cqs,
        _ => config.num_mrs,
    };
    // A few hot objects, so that writes, queries and invalidations meet.
    let index = match rng.gen_range(0..20) {
        0 => rng.gen_range(objects..objects + 4),
        1 => rng.gen_range(0..1 << 24),
        2..=9 => rng.gen_range(0..4),
        _ => rng.gen_range(0..objects),
    };
    let data = match op {
        1 => random_qp(rng, config),
        3 => random_cq(rng),
        5 => random_mr(rng),
        7 => {
            let mut w = [0u32; 16];
            w[0] = rng.gen_range(0..4);
            w
        }
        _ => std::array::from_fn(|_| rng.gen()),
    };
    (op, index, data)
}

#[test]
fn identity_registers_report_the_configuration() {
    let mut d = driver(1);
    let reference = Rnic::new(RnicConfig::default());
    for offset in
        [regs::ID, regs::VERSION, regs::DATAPATH_BYTES, regs::NUM_QPS, regs::NUM_CQS, regs::NUM_MRS, regs::FEATURES]
    {
        let expected = reference.identity_register(offset).expect("identity register");
        assert_eq!(d.read32(offset), expected, "BAR0 {offset:#05x}");
    }
    // CONTROL is read-write; STATUS follows it (IDLE is the engines' input, held low).
    assert_eq!(d.read32(regs::CONTROL), 0);
    d.write32(regs::CONTROL, 1);
    assert_eq!(d.read32(regs::CONTROL), 1);
    assert_eq!(d.read32(regs::STATUS) & 1, 1);
    d.write32(regs::CONTROL, 0);
    assert_eq!(d.read32(regs::STATUS) & 1, 0);
    // Unmapped offsets read 0 and ignore writes.
    d.write32(0x0800, 0xFFFF_FFFF);
    assert_eq!(d.read32(0x0800), 0);
}

#[test]
fn commands_match_the_reference_model() {
    trace::on_failure("commands_match_the_reference_model", || {
        let config = RnicConfig::default();
        let mut rng = StdRng::seed_from_u64(0x636d64);
        let mut d = driver(2);
        d.set_bus_rates(0.7, 0.7);
        let mut reference = Rnic::new(config);
        let mut results = [0usize; 5];
        for n in 0..COMMANDS {
            let (op, index, data) = random_command(&mut rng, &config);
            let (expected_result, expected_data) = reference.command(op, index, &data);
            let (result, out) = d.command(op, index, &data);
            assert_eq!(
                HostCtrlDriver::result_of(result),
                Ok(expected_result),
                "command {n}: opcode {op:#x} index {index} data {data:08x?}"
            );
            assert_eq!(out, expected_data, "command {n}: CMD_DATA after opcode {op:#x} index {index}");
            results[expected_result.code() as usize] += 1;
        }
        // The random mix must have reached every outcome many times.
        for (code, n) in results.iter().enumerate() {
            assert!(*n > COMMANDS / 100, "result {code} seen only {n} times: {results:?}");
        }
    });
}

#[test]
fn doorbells_reach_the_engines_and_others_do_not() {
    let config = RnicConfig::default();
    let mut rng = StdRng::seed_from_u64(0x6462);
    let mut d = driver(3);
    d.set_bus_rates(0.6, 0.8);
    let mut expected = Vec::new();
    for _ in 0..2_000 {
        let value: u32 = rng.gen();
        let (kind, queue) = (rng.gen_range(0..4u8), rng.gen_range(0..regs::MAX_QPS));
        let offset = match kind {
            0 => regs::sq_pi(queue),
            1 => regs::rq_pi(queue),
            2 => regs::cq_ci(queue),
            _ => regs::cq_arm(queue),
        };
        let limit = if kind < 2 { config.num_qps } else { config.num_cqs };
        d.write32(offset, value);
        if queue < limit {
            expected.push(Doorbell { kind, queue: queue as u16, value });
        }
        // Other registers never make doorbells.
        if rng.gen_bool(0.1) {
            d.write32(regs::cmd_data(rng.gen_range(0..16)), value);
        }
    }
    assert_eq!(d.take_doorbells(), expected);
}

#[test]
fn engine_failures_and_invalidations_show_in_queries() {
    let mut d = driver(4);
    let ok = CmdResult::Ok.code();
    let qp = QpContext { state: QpState::Rts, mulpdu: 1024, ..QpContext::default() };
    assert_eq!(d.command(CmdOpcode::WriteQp.code(), 5, &qp.to_words()).0, ok);
    // A Terminate sent: DDP untagged buffer error, no buffer available (1/2/0x02).
    d.engine_fail(5, 0x1202, false);
    let (r, w) = d.command(CmdOpcode::QueryQp.code(), 5, &[0; 16]);
    assert_eq!(r, ok);
    assert_eq!(QpContext::from_words(&w).expect("context").state, QpState::Error);
    let term = QpStatus::from_words(&w).terminate.expect("terminate reported");
    assert_eq!((term.code.layer, term.code.etype, term.code.code, term.received), (1, 2, 0x02, false));
    // ERROR -> RTS is refused; through RESET the QP comes back and forgets the Terminate.
    assert_eq!(d.command(CmdOpcode::WriteQp.code(), 5, &qp.to_words()).0, CmdResult::BadState.code());
    let reset = QpContext { state: QpState::Reset, ..qp };
    assert_eq!(d.command(CmdOpcode::WriteQp.code(), 5, &reset.to_words()).0, ok);
    let (_, w) = d.command(CmdOpcode::QueryQp.code(), 5, &[0; 16]);
    assert_eq!(QpStatus::from_words(&w).terminate, None);
    // A received Terminate is reported as such.
    assert_eq!(d.command(CmdOpcode::WriteQp.code(), 5, &qp.to_words()).0, ok);
    d.engine_fail(5, 0x0100, true);
    let (_, w) = d.command(CmdOpcode::QueryQp.code(), 5, &[0; 16]);
    assert!(QpStatus::from_words(&w).terminate.expect("terminate").received);

    let mr = MrContext { key: 0x5A, valid: true, length: 4096, ..MrContext::default() };
    assert_eq!(d.command(CmdOpcode::WriteMr.code(), 77, &mr.to_words()).0, ok);
    d.engine_invalidate(77);
    let (_, w) = d.command(CmdOpcode::QueryMr.code(), 77, &[0; 16]);
    assert!(!MrContext::from_words(&w).expect("context").valid);
    // Invalidating an invalid MR is a state error.
    let mut key = [0u32; 16];
    key[0] = 0x5A;
    assert_eq!(d.command(CmdOpcode::InvalidateMr.code(), 77, &key).0, CmdResult::BadState.code());
}

/// A command that changes a context (WRITE_QP/CQ/MR, INVALIDATE_MR) starts the DMA fence
/// once and stays BUSY until the fence is done; queries and refused commands start none
/// and do not wait.
#[test]
fn commands_that_change_a_context_wait_for_the_dma_fence_and_no_others_do() {
    const DELAY: u64 = 300;
    let mut d = driver(5);
    d.set_fence_delay(DELAY);
    let ok = CmdResult::Ok.code();
    let qp = QpContext { state: QpState::Rts, mulpdu: 1024, ..QpContext::default() };
    let mr = MrContext { key: 0x3C, valid: true, length: 4096, ..MrContext::default() };
    let mut key = [0u32; 16];
    key[0] = 0x3C;
    // A QP state that does not exist.
    let mut bad_state = qp.to_words();
    bad_state[0] |= 0xF;
    // (what, opcode, index, CMD_DATA, result, fenced)
    type Case<'a> = (&'a str, u8, u32, [u32; 16], u8, bool);
    let cases: [Case; 8] = [
        ("WRITE_QP", CmdOpcode::WriteQp.code(), 3, qp.to_words(), ok, true),
        ("QUERY_QP", CmdOpcode::QueryQp.code(), 3, [0; 16], ok, false),
        ("WRITE_QP refused", CmdOpcode::WriteQp.code(), 3, bad_state, CmdResult::BadValue.code(), false),
        ("WRITE_CQ", CmdOpcode::WriteCq.code(), 2, CqContext::default().to_words(), ok, true),
        ("WRITE_MR", CmdOpcode::WriteMr.code(), 9, mr.to_words(), ok, true),
        ("QUERY_MR", CmdOpcode::QueryMr.code(), 9, [0; 16], ok, false),
        ("INVALIDATE_MR", CmdOpcode::InvalidateMr.code(), 9, key, ok, true),
        ("INVALIDATE_MR refused", CmdOpcode::InvalidateMr.code(), 9, key, CmdResult::BadState.code(), false),
    ];
    for (what, op, index, data, result, fenced) in cases {
        let (fences, start) = (d.fences(), d.model.cycles());
        assert_eq!(d.command(op, index, &data).0, result, "{what}");
        let took = d.model.cycles() - start;
        assert_eq!(d.fences() - fences, u64::from(fenced), "{what}: fences started");
        if fenced {
            assert!(took > DELAY, "{what}: done after {took} cycles, before the fence ({DELAY})");
        } else {
            assert!(took < DELAY / 2, "{what}: took {took} cycles with no fence to wait for");
        }
    }
}

/// Cycles from the write of CMD that cover a command's whole run (BAR0 write, the four
/// command cycles, the fence, the first polls).
const COMMAND_SPAN: u64 = 24;

/// QP `qpn`'s state and Terminate (code word, received) as QUERY_QP reports them.
fn qp_status(d: &mut HostCtrlDriver, qpn: u32) -> (QpState, Option<(u16, bool)>) {
    let (r, w) = d.command(CmdOpcode::QueryQp.code(), qpn, &[0; 16]);
    assert_eq!(r, CmdResult::Ok.code());
    let state = QpContext::from_words(&w).expect("context").state;
    let term = QpStatus::from_words(&w)
        .terminate
        .map(|t| (u16::from(t.code.layer) << 12 | u16::from(t.code.etype) << 8 | u16::from(t.code.code), t.received));
    (state, term)
}

fn mr_valid(d: &mut HostCtrlDriver, index: u32) -> bool {
    let (r, w) = d.command(CmdOpcode::QueryMr.code(), index, &[0; 16]);
    assert_eq!(r, CmdResult::Ok.code());
    MrContext::from_words(&w).expect("context").valid
}

/// An engine's failure or invalidation in any cycle of a command is kept, and so is every
/// change the command makes: each changes its own bit of the live state. For the
/// command's own QP the failure counts as before the command up to its check and after it
/// from then on: the results switch once, and the QP ends in ERROR with the Terminate.
#[test]
fn engine_changes_in_any_cycle_of_a_command_are_kept_beside_the_commands_own() {
    let mut d = driver(6);
    d.set_bus_rates(1.0, 1.0);
    let ok = CmdResult::Ok.code();
    let rts = QpContext { state: QpState::Rts, mulpdu: 1024, ..QpContext::default() };
    let reset = QpContext { state: QpState::Reset, ..rts };
    let mr = MrContext { key: 0x5A, valid: true, length: 4096, ..MrContext::default() };
    let mr_off = MrContext { valid: false, ..mr };
    let fresh = |d: &mut HostCtrlDriver, qpn: u32| {
        assert_eq!(d.command(CmdOpcode::WriteQp.code(), qpn, &reset.to_words()).0, ok);
        assert_eq!(d.command(CmdOpcode::WriteQp.code(), qpn, &rts.to_words()).0, ok);
    };
    let (mut rewrites, mut queries) = (Vec::new(), Vec::new());
    for k in 0..COMMAND_SPAN {
        let term = 0x1200 | k as u16;
        let fail = |qpn| [(k, EngineEvent::Fail { qpn, term, received: false })];
        // Another QP fails while QP 3 goes to RTS, then while it goes back to RESET.
        fresh(&mut d, 5);
        fresh(&mut d, 6);
        assert_eq!(d.command(CmdOpcode::WriteQp.code(), 3, &reset.to_words()).0, ok);
        assert_eq!(d.command_with(CmdOpcode::WriteQp.code(), 3, &rts.to_words(), &fail(5)).0, ok, "k {k}");
        assert_eq!(qp_status(&mut d, 3), (QpState::Rts, None), "k {k}: QP 3 after WRITE_QP RTS");
        assert_eq!(qp_status(&mut d, 5), (QpState::Error, Some((term, false))), "k {k}: QP 5 failed");
        d.engine_fail(3, 0x0100, true);
        assert_eq!(d.command_with(CmdOpcode::WriteQp.code(), 3, &reset.to_words(), &fail(6)).0, ok, "k {k}");
        assert_eq!(qp_status(&mut d, 3), (QpState::Reset, None), "k {k}: QP 3 after WRITE_QP RESET");
        assert_eq!(qp_status(&mut d, 6), (QpState::Error, Some((term, false))), "k {k}: QP 6 failed");
        // Another MR is invalidated while MR 9 is made valid.
        assert_eq!(d.command(CmdOpcode::WriteMr.code(), 9, &mr_off.to_words()).0, ok);
        assert_eq!(d.command(CmdOpcode::WriteMr.code(), 10, &mr.to_words()).0, ok);
        let invalidate = [(k, EngineEvent::Invalidate { mr: 10 })];
        assert_eq!(d.command_with(CmdOpcode::WriteMr.code(), 9, &mr.to_words(), &invalidate).0, ok, "k {k}");
        assert!(mr_valid(&mut d, 9), "k {k}: MR 9 after WRITE_MR");
        assert!(!mr_valid(&mut d, 10), "k {k}: MR 10 invalidated");
        // The command's own QP fails while it is written again in RTS, or queried.
        fresh(&mut d, 5);
        rewrites.push(d.command_with(CmdOpcode::WriteQp.code(), 5, &rts.to_words(), &fail(5)).0);
        assert_eq!(qp_status(&mut d, 5), (QpState::Error, Some((term, false))), "k {k}: QP 5 rewritten");
        fresh(&mut d, 5);
        // (A Terminate of its own: the one before is still in the table.)
        let query_term = 0x1300 | k as u16;
        let fail = [(k, EngineEvent::Fail { qpn: 5, term: query_term, received: true })];
        let (r, w) = d.command_with(CmdOpcode::QueryQp.code(), 5, &[0; 16], &fail);
        assert_eq!(r, ok);
        let state = QpContext::from_words(&w).expect("context").state;
        let reported = QpStatus::from_words(&w).terminate.map(|t| (t.code.etype, t.code.code, t.received));
        queries.push((state, reported));
        assert_eq!(qp_status(&mut d, 5), (QpState::Error, Some((query_term, true))), "k {k}: QP 5 queried");
    }
    // Before the check the failure refuses ERROR -> RTS; after it, the write is done.
    let switch = rewrites.iter().position(|&r| r == ok).expect("a rewrite before the failure");
    assert!(switch > 0, "every rewrite came before the failure: {rewrites:?}");
    assert!(rewrites[..switch].iter().all(|&r| r == CmdResult::BadState.code()), "{rewrites:?}");
    assert!(rewrites[switch..].iter().all(|&r| r == ok), "{rewrites:?}");
    // A query sees the failure whole (ERROR and its Terminate) or not at all.
    let switch = queries.iter().position(|&q| q == (QpState::Rts, None)).expect("a query before the failure");
    assert!(switch > 0, "every query came before the failure: {queries:?}");
    for (k, &q) in queries.iter().enumerate() {
        let expected = if k < switch { (QpState::Error, Some((3, k as u8, true))) } else { (QpState::Rts, None) };
        assert_eq!(q, expected, "query with the failure at {k}: {queries:?}");
    }
}
