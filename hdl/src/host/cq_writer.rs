//! The CQ writer: completions in, CQEs written into the host's CQ rings, interrupts out
//! (`docs/DESCRIPTORS.md`, CQE and phase; `docs/REGISTERS.md`, CQ_CI and CQ_ARM).
//!
//! A completion arrives as the whole 32-octet CQE image with its CQ number; this unit adds
//! the phase bit of the lap it is written on, picks the slot (`pi` mod the ring size) and
//! hands the 32 octets to the DMA write engine. A CQ whose ring is full (`pi - ci` = its
//! size, `ci` from the CQ_CI doorbell) drops the CQE and latches OVERFLOW; a disabled CQ
//! drops it silently. An armed CQ raises one interrupt on its vector — for the next CQE,
//! or for the next solicited or error CQE when armed that way — once the DMA engine
//! reports that CQE written: the host never wakes before the entry is there, and the arm
//! is looked at then (two cycles after the report at the earliest), not when the CQE was
//! issued, so a CQ armed while a CQE is on its way (after a poll that found the ring empty)
//! is woken by that CQE.
//!
//! Per CQ it keeps `pi` and `ci` in RAMs, the arm bits and OVERFLOW in registers. A CQ
//! written with ENABLE clear is emptied: both indices, its arms and OVERFLOW go to 0.
//!
//! `settled` counts CQEs written or dropped, in the order they were taken (a drop waits
//! for the writes before it): RFC 7306 §7 holds an Atomic Response until the Send before
//! it has completed, and the receive engine learns that from this count.
use rust_hdl::prelude::*;

use rnic_proto::host::context::cq_fields;
use rnic_proto::host::desc::cqe_fields;
use rnic_proto::host::Field;

use super::regs::{DB_CQ_ARM, DB_CQ_CI};
use crate::common::{constant, RamFifo};

/// CQE writes in flight: `1 << IN_FLIGHT_BITS` (the DMA write engine's queue).
const IN_FLIGHT_BITS: usize = 5;

/// What waits beside a CQE write in flight, for its interrupt once it is written:
/// `vector` (bits 0..16), `urgent` (bit 16: solicited, or an error status; what a
/// solicited-only arm waits for), `cqn` (bits 17..33).
mod irq_entry {
    pub const VECTOR: usize = 0;
    pub const URGENT: usize = 16;
    pub const CQN: usize = 17;
}
const IRQ_ENTRY_BITS: usize = 33;

