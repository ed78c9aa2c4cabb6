//! RFC 7306 §5.1 atomic semantics: masked FetchAdd and masked CmpSwap.
//!
//! The operations work on a 64-bit value in the target's native format; the
//! wire format of the requests is in [`crate::rdmap::headers`].

use crate::rdmap::RdmapError;

/// Octets of the word an atomic operates on (RFC 7306 §5: 64 bits), and of
/// the requester's buffer that receives its original value.
pub const OPERAND_LEN: usize = 8;

/// The atomic operations of RFC 7306 §5.2.1 Fig. 5 / §10.1.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum AtomicOp {
    /// AOpCode 0x0: masked Fetch and Add.
    FetchAdd,
    /// AOpCode 0x2: masked Compare and Swap.
    CmpSwap,
}

impl AtomicOp {
    /// The AOpCode value.
    pub fn code(self) -> u8 {
        match self {
            AtomicOp::FetchAdd => 0x0,
            AtomicOp::CmpSwap => 0x2,
        }
    }
}

impl TryFrom<u8> for AtomicOp {
    type Error = RdmapError;

    /// 0x0 and 0x2 only. 0x1 is Reserved (it was Swap in the draft) and
    /// 0x3–0xF are unassigned; all of them are unsupported (CHECKLIST ATOM-04).
    fn try_from(v: u8) -> Result<Self, RdmapError> {
        match v {
            0x0 => Ok(AtomicOp::FetchAdd),
            0x2 => Ok(AtomicOp::CmpSwap),
            other => Err(RdmapError::UnsupportedAOpCode(other)),
        }
    }
}

/// Masked FetchAdd (RFC 7306 §5.1.1, CHECKLIST ATOM-09): the new memory value.
///
/// Each set bit of `add_mask` is the most significant bit of a field, and
/// the carry out of that bit is discarded. Mask 0 is a plain wrapping
/// 64-bit add; an all-ones mask is XOR.
///
/// Closed form: clear the mask bits of both operands before adding, so a
/// masked bit position receives only its incoming carry and can never
/// produce a carry out (0 + 0 + c ≤ 1); then XOR the operands' own bits back
/// in at those positions, which gives `o ^ a ^ c` there — the correct sum
/// bit. Unmasked positions are an ordinary ripple add. The carry out of
/// bit 63 is dropped by the wrapping add, as the pseudocode drops it when
/// its loop ends. `tests/atomic.rs` checks this against the literal
/// pseudocode ([`masked_fetch_add_bit_serial`]) and a field-by-field model.
pub fn masked_fetch_add(original: u64, add: u64, add_mask: u64) -> u64 {
    let sum = (original & !add_mask).wrapping_add(add & !add_mask);
    sum ^ ((original ^ add) & add_mask)
}

/// Literal transcription of the RFC 7306 §5.1.1 pseudocode, one bit per
/// iteration. Kept as the reference the fast form is proved against.
pub fn masked_fetch_add_bit_serial(original: u64, add: u64, add_mask: u64) -> u64 {
    let mut bit_location: u64 = 1;
    let mut carry: u64 = 0;
    let mut remote_data_value: u64 = 0;
    for bit in 0..64 {
        if bit != 0 {
            bit_location <<= 1;
        }
        let val1 = (original & bit_location) >> bit;
        let val2 = (add & bit_location) >> bit;
        let mut sum = carry + val1 + val2;
        carry = (sum & 2) >> 1;
        sum &= 1;
        if sum != 0 {
            remote_data_value |= bit_location;
        }
        carry = u64::from(carry != 0 && (add_mask & bit_location) == 0);
    }
    remote_data_value
}

/// Masked CmpSwap (RFC 7306 §5.1.2, CHECKLIST ATOM-10): the new memory value.
///
/// If the bits selected by `compare_mask` are equal in `compare` and
/// `original`, the bits selected by `swap_mask` are replaced by those of
/// `swap`; otherwise memory is unchanged. The response returns `original`
/// in both cases.
pub fn masked_cmp_swap(original: u64, swap: u64, swap_mask: u64, compare: u64, compare_mask: u64) -> u64 {
    if (compare ^ original) & compare_mask == 0 {
        (original & !swap_mask) | (swap & swap_mask)
    } else {
        original
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn aopcodes() {
        assert_eq!(AtomicOp::try_from(0), Ok(AtomicOp::FetchAdd));
        assert_eq!(AtomicOp::try_from(2), Ok(AtomicOp::CmpSwap));
        for v in [1u8, 3, 0xF] {
            assert_eq!(AtomicOp::try_from(v), Err(RdmapError::UnsupportedAOpCode(v)));
        }
    }

    #[test]
    fn fast_equals_serial_on_edges() {
        let edge = [0u64, 1, u64::MAX, 1 << 63, 0x8000_0000_8000_0000, 0x5555_5555_5555_5555];
        for &o in &edge {
            for &a in &edge {
                for &m in &edge {
                    assert_eq!(masked_fetch_add(o, a, m), masked_fetch_add_bit_serial(o, a, m));
                }
            }
        }
    }
}
