//! Masked FetchAdd / CmpSwap ALU (RFC 7306 §5.1) on 64-bit operands.
//!
//! One operation per cycle, latency 2: inputs presented with `in_valid` on cycle n are
//! registered at the end of cycle n (stage A) and the results appear registered on the
//! outputs during cycle n+2... precisely: `out_valid` is high during the cycle that follows
//! the second rising edge after the inputs were presented.
//!
//! Masked FetchAdd uses a single 64-bit adder with the carry killed at the mask bits. Each
//! set bit of the Add Mask marks the most significant bit of a field whose carry-out is
//! discarded. Clearing both operands at the mask bits makes the adder's carry stop there
//! (0 + 0 + c never carries), and the sum bit it leaves behind is that carry-in, so the true
//! bit is recovered by XOR with `(original ^ add) & mask`:
//!
//! ```text
//! result = ((original & !mask) + (add & !mask)) ^ ((original ^ add) & mask)
//! ```
//!
//! Chaining: with `in_chain` set, the operation takes the result of the most recent
//! operation (stage B holds it until the next one completes) as its original value instead
//! of `in_original`. That is the hook for same-address forwarding: back-to-back atomics on
//! one word run at one per cycle without waiting for a memory write-back.
use rust_hdl::prelude::*;

/// AOpCode of masked FetchAdd (RFC 7306 Fig. 5).
pub const AOP_FETCH_ADD: u64 = 0x0;
/// AOpCode of masked CmpSwap (RFC 7306 Fig. 5).
pub const AOP_CMP_SWAP: u64 = 0x2;
/// Cycles from an input presented to its result on the outputs.
pub const ALU_LATENCY: usize = 2;

/// The ALU. Tags travel with each operation untouched, so the caller can match results.
#[derive(LogicBlock, Default)]
pub struct AtomicAlu {
    pub clock: Signal<In, Clock>,
    pub reset: Signal<In, Bit>,
    pub in_valid: Signal<In, Bit>,
    /// AOpCode; anything but 0x0 and 0x2 leaves the value unchanged and sets `out_unsupported`.
    pub in_aopcode: Signal<In, Bits<4>>,
    pub in_chain: Signal<In, Bit>,
    pub in_original: Signal<In, Bits<64>>,
    /// Add Data (FetchAdd) or Swap Data (CmpSwap).
    pub in_data: Signal<In, Bits<64>>,
    /// Add Mask (FetchAdd) or Swap Mask (CmpSwap).
    pub in_mask: Signal<In, Bits<64>>,
    pub in_compare: Signal<In, Bits<64>>,
    pub in_compare_mask: Signal<In, Bits<64>>,
    pub in_tag: Signal<In, Bits<16>>,
    pub out_valid: Signal<Out, Bit>,
    /// New value of the target word (to be written back).
    pub out_result: Signal<Out, Bits<64>>,
    /// Value the word held before the operation (returned in the Atomic Response).
    pub out_original: Signal<Out, Bits<64>>,
    /// The result differs from the original value (the word needs writing back), decided
    /// beside the result rather than by comparing the two: a masked FetchAdd changes the
    /// word exactly when its Add Data is not zero (each field adds its own bits of it,
    /// modulo the field), a CmpSwap when it swaps in bits that differ under the Swap Mask.
    pub out_changed: Signal<Out, Bit>,
    pub out_tag: Signal<Out, Bits<16>>,
    pub out_unsupported: Signal<Out, Bit>,
    // Stage A: the operation being computed.
    a_valid: DFF<Bit>,
    a_aopcode: DFF<Bits<4>>,
    a_chain: DFF<Bit>,
    a_original: DFF<Bits<64>>,
    a_data: DFF<Bits<64>>,
    a_mask: DFF<Bits<64>>,
    a_compare: DFF<Bits<64>>,
    a_compare_mask: DFF<Bits<64>>,
    a_tag: DFF<Bits<16>>,
    // Stage B: finished results.
    b_valid: DFF<Bit>,
    b_result: DFF<Bits<64>>,
    b_original: DFF<Bits<64>>,
    b_changed: DFF<Bit>,
    b_tag: DFF<Bits<16>>,
    b_unsupported: DFF<Bit>,
    // Combinational values of stage A, each assigned once.
    original: Signal<Local, Bits<64>>,
    fetch_add: Signal<Local, Bits<64>>,
    compare_equal: Signal<Local, Bit>,
    cmp_swap: Signal<Local, Bits<64>>,
}

