//! Work requests as the user writes them, and the WQEs they become.
use rnic_proto::host::{RqWqe, SqOpcode, SqWqe};

use crate::Features;

/// Octets of an atomic's target and of the local buffer that receives its original value.
pub const ATOMIC_LEN: u32 = 8;

/// A local buffer: `length` octets at tagged offset `addr` of the memory region named by
/// `lkey` (see [`crate::MemoryRegion::sge`]).
///
/// The fields are public and an `Sge` is a plain value that outlives its region, so
/// posting checks it against the device's live regions: an lkey no live region has, a
/// region of another PD than the QP's, a buffer the device writes without LOCAL_WRITE and
/// a range outside the region are errors and nothing is posted. A zero-length buffer is
/// not checked (the device touches no memory for it), so a zero-length Send needs no MR.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Sge {
    /// The local MR's STag.
    pub lkey: u32,
    /// Tagged offset of the first octet.
    pub addr: u64,
    /// Octets.
    pub length: u32,
}

/// A buffer at the peer: the STag and tagged offset it advertised.
///
/// Only the peer knows its regions, so the driver does not check these: a bad one is
/// refused by the peer with a Terminate ([`crate::QueuePair::error`]).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct RemoteBuf {
    /// The peer's STag.
    pub stag: u32,
    /// Tagged offset in it.
    pub to: u64,
}

/// An SQ work request.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum WorkRequest {
    /// Send `local` to the peer's next receive buffer.
    Send {
        /// Returned in the completion.
        wr_id: u64,
        /// The payload.
        local: Sge,
        /// Ask for a solicited event at the receiver.
        solicited: bool,
        /// Invalidate this STag at the peer (Send with Invalidate).
        invalidate: Option<u32>,
        /// Complete on success too (errors always complete).
        signaled: bool,
    },
    /// RDMA Write of `local` to `remote`.
    Write {
        /// Returned in the completion.
        wr_id: u64,
        /// The source.
        local: Sge,
        /// The target at the peer.
        remote: RemoteBuf,
        /// Complete on success too.
        signaled: bool,
    },
    /// RDMA Read of `local.length` octets from `remote` into `local` (whose MR needs
    /// local write access).
    Read {
        /// Returned in the completion.
        wr_id: u64,
        /// The sink.
        local: Sge,
        /// The source at the peer.
        remote: RemoteBuf,
        /// Complete on success too.
        signaled: bool,
    },
    /// RFC 7306 masked FetchAdd on the 64-bit word at `remote` (8-aligned, REMOTE_ATOMIC):
    /// each set bit of `add_mask` ends a field whose carry is dropped (0: a plain add). The
    /// word's original value is written little-endian to the first 8 octets of `local`
    /// (LOCAL_WRITE), and the request completes once it is there.
    FetchAdd {
        /// Returned in the completion.
        wr_id: u64,
        /// Receives the original value.
        local: Sge,
        /// The target word at the peer.
        remote: RemoteBuf,
        /// Add Data.
        add: u64,
        /// Add Mask.
        add_mask: u64,
        /// Complete on success too.
        signaled: bool,
    },
    /// RFC 7306 masked CmpSwap: if `(original ^ compare) & compare_mask` is 0, the word
    /// becomes `(original & !swap_mask) | (swap & swap_mask)`. The original value comes back
    /// as for [`WorkRequest::FetchAdd`].
    CmpSwap {
        /// Returned in the completion.
        wr_id: u64,
        /// Receives the original value.
        local: Sge,
        /// The target word at the peer.
        remote: RemoteBuf,
        /// Compare Data.
        compare: u64,
        /// Compare Mask.
        compare_mask: u64,
        /// Swap Data.
        swap: u64,
        /// Swap Mask.
        swap_mask: u64,
        /// Complete on success too.
        signaled: bool,
    },
    /// Immediate Data (RFC 7306 §6): eight octets that consume the peer's next receive and
    /// arrive in its completion, with a solicited event if asked.
    Immediate {
        /// Returned in the completion.
        wr_id: u64,
        /// The octets, first on the wire first.
        data: [u8; 8],
        /// Immediate Data with Solicited Event.
        solicited: bool,
        /// Complete on success too.
        signaled: bool,
    },
    /// An RDMA Write of `local` to `remote` followed by Immediate Data: the peer's receive
    /// completes only once the Write is placed (RFC 7306 §7). Two WQEs; the Write's
    /// completion is not signaled, the Immediate Data's as asked.
    WriteWithImmediate {
        /// Returned in the completions.
        wr_id: u64,
        /// The source.
        local: Sge,
        /// The target at the peer.
        remote: RemoteBuf,
        /// The immediate octets.
        data: [u8; 8],
        /// Ask for a solicited event at the receiver.
        solicited: bool,
        /// Complete on success too.
        signaled: bool,
    },
}

