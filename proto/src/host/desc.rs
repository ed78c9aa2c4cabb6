//! Descriptors in host memory: SQ WQEs, RQ WQEs and CQEs, and the ring rules.
//!
//! All fields are little-endian. Decoders take any slice and never panic:
//! a short slice is [`DescError::Truncated`]; reserved octets and bits are
//! ignored when read and written as zero.
//!
//! The SQ WQE keeps the raw opcode octet, because a WQE with an opcode the
//! RNIC does not support is still a WQE: it completes with `BAD_OPCODE`.
//! A CQE is written by the RNIC, so an unknown opcode or status in one is a
//! decode error.

use super::field::Field;
use crate::atomic::{AtomicOp, OPERAND_LEN};
use crate::rdmap::{Opcode, IMMEDIATE_DATA_LEN};

/// Octets per SQ slot.
pub const SQ_WQE_SLOT_LEN: usize = 128;
/// Octets of an SQ slot the RNIC fetches (96–127 are reserved): the
/// atomic operands end at 95.
pub const SQ_WQE_LEN: usize = 96;
/// Octets per RQ slot.
pub const RQ_WQE_LEN: usize = 32;
/// Octets per CQE slot.
pub const CQE_LEN: usize = 32;

/// Errors of the descriptor decoders.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum DescError {
    /// The slice is shorter than the descriptor.
    #[error("{what} needs {needed} octets, got {got}")]
    Truncated {
        /// The descriptor.
        what: &'static str,
        /// Octets it needs.
        needed: usize,
        /// Octets given.
        got: usize,
    },
    /// A CQE opcode no RNIC writes.
    #[error("unknown CQE opcode {0}")]
    CqeOpcode(u8),
    /// A CQE status no RNIC writes.
    #[error("unknown CQE status {0}")]
    CqeStatus(u8),
}

fn need(buf: &[u8], what: &'static str, needed: usize) -> Result<(), DescError> {
    if buf.len() < needed {
        return Err(DescError::Truncated { what, needed, got: buf.len() });
    }
    Ok(())
}

/// SQ WQE opcodes (byte 0). Each supported one equals the RDMAP opcode of
/// the message it sends.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
#[repr(u8)]
pub enum SqOpcode {
    /// RDMA Write.
    RdmaWrite = 0x00,
    /// RDMA Read.
    RdmaRead = 0x01,
    /// Send.
    Send = 0x03,
    /// Send with Invalidate (`remote_stag` is invalidated at the peer).
    SendInv = 0x04,
    /// Send with Solicited Event.
    SendSe = 0x05,
    /// Send with Solicited Event and Invalidate.
    SendSeInv = 0x06,
    /// Immediate Data (RFC 7306 §6): the 8 octets of `imm`, no local buffer.
    Imm = 0x08,
    /// Immediate Data with Solicited Event.
    ImmSe = 0x09,
    /// Atomic (RFC 7306 §5): `aopcode` on `remote_stag`/`remote_to`; the
    /// original value lands in the 8-octet local buffer.
    Atomic = 0x0A,
    /// RDMA Write with Immediate: not supported (BAD_OPCODE). RDMA_WRITE
    /// followed by IMM gives the same guarantee (CHECKLIST IMM-05).
    WriteImm = 0x10,
}

