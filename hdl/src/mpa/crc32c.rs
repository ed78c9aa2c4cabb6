//! CRC32c over K byte lanes per cycle with byte-valid (RFC 5044 §4.4, the iSCSI CRC),
//! pipelined so that only a 32 x 32 XOR network sits in the one-cycle feedback loop.
//!
//! The update of the CRC register over a beat is linear, `R' = A^K R + D x` (A: the register
//! step for one zero byte, D x: the data's contribution), so the pipeline splits it:
//!
//! ```text
//!  A: inputs registered
//!  B: D x over the valid lanes, the initial value's share, the tail length   (no feedback)
//!  loop: R' = first ? init ^ Dx : A^K R ^ Dx                                   (32 x 32 network)
//!  C: a message's last beat: R' before the tail is undone
//!  D: A^-t R' for every possible tail t (trailing invalid lanes fed as zeros are undone)
//!  E: the one for this tail, inverted: the CRC
//! ```
//!
//! The matrices are computed in Rust when the Verilog is generated ([`super::crc_matrix`]).
//! Everything advances on `ce` and holds when it is low, so a consumer can run its data
//! through a [`crate::common::Pipe`] of [`CRC_LATENCY`] stages beside this unit and find
//! each message's CRC on `m_crc` (with `m_valid`) when its last beat comes out.
//!
//! Beats: valid lanes contiguous. A message's first beat (`s_first`) may start at any lane;
//! every beat but the last (`s_last`) must run to the last lane — or, when the unit is
//! built with `SHORT = true`, may stop one word (4 lanes) short of it, which the MPA
//! receiver needs because a beat there covers a marker or not; the last beat may end
//! anywhere or be empty. Empty beats inside a message are ignored.
use std::fmt::Write as _;

use rust_hdl::prelude::*;

use super::crc_matrix::{advance, data_matrix, init_term, unwind_matrix, zero_bytes_matrix};

/// Enabled clock edges from a message's last beat at the input to its CRC at the output.
pub const CRC_LATENCY: usize = 5;

/// The CRC unit. `D` = data bits, `K` = byte lanes (`D = 8 K`); `SHORT` allows middle
/// beats one word short of full.
#[derive(LogicBlock, Default)]
pub struct Crc32c<const D: usize, const K: usize, const SHORT: bool> {
    pub clock: Signal<In, Clock>,
    pub reset: Signal<In, Bit>,
    /// Advance the pipeline; everything holds while low.
    pub ce: Signal<In, Bit>,
    pub s_valid: Signal<In, Bit>,
    pub s_first: Signal<In, Bit>,
    pub s_last: Signal<In, Bit>,
    pub s_data: Signal<In, Bits<D>>,
    pub s_keep: Signal<In, Bits<K>>,
    /// The CRC32c value of a message, `CRC_LATENCY` enabled edges after its last beat.
    pub m_valid: Signal<Out, Bit>,
    pub m_crc: Signal<Out, Bits<32>>,
    a_valid: DFF<Bit>,
    a_first: DFF<Bit>,
    a_last: DFF<Bit>,
    a_data: DFF<Bits<D>>,
    a_keep: DFF<Bits<K>>,
    beat: CrcBeat<D, K, SHORT>,
    b_valid: DFF<Bit>,
    b_first: DFF<Bit>,
    b_last: DFF<Bit>,
    b_empty: DFF<Bit>,
    b_short: DFF<Bit>,
    b_data: DFF<Bits<32>>,
    b_init: DFF<Bits<32>>,
    b_tail: DFF<Bits<8>>,
    step: CrcStep<K, SHORT>,
    register: DFF<Bits<32>>,
    c_valid: DFF<Bit>,
    c_value: DFF<Bits<32>>,
    c_tail: DFF<Bits<8>>,
    unwind: CrcUnwind<K>,
    d_valid: DFF<Bit>,
    e_valid: DFF<Bit>,
    e_crc: DFF<Bits<32>>,
}

