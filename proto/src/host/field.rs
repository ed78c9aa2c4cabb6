//! Bit fields of little-endian words and descriptors.
//!
//! Every register, context and descriptor layout of the host interface is a
//! table of [`Field`]s. The encoders of this module tree read and write
//! through these tables, the HDL generator takes the same constants as
//! numbers, and `proto/tests/host_docs.rs` checks the tables in `docs/`
//! against them, so the three cannot disagree.
//!
//! A field is located by the position of its least significant bit in the
//! little-endian bit string of the whole structure: bit `8·b + i` is bit `i`
//! of byte `b`, and bit `32·w + i` is bit `i` of word `w`. A 64-bit value
//! that the spec writes as "w4/w5 lo/hi" is therefore one field at word 4,
//! shift 0, width 64, and a descriptor's `u64` at bytes 8–15 is one field at
//! bit 64, width 64.

/// One bit field: a name, the position of its least significant bit and a width.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct Field {
    /// The name the docs tables use.
    pub name: &'static str,
    /// Position of the least significant bit, from bit 0 of byte 0 (word 0).
    pub lsb: u32,
    /// Width in bits, 1 to 64.
    pub width: u32,
}

impl Field {
    /// A field of a word array: `width` bits from bit `shift` of word `word`.
    pub const fn at_word(name: &'static str, word: u32, shift: u32, width: u32) -> Self {
        Field { name, lsb: word * 32 + shift, width }
    }

    /// A field of a byte string: `width` bits from bit `shift` of byte `byte`.
    pub const fn at_byte(name: &'static str, byte: u32, shift: u32, width: u32) -> Self {
        Field { name, lsb: byte * 8 + shift, width }
    }

    /// The word holding the least significant bit.
    pub const fn word(&self) -> u32 {
        self.lsb / 32
    }

    /// The position of the least significant bit inside [`Field::word`].
    pub const fn shift(&self) -> u32 {
        self.lsb % 32
    }

    /// The byte holding the least significant bit.
    pub const fn byte(&self) -> u32 {
        self.lsb / 8
    }

    /// Position of the most significant bit (same origin as `lsb`).
    pub const fn msb(&self) -> u32 {
        self.lsb + self.width - 1
    }

    /// The value mask, not shifted: `width` ones.
    pub const fn mask(&self) -> u64 {
        if self.width >= 64 {
            u64::MAX
        } else {
            (1u64 << self.width) - 1
        }
    }

    /// True when `value` fits in the field.
    pub const fn fits(&self, value: u64) -> bool {
        value & !self.mask() == 0
    }

    /// Reads the field from a little-endian byte string. Octets past the
    /// end of `bytes` read as zero, so this never panics.
    pub fn get(&self, bytes: &[u8]) -> u64 {
        let (first, shift, n) = self.span(8);
        let raw = (0..n).fold(0u128, |acc, i| {
            let b = bytes.get(first + i).copied().unwrap_or(0);
            acc | u128::from(b) << (8 * i)
        });
        (raw >> shift) as u64 & self.mask()
    }

    /// Writes `value` (truncated to the width) into a little-endian byte
    /// string, leaving the other bits alone. Octets past the end are skipped.
    pub fn set(&self, bytes: &mut [u8], value: u64) {
        let (first, shift, n) = self.span(8);
        let mask = u128::from(self.mask()) << shift;
        let bits = u128::from(value & self.mask()) << shift;
        for i in 0..n {
            if let Some(b) = bytes.get_mut(first + i) {
                let m = (mask >> (8 * i)) as u8;
                *b = (*b & !m) | ((bits >> (8 * i)) as u8 & m);
            }
        }
    }

    /// Reads the field from an array of 32-bit words (word 0 least significant).
    pub fn get_word(&self, words: &[u32]) -> u64 {
        let (first, shift, n) = self.span(32);
        let raw = (0..n).fold(0u128, |acc, i| {
            let w = words.get(first + i).copied().unwrap_or(0);
            acc | u128::from(w) << (32 * i)
        });
        (raw >> shift) as u64 & self.mask()
    }

    /// Writes `value` (truncated to the width) into an array of 32-bit words.
    pub fn set_word(&self, words: &mut [u32], value: u64) {
        let (first, shift, n) = self.span(32);
        let mask = u128::from(self.mask()) << shift;
        let bits = u128::from(value & self.mask()) << shift;
        for i in 0..n {
            if let Some(w) = words.get_mut(first + i) {
                let m = (mask >> (32 * i)) as u32;
                *w = (*w & !m) | ((bits >> (32 * i)) as u32 & m);
            }
        }
    }

    /// First unit, shift inside it and number of units covered, for units of
    /// `unit` bits. A field of at most 64 bits starting anywhere inside a
    /// unit spans at most 95 bits, so a `u128` holds it.
    fn span(&self, unit: u32) -> (usize, u32, usize) {
        let shift = self.lsb % unit;
        let n = (shift + self.width).div_ceil(unit);
        ((self.lsb / unit) as usize, shift, n as usize)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn spanning_fields_in_bytes_and_words() {
        let f = Field::at_byte("x", 1, 4, 12);
        let mut b = [0u8; 4];
        f.set(&mut b, 0xABC);
        assert_eq!(b, [0x00, 0xC0, 0xAB, 0x00]);
        assert_eq!(f.get(&b), 0xABC);

        let w64 = Field::at_word("base", 4, 0, 64);
        let mut w = [0u32; 8];
        w64.set_word(&mut w, 0x1122_3344_5566_7788);
        assert_eq!((w[4], w[5]), (0x5566_7788, 0x1122_3344));
        assert_eq!(w64.get_word(&w), 0x1122_3344_5566_7788);

        let odd = Field::at_word("odd", 0, 20, 64);
        odd.set_word(&mut w, u64::MAX);
        assert_eq!((w[0], w[1], w[2]), (0xFFF0_0000, u32::MAX, 0x000F_FFFF));
        assert_eq!(odd.get_word(&w), u64::MAX);
    }

    #[test]
    fn set_truncates_and_keeps_neighbours() {
        let f = Field::at_word("state", 0, 0, 4);
        let mut w = [0xFFFF_FFF0u32];
        f.set_word(&mut w, 0x1_2);
        assert_eq!(w[0], 0xFFFF_FFF2);
        assert!(f.fits(15) && !f.fits(16));
    }
}
