//! `common/reg_ram` in Verilator (`RegRam<Bits<72>, 9>`): random writes and reads every
//! cycle against an array. `read_data` must be the word at the address read two cycles
//! before, as it was before that cycle's write (a write and a read of one address in one
//! cycle reads the old word); reads of just-written and of never-written words included.
use rand::rngs::StdRng;
use rand::{Rng, SeedableRng};
use rnic_sim::{trace, Model};

const WORDS: usize = 512;
const MASK: u128 = (1 << 72) - 1;
/// Cycles from a read address to its word.
const LATENCY: usize = 2;

#[test]
fn reg_ram_reads_the_word_of_two_cycles_before_one_per_cycle() {
    trace::on_failure("reg_ram_reads_the_word_of_two_cycles_before_one_per_cycle", || {
        let mut m = Model::new("rnic_common_reg_ram").expect("rnic_common_reg_ram model");
        let port = |name| m.port(name);
        let (we, waddr, wdata) = (port("write_enable"), port("write_address"), port("write_data"));
        let (raddr, rdata) = (port("read_address"), port("read_data"));
        let mut rng = StdRng::seed_from_u64(11);
        // The RAM starts as zeros (rust-hdl's RAM model and the FPGA's block RAM alike).
        let mut mem = vec![0u128; WORDS];
        // The word each of the last reads must return, oldest first.
        let mut due: Vec<Option<u128>> = vec![None; LATENCY];
        let (mut same_cycle, mut just_written) = (0, 0);
        let mut last_write = None;
        for c in 0..50_000 {
            // A small window of addresses half the time, so reads hit recent writes.
            let span = if rng.gen_bool(0.5) { 4 } else { WORDS };
            let (w, wa, wd) = (rng.gen_bool(0.5), rng.gen_range(0..span), rng.gen::<u128>() & MASK);
            let ra = if rng.gen_bool(0.2) { wa } else { rng.gen_range(0..span) };
            m.set_bit(we, w);
            m.set(waddr, wa as u64);
            m.set_bytes(wdata, &wd.to_le_bytes()[..9]);
            m.set(raddr, ra as u64);
            m.eval();
            if let Some(want) = due[0] {
                let mut out = [0u8; 16];
                m.get_bytes(rdata, &mut out[..9]);
                assert_eq!(u128::from_le_bytes(out), want, "cycle {c}: read_data of the read two cycles before");
            }
            due.remove(0);
            due.push(Some(mem[ra]));
            same_cycle += usize::from(w && ra == wa);
            just_written += usize::from(last_write == Some(ra));
            if w {
                mem[wa] = wd;
            }
            last_write = w.then_some(wa);
            m.tick();
        }
        assert!(same_cycle > 1_000 && just_written > 1_000, "too few reads of fresh words");
    });
}
