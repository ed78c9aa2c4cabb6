//! `selftest --backend fake|sim|vfio|serial [--device BDF] [--port PATH [--baud N]] [--loop
//! stream|rings]`: checks the platform contract the driver relies on, then, on a backend
//! with an RNIC behind it, runs every operation once between two QPs of that one RNIC, its
//! stream looped back into itself, and checks every octet and completion. On `serial` (the
//! board build through its UART bridge, whose shell loops TX into RX) it ends with the
//! link's counters. Exits 0 on success, 1 on a failed check, 2 if the backend cannot be
//! opened or cannot loop.
use std::time::Duration;

use clap::{Parser, ValueEnum};
use rnic_driver::serial::{DEFAULT_BAUD, RESPONSE_TIMEOUT};
use rnic_driver::{Device, Hal};
use rnic_firmware_tests::loopback::{loopback_selftest, RingLoop};
use rnic_firmware_tests::{open, open_serial, platform_selftest, Backend};

/// What carries the RNIC's stream back into it.
#[derive(Clone, Copy, Debug, PartialEq, Eq, ValueEnum)]
enum Loop {
    /// The stream ports, looped outside the RNIC: by the simulator (`sim`) or by the
    /// board's shell.
    Stream,
    /// The stream rings in host memory, looped by the driver: how a card without a TCP
    /// engine loops (`vfio`), and on `sim` the same driver code against the RTL.
    Rings,
}

#[derive(Parser)]
#[command(about = "Check the platform contract, then every RNIC operation once in loopback")]
struct Args {
    #[arg(long, value_enum, default_value = "fake")]
    backend: Backend,
    /// PCI address of the card for `--backend vfio`, e.g. 0000:01:00.0.
    #[arg(long)]
    device: Option<String>,
    /// Serial port of the board for `--backend serial`, e.g. /dev/ttyUSB0.
    #[arg(long)]
    port: Option<String>,
    /// Baud rate of the board's UART bridge for `--backend serial`.
    #[arg(long, default_value_t = DEFAULT_BAUD)]
    baud: u32,
    /// For `--backend serial`: milliseconds an answer may take before the request is sent
    /// again (a simulated board's netlist needs more than a board).
    #[arg(long, default_value_t = RESPONSE_TIMEOUT.as_millis() as u64)]
    response_timeout_ms: u64,
    /// What loops the stream: `stream` for `sim` by default and for `serial` (only),
    /// `rings` for `vfio` (only).
    #[arg(long = "loop", value_enum)]
    via: Option<Loop>,
}

fn main() {
    let args = Args::parse();
    let cannot = |why: String| -> ! {
        eprintln!("selftest: cannot run on {:?}: {why}", args.backend);
        std::process::exit(2)
    };
    let result = match args.backend {
        Backend::Fake => {
            let hal = open(Backend::Fake, None).unwrap_or_else(|e| cannot(e));
            platform_selftest(hal.as_ref()).map(|mut done| {
                done.push("not run: the RNIC operations (the fake backend has no RNIC behind it)".into());
                done
            })
        }
        Backend::Sim => sim(args.via.unwrap_or(Loop::Stream)).unwrap_or_else(|e| cannot(e)),
        Backend::Vfio => {
            if args.via == Some(Loop::Stream) {
                cannot(
                    "a card's stream ports have no loop; its streams loop through the stream rings (--loop rings)"
                        .into(),
                )
            }
            let hal = open(Backend::Vfio, args.device.as_deref()).unwrap_or_else(|e| cannot(e));
            with_device(hal, Loop::Rings)
        }
        Backend::Serial => {
            if args.via == Some(Loop::Rings) {
                cannot("the board's shell loops the RNIC's TX stream into its RX stream in hardware: run without --loop rings".into())
            }
            let hal = open_serial(args.port.as_deref(), args.baud, Duration::from_millis(args.response_timeout_ms))
                .unwrap_or_else(|e| cannot(e));
            let result = with_device(&hal, Loop::Stream);
            let stats = hal.stats();
            let link = format!("serial link: {} requests, {} retries", stats.requests, stats.retries);
            match result {
                Ok(mut done) => {
                    done.push(link);
                    Ok(done)
                }
                Err(e) => Err(format!("{e} ({link})")),
            }
        }
    };
    match result {
        Ok(done) => done.iter().for_each(|line| println!("ok: {line}")),
        Err(e) => {
            eprintln!("selftest: FAILED: {e}");
            std::process::exit(1)
        }
    }
}

/// The platform checks on `hal`, then the loopback run on its RNIC with the stream looped
/// by `via` (the stream ports are looped already, if that is the loop).
fn with_device<H: Hal>(hal: H, via: Loop) -> Result<Vec<String>, String> {
    let mut done = platform_selftest(&hal)?;
    let dev = Device::open(hal).map_err(|e| format!("opening the RNIC: {e}"))?;
    let more = match via {
        Loop::Stream => loopback_selftest(&dev, &mut || Ok(()))?,
        Loop::Rings => {
            let mut rings = RingLoop::new(dev.hal())?;
            let mut more = loopback_selftest(&dev, &mut || rings.pump())?;
            more.push(format!("the driver looped {} FPDUs through the stream rings", rings.fpdus));
            more
        }
    };
    done.extend(more);
    Ok(done)
}

/// One Verilated `rnic_top`, looped.
#[cfg(feature = "sim")]
fn sim(via: Loop) -> Result<Result<Vec<String>, String>, String> {
    use rnic_driver::sim::{LinkConfig, SimHal};
    let hal = SimHal::open("rnic_top").map_err(|e| format!("the rnic_top model: {e}"))?;
    if via == Loop::Stream {
        hal.loop_back(LinkConfig::default());
    }
    Ok(with_device(hal, via))
}

#[cfg(not(feature = "sim"))]
fn sim(_via: Loop) -> Result<Result<Vec<String>, String>, String> {
    Err("the sim backend is not built in (built with `--no-default-features`): build without it".into())
}