impl SqOpcode {
    /// Every opcode with its docs name.
    pub const ALL: [(SqOpcode, &'static str); 10] = [
        (SqOpcode::RdmaWrite, "RDMA_WRITE"),
        (SqOpcode::RdmaRead, "RDMA_READ"),
        (SqOpcode::Send, "SEND"),
        (SqOpcode::SendInv, "SEND_INV"),
        (SqOpcode::SendSe, "SEND_SE"),
        (SqOpcode::SendSeInv, "SEND_SE_INV"),
        (SqOpcode::Imm, "IMM"),
        (SqOpcode::ImmSe, "IMM_SE"),
        (SqOpcode::Atomic, "ATOMIC"),
        (SqOpcode::WriteImm, "WRITE_IMM"),
    ];

    /// The opcode value.
    pub fn code(self) -> u8 {
        self as u8
    }

    /// True for the WQEs that wait for a response and so hold an ORD slot
    /// (RFC 7306 §5.2: atomics share the Read machinery).
    pub fn takes_ord_slot(self) -> bool {
        matches!(self, SqOpcode::RdmaRead | SqOpcode::Atomic)
    }

    /// True for the opcodes this RNIC executes; the others complete with
    /// `BAD_OPCODE`.
    pub fn is_supported(self) -> bool {
        self.rdmap_opcode().is_some()
    }

    /// The RDMAP message a supported opcode sends (a Read sends a Read
    /// Request, an Atomic an Atomic Request).
    pub fn rdmap_opcode(self) -> Option<Opcode> {
        match self {
            SqOpcode::RdmaWrite => Some(Opcode::RdmaWrite),
            SqOpcode::RdmaRead => Some(Opcode::ReadRequest),
            SqOpcode::Send => Some(Opcode::Send),
            SqOpcode::SendInv => Some(Opcode::SendInvalidate),
            SqOpcode::SendSe => Some(Opcode::SendSolicited),
            SqOpcode::SendSeInv => Some(Opcode::SendSolicitedInvalidate),
            SqOpcode::Imm => Some(Opcode::ImmediateData),
            SqOpcode::ImmSe => Some(Opcode::ImmediateDataSolicited),
            SqOpcode::Atomic => Some(Opcode::AtomicRequest),
            SqOpcode::WriteImm => None,
        }
    }

    /// The CQE opcode of its completion.
    pub fn cqe_opcode(self) -> CqeOpcode {
        match self {
            SqOpcode::RdmaWrite | SqOpcode::WriteImm => CqeOpcode::RdmaWrite,
            SqOpcode::RdmaRead => CqeOpcode::RdmaRead,
            SqOpcode::Atomic => CqeOpcode::Atomic,
            SqOpcode::Send
            | SqOpcode::SendInv
            | SqOpcode::SendSe
            | SqOpcode::SendSeInv
            | SqOpcode::Imm
            | SqOpcode::ImmSe => CqeOpcode::Send,
        }
    }
}

impl TryFrom<u8> for SqOpcode {
    type Error = u8;

    /// The opcode for a value; the value itself when unknown.
    fn try_from(v: u8) -> Result<Self, u8> {
        SqOpcode::ALL.iter().find(|(op, _)| op.code() == v).map(|(op, _)| *op).ok_or(v)
    }
}

/// SQ WQE fields.
pub mod sq_wqe_fields {
    use super::Field;
    /// Opcode, see [`super::SqOpcode`].
    pub const OPCODE: Field = Field::at_byte("opcode", 0, 0, 8);
    /// Write a CQE on success (errors always complete).
    pub const SIGNALED: Field = Field::at_byte("signaled", 1, 0, 1);
    /// Fence (reserved: wait for earlier Reads before starting).
    pub const FENCE: Field = Field::at_byte("fence", 1, 1, 1);
    /// ATOMIC: the AOpCode, sent unchanged (0 FetchAdd, 2 CmpSwap; the
    /// responder refuses any other value, RFC 7306 §5.2.1).
    pub const AOPCODE: Field = Field::at_byte("aopcode", 2, 0, 4);
    /// Payload octets; for a Read, the octets to read. Ignored for IMM,
    /// IMM_SE (no local buffer) and ATOMIC (always 8).
    pub const LENGTH: Field = Field::at_byte("length", 4, 0, 32);
    /// The host's identifier, returned in the CQE.
    pub const WR_ID: Field = Field::at_byte("wr_id", 8, 0, 64);
    /// TO inside the lkey's MR: the source, or a Read's or an Atomic's sink.
    pub const LOCAL_ADDR: Field = Field::at_byte("local_addr", 16, 0, 64);
    /// The local MR's STag.
    pub const LKEY: Field = Field::at_byte("lkey", 24, 0, 32);
    /// Write/Read/Atomic: the peer's STag. Send with Invalidate: the STag to invalidate.
    pub const REMOTE_STAG: Field = Field::at_byte("remote_stag", 28, 0, 32);
    /// Write/Read/Atomic: the peer's TO.
    pub const REMOTE_TO: Field = Field::at_byte("remote_to", 32, 0, 64);
    /// IMM, IMM_SE: the 8 octets sent, in the order they are in memory
    /// (the wire carries octets 40–47 as they are).
    pub const IMM: Field = Field::at_byte("imm", 40, 0, 64);
    /// ATOMIC: FetchAdd Add Data, or CmpSwap Swap Data.
    pub const ADD_SWAP: Field = Field::at_byte("add_swap", 64, 0, 64);
    /// ATOMIC: FetchAdd Add Mask (0: a plain add), or CmpSwap Swap Mask.
    pub const ADD_SWAP_MASK: Field = Field::at_byte("add_swap_mask", 72, 0, 64);
    /// ATOMIC CmpSwap: Compare Data (a FetchAdd sends 0).
    pub const COMPARE: Field = Field::at_byte("compare", 80, 0, 64);
    /// ATOMIC CmpSwap: Compare Mask (a FetchAdd sends all ones).
    pub const COMPARE_MASK: Field = Field::at_byte("compare_mask", 88, 0, 64);

