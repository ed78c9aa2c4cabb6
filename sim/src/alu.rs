//! Driver for the `rnic_atomic_alu` model (hdl/src/atomic/alu.rs).
use crate::{Model, Port, SimError};

/// One operation presented to the ALU.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Default)]
pub struct AluOp {
    /// AOpCode: 0x0 FetchAdd, 0x2 CmpSwap, anything else unsupported.
    pub aopcode: u8,
    /// Take the most recent result as the original value instead of `original`.
    pub chain: bool,
    pub original: u64,
    /// Add Data or Swap Data.
    pub data: u64,
    /// Add Mask or Swap Mask.
    pub mask: u64,
    pub compare: u64,
    pub compare_mask: u64,
    pub tag: u16,
}

/// One result leaving the ALU.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct AluResult {
    pub result: u64,
    pub original: u64,
    /// The ALU's own verdict that `result` differs from `original`.
    pub changed: bool,
    pub tag: u16,
    pub unsupported: bool,
}

/// The ALU with its ports resolved; one call to [`AluDriver::cycle`] per clock.
pub struct AluDriver {
    pub model: Model,
    reset: Port,
    in_valid: Port,
    in_aopcode: Port,
    in_chain: Port,
    in_original: Port,
    in_data: Port,
    in_mask: Port,
    in_compare: Port,
    in_compare_mask: Port,
    in_tag: Port,
    out_valid: Port,
    out_result: Port,
    out_original: Port,
    out_changed: Port,
    out_tag: Port,
    out_unsupported: Port,
}

impl AluDriver {
    /// Opens the model and holds it in reset for two cycles.
    pub fn new() -> Result<Self, SimError> {
        let model = Model::new("rnic_atomic_alu")?;
        let p = |n: &str| model.port(n);
        let mut alu = AluDriver {
            reset: p("reset"),
            in_valid: p("in_valid"),
            in_aopcode: p("in_aopcode"),
            in_chain: p("in_chain"),
            in_original: p("in_original"),
            in_data: p("in_data"),
            in_mask: p("in_mask"),
            in_compare: p("in_compare"),
            in_compare_mask: p("in_compare_mask"),
            in_tag: p("in_tag"),
            out_valid: p("out_valid"),
            out_result: p("out_result"),
            out_original: p("out_original"),
            out_changed: p("out_changed"),
            out_tag: p("out_tag"),
            out_unsupported: p("out_unsupported"),
            model,
        };
        alu.model.set_bit(alu.reset, true);
        alu.model.tick();
        alu.model.tick();
        alu.model.set_bit(alu.reset, false);
        Ok(alu)
    }

    /// Presents `op` (or nothing) for one clock cycle and returns the result that was on
    /// the outputs during that cycle, if any.
    pub fn cycle(&mut self, op: Option<AluOp>) -> Option<AluResult> {
        let m = &mut self.model;
        let op_in = op.unwrap_or_default();
        m.set_bit(self.in_valid, op.is_some());
        m.set(self.in_aopcode, u64::from(op_in.aopcode));
        m.set_bit(self.in_chain, op_in.chain);
        m.set(self.in_original, op_in.original);
        m.set(self.in_data, op_in.data);
        m.set(self.in_mask, op_in.mask);
        m.set(self.in_compare, op_in.compare);
        m.set(self.in_compare_mask, op_in.compare_mask);
        m.set(self.in_tag, u64::from(op_in.tag));
        m.eval();
        let out = m.get_bit(self.out_valid).then(|| AluResult {
            result: m.get(self.out_result),
            original: m.get(self.out_original),
            changed: m.get_bit(self.out_changed),
            tag: m.get(self.out_tag) as u16,
            unsupported: m.get_bit(self.out_unsupported),
        });
        m.tick();
        out
    }
}