/// `CB` = CQ index bits, `C` = number of CQs (at most `1 << CB`).
#[derive(LogicBlock)]
pub struct CqWriter<const CB: usize, const C: usize> {
    pub clock: Signal<In, Clock>,
    pub reset: Signal<In, Bit>,
    /// A completion: its CQ and its CQE (PHASE clear).
    pub s_valid: Signal<In, Bit>,
    pub s_ready: Signal<Out, Bit>,
    pub s_cqn: Signal<In, Bits<CB>>,
    pub s_cqe: Signal<In, Bits<256>>,
    /// CQ context writes from the command unit.
    pub cq_we: Signal<In, Bit>,
    pub cq_waddr: Signal<In, Bits<CB>>,
    pub cq_wdata: Signal<In, Bits<96>>,
    /// Doorbells (kind, queue, value) from the register file.
    pub db_valid: Signal<In, Bit>,
    pub db_kind: Signal<In, Bits<2>>,
    pub db_index: Signal<In, Bits<16>>,
    pub db_value: Signal<In, Bits<32>>,
    /// To the DMA write engine: a 32-octet request and its four beats.
    pub m_req_valid: Signal<Out, Bit>,
    pub m_req_ready: Signal<In, Bit>,
    pub m_req_addr: Signal<Out, Bits<64>>,
    pub m_req_len: Signal<Out, Bits<32>>,
    pub m_axis_tdata: Signal<Out, Bits<64>>,
    pub m_axis_tkeep: Signal<Out, Bits<8>>,
    pub m_axis_tlast: Signal<Out, Bit>,
    pub m_axis_tvalid: Signal<Out, Bit>,
    pub m_axis_tready: Signal<In, Bit>,
    /// From the DMA write engine: one pulse per completed request, in order.
    pub s_done_valid: Signal<In, Bit>,
    /// Interrupt requests.
    pub irq_valid: Signal<Out, Bit>,
    pub irq_ready: Signal<In, Bit>,
    pub irq_vector: Signal<Out, Bits<16>>,
    /// OVERFLOW of every CQ.
    pub overflow: Signal<Out, Bits<C>>,
    /// QUERY_CQ: `pi` and OVERFLOW of CQ `status_cqn`, one cycle later.
    pub status_cqn: Signal<In, Bits<CB>>,
    pub status_pi: Signal<Out, Bits<32>>,
    pub status_overflow: Signal<Out, Bit>,
    /// CQEs settled, in the order they were taken, modulo 2^32: written (the DMA engine
    /// acknowledged them) or dropped. A consumer that counts what it handed in knows when
    /// its CQEs are in host memory.
    pub settled: Signal<Out, Bits<32>>,
    ctx: RAM<Bits<96>, CB>,
    pi: RAM<Bits<32>, CB>,
    ci: RAM<Bits<32>, CB>,
    /// A copy of `pi` with a read port for queries.
    pi_copy: RAM<Bits<32>, CB>,
    overflow_bit: DFF<Bit>,
    state: DFF<Bits<3>>,
    cqn: DFF<Bits<CB>>,
    cqe: DFF<Bits<256>>,
    req_valid: DFF<Bit>,
    req_addr: DFF<Bits<64>>,
    beat: DFF<Bits<2>>,
    armed_next: DFF<Bits<C>>,
    armed_solicited: DFF<Bits<C>>,
    overflowed: DFF<Bits<C>>,
    /// CQE writes in flight, in order: each one's entry (vector, urgency, CQ; see
    /// `irq_entry`).
    irqs: RamFifo<IRQ_ENTRY_BITS, IN_FLIGHT_BITS, { IN_FLIGHT_BITS + 1 }>,
    /// CQE writes reported done whose entry of `irqs` has not been taken yet.
    written: DFF<Bits<6>>,
    /// The written CQE whose interrupt is being decided, taken from `irqs`: held, its
    /// arms looked at (`irq_checked`, a cycle after it is held) and whether one wants it
    /// (`irq_due`); its CQ one-hot, its urgency and vector.
    irq_held: DFF<Bit>,
    irq_checked: DFF<Bit>,
    irq_due: DFF<Bit>,
    irq_bit: DFF<Bits<C>>,
    irq_urgent: DFF<Bit>,
    irq_vec: DFF<Bits<16>>,
    settled_count: DFF<Bits<32>>,
    dropping: Signal<Local, Bit>,
    irq_load: Signal<Local, Bit>,
    irq_take: Signal<Local, Bit>,
    cq_bit: Signal<Local, Bits<C>>,
    db_bit: Signal<Local, Bits<C>>,
    ctx_bit: Signal<Local, Bits<C>>,
    log_size: Signal<Local, Bits<8>>,
    size: Signal<Local, Bits<33>>,
    used: Signal<Local, Bits<32>>,
    full: Signal<Local, Bit>,
    enabled: Signal<Local, Bit>,
    slot: Signal<Local, Bits<64>>,
    phase: Signal<Local, Bit>,
    urgent: Signal<Local, Bit>,
    irq_entry: Signal<Local, Bits<IRQ_ENTRY_BITS>>,
    clearing: Signal<Local, Bit>,
    irq_head_entry: Signal<Local, Bits<IRQ_ENTRY_BITS>>,
    /// The head write's CQ, one-hot, and whether the held CQE's arm wants it.
    head_bit: Signal<Local, Bits<C>>,
    head_wakes: Signal<Local, Bit>,
    /// This cycle's arm doorbell (NEXT, SOLICITED), and the arms ended (a wake taken, a
    /// CQ emptied): the arm registers are `(armed | set) & !ended`.
    arm_next_set: Signal<Local, Bits<C>>,
    arm_solicited_set: Signal<Local, Bits<C>>,
    disarm: Signal<Local, Bits<C>>,
    one: Constant<Bits<C>>,
    slot_mask_one: Constant<Bits<33>>,
    at_log_size: Constant<Bits<7>>,
    at_enable: Constant<Bits<7>>,
    at_vector: Constant<Bits<7>>,
    at_base: Constant<Bits<7>>,
    phase_bit: Constant<Bits<256>>,
    at_solicited: Constant<Bits<8>>,
    entry_vector: Constant<Bits<8>>,
    entry_urgent: Constant<Bits<8>>,
    entry_cqn: Constant<Bits<8>>,
    at_status: Constant<Bits<8>>,
    db_ci: Constant<Bits<2>>,
    db_arm: Constant<Bits<2>>,
    cq_count: Constant<Bits<16>>,
}

