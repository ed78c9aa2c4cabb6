//! One octet's step of the serial bridge's CRC-8 (`rnic_proto::bridge::crc8_byte`:
//! polynomial 0x07, not reflected), combinational: each bit of the result is the XOR of a
//! few bits of `crc ^ octet`, unrolled here as the eight shift-and-reduce steps that
//! synthesis flattens.
use rust_hdl::prelude::*;

/// The polynomial's low eight bits (x^8 + x^2 + x + 1).
const POLY: u8 = 0x07;

#[derive(LogicBlock)]
pub struct Crc8Step {
    pub crc: Signal<In, Bits<8>>,
    pub octet: Signal<In, Bits<8>>,
    pub crc_out: Signal<Out, Bits<8>>,
    poly: Constant<Bits<8>>,
    s0: Signal<Local, Bits<8>>,
    s1: Signal<Local, Bits<8>>,
    s2: Signal<Local, Bits<8>>,
    s3: Signal<Local, Bits<8>>,
    s4: Signal<Local, Bits<8>>,
    s5: Signal<Local, Bits<8>>,
    s6: Signal<Local, Bits<8>>,
    s7: Signal<Local, Bits<8>>,
}

impl Default for Crc8Step {
    fn default() -> Self {
        Crc8Step {
            crc: Default::default(),
            octet: Default::default(),
            crc_out: Default::default(),
            poly: Constant::new(POLY.to_bits()),
            s0: Default::default(),
            s1: Default::default(),
            s2: Default::default(),
            s3: Default::default(),
            s4: Default::default(),
            s5: Default::default(),
            s6: Default::default(),
            s7: Default::default(),
        }
    }
}

impl Logic for Crc8Step {
    #[hdl_gen]
    fn update(&mut self) {
        // Step k: shift left, and fold the bit shifted out back in with the polynomial.
        self.s0.next = self.crc.val() ^ self.octet.val();
        self.s1.next = self.s0.val() << 1;
        if self.s0.val().get_bit(7) {
            self.s1.next = (self.s0.val() << 1) ^ self.poly.val();
        }
        self.s2.next = self.s1.val() << 1;
        if self.s1.val().get_bit(7) {
            self.s2.next = (self.s1.val() << 1) ^ self.poly.val();
        }
        self.s3.next = self.s2.val() << 1;
        if self.s2.val().get_bit(7) {
            self.s3.next = (self.s2.val() << 1) ^ self.poly.val();
        }
        self.s4.next = self.s3.val() << 1;
        if self.s3.val().get_bit(7) {
            self.s4.next = (self.s3.val() << 1) ^ self.poly.val();
        }
        self.s5.next = self.s4.val() << 1;
        if self.s4.val().get_bit(7) {
            self.s5.next = (self.s4.val() << 1) ^ self.poly.val();
        }
        self.s6.next = self.s5.val() << 1;
        if self.s5.val().get_bit(7) {
            self.s6.next = (self.s5.val() << 1) ^ self.poly.val();
        }
        self.s7.next = self.s6.val() << 1;
        if self.s6.val().get_bit(7) {
            self.s7.next = (self.s6.val() << 1) ^ self.poly.val();
        }
        self.crc_out.next = self.s7.val() << 1;
        if self.s7.val().get_bit(7) {
            self.crc_out.next = (self.s7.val() << 1) ^ self.poly.val();
        }
    }
}
