//! `host/stream_tx_ring` in Verilator against a Rust reference: random FPDUs (1 to 300
//! octets, random CONN_IDs, random gaps) go into a 512-octet ring whose DMA write engine
//! is played by the bench (random readiness, completions in order after random delays)
//! and whose host takes records at random times. Every request must stay inside the ring
//! and not cross its end, carry exactly its beats with `tlast` on the last, and the
//! records behind `PI` must be exactly the FPDUs sent, in order. A failed write stops
//! the ring without publishing the record it belongs to.
use std::collections::VecDeque;

use rand::rngs::StdRng;
use rand::{Rng, SeedableRng};
use rnic_sim::trace;

mod ring_bench;
use ring_bench::Dut;

const BASE: u64 = 0x0123_4560_0000_0200;
const LOG2: u32 = 9;
const SIZE: usize = 1 << LOG2;
/// The ring's page in the bench (any value: the block compares against it).
const PAGE: u64 = 0x180;

struct Bench {
    dut: Dut,
    rng: StdRng,
    /// The ring as host memory.
    ring: Vec<u8>,
    /// Requests taken (offset, length), their beats still to come.
    requests: VecDeque<(usize, usize)>,
    beat: usize,
    /// Requests whose data is all in, waiting to complete (due cycle).
    completing: VecDeque<u64>,
    /// The host's consumer position, and records it took: (CONN_ID, FPDU).
    ci: u32,
    taken: Vec<(u16, Vec<u8>)>,
    /// The request to answer with an error (counting from 0), if any.
    fail_at: Option<usize>,
    done_count: usize,
}

impl Bench {
    fn new(seed: u64) -> Bench {
        const PORTS: &[&str] = &[
            "s_tx_tdata",
            "s_tx_tkeep",
            "s_tx_tlast",
            "s_tx_tuser",
            "s_tx_tvalid",
            "s_tx_tready",
            "m_tx_tvalid",
            "m_tx_tready",
            "m_wr_req_valid",
            "m_wr_req_ready",
            "m_wr_req_addr",
            "m_wr_req_len",
            "m_wr_tdata",
            "m_wr_tlast",
            "m_wr_tvalid",
            "m_wr_tready",
            "s_wr_done_valid",
            "s_wr_done_error",
        ];
        const QUIET: &[&str] = &["m_wr_req_ready", "m_wr_tready", "s_wr_done_valid", "s_tx_tvalid"];
        let dut = Dut::new("rnic_host_stream_tx_ring", PORTS, PAGE, QUIET);
        let mut b = Bench {
            dut,
            rng: StdRng::seed_from_u64(seed),
            ring: vec![0; SIZE],
            requests: VecDeque::new(),
            beat: 0,
            completing: VecDeque::new(),
            ci: 0,
            taken: Vec::new(),
            fail_at: None,
            done_count: 0,
        };
        b.dut.write_reg(0, BASE as u32);
        b.dut.write_reg(1, (BASE >> 32) as u32);
        b.dut.write_reg(2, LOG2);
        b
    }

    /// The host: takes every record behind PI, then writes CI.
    fn host(&mut self) {
        let pi = self.dut.read_reg(3);
        while self.ci != pi {
            let at = |p: u32| p as usize % SIZE;
            let head: Vec<u8> = (0..8).map(|i| self.ring[at(self.ci + i)]).collect();
            let len = u32::from_le_bytes(head[..4].try_into().unwrap());
            assert!(len > 0 && head[6..8] == [0, 0], "header {head:?}");
            let fpdu = (0..len).map(|i| self.ring[at(self.ci + 8 + i)]).collect();
            self.taken.push((u16::from_le_bytes([head[4], head[5]]), fpdu));
            self.ci += 8 + len.next_multiple_of(8);
            assert!(pi.wrapping_sub(self.ci) < 1 << 31, "a record reaches past PI");
        }
        self.dut.write_reg(4, self.ci);
    }