impl<const CB: usize, const C: usize> Default for CqWriter<CB, C> {
    fn default() -> Self {
        const { assert!(C <= 1 << CB && CB <= 16) };
        let at = |f: Field| constant(f.lsb.into());
        CqWriter {
            clock: Default::default(),
            reset: Default::default(),
            s_valid: Default::default(),
            s_ready: Default::default(),
            s_cqn: Default::default(),
            s_cqe: Default::default(),
            cq_we: Default::default(),
            cq_waddr: Default::default(),
            cq_wdata: Default::default(),
            db_valid: Default::default(),
            db_kind: Default::default(),
            db_index: Default::default(),
            db_value: Default::default(),
            m_req_valid: Default::default(),
            m_req_ready: Default::default(),
            m_req_addr: Default::default(),
            m_req_len: Default::default(),
            m_axis_tdata: Default::default(),
            m_axis_tkeep: Default::default(),
            m_axis_tlast: Default::default(),
            m_axis_tvalid: Default::default(),
            m_axis_tready: Default::default(),
            s_done_valid: Default::default(),
            irq_valid: Default::default(),
            irq_ready: Default::default(),
            irq_vector: Default::default(),
            overflow: Default::default(),
            status_cqn: Default::default(),
            status_pi: Default::default(),
            status_overflow: Default::default(),
            settled: Default::default(),
            settled_count: Default::default(),
            dropping: Default::default(),
            ctx: Default::default(),
            pi: Default::default(),
            ci: Default::default(),
            pi_copy: Default::default(),
            overflow_bit: Default::default(),
            state: Default::default(),
            cqn: Default::default(),
            cqe: Default::default(),
            req_valid: Default::default(),
            req_addr: Default::default(),
            beat: Default::default(),
            armed_next: Default::default(),
            armed_solicited: Default::default(),
            overflowed: Default::default(),
            irqs: Default::default(),
            written: Default::default(),
            irq_load: Default::default(),
            irq_take: Default::default(),
            cq_bit: Default::default(),
            db_bit: Default::default(),
            ctx_bit: Default::default(),
            log_size: Default::default(),
            size: Default::default(),
            used: Default::default(),
            full: Default::default(),
            enabled: Default::default(),
            slot: Default::default(),
            phase: Default::default(),
            urgent: Default::default(),
            irq_entry: Default::default(),
            clearing: Default::default(),
            irq_head_entry: Default::default(),
            head_bit: Default::default(),
            head_wakes: Default::default(),
            irq_held: Default::default(),
            irq_checked: Default::default(),
            irq_due: Default::default(),
            irq_bit: Default::default(),
            irq_urgent: Default::default(),
            irq_vec: Default::default(),
            arm_next_set: Default::default(),
            arm_solicited_set: Default::default(),
            disarm: Default::default(),
            one: constant(1),
            slot_mask_one: constant(1),
            at_log_size: at(cq_fields::LOG_SIZE),
            at_enable: at(cq_fields::ENABLE),
            at_vector: at(cq_fields::VECTOR),
            at_base: at(cq_fields::BASE),
            phase_bit: Constant::new(Bits::<256>::from(1_u64) << u64::from(cqe_fields::PHASE.lsb)),
            at_solicited: constant(cqe_fields::SOLICITED.lsb.into()),
            entry_vector: constant(irq_entry::VECTOR as u64),
            entry_urgent: constant(irq_entry::URGENT as u64),
            entry_cqn: constant(irq_entry::CQN as u64),
            at_status: constant(cqe_fields::STATUS.lsb.into()),
            db_ci: constant(DB_CQ_CI),
            db_arm: constant(DB_CQ_ARM),
            cq_count: constant(C as u64),
        }
    }
}

