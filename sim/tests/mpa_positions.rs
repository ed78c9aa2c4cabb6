//! `mpa/positions` in Verilator (`Positions<3, 8>`: a 9-bit marker-grid position for each
//! of 8 connections), against an array of eight `Option<u16>` (`None` reads 0).
//!
//! Why: the framer and deframer park each connection's place on the 512-octet marker grid
//! here between its FPDUs; a wrong value puts markers in the wrong place on the wire (or
//! strips octets of payload as markers on receive) for that connection only, which no
//! single-connection test would notice. The block's corners are where such a slip hides:
//! the block RAM reads `read_qp` a cycle late, so a write made in the cycle before a read
//! must be forwarded; a connection is cleared (QP moved to RESET) through a valid bit
//! beside the RAM, so a clear must win over a write to the same connection in the same
//! cycle, and a clear and a write to different connections in one cycle must both take
//! effect; a reset must make every connection read 0.
//!
//! Checked every cycle in which the contract applies (`read_qp` unchanged since before the
//! previous clock edge): `value` equals the reference for that connection, including a
//! write made in the immediately previous cycle. `held` (the registered value) is checked
//! in every cycle after two with the same `read_qp`: it equals the reference as it stands,
//! with the write or clear of the cycle just before in. Random writes, clears and `read_qp`
//! changes in changing regimes (long holds, writes to the connection being read, clear and
//! write of one connection in one cycle, of two different ones, few connections, idle),
//! with resets in the middle followed by a read of every connection. The checks are
//! counted by how the connection got its value, and each case must be seen.
use rand::rngs::StdRng;
use rand::{Rng, SeedableRng};
use rnic_sim::{trace, Model, Port};

const CONNECTIONS: u8 = 8;
const MASK: u16 = (1 << 9) - 1;

/// What last happened to a connection in the reference, to count the checks by case.
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
enum Last {
    /// Written in a cycle without a clear.
    Written,
    /// Written in a cycle in which another connection was cleared.
    WrittenBesideClear,
    /// Cleared in a cycle without a write.
    Cleared,
    /// Cleared in a cycle in which another connection was written.
    ClearedBesideWrite,
    /// Cleared and written in the same cycle: the clear won.
    ClearWon,
    /// Reset (the initial one or one in the middle).
    Reset,
}

const CASES: [Last; 6] =
    [Last::Written, Last::WrittenBesideClear, Last::Cleared, Last::ClearedBesideWrite, Last::ClearWon, Last::Reset];

/// One cycle's inputs.
#[derive(Clone, Copy, Debug)]
struct Inputs {
    read_qp: u8,
    /// Connection and value written.
    write: Option<(u8, u16)>,
    clear: Option<u8>,
    reset: bool,
}

impl Inputs {
    fn read(read_qp: u8) -> Inputs {
        Inputs { read_qp, write: None, clear: None, reset: false }
    }
}

/// Stimulus of one regime: chances per cycle of a write, of a clear, of the write going to
/// the connection being read, of the clear going to it, of a clear going to the connection
/// written in the same cycle (else a clear is kept off it); connections used `0..span`;
/// cycles `read_qp` is held (1: changed every cycle, so nothing is checked).
#[derive(Clone, Debug)]
struct Regime {
    write: f64,
    clear: f64,
    write_read: f64,
    clear_read: f64,
    same: f64,
    span: u8,
    hold: std::ops::RangeInclusive<u32>,
}

struct Ports {
    read_qp: Port,
    value: Port,
    held: Port,
    write: Port,
    write_qp: Port,
    write_value: Port,
    clear: Port,
    clear_qp: Port,
    reset: Port,
}

#[derive(Default, Debug)]
struct Stats {
    checks: u64,
    /// Checks of a connection written in the cycle just before (the forwarded value).
    forwarded: u64,
    /// Checks by what last happened to the connection read (index into `CASES`).
    by_case: [u64; 6],
    /// Checks of a connection that read 0 after a reset in the middle had wiped its value.
    wiped: u64,
    resets: u64,
    /// Checks of `held`, of those a connection written or cleared in the cycle before.
    held: u64,
    held_written: u64,
    held_cleared: u64,
}

struct Bench {
    m: Model,
    p: Ports,
    rng: StdRng,
    cycle: u64,
    /// The reference: each connection's value, `None` reading 0.
    reference: [Option<u16>; CONNECTIONS as usize],
    last: [Last; CONNECTIONS as usize],
    /// Whether the connection held a value when a reset in the middle wiped it (cleared
    /// again by its next write or clear).
    wiped: [bool; CONNECTIONS as usize],
    /// `read_qp` in the previous cycle, and the connection that cycle's write took effect
    /// on (a write that lost to a clear takes none).
    prev_read: Option<u8>,
    prev_write: Option<u8>,
    /// `read_qp` two cycles back, and the previous cycle's clear.
    prev2_read: Option<u8>,
    prev_clear: Option<u8>,
    stats: Stats,
}

