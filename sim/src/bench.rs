//! Cycle-count measurements of the blocks, shared by the `bench-blocks` and `demo`
//! programs. Every figure is counted in simulated clock cycles with streams at full rate
//! (source always valid, sink always ready), so it is the hardware's throughput, not the
//! simulator's; only `cycles_per_second` is a wall-clock figure.
use std::time::Instant;

use rand::rngs::StdRng;
use rand::SeedableRng;
use rnic_proto::mpa::{Framer, FramingConfig};

use crate::alu::{AluDriver, AluOp};
use crate::atomic_unit::{AtomicUnitDriver, Pressure, UnitOp};
use crate::crc::CrcDriver;
use crate::mpa::{MpaRxDriver, MpaTxDriver};
use crate::SimError;

/// Throughput of one run through a block.
#[derive(Clone, Copy, Debug)]
pub struct Throughput {
    /// ULPDU (payload) octets moved.
    pub bytes: u64,
    /// Cycles from the first input beat taken to the last output beat sent.
    pub cycles: u64,
    /// Simulated cycles per wall-clock second, harness included.
    pub cycles_per_second: f64,
}

impl Throughput {
    pub fn bytes_per_cycle(&self) -> f64 {
        self.bytes as f64 / self.cycles as f64
    }
}

/// How many ULPDUs of `size` octets make a run long enough to reach steady state.
pub fn ulpdus_for(size: usize) -> usize {
    (512 * 1024 / size.max(1)).clamp(64, 4096)
}

/// Sends `count` ULPDUs of `size` octets back to back through the framer.
pub fn mpa_tx(lanes: usize, cfg: FramingConfig, size: usize, count: usize) -> Result<Throughput, SimError> {
    let mut tx = MpaTxDriver::new(lanes, cfg)?;
    let mut rng = StdRng::seed_from_u64(1);
    let ulpdu: Vec<u8> = (0..size).map(|i| i as u8).collect();
    for _ in 0..count {
        tx.send(&ulpdu);
    }
    let limit = 100 * (count * size) as u64 / lanes as u64 + 10_000;
    measure((count * size) as u64, count, limit, || {
        let before = tx.source.beats;
        tx.cycle(&mut rng);
        (tx.source.beats > before, std::iter::from_fn(|| tx.sink.pop_packet()).count())
    })
}

/// Sends `count` FPDUs carrying ULPDUs of `size` octets, in whole beats, through the
/// deframer.
pub fn mpa_rx(lanes: usize, cfg: FramingConfig, size: usize, count: usize) -> Result<Throughput, SimError> {
    let mut rx = MpaRxDriver::new(lanes, cfg)?;
    let mut rng = StdRng::seed_from_u64(1);
    let ulpdu: Vec<u8> = (0..size).map(|i| i as u8).collect();
    let mut framer = Framer::new(cfg);
    let fpdus: Vec<Vec<u8>> = (0..count)
        .map(|_| {
            let mut fpdu = Vec::new();
            framer.frame(&ulpdu, &mut fpdu).expect("ULPDU fits");
            fpdu
        })
        .collect();
    rx.push_fpdus(&fpdus, || lanes);
    let octets: usize = fpdus.iter().map(Vec::len).sum();
    let limit = 100 * octets as u64 / lanes as u64 + 10_000;
    measure((count * size) as u64, count, limit, || {
        let before = rx.source.beats;
        rx.cycle(&mut rng);
        let packets = std::iter::from_fn(|| rx.sink.pop_packet())
            .inspect(|p| assert_eq!(p.user(), 0, "deframer flagged a good FPDU"))
            .count();
        (rx.source.beats > before, packets)
    })
}

/// Clocks a block (`cycle` returns whether it took an input beat and how many packets
/// came out) until `packets` came out, and counts the cycles from its first input beat to
/// its last output packet.
fn measure(
    bytes: u64,
    packets: usize,
    limit: u64,
    mut cycle: impl FnMut() -> (bool, usize),
) -> Result<Throughput, SimError> {
    let clock = Instant::now();
    let (mut first, mut last, mut cycles, mut done) = (None, 0, 0u64, 0);
    while done < packets {
        let (took, out) = cycle();
        if took && first.is_none() {
            first = Some(cycles);
        }
        cycles += 1;
        if out > 0 {
            done += out;
            last = cycles;
        }
        assert!(cycles <= limit, "block stalled after {done} of {packets} packets");
    }
    Ok(Throughput {
        bytes,
        cycles: last - first.unwrap_or(0),
        cycles_per_second: cycles as f64 / clock.elapsed().as_secs_f64(),
    })
}

