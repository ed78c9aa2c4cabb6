//! Driver for the `rnic_host_ctrl` model (hdl/src/host/ctrl.rs): BAR0 over AXI4-Lite as
//! the host reaches it, the engine-side inputs (failures, invalidations), the doorbell
//! events it hands to the engines, and the DMA fence, played with a set delay.
use rnic_proto::host::regs::{self, CmdResult};

use crate::axil::{AxilMaster, Phase};
use crate::{Model, Port, SimError};

/// A doorbell as the engines see it: kind (`0` SQ, `1` RQ, `2` CQ_CI, `3` CQ_ARM), queue
/// number, the value written.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Doorbell {
    pub kind: u8,
    pub queue: u16,
    pub value: u32,
}

/// What an engine tells the control block, for one cycle.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum EngineEvent {
    /// QP `qpn` failed with Terminate `term` (layer << 12 | etype << 8 | code), sent or
    /// `received`.
    Fail { qpn: u32, term: u16, received: bool },
    /// MR `mr` is invalidated.
    Invalidate { mr: u32 },
}

/// How many polls of CMD_STATUS a command may take before the bench gives up.
const COMMAND_POLLS: usize = 1000;

struct EnginePorts {
    db_valid: Port,
    db_kind: Port,
    db_index: Port,
    db_value: Port,
    fail: Port,
    fail_qp: Port,
    fail_term: Port,
    fail_received: Port,
    invalidate: Port,
    invalidate_mr: Port,
    fence_start: Port,
    fence_done: Port,
}

/// The DMA fence as the bench plays it: `fence_done` for one cycle, `delay` cycles after
/// each `fence_start`.
#[derive(Default)]
struct Fence {
    delay: u64,
    /// Cycles until `fence_done`, while a fence runs.
    left: Option<u64>,
    started: u64,
}

/// The control block with a BAR0 master; engine inputs idle unless pulsed.
pub struct HostCtrlDriver {
    pub model: Model,
    bar: AxilMaster,
    ports: EnginePorts,
    doorbells: Vec<Doorbell>,
    fence: Fence,
    /// Engine events to come, each with the cycle it is driven in.
    events: Vec<(u64, EngineEvent)>,
}

impl HostCtrlDriver {
    /// Opens the model and resets it for a few cycles.
    pub fn new(seed: u64) -> Result<Self, SimError> {
        let model = Model::new("rnic_host_ctrl")?;
        let bar = AxilMaster::new(&model, "s_axil", seed);
        let p = |n: &str| model.port(n);
        let ports = EnginePorts {
            db_valid: p("db_valid"),
            db_kind: p("db_kind"),
            db_index: p("db_index"),
            db_value: p("db_value"),
            fail: p("fail"),
            fail_qp: p("fail_qp"),
            fail_term: p("fail_term"),
            fail_received: p("fail_received"),
            invalidate: p("invalidate"),
            invalidate_mr: p("invalidate_mr"),
            fence_start: p("fence_start"),
            fence_done: p("fence_done"),
        };
        let fence = Fence { delay: 1, ..Fence::default() };
        let mut d = HostCtrlDriver { model, bar, ports, doorbells: Vec::new(), fence, events: Vec::new() };
        let reset = d.model.port("reset");
        d.model.set_bit(reset, true);
        for _ in 0..4 {
            d.cycle();
        }
        d.model.set_bit(reset, false);
        Ok(d)
    }

    /// Random gaps and back-pressure on BAR0 (probabilities of valid/ready per cycle).
    pub fn set_bus_rates(&mut self, valid: f64, ready: f64) {
        self.bar.core.valid_rate = valid;
        self.bar.core.ready_rate = ready;
    }

    /// Cycles from `fence_start` to `fence_done` (1 unless set).
    pub fn set_fence_delay(&mut self, cycles: u64) {
        self.fence.delay = cycles.max(1);
    }

    /// Fences started so far.
    pub fn fences(&self) -> u64 {
        self.fence.started
    }

    /// One clock with BAR0 idle.
    pub fn cycle(&mut self) {
        let HostCtrlDriver { model, bar, ports, doorbells, fence, events } = self;
        bar.drive(model);
        model.eval();
        bar.observe(model);
        observe_engines(model, ports, doorbells, fence, events);
        model.tick();
    }

    /// Writes a BAR0 register.
    pub fn write32(&mut self, offset: u32, value: u32) {
        let HostCtrlDriver { model, bar, ports, doorbells, fence, events } = self;
        bar.write32(model, offset, value, |m, phase| {
            if phase == Phase::Observe {
                observe_engines(m, ports, doorbells, fence, events);
            }
        });
    }

