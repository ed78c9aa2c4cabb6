//! CRC32c as linear algebra over GF(2), computed at generation time.
//!
//! The CRC register update over a beat of bytes is linear in (register, data), so one beat
//! of W bytes is a 32 x (32 + 8W) XOR matrix. A beat with fewer valid bytes is handled
//! without a matrix per byte count: invalid trailing lanes are zeroed, the full matrix is
//! applied, and the zero bytes are undone with `A^-t` (A = the register step for one zero
//! byte, which is invertible). The initial value 0xFFFFFFFF of a message that spans `n`
//! bytes of the beat contributes the constant `A^n * 0xFFFFFFFF`, so a first beat can start
//! from register 0 at any lane. These are unsigned reflected CRC registers (RFC 3720
//! Appendix B.4 convention), without the final inversion.

/// The reflected Castagnoli polynomial (0x1EDC6F41 bit-reversed).
pub const POLY: u32 = 0x82F6_3B78;

/// Advances a CRC32c register over `data` (no initial value, no final inversion).
pub fn advance(mut reg: u32, data: &[u8]) -> u32 {
    for &byte in data {
        reg ^= u32::from(byte);
        for _ in 0..8 {
            reg = (reg >> 1) ^ if reg & 1 != 0 { POLY } else { 0 };
        }
    }
    reg
}

/// A linear map from `inputs` bits to 32 bits: `rows[j]` holds the input bits that feed
/// output bit j, as a little-endian bit vector of 64-bit words.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct XorMatrix {
    pub inputs: usize,
    pub rows: Vec<Vec<u64>>,
}

impl XorMatrix {
    /// The matrix of a linear function `f`, found one input bit at a time.
    fn from_fn(inputs: usize, f: impl Fn(usize) -> u32) -> Self {
        let words = inputs.div_ceil(64);
        let mut rows = vec![vec![0u64; words]; 32];
        for bit in 0..inputs {
            let column = f(bit);
            for (j, row) in rows.iter_mut().enumerate() {
                if column >> j & 1 != 0 {
                    row[bit / 64] |= 1 << (bit % 64);
                }
            }
        }
        XorMatrix { inputs, rows }
    }

    /// Applies the matrix to an input bit vector.
    pub fn apply(&self, input: &[u64]) -> u32 {
        let mut out = 0u32;
        for (j, row) in self.rows.iter().enumerate() {
            let parity = row.iter().zip(input).fold(0u32, |p, (r, x)| p ^ (r & x).count_ones());
            out |= (parity & 1) << j;
        }
        out
    }

    /// `after * self`: this map followed by the 32 -> 32 map `after`.
    pub fn then(&self, after: &XorMatrix) -> XorMatrix {
        assert_eq!(after.inputs, 32);
        let rows = after
            .rows
            .iter()
            .map(|sel| {
                let mut row = vec![0u64; self.inputs.div_ceil(64)];
                for (i, mine) in self.rows.iter().enumerate() {
                    if sel[0] >> i & 1 != 0 {
                        row.iter_mut().zip(mine).for_each(|(r, m)| *r ^= m);
                    }
                }
                row
            })
            .collect();
        XorMatrix { inputs: self.inputs, rows }
    }

    /// Row `j` as a Verilog literal of the input width.
    pub fn row_literal(&self, j: usize) -> String {
        let mut hex = String::new();
        for word in self.rows[j].iter().rev() {
            hex.push_str(&format!("{word:016x}"));
        }
        let digits = self.inputs.div_ceil(4);
        format!("{}'h{}", self.inputs, &hex[hex.len() - digits..])
    }
}

/// The beat matrix for `lanes` bytes: inputs are the register (bits 0..32) followed by the
/// data, byte lane i at bits 32 + 8i .. 32 + 8i + 8 (lane 0 first on the wire).
pub fn beat_matrix(lanes: usize) -> XorMatrix {
    XorMatrix::from_fn(32 + 8 * lanes, |bit| {
        let mut data = vec![0u8; lanes];
        let reg = if bit < 32 {
            1u32 << bit
        } else {
            data[(bit - 32) / 8] = 1 << ((bit - 32) % 8);
            0
        };
        advance(reg, &data)
    })
}

/// `D`: the contribution of `lanes` data bytes to a register that starts at zero; inputs
/// are the data bits, lane i at bits 8i .. 8i + 8.
pub fn data_matrix(lanes: usize) -> XorMatrix {
    XorMatrix::from_fn(8 * lanes, |bit| {
        let mut data = vec![0u8; lanes];
        data[bit / 8] = 1 << (bit % 8);
        advance(0, &data)
    })
}

/// `A^n`: the register step over `n` zero bytes.
pub fn zero_bytes_matrix(n: usize) -> XorMatrix {
    XorMatrix::from_fn(32, |bit| advance(1 << bit, &vec![0u8; n]))
}

