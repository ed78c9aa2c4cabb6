//! `board-sim`: the ULX3S build of the RNIC, Verilated (`rnic_board_sim`: the shell as it
//! is flashed, its PLL stubbed), with its serial pins on a pseudo-terminal, so that the
//! host programs run against it unmodified: `selftest --backend serial --port <pty>`.
//!
//! It prints `board-sim: serial port <path>` once the port is open, then runs until it is
//! killed. The line runs at 4 clock cycles per bit (the simulated shell's parameters;
//! `--cycles-per-bit` for the netlist of a bitstream, `--model rnic_board_netlist`); the
//! baud rate the host sets on the pty does not matter. `--flip-every N` flips one bit of
//! every Nth octet and `--drop-every N` drops every Nth octet (each counted separately
//! in both directions), to show the host's retries; each is reported on stderr.
use std::fs::File;
use std::io::{ErrorKind, Read, Write};
use std::os::fd::{FromRawFd, OwnedFd};
use std::path::PathBuf;

use clap::Parser;
use rnic_sim::uart::{UartReceiver, UartSender};
use rnic_sim::Model;

/// Cycles between looks at the pty for octets from the host (one octet takes 40).
const POLL_CYCLES: u64 = 32;
/// Cycles the reset button is held at start.
const RESET_CYCLES: u64 = 64;

#[derive(Parser)]
#[command(about = "The ULX3S build of the RNIC in Verilator, its serial line on a pseudo-terminal")]
struct Args {
    /// The model: `rnic_board_sim` (the shell and the generated RTL), or
    /// `rnic_board_netlist` (the bitstream's synthesized netlist, bitstream/netlist-sim).
    #[arg(long, default_value = "rnic_board_sim")]
    model: String,
    /// Clock cycles per bit: 4 in `rnic_board_sim` (12.5 MHz, 3.125 Mbaud); the netlist's
    /// are its build's, clock over baud rate.
    #[arg(long, default_value_t = 4, value_parser = clap::value_parser!(u32).range(4..))]
    cycles_per_bit: u32,
    /// Also make a symbolic link to the pty here (replaced if it exists).
    #[arg(long)]
    link: Option<PathBuf>,
    /// Flip one bit of every Nth octet, in each direction.
    #[arg(long, value_name = "N")]
    flip_every: Option<u64>,
    /// Drop every Nth octet, in each direction.
    #[arg(long, value_name = "N")]
    drop_every: Option<u64>,
}

/// A line error injector for one direction.
struct Injector {
    name: &'static str,
    flip_every: Option<u64>,
    drop_every: Option<u64>,
    octets: u64,
}

impl Injector {
    /// The octet as it arrives: changed, dropped, or as sent.
    fn pass(&mut self, octet: u8) -> Option<u8> {
        self.octets += 1;
        let n = self.octets;
        if self.drop_every.is_some_and(|k| n.is_multiple_of(k)) {
            eprintln!("board-sim: dropped octet {n} {} ({octet:#04x})", self.name);
            return None;
        }
        if self.flip_every.is_some_and(|k| n.is_multiple_of(k)) {
            let bit = (n / self.flip_every.unwrap_or(1)) % 8;
            eprintln!("board-sim: flipped bit {bit} of octet {n} {} ({octet:#04x})", self.name);
            return Some(octet ^ 1 << bit);
        }
        Some(octet)
    }
}