    /// One cycle of the DMA write engine and the stream source `beat` (if any).
    /// Returns whether the offered beat was taken.
    fn cycle(&mut self, beat: Option<(&[u8], u8, bool, u16)>) -> bool {
        let req_ready = self.rng.gen_bool(0.6);
        // (The engine takes a request's data only once it has the request.)
        let w_ready = self.rng.gen_bool(0.7) && !self.requests.is_empty();
        self.dut.set("m_wr_req_ready", req_ready as u64);
        self.dut.set("m_wr_tready", w_ready as u64);
        self.dut.set("m_tx_tready", 1);
        match beat {
            Some((data, keep, last, conn)) => {
                self.dut.m.set_bytes(self.dut.port("s_tx_tdata"), data);
                self.dut.set("s_tx_tkeep", u64::from(keep));
                self.dut.set("s_tx_tlast", last as u64);
                self.dut.set("s_tx_tuser", u64::from(conn));
                self.dut.set("s_tx_tvalid", 1);
            }
            None => self.dut.set("s_tx_tvalid", 0),
        }
        let cycle = self.dut.m.cycles();
        let done = self.completing.front().is_some_and(|&due| due <= cycle);
        self.dut.set("s_wr_done_valid", done as u64);
        self.dut.set("s_wr_done_error", (done && self.fail_at == Some(self.done_count)) as u64);
        self.dut.m.eval();
        assert_eq!(self.dut.get("m_tx_tvalid"), 0, "nothing to the port while the ring is on");
        if done {
            self.completing.pop_front();
            self.done_count += 1;
        }
        if req_ready && self.dut.get("m_wr_req_valid") == 1 {
            let (addr, len) = (self.dut.get("m_wr_req_addr"), self.dut.get("m_wr_req_len") as usize);
            let off = addr.wrapping_sub(BASE) as usize;
            assert!(off < SIZE && off.is_multiple_of(8) && len % 8 == 0 && len > 0, "request {addr:#x} + {len}");
            assert!(off + len <= SIZE && len <= 256, "request crosses the ring's end or is too long: {off} + {len}");
            self.requests.push_back((off, len));
        }
        if w_ready && self.dut.get("m_wr_tvalid") == 1 {
            let &(off, len) = self.requests.front().expect("data before its request");
            let mut data = [0; 8];
            self.dut.m.get_bytes(self.dut.port("m_wr_tdata"), &mut data);
            self.ring[off + self.beat * 8..off + self.beat * 8 + 8].copy_from_slice(&data);
            self.beat += 1;
            assert_eq!(self.dut.get("m_wr_tlast") == 1, self.beat * 8 == len, "tlast on the request's last beat only");
            if self.beat * 8 == len {
                self.requests.pop_front();
                self.beat = 0;
                let delay = self.rng.gen_range(1..20);
                self.completing.push_back(cycle + delay);
            }
        }
        let taken = beat.is_some() && self.dut.get("s_tx_tready") == 1;
        self.dut.m.tick();
        taken
    }
}

/// Sends `fpdus` through the ring; returns the records the host took.
fn run(seed: u64, fpdus: &[(u16, Vec<u8>)], fail_at: Option<usize>, limit: u64) -> (Bench, usize) {
    let mut b = Bench::new(seed);
    b.fail_at = fail_at;
    let (mut i, mut pos) = (0, 0);
    while b.dut.m.cycles() < limit && (i < fpdus.len() || !b.completing.is_empty() || !b.requests.is_empty()) {
        let gap = b.rng.gen_bool(0.2);
        let offered = (i < fpdus.len() && !gap).then(|| {
            let (conn, f) = &fpdus[i];
            let n = (f.len() - pos).min(8);
            let mut data = [0xa5u8; 8];
            data[..n].copy_from_slice(&f[pos..pos + n]);
            (data, ((1u16 << n) - 1) as u8, pos + n == f.len(), *conn, n)
        });
        let took = b.cycle(offered.as_ref().map(|(d, k, l, c, _)| (&d[..], *k, *l, *c)));
        if let (true, Some((_, _, last, _, n))) = (took, offered) {
            pos += n;
            if last {
                (i, pos) = (i + 1, 0);
            }
        }
        if b.rng.gen_bool(0.05) {
            b.host();
        }
    }
    for _ in 0..50 {
        b.cycle(None);
    }
    b.host();
    (b, i)
}

