//! The RNIC host interface: what the driver and the hardware agree on.
//!
//! * [`regs`]: BAR0 — identity, control, the command interface, doorbells;
//! * [`context`]: the QP, CQ and MR contexts carried by `CMD_DATA`, and STags;
//! * [`desc`]: SQ and RQ work queue entries, completion queue entries and
//!   the ring rules (slot addresses, CQE phase);
//! * [`field`]: [`Field`], the bit-field description every layout above is
//!   built from, so the HDL generator, the driver and `docs/REGISTERS.md` /
//!   `docs/DESCRIPTORS.md` read the same numbers.
//!
//! Registers, contexts and descriptors are little-endian (host order); only
//! the wire formats of the other modules are big-endian.
//!
//! A ring of `2^log_size` slots is driven by absolute, free-running 32-bit
//! indices: the producer writes slot `index mod 2^log_size`, then publishes
//! `index + 1` through its doorbell. The host produces SQ and RQ WQEs
//! (`SQ_PI`, `RQ_PI`) and consumes CQEs (`CQ_CI`); the RNIC consumes WQEs
//! and produces CQEs, which carry a phase bit ([`desc::cqe_phase`]) instead
//! of a producer doorbell.

pub mod context;
pub mod desc;
pub mod field;
pub mod regs;

pub use context::{
    stag, stag_index, stag_key, ContextError, CqContext, CqStatus, MrAccess, MrContext, QpContext, QpState, QpStatus,
    TermInfo,
};
pub use desc::{cqe_phase, ring_slot, slot_addr, Cqe, CqeOpcode, CqeStatus, DescError, RqWqe, SqOpcode, SqWqe};
pub use field::Field;
pub use regs::{CmdOpcode, CmdResult};
