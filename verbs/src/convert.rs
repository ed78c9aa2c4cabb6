//! Work requests and completions between the verbs structures and the driver's.
//!
//! What verbs can say and the RNIC cannot is EINVAL (or EOPNOTSUPP) at post time, never a
//! silently different operation:
//! * up to [`MAX_SGE`] SGEs per request, and up to [`MAX_INLINE`] octets inline; a list
//!   or inline data goes through the QP's staging region ([`crate::staging`]);
//! * a Send with Immediate carries no payload: RFC 7306 Immediate Data is a message of its
//!   own, so its 32-bit immediate goes alone (a Write with Immediate is the way to move
//!   data with one);
//! * an atomic names one 8-octet buffer, never a list or inline data.
//!
//! The 32-bit immediate (`imm_data`, in network order as the program stored it) is the
//! first four octets of the eight RFC 7306 carries, the rest zero; the receiver reads it
//! back from there.
use libc::c_int;
use rnic_driver::{Completion, CqeOpcode, CqeStatus, RemoteBuf, Sge, WorkRequest};

use crate::staging::{MAX_INLINE, MAX_SGE};
use crate::sys;

/// Octets of RFC 7306 Immediate Data.
const IMM_LEN: usize = 8;

/// The 8 octets of Immediate Data that carry a verbs immediate.
pub(crate) fn imm_octets(imm_data: u32) -> [u8; IMM_LEN] {
    let mut data = [0u8; IMM_LEN];
    data[..4].copy_from_slice(&imm_data.to_ne_bytes());
    data
}

/// The verbs immediate from received Immediate Data.
pub(crate) fn imm_data(octets: [u8; IMM_LEN]) -> u32 {
    u32::from_ne_bytes([octets[0], octets[1], octets[2], octets[3]])
}

/// The SGEs of a request, up to [`MAX_SGE`].
///
/// # Safety
///
/// `sg_list` must point to `num_sge` readable SGEs.
pub(crate) unsafe fn sges(sg_list: *const sys::ibv_sge, num_sge: c_int) -> Result<Vec<Sge>, c_int> {
    let n = u32::try_from(num_sge).ok().filter(|&n| n <= MAX_SGE).ok_or(libc::EINVAL)?;
    if n > 0 && sg_list.is_null() {
        return Err(libc::EINVAL);
    }
    Ok((0..n as usize)
        .map(|i| {
            // SAFETY: `i < num_sge` SGEs there (the caller's promise); read unaligned as C
            // may pack them.
            let s = unsafe { sg_list.add(i).read_unaligned() };
            Sge { lkey: s.lkey, addr: s.addr, length: s.length }
        })
        .collect())
}

/// Where a request's local octets are, as verbs gave them.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) enum Local {
    /// None or one buffer: the device is given it as it is.
    Direct,
    /// A list the payload is gathered from at post.
    Gather(Vec<Sge>),
    /// The payload itself (inline data), copied at post.
    Inline(Vec<u8>),
    /// A list what arrives is scattered into at completion.
    Scatter(Vec<Sge>),
}

impl Local {
    /// A list of `sges` as the device takes it: the one buffer, or (for more) a stand-in of
    /// their total length that the staging slot replaces, and how it is staged.
    fn of(sges: Vec<Sge>, written: bool) -> Result<(Sge, Local), c_int> {
        Ok(match sges.as_slice() {
            [] => (Sge { lkey: 0, addr: 0, length: 0 }, Local::Direct),
            [one] => (*one, Local::Direct),
            _ => {
                let length = crate::staging::total(&sges)?;
                let stand_in = Sge { lkey: 0, addr: 0, length };
                (stand_in, if written { Local::Scatter(sges) } else { Local::Gather(sges) })
            }
        })
    }
}

/// The local buffer of a receive, and how it is staged.
///
/// # Safety
///
/// `sg_list` must point to `num_sge` readable SGEs.
pub(crate) unsafe fn recv_local(sg_list: *const sys::ibv_sge, num_sge: c_int) -> Result<(Sge, Local), c_int> {
    // SAFETY: passed on from the caller.
    Local::of(unsafe { sges(sg_list, num_sge)? }, true)
}

/// The octets of an inline payload, read from the program's memory.
///
/// # Safety
///
/// Each SGE's `addr` must point to `length` readable octets (verbs' contract for inline
/// data: addresses, no lkey).
unsafe fn inline_octets(sges: &[Sge]) -> Result<Vec<u8>, c_int> {
    let total = crate::staging::total(sges)?;
    if total > MAX_INLINE {
        return Err(libc::EINVAL);
    }
    let mut octets = Vec::with_capacity(total as usize);
    for s in sges.iter().filter(|s| s.length > 0) {
        // SAFETY: the caller's promise; copied out, no reference kept.
        octets
            .extend_from_slice(unsafe { std::slice::from_raw_parts(s.addr as usize as *const u8, s.length as usize) });
    }
    Ok(octets)
}