/// Opens a pseudo-terminal in raw mode: the master (non-blocking) and the slave's path.
fn open_pty() -> std::io::Result<(File, OwnedFd, PathBuf)> {
    let (mut master, mut slave) = (0, 0);
    let mut name = [0 as libc::c_char; 128];
    // SAFETY: the pointers are to live locals; `name` holds 128 bytes, more than a pty
    // path; termios and winsize may be null.
    let rc = unsafe { libc::openpty(&mut master, &mut slave, name.as_mut_ptr(), std::ptr::null(), std::ptr::null()) };
    if rc != 0 {
        return Err(std::io::Error::last_os_error());
    }
    // SAFETY: openpty returned two open descriptors that nothing else owns.
    let (master, slave) = unsafe { (File::from_raw_fd(master), OwnedFd::from_raw_fd(slave)) };
    // SAFETY: `name` was NUL-terminated by openpty.
    let path = unsafe { std::ffi::CStr::from_ptr(name.as_ptr()) }.to_string_lossy().into_owned();
    use std::os::fd::AsRawFd;
    // SAFETY: a zeroed termios is a valid buffer for tcgetattr to fill; the descriptors are live.
    unsafe {
        let mut t: libc::termios = std::mem::zeroed();
        if libc::tcgetattr(slave.as_raw_fd(), &mut t) == 0 {
            libc::cfmakeraw(&mut t);
            libc::tcsetattr(slave.as_raw_fd(), libc::TCSANOW, &t);
        }
        let flags = libc::fcntl(master.as_raw_fd(), libc::F_GETFL);
        libc::fcntl(master.as_raw_fd(), libc::F_SETFL, flags | libc::O_NONBLOCK);
    }
    Ok((master, slave, PathBuf::from(path)))
}

fn main() {
    let args = Args::parse();
    let fail = |what: String| -> ! {
        eprintln!("board-sim: {what}");
        std::process::exit(1)
    };
    let mut model = Model::new(&args.model).unwrap_or_else(|e| fail(format!("the {} model: {e}", args.model)));
    let (btn_n, host_txd, host_rxd) = (model.port("btn_n"), model.port("host_txd"), model.port("host_rxd"));
    // The slave stays open here too, so the master never reads end-of-file between hosts.
    let (mut pty, _slave, path) = open_pty().unwrap_or_else(|e| fail(format!("cannot open a pseudo-terminal: {e}")));
    if let Some(link) = &args.link {
        let _ = std::fs::remove_file(link);
        std::os::unix::fs::symlink(&path, link)
            .unwrap_or_else(|e| fail(format!("cannot link {} to {}: {e}", link.display(), path.display())));
    }
    // The reset button, pressed for a while, then released.
    model.set_bit(host_txd, true);
    model.set_bit(btn_n, false);
    (0..RESET_CYCLES).for_each(|_| model.tick());
    model.set_bit(btn_n, true);
    println!("board-sim: serial port {}", path.display());
    std::io::stdout().flush().ok();

    let mut to_board =
        Injector { name: "to the board", flip_every: args.flip_every, drop_every: args.drop_every, octets: 0 };
    let mut to_host =
        Injector { name: "to the host", flip_every: args.flip_every, drop_every: args.drop_every, octets: 0 };
    let (mut sender, mut receiver) = (UartSender::new(args.cycles_per_bit), UartReceiver::new(args.cycles_per_bit));
    let mut buf = [0u8; 4096];
    let mut out = Vec::new();
    for cycle in 0u64.. {
        if cycle.is_multiple_of(POLL_CYCLES) {
            match pty.read(&mut buf) {
                Ok(n) => buf[..n].iter().filter_map(|&b| to_board.pass(b)).for_each(|o| sender.send(&[o])),
                // No host yet (EIO), or nothing sent: run on; when idle, give the host the CPU.
                Err(e) if e.kind() == ErrorKind::WouldBlock || e.raw_os_error() == Some(libc::EIO) => {
                    if !sender.busy() && cycle.is_multiple_of(64 * POLL_CYCLES) {
                        std::thread::yield_now();
                    }
                }
                Err(e) => fail(format!("reading the pty: {e}")),
            }
            if !out.is_empty() {
                match pty.write(&out) {
                    Ok(n) => drop(out.drain(..n)),
                    Err(e) if e.kind() == ErrorKind::WouldBlock => {}
                    Err(e) => fail(format!("writing the pty: {e}")),
                }
            }
        }
        model.set_bit(host_txd, sender.next_level());
        model.eval();
        if let Some(octet) = receiver.observe(model.get_bit(host_rxd)) {
            out.extend(to_host.pass(octet));
        }
        model.tick();
    }
}
