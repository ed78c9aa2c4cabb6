//! Byte order: host-order fields become big-endian wire fields (and back). A wire field
//! sits in the stream lowest octet first, so its big-endian value is the byte-swapped one.
use rust_hdl::prelude::*;

/// Swaps the four octets of a 32-bit value.
#[derive(LogicBlock, Default)]
pub struct Bswap32 {
    pub d: Signal<In, Bits<32>>,
    pub q: Signal<Out, Bits<32>>,
}

impl Logic for Bswap32 {
    #[hdl_gen]
    fn update(&mut self) {
        self.q.next = (self.d.val() >> 24)
            | ((self.d.val() >> 8) & 0xFF00_u64)
            | ((self.d.val() << 8) & 0xFF0000_u64)
            | (self.d.val() << 24);
    }
}

/// Swaps the eight octets of a 64-bit value.
#[derive(LogicBlock, Default)]
pub struct Bswap64 {
    pub d: Signal<In, Bits<64>>,
    pub q: Signal<Out, Bits<64>>,
}

impl Logic for Bswap64 {
    #[hdl_gen]
    fn update(&mut self) {
        self.q.next = (self.d.val() >> 56)
            | ((self.d.val() >> 40) & 0xFF00_u64)
            | ((self.d.val() >> 24) & 0xFF0000_u64)
            | ((self.d.val() >> 8) & 0xFF000000_u64)
            | ((self.d.val() << 8) & 0xFF00000000_u64)
            | ((self.d.val() << 24) & 0xFF0000000000_u64)
            | ((self.d.val() << 40) & 0xFF000000000000_u64)
            | (self.d.val() << 56);
    }
}