impl<const D: usize, const K: usize, const SHORT: bool> Logic for Crc32c<D, K, SHORT> {
    #[hdl_gen]
    fn update(&mut self) {
        dff_setup!(
            self, clock, a_valid, a_first, a_last, a_data, a_keep, b_valid, b_first, b_last, b_empty, b_short, b_data,
            b_init, b_tail, register, c_valid, c_value, c_tail, d_valid, e_valid, e_crc
        );
        self.beat.valid.next = self.a_valid.q.val();
        self.beat.data.next = self.a_data.q.val();
        self.beat.keep.next = self.a_keep.q.val();
        self.beat.last.next = self.a_last.q.val();
        self.step.valid.next = self.b_valid.q.val();
        self.step.register.next = self.register.q.val();
        self.step.data.next = self.b_data.q.val();
        self.step.init.next = self.b_init.q.val();
        self.step.first.next = self.b_first.q.val();
        self.step.short.next = self.b_short.q.val();
        self.unwind.clock.next = self.clock.val();
        self.unwind.ce.next = self.ce.val();
        self.unwind.load.next = self.c_valid.q.val();
        self.unwind.value.next = self.c_value.q.val();
        self.unwind.tail.next = self.c_tail.q.val();
        if self.ce.val() {
            self.a_valid.d.next = self.s_valid.val();
            self.a_first.d.next = self.s_first.val();
            self.a_last.d.next = self.s_last.val();
            self.a_data.d.next = self.s_data.val();
            self.a_keep.d.next = self.s_keep.val();

            self.b_valid.d.next = self.a_valid.q.val();
            self.b_first.d.next = self.a_first.q.val();
            self.b_last.d.next = self.a_last.q.val();
            self.b_empty.d.next = self.beat.empty.val();
            self.b_short.d.next = self.beat.short.val();
            self.b_data.d.next = self.beat.contribution.val();
            self.b_init.d.next = self.beat.init.val();
            self.b_tail.d.next = self.beat.tail.val();

            // The register follows the message beat by beat up to its last beat, which
            // goes on to have its tail undone instead.
            if self.b_valid.q.val() & !self.b_last.q.val() {
                if !self.b_empty.q.val() {
                    self.register.d.next = self.step.register_next.val();
                } else if self.b_first.q.val() {
                    self.register.d.next = 0xFFFF_FFFF_u64.into();
                }
            }
            self.c_valid.d.next = self.b_valid.q.val() & self.b_last.q.val();
            self.c_value.d.next = self.step.register_next.val();
            self.c_tail.d.next = self.b_tail.q.val();

            self.d_valid.d.next = self.c_valid.q.val();
            self.e_valid.d.next = self.d_valid.q.val();
            self.e_crc.d.next = !self.unwind.unwound.val();
        }
        if self.reset.val() {
            self.a_valid.d.next = false;
            self.b_valid.d.next = false;
            self.c_valid.d.next = false;
            self.d_valid.d.next = false;
            self.e_valid.d.next = false;
        }
        self.m_valid.next = self.e_valid.q.val();
        self.m_crc.next = self.e_crc.q.val();
    }
}

/// Stage B's network: a beat's data contribution `D x` over its `n` lanes (invalid lanes
/// as zeros), the initial value's share `A^(n-lo) 0xFFFFFFFF` for a message starting at
/// lane `lo`, and the number of trailing invalid lanes, where `n` is `K`, or `K - 4` for a
/// short middle beat (with `SHORT`). An empty beat counts as lanes 0..0. Without `valid`
/// the outputs are zero and `empty` is set: the network is evaluated only for real beats,
/// which is what a simulator spends its time on.
#[derive(LogicBlock, Default)]
pub struct CrcBeat<const D: usize, const K: usize, const SHORT: bool> {
    pub valid: Signal<In, Bit>,
    pub data: Signal<In, Bits<D>>,
    pub keep: Signal<In, Bits<K>>,
    pub last: Signal<In, Bit>,
    pub contribution: Signal<Out, Bits<32>>,
    pub init: Signal<Out, Bits<32>>,
    pub tail: Signal<Out, Bits<8>>,
    pub empty: Signal<Out, Bit>,
    pub short: Signal<Out, Bit>,
}

/// The loop network: `first ? init ^ data : A^n register ^ data`, `n` as for [`CrcBeat`];
/// zero without `valid`.
#[derive(LogicBlock, Default)]
pub struct CrcStep<const K: usize, const SHORT: bool> {
    pub valid: Signal<In, Bit>,
    pub register: Signal<In, Bits<32>>,
    pub data: Signal<In, Bits<32>>,
    pub init: Signal<In, Bits<32>>,
    pub first: Signal<In, Bit>,
    pub short: Signal<In, Bit>,
    pub register_next: Signal<Out, Bits<32>>,
}

