//! `host/stream_rx_ring` in Verilator against a Rust reference: a host writes random
//! records (1 to 300 octets, random QP numbers) into a 512-octet ring as room allows, the
//! bench plays the DMA read engine (random readiness and latency, data in request order)
//! and the RNIC side takes the stream with random readiness. Every request must stay inside
//! the ring, not cross its end, and read only what the host published and the ring has
//! not handed back; the packets must be exactly the records, in order, with `tkeep` and
//! `tlast` right. A bad record stops the ring before anything past it is read.
use std::collections::VecDeque;

use rand::rngs::StdRng;
use rand::{Rng, SeedableRng};
use rnic_sim::trace;

mod ring_bench;
use ring_bench::Dut;

const BASE: u64 = 0x00ab_cdef_0000_1000;
const LOG2: u32 = 9;
const SIZE: usize = 1 << LOG2;
const PAGE: u64 = 0x181;

struct Bench {
    dut: Dut,
    rng: StdRng,
    ring: Vec<u8>,
    /// The host's producer position, and the device's CI as last read.
    pi: u32,
    ci: u32,
    /// Read requests taken: their octets (copied when asked) and the cycle they may start.
    reads: VecDeque<(Vec<u8>, u64)>,
    /// Octets of the head request delivered so far.
    sent: usize,
    /// Packets out: (QP, octets), and the one being received.
    packets: Vec<(u16, Vec<u8>)>,
    partial: Vec<u8>,
    partial_qp: Option<u16>,
}

impl Bench {
    fn new(seed: u64) -> Bench {
        const PORTS: &[&str] = &[
            "s_rx_tvalid",
            "s_rx_tready",
            "m_rx_tdata",
            "m_rx_tkeep",
            "m_rx_tlast",
            "m_rx_tuser",
            "m_rx_tvalid",
            "m_rx_tready",
            "m_rd_req_valid",
            "m_rd_req_ready",
            "m_rd_req_addr",
            "m_rd_req_len",
            "s_rd_tdata",
            "s_rd_terror",
            "s_rd_tvalid",
            "s_rd_tready",
        ];
        const QUIET: &[&str] = &["m_rd_req_ready", "s_rd_tvalid", "m_rx_tready"];
        let dut = Dut::new("rnic_host_stream_rx_ring", PORTS, PAGE, QUIET);
        let mut b = Bench {
            dut,
            rng: StdRng::seed_from_u64(seed),
            ring: vec![0xcc; SIZE],
            pi: 0,
            ci: 0,
            reads: VecDeque::new(),
            sent: 0,
            packets: Vec::new(),
            partial: Vec::new(),
            partial_qp: None,
        };
        b.dut.write_reg(0, BASE as u32);
        b.dut.write_reg(1, (BASE >> 32) as u32);
        b.dut.write_reg(2, LOG2);
        b
    }

    /// Writes a record (header as given) if the ring has room; publishes it.
    fn push(&mut self, header_len: u32, qpn: u16, fpdu: &[u8]) -> bool {
        let need = 8 + fpdu.len().next_multiple_of(8);
        self.ci = self.dut.read_reg(4);
        if self.pi.wrapping_sub(self.ci) as usize + need > SIZE {
            return false;
        }
        let mut rec = header_len.to_le_bytes().to_vec();
        rec.extend(qpn.to_le_bytes());
        rec.extend([0, 0]);
        rec.extend(fpdu);
        rec.resize(need, 0x5a);
        for (i, &o) in rec.iter().enumerate() {
            self.ring[(self.pi as usize + i) % SIZE] = o;
        }
        self.pi += need as u32;
        self.dut.write_reg(3, self.pi);
        true
    }

    fn cycle(&mut self) {
        let req_ready = self.rng.gen_bool(0.6);
        let out_ready = self.rng.gen_bool(0.7);
        self.dut.set("m_rd_req_ready", req_ready as u64);
        self.dut.set("m_rx_tready", out_ready as u64);
        self.dut.set("s_rx_tvalid", 1);
        let cycle = self.dut.m.cycles();
        let due = self.reads.front().is_some_and(|r| r.1 <= cycle) && self.rng.gen_bool(0.8);
        self.dut.set("s_rd_tvalid", due as u64);
        self.dut.set("s_rd_terror", 0);
        if due {
            let beat = self.reads[0].0[self.sent..self.sent + 8].to_vec();
            self.dut.m.set_bytes(self.dut.port("s_rd_tdata"), &beat);
        }
        self.dut.m.eval();
        assert_eq!(self.dut.get("s_rx_tready"), 0, "the port is held while the ring is on");
        if due {
            assert_eq!(self.dut.get("s_rd_tready"), 1, "the ring takes its data at full rate");
            self.sent += 8;
            if self.sent == self.reads[0].0.len() {
                self.reads.pop_front();
                self.sent = 0;
            }
        }
        if req_ready && self.dut.get("m_rd_req_valid") == 1 {
            let (addr, len) = (self.dut.get("m_rd_req_addr"), self.dut.get("m_rd_req_len") as usize);
            let off = addr.wrapping_sub(BASE) as usize;
            assert!(off < SIZE && off.is_multiple_of(8) && len % 8 == 0 && len > 0, "request {addr:#x} + {len}");
            assert!(off + len <= SIZE && len <= 256, "request crosses the ring's end or is too long: {off} + {len}");
            // Only what lies between the ring's CI and the host's PI.
            let ci = self.dut.read_reg(4);
            let from_ci = (off + SIZE - ci as usize % SIZE) % SIZE;
            assert!(
                from_ci + len <= self.pi.wrapping_sub(ci) as usize,
                "read past PI: {off}+{len}, CI {ci}, PI {}",
                self.pi
            );
            let data = self.ring[off..off + len].to_vec();
            let delay = self.rng.gen_range(2..25);
            self.reads.push_back((data, cycle + delay));
        }
        if out_ready && self.dut.get("m_rx_tvalid") == 1 {
            let mut data = [0; 8];
            self.dut.m.get_bytes(self.dut.port("m_rx_tdata"), &mut data);
            let keep = self.dut.get("m_rx_tkeep");
            let qp = self.dut.get("m_rx_tuser") as u16;
            assert_eq!(*self.partial_qp.get_or_insert(qp), qp, "one QP over a packet");
            let last = self.dut.get("m_rx_tlast") == 1;
            assert!(keep == 0xff || (last && keep.count_ones() < 8 && (keep + 1).is_power_of_two()), "keep {keep:#x}");
            self.partial.extend(data.iter().take(keep.count_ones() as usize));
            if last {
                self.packets.push((qp, std::mem::take(&mut self.partial)));
                self.partial_qp = None;
            }
        }
        self.dut.m.tick();
    }
}