/// A verbs send request as the driver's, the opcode its completion reports, and how its
/// local octets are staged.
///
/// # Safety
///
/// `wr.sg_list` must point to `wr.num_sge` readable SGEs, and for inline data each of
/// them to `length` readable octets.
pub(crate) unsafe fn send_wr(
    wr: &sys::ibv_send_wr,
    sig_all: bool,
) -> Result<(WorkRequest, sys::ibv_wc_opcode, Local), c_int> {
    // SAFETY: passed on from the caller.
    let list = unsafe { sges(wr.sg_list, wr.num_sge)? };
    let flags = wr.send_flags;
    let carries_payload = matches!(
        wr.opcode,
        sys::IBV_WR_SEND | sys::IBV_WR_SEND_WITH_INV | sys::IBV_WR_RDMA_WRITE | sys::IBV_WR_RDMA_WRITE_WITH_IMM
    );
    let is_atomic = matches!(wr.opcode, sys::IBV_WR_ATOMIC_FETCH_AND_ADD | sys::IBV_WR_ATOMIC_CMP_AND_SWP);
    let (local, staged) = if flags & sys::IBV_SEND_INLINE != 0 {
        if !carries_payload {
            return Err(libc::EINVAL);
        }
        // SAFETY: passed on from the caller.
        let octets = unsafe { inline_octets(&list)? };
        let length = octets.len() as u32;
        let staged = if octets.is_empty() { Local::Direct } else { Local::Inline(octets) };
        (Sge { lkey: 0, addr: 0, length }, staged)
    } else if is_atomic && list.len() > 1 {
        return Err(libc::EINVAL);
    } else {
        Local::of(list, wr.opcode == sys::IBV_WR_RDMA_READ)?
    };
    let signaled = sig_all || flags & sys::IBV_SEND_SIGNALED != 0;
    let solicited = flags & sys::IBV_SEND_SOLICITED != 0;
    let wr_id = wr.wr_id;
    // SAFETY: the unions are plain integers; which member is meant follows the opcode,
    // and every bit pattern is a valid integer.
    let (rdma, atomic, imm, invalidate) =
        unsafe { (wr.wr.rdma, wr.wr.atomic, wr.__bindgen_anon_1.imm_data, wr.__bindgen_anon_1.invalidate_rkey) };
    let remote = RemoteBuf { stag: rdma.rkey, to: rdma.remote_addr };
    let atomic_remote = RemoteBuf { stag: atomic.rkey, to: atomic.remote_addr };
    let (req, opcode) = match wr.opcode {
        sys::IBV_WR_SEND => {
            (WorkRequest::Send { wr_id, local, solicited, invalidate: None, signaled }, sys::IBV_WC_SEND)
        }
        sys::IBV_WR_SEND_WITH_INV => {
            (WorkRequest::Send { wr_id, local, solicited, invalidate: Some(invalidate), signaled }, sys::IBV_WC_SEND)
        }
        sys::IBV_WR_SEND_WITH_IMM if local.length == 0 => {
            (WorkRequest::Immediate { wr_id, data: imm_octets(imm), solicited, signaled }, sys::IBV_WC_SEND)
        }
        sys::IBV_WR_RDMA_WRITE => (WorkRequest::Write { wr_id, local, remote, signaled }, sys::IBV_WC_RDMA_WRITE),
        sys::IBV_WR_RDMA_WRITE_WITH_IMM => (
            WorkRequest::WriteWithImmediate { wr_id, local, remote, data: imm_octets(imm), solicited, signaled },
            sys::IBV_WC_RDMA_WRITE,
        ),
        sys::IBV_WR_RDMA_READ => (WorkRequest::Read { wr_id, local, remote, signaled }, sys::IBV_WC_RDMA_READ),
        // The standard verbs atomics are RFC 7306's with whole-word masks: a plain add
        // (no field ends), a compare and swap of all 64 bits.
        sys::IBV_WR_ATOMIC_FETCH_AND_ADD => (
            WorkRequest::FetchAdd {
                wr_id,
                local,
                remote: atomic_remote,
                add: atomic.compare_add,
                add_mask: 0,
                signaled,
            },
            sys::IBV_WC_FETCH_ADD,
        ),
        sys::IBV_WR_ATOMIC_CMP_AND_SWP => (
            WorkRequest::CmpSwap {
                wr_id,
                local,
                remote: atomic_remote,
                compare: atomic.compare_add,
                compare_mask: u64::MAX,
                swap: atomic.swap,
                swap_mask: u64::MAX,
                signaled,
            },
            sys::IBV_WC_COMP_SWAP,
        ),
        _ => return Err(libc::EINVAL),
    };
    Ok((req, opcode, staged))
}