impl Logic for AtomicAlu {
    #[hdl_gen]
    fn update(&mut self) {
        dff_setup!(
            self,
            clock,
            a_valid,
            a_aopcode,
            a_chain,
            a_original,
            a_data,
            a_mask,
            a_compare,
            a_compare_mask,
            a_tag,
            b_valid,
            b_result,
            b_original,
            b_changed,
            b_tag,
            b_unsupported
        );
        // Stage A takes a new operation every cycle.
        self.a_valid.d.next = self.in_valid.val();
        self.a_aopcode.d.next = self.in_aopcode.val();
        self.a_chain.d.next = self.in_chain.val();
        self.a_original.d.next = self.in_original.val();
        self.a_data.d.next = self.in_data.val();
        self.a_mask.d.next = self.in_mask.val();
        self.a_compare.d.next = self.in_compare.val();
        self.a_compare_mask.d.next = self.in_compare_mask.val();
        self.a_tag.d.next = self.in_tag.val();

        // The original value: from the request, or forwarded from the previous result.
        self.original.next = self.a_original.q.val();
        if self.a_chain.q.val() {
            self.original.next = self.b_result.q.val();
        }
        self.fetch_add.next = ((self.original.val() & !self.a_mask.q.val())
            + (self.a_data.q.val() & !self.a_mask.q.val()))
            ^ ((self.original.val() ^ self.a_data.q.val()) & self.a_mask.q.val());
        self.compare_equal.next = !((self.a_compare.q.val() ^ self.original.val()) & self.a_compare_mask.q.val()).any();
        self.cmp_swap.next = self.original.val();
        if self.compare_equal.val() {
            self.cmp_swap.next =
                (self.original.val() & !self.a_mask.q.val()) | (self.a_data.q.val() & self.a_mask.q.val());
        }

        self.b_valid.d.next = self.a_valid.q.val();
        self.b_original.d.next = self.original.val();
        self.b_tag.d.next = self.a_tag.q.val();
        self.b_result.d.next = self.original.val();
        self.b_unsupported.d.next = true;
        self.b_changed.d.next = false;
        // AOpCode literals: hdl_gen kernels cannot name Rust constants.
        if self.a_aopcode.q.val() == 0x0 {
            self.b_result.d.next = self.fetch_add.val();
            self.b_unsupported.d.next = false;
            self.b_changed.d.next = self.a_data.q.val().any();
        }
        if self.a_aopcode.q.val() == 0x2 {
            self.b_result.d.next = self.cmp_swap.val();
            self.b_unsupported.d.next = false;
            self.b_changed.d.next =
                self.compare_equal.val() & ((self.original.val() ^ self.a_data.q.val()) & self.a_mask.q.val()).any();
        }
        // A held result stays put between operations: it is the chain source.
        if !self.a_valid.q.val() {
            self.b_result.d.next = self.b_result.q.val();
            self.b_unsupported.d.next = false;
        }

        if self.reset.val() {
            self.a_valid.d.next = false;
            self.b_valid.d.next = false;
        }
        self.out_valid.next = self.b_valid.q.val();
        self.out_result.next = self.b_result.q.val();
        self.out_original.next = self.b_original.q.val();
        self.out_changed.next = self.b_changed.q.val();
        self.out_tag.next = self.b_tag.q.val();
        self.out_unsupported.next = self.b_unsupported.q.val();
    }
}