    /// Every field, in byte order.
    pub const ALL: &[Field] = &[
        OPCODE,
        SIGNALED,
        FENCE,
        AOPCODE,
        LENGTH,
        WR_ID,
        LOCAL_ADDR,
        LKEY,
        REMOTE_STAG,
        REMOTE_TO,
        IMM,
        ADD_SWAP,
        ADD_SWAP_MASK,
        COMPARE,
        COMPARE_MASK,
    ];
}

/// An SQ work queue entry (a 128-octet slot; the first 96 octets are used).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Default)]
pub struct SqWqe {
    /// Raw opcode, see [`SqOpcode`].
    pub opcode: u8,
    /// Write a CQE on success.
    pub signaled: bool,
    /// Fence flag (reserved).
    pub fence: bool,
    /// Raw AOpCode of an ATOMIC (4 bits), see [`AtomicOp`].
    pub aopcode: u8,
    /// Payload octets (Read: octets to read; ignored for IMM, IMM_SE, ATOMIC).
    pub length: u32,
    /// Host identifier.
    pub wr_id: u64,
    /// Local TO (source, or Read or Atomic sink).
    pub local_addr: u64,
    /// Local MR STag.
    pub lkey: u32,
    /// Peer STag (Write/Read/Atomic) or STag to invalidate (Send with Invalidate).
    pub remote_stag: u32,
    /// Peer TO (Write/Read/Atomic).
    pub remote_to: u64,
    /// IMM, IMM_SE: the 8 octets to send, as `imm.to_le_bytes()`.
    pub imm: u64,
    /// ATOMIC: Add Data or Swap Data.
    pub add_swap: u64,
    /// ATOMIC: Add Mask or Swap Mask.
    pub add_swap_mask: u64,
    /// ATOMIC CmpSwap: Compare Data.
    pub compare: u64,
    /// ATOMIC CmpSwap: Compare Mask.
    pub compare_mask: u64,
}

impl SqWqe {
    /// A signaled WQE with every other field zero.
    pub fn new(opcode: SqOpcode, wr_id: u64) -> Self {
        SqWqe { opcode: opcode.code(), signaled: true, wr_id, ..SqWqe::default() }
    }

    /// A signaled masked FetchAdd (RFC 7306 §5.1.1); add the target with
    /// [`remote`](Self::remote) and the 8-octet result buffer with
    /// [`local`](Self::local).
    pub fn fetch_add(wr_id: u64, add: u64, add_mask: u64) -> Self {
        SqWqe {
            aopcode: AtomicOp::FetchAdd.code(),
            add_swap: add,
            add_swap_mask: add_mask,
            ..SqWqe::new(SqOpcode::Atomic, wr_id)
        }
    }

    /// A signaled masked CmpSwap (RFC 7306 §5.1.2); target and result
    /// buffer as for [`fetch_add`](Self::fetch_add).
    pub fn cmp_swap(wr_id: u64, compare: u64, compare_mask: u64, swap: u64, swap_mask: u64) -> Self {
        SqWqe {
            aopcode: AtomicOp::CmpSwap.code(),
            add_swap: swap,
            add_swap_mask: swap_mask,
            compare,
            compare_mask,
            ..SqWqe::new(SqOpcode::Atomic, wr_id)
        }
    }

    /// A signaled Immediate Data WQE sending `data` as it is (IMM_SE when
    /// `solicited`).
    pub fn immediate(wr_id: u64, data: [u8; IMMEDIATE_DATA_LEN], solicited: bool) -> Self {
        let op = if solicited { SqOpcode::ImmSe } else { SqOpcode::Imm };
        SqWqe { imm: u64::from_le_bytes(data), ..SqWqe::new(op, wr_id) }
    }

