//! `common/ram_fifo` in Verilator (`RamFifo<73, 4, 5>`: 16 entries of 73 bits), against a
//! `VecDeque`. The transmit payload buffer and other deep queues are built on it, and its
//! block-RAM read runs a cycle ahead of the pointers, so the cases that matter are the
//! edges: writing into an empty queue, popping and pushing in the same cycle, long
//! stretches full and long stretches empty. Random `s_valid`/`m_ready` in changing
//! regimes; every cycle `m_data` must be the reference's oldest entry while `m_valid`,
//! `m_valid` never set on an empty queue and set two cycles after a write (as documented),
//! `s_ready` low exactly when 16 entries are held, `count` equal to the entries held; no
//! entry lost, duplicated or reordered. A reset in the middle empties the queue.
mod fifo_bench;

use fifo_bench::Shape;

const SHAPE: Shape = Shape { model: "rnic_common_ram_fifo", depth: 16, latency: 2, counted: true };

#[test]
fn ram_fifo_matches_a_queue_under_random_traffic() {
    fifo_bench::matches_a_queue_under_random_traffic(SHAPE, "ram_fifo_matches_a_queue_under_random_traffic");
}

#[test]
fn ram_fifo_streams_one_word_per_cycle() {
    fifo_bench::streams_one_word_per_cycle(SHAPE, "ram_fifo_streams_one_word_per_cycle");
}

#[test]
fn ram_fifo_reset_in_the_middle_empties_it() {
    fifo_bench::reset_in_the_middle_empties_it(SHAPE, "ram_fifo_reset_in_the_middle_empties_it");
}
