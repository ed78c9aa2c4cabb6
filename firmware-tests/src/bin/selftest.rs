//! `selftest --backend fake|sim|vfio [--device BDF]`: checks that the platform behaves as
//! the driver expects. Exits 0 on success, 1 on a failed check, 2 if the backend cannot
//! be opened.
use clap::Parser;
use rnic_firmware_tests::{open, platform_selftest, Backend};

#[derive(Parser)]
#[command(about = "Check the platform contract the RNIC driver relies on")]
struct Args {
    #[arg(long, value_enum, default_value = "fake")]
    backend: Backend,
    /// PCI address of the card for `--backend vfio`, e.g. 0000:01:00.0.
    #[arg(long)]
    device: Option<String>,
}

fn main() {
    let args = Args::parse();
    let hal = open(args.backend, args.device.as_deref()).unwrap_or_else(|e| {
        eprintln!("selftest: cannot open {:?} backend: {e}", args.backend);
        std::process::exit(2)
    });
    match platform_selftest(hal.as_ref()) {
        Ok(done) => {
            for line in done {
                println!("ok: {line}");
            }
        }
        Err(e) => {
            eprintln!("selftest: FAILED: {e}");
            std::process::exit(1)
        }
    }
}
