//! CRC32c over K byte lanes per cycle with byte-valid (RFC 5044 §4.4, iSCSI CRC).
//!
//! [`Crc32c`] holds the CRC register; [`Crc32cNetwork`] is its combinational update, an
//! XOR network whose matrices are computed in Rust when the Verilog is generated
//! (see [`super::crc_matrix`]). The unrolled bit-serial loop would synthesize far slower.
//!
//! Beat semantics: the valid lanes of `s_keep` must be contiguous. On a beat with
//! `s_first` a new CRC starts at the first valid lane (it may begin mid-beat); on other
//! beats the valid lanes must start at lane 0, and may end anywhere (the last beat of a
//! message). `crc` shows the finished CRC32c value (final inversion applied) of everything
//! since the last first beat, from the cycle after each accepted beat.
use std::fmt::Write as _;

use rust_hdl::prelude::*;

use super::crc_matrix::{advance, beat_matrix, init_term, unwind_matrix};

/// The registered CRC unit. `D` = data bits, `K` = byte lanes (`D = 8 K`).
#[derive(LogicBlock, Default)]
pub struct Crc32c<const D: usize, const K: usize> {
    pub clock: Signal<In, Clock>,
    pub reset: Signal<In, Bit>,
    pub s_valid: Signal<In, Bit>,
    pub s_first: Signal<In, Bit>,
    pub s_data: Signal<In, Bits<D>>,
    pub s_keep: Signal<In, Bits<K>>,
    pub crc: Signal<Out, Bits<32>>,
    network: Crc32cNetwork<D, K>,
    register: DFF<Bits<32>>,
}

impl<const D: usize, const K: usize> Logic for Crc32c<D, K> {
    #[hdl_gen]
    fn update(&mut self) {
        dff_setup!(self, clock, register);
        self.network.register.next = self.register.q.val();
        self.network.data.next = self.s_data.val();
        self.network.keep.next = self.s_keep.val();
        self.network.first.next = self.s_first.val();
        if self.s_valid.val() {
            self.register.d.next = self.network.register_next.val();
        }
        if self.reset.val() {
            self.register.d.next = 0xFFFF_FFFF_u64.into();
        }
        self.crc.next = !self.register.q.val();
    }
}

/// The combinational CRC step over one beat: register in, register out.
#[derive(LogicBlock, Default)]
pub struct Crc32cNetwork<const D: usize, const K: usize> {
    pub register: Signal<In, Bits<32>>,
    pub data: Signal<In, Bits<D>>,
    pub keep: Signal<In, Bits<K>>,
    pub first: Signal<In, Bit>,
    pub register_next: Signal<Out, Bits<32>>,
}

impl<const D: usize, const K: usize> Logic for Crc32cNetwork<D, K> {
    fn update(&mut self) {
        // Behavioural model for rust-hdl's own simulator: the same function, byte by byte.
        let keep = self.keep.val();
        let valid: Vec<usize> = (0..K).filter(|&i| keep.get_bit(i)).collect();
        let (lo, hi) = match (valid.first(), valid.last()) {
            (Some(&lo), Some(&hi)) => (lo, hi + 1),
            _ => (0, 0),
        };
        let data = self.data.val();
        let byte = |i: usize| data.get_bits::<8>(8 * i).to_u8();
        let next = if self.first.val() {
            advance(0xFFFF_FFFF, &(lo..hi).map(byte).collect::<Vec<_>>())
        } else {
            // Lanes before the first valid one count as zero bytes, as in the hardware.
            let bytes: Vec<u8> = (0..hi).map(|i| if i < lo { 0 } else { byte(i) }).collect();
            advance(self.register.val().to_u32(), &bytes)
        };
        self.register_next.next = (next as u64).into();
    }

    fn connect(&mut self) {
        self.register_next.connect();
    }

    fn hdl(&self) -> Verilog {
        Verilog::Custom(network_verilog(K))
    }
}

/// The body of [`Crc32cNetwork`] for `lanes` byte lanes.
fn network_verilog(lanes: usize) -> String {
    let bits = 8 * lanes;
    let beat = beat_matrix(lanes);
    let mut v = String::new();
    let w = &mut v;
    writeln!(w, "// XOR matrices for {lanes} lanes, computed by hdl/src/mpa/crc_matrix.rs.").unwrap();
    writeln!(w, "reg [{}:0] data_masked;", bits - 1).unwrap();
    writeln!(w, "reg [31:0] beat;\nreg [31:0] unwound;\nreg [31:0] init;").unwrap();
    writeln!(w, "reg [{}:0] x;", bits + 31).unwrap();
    writeln!(w, "reg [7:0] hi;\nreg [7:0] lo;\ninteger i;").unwrap();
    writeln!(w, "always @(*) begin").unwrap();
    // Valid lanes: [lo, hi). Invalid lanes are zeroed.
    writeln!(w, "    hi = 8'd0;\n    lo = 8'd{lanes};").unwrap();
    writeln!(w, "    for (i = 0; i < {lanes}; i = i + 1) begin").unwrap();
    writeln!(w, "        data_masked[8*i +: 8] = keep[i] ? data[8*i +: 8] : 8'h00;").unwrap();
    writeln!(w, "        if (keep[i]) hi = i[7:0] + 8'd1;").unwrap();
    writeln!(w, "    end").unwrap();
    writeln!(w, "    for (i = {}; i >= 0; i = i - 1) if (keep[i]) lo = i[7:0];", lanes - 1).unwrap();
    writeln!(w, "    x = {{data_masked, first ? 32'h0 : register}};").unwrap();
    for j in 0..32 {
        writeln!(w, "    beat[{j}] = ^(x & {});", beat.row_literal(j)).unwrap();
    }
    // Undo the zero bytes fed in for the lanes after the last valid one.
    writeln!(w, "    case (8'd{lanes} - hi)").unwrap();
    writeln!(w, "        8'd0: unwound = beat;").unwrap();
    for t in 1..=lanes {
        let m = unwind_matrix(t);
        writeln!(w, "        8'd{t}: begin").unwrap();
        for j in 0..32 {
            writeln!(w, "            unwound[{j}] = ^(beat & 32'h{:08x});", m.rows[j][0]).unwrap();
        }
        writeln!(w, "        end").unwrap();
    }
    writeln!(w, "        default: unwound = beat;\n    endcase").unwrap();
    // The initial value's share for a message spanning lanes lo..hi of this beat.
    writeln!(w, "    case (hi - lo)").unwrap();
    for n in 0..=lanes {
        writeln!(w, "        8'd{n}: init = 32'h{:08x};", init_term(n)).unwrap();
    }
    writeln!(w, "        default: init = 32'hffffffff;\n    endcase").unwrap();
    writeln!(w, "    if (hi == 8'd0) init = 32'hffffffff;").unwrap();
    writeln!(w, "    register_next = unwound ^ (first ? init : 32'h0);").unwrap();
    writeln!(w, "end").unwrap();
    v
}