impl WorkRequest {
    /// Its local buffer, to be set after the request is built (none for Immediate Data,
    /// whose octets are in the WQE).
    pub fn local_mut(&mut self) -> Option<&mut Sge> {
        match self {
            WorkRequest::Send { local, .. }
            | WorkRequest::Write { local, .. }
            | WorkRequest::Read { local, .. }
            | WorkRequest::FetchAdd { local, .. }
            | WorkRequest::CmpSwap { local, .. }
            | WorkRequest::WriteWithImmediate { local, .. } => Some(local),
            WorkRequest::Immediate { .. } => None,
        }
    }

    /// The user's identifier.
    pub fn wr_id(&self) -> u64 {
        match *self {
            WorkRequest::Send { wr_id, .. }
            | WorkRequest::Write { wr_id, .. }
            | WorkRequest::Read { wr_id, .. }
            | WorkRequest::FetchAdd { wr_id, .. }
            | WorkRequest::CmpSwap { wr_id, .. }
            | WorkRequest::Immediate { wr_id, .. }
            | WorkRequest::WriteWithImmediate { wr_id, .. } => wr_id,
        }
    }

    /// Whether it completes on success too (errors always complete).
    pub fn signaled(&self) -> bool {
        match *self {
            WorkRequest::Send { signaled, .. }
            | WorkRequest::Write { signaled, .. }
            | WorkRequest::Read { signaled, .. }
            | WorkRequest::FetchAdd { signaled, .. }
            | WorkRequest::CmpSwap { signaled, .. }
            | WorkRequest::Immediate { signaled, .. }
            | WorkRequest::WriteWithImmediate { signaled, .. } => signaled,
        }
    }

    /// Whether it is a Read or an atomic, which waits for a response and needs ORD.
    pub(crate) fn needs_ord(&self) -> bool {
        matches!(self, WorkRequest::Read { .. } | WorkRequest::FetchAdd { .. } | WorkRequest::CmpSwap { .. })
    }

    /// The feature it needs that `features` lacks, by name (the device would complete it
    /// with BAD_OPCODE).
    pub(crate) fn missing_feature(&self, features: &Features) -> Option<&'static str> {
        match self {
            WorkRequest::FetchAdd { .. } | WorkRequest::CmpSwap { .. } if !features.atomics => Some("RFC 7306 atomics"),
            WorkRequest::Immediate { .. } | WorkRequest::WriteWithImmediate { .. } if !features.immediate => {
                Some("RFC 7306 Immediate Data")
            }
            _ => None,
        }
    }

    /// The local memory the device touches for it, as the device checks it
    /// (`docs/DESCRIPTORS.md`): none for Immediate Data (its octets are in the WQE) or a
    /// zero length, and always 8 written octets for an atomic, whatever `local.length` says.
    pub(crate) fn local_buffer(&self) -> Option<LocalBuffer> {
        let (local, write) = match *self {
            WorkRequest::Immediate { .. } => return None,
            WorkRequest::FetchAdd { local, .. } | WorkRequest::CmpSwap { local, .. } => {
                return Some(LocalBuffer { lkey: local.lkey, addr: local.addr, len: ATOMIC_LEN.into(), write: true });
            }
            WorkRequest::Read { local, .. } => (local, true),
            WorkRequest::Send { local, .. }
            | WorkRequest::Write { local, .. }
            | WorkRequest::WriteWithImmediate { local, .. } => (local, false),
        };
        LocalBuffer::of(local, write)
    }

    /// SQ slots the request takes.
    pub fn wqe_count(&self) -> usize {
        match self {
            WorkRequest::WriteWithImmediate { .. } => 2,
            _ => 1,
        }
    }

    /// The SQ WQEs this request is posted as, in order.
    pub fn wqes(&self) -> impl Iterator<Item = SqWqe> {
        let (first, second) = match *self {
            WorkRequest::WriteWithImmediate { wr_id, local, remote, data, solicited, signaled } => {
                let write = WorkRequest::Write { wr_id, local, remote, signaled: false };
                let imm = WorkRequest::Immediate { wr_id, data, solicited, signaled };
                (write.wqe(), Some(imm.wqe()))
            }
            _ => (self.wqe(), None),
        };
        std::iter::once(first).chain(second)
    }

    /// The SQ WQE of a one-WQE request (the first of a [`WorkRequest::WriteWithImmediate`]).
    pub fn wqe(&self) -> SqWqe {
        let (op, wr_id, local, remote, signaled) = match *self {
            WorkRequest::Send { wr_id, local, solicited, invalidate, signaled } => {
                let op = match (solicited, invalidate.is_some()) {
                    (false, false) => SqOpcode::Send,
                    (false, true) => SqOpcode::SendInv,
                    (true, false) => SqOpcode::SendSe,
                    (true, true) => SqOpcode::SendSeInv,
                };
                // Send with Invalidate carries the STag in `remote_stag`, with no TO.
                let remote = RemoteBuf { stag: invalidate.unwrap_or(0), to: 0 };
                (op, wr_id, local, remote, signaled)
            }
            WorkRequest::Write { wr_id, local, remote, signaled } => {
                (SqOpcode::RdmaWrite, wr_id, local, remote, signaled)
            }
            WorkRequest::Read { wr_id, local, remote, signaled } => {
                (SqOpcode::RdmaRead, wr_id, local, remote, signaled)
            }
            WorkRequest::FetchAdd { wr_id, local, remote, add, add_mask, signaled } => {
                let wqe = SqWqe::fetch_add(wr_id, add, add_mask);
                return finish(wqe.local(local.lkey, local.addr, ATOMIC_LEN).remote(remote.stag, remote.to), signaled);
            }
            WorkRequest::CmpSwap { wr_id, local, remote, compare, compare_mask, swap, swap_mask, signaled } => {
                let wqe = SqWqe::cmp_swap(wr_id, compare, compare_mask, swap, swap_mask);
                return finish(wqe.local(local.lkey, local.addr, ATOMIC_LEN).remote(remote.stag, remote.to), signaled);
            }
            WorkRequest::Immediate { wr_id, data, solicited, signaled } => {
                return finish(SqWqe::immediate(wr_id, data, solicited), signaled);
            }
            WorkRequest::WriteWithImmediate { wr_id, local, remote, signaled: _, .. } => {
                return WorkRequest::Write { wr_id, local, remote, signaled: false }.wqe();
            }
        };
        let wqe = SqWqe::new(op, wr_id).local(local.lkey, local.addr, local.length).remote(remote.stag, remote.to);
        finish(wqe, signaled)
    }
}