/// `A^-tail value`, one enabled edge later: every candidate is registered, then the one
/// for the registered tail is selected. Only an edge with `load` takes a new value (a
/// message's last beat): the 288 parities are computed once per message, not per cycle,
/// which is what a simulator spends its time on.
#[derive(LogicBlock, Default)]
pub struct CrcUnwind<const K: usize> {
    pub clock: Signal<In, Clock>,
    pub ce: Signal<In, Bit>,
    pub load: Signal<In, Bit>,
    pub value: Signal<In, Bits<32>>,
    pub tail: Signal<In, Bits<8>>,
    pub unwound: Signal<Out, Bits<32>>,
    // Models the registered candidates for rust-hdl's simulator.
    held_value: Signal<Local, Bits<32>>,
    held_tail: Signal<Local, Bits<8>>,
}

/// Valid lanes `lo..hi` of a keep mask (0..0 when empty).
fn lane_range<const K: usize>(keep: Bits<K>) -> (usize, usize) {
    let valid: Vec<usize> = (0..K).filter(|&i| keep.get_bit(i)).collect();
    match (valid.first(), valid.last()) {
        (Some(&lo), Some(&hi)) => (lo, hi + 1),
        _ => (0, 0),
    }
}

fn word(v: u32) -> Bits<32> {
    u64::from(v).into()
}

impl<const D: usize, const K: usize, const SHORT: bool> Logic for CrcBeat<D, K, SHORT> {
    fn update(&mut self) {
        if !self.valid.val() {
            self.contribution.next = 0.into();
            self.init.next = 0.into();
            self.tail.next = 0.into();
            self.empty.next = true;
            self.short.next = false;
            return;
        }
        let (lo, hi) = lane_range(self.keep.val());
        let short = SHORT && !self.last.val() && hi == K - 4;
        let n = if short { K - 4 } else { K };
        let data = self.data.val();
        let bytes: Vec<u8> =
            (0..n).map(|i| if (lo..hi).contains(&i) { data.get_bits::<8>(8 * i).to_u8() } else { 0 }).collect();
        self.contribution.next = word(advance(0, &bytes));
        self.init.next = word(init_term(n - lo.min(n)));
        self.tail.next = ((K - hi) as u64).into();
        self.empty.next = hi == 0;
        self.short.next = short;
    }

    fn connect(&mut self) {
        self.contribution.connect();
        self.init.connect();
        self.tail.connect();
        self.empty.connect();
        self.short.connect();
    }

    fn hdl(&self) -> Verilog {
        Verilog::Custom(beat_verilog(K, SHORT))
    }
}

impl<const K: usize, const SHORT: bool> Logic for CrcStep<K, SHORT> {
    fn update(&mut self) {
        if !self.valid.val() {
            self.register_next.next = 0.into();
            return;
        }
        let n = if self.short.val() { K - 4 } else { K };
        let next = if self.first.val() {
            self.init.val().to_u32()
        } else {
            advance(self.register.val().to_u32(), &vec![0u8; n])
        };
        self.register_next.next = word(next ^ self.data.val().to_u32());
    }

    fn connect(&mut self) {
        self.register_next.connect();
    }

    fn hdl(&self) -> Verilog {
        let full = zero_bytes_matrix(K);
        let mut v = String::from("// A^K (and A^(K-4) for short beats), computed by hdl/src/mpa/crc_matrix.rs.\n");
        v.push_str("always @(*) begin\n    register_next = 32'h0;\n    if (valid) begin\n");
        for j in 0..32 {
            let stepped = if SHORT {
                let short = zero_bytes_matrix(K - 4);
                format!(
                    "(short ? ^(register & 32'h{:08x}) : ^(register & 32'h{:08x}))",
                    short.rows[j][0], full.rows[j][0]
                )
            } else {
                format!("^(register & 32'h{:08x})", full.rows[j][0])
            };
            writeln!(v, "        register_next[{j}] = first ? (init[{j}] ^ data[{j}]) : ({stepped} ^ data[{j}]);")
                .unwrap();
        }
        v.push_str("    end\nend\n");
        Verilog::Custom(v)
    }
}

impl<const K: usize> Logic for CrcUnwind<K> {
    fn update(&mut self) {
        if self.clock.pos_edge() && self.ce.val() && self.load.val() {
            self.held_value.next = self.value.val();
            self.held_tail.next = self.tail.val();
        }
        let t = self.held_tail.val().index();
        let m = unwind_matrix(t.min(K));
        self.unwound.next = word(m.apply(&[u64::from(self.held_value.val().to_u32())]));
    }

    fn connect(&mut self) {
        self.unwound.connect();
        self.held_value.connect();
        self.held_tail.connect();
    }

    fn hdl(&self) -> Verilog {
        Verilog::Custom(unwind_verilog(K))
    }
}

