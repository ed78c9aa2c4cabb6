//! Fixed-size RDMAP headers that follow the DDP header.
//!
//! * RDMA Read Request, 28 octets (RFC 5040 §4.4, CHECKLIST RDMAP-07);
//! * Atomic Request, 52 octets (RFC 7306 §5.2.1 Fig. 4, CHECKLIST ATOM-03);
//! * Atomic Response, 12 octets (RFC 7306 §5.2.2 Fig. 6 — not the "32 bytes"
//!   of §4, see CHECKLIST ATOM-05).

use super::RdmapError;
use crate::atomic::{masked_cmp_swap, masked_fetch_add, AtomicOp};
use crate::ddp::{be32, be64};

/// The first `N` octets of `buf`, or a truncation error.
fn prefix<'a, const N: usize>(buf: &'a [u8], what: &'static str) -> Result<&'a [u8; N], RdmapError> {
    buf.get(..N).and_then(|s| s.try_into().ok()).ok_or(RdmapError::Truncated { what, needed: N, got: buf.len() })
}

/// RDMA Read Request header (RFC 5040 §4.4).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Default)]
pub struct ReadRequest {
    /// Data Sink STag: where the Read Response is placed.
    pub sink_stag: u32,
    /// Data Sink Tagged Offset.
    pub sink_to: u64,
    /// RDMA Read Message Size (0 to 2^32−1).
    pub size: u32,
    /// Data Source STag: what is read.
    pub src_stag: u32,
    /// Data Source Tagged Offset.
    pub src_to: u64,
}

impl ReadRequest {
    /// Wire size.
    pub const LEN: usize = 28;

    /// The 28 wire octets.
    pub fn to_bytes(&self) -> [u8; Self::LEN] {
        let mut b = [0u8; Self::LEN];
        b[0..4].copy_from_slice(&self.sink_stag.to_be_bytes());
        b[4..12].copy_from_slice(&self.sink_to.to_be_bytes());
        b[12..16].copy_from_slice(&self.size.to_be_bytes());
        b[16..20].copy_from_slice(&self.src_stag.to_be_bytes());
        b[20..28].copy_from_slice(&self.src_to.to_be_bytes());
        b
    }

    /// Reads the header from its 28 octets.
    pub fn from_bytes(b: &[u8; Self::LEN]) -> Self {
        ReadRequest {
            sink_stag: be32(&b[0..4]),
            sink_to: be64(&b[4..12]),
            size: be32(&b[12..16]),
            src_stag: be32(&b[16..20]),
            src_to: be64(&b[20..28]),
        }
    }

    /// Reads the header at the start of `buf`.
    pub fn parse(buf: &[u8]) -> Result<Self, RdmapError> {
        prefix::<{ Self::LEN }>(buf, "Read Request header").map(Self::from_bytes)
    }

    /// The header a Terminate returns for a read that failed after
    /// `done` octets were sent: both offsets advanced, size reduced
    /// (RFC 5040 §4.8, CHECKLIST RDMAP-15).
    pub fn advanced(&self, done: u32) -> Self {
        ReadRequest {
            sink_to: self.sink_to.wrapping_add(u64::from(done)),
            size: self.size.saturating_sub(done),
            src_to: self.src_to.wrapping_add(u64::from(done)),
            ..*self
        }
    }
}

/// Atomic Request header (RFC 7306 §5.2.1, Fig. 4).
///
/// `aopcode` is kept raw (the low 4 bits of the first word) so that the
/// reserved and unassigned codes can be represented and rejected later
/// with [`AtomicRequest::op`].
#[derive(Clone, Copy, Debug, PartialEq, Eq, Default)]
pub struct AtomicRequest {
    /// Atomic Operation Code (4 bits): 0x0 FetchAdd, 0x2 CmpSwap.
    pub aopcode: u8,
    /// Request Identifier, echoed in the response.
    pub request_id: u32,
    /// Remote STag of the target.
    pub stag: u32,
    /// Remote Tagged Offset; must map to a 64-bit aligned address.
    pub to: u64,
    /// Add Data (FetchAdd) or Swap Data (CmpSwap).
    pub add_swap: u64,
    /// Add Mask (FetchAdd) or Swap Mask (CmpSwap).
    pub add_swap_mask: u64,
    /// Compare Data (CmpSwap; 0 and ignored for FetchAdd).
    pub compare: u64,
    /// Compare Mask (CmpSwap; all ones and ignored for FetchAdd).
    pub compare_mask: u64,
}

impl AtomicRequest {
    /// Wire size.
    pub const LEN: usize = 52;

