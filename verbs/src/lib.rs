//! `libibverbs.so.1` for the RNIC: rdma-core's verbs ABI over `rnic-driver`, so that a
//! program built against Debian's libibverbs runs on the RNIC unmodified, with
//! `LD_LIBRARY_PATH` pointing here (docs/VERBS.md).
//!
//! * [`abi`]: the exported functions, each bound to the rdma-core version node programs
//!   record for it, and the per-context function table (`ibv_context_ops`) that the
//!   header's inline verbs (`ibv_post_send`, `ibv_poll_cq`, …) call through.
//! * [`engine`]: one device per opened context, owned by a thread of its own. Verbs are
//!   jobs sent to it, so the driver's objects (which are neither `Send` nor free of
//!   borrows) stay on one thread and every verb is safe to call from any thread. A
//!   simulated device is clocked by that thread whenever QPs exist.
//! * [`objects`]: the C structures handed to the program, each with the library's state
//!   behind it; [`convert`]: work requests and completions between the two worlds.
//! * [`dv`]: the RFC 7306 masked atomics as direct-verbs entry points
//!   (`include/rnicdv.h`), as `mlx5dv` adds what the common verbs cannot say.
//!
//! The backend comes from the environment: `RNIC_BACKEND=sim` (the default, the Verilated
//! `rnic_top`; `RNIC_SIM_DESIGN` names another model). Its streams are looped back, so a
//! QP talks to the QP of the same device whose number it was given as `dest_qp_num` on the
//! way to RTR.
pub(crate) mod abi;
mod convert;
mod dv;
mod engine;
mod errno;
mod objects;
#[allow(unsafe_op_in_unsafe_fn)]
mod sys;