/// The completion status verbs names for the device's.
pub(crate) fn status(s: CqeStatus) -> sys::ibv_wc_status {
    match s {
        CqeStatus::Success => sys::IBV_WC_SUCCESS,
        CqeStatus::LocalLength => sys::IBV_WC_LOC_LEN_ERR,
        CqeStatus::LocalProtection => sys::IBV_WC_LOC_PROT_ERR,
        CqeStatus::RemoteAccess => sys::IBV_WC_REM_ACCESS_ERR,
        CqeStatus::RemoteOperation => sys::IBV_WC_REM_OP_ERR,
        CqeStatus::Flushed => sys::IBV_WC_WR_FLUSH_ERR,
        CqeStatus::BadOpcode => sys::IBV_WC_LOC_QP_OP_ERR,
        CqeStatus::Terminated => sys::IBV_WC_REM_ABORT_ERR,
    }
}

/// The opcode of an SQ completion when the request is not on record: by the device's
/// class of it.
pub(crate) fn sq_opcode(op: CqeOpcode) -> sys::ibv_wc_opcode {
    match op {
        CqeOpcode::RdmaWrite => sys::IBV_WC_RDMA_WRITE,
        CqeOpcode::RdmaRead => sys::IBV_WC_RDMA_READ,
        CqeOpcode::Atomic => sys::IBV_WC_FETCH_ADD,
        CqeOpcode::Send | CqeOpcode::Recv | CqeOpcode::RecvImm => sys::IBV_WC_SEND,
    }
}