impl Bench {
    fn new(seed: u64) -> Bench {
        let m = Model::new("rnic_mpa_positions").expect("rnic_mpa_positions model");
        let p = Ports {
            read_qp: m.port("read_qp"),
            value: m.port("value"),
            held: m.port("held"),
            write: m.port("write"),
            write_qp: m.port("write_qp"),
            write_value: m.port("write_value"),
            clear: m.port("clear"),
            clear_qp: m.port("clear_qp"),
            reset: m.port("reset"),
        };
        let mut b = Bench {
            m,
            p,
            rng: StdRng::seed_from_u64(seed),
            cycle: 0,
            reference: [None; CONNECTIONS as usize],
            last: [Last::Reset; CONNECTIONS as usize],
            wiped: [false; CONNECTIONS as usize],
            prev_read: None,
            prev_write: None,
            prev2_read: None,
            prev_clear: None,
            stats: Stats::default(),
        };
        // Nothing is checked before the first reset edge: the state is not defined yet.
        for _ in 0..4 {
            b.step(Inputs { reset: true, ..Inputs::read(0) });
        }
        b
    }

    /// One cycle: drives `i`, checks `value` if `read_qp` was held since before the
    /// previous edge, clocks, and updates the reference. Returns the value checked.
    fn step(&mut self, i: Inputs) -> Option<u16> {
        let p = &self.p;
        self.m.set(p.read_qp, u64::from(i.read_qp));
        self.m.set_bit(p.write, i.write.is_some());
        let (wq, wv) = i.write.unwrap_or((self.rng.gen_range(0..CONNECTIONS), self.rng.gen::<u16>() & MASK));
        self.m.set(p.write_qp, u64::from(wq));
        self.m.set(p.write_value, u64::from(wv));
        self.m.set_bit(p.clear, i.clear.is_some());
        self.m.set(p.clear_qp, u64::from(i.clear.unwrap_or_else(|| self.rng.gen_range(0..CONNECTIONS))));
        self.m.set_bit(p.reset, i.reset);
        self.m.eval();

        let c = self.cycle;
        if let Some(h) = self.prev_read.filter(|_| self.prev2_read == self.prev_read) {
            let got = self.m.get(p.held) as u16;
            let want = self.reference[h as usize].unwrap_or(0);
            assert_eq!(
                got, want,
                "cycle {c}: held value of connection {h} (written the cycle before: {:?}, cleared: {:?})",
                self.prev_write, self.prev_clear
            );
            self.stats.held += 1;
            self.stats.held_written += u64::from(self.prev_write == Some(h));
            self.stats.held_cleared += u64::from(self.prev_clear == Some(h));
        }
        let q = i.read_qp;
        let checked = if self.prev_read == Some(q) {
            let got = self.m.get(p.value) as u16;
            let want = self.reference[q as usize].unwrap_or(0);
            let last = self.last[q as usize];
            let forwarded = self.prev_write == Some(q);
            assert_eq!(
                got, want,
                "cycle {c}: value of connection {q} (last {last:?}, written the cycle before: {forwarded}, \
                 inputs {i:?}, reference {:?})",
                self.reference
            );
            self.stats.checks += 1;
            self.stats.forwarded += u64::from(forwarded);
            self.stats.by_case[CASES.iter().position(|&l| l == last).unwrap()] += 1;
            self.stats.wiped += u64::from(self.wiped[q as usize]);
            Some(got)
        } else {
            None
        };

        self.m.tick();
        self.cycle += 1;
        self.prev2_read = self.prev_read;
        self.prev_read = Some(q);
        self.prev_write = None;
        self.prev_clear = if i.reset { None } else { i.clear };
        if i.reset {
            // A reset wipes every connection (writes and clears are not driven meanwhile).
            for k in 0..CONNECTIONS as usize {
                self.wiped[k] |= self.reference[k].is_some();
                self.reference[k] = None;
                self.last[k] = Last::Reset;
            }
            return checked;
        }
        // First the write, then the clear: a clear of the same connection wins.
        if let Some((wq, wv)) = i.write {
            self.reference[wq as usize] = Some(wv);
            self.last[wq as usize] = if i.clear.is_some() { Last::WrittenBesideClear } else { Last::Written };
            self.wiped[wq as usize] = false;
            self.prev_write = Some(wq);
        }
        if let Some(cq) = i.clear {
            self.reference[cq as usize] = None;
            self.wiped[cq as usize] = false;
            self.last[cq as usize] = match i.write {
                Some((wq, _)) if wq == cq => Last::ClearWon,
                Some(_) => Last::ClearedBesideWrite,
                None => Last::Cleared,
            };
            if self.prev_write == Some(cq) {
                self.prev_write = None;
            }
        }
        checked
    }

