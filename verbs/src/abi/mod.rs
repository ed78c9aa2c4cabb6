//! The exported verbs, one file per object, as rdma-core's `verbs.c` and the providers
//! split them.
//!
//! Every function is defined under an `rnic_` name and exported under the verbs name at
//! the version node Debian's libibverbs gives it (`.symver` below; the nodes themselves are
//! in `libibverbs.map`), because a program records the node with each symbol it uses and
//! the loader looks for exactly that. The verbs the header makes inline (`ibv_post_send`,
//! `ibv_post_recv`, `ibv_poll_cq`, `ibv_req_notify_cq`) reach the library through the
//! context's `ops` table instead.
//!
//! Conventions, as in libibverbs: a verb that returns an object returns NULL and sets
//! `errno`; one that returns `int` returns 0 or the errno value itself.
mod absent;
mod cq;
mod device;
mod memory;
pub(crate) mod qp;

pub(crate) use cq::{poll_cq, req_notify_cq};
pub(crate) use device::{rnic_ibv_close_device, rnic_ibv_open_device, RD_ATOMIC};
pub(crate) use memory::rnic_ibv_alloc_pd;
pub(crate) use qp::{post_recv, post_send};
pub(crate) use qp::{rnic_ibv_create_qp, rnic_ibv_destroy_qp, rnic_ibv_modify_qp};

use crate::engine::Gone;
use crate::objects::Context;
use crate::sys;

/// Exports each `rnic_` function under its verbs name and version node: a two-instruction
/// stub of that name jumps to it. (`.symver` needs the symbol defined in the same object,
/// which the compiler's split of the crate into units does not promise for the function
/// itself; the stub is always beside its directive.)
#[cfg(target_arch = "x86_64")]
macro_rules! export {
    ($($func:ident => $name:literal @ $node:literal),* $(,)?) => {
        std::arch::global_asm!(
            ".text",
            $(
                concat!(".globl rnic_stub_", $name),
                concat!(".type rnic_stub_", $name, ",@function"),
                concat!("rnic_stub_", $name, ":"),
                concat!("jmp ", stringify!($func), "@PLT"),
                concat!(".size rnic_stub_", $name, ", .-rnic_stub_", $name),
                concat!(".symver rnic_stub_", $name, ", ", $name, "@@", $node),
            )*
        );
    };
}

#[cfg(target_arch = "aarch64")]
macro_rules! export {
    ($($func:ident => $name:literal @ $node:literal),* $(,)?) => {
        std::arch::global_asm!(
            ".text",
            $(
                concat!(".globl rnic_stub_", $name),
                concat!(".type rnic_stub_", $name, ",%function"),
                concat!("rnic_stub_", $name, ":"),
                concat!("b ", stringify!($func)),
                concat!(".size rnic_stub_", $name, ", .-rnic_stub_", $name),
                concat!(".symver rnic_stub_", $name, ", ", $name, "@@", $node),
            )*
        );
    };
}

