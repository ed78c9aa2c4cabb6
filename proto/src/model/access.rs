//! Memory region checks: local keys and remote STags.
//!
//! One function, [`check_access`], runs the checks every access goes
//! through, in a fixed order:
//!
//! 1. the STag names an MR that exists, is valid and has the same key;
//! 2. the MR belongs to the QP's protection domain;
//! 3. the MR grants the right the access needs;
//! 4. `TO + length` does not run past 2^64;
//! 5. `[TO, TO + length)` lies inside the region.
//!
//! Rights come before bounds so that a peer without rights learns nothing
//! about a region's extent. The result maps to a Terminate code by the
//! layer that found it: DDP for tagged segments, RDMAP for the source of a
//! Read Request and the target of an Atomic Request.

use crate::host::context::{stag_index, stag_key, MrContext};
use crate::terminate::TermCode;

/// The right an access needs besides a valid, same-PD MR.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Right {
    /// Reading local memory (the source of a Send or Write): always granted.
    LocalRead,
    /// Writing local memory (receive buffers, Read sinks).
    LocalWrite,
    /// The peer reads (RDMA Read source).
    RemoteRead,
    /// The peer writes (RDMA Write target).
    RemoteWrite,
    /// The peer runs an atomic on it (RFC 7306 target).
    RemoteAtomic,
}

/// Why an access was refused, in check order.
#[derive(Clone, Copy, Debug, PartialEq, Eq, thiserror::Error)]
pub enum AccessError {
    /// No such MR, not valid, or another key.
    #[error("invalid STag")]
    InvalidStag,
    /// The MR is in another protection domain.
    #[error("STag of another protection domain")]
    OtherPd,
    /// The MR does not grant the right.
    #[error("access right missing")]
    NoRight,
    /// `TO + length` runs past 2^64.
    #[error("TO wrap")]
    ToWrap,
    /// The range leaves the region.
    #[error("base or bounds violation")]
    Bounds,
}

impl AccessError {
    /// The Terminate for a tagged DDP segment (RDMA Write, Read Response):
    /// RFC 5041 §7.2, CHECKLIST DDP-12. DDP has no access-rights code; a
    /// missing right is reported as an invalid STag (the CHECKLIST
    /// recommendation, as Linux siw does).
    pub fn ddp_term_code(self) -> TermCode {
        match self {
            AccessError::InvalidStag | AccessError::NoRight => TermCode::DDP_TAGGED_INVALID_STAG,
            AccessError::OtherPd => TermCode::DDP_TAGGED_STAG_NOT_ASSOCIATED,
            AccessError::ToWrap => TermCode::DDP_TAGGED_TO_WRAP,
            AccessError::Bounds => TermCode::DDP_TAGGED_BASE_BOUNDS,
        }
    }

    /// The Terminate for the source of an RDMA Read Request (RFC 5040 §7.2
    /// items 4a–4e, CHECKLIST RDMAP-08) and for the target of an Atomic
    /// Request, for which RFC 7306 names no codes (CHECKLIST ATOM-08 Rec.).
    pub fn rdma_term_code(self) -> TermCode {
        match self {
            AccessError::InvalidStag => TermCode::RDMA_PROT_INVALID_STAG,
            AccessError::OtherPd => TermCode::RDMA_PROT_STAG_NOT_ASSOCIATED,
            AccessError::NoRight => TermCode::RDMA_PROT_ACCESS_RIGHTS,
            AccessError::ToWrap => TermCode::RDMA_PROT_TO_WRAP,
            AccessError::Bounds => TermCode::RDMA_PROT_BASE_BOUNDS,
        }
    }
}

/// The MR an STag names, if it exists, is valid and has the STag's key.
pub fn lookup(mrs: &[MrContext], stag: u32) -> Option<&MrContext> {
    mrs.get(stag_index(stag) as usize).filter(|mr| mr.valid && mr.key == stag_key(stag))
}

/// Checks an access of `len` octets at `to` through `stag` for a QP of
/// protection domain `pd`, and returns the IOVA of its first octet.
pub fn check_access(
    mrs: &[MrContext],
    pd: u16,
    stag: u32,
    to: u64,
    len: u64,
    right: Right,
) -> Result<u64, AccessError> {
    let mr = lookup(mrs, stag).ok_or(AccessError::InvalidStag)?;
    if mr.pd != pd {
        return Err(AccessError::OtherPd);
    }
    let granted = match right {
        Right::LocalRead => true,
        Right::LocalWrite => mr.access.local_write,
        Right::RemoteRead => mr.access.remote_read,
        Right::RemoteWrite => mr.access.remote_write,
        Right::RemoteAtomic => mr.access.remote_atomic,
    };
    if !granted {
        return Err(AccessError::NoRight);
    }
    if u128::from(to) + u128::from(len) > 1u128 << 64 {
        return Err(AccessError::ToWrap);
    }
    if !mr.contains(to, len) {
        return Err(AccessError::Bounds);
    }
    Ok(mr.iova_of(to))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::host::context::{stag, MrAccess};

    fn table() -> Vec<MrContext> {
        vec![
            MrContext::default(),
            MrContext {
                key: 0x42,
                access: MrAccess { remote_read: true, ..MrAccess::default() },
                valid: true,
                pd: 7,
                va: 0x1000,
                length: 0x100,
                iova: 0x9000,
            },
        ]
    }

    #[test]
    fn checks_run_in_order() {
        let mrs = table();
        let s = stag(1, 0x42);
        assert_eq!(check_access(&mrs, 7, s, 0x1010, 16, Right::RemoteRead), Ok(0x9010));
        assert_eq!(check_access(&mrs, 7, stag(1, 0x43), 0, 1, Right::LocalRead), Err(AccessError::InvalidStag));
        assert_eq!(check_access(&mrs, 7, stag(0, 0), 0, 1, Right::LocalRead), Err(AccessError::InvalidStag));
        assert_eq!(check_access(&mrs, 7, stag(9, 0x42), 0, 1, Right::LocalRead), Err(AccessError::InvalidStag));
        assert_eq!(check_access(&mrs, 8, s, 0x1010, 1, Right::RemoteRead), Err(AccessError::OtherPd));
        assert_eq!(check_access(&mrs, 7, s, 0x1010, 1, Right::RemoteWrite), Err(AccessError::NoRight));
        assert_eq!(check_access(&mrs, 7, s, u64::MAX - 7, 16, Right::RemoteRead), Err(AccessError::ToWrap));
        assert_eq!(check_access(&mrs, 7, s, 0x10F8, 16, Right::RemoteRead), Err(AccessError::Bounds));
        assert_eq!(check_access(&mrs, 7, s, 0x0FFF, 1, Right::RemoteRead), Err(AccessError::Bounds));
    }
}
