//! DDP segment headers (RFC 5041 §4).
//!
//! Octet 0 of every DDP header is the DDP control field
//! `T(1) | L(1) | Rsvd(4) | DV(2)`; octet 1 is reserved for the ULP (RDMAP
//! puts its control octet there). Then:
//!
//! * tagged (T=1, 14 octets): STag (32), TO (64) — §4.2;
//! * untagged (T=0, 18 octets): `RsvdULP[8:39]` (32, the RDMAP Invalidate
//!   STag), QN (32), MSN (32), MO (32) — §4.3.
//!
//! DDP does not interpret the ULP octets, so they are kept raw here; the
//! [`crate::rdmap`] module gives them meaning.

use crate::terminate::TermCode;

/// The only DDP version defined by RFC 5041 (DV = 01b).
pub const DDP_VERSION: u8 = 1;

/// T flag: bit 7 of the DDP control octet.
pub const T_FLAG: u8 = 0x80;
/// L flag: bit 6 of the DDP control octet.
pub const L_FLAG: u8 = 0x40;
/// DV field: the two low bits of the DDP control octet.
pub const DV_MASK: u8 = 0x03;

/// Errors found while reading a DDP header (RFC 5041 §7.2).
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum DdpError {
    /// Fewer octets than the header needs (14 when even T is unknown).
    #[error("DDP header truncated: need {needed} octets, got {got}")]
    Truncated {
        /// Octets the header needs.
        needed: usize,
        /// Octets available.
        got: usize,
    },
    /// DV is not 01b (CHECKLIST DDP-02).
    #[error("invalid DDP version {dv} in a {} segment", if *.tagged { "tagged" } else { "untagged" })]
    Version {
        /// The DV field as received.
        dv: u8,
        /// The T flag of the segment, which selects the Terminate code.
        tagged: bool,
    },
}

impl DdpError {
    /// The Terminate this error causes: `1/1/0x04` (tagged) or `1/2/0x06`
    /// (untagged) for a bad version. A truncated header has no code of its
    /// own in RFC 5041; it is reported as `0/2/0xFF` (Unspecified Error).
    pub fn term_code(&self) -> TermCode {
        match self {
            DdpError::Truncated { .. } => TermCode::RDMA_OP_UNSPECIFIED,
            DdpError::Version { tagged: true, .. } => TermCode::DDP_TAGGED_INVALID_VERSION,
            DdpError::Version { tagged: false, .. } => TermCode::DDP_UNTAGGED_INVALID_VERSION,
        }
    }
}

/// Tagged buffer DDP header, 14 octets (RFC 5041 §4.2, CHECKLIST DDP-04).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Default)]
pub struct TaggedHeader {
    /// L flag: last segment of the message.
    pub last: bool,
    /// RsvdULP octet: the RDMAP control octet for RDMAP.
    pub ulp_ctrl: u8,
    /// Steering Tag of the target buffer.
    pub stag: u32,
    /// Tagged Offset of this segment's first payload octet.
    pub to: u64,
}

impl TaggedHeader {
    /// Wire size.
    pub const LEN: usize = 14;

    /// The 14 wire octets (Rsvd zero, DV = 1).
    pub fn to_bytes(&self) -> [u8; Self::LEN] {
        let mut b = [0u8; Self::LEN];
        b[0] = ddp_ctrl(true, self.last);
        b[1] = self.ulp_ctrl;
        b[2..6].copy_from_slice(&self.stag.to_be_bytes());
        b[6..14].copy_from_slice(&self.to.to_be_bytes());
        b
    }

    /// Reads the fields of a 14-octet header without checking T or DV.
    pub fn from_bytes(b: &[u8; Self::LEN]) -> Self {
        TaggedHeader { last: b[0] & L_FLAG != 0, ulp_ctrl: b[1], stag: be32(&b[2..6]), to: be64(&b[6..14]) }
    }
}

/// Untagged buffer DDP header, 18 octets (RFC 5041 §4.3, CHECKLIST DDP-05).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Default)]
pub struct UntaggedHeader {
    /// L flag: last segment of the message.
    pub last: bool,
    /// `RsvdULP[0:7]`: the RDMAP control octet for RDMAP.
    pub ulp_ctrl: u8,
    /// `RsvdULP[8:39]`: the Invalidate STag for RDMAP (zero unless Send with Invalidate).
    pub inv_stag: u32,
    /// Queue Number.
    pub qn: u32,
    /// Message Sequence Number.
    pub msn: u32,
    /// Message Offset of this segment's first payload octet.
    pub mo: u32,
}

impl UntaggedHeader {
    /// Wire size.
    pub const LEN: usize = 18;

    /// The 18 wire octets (Rsvd zero, DV = 1).
    pub fn to_bytes(&self) -> [u8; Self::LEN] {
        let mut b = [0u8; Self::LEN];
        b[0] = ddp_ctrl(false, self.last);
        b[1] = self.ulp_ctrl;
        b[2..6].copy_from_slice(&self.inv_stag.to_be_bytes());
        b[6..10].copy_from_slice(&self.qn.to_be_bytes());
        b[10..14].copy_from_slice(&self.msn.to_be_bytes());
        b[14..18].copy_from_slice(&self.mo.to_be_bytes());
        b
    }