    /// Sets the local buffer: `length` octets at TO `addr` of MR `lkey`.
    pub fn local(mut self, lkey: u32, addr: u64, length: u32) -> Self {
        self.lkey = lkey;
        self.local_addr = addr;
        self.length = length;
        self
    }

    /// Sets the remote STag and TO (for Send with Invalidate: the STag only).
    pub fn remote(mut self, stag: u32, to: u64) -> Self {
        self.remote_stag = stag;
        self.remote_to = to;
        self
    }

    /// Clears SIGNALED: no CQE on success.
    pub fn unsignaled(mut self) -> Self {
        self.signaled = false;
        self
    }

    /// The opcode, if it is one the interface defines.
    pub fn op(&self) -> Option<SqOpcode> {
        SqOpcode::try_from(self.opcode).ok()
    }

    /// The `byte_len` of its SUCCESS completion: 8 for IMM, IMM_SE and
    /// ATOMIC, whose size is fixed by RFC 7306 whatever `length` says, and
    /// `length` otherwise.
    pub fn completed_len(&self) -> u32 {
        match self.op() {
            Some(SqOpcode::Imm | SqOpcode::ImmSe) => IMMEDIATE_DATA_LEN as u32,
            Some(SqOpcode::Atomic) => OPERAND_LEN as u32,
            _ => self.length,
        }
    }

    /// The 128-octet slot (octets 96–127 zero).
    pub fn encode(&self) -> [u8; SQ_WQE_SLOT_LEN] {
        use sq_wqe_fields as f;
        let mut b = [0u8; SQ_WQE_SLOT_LEN];
        f::OPCODE.set(&mut b, self.opcode.into());
        f::SIGNALED.set(&mut b, self.signaled.into());
        f::FENCE.set(&mut b, self.fence.into());
        f::AOPCODE.set(&mut b, self.aopcode.into());
        f::LENGTH.set(&mut b, self.length.into());
        f::WR_ID.set(&mut b, self.wr_id);
        f::LOCAL_ADDR.set(&mut b, self.local_addr);
        f::LKEY.set(&mut b, self.lkey.into());
        f::REMOTE_STAG.set(&mut b, self.remote_stag.into());
        f::REMOTE_TO.set(&mut b, self.remote_to);
        f::IMM.set(&mut b, self.imm);
        f::ADD_SWAP.set(&mut b, self.add_swap);
        f::ADD_SWAP_MASK.set(&mut b, self.add_swap_mask);
        f::COMPARE.set(&mut b, self.compare);
        f::COMPARE_MASK.set(&mut b, self.compare_mask);
        b
    }

    /// Reads the 96 octets the RNIC fetches (a whole slot may be given).
    pub fn decode(buf: &[u8]) -> Result<Self, DescError> {
        use sq_wqe_fields as f;
        need(buf, "SQ WQE", SQ_WQE_LEN)?;
        Ok(SqWqe {
            opcode: f::OPCODE.get(buf) as u8,
            signaled: f::SIGNALED.get(buf) != 0,
            fence: f::FENCE.get(buf) != 0,
            aopcode: f::AOPCODE.get(buf) as u8,
            length: f::LENGTH.get(buf) as u32,
            wr_id: f::WR_ID.get(buf),
            local_addr: f::LOCAL_ADDR.get(buf),
            lkey: f::LKEY.get(buf) as u32,
            remote_stag: f::REMOTE_STAG.get(buf) as u32,
            remote_to: f::REMOTE_TO.get(buf),
            imm: f::IMM.get(buf),
            add_swap: f::ADD_SWAP.get(buf),
            add_swap_mask: f::ADD_SWAP_MASK.get(buf),
            compare: f::COMPARE.get(buf),
            compare_mask: f::COMPARE_MASK.get(buf),
        })
    }
}

/// RQ WQE fields.
pub mod rq_wqe_fields {
    use super::Field;
    /// The host's identifier, returned in the CQE.
    pub const WR_ID: Field = Field::at_byte("wr_id", 0, 0, 64);
    /// TO of the buffer inside the lkey's MR.
    pub const ADDR: Field = Field::at_byte("addr", 8, 0, 64);
    /// Buffer size in octets.
    pub const LENGTH: Field = Field::at_byte("length", 16, 0, 32);
    /// The buffer's MR STag.
    pub const LKEY: Field = Field::at_byte("lkey", 20, 0, 32);