    /// A FetchAdd request with the transmit values of the unused fields
    /// (Compare Data 0, Compare Mask all ones).
    pub fn fetch_add(request_id: u32, stag: u32, to: u64, add: u64, add_mask: u64) -> Self {
        AtomicRequest {
            aopcode: AtomicOp::FetchAdd.code(),
            request_id,
            stag,
            to,
            add_swap: add,
            add_swap_mask: add_mask,
            compare: 0,
            compare_mask: u64::MAX,
        }
    }

    /// A masked CmpSwap request.
    pub fn cmp_swap(
        request_id: u32,
        stag: u32,
        to: u64,
        swap: u64,
        swap_mask: u64,
        compare: u64,
        compare_mask: u64,
    ) -> Self {
        AtomicRequest {
            aopcode: AtomicOp::CmpSwap.code(),
            request_id,
            stag,
            to,
            add_swap: swap,
            add_swap_mask: swap_mask,
            compare,
            compare_mask,
        }
    }

    /// The operation, or an error for an AOpCode that is not implemented.
    pub fn op(&self) -> Result<AtomicOp, RdmapError> {
        AtomicOp::try_from(self.aopcode)
    }

    /// The new memory value for `original` (RFC 7306 §5.1). The response
    /// always returns `original` itself.
    pub fn apply(&self, original: u64) -> Result<u64, RdmapError> {
        Ok(match self.op()? {
            AtomicOp::FetchAdd => masked_fetch_add(original, self.add_swap, self.add_swap_mask),
            AtomicOp::CmpSwap => {
                masked_cmp_swap(original, self.add_swap, self.add_swap_mask, self.compare, self.compare_mask)
            }
        })
    }

    /// The 52 wire octets (the 28 reserved bits zero).
    pub fn to_bytes(&self) -> [u8; Self::LEN] {
        let mut b = [0u8; Self::LEN];
        b[0..4].copy_from_slice(&u32::from(self.aopcode & 0x0F).to_be_bytes());
        b[4..8].copy_from_slice(&self.request_id.to_be_bytes());
        b[8..12].copy_from_slice(&self.stag.to_be_bytes());
        b[12..20].copy_from_slice(&self.to.to_be_bytes());
        b[20..28].copy_from_slice(&self.add_swap.to_be_bytes());
        b[28..36].copy_from_slice(&self.add_swap_mask.to_be_bytes());
        b[36..44].copy_from_slice(&self.compare.to_be_bytes());
        b[44..52].copy_from_slice(&self.compare_mask.to_be_bytes());
        b
    }

    /// Reads the header from its 52 octets; the reserved bits are ignored.
    pub fn from_bytes(b: &[u8; Self::LEN]) -> Self {
        AtomicRequest {
            aopcode: b[3] & 0x0F,
            request_id: be32(&b[4..8]),
            stag: be32(&b[8..12]),
            to: be64(&b[12..20]),
            add_swap: be64(&b[20..28]),
            add_swap_mask: be64(&b[28..36]),
            compare: be64(&b[36..44]),
            compare_mask: be64(&b[44..52]),
        }
    }

    /// Reads the header at the start of `buf`.
    pub fn parse(buf: &[u8]) -> Result<Self, RdmapError> {
        prefix::<{ Self::LEN }>(buf, "Atomic Request header").map(Self::from_bytes)
    }
}

/// Atomic Response header (RFC 7306 §5.2.2, Fig. 6).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Default)]
pub struct AtomicResponse {
    /// Original Request Identifier, copied from the request.
    pub request_id: u32,
    /// Original Remote Data Value: the target before the operation.
    pub original: u64,
}

impl AtomicResponse {
    /// Wire size.
    pub const LEN: usize = 12;

    /// The 12 wire octets.
    pub fn to_bytes(&self) -> [u8; Self::LEN] {
        let mut b = [0u8; Self::LEN];
        b[0..4].copy_from_slice(&self.request_id.to_be_bytes());
        b[4..12].copy_from_slice(&self.original.to_be_bytes());
        b
    }

    /// Reads the header from its 12 octets.
    pub fn from_bytes(b: &[u8; Self::LEN]) -> Self {
        AtomicResponse { request_id: be32(&b[0..4]), original: be64(&b[4..12]) }
    }

    /// Reads the header at the start of `buf`.
    pub fn parse(buf: &[u8]) -> Result<Self, RdmapError> {
        prefix::<{ Self::LEN }>(buf, "Atomic Response header").map(Self::from_bytes)
    }
}