/// Feeds `beats` full beats into the CRC unit, one per cycle.
pub fn crc(lanes: usize, beats: u64) -> Result<Throughput, SimError> {
    let mut crc = CrcDriver::new(lanes)?;
    let data: Vec<u8> = (0..lanes).map(|i| i as u8).collect();
    let keep = crate::axis::lane_mask(lanes);
    let clock = Instant::now();
    for i in 0..beats {
        crc.cycle(Some((i == 0, i + 1 == beats, &data, keep)), true);
    }
    Ok(Throughput {
        bytes: beats * lanes as u64,
        cycles: beats,
        cycles_per_second: beats as f64 / clock.elapsed().as_secs_f64(),
    })
}

/// Simulated cycles per wall-clock second of the whole RNIC (`rnic_top`) on its own, idle
/// with its TX stream ready: the Verilated model's speed without any bus model or driver
/// around it (those the end-to-end programs add on top).
pub fn top_idle(cycles: u64) -> Result<f64, SimError> {
    let mut top = crate::Model::new("rnic_top")?;
    top.reset_for(4);
    let ready = top.port("m_axis_tx_tready");
    top.set_bit(ready, true);
    let clock = Instant::now();
    for _ in 0..cycles {
        top.eval();
        top.tick();
    }
    Ok(cycles as f64 / clock.elapsed().as_secs_f64())
}

/// ALU throughput: operations completed per cycle over a run of `ops` operations issued
/// one per cycle, either independent or each chained to the previous result (all on one
/// word, the contended case), with the ALU's latency.
#[derive(Clone, Copy, Debug)]
pub struct AluRate {
    pub ops: u64,
    pub cycles: u64,
    pub latency: u64,
    pub cycles_per_second: f64,
}

impl AluRate {
    /// Steady-state rate: operations per cycle once the pipeline is full.
    pub fn ops_per_cycle(&self) -> f64 {
        self.ops as f64 / (self.cycles - self.latency) as f64
    }
}

pub fn alu(ops: u64, chained: bool) -> Result<AluRate, SimError> {
    let mut alu = AluDriver::new()?;
    let clock = Instant::now();
    let (mut done, mut cycle, mut first_result) = (0u64, 0u64, None);
    while done < ops {
        let op = (cycle < ops).then_some(AluOp {
            aopcode: if cycle % 2 == 0 { 0x0 } else { 0x2 },
            chain: chained && cycle > 0,
            original: cycle,
            data: 1,
            mask: if chained { 0 } else { 0x8000_0000_8000_0000 },
            compare: u64::MAX,
            compare_mask: 0,
            tag: cycle as u16,
        });
        if alu.cycle(op).is_some() {
            done += 1;
            first_result.get_or_insert(cycle);
        }
        cycle += 1;
    }
    Ok(AluRate {
        ops,
        cycles: cycle,
        latency: first_result.unwrap_or(0),
        cycles_per_second: cycle as f64 / clock.elapsed().as_secs_f64(),
    })
}