    /// Every field, in byte order.
    pub const ALL: &[Field] = &[WR_ID, ADDR, LENGTH, LKEY];
}

/// An RQ work queue entry: one receive buffer (32 octets).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Default)]
pub struct RqWqe {
    /// Host identifier.
    pub wr_id: u64,
    /// TO of the buffer.
    pub addr: u64,
    /// Buffer size.
    pub length: u32,
    /// Buffer MR STag.
    pub lkey: u32,
}

impl RqWqe {
    /// A receive buffer of `length` octets at TO `addr` of MR `lkey`.
    pub fn new(wr_id: u64, lkey: u32, addr: u64, length: u32) -> Self {
        RqWqe { wr_id, addr, length, lkey }
    }

    /// The 32 octets (24–31 zero).
    pub fn encode(&self) -> [u8; RQ_WQE_LEN] {
        use rq_wqe_fields as f;
        let mut b = [0u8; RQ_WQE_LEN];
        f::WR_ID.set(&mut b, self.wr_id);
        f::ADDR.set(&mut b, self.addr);
        f::LENGTH.set(&mut b, self.length.into());
        f::LKEY.set(&mut b, self.lkey.into());
        b
    }

    /// Reads the first 32 octets of `buf`.
    pub fn decode(buf: &[u8]) -> Result<Self, DescError> {
        use rq_wqe_fields as f;
        need(buf, "RQ WQE", RQ_WQE_LEN)?;
        Ok(RqWqe {
            wr_id: f::WR_ID.get(buf),
            addr: f::ADDR.get(buf),
            length: f::LENGTH.get(buf) as u32,
            lkey: f::LKEY.get(buf) as u32,
        })
    }
}

/// CQE opcodes (byte 14).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
#[repr(u8)]
pub enum CqeOpcode {
    /// A Send of any variant (SQ).
    Send = 0,
    /// RDMA Write (SQ).
    RdmaWrite = 1,
    /// RDMA Read (SQ).
    RdmaRead = 2,
    /// A receive (RQ).
    Recv = 3,
    /// A received Immediate Data message (RQ).
    RecvImm = 4,
    /// An atomic (SQ).
    Atomic = 5,
}

impl CqeOpcode {
    /// Every opcode with its docs name.
    pub const ALL: [(CqeOpcode, &'static str); 6] = [
        (CqeOpcode::Send, "SEND"),
        (CqeOpcode::RdmaWrite, "RDMA_WRITE"),
        (CqeOpcode::RdmaRead, "RDMA_READ"),
        (CqeOpcode::Recv, "RECV"),
        (CqeOpcode::RecvImm, "RECV_IMM"),
        (CqeOpcode::Atomic, "ATOMIC"),
    ];

    /// The opcode value.
    pub fn code(self) -> u8 {
        self as u8
    }

    /// True for completions of the RQ.
    pub fn is_receive(self) -> bool {
        matches!(self, CqeOpcode::Recv | CqeOpcode::RecvImm)
    }
}

impl TryFrom<u8> for CqeOpcode {
    type Error = DescError;

    fn try_from(v: u8) -> Result<Self, DescError> {
        CqeOpcode::ALL.get(usize::from(v)).map(|(op, _)| *op).ok_or(DescError::CqeOpcode(v))
    }
}

/// CQE status (byte 15).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
#[repr(u8)]
pub enum CqeStatus {
    /// Done.
    Success = 0,
    /// A Send was longer than the receive buffer (RQ).
    LocalLength = 1,
    /// A local buffer failed its MR checks: lkey, PD, rights or bounds.
    LocalProtection = 2,
    /// The peer refused the access (Terminate of a protection or tagged-buffer error).
    RemoteAccess = 3,
    /// The peer refused the operation (Terminate of an operation or untagged-buffer error).
    RemoteOperation = 4,
    /// The QP was in ERROR before the WQE completed.
    Flushed = 5,
    /// Opcode not supported.
    BadOpcode = 6,
    /// A Read ended by a Terminate that is neither an access nor an operation error.
    Terminated = 7,
}

impl CqeStatus {
    /// Every status with its docs name.
    pub const ALL: [(CqeStatus, &'static str); 8] = [
        (CqeStatus::Success, "SUCCESS"),
        (CqeStatus::LocalLength, "LOCAL_LENGTH"),
        (CqeStatus::LocalProtection, "LOCAL_PROTECTION"),
        (CqeStatus::RemoteAccess, "REMOTE_ACCESS"),
        (CqeStatus::RemoteOperation, "REMOTE_OPERATION"),
        (CqeStatus::Flushed, "FLUSHED"),
        (CqeStatus::BadOpcode, "BAD_OPCODE"),
        (CqeStatus::Terminated, "TERMINATED"),
    ];

    /// The status value.
    pub fn code(self) -> u8 {
        self as u8
    }
}

impl TryFrom<u8> for CqeStatus {
    type Error = DescError;

