//! A short tour of the RNIC hardware in Verilator: RDMAP messages framed by the MPA
//! transmitter, read back by the MPA receiver, RFC 7306 masked atomics through the ALU,
//! and the figures that matter.
//!
//! `cargo run --release -p rnic-sim --bin demo` (or `scripts/demo`, which also installs
//! Verilator and regenerates the Verilog first).
use rand::rngs::StdRng;
use rand::SeedableRng;
use rnic_proto::atomic::{masked_cmp_swap, masked_fetch_add};
use rnic_proto::mpa::{Framer, FramingConfig};
use rnic_proto::rdmap::{parse_ulpdu, AtomicRequest, RdmapHeader, ReadRequest, Segment};
use rnic_sim::alu::{AluDriver, AluOp};
use rnic_sim::bench;
use rnic_sim::mpa::{MpaRxDriver, MpaTxDriver};

const LANES: usize = 8;
const CFG: FramingConfig = FramingConfig { markers: true, crc: true };

fn main() {
    if let Err(e) = run() {
        eprintln!("demo: {e}");
        std::process::exit(1);
    }
}

fn run() -> Result<(), Box<dyn std::error::Error>> {
    println!("iWARP RNIC hardware demo: Verilated RTL, {LANES} byte lanes, MPA markers and CRC on\n");

    // 1. RDMAP messages, built with the wire-format crate.
    let hello = b"Hello, iWARP!";
    let messages: Vec<(&str, Vec<u8>)> = vec![
        ("Send \"Hello, iWARP!\" (MSN 1)", Segment::send(1, hello).to_vec()),
        (
            "RDMA Read Request 4096 B (QN 1, MSN 1)",
            Segment::read_request(
                1,
                ReadRequest {
                    sink_stag: 0x0001_0203,
                    sink_to: 0x4000,
                    size: 4096,
                    src_stag: 0x0a0b_0c0d,
                    src_to: 0x10000,
                },
            )
            .to_vec(),
        ),
        (
            "masked FetchAdd, two 32-bit counters (QN 1, MSN 2)",
            Segment::atomic_request(
                2,
                AtomicRequest::fetch_add(1, 0x1234_5678, 0x1000, 0x0000_0001_0000_0001, 0x8000_0000_8000_0000),
            )
            .to_vec(),
        ),
        ("Immediate Data with SE (MSN 2)", Segment::immediate(2, *b"RFC 7306", true).to_vec()),
    ];

    // 2. Through the MPA transmitter; the wire must match the reference framer octet for octet.
    let mut tx = MpaTxDriver::new(LANES, CFG)?;
    let mut reference = Framer::new(CFG);
    let mut rng = StdRng::seed_from_u64(7306);
    let (mut wire, mut fpdus): (Vec<u8>, Vec<Vec<u8>>) = (Vec::new(), Vec::new());
    println!("1. MPA framer (hdl/src/mpa/tx.rs): ULPDU in, FPDU out");
    for (name, ulpdu) in &messages {
        tx.send(ulpdu);
        let start = tx.model.cycles();
        let fpdu = loop {
            tx.cycle(&mut rng);
            if let Some(p) = tx.sink.pop_packet() {
                break p.bytes();
            }
            if tx.model.cycles() - start > 1000 {
                return Err("the framer sent nothing".into());
            }
        };
        let mut want = Vec::new();
        reference.frame(ulpdu, &mut want)?;
        let verdict = if fpdu == want { "identical to rnic-proto" } else { "DIFFERS from rnic-proto" };
        println!(
            "   {name}: {} B ULPDU -> {} B FPDU at stream offset {}, {verdict}",
            ulpdu.len(),
            fpdu.len(),
            wire.len()
        );
        println!("     {}", hex_preview(&fpdu));
        if fpdu != want {
            return Err("framer output differs from the reference".into());
        }
        wire.extend(&fpdu);
        fpdus.push(fpdu);
    }

    // 3. The same stream back through the MPA receiver, one packet per FPDU, in odd-sized
    // pieces as TCP would deliver it.
    println!("\n2. MPA deframer (hdl/src/mpa/rx.rs): the stream in 5-octet pieces, ULPDUs out");
    let mut rx = MpaRxDriver::new(LANES, CFG)?;
    rx.push_fpdus(&fpdus, || 5);
    let mut got = Vec::new();
    for _ in 0..2000 {
        rx.cycle(&mut rng);
        while let Some(p) = rx.sink.pop_packet() {
            got.push(p);
        }
    }
    for (p, (name, ulpdu)) in got.iter().zip(&messages) {
        let crc = if p.user() == 0 { "CRC and markers good" } else { "BAD" };
        let bytes = p.bytes();
        let decoded = match parse_ulpdu(&bytes)? {
            Segment { header: RdmapHeader::AtomicRequest(a), .. } => {
                format!(
                    "Atomic Request id {} STag {:#x} TO {:#x} add {:#x} mask {:#x}",
                    a.request_id, a.stag, a.to, a.add_swap, a.add_swap_mask
                )
            }
            s => format!("{:?}, {} B payload", s.opcode, s.payload.len()),
        };
        println!("   {name}: {crc}, equal: {}; parsed: {decoded}", bytes == *ulpdu);
    }
    if got.len() != messages.len() || got.iter().zip(&messages).any(|(p, (_, u))| p.user() != 0 || p.bytes() != *u) {
        return Err("the deframer did not return every ULPDU intact".into());
    }

    // 4. RFC 7306 masked atomics in the ALU.
    println!("\n3. Atomic ALU (hdl/src/atomic/alu.rs), RFC 7306 §5.1");
    let mut alu = AluDriver::new()?;
    let cases = [
        (
            "FetchAdd, two 32-bit fields",
            AluOp {
                aopcode: 0,
                original: 0x0000_0001_FFFF_FFFF,
                data: 1,
                mask: 0x8000_0000_8000_0000,
                ..Default::default()
            },
        ),
        (
            "FetchAdd, eight 8-bit fields",
            AluOp {
                aopcode: 0,
                original: 0x00FF_7F80_FE01_FFFF,
                data: 0x0101_0101_0101_0101,
                mask: 0x8080_8080_8080_8080,
                ..Default::default()
            },
        ),
        (
            "CmpSwap, compare upper half, swap lower",
            AluOp {
                aopcode: 2,
                original: 0xAAAA_0000_BBBB_0000,
                data: 0x1234_5678_1234_5678,
                mask: 0xFFFF_FFFF,
                compare: 0xAAAA_0000_FFFF_FFFF,
                compare_mask: 0xFFFF_FFFF_0000_0000,
                ..Default::default()
            },
        ),
    ];
    for (name, op) in cases {
        alu.cycle(Some(op));
        alu.cycle(None);
        let r = alu.cycle(None).ok_or("no ALU result")?;
        let want = if op.aopcode == 0 {
            masked_fetch_add(op.original, op.data, op.mask)
        } else {
            masked_cmp_swap(op.original, op.data, op.mask, op.compare, op.compare_mask)
        };
        println!(
            "   {name}: {:#018x} -> {:#018x} ({})",
            r.original,
            r.result,
            if r.result == want { "= rnic-proto" } else { "DIFFERS" }
        );
    }

    // 5. A contended counter: every FetchAdd depends on the one before.
    let n = 10_000u64;
    let start = alu.model.cycles();
    let mut last = 0;
    for i in 0..n + 2 {
        let op = (i < n).then_some(AluOp { aopcode: 0, chain: i > 0, original: 0, data: 1, ..Default::default() });
        if let Some(r) = alu.cycle(op) {
            last = r.result;
        }
    }
    println!(
        "   {n} FetchAdd(+1) on one word, each on the previous result: counter = {last} after {} cycles",
        alu.model.cycles() - start
    );

    // 6. Figures.
    println!("\n4. Figures (cycles counted in simulation, streams at full rate)");
    for size in [64, 4096] {
        let t = bench::mpa_tx(LANES, CFG, size, bench::ulpdus_for(size))?;
        let r = bench::mpa_rx(LANES, CFG, size, bench::ulpdus_for(size))?;
        println!(
            "   {size:>4} B ULPDUs: TX {:.2} B/cycle, RX {:.2} B/cycle (of {LANES}); Verilator ran {:.1} M cycles/s",
            t.bytes_per_cycle(),
            r.bytes_per_cycle(),
            t.cycles_per_second / 1e6
        );
    }
    let a = bench::alu(100_000, true)?;
    println!("   ALU: {:.3} dependent operations per cycle, latency {} cycles", a.ops_per_cycle(), a.latency);
    println!("\nMore: cargo run --release -p rnic-sim --bin bench-blocks (all widths); docs/PERFORMANCE.md");
    Ok(())
}

/// The first and last octets of an FPDU in hex.
fn hex_preview(b: &[u8]) -> String {
    let hex = |s: &[u8]| s.iter().map(|x| format!("{x:02x}")).collect::<Vec<_>>().join(" ");
    if b.len() <= 24 {
        hex(b)
    } else {
        format!("{} ... {}", hex(&b[..16]), hex(&b[b.len() - 8..]))
    }
}
