//! Helpers shared by the MPA test benches.
#![allow(dead_code)]

use rand::rngs::StdRng;
use rand::Rng;

/// A ULPDU length: mostly DDP-segment-like sizes, some tiny, some up to a jumbo MULPDU,
/// now and then the 65535 maximum.
pub fn random_length(rng: &mut StdRng) -> usize {
    match rng.gen_range(0..100) {
        0..=14 => rng.gen_range(0..24),
        15..=69 => rng.gen_range(18..600),
        70..=94 => rng.gen_range(600..4200),
        95..=98 => rng.gen_range(4200..9000),
        _ => rng.gen_range(60_000..=65_535),
    }
}

/// Octets from a hex string.
pub fn hex(s: &str) -> Vec<u8> {
    (0..s.len()).step_by(2).map(|i| u8::from_str_radix(&s[i..i + 2], 16).expect("hex")).collect()
}

/// The ULPDU inside an FPDU without markers: after the 2-octet length, `length` octets.
pub fn ulpdu_of(fpdu: &[u8]) -> Vec<u8> {
    let length = usize::from(u16::from_be_bytes([fpdu[0], fpdu[1]]));
    fpdu[2..2 + length].to_vec()
}

/// VECTORS V3-V11 as they appear on the wire (markers off, CRC on).
pub const WIRE_VECTORS: [(&str, &str); 10] = [
    ("V3", "001741430000000000000000000000010000000048656c6c6f00000020f5b101"),
    ("V4", "002e414100000000000000010000000100000000000102030000000000004000000010000a0b0c0d000000000001000019760a62"),
    ("V5", "0046414a000000000000000100000002000000000000000000000001123456780000000000001000000000000000000100000000000000000000000000000000ffffffffffffffff87bacb87"),
    ("V6", "0046414a000000000000000100000003000000000000000200000002123456780000000000002008123456781234567800000000ffffffffaaaa0000ffffffffffffffff00000000332d92ae"),
    ("V7", "001e414b00000000000000030000000100000000000000010000000000000029ebf3f1db"),
    ("V8", "001a4148000000000000000000000002000000000102030405060708a98a5e54"),
    ("V8 SE", "001a41490000000000000000000000030000000001020304050607085179b84a"),
    ("V9", "00264147000000000000000200000001000000001100c000004ec140deadbeef000000000000000021c9e749"),
    ("V10", "002a4147000000000000000200000001000000000207c0000046414a000000000000000100000004000000009a790102"),
    ("V11", "00464147000000000000000200000001000000000100e000002e414100000000000000010000000100000000000102030000000000004000000010000badbeef0000000000010000ce43db61"),
];

/// VECTORS V3 as the first FPDU of Full Operation with markers on: a zero marker first.
pub const V3_WITH_MARKER: &str = "00000000001741430000000000000000000000010000000048656c6c6f000000e304e97c";

/// A Send ULPDU (QN 0) with `payload` zero octets, as in RFC 5044 Figs. 5 and 6.
pub fn zero_send(msn: u8, payload: usize) -> Vec<u8> {
    let mut u = vec![0x41, 0x43, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, msn, 0, 0, 0, 0];
    u.resize(18 + payload, 0);
    u
}