    fn try_from(v: u8) -> Result<Self, DescError> {
        CqeStatus::ALL.get(usize::from(v)).map(|(s, _)| *s).ok_or(DescError::CqeStatus(v))
    }
}

/// CQE fields.
pub mod cqe_fields {
    use super::Field;
    /// The WQE's identifier.
    pub const WR_ID: Field = Field::at_byte("wr_id", 0, 0, 64);
    /// Octets received (RQ; 8 for RECV_IMM) or the WQE length (SQ; 8 for
    /// IMM, IMM_SE and ATOMIC); 0 unless SUCCESS.
    pub const BYTE_LEN: Field = Field::at_byte("byte_len", 8, 0, 32);
    /// The local QP.
    pub const QPN: Field = Field::at_byte("qpn", 12, 0, 16);
    /// Opcode, see [`super::CqeOpcode`].
    pub const OPCODE: Field = Field::at_byte("opcode", 14, 0, 8);
    /// Status, see [`super::CqeStatus`].
    pub const STATUS: Field = Field::at_byte("status", 15, 0, 8);
    /// RECV_IMM: the 8 octets received, in wire order (`imm.to_le_bytes()`
    /// are the octets as sent); 0 otherwise.
    pub const IMM: Field = Field::at_byte("imm", 16, 0, 64);
    /// The STag a Send with Invalidate invalidated (valid with INVALIDATED).
    pub const INVALIDATED_STAG: Field = Field::at_byte("invalidated_stag", 24, 0, 32);
    /// Ring phase, see [`super::cqe_phase`].
    pub const PHASE: Field = Field::at_byte("phase", 31, 0, 1);
    /// The Send or Immediate Data asked for a solicited event (opcodes 0x5,
    /// 0x6, 0x9).
    pub const SOLICITED: Field = Field::at_byte("solicited", 31, 1, 1);
    /// `imm` holds received immediate data (RECV_IMM).
    pub const IMM_VALID: Field = Field::at_byte("imm_valid", 31, 2, 1);
    /// `invalidated_stag` is valid.
    pub const INVALIDATED: Field = Field::at_byte("invalidated", 31, 3, 1);

    /// Every field, in byte order.
    pub const ALL: &[Field] =
        &[WR_ID, BYTE_LEN, QPN, OPCODE, STATUS, IMM, INVALIDATED_STAG, PHASE, SOLICITED, IMM_VALID, INVALIDATED];
}

/// A completion queue entry (32 octets).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Cqe {
    /// The WQE's identifier.
    pub wr_id: u64,
    /// Received octets (RQ) or [`SqWqe::completed_len`] (SQ); 0 unless SUCCESS.
    pub byte_len: u32,
    /// Local QP number.
    pub qpn: u16,
    /// Opcode.
    pub opcode: CqeOpcode,
    /// Status.
    pub status: CqeStatus,
    /// RECV_IMM: the received octets, `imm.to_le_bytes()` in wire order.
    pub imm: u64,
    /// The STag a Send with Invalidate invalidated (the INVALIDATED flag).
    pub invalidated: Option<u32>,
    /// Ring phase bit.
    pub phase: bool,
    /// Solicited event requested.
    pub solicited: bool,
    /// `imm` is valid.
    pub imm_valid: bool,
}

impl Cqe {
    /// A CQE with the given identity, opcode and status, everything else clear.
    pub fn new(wr_id: u64, qpn: u16, opcode: CqeOpcode, status: CqeStatus) -> Self {
        Cqe {
            wr_id,
            byte_len: 0,
            qpn,
            opcode,
            status,
            imm: 0,
            invalidated: None,
            phase: false,
            solicited: false,
            imm_valid: false,
        }
    }

