//! `common/bit_fifo` in Verilator (`BitFifo<32>`), against a queue of at most 32
//! bits (`queue_bench`: every output checked every cycle, `s_ready` and `m_valid`
//! registers). Random `s_valid`/`m_ready` in changing regimes, filling it and draining it;
//! no bit lost, duplicated or reordered; one bit per cycle when both sides stream, a bit
//! pushed into the empty queue is out the next cycle; a reset in the middle empties it.
mod queue_bench;

use queue_bench::{random_traffic, Bench};
use rnic_sim::trace;

const DESIGN: &str = "rnic_common_bit_fifo";
/// Bits the queue holds at most.
const HOLD: usize = 32;

#[test]
fn bit_fifo_matches_a_queue_of_32_under_random_traffic() {
    trace::on_failure("bit_fifo_matches_a_queue_of_32_under_random_traffic", || random_traffic(DESIGN, 1, HOLD));
}

#[test]
fn bit_fifo_streams_one_bit_per_cycle_and_resets_empty() {
    trace::on_failure("bit_fifo_streams_one_bit_per_cycle_and_resets_empty", || {
        let mut b = Bench::new(DESIGN, 1, HOLD, 7);
        for i in 0..1_000 {
            let (push, pop) = b.cycle(1.0, 1.0);
            assert!(push, "cycle {i}: a bit refused while streaming");
            assert_eq!(
                pop,
                i >= 1,
                "cycle {i}: one bit out per cycle once streaming, the first a cycle after its push"
            );
        }
        // Stalled: it takes bits until it holds 32, then refuses.
        let taken = (0..HOLD + 4).filter(|_| b.cycle(1.0, 0.0).0).count();
        assert_eq!(b.queue.len(), HOLD, "stalled, it fills to {HOLD} bits ({taken} more taken)");
        b.reset();
    });
}