    /// Reads a BAR0 register.
    pub fn read32(&mut self, offset: u32) -> u32 {
        let HostCtrlDriver { model, bar, ports, doorbells, fence, events } = self;
        bar.read32(model, offset, |m, phase| {
            if phase == Phase::Observe {
                observe_engines(m, ports, doorbells, fence, events);
            }
        })
    }

    /// Runs a command as the driver does: CMD_DATA, CMD, poll CMD_STATUS until not busy.
    /// Returns the result and CMD_DATA afterwards.
    pub fn command(&mut self, opcode: u8, index: u32, data: &[u32; 16]) -> (u8, [u32; 16]) {
        self.command_with(opcode, index, data, &[])
    }

    /// `command`, with engine events `events` (cycle, event), cycles counted from the one
    /// the write of CMD starts in.
    pub fn command_with(
        &mut self,
        opcode: u8,
        index: u32,
        data: &[u32; 16],
        events: &[(u64, EngineEvent)],
    ) -> (u8, [u32; 16]) {
        for (i, &w) in data.iter().enumerate() {
            self.write32(regs::cmd_data(i as u32), w);
        }
        let start = self.model.cycles();
        self.events.extend(events.iter().map(|&(at, e)| (start + at, e)));
        self.write32(regs::CMD, u32::from(opcode) | index << 8);
        let status = (0..COMMAND_POLLS)
            .map(|_| self.read32(regs::CMD_STATUS))
            .find(|s| s & 1 == 0)
            .unwrap_or_else(|| panic!("command {opcode:#x} on {index} still busy after {COMMAND_POLLS} polls"));
        let mut out = [0u32; 16];
        for (i, w) in out.iter_mut().enumerate() {
            *w = self.read32(regs::cmd_data(i as u32));
        }
        ((status >> 8) as u8, out)
    }

    /// The result of the last command, as a `CmdResult` when it is one.
    pub fn result_of(code: u8) -> Result<CmdResult, u8> {
        CmdResult::ALL.iter().map(|(r, _)| *r).find(|r| r.code() == code).ok_or(code)
    }

    /// An engine reports that QP `qpn` failed with Terminate `term`
    /// (layer << 12 | etype << 8 | code), sent or `received`.
    pub fn engine_fail(&mut self, qpn: u32, term: u16, received: bool) {
        self.engine_event(EngineEvent::Fail { qpn, term, received });
    }

    /// An engine invalidates MR `index`.
    pub fn engine_invalidate(&mut self, index: u32) {
        self.engine_event(EngineEvent::Invalidate { mr: index });
    }

    /// One cycle with `event`.
    fn engine_event(&mut self, event: EngineEvent) {
        self.events.push((self.model.cycles(), event));
        self.cycle();
    }

    /// Doorbells seen so far, oldest first; the list is emptied.
    pub fn take_doorbells(&mut self) -> Vec<Doorbell> {
        std::mem::take(&mut self.doorbells)
    }
}

/// Takes this cycle's doorbell, sets `fence_done` for the next cycle, and drives this
/// cycle's engine events (at most one failure and one invalidation).
fn observe_engines(
    model: &mut Model,
    ports: &EnginePorts,
    doorbells: &mut Vec<Doorbell>,
    fence: &mut Fence,
    events: &mut Vec<(u64, EngineEvent)>,
) {
    let now = model.cycles();
    model.set_bit(ports.fail, false);
    model.set_bit(ports.invalidate, false);
    for &(_, event) in events.iter().filter(|(at, _)| *at == now) {
        match event {
            EngineEvent::Fail { qpn, term, received } => {
                model.set_bit(ports.fail, true);
                model.set(ports.fail_qp, qpn.into());
                model.set(ports.fail_term, term.into());
                model.set_bit(ports.fail_received, received);
            }
            EngineEvent::Invalidate { mr } => {
                model.set_bit(ports.invalidate, true);
                model.set(ports.invalidate_mr, mr.into());
            }
        }
    }
    events.retain(|(at, _)| *at > now);
    if model.get_bit(ports.fence_start) {
        assert!(fence.left.is_none(), "a fence started while one runs");
        fence.started += 1;
        fence.left = Some(fence.delay);
    }
    let due = fence.left == Some(1);
    fence.left = fence.left.and_then(|n| n.checked_sub(1)).filter(|&n| n > 0);
    model.set_bit(ports.fence_done, due);
    if model.get_bit(ports.db_valid) {
        doorbells.push(Doorbell {
            kind: model.get(ports.db_kind) as u8,
            queue: model.get(ports.db_index) as u16,
            value: model.get(ports.db_value) as u32,
        });
    }
}