/// DMA through the `rnic_host_dma` engines behind the host-memory model with its default
/// 200-cycle latency: `count` requests of `size` octets, back to back, each starting three
/// octets past an 8-octet boundary (so every request is realigned). Returns the octets per
/// cycle over the whole run and the cycles from the first request taken to its first
/// octet out (reads) or its completion (writes).
pub fn dma(write: bool, size: usize, count: usize) -> Result<(Throughput, u64), SimError> {
    use crate::axi::AxiSlave;
    use crate::axis::{packet_beats, AxisSink, AxisSource};
    use crate::host_memory::HostMemory;
    use crate::Model;

    let mut memory = HostMemory::new();
    let span = (size + 8).next_multiple_of(4096);
    let (_, base) = memory.alloc(span * 16);
    let mut model = Model::new("rnic_host_dma")?;
    let mut bus = AxiSlave::new(&model, "m_axi", memory);
    let side = if write { "wr" } else { "rd" };
    let port = |n: &str| model.port(n);
    let (valid, ready, addr, len) = (
        port(&format!("s_{side}_req_valid")),
        port(&format!("s_{side}_req_ready")),
        port(&format!("s_{side}_req_addr")),
        port(&format!("s_{side}_req_len")),
    );
    let done = port("m_wr_done_valid");
    let first_out = port("m_rd_axis_tvalid");
    let mut sink = AxisSink::new(&model, "m_rd_axis");
    let mut source = AxisSource::new(&model, "s_wr_axis");
    model.reset_for(4);
    let mut rng = StdRng::seed_from_u64(1);
    let payload = vec![0x5A; size];
    let clock = Instant::now();
    let (mut issued, mut finished, mut cycles, mut first_taken, mut first_latency) = (0, 0, 0u64, None, None);
    while finished < count {
        model.set_bit(valid, issued < count);
        model.set(addr, base + 3 + (issued % 16 * span) as u64);
        model.set(len, size as u64);
        bus.drive(&mut model, &mut rng);
        sink.drive(&mut model, &mut rng);
        source.drive(&mut model, &mut rng);
        model.eval();
        if issued < count && model.get_bit(ready) {
            issued += 1;
            first_taken.get_or_insert(cycles);
            if write {
                source.push(packet_beats(&payload, 8, 0));
            }
        }
        if write && model.get_bit(done) {
            finished += 1;
            first_latency.get_or_insert(cycles);
        }
        if !write && model.get_bit(first_out) {
            first_latency.get_or_insert(cycles);
        }
        bus.observe(&model);
        sink.observe(&model);
        source.observe(&model);
        model.tick();
        source.advance();
        while sink.pop_packet().is_some() {
            finished += 1;
        }
        cycles += 1;
        assert!(cycles < 100_000_000, "DMA benchmark made no progress");
    }
    let start = first_taken.unwrap_or(0);
    let t = Throughput {
        bytes: (size * count) as u64,
        cycles: cycles - start,
        cycles_per_second: cycles as f64 / clock.elapsed().as_secs_f64(),
    };
    Ok((t, first_latency.unwrap_or(0) - start))
}

/// Atomic unit throughput over a run of ops offered back to back, memory and result sink
/// at full rate: ops per cycle from the first op taken to the last result out.
#[derive(Clone, Copy, Debug)]
pub struct AtomicUnitRate {
    pub ops: u64,
    pub cycles: u64,
    pub cycles_per_second: f64,
}

impl AtomicUnitRate {
    pub fn ops_per_cycle(&self) -> f64 {
        self.ops as f64 / self.cycles as f64
    }
}

/// `ops` FetchAdd/CmpSwap ops through the unit behind a memory of `latency` cycles: all on
/// one word (`contended`, chained after the first read) or each on its own word.
pub fn atomic_unit(latency: u64, contended: bool, ops: u64) -> Result<AtomicUnitRate, SimError> {
    let mut unit = AtomicUnitDriver::new(latency, Pressure::NONE, 1)?;
    for i in 0..ops {
        let addr = if contended { 0x1000 } else { 0x1000 + 8 * i };
        let aopcode = if i % 2 == 0 { 0x0 } else { 0x2 };
        unit.queue.push_back(UnitOp { addr, aopcode, data: 1, compare_mask: u64::MAX, ..Default::default() });
    }
    let clock = Instant::now();
    unit.drain(100_000 + ops * (2 * latency + 100));
    let first = unit.accept_cycles[0];
    let last = *unit.result_cycles.last().expect("results");
    Ok(AtomicUnitRate {
        ops,
        cycles: last + 1 - first,
        cycles_per_second: unit.cycle as f64 / clock.elapsed().as_secs_f64(),
    })
}

/// Cycles from an op taken to its result valid behind a memory of `latency` cycles: a
/// single op alone in the unit (read, apply, write back), and two ops on one word offered
/// together, from the first taken to the second's result (the second chained on the first:
/// one read, two applies, the write-back). The unit takes ops into a queue at once, so
/// the first's take is where both start.
pub fn atomic_unit_latency(latency: u64) -> Result<(u64, u64), SimError> {
    let mut unit = AtomicUnitDriver::new(latency, Pressure::NONE, 1)?;
    let op = UnitOp { addr: 0x1000, aopcode: 0x0, data: 1, ..Default::default() };
    let run = |unit: &mut AtomicUnitDriver, ops: usize| {
        unit.queue.extend(std::iter::repeat_n(op, ops));
        unit.drain(10_000 + 4 * latency);
        let last = unit.results.len() - 1;
        unit.result_cycles[last] - unit.accept_cycles[last + 1 - ops]
    };
    let cold = run(&mut unit, 1);
    let chained = run(&mut unit, 2);
    Ok((cold, chained))
}