    /// The 32 octets (28–30 zero).
    pub fn encode(&self) -> [u8; CQE_LEN] {
        use cqe_fields as f;
        let mut b = [0u8; CQE_LEN];
        f::WR_ID.set(&mut b, self.wr_id);
        f::BYTE_LEN.set(&mut b, self.byte_len.into());
        f::QPN.set(&mut b, self.qpn.into());
        f::OPCODE.set(&mut b, self.opcode.code().into());
        f::STATUS.set(&mut b, self.status.code().into());
        f::IMM.set(&mut b, self.imm);
        f::INVALIDATED_STAG.set(&mut b, self.invalidated.unwrap_or(0).into());
        f::PHASE.set(&mut b, self.phase.into());
        f::SOLICITED.set(&mut b, self.solicited.into());
        f::IMM_VALID.set(&mut b, self.imm_valid.into());
        f::INVALIDATED.set(&mut b, self.invalidated.is_some().into());
        b
    }

    /// Reads the first 32 octets of `buf`. The invalidated STag is only
    /// read when its flag is set.
    pub fn decode(buf: &[u8]) -> Result<Self, DescError> {
        use cqe_fields as f;
        need(buf, "CQE", CQE_LEN)?;
        Ok(Cqe {
            wr_id: f::WR_ID.get(buf),
            byte_len: f::BYTE_LEN.get(buf) as u32,
            qpn: f::QPN.get(buf) as u16,
            opcode: CqeOpcode::try_from(f::OPCODE.get(buf) as u8)?,
            status: CqeStatus::try_from(f::STATUS.get(buf) as u8)?,
            imm: f::IMM.get(buf),
            invalidated: (f::INVALIDATED.get(buf) != 0).then(|| f::INVALIDATED_STAG.get(buf) as u32),
            phase: f::PHASE.get(buf) != 0,
            solicited: f::SOLICITED.get(buf) != 0,
            imm_valid: f::IMM_VALID.get(buf) != 0,
        })
    }
}

/// The PHASE bit of the CQE written at absolute index `index` of a ring of
/// `2^log_size` entries: 1 on laps 0, 2, 4, … and 0 on the odd laps, so a
/// zeroed ring holds no valid entry. The host consumes entry `ci` when its
/// PHASE equals `cqe_phase(ci, log_size)`, reading PHASE first and the rest
/// after an acquire fence. (`log_size` is at most 31; a larger one counts
/// as a single lap.)
pub fn cqe_phase(index: u32, log_size: u8) -> bool {
    let lap = index.checked_shr(u32::from(log_size)).unwrap_or(0);
    lap & 1 == 0
}

/// The slot of absolute index `index` in a ring of `2^log_size` entries.
pub fn ring_slot(index: u32, log_size: u8) -> u32 {
    let mask = 1u32.checked_shl(u32::from(log_size)).map_or(u32::MAX, |s| s - 1);
    index & mask
}

/// The IOVA of the slot of absolute index `index` in a ring at `base` of
/// `2^log_size` slots of `slot_len` octets.
pub fn slot_addr(base: u64, index: u32, log_size: u8, slot_len: usize) -> u64 {
    base.wrapping_add(u64::from(ring_slot(index, log_size)) * slot_len as u64)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn phase_alternates_per_lap() {
        assert!(cqe_phase(0, 2));
        assert!(cqe_phase(3, 2));
        assert!(!cqe_phase(4, 2));
        assert!(cqe_phase(8, 2));
        // Across the 32-bit wrap the lap parity keeps alternating.
        assert!(!cqe_phase(u32::MAX, 4));
        assert!(cqe_phase(u32::MAX.wrapping_add(1), 4));
    }

    #[test]
    fn ring_addressing() {
        assert_eq!(ring_slot(0x1_0005, 4), 5);
        assert_eq!(slot_addr(0x1000, 17, 4, SQ_WQE_SLOT_LEN), 0x1080);
        assert_eq!(ring_slot(u32::MAX, 31), 0x7FFF_FFFF);
    }
}
