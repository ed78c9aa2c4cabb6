//! `common/fifo` in Verilator (`SmallFifo<73>`: a head register and eight entries of 73
//! bits), against a `VecDeque`. Nearly every queue between engines is one, and its head is
//! a register refilled from the entries or straight from the input, so the cases that
//! matter are the edges: pushing into an empty queue (the word goes straight to the head),
//! popping and pushing in the same cycle, long stretches full and long stretches empty.
//! Random `s_valid`/`m_ready` in changing regimes; every cycle `m_data` must be the
//! reference's oldest entry while `m_valid`, `m_valid` never set on an empty queue and set
//! the cycle after a write, `s_ready` low exactly when nine words are held; no entry lost,
//! duplicated or reordered. A reset in the middle empties the queue.
mod fifo_bench;

use fifo_bench::Shape;

const SHAPE: Shape = Shape { model: "rnic_common_small_fifo", depth: 9, latency: 1, counted: false };

#[test]
fn small_fifo_matches_a_queue_under_random_traffic() {
    fifo_bench::matches_a_queue_under_random_traffic(SHAPE, "small_fifo_matches_a_queue_under_random_traffic");
}

#[test]
fn small_fifo_streams_one_word_per_cycle() {
    fifo_bench::streams_one_word_per_cycle(SHAPE, "small_fifo_streams_one_word_per_cycle");
}

#[test]
fn small_fifo_reset_in_the_middle_empties_it() {
    fifo_bench::reset_in_the_middle_empties_it(SHAPE, "small_fifo_reset_in_the_middle_empties_it");
}