#[test]
fn stream_rx_ring_reads_every_record_whole_in_order_and_nothing_unpublished() {
    trace::on_failure("stream_rx_ring_reads_every_record_whole_in_order_and_nothing_unpublished", || {
        for seed in 0..4 {
            let mut rng = StdRng::seed_from_u64(200 + seed);
            let records: Vec<(u16, Vec<u8>)> =
                (0..300).map(|_| (rng.gen(), (0..rng.gen_range(1..=300)).map(|_| rng.gen()).collect())).collect();
            let mut b = Bench::new(seed);
            let mut next = 0;
            while b.packets.len() < records.len() && b.dut.m.cycles() < 2_000_000 {
                if next < records.len() && b.rng.gen_bool(0.1) {
                    let (qp, f) = &records[next];
                    if b.push(f.len() as u32, *qp, f) {
                        next += 1;
                    }
                }
                b.cycle();
            }
            assert_eq!(b.packets, records, "seed {seed}");
            assert_eq!((b.dut.read_reg(4), b.dut.read_reg(5)), (b.pi, 0), "seed {seed}: all handed back, not stopped");
        }
    });
}

#[test]
fn stream_rx_ring_a_bad_record_stops_it_after_the_good_ones() {
    trace::on_failure("stream_rx_ring_a_bad_record_stops_it_after_the_good_ones", || {
        // Length 0, a length past PI, and (with the same check) a length past the ring.
        for bad_len in [0u32, 200, 4096] {
            let mut b = Bench::new(u64::from(bad_len));
            assert!(b.push(40, 1, &[1; 40]));
            assert!(b.push(bad_len, 2, &[2; 100]));
            assert!(b.push(16, 3, &[3; 16]));
            for _ in 0..2_000 {
                b.cycle();
            }
            assert_eq!(b.packets, [(1, vec![1; 40])], "length {bad_len}: the record before it only");
            assert_eq!(
                (b.dut.read_reg(4), b.dut.read_reg(5)),
                (48, 1),
                "length {bad_len}: CI stops before it, STATUS set"
            );
            b.dut.write_reg(2, LOG2);
            assert_eq!([b.dut.read_reg(3), b.dut.read_reg(4), b.dut.read_reg(5)], [0, 0, 0], "restarted");
        }
    });
}

#[test]
fn stream_rx_ring_off_passes_the_port_through() {
    let mut b = Bench::new(1);
    b.dut.write_reg(2, 0);
    b.dut.set("s_rx_tvalid", 1);
    for ready in [0, 1] {
        b.dut.set("m_rx_tready", ready);
        b.dut.m.eval();
        assert_eq!((b.dut.get("m_rx_tvalid"), b.dut.get("s_rx_tready"), b.dut.get("m_rd_req_valid")), (1, ready, 0));
    }
}

#[test]
fn stream_rx_ring_a_restart_forgets_what_was_published() {
    let mut b = Bench::new(3);
    // A record published while the engine takes no request: its header is asked for.
    assert!(b.push(16, 1, &[1; 16]));
    b.dut.set("m_rd_req_ready", 0);
    for _ in 0..4 {
        b.dut.m.tick();
    }
    b.dut.m.eval();
    assert_eq!(b.dut.get("m_rd_req_valid"), 1, "the published header is asked for");
    // The ring restarted: nothing is published, nothing may be asked for (the engine still
    // takes no request, so one asked for would stay offered).
    b.dut.write_reg(2, LOG2);
    for cycle in 0..8 {
        b.dut.m.eval();
        assert_eq!(b.dut.get("m_rd_req_valid"), 0, "a read {cycle} cycles after the restart");
        b.dut.m.tick();
    }
}
