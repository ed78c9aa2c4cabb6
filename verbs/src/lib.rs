//! `libibverbs.so.1` and `librdmacm.so.1` for the RNIC: rdma-core's verbs and rdma_cm ABIs
//! over `rnic-driver`, so that a program built against Debian's libraries runs on the RNIC
//! unmodified, with `LD_LIBRARY_PATH` pointing here (docs/VERBS.md). One file is both
//! libraries (`scripts/verbs-libs` installs the second name as a link).
//!
//! * `abi`: the exported functions, each bound to the rdma-core version node programs
//!   record for it, and the per-context function table (`ibv_context_ops`) that the
//!   header's inline verbs (`ibv_post_send`, `ibv_poll_cq`, …) call through.
//! * `engine`: one device per opened context, owned by a thread of its own. Verbs are
//!   jobs sent to it, so the driver's objects (which are neither `Send` nor free of
//!   borrows) stay on one thread and every verb is safe to call from any thread. A
//!   simulated device is clocked by that thread whenever QPs exist.
//! * `objects`: the C structures handed to the program, each with the library's state
//!   behind it; `convert`: work requests and completions between the two worlds.
//! * `dv`: the RFC 7306 masked atomics as direct-verbs entry points
//!   (`include/rnicdv.h`), as `mlx5dv` adds what the common verbs cannot say.
//! * `cm`: librdmacm, connections made over kernel TCP with the MPA exchange, each
//!   socket then carrying its QP's FPDUs.
//!
//! The backend comes from the environment (`backend`): `RNIC_BACKEND=sim` (the default, the
//! Verilated `rnic_top`; `RNIC_SIM_DESIGN` names another model) or `vfio` (a card). Its
//! streams go to the sockets of the connections rdma_cm made, and are looped back for the
//! others: a QP given a QP of the same device as `dest_qp_num` on the way to RTR talks to
//! it inside the device.
/// Whether `RNIC_VERBS_DEBUG` asks for the library's account of what it does (connections
/// made and ended, and why) on stderr.
pub(crate) fn debug_on() -> bool {
    static ON: std::sync::OnceLock<bool> = std::sync::OnceLock::new();
    *ON.get_or_init(|| std::env::var_os("RNIC_VERBS_DEBUG").is_some_and(|v| v != "0"))
}

/// Whether `RNIC_VERBS_STATS` asks for how far the simulated RNIC ran (cycles and wall
/// time while QPs existed), on stderr, each time its last QP is destroyed: what converts a
/// program's wall-clock figures to the RNIC's clock (docs/PERFORMANCE.md).
pub(crate) fn stats_on() -> bool {
    static ON: std::sync::OnceLock<bool> = std::sync::OnceLock::new();
    *ON.get_or_init(|| std::env::var_os("RNIC_VERBS_STATS").is_some_and(|v| v != "0"))
}

/// Prints to stderr when [`debug_on`].
macro_rules! debug {
    ($($arg:tt)*) => {
        if $crate::debug_on() {
            eprintln!("libibverbs (rnic): {}", format_args!($($arg)*));
        }
    };
}
pub(crate) use debug;

pub(crate) mod abi;
mod backend;
mod cm;
mod convert;
mod dv;
mod engine;
mod errno;
mod objects;
mod staging;
#[allow(unsafe_op_in_unsafe_fn)]
mod sys;