/// Stage B's network for `lanes` byte lanes, with short middle beats if `short`.
fn beat_verilog(lanes: usize, short: bool) -> String {
    let bits = 8 * lanes;
    let data = data_matrix(lanes);
    let mut v = String::new();
    let w = &mut v;
    writeln!(w, "// Data columns of the {lanes}-lane beat matrix, computed by hdl/src/mpa/crc_matrix.rs.").unwrap();
    writeln!(w, "reg [{}:0] masked;\nreg [7:0] lo;\nreg [7:0] hi;\ninteger i;", bits - 1).unwrap();
    writeln!(w, "reg [31:0] full_data;\nreg [31:0] short_data;").unwrap();
    writeln!(w, "always @(*) begin").unwrap();
    writeln!(
        w,
        "    hi = 8'd0;\n    lo = 8'd0;\n    masked = {bits}'d0;\n    full_data = 32'h0;\n    short_data = 32'h0;"
    )
    .unwrap();
    // The loop index too, so that it is assigned on every path (else synthesis infers a latch).
    writeln!(w, "    contribution = 32'h0;\n    init = 32'h0;\n    short = 1'b0;\n    i = 0;").unwrap();
    writeln!(w, "    if (valid) begin").unwrap();
    writeln!(w, "    for (i = 0; i < {lanes}; i = i + 1) begin").unwrap();
    writeln!(w, "        masked[8*i +: 8] = keep[i] ? data[8*i +: 8] : 8'h00;").unwrap();
    writeln!(w, "        if (keep[i]) hi = i[7:0] + 8'd1;").unwrap();
    writeln!(w, "    end").unwrap();
    writeln!(w, "    for (i = {}; i >= 0; i = i - 1) if (keep[i]) lo = i[7:0];", lanes - 1).unwrap();
    for j in 0..32 {
        writeln!(w, "    full_data[{j}] = ^(masked & {});", data.row_literal(j)).unwrap();
    }
    if short {
        // A short beat's contribution is the full one with its four trailing zero bytes
        // undone: A^-4 D, applied as one matrix so both run side by side.
        let short_data = data.then(&unwind_matrix(4));
        for j in 0..32 {
            writeln!(w, "    short_data[{j}] = ^(masked & {});", short_data.row_literal(j)).unwrap();
        }
        writeln!(w, "    short = ~last & (hi == 8'd{});", lanes - 4).unwrap();
    } else {
        writeln!(w, "    short_data = full_data;\n    short = 1'b0;").unwrap();
    }
    writeln!(w, "    contribution = short ? short_data : full_data;").unwrap();
    writeln!(w, "    case (lo)").unwrap();
    for lo in 0..lanes {
        let n = if short && lo < lanes - 4 {
            format!("short ? 32'h{:08x} : ", init_term(lanes - 4 - lo))
        } else {
            String::new()
        };
        writeln!(w, "        8'd{lo}: init = {n}32'h{:08x};", init_term(lanes - lo)).unwrap();
    }
    writeln!(w, "        default: init = 32'h{:08x};\n    endcase", init_term(lanes)).unwrap();
    writeln!(w, "    end").unwrap();
    writeln!(w, "    tail = valid ? 8'd{lanes} - hi : 8'd0;\n    empty = ~valid | (hi == 8'd0);\nend").unwrap();
    v
}

/// The unwind stage for `lanes` byte lanes.
fn unwind_verilog(lanes: usize) -> String {
    let mut v = String::new();
    let w = &mut v;
    writeln!(w, "// A^-t for t = 0..{lanes}, computed by hdl/src/mpa/crc_matrix.rs.").unwrap();
    for t in 0..=lanes {
        writeln!(w, "reg [31:0] candidate_{t};").unwrap();
    }
    // `held_tail` and `held_value` are declared by rust-hdl (the block's local signals).
    writeln!(w, "always @(posedge clock) if (ce & load) begin").unwrap();
    writeln!(w, "    held_tail <= tail;\n    held_value <= value;").unwrap();
    for t in 0..=lanes {
        let m = unwind_matrix(t);
        for j in 0..32 {
            writeln!(w, "    candidate_{t}[{j}] <= ^(value & 32'h{:08x});", m.rows[j][0]).unwrap();
        }
    }
    writeln!(w, "end").unwrap();
    writeln!(w, "always @(*) begin\n    case (held_tail)").unwrap();
    for t in 0..=lanes {
        writeln!(w, "        8'd{t}: unwound = candidate_{t};").unwrap();
    }
    writeln!(w, "        default: unwound = held_value;\n    endcase\nend").unwrap();
    v
}
