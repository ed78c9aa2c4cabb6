//! Helpers shared by the integration tests.
#![allow(dead_code)]

/// Decodes a hex string; spaces and newlines are ignored.
pub fn hex(s: &str) -> Vec<u8> {
    let digits: Vec<u8> = s.bytes().filter(|b| b.is_ascii_hexdigit()).collect();
    assert!(digits.len() & 1 == 0, "odd number of hex digits");
    digits.chunks(2).map(|p| u8::from_str_radix(std::str::from_utf8(p).unwrap(), 16).unwrap()).collect()
}

/// The 18-octet untagged header of a Send (opcode 0x3, QN 0, L=1, MO 0).
pub fn send_header(msn: u32) -> Vec<u8> {
    let mut v = vec![0x41, 0x43, 0, 0, 0, 0, 0, 0, 0, 0];
    v.extend_from_slice(&msn.to_be_bytes());
    v.extend_from_slice(&[0, 0, 0, 0]);
    v
}

/// A Send ULPDU with `n` zero payload octets.
pub fn send_ulpdu(msn: u32, n: usize) -> Vec<u8> {
    let mut v = send_header(msn);
    v.resize(v.len() + n, 0);
    v
}

/// Pushes everything and pops until the deframer wants more.
pub fn drain(d: &mut rnic_proto::Deframer) -> Vec<Result<Vec<u8>, rnic_proto::MpaError>> {
    let mut out = Vec::new();
    while let Some(r) = d.pop() {
        out.push(r);
    }
    out
}