/// A work completion as verbs reports it. `opcode` is the SQ opcode from the request's
/// record (ignored for receives); `src_qp` the peer QP.
pub(crate) fn wc(c: &Completion, opcode: sys::ibv_wc_opcode, src_qp: u32) -> sys::ibv_wc {
    // SAFETY: `ibv_wc` is plain integers, for which zero is valid.
    let mut wc: sys::ibv_wc = unsafe { std::mem::zeroed() };
    wc.wr_id = c.wr_id;
    wc.status = status(c.status);
    wc.vendor_err = c.status.code().into();
    wc.byte_len = c.byte_len;
    wc.qp_num = c.qpn;
    wc.src_qp = src_qp;
    wc.opcode = match c.opcode {
        CqeOpcode::Recv => sys::IBV_WC_RECV,
        // Immediate Data does not say whether a Write came before it; the common use is
        // the Write with Immediate.
        CqeOpcode::RecvImm => sys::IBV_WC_RECV_RDMA_WITH_IMM,
        _ => opcode,
    };
    if let Some(octets) = c.imm {
        wc.wc_flags |= sys::IBV_WC_WITH_IMM;
        wc.__bindgen_anon_1.imm_data = imm_data(octets);
    } else if let Some(stag) = c.invalidated {
        wc.wc_flags |= sys::IBV_WC_WITH_INV;
        wc.__bindgen_anon_1.invalidated_rkey = stag;
    }
    wc
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_immediate_rides_in_the_first_four_octets_as_stored() {
        let imm = u32::from_be(0x1234_5678);
        let octets = imm_octets(imm);
        assert_eq!(octets, [0x12, 0x34, 0x56, 0x78, 0, 0, 0, 0]);
        assert_eq!(imm_data(octets), imm);
    }

    fn send(opcode: sys::ibv_wr_opcode, sge: &mut sys::ibv_sge, num_sge: c_int) -> sys::ibv_send_wr {
        // SAFETY: plain data, zero is valid.
        let mut wr: sys::ibv_send_wr = unsafe { std::mem::zeroed() };
        wr.wr_id = 7;
        wr.opcode = opcode;
        wr.sg_list = sge;
        wr.num_sge = num_sge;
        wr
    }

    #[test]
    fn verbs_atomics_are_rfc_7306_atomics_with_whole_word_masks() {
        let mut s = sys::ibv_sge { addr: 0x1000, length: 8, lkey: 0x105 };
        let mut wr = send(sys::IBV_WR_ATOMIC_CMP_AND_SWP, &mut s, 1);
        wr.wr.atomic =
            sys::ibv_send_wr__bindgen_ty_2__bindgen_ty_2 { remote_addr: 0x2000, compare_add: 5, swap: 9, rkey: 0x207 };
        // SAFETY: the SGE is there.
        let (req, op, local) = unsafe { send_wr(&wr, true) }.expect("valid");
        assert_eq!((op, local), (sys::IBV_WC_COMP_SWAP, Local::Direct));
        assert_eq!(
            req,
            WorkRequest::CmpSwap {
                wr_id: 7,
                local: Sge { lkey: 0x105, addr: 0x1000, length: 8 },
                remote: RemoteBuf { stag: 0x207, to: 0x2000 },
                compare: 5,
                compare_mask: u64::MAX,
                swap: 9,
                swap_mask: u64::MAX,
                signaled: true,
            }
        );
        wr.opcode = sys::IBV_WR_ATOMIC_FETCH_AND_ADD;
        // SAFETY: as above.
        let (req, _, _) = unsafe { send_wr(&wr, false) }.expect("valid");
        assert!(matches!(req, WorkRequest::FetchAdd { add: 5, add_mask: 0, signaled: false, .. }));
    }

    #[test]
    fn lists_are_gathered_or_scattered_and_inline_octets_copied_at_post() {
        let mut three = [
            sys::ibv_sge { addr: 0x1000, length: 5, lkey: 0x105 },
            sys::ibv_sge { addr: 0x3000, length: 0, lkey: 0x106 },
            sys::ibv_sge { addr: 0x2000, length: 7, lkey: 0x107 },
        ];
        let list: Vec<Sge> = three.iter().map(|s| Sge { lkey: s.lkey, addr: s.addr, length: s.length }).collect();
        let stand_in = Sge { lkey: 0, addr: 0, length: 12 };
        let mut wr = send(sys::IBV_WR_SEND, &mut three[0], 3);
        // SAFETY: three SGEs there.
        let (req, _, local) = unsafe { send_wr(&wr, false) }.expect("valid");
        assert_eq!(local, Local::Gather(list.clone()));
        assert!(matches!(req, WorkRequest::Send { local, .. } if local == stand_in));
        wr.opcode = sys::IBV_WR_RDMA_READ;
        // SAFETY: as above.
        let (req, _, local) = unsafe { send_wr(&wr, false) }.expect("valid");
        assert_eq!(local, Local::Scatter(list));
        assert!(matches!(req, WorkRequest::Read { local, .. } if local == stand_in));

        let payload = *b"inline octets";
        let mut one = sys::ibv_sge { addr: payload.as_ptr() as u64, length: payload.len() as u32, lkey: 0 };
        let mut wr = send(sys::IBV_WR_RDMA_WRITE, &mut one, 1);
        wr.send_flags = sys::IBV_SEND_INLINE;
        // SAFETY: the SGE names `payload`, readable.
        let (_, _, local) = unsafe { send_wr(&wr, false) }.expect("valid");
        assert_eq!(local, Local::Inline(payload.to_vec()));
    }

    #[test]
    fn what_the_rnic_cannot_do_is_einval() {
        let big = [0u8; MAX_INLINE as usize + 1];
        let mut sges = [sys::ibv_sge { addr: big.as_ptr() as u64, length: 8, lkey: 0x105 }; MAX_SGE as usize + 1];
        let cases: [(sys::ibv_wr_opcode, c_int, u32, u32); 7] = [
            (sys::IBV_WR_SEND, MAX_SGE as c_int + 1, 0, 8),      // too many SGEs
            (sys::IBV_WR_ATOMIC_FETCH_AND_ADD, 2, 0, 8),         // an atomic's list
            (sys::IBV_WR_RDMA_READ, 1, sys::IBV_SEND_INLINE, 8), // an inline sink
            (sys::IBV_WR_SEND, 1, sys::IBV_SEND_INLINE, MAX_INLINE + 1), // too much inline
            (sys::IBV_WR_SEND_WITH_IMM, 1, 0, 8),                // a payload with the immediate
            (sys::IBV_WR_LOCAL_INV, 0, 0, 8),                    // no local invalidate
            (sys::IBV_WR_SEND, -1, 0, 8),                        // a negative count
        ];
        for (opcode, num_sge, flags, length) in cases {
            sges[0].length = length;
            let mut wr = send(opcode, &mut sges[0], num_sge);
            wr.send_flags = flags;
            // SAFETY: every count names SGEs that are there (a count past them is refused
            // before any is read), and the inline one names `big`.
            assert_eq!(unsafe { send_wr(&wr, false) }.err(), Some(libc::EINVAL), "opcode {opcode}");
        }
    }
}
