//! RFC 7306 §5.1 semantics (CHECKLIST ATOM-09, ATOM-10): the closed-form
//! masked FetchAdd against the literal pseudocode and an independent
//! field-by-field model; masked CmpSwap identities.

use proptest::prelude::*;
use rand::rngs::StdRng;
use rand::{Rng, SeedableRng};
use rnic_proto::{masked_cmp_swap, masked_fetch_add, masked_fetch_add_bit_serial};

/// Independent model: cut the word into fields, each ending (MSB side) at a
/// set mask bit or at bit 63, and add each field modulo 2^width.
fn field_model(original: u64, add: u64, mask: u64) -> u64 {
    let mut result = 0u64;
    let mut lo = 0u32;
    for bit in 0..64u32 {
        if mask >> bit & 1 == 1 || bit == 63 {
            let width = bit - lo + 1;
            let field_mask = if width == 64 { u64::MAX } else { ((1u64 << width) - 1) << lo };
            let o = (original & field_mask) >> lo;
            let a = (add & field_mask) >> lo;
            let sum = o.wrapping_add(a) << lo;
            result |= sum & field_mask;
            lo = bit + 1;
        }
    }
    result
}

fn check_all(o: u64, a: u64, m: u64) {
    let serial = masked_fetch_add_bit_serial(o, a, m);
    assert_eq!(masked_fetch_add(o, a, m), serial, "fast vs serial: {o:#x} {a:#x} {m:#x}");
    assert_eq!(field_model(o, a, m), serial, "model vs serial: {o:#x} {a:#x} {m:#x}");
}

#[test]
fn atom_09_masked_fetch_add_random_100k() {
    let mut rng = StdRng::seed_from_u64(7306);
    for _ in 0..100_000 {
        check_all(rng.gen(), rng.gen(), rng.gen());
    }
}

#[test]
fn atom_09_masked_fetch_add_biased_masks() {
    let mut rng = StdRng::seed_from_u64(5040);
    let mut masks = vec![0u64, u64::MAX, 1 << 63, 0x8000_0000_8000_0000, 0x8080_8080_8080_8080];
    masks.extend((0..64).map(|b| 1u64 << b)); // single bits
    masks.extend((0..63).map(|b| 3u64 << b)); // adjacent bits
    masks.extend((0..64).map(|b| !(1u64 << b))); // all but one
    let operands = [0u64, 1, u64::MAX, 1 << 63, 0x7fff_ffff_ffff_ffff, 0x5555_5555_5555_5555];
    for &m in &masks {
        for &o in &operands {
            for &a in &operands {
                check_all(o, a, m);
            }
        }
        for _ in 0..100 {
            // Sparse masks and carry-heavy operands.
            let sparse = m | (rng.gen::<u64>() & rng.gen::<u64>() & rng.gen::<u64>());
            let o = rng.gen::<u64>() | rng.gen::<u64>();
            check_all(o, rng.gen(), sparse);
            check_all(o, rng.gen(), m);
        }
    }
}

#[test]
fn atom_09_masked_fetch_add_special_forms() {
    let mut rng = StdRng::seed_from_u64(1);
    for _ in 0..1000 {
        let (o, a): (u64, u64) = (rng.gen(), rng.gen());
        assert_eq!(masked_fetch_add(o, a, 0), o.wrapping_add(a), "mask 0 = plain add");
        assert_eq!(masked_fetch_add(o, a, 1 << 63), o.wrapping_add(a), "bit 63 = plain add");
        assert_eq!(masked_fetch_add(o, a, u64::MAX), o ^ a, "all ones = XOR");
        assert_eq!(masked_fetch_add(o, 0, rng.gen()), o, "add 0 = read");
    }
}

#[test]
fn atom_10_masked_cmp_swap_identities() {
    let mut rng = StdRng::seed_from_u64(2);
    for _ in 0..10_000 {
        let (o, s, sm, c, cm): (u64, u64, u64, u64, u64) = (rng.gen(), rng.gen(), rng.gen(), rng.gen(), rng.gen());
        let swapped = (o & !sm) | (s & sm);
        // Compare Mask 0: unconditional masked swap.
        assert_eq!(masked_cmp_swap(o, s, sm, c, 0), swapped);
        // Swap Mask 0: memory never changes.
        assert_eq!(masked_cmp_swap(o, s, 0, c, cm), o);
        // Matching under the compare mask swaps; bits outside swap mask stay.
        let matching = (o & cm) | (c & !cm);
        assert_eq!(masked_cmp_swap(o, s, sm, matching, cm), swapped);
        // A difference under the compare mask leaves memory unchanged.
        if cm != 0 {
            let bit = 1u64 << (cm.trailing_zeros());
            assert_eq!(masked_cmp_swap(o, s, sm, matching ^ bit, cm), o);
        }
        // Bit-by-bit model.
        let equal = (0..64).all(|b| cm >> b & 1 == 0 || (o >> b & 1) == (c >> b & 1));
        let model = if equal { swapped } else { o };
        assert_eq!(masked_cmp_swap(o, s, sm, c, cm), model);
    }
}

#[test]
fn atom_11_endianness_little_endian_target() {
    // Memory holds 0x29 little-endian; the response carries it big-endian (V7).
    let mut memory = [0x29u8, 0, 0, 0, 0, 0, 0, 0];
    let original = u64::from_le_bytes(memory);
    memory = masked_fetch_add(original, 1, 0).to_le_bytes();
    assert_eq!(memory, [0x2a, 0, 0, 0, 0, 0, 0, 0]);
    let resp = rnic_proto::AtomicResponse { request_id: 1, original };
    assert_eq!(resp.to_bytes()[4..], [0, 0, 0, 0, 0, 0, 0, 0x29]);
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(2000))]

    #[test]
    fn atom_09_prop_fast_equals_pseudocode_and_model(o: u64, a: u64, m: u64) {
        let serial = masked_fetch_add_bit_serial(o, a, m);
        prop_assert_eq!(masked_fetch_add(o, a, m), serial);
        prop_assert_eq!(field_model(o, a, m), serial);
    }

    #[test]
    fn atom_09_prop_sparse_masks(o: u64, a: u64, bits in proptest::collection::vec(0u32..64, 0..6)) {
        let m = bits.iter().fold(0u64, |acc, b| acc | 1 << b);
        prop_assert_eq!(masked_fetch_add(o, a, m), masked_fetch_add_bit_serial(o, a, m));
        prop_assert_eq!(field_model(o, a, m), masked_fetch_add_bit_serial(o, a, m));
    }
}