export! {
    rnic_ibv_get_device_list => "ibv_get_device_list" @ "IBVERBS_1.1",
    rnic_ibv_free_device_list => "ibv_free_device_list" @ "IBVERBS_1.1",
    rnic_ibv_get_device_name => "ibv_get_device_name" @ "IBVERBS_1.1",
    rnic_ibv_get_device_guid => "ibv_get_device_guid" @ "IBVERBS_1.1",
    rnic_ibv_open_device => "ibv_open_device" @ "IBVERBS_1.1",
    rnic_ibv_close_device => "ibv_close_device" @ "IBVERBS_1.1",
    rnic_ibv_query_device => "ibv_query_device" @ "IBVERBS_1.1",
    rnic_ibv_query_port => "ibv_query_port" @ "IBVERBS_1.1",
    rnic_ibv_query_gid => "ibv_query_gid" @ "IBVERBS_1.1",
    rnic_ibv_query_pkey => "ibv_query_pkey" @ "IBVERBS_1.1",
    rnic_ibv_alloc_pd => "ibv_alloc_pd" @ "IBVERBS_1.1",
    rnic_ibv_dealloc_pd => "ibv_dealloc_pd" @ "IBVERBS_1.1",
    rnic_ibv_reg_mr => "ibv_reg_mr" @ "IBVERBS_1.1",
    rnic_ibv_reg_mr_iova2 => "ibv_reg_mr_iova2" @ "IBVERBS_1.8",
    rnic_ibv_dereg_mr => "ibv_dereg_mr" @ "IBVERBS_1.1",
    rnic_ibv_create_comp_channel => "ibv_create_comp_channel" @ "IBVERBS_1.0",
    rnic_ibv_destroy_comp_channel => "ibv_destroy_comp_channel" @ "IBVERBS_1.0",
    rnic_ibv_create_cq => "ibv_create_cq" @ "IBVERBS_1.1",
    rnic_ibv_destroy_cq => "ibv_destroy_cq" @ "IBVERBS_1.1",
    rnic_ibv_get_cq_event => "ibv_get_cq_event" @ "IBVERBS_1.1",
    rnic_ibv_ack_cq_events => "ibv_ack_cq_events" @ "IBVERBS_1.1",
    rnic_ibv_create_qp => "ibv_create_qp" @ "IBVERBS_1.1",
    rnic_ibv_modify_qp => "ibv_modify_qp" @ "IBVERBS_1.1",
    rnic_ibv_query_qp => "ibv_query_qp" @ "IBVERBS_1.1",
    rnic_ibv_destroy_qp => "ibv_destroy_qp" @ "IBVERBS_1.1",
    rnic_ibv_wc_status_str => "ibv_wc_status_str" @ "IBVERBS_1.1",
    rnic_ibv_get_async_event => "ibv_get_async_event" @ "IBVERBS_1.1",
    rnic_ibv_ack_async_event => "ibv_ack_async_event" @ "IBVERBS_1.1",
    rnic_ibv_query_gid_ex => "_ibv_query_gid_ex" @ "IBVERBS_1.11",
    rnic_ibv_query_gid_type => "ibv_query_gid_type" @ "IBVERBS_PRIVATE_34",
    rnic_ibv_create_ah => "ibv_create_ah" @ "IBVERBS_1.1",
    rnic_ibv_create_ah_from_wc => "ibv_create_ah_from_wc" @ "IBVERBS_1.1",
    rnic_ibv_destroy_ah => "ibv_destroy_ah" @ "IBVERBS_1.1",
    rnic_ibv_attach_mcast => "ibv_attach_mcast" @ "IBVERBS_1.1",
    rnic_ibv_detach_mcast => "ibv_detach_mcast" @ "IBVERBS_1.1",
    rnic_ibv_create_srq => "ibv_create_srq" @ "IBVERBS_1.1",
    rnic_ibv_destroy_srq => "ibv_destroy_srq" @ "IBVERBS_1.1",
    rnic_ibv_qp_to_qp_ex => "ibv_qp_to_qp_ex" @ "IBVERBS_1.6",
    rnic_ibv_read_sysfs_file => "ibv_read_sysfs_file" @ "IBVERBS_1.0",
    rnic_rdma_create_event_channel => "rdma_create_event_channel" @ "RDMACM_1.0",
    rnic_rdma_destroy_event_channel => "rdma_destroy_event_channel" @ "RDMACM_1.0",
    rnic_rdma_get_cm_event => "rdma_get_cm_event" @ "RDMACM_1.0",
    rnic_rdma_ack_cm_event => "rdma_ack_cm_event" @ "RDMACM_1.0",
    rnic_rdma_event_str => "rdma_event_str" @ "RDMACM_1.0",
    rnic_rdma_create_id => "rdma_create_id" @ "RDMACM_1.0",
    rnic_rdma_destroy_id => "rdma_destroy_id" @ "RDMACM_1.0",
    rnic_rdma_bind_addr => "rdma_bind_addr" @ "RDMACM_1.0",
    rnic_rdma_listen => "rdma_listen" @ "RDMACM_1.0",
    rnic_rdma_resolve_addr => "rdma_resolve_addr" @ "RDMACM_1.0",
    rnic_rdma_resolve_route => "rdma_resolve_route" @ "RDMACM_1.0",
    rnic_rdma_create_qp => "rdma_create_qp" @ "RDMACM_1.0",
    rnic_rdma_destroy_qp => "rdma_destroy_qp" @ "RDMACM_1.0",
    rnic_rdma_connect => "rdma_connect" @ "RDMACM_1.0",
    rnic_rdma_accept => "rdma_accept" @ "RDMACM_1.0",
    rnic_rdma_reject => "rdma_reject" @ "RDMACM_1.0",
    rnic_rdma_disconnect => "rdma_disconnect" @ "RDMACM_1.0",
    rnic_rdma_set_option => "rdma_set_option" @ "RDMACM_1.0",
    rnic_rdma_getaddrinfo => "rdma_getaddrinfo" @ "RDMACM_1.0",
    rnic_rdma_freeaddrinfo => "rdma_freeaddrinfo" @ "RDMACM_1.0",
    rnic_rdma_create_qp_ex => "rdma_create_qp_ex" @ "RDMACM_1.0",
    rnic_rdma_establish => "rdma_establish" @ "RDMACM_1.2",
    rnic_rdma_init_qp_attr => "rdma_init_qp_attr" @ "RDMACM_1.2",
    rnic_rpoll => "rpoll" @ "RDMACM_1.0",
}

/// The library's context behind a verbs context.
///
/// # Safety
///
/// `ctx` must come from `ibv_open_device` (open, or closed: a closed context's structure
/// stays, see [`crate::objects::tombstone`]).
pub(crate) unsafe fn context<'a>(ctx: *mut sys::ibv_context) -> &'a Context {
    // SAFETY: a context is the first field of a live `Context` (the caller's promise).
    unsafe { &*ctx.cast::<Context>() }
}

/// The errno of a verb that did not run: EINVAL on a closed device (as on any destroyed
/// object), EIO when the device thread stopped.
pub(crate) fn gone(why: Gone) -> libc::c_int {
    match why {
        Gone::Closed => libc::EINVAL,
        Gone::Stopped => libc::EIO,
    }
}

/// The function table the header's inline verbs call through.
pub(crate) fn ops() -> sys::ibv_context_ops {
    // SAFETY: all fields are nullable function pointers; zero is `None`.
    let mut ops: sys::ibv_context_ops = unsafe { std::mem::zeroed() };
    ops.poll_cq = Some(poll_cq);
    ops.req_notify_cq = Some(req_notify_cq);
    ops.post_send = Some(post_send);
    ops.post_recv = Some(post_recv);
    ops
}