    /// Holds `read_qp` at `q` for `cycles` cycles of random writes and clears by `r`.
    fn hold(&mut self, q: u8, cycles: u32, r: &Regime) {
        for _ in 0..cycles {
            let write = self.rng.gen_bool(r.write).then(|| {
                let wq = if self.rng.gen_bool(r.write_read) { q } else { self.rng.gen_range(0..r.span) };
                (wq, self.rng.gen::<u16>() & MASK)
            });
            let clear = self.rng.gen_bool(r.clear).then(|| match write {
                Some((wq, _)) if self.rng.gen_bool(r.same) => wq,
                _ => {
                    let cq = if self.rng.gen_bool(r.clear_read) { q } else { self.rng.gen_range(0..r.span) };
                    match write {
                        // Kept off the connection written (`span` is at least 2).
                        Some((wq, _)) if wq == cq => (wq + self.rng.gen_range(1..r.span)) % r.span,
                        _ => cq,
                    }
                }
            });
            self.step(Inputs { read_qp: q, write, clear, reset: false });
        }
    }

    /// A reset of 1..3 cycles (`read_qp` changing freely, nothing written or cleared),
    /// then every connection read in random order, held two cycles each: all read 0.
    fn reset_and_sweep(&mut self) {
        for _ in 0..self.rng.gen_range(1..=3) {
            let q = self.rng.gen_range(0..CONNECTIONS);
            self.step(Inputs { reset: true, ..Inputs::read(q) });
        }
        self.stats.resets += 1;
        let mut order: Vec<u8> = (0..CONNECTIONS).collect();
        for k in (1..order.len()).rev() {
            order.swap(k, self.rng.gen_range(0..=k));
        }
        for q in order {
            self.step(Inputs::read(q));
            assert_eq!(self.step(Inputs::read(q)), Some(0), "connection {q} after a reset");
        }
    }

    /// Random stimulus in regimes of random length, with a reset in the middle now and then.
    fn random_traffic(&mut self, cycles: u64) {
        let regimes = [
            // Mixed.
            Regime { write: 0.5, clear: 0.2, write_read: 0.3, clear_read: 0.2, same: 0.1, span: 8, hold: 1..=6 },
            // Long holds of one connection while it and others change.
            Regime { write: 0.4, clear: 0.1, write_read: 0.5, clear_read: 0.3, same: 0.1, span: 8, hold: 5..=60 },
            // Writes to the connection being read, read the next cycle (forwarding).
            Regime { write: 0.9, clear: 0.1, write_read: 0.9, clear_read: 0.2, same: 0.0, span: 8, hold: 1..=3 },
            // Clear and write of the same connection in one cycle.
            Regime { write: 0.7, clear: 0.7, write_read: 0.7, clear_read: 0.5, same: 0.9, span: 8, hold: 2..=4 },
            // Clear and write of different connections in one cycle.
            Regime { write: 0.8, clear: 0.8, write_read: 0.5, clear_read: 0.5, same: 0.0, span: 4, hold: 1..=5 },
            // Two connections only: everything collides.
            Regime { write: 0.6, clear: 0.4, write_read: 0.5, clear_read: 0.5, same: 0.3, span: 2, hold: 1..=4 },
            // Idle: values read back from the RAM alone.
            Regime { write: 0.0, clear: 0.0, write_read: 0.0, clear_read: 0.0, same: 0.0, span: 8, hold: 2..=12 },
            // `read_qp` changed every cycle: nothing checked, state churns.
            Regime { write: 0.6, clear: 0.3, write_read: 0.5, clear_read: 0.3, same: 0.2, span: 8, hold: 1..=1 },
        ];
        let end = self.cycle + cycles;
        let mut next_reset = self.cycle + self.rng.gen_range(500..3_000);
        while self.cycle < end {
            let r = regimes[self.rng.gen_range(0..regimes.len())].clone();
            let stretch_end = (self.cycle + self.rng.gen_range(20..400)).min(end);
            while self.cycle < stretch_end {
                let q = self.rng.gen_range(0..r.span);
                let cycles = self.rng.gen_range(r.hold.clone()).min((stretch_end - self.cycle) as u32).max(1);
                self.hold(q, cycles, &r);
            }
            if self.cycle >= next_reset && self.cycle < end {
                self.reset_and_sweep();
                next_reset = self.cycle + self.rng.gen_range(500..3_000);
            }
        }
    }
}