fn random_fpdus(rng: &mut StdRng, n: usize) -> Vec<(u16, Vec<u8>)> {
    (0..n).map(|_| (rng.gen(), (0..rng.gen_range(1..=300)).map(|_| rng.gen()).collect())).collect()
}

#[test]
fn stream_tx_ring_records_every_fpdu_whole_and_in_order_across_the_ring_end() {
    trace::on_failure("stream_tx_ring_records_every_fpdu_whole_and_in_order_across_the_ring_end", || {
        for seed in 0..4 {
            let fpdus = random_fpdus(&mut StdRng::seed_from_u64(100 + seed), 300);
            let (b, sent) = run(seed, &fpdus, None, 2_000_000);
            assert_eq!(sent, fpdus.len(), "seed {seed}: the ring took every FPDU");
            assert_eq!(b.taken.len(), fpdus.len(), "seed {seed}: records");
            for (k, (got, want)) in b.taken.iter().zip(&fpdus).enumerate() {
                assert_eq!(got, want, "seed {seed}: record {k}");
            }
        }
    });
}

#[test]
fn stream_tx_ring_a_failed_write_stops_it_and_publishes_nothing_after() {
    trace::on_failure("stream_tx_ring_a_failed_write_stops_it_and_publishes_nothing_after", || {
        let fpdus = random_fpdus(&mut StdRng::seed_from_u64(7), 40);
        // Request 30 is in the middle of some record: that record and all after are lost.
        let (mut b, sent) = run(3, &fpdus, Some(30), 200_000);
        assert!(sent < fpdus.len(), "the ring stopped taking FPDUs");
        assert_eq!(b.dut.read_reg(5), 1, "STATUS says stopped");
        assert!(!b.taken.is_empty() && b.taken.len() < sent, "records before the failure only: {}", b.taken.len());
        for (got, want) in b.taken.iter().zip(&fpdus) {
            assert_eq!(got, want);
        }
        // Writing the size restarts it.
        b.dut.write_reg(2, LOG2);
        assert_eq!([b.dut.read_reg(3), b.dut.read_reg(4), b.dut.read_reg(5)], [0, 0, 0]);
    });
}

#[test]
fn stream_tx_ring_off_passes_the_stream_to_the_port() {
    let mut b = Bench::new(1);
    b.dut.write_reg(2, 0);
    b.dut.set("s_tx_tvalid", 1);
    for ready in [0, 1] {
        b.dut.set("m_tx_tready", ready);
        b.dut.m.eval();
        assert_eq!((b.dut.get("m_tx_tvalid"), b.dut.get("s_tx_tready"), b.dut.get("m_wr_req_valid")), (1, ready, 0));
    }
}

/// Seven records of 72 octets (an 8-octet header and 64 octets of FPDU) leave 8 octets
/// free in the 512-octet ring: the eighth FPDU's first beat needs 16 (its header and
/// itself), so it waits, beat untaken, until the host takes records; then everything
/// arrives whole and in order.
#[test]
fn stream_tx_ring_a_first_beat_waits_for_room_for_its_header() {
    trace::on_failure("stream_tx_ring_a_first_beat_waits_for_room_for_its_header", || {
        let fpdus: Vec<(u16, Vec<u8>)> = (0..10u8).map(|k| (u16::from(k) + 0x40, vec![k + 1; 64])).collect();
        let mut b = Bench::new(5);
        let (mut i, mut pos) = (0, 0);
        for cycle in 0..20_000u64 {
            if i == fpdus.len() {
                break;
            }
            let (conn, f) = &fpdus[i];
            let last = pos + 8 == f.len();
            if b.cycle(Some((&f[pos..pos + 8], 0xff, last, *conn))) {
                pos += 8;
                if last {
                    (i, pos) = (i + 1, 0);
                }
            }
            if cycle == 3_000 {
                assert_eq!((i, pos), (7, 0), "FPDUs and octets of the next taken with 8 octets free");
            }
            if cycle > 3_000 && cycle % 50 == 0 {
                b.host();
            }
        }
        for _ in 0..200 {
            b.cycle(None);
        }
        b.host();
        assert_eq!(b.taken, fpdus);
    });
}
