//! `common/skid_buffer` in Verilator (`SkidBuffer<72>`), against a queue of at most two
//! words (`queue_bench`): every cycle `m_valid` exactly when a word is held, `m_data` the
//! oldest, `s_ready` exactly when fewer than two are held, and `s_ready` the same whatever
//! `s_valid` and `m_ready` are in that cycle (it is a register: nothing combinational
//! crosses the slice). Random `s_valid`/`m_ready` in changing regimes; no word lost,
//! duplicated or reordered; one word per cycle when both sides stream; a reset in the
//! middle empties it.
mod queue_bench;

use queue_bench::{random_traffic, Bench};
use rnic_sim::trace;

const DESIGN: &str = "rnic_common_skid_buffer";
/// Words the slice holds at most: the output word and the skid word.
const HOLD: usize = 2;

#[test]
fn skid_buffer_matches_a_queue_of_two_under_random_traffic() {
    trace::on_failure("skid_buffer_matches_a_queue_of_two_under_random_traffic", || random_traffic(DESIGN, 72, HOLD));
}

#[test]
fn skid_buffer_streams_one_word_per_cycle_and_resets_empty() {
    trace::on_failure("skid_buffer_streams_one_word_per_cycle_and_resets_empty", || {
        let mut b = Bench::new(DESIGN, 72, HOLD, 7);
        for i in 0..1_000 {
            let (push, pop) = b.cycle(1.0, 1.0);
            assert!(push, "cycle {i}: a word refused while streaming");
            assert_eq!(pop, i >= 1, "cycle {i}: one word out per cycle once streaming");
        }
        // Stalled: it takes two words, then refuses; released, both come out in order.
        let (in1, _) = b.cycle(1.0, 0.0);
        let (in2, _) = b.cycle(1.0, 0.0);
        let (in3, _) = b.cycle(1.0, 0.0);
        assert!(in1 && !in2 && !in3, "holding a stalled word, it takes one more and refuses the next");
        // Full, then reset: nothing is offered afterwards.
        b.reset();
    });
}