fn finish(wqe: SqWqe, signaled: bool) -> SqWqe {
    if signaled {
        wqe
    } else {
        wqe.unsignaled()
    }
}

/// An RQ work request: one receive buffer.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct RecvRequest {
    /// Returned in the completion.
    pub wr_id: u64,
    /// The buffer (its MR needs local write access).
    pub local: Sge,
}

impl RecvRequest {
    /// The memory the device writes into, if any (not for a zero-length buffer).
    pub(crate) fn local_buffer(&self) -> Option<LocalBuffer> {
        LocalBuffer::of(self.local, true)
    }

    /// The RQ WQE this request is posted as.
    pub fn wqe(&self) -> RqWqe {
        RqWqe::new(self.wr_id, self.local.lkey, self.local.addr, self.local.length)
    }
}

/// Local memory posted work makes the device touch: `len` octets at `addr` of `lkey`'s
/// region, written by the device or only read.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct LocalBuffer {
    pub(crate) lkey: u32,
    pub(crate) addr: u64,
    pub(crate) len: u64,
    pub(crate) write: bool,
}

impl LocalBuffer {
    /// The buffer of `sge`; `None` when it is empty, which the device never checks.
    pub(crate) fn of(sge: Sge, write: bool) -> Option<LocalBuffer> {
        (sge.length > 0).then_some(LocalBuffer { lkey: sge.lkey, addr: sge.addr, len: sge.length.into(), write })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const LOCAL: Sge = Sge { lkey: 0x0000_0301, addr: 0x8000_1000, length: 300 };
    const REMOTE: RemoteBuf = RemoteBuf { stag: 0x0000_0702, to: 0xAB_0000 };

    #[test]
    fn send_variants_pick_their_opcode_and_carry_the_stag_to_invalidate() {
        let send = |solicited, invalidate| {
            WorkRequest::Send { wr_id: 9, local: LOCAL, solicited, invalidate, signaled: true }.wqe()
        };
        assert_eq!(send(false, None).op(), Some(SqOpcode::Send));
        assert_eq!(send(true, None).op(), Some(SqOpcode::SendSe));
        assert_eq!(send(false, Some(0x4201)).op(), Some(SqOpcode::SendInv));
        let se_inv = send(true, Some(0x4201));
        assert_eq!(se_inv.op(), Some(SqOpcode::SendSeInv));
        assert_eq!((se_inv.remote_stag, se_inv.remote_to), (0x4201, 0));
        assert_eq!((se_inv.lkey, se_inv.local_addr, se_inv.length, se_inv.wr_id), (0x301, 0x8000_1000, 300, 9));
        assert!(se_inv.signaled);
    }

    #[test]
    fn write_and_read_carry_both_buffers_and_the_signaled_flag() {
        let w = WorkRequest::Write { wr_id: 1, local: LOCAL, remote: REMOTE, signaled: false }.wqe();
        assert_eq!(
            w,
            SqWqe::new(SqOpcode::RdmaWrite, 1).local(0x301, 0x8000_1000, 300).remote(0x702, 0xAB_0000).unsignaled()
        );
        let r = WorkRequest::Read { wr_id: 2, local: LOCAL, remote: REMOTE, signaled: true }.wqe();
        assert_eq!(r, SqWqe::new(SqOpcode::RdmaRead, 2).local(0x301, 0x8000_1000, 300).remote(0x702, 0xAB_0000));
    }

    #[test]
    fn a_receive_is_one_buffer() {
        assert_eq!(RecvRequest { wr_id: 5, local: LOCAL }.wqe(), RqWqe::new(5, 0x301, 0x8000_1000, 300));
    }
}