    /// Reads the fields of an 18-octet header without checking T or DV.
    pub fn from_bytes(b: &[u8; Self::LEN]) -> Self {
        UntaggedHeader {
            last: b[0] & L_FLAG != 0,
            ulp_ctrl: b[1],
            inv_stag: be32(&b[2..6]),
            qn: be32(&b[6..10]),
            msn: be32(&b[10..14]),
            mo: be32(&b[14..18]),
        }
    }
}

/// A DDP header of either model.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum DdpHeader {
    /// T = 1.
    Tagged(TaggedHeader),
    /// T = 0.
    Untagged(UntaggedHeader),
}

impl DdpHeader {
    /// Parses the header at the start of `buf` (the ULPDU).
    ///
    /// Rsvd bits are ignored (CHECKLIST DDP-01); DV must be 01b (DDP-02).
    /// Octets after the header are not looked at.
    pub fn parse(buf: &[u8]) -> Result<Self, DdpError> {
        let ctrl = *buf.first().ok_or(DdpError::Truncated { needed: TaggedHeader::LEN, got: 0 })?;
        let tagged = ctrl & T_FLAG != 0;
        let needed = if tagged { TaggedHeader::LEN } else { UntaggedHeader::LEN };
        let dv = ctrl & DV_MASK;
        // The version is checked first: with an unknown version the rest of
        // the layout is unknown too.
        if dv != DDP_VERSION {
            return Err(DdpError::Version { dv, tagged });
        }
        let got = buf.len();
        let truncated = DdpError::Truncated { needed, got };
        if tagged {
            let b: &[u8; TaggedHeader::LEN] =
                buf.get(..TaggedHeader::LEN).and_then(|s| s.try_into().ok()).ok_or(truncated)?;
            Ok(DdpHeader::Tagged(TaggedHeader::from_bytes(b)))
        } else {
            let b: &[u8; UntaggedHeader::LEN] =
                buf.get(..UntaggedHeader::LEN).and_then(|s| s.try_into().ok()).ok_or(truncated)?;
            Ok(DdpHeader::Untagged(UntaggedHeader::from_bytes(b)))
        }
    }

    /// Wire size: 14 or 18.
    pub fn len(&self) -> usize {
        match self {
            DdpHeader::Tagged(_) => TaggedHeader::LEN,
            DdpHeader::Untagged(_) => UntaggedHeader::LEN,
        }
    }

    /// Never true: a DDP header always has octets. Present for API symmetry with `len`.
    pub fn is_empty(&self) -> bool {
        false
    }

    /// True for the tagged model.
    pub fn is_tagged(&self) -> bool {
        matches!(self, DdpHeader::Tagged(_))
    }

    /// The L flag.
    pub fn last(&self) -> bool {
        match self {
            DdpHeader::Tagged(h) => h.last,
            DdpHeader::Untagged(h) => h.last,
        }
    }

    /// The ULP control octet (RDMAP control for RDMAP).
    pub fn ulp_ctrl(&self) -> u8 {
        match self {
            DdpHeader::Tagged(h) => h.ulp_ctrl,
            DdpHeader::Untagged(h) => h.ulp_ctrl,
        }
    }

    /// Appends the wire octets to `out`.
    pub fn encode(&self, out: &mut Vec<u8>) {
        match self {
            DdpHeader::Tagged(h) => out.extend_from_slice(&h.to_bytes()),
            DdpHeader::Untagged(h) => out.extend_from_slice(&h.to_bytes()),
        }
    }

    /// The wire octets as a vector.
    pub fn to_vec(&self) -> Vec<u8> {
        let mut v = Vec::with_capacity(self.len());
        self.encode(&mut v);
        v
    }
}

/// The DDP control octet: `T | L | Rsvd=0 | DV=01`.
pub fn ddp_ctrl(tagged: bool, last: bool) -> u8 {
    (if tagged { T_FLAG } else { 0 }) | (if last { L_FLAG } else { 0 }) | DDP_VERSION
}

pub(crate) fn be32(b: &[u8]) -> u32 {
    b.iter().take(4).fold(0u32, |acc, &x| (acc << 8) | u32::from(x))
}

pub(crate) fn be64(b: &[u8]) -> u64 {
    b.iter().take(8).fold(0u64, |acc, &x| (acc << 8) | u64::from(x))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn control_octets() {
        assert_eq!(ddp_ctrl(false, true), 0x41);
        assert_eq!(ddp_ctrl(true, true), 0xc1);
        assert_eq!(ddp_ctrl(true, false), 0x81);
        assert_eq!(ddp_ctrl(false, false), 0x01);
    }

    #[test]
    fn big_endian_helpers() {
        assert_eq!(be32(&[1, 2, 3, 4]), 0x0102_0304);
        assert_eq!(be64(&[1, 2, 3, 4, 5, 6, 7, 8]), 0x0102_0304_0506_0708);
    }
}