#[test]
fn mpa_positions_match_a_reference_per_connection() {
    trace::on_failure("mpa_positions_match_a_reference_per_connection", || {
        let mut total = Stats::default();
        let mut cycles = 0;
        for seed in 1..=4 {
            let mut b = Bench::new(seed);
            b.random_traffic(5_000);
            cycles += b.cycle;
            total.checks += b.stats.checks;
            total.forwarded += b.stats.forwarded;
            total.wiped += b.stats.wiped;
            total.resets += b.stats.resets;
            total.held += b.stats.held;
            total.held_written += b.stats.held_written;
            total.held_cleared += b.stats.held_cleared;
            for (t, n) in total.by_case.iter_mut().zip(b.stats.by_case) {
                *t += n;
            }
        }
        println!("{cycles} cycles: {total:?}");
        assert!(cycles >= 20_000 && total.checks >= 10_000, "{cycles} cycles, {} checks", total.checks);
        assert!(total.forwarded >= 500, "too few reads of a write made the cycle before: {total:?}");
        assert!(total.resets >= 4 && total.wiped >= 30, "too few resets in the middle: {total:?}");
        assert!(
            total.held >= 10_000 && total.held_written >= 500 && total.held_cleared >= 100,
            "too few checks of the held value: {total:?}"
        );
        for (case, n) in CASES.iter().zip(total.by_case) {
            assert!(n >= 100, "too few checks of a connection last {case:?}: {total:?}");
        }
    });
}

#[test]
fn mpa_positions_forward_clear_wins_and_reset() {
    trace::on_failure("mpa_positions_forward_clear_wins_and_reset", || {
        let mut b = Bench::new(7);
        let w = |q: u8, v: u16| Inputs { write: Some((q, v)), ..Inputs::read(q) };
        // Every connection reads 0 after the first reset.
        for q in 0..CONNECTIONS {
            b.step(Inputs::read(q));
            assert_eq!(b.step(Inputs::read(q)), Some(0), "connection {q} after reset");
        }
        // A write is read the very next cycle (forwarded), then from the RAM.
        b.step(w(3, 0x1AB));
        assert_eq!(b.step(Inputs::read(3)), Some(0x1AB), "forwarded");
        assert_eq!(b.step(Inputs::read(3)), Some(0x1AB), "from the RAM");
        // Overwritten while read: the new value, forwarded over the RAM's old one.
        b.step(w(3, 0x0F0));
        assert_eq!(b.step(w(3, 0x1FF)), Some(0x0F0), "back-to-back writes, first");
        assert_eq!(b.step(Inputs::read(3)), Some(0x1FF), "back-to-back writes, second");
        // Written while another connection is read, then switched to: from the RAM.
        b.step(Inputs { write: Some((5, 0x122)), ..Inputs::read(3) });
        b.step(Inputs::read(5));
        assert_eq!(b.step(Inputs::read(5)), Some(0x122));
        // Clear and write of the same connection in one cycle: the clear wins, and the
        // write is not forwarded either; it stays 0 until written again.
        b.step(Inputs { write: Some((3, 0x055)), clear: Some(3), ..Inputs::read(3) });
        for _ in 0..4 {
            assert_eq!(b.step(Inputs::read(3)), Some(0), "clear wins over the write");
        }
        b.step(w(3, 0x001));
        assert_eq!(b.step(Inputs::read(3)), Some(0x001), "written again after the clear");
        // The held value takes the cycle's write, and a clear that wins over it.
        b.step(w(3, 0x0C3));
        assert_eq!(b.m.get(b.p.held), 0x0C3, "held: the write of the cycle before");
        b.step(Inputs { write: Some((3, 0x03C)), clear: Some(3), ..Inputs::read(3) });
        assert_eq!(b.m.get(b.p.held), 0, "held: the clear of the cycle before wins");
        // Clear of one and write of another in one cycle: both take effect.
        b.step(Inputs { write: Some((6, 0x0AA)), clear: Some(5), ..Inputs::read(6) });
        assert_eq!(b.step(Inputs::read(6)), Some(0x0AA), "written beside a clear");
        b.step(Inputs::read(5));
        assert_eq!(b.step(Inputs::read(5)), Some(0), "cleared beside a write");
        // A reset in the middle wipes everything.
        for q in 0..CONNECTIONS {
            b.step(w(q, 0x100 | u16::from(q)));
        }
        b.reset_and_sweep();
    });
}