impl<const CB: usize, const C: usize> Logic for CqWriter<CB, C> {
    #[hdl_gen]
    fn update(&mut self) {
        dff_setup!(
            self,
            clock,
            state,
            cqn,
            cqe,
            req_valid,
            req_addr,
            beat,
            armed_next,
            armed_solicited,
            overflowed,
            written,
            irq_held,
            irq_checked,
            irq_due,
            irq_bit,
            irq_urgent,
            irq_vec,
            overflow_bit,
            settled_count
        );
        self.pi_copy.read_clock.next = self.clock.val();
        self.pi_copy.write_clock.next = self.clock.val();
        self.irqs.clock.next = self.clock.val();
        self.irqs.reset.next = self.reset.val();
        self.ctx.read_clock.next = self.clock.val();
        self.ctx.write_clock.next = self.clock.val();
        self.pi.read_clock.next = self.clock.val();
        self.pi.write_clock.next = self.clock.val();
        self.ci.read_clock.next = self.clock.val();
        self.ci.write_clock.next = self.clock.val();

        // Host side: contexts, consumer indices, arms. A CQ written with ENABLE clear is
        // emptied.
        self.clearing.next = self.cq_we.val() & !self.cq_wdata.val().get_bit(self.at_enable.val().index());
        self.ctx.write_enable.next = self.cq_we.val();
        self.ctx.write_address.next = self.cq_waddr.val();
        self.ctx.write_data.next = self.cq_wdata.val();
        self.ci.write_enable.next = self.db_valid.val()
            & (self.db_kind.val() == self.db_ci.val())
            & (self.db_index.val() < self.cq_count.val());
        self.ci.write_address.next = self.db_index.val().get_bits::<CB>(0);
        self.ci.write_data.next = self.db_value.val();
        if self.clearing.val() {
            self.ci.write_enable.next = true;
            self.ci.write_address.next = self.cq_waddr.val();
            self.ci.write_data.next = 0.into();
        }
        self.db_bit.next = self.one.val() << bit_cast::<C, CB>(self.db_index.val().get_bits::<CB>(0));
        self.ctx_bit.next = self.one.val() << bit_cast::<C, CB>(self.cq_waddr.val());
        self.arm_next_set.next = 0.into();
        self.arm_solicited_set.next = 0.into();
        if self.db_valid.val() & (self.db_kind.val() == self.db_arm.val()) & (self.db_index.val() < self.cq_count.val())
        {
            if self.db_value.val().get_bit(0) {
                self.arm_next_set.next = self.db_bit.val();
            }
            if self.db_value.val().get_bit(1) {
                self.arm_solicited_set.next = self.db_bit.val();
            }
        }

        // A completion: read its CQ's context and indices (state 1), decide (2), request
        // the write (3), send the four beats (4).
        self.s_ready.next = self.state.q.val() == 0;
        self.ctx.read_address.next = self.cqn.q.val();
        self.pi.read_address.next = self.cqn.q.val();
        self.ci.read_address.next = self.cqn.q.val();
        self.pi.write_enable.next = false;
        self.pi.write_address.next = self.cqn.q.val();
        self.pi.write_data.next = self.pi.read_data.val() + 1;
        self.cq_bit.next = self.one.val() << bit_cast::<C, CB>(self.cqn.q.val());
        self.log_size.next = self.ctx.read_data.val().get_bits::<8>(self.at_log_size.val().index());
        self.size.next = self.slot_mask_one.val() << self.log_size.val();
        // (The count in use is its own 32-bit signal: it wraps with the indexes.)
        self.used.next = self.pi.read_data.val() - self.ci.read_data.val();
        self.full.next = bit_cast::<33, 32>(self.used.val()) >= self.size.val();
        self.enabled.next = self.ctx.read_data.val().get_bit(self.at_enable.val().index());
        self.slot.next = bit_cast::<64, 33>(bit_cast::<33, 32>(self.pi.read_data.val()) & (self.size.val() - 1)) << 5;
        self.phase.next = !(bit_cast::<33, 32>(self.pi.read_data.val()) & self.size.val()).any();
        // What its interrupt needs once it is written: the vector, whether a
        // solicited-only arm wants it (solicited, or failed), the CQ.
        self.urgent.next = self.cqe.q.val().get_bit(self.at_solicited.val().index())
            | self.cqe.q.val().get_bits::<8>(self.at_status.val().index()).any();
        self.irq_entry.next = (bit_cast::<IRQ_ENTRY_BITS, CB>(self.cqn.q.val()) << self.entry_cqn.val())
            | (bit_cast::<IRQ_ENTRY_BITS, 1>(self.urgent.val().into()) << self.entry_urgent.val())
            | (bit_cast::<IRQ_ENTRY_BITS, 16>(self.ctx.read_data.val().get_bits::<16>(self.at_vector.val().index()))
                << self.entry_vector.val());
        if (self.state.q.val() == 0) & self.s_valid.val() {
            self.cqn.d.next = self.s_cqn.val();
            self.cqe.d.next = self.s_cqe.val();
            self.state.d.next = 1.into();
        }
        if self.state.q.val() == 1 {
            self.state.d.next = 2.into();
        }
        // A CQE that is dropped waits until the writes before it are acknowledged, so CQEs
        // settle in order.
        self.dropping.next = !self.enabled.val() | self.full.val();
        self.irqs.s_valid.next = false;
        self.irqs.s_data.next = self.irq_entry.val();
        if (self.state.q.val() == 2) & self.irqs.s_ready.val() & (!self.dropping.val() | !self.irqs.count.val().any()) {
            self.state.d.next = 0.into();
            if self.dropping.val() {
                self.settled_count.d.next = self.settled_count.q.val() + 1;
            }
            if self.enabled.val() & self.full.val() {
                self.overflowed.d.next = self.overflowed.q.val() | self.cq_bit.val();
            }
            if self.enabled.val() & !self.full.val() {
                self.state.d.next = 3.into();
                self.req_valid.d.next = true;
                self.req_addr.d.next =
                    self.ctx.read_data.val().get_bits::<64>(self.at_base.val().index()) + self.slot.val();
                self.pi.write_enable.next = true;
                if self.phase.val() {
                    self.cqe.d.next = self.cqe.q.val() | self.phase_bit.val();
                }
                self.irqs.s_valid.next = true;
            }
        }
        if (self.state.q.val() == 3) & self.m_req_ready.val() {
            self.req_valid.d.next = false;
            self.state.d.next = 4.into();
            self.beat.d.next = 0.into();
        }
        if (self.state.q.val() == 4) & self.m_axis_tready.val() {
            self.beat.d.next = self.beat.q.val() + 1;
            if self.beat.q.val() == 3 {
                self.state.d.next = 0.into();
            }
        }
        self.m_req_valid.next = self.req_valid.q.val();
        self.m_req_addr.next = self.req_addr.q.val();
        self.m_req_len.next = 32.into();
        self.m_axis_tvalid.next = self.state.q.val() == 4;
        self.m_axis_tdata.next = self.cqe.q.val().get_bits::<64>(0);
        if self.beat.q.val() == 1 {
            self.m_axis_tdata.next = self.cqe.q.val().get_bits::<64>(64);
        }
        if self.beat.q.val() == 2 {
            self.m_axis_tdata.next = self.cqe.q.val().get_bits::<64>(128);
        }
        if self.beat.q.val() == 3 {
            self.m_axis_tdata.next = self.cqe.q.val().get_bits::<64>(192);
        }
        self.m_axis_tkeep.next = 0xFF.into();
        self.m_axis_tlast.next = self.beat.q.val() == 3;

        // Interrupts, in CQE order, each once its CQE is written: if its CQ is armed then
        // for any CQE, or for a solicited or failed one. The interrupt ends the arm.
        if self.s_done_valid.val() {
            self.written.d.next = self.written.q.val() + 1;
            // (No drop settles in the same cycle: it waits for no write in flight.)
            self.settled_count.d.next = self.settled_count.q.val() + 1;
        }
        // The oldest written CQE is held while its interrupt is decided: its arms are looked
        // at in the cycle after it is taken (from registers only), and it goes a cycle
        // later, at once if no arm wants it, else with its interrupt.
        self.irq_head_entry.next = self.irqs.m_data.val();
        self.head_bit.next =
            self.one.val() << bit_cast::<C, CB>(self.irq_head_entry.val().get_bits::<CB>(self.entry_cqn.val().index()));
        self.irq_load.next = !self.irq_held.q.val() & (self.written.q.val() != 0) & self.irqs.m_valid.val();
        self.irqs.m_ready.next = self.irq_load.val();
        if self.irq_load.val() {
            self.irq_held.d.next = true;
            self.irq_checked.d.next = false;
            self.irq_bit.d.next = self.head_bit.val();
            self.irq_urgent.d.next = self.irq_head_entry.val().get_bit(self.entry_urgent.val().index());
            self.irq_vec.d.next = self.irq_head_entry.val().get_bits::<16>(self.entry_vector.val().index());
        }
        self.head_wakes.next = (self.armed_next.q.val() & self.irq_bit.q.val()).any()
            | ((self.armed_solicited.q.val() & self.irq_bit.q.val()).any() & self.irq_urgent.q.val());
        if self.irq_held.q.val() & !self.irq_checked.q.val() {
            self.irq_checked.d.next = true;
            self.irq_due.d.next = self.head_wakes.val();
        }
        self.irq_take.next =
            self.irq_held.q.val() & self.irq_checked.q.val() & (!self.irq_due.q.val() | self.irq_ready.val());
        if self.irq_take.val() {
            self.irq_held.d.next = false;
        }
        if self.irq_load.val() {
            self.written.d.next = self.written.q.val() - 1;
            if self.s_done_valid.val() {
                self.written.d.next = self.written.q.val();
            }
        }

        self.disarm.next = 0.into();
        if self.irq_take.val() & self.irq_due.q.val() {
            self.disarm.next = self.irq_bit.q.val();
        }
        if self.clearing.val() {
            self.pi.write_enable.next = true;
            self.pi.write_address.next = self.cq_waddr.val();
            self.pi.write_data.next = 0.into();
            self.disarm.next = self.disarm.val() | self.ctx_bit.val();
            self.overflowed.d.next = self.overflowed.q.val() & !self.ctx_bit.val();
        }
        self.armed_next.d.next = (self.armed_next.q.val() | self.arm_next_set.val()) & !self.disarm.val();
        self.armed_solicited.d.next =
            (self.armed_solicited.q.val() | self.arm_solicited_set.val()) & !self.disarm.val();
        if self.reset.val() {
            self.state.d.next = 0.into();
            self.req_valid.d.next = false;
            self.armed_next.d.next = 0.into();
            self.armed_solicited.d.next = 0.into();
            self.overflowed.d.next = 0.into();
            self.written.d.next = 0.into();
            self.irq_held.d.next = false;
            self.settled_count.d.next = 0.into();
        }
        self.overflow.next = self.overflowed.q.val();
        self.pi_copy.write_enable.next = self.pi.write_enable.val();
        self.pi_copy.write_address.next = self.pi.write_address.val();
        self.pi_copy.write_data.next = self.pi.write_data.val();
        self.pi_copy.read_address.next = self.status_cqn.val();
        self.status_pi.next = self.pi_copy.read_data.val();
        self.overflow_bit.d.next =
            (self.overflowed.q.val() & (self.one.val() << bit_cast::<C, CB>(self.status_cqn.val()))).any();
        self.status_overflow.next = self.overflow_bit.q.val();
        self.settled.next = self.settled_count.q.val();
        self.irq_valid.next = self.irq_held.q.val() & self.irq_checked.q.val() & self.irq_due.q.val();
        self.irq_vector.next = self.irq_vec.q.val();
    }
}