/// `A^-t`: undoes `t` zero bytes fed into the register.
pub fn unwind_matrix(t: usize) -> XorMatrix {
    let inverse = invert(&XorMatrix::from_fn(32, |bit| advance(1 << bit, &[0])));
    XorMatrix::from_fn(32, |bit| {
        let mut v = 1u32 << bit;
        for _ in 0..t {
            v = inverse.apply(&[u64::from(v)]);
        }
        v
    })
}

/// `A^n * 0xFFFFFFFF`: what the initial register value adds after `n` bytes.
pub fn init_term(n: usize) -> u32 {
    advance(0xFFFF_FFFF, &vec![0u8; n])
}

/// Inverse of a 32 x 32 matrix by Gauss-Jordan elimination over GF(2).
fn invert(m: &XorMatrix) -> XorMatrix {
    assert_eq!(m.inputs, 32);
    // Augmented rows: low 32 bits the matrix row, high 32 bits the identity row.
    let mut rows: Vec<u64> = (0..32).map(|j| m.rows[j][0] | (1u64 << (32 + j))).collect();
    for col in 0..32 {
        let pivot = (col..32).find(|&r| rows[r] >> col & 1 != 0).expect("CRC step is invertible");
        rows.swap(col, pivot);
        for r in 0..32 {
            if r != col && rows[r] >> col & 1 != 0 {
                rows[r] ^= rows[col];
            }
        }
    }
    XorMatrix { inputs: 32, rows: rows.iter().map(|r| vec![r >> 32]).collect() }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn input_bits(reg: u32, data: &[u8]) -> Vec<u64> {
        let mut v = vec![0u64; (32 + 8 * data.len()).div_ceil(64)];
        v[0] = u64::from(reg);
        for (i, &b) in data.iter().enumerate() {
            for k in 0..8 {
                if b >> k & 1 != 0 {
                    let bit = 32 + 8 * i + k;
                    v[bit / 64] |= 1 << (bit % 64);
                }
            }
        }
        v
    }

    #[test]
    fn advance_gives_the_rfc3720_check_value() {
        assert_eq!(!advance(0xFFFF_FFFF, b"123456789"), 0xE306_9283);
        assert_eq!(!advance(0xFFFF_FFFF, &[0u8; 32]), 0x8A91_36AA);
    }

    #[test]
    fn beat_matrix_equals_the_bytewise_crc() {
        let mut seed = 0x1234_5678_u32;
        let mut next = || {
            seed ^= seed << 13;
            seed ^= seed >> 17;
            seed ^= seed << 5;
            seed
        };
        for lanes in [8, 16, 32, 64] {
            let m = beat_matrix(lanes);
            for _ in 0..20 {
                let reg = next();
                let data: Vec<u8> = (0..lanes).map(|_| next() as u8).collect();
                assert_eq!(m.apply(&input_bits(reg, &data)), advance(reg, &data));
            }
        }
    }

    #[test]
    fn unwind_undoes_trailing_zero_bytes() {
        for t in 0..=64 {
            let reg = 0xDEAD_BEEF_u32.rotate_left(t as u32);
            let forward = advance(reg, &vec![0u8; t]);
            assert_eq!(unwind_matrix(t).apply(&[u64::from(forward)]), reg, "t = {t}");
        }
    }

    #[test]
    fn init_term_accounts_for_the_initial_value() {
        let data = b"iWARP";
        let from_zero = advance(0, data);
        assert_eq!(from_zero ^ init_term(data.len()), advance(0xFFFF_FFFF, data));
    }

    #[test]
    fn data_and_register_parts_add_up_to_the_beat() {
        let data = [0x12u8, 0x34, 0x56, 0x78, 0x9a, 0xbc, 0xde, 0xf0];
        let reg = 0x0bad_cafe;
        let mut bits = vec![0u64; 1];
        bits[0] = u64::from_le_bytes(data);
        let split = zero_bytes_matrix(8).apply(&[u64::from(reg)]) ^ data_matrix(8).apply(&bits);
        assert_eq!(split, advance(reg, &data));
    }

    #[test]
    fn composition_undoes_trailing_zeros_of_a_short_beat() {
        // Four data bytes then four zero lanes: D8 followed by A^-4 is D4 on the data.
        let data = [7u8, 6, 5, 4, 0, 0, 0, 0];
        let bits = [u64::from_le_bytes(data)];
        let composed = data_matrix(8).then(&unwind_matrix(4));
        assert_eq!(composed.apply(&bits), advance(0, &data[..4]));
        assert_eq!(composed.apply(&bits), unwind_matrix(4).apply(&[u64::from(data_matrix(8).apply(&bits))]));
    }

    #[test]
    fn row_literal_has_the_input_width() {
        let m = beat_matrix(8);
        let lit = m.row_literal(0);
        assert!(lit.starts_with("96'h") && lit.len() == 4 + 24, "{lit}");
    }
}
