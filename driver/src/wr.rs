//! Work requests as the user writes them, and the WQEs they become.
use rnic_proto::host::{RqWqe, SqOpcode, SqWqe};

/// A local buffer: `length` octets at tagged offset `addr` of the memory region named by
/// `lkey` (see [`crate::MemoryRegion::sge`]).
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
}

impl WorkRequest {
    /// The user's identifier.
    pub fn wr_id(&self) -> u64 {
        match *self {
            WorkRequest::Send { wr_id, .. } | WorkRequest::Write { wr_id, .. } | WorkRequest::Read { wr_id, .. } => {
                wr_id
            }
        }
    }

    /// The SQ WQE this request is posted as.
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
        };
        let wqe = SqWqe::new(op, wr_id).local(local.lkey, local.addr, local.length).remote(remote.stag, remote.to);
        if signaled {
            wqe
        } else {
            wqe.unsignaled()
        }
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
    /// The RQ WQE this request is posted as.
    pub fn wqe(&self) -> RqWqe {
        RqWqe::new(self.wr_id, self.local.lkey, self.local.addr, self.local.length)
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
