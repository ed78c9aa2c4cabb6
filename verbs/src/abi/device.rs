//! Devices: listing, opening, and what they can do.
use std::ffi::CStr;
use std::mem::size_of;

use libc::{c_char, c_int};
use rnic_driver::MAX_QUEUE_LOG_SIZE;
use rnic_proto::host::context::MAX_READS;

use super::context;
use crate::engine::{Config, Engine};
use crate::objects::{copy_str, device, tombstone, AsyncEvents, Context};
use crate::{errno, sys};

/// The port every device has (verbs numbers ports from 1).
pub(crate) const PORT: u8 = 1;
/// Inbound and outbound RDMA Read Requests (and atomics) a QP has at once: the most the
/// RNIC allows (its IRD and ORD limit).
pub(crate) const RD_ATOMIC: u8 = MAX_READS;
/// The node GUID, reported big-endian: a locally administered EUI-64.
const NODE_GUID: u64 = 0x0200_00ff_fe00_0001;
/// A message's largest size: the 32-bit lengths of the RNIC's descriptors.
const MAX_MSG: u32 = u32::MAX;

/// `struct ibv_device **ibv_get_device_list(int *num_devices)`: the RNIC, if the
/// environment names a backend this library drives (else an empty list, and why on
/// stderr).
#[no_mangle]
pub unsafe extern "C" fn rnic_ibv_get_device_list(num_devices: *mut c_int) -> *mut *mut sys::ibv_device {
    let count = match Config::from_env() {
        Ok(_) => 1,
        Err(why) => {
            eprintln!("libibverbs (rnic): {why}");
            0
        }
    };
    // SAFETY: calloc of count + 1 pointers (the list is NULL-terminated); freed by
    // `ibv_free_device_list`.
    let list = unsafe { libc::calloc(count + 1, size_of::<*mut sys::ibv_device>()) }.cast::<*mut sys::ibv_device>();
    if list.is_null() {
        errno::set(libc::ENOMEM);
        return list;
    }
    if count == 1 {
        // SAFETY: the list has room for two pointers.
        unsafe { *list = device() };
    }
    if !num_devices.is_null() {
        // SAFETY: the caller passes a writable int or NULL.
        unsafe { *num_devices = count as c_int };
    }
    list
}

/// `void ibv_free_device_list(struct ibv_device **list)`.
#[no_mangle]
pub unsafe extern "C" fn rnic_ibv_free_device_list(list: *mut *mut sys::ibv_device) {
    // SAFETY: the list came from `calloc` in `ibv_get_device_list`.
    unsafe { libc::free(list.cast()) };
}

/// `const char *ibv_get_device_name(struct ibv_device *device)`.
#[no_mangle]
pub unsafe extern "C" fn rnic_ibv_get_device_name(dev: *mut sys::ibv_device) -> *const c_char {
    // SAFETY: `dev` is the library's device, whose name is NUL-terminated and static.
    unsafe { (*dev).name.as_ptr() }
}

/// `__be64 ibv_get_device_guid(struct ibv_device *device)`.
#[no_mangle]
pub extern "C" fn rnic_ibv_get_device_guid(_dev: *mut sys::ibv_device) -> u64 {
    NODE_GUID.to_be()
}

/// `struct ibv_context *ibv_open_device(struct ibv_device *device)`: a device thread with
/// its own RNIC (for the simulator, its own model).
#[no_mangle]
pub unsafe extern "C" fn rnic_ibv_open_device(dev: *mut sys::ibv_device) -> *mut sys::ibv_context {
    if dev != device() {
        errno::set(libc::ENODEV);
        return std::ptr::null_mut();
    }
    let events = match AsyncEvents::new() {
        Ok(events) => std::sync::Arc::new(events),
        Err(e) => {
            errno::set(e);
            return std::ptr::null_mut();
        }
    };
    let engine = match Config::from_env().and_then(|config| Engine::start(config, std::sync::Arc::clone(&events))) {
        Ok(engine) => engine,
        Err(why) => {
            eprintln!("libibverbs (rnic): {why}");
            errno::set(libc::ENODEV);
            return std::ptr::null_mut();
        }
    };
    // SAFETY: `ibv_context` is pointers, integers and a pthread mutex, all valid as zero
    // (a zero mutex is PTHREAD_MUTEX_INITIALIZER in glibc).
    let mut ibv: sys::ibv_context = unsafe { std::mem::zeroed() };
    ibv.device = dev;
    ibv.ops = super::ops();
    ibv.cmd_fd = -1;
    ibv.async_fd = events.read_fd;
    ibv.num_comp_vectors = 1;
    Box::into_raw(Box::new(Context { ibv, engine, events })).cast()
}

/// `int ibv_close_device(struct ibv_context *context)`: frees whatever the program did
/// not destroy, and the device.
#[no_mangle]
pub unsafe extern "C" fn rnic_ibv_close_device(ctx: *mut sys::ibv_context) -> c_int {
    // SAFETY: a context from `ibv_open_device`, open or a tombstone (the caller's
    // promise). Its structure stays allocated; the device, its thread and the objects on
    // it are freed.
    let closed = unsafe { context(ctx) }.engine.close();
    tombstone(ctx);
    if closed {
        0
    } else {
        libc::EINVAL
    }
}

/// `int ibv_get_async_event(struct ibv_context *context, struct ibv_async_event *event)`:
/// waits for (or, on a non-blocking `async_fd`, takes) the next asynchronous event:
/// IBV_EVENT_CQ_ERR for a CQ that overflowed, IBV_EVENT_QP_FATAL for a QP the device
/// stopped.
#[no_mangle]
pub unsafe extern "C" fn rnic_ibv_get_async_event(
    ctx: *mut sys::ibv_context,
    event: *mut sys::ibv_async_event,
) -> c_int {
    // SAFETY: a live context (the caller's promise).
    let events = &unsafe { context(ctx) }.events;
    let mut octet = [0u8; 1];
    // SAFETY: the context's pipe; one octet of room.
    if unsafe { libc::read(events.read_fd, octet.as_mut_ptr().cast(), 1) } != 1 {
        return -1;
    }
    let Some((kind, element)) = events.take() else {
        errno::set(libc::EAGAIN);
        return -1;
    };
    let element = match kind {
        sys::IBV_EVENT_CQ_ERR => sys::ibv_async_event__bindgen_ty_1 { cq: element as *mut sys::ibv_cq },
        _ => sys::ibv_async_event__bindgen_ty_1 { qp: element as *mut sys::ibv_qp },
    };
    // SAFETY: the caller's writable event.
    unsafe { event.write(sys::ibv_async_event { element, event_type: kind }) };
    0
}

/// `void ibv_ack_async_event(struct ibv_async_event *event)`: nothing waits on the count.
#[no_mangle]
pub extern "C" fn rnic_ibv_ack_async_event(_event: *mut sys::ibv_async_event) {}

/// `int ibv_query_device(struct ibv_context *context, struct ibv_device_attr *attr)`.
#[no_mangle]
pub unsafe extern "C" fn rnic_ibv_query_device(ctx: *mut sys::ibv_context, attr: *mut sys::ibv_device_attr) -> c_int {
    // SAFETY: a live context (the caller's promise).
    let info = unsafe { context(ctx) }.engine.info;
    // SAFETY: plain data; zero is valid.
    let mut a: sys::ibv_device_attr = unsafe { std::mem::zeroed() };
    copy_str(&mut a.fw_ver, &format!("{}.{}", info.version >> 16, info.version & 0xffff));
    a.node_guid = NODE_GUID.to_be();
    a.sys_image_guid = NODE_GUID.to_be();
    a.max_mr_size = u64::MAX;
    a.page_size_cap = 4096;
    a.hw_ver = info.version;
    a.max_qp = info.num_qps as c_int;
    a.max_qp_wr = 1 << (MAX_QUEUE_LOG_SIZE - 1);
    a.max_sge = crate::staging::MAX_SGE as c_int;
    a.max_sge_rd = crate::staging::MAX_SGE as c_int;
    a.max_cq = info.num_cqs as c_int;
    a.max_cqe = 1 << MAX_QUEUE_LOG_SIZE;
    a.max_mr = info.num_mrs as c_int;
    a.max_pd = 1 << 16;
    a.max_qp_rd_atom = RD_ATOMIC.into();
    a.max_qp_init_rd_atom = RD_ATOMIC.into();
    a.max_res_rd_atom = info.num_qps as c_int * c_int::from(RD_ATOMIC);
    a.atomic_cap = if info.features.atomics { sys::IBV_ATOMIC_HCA } else { sys::IBV_ATOMIC_NONE };
    a.max_pkeys = 1;
    a.phys_port_cnt = PORT;
    // SAFETY: the caller passes a writable `ibv_device_attr`.
    unsafe { attr.write(a) };
    0
}

/// `int ibv_query_port(struct ibv_context *context, uint8_t port, struct
/// _compat_ibv_port_attr *attr)`: an active Ethernet port. Only the fields of the
/// original structure are written (the header clears the rest first): a program built
/// against an older header passes only those.
#[no_mangle]
pub unsafe extern "C" fn rnic_ibv_query_port(
    ctx: *mut sys::ibv_context,
    port: u8,
    attr: *mut sys::ibv_port_attr,
) -> c_int {
    let _ = ctx;
    if port != PORT {
        return libc::EINVAL;
    }
    let a = attr;
    // SAFETY: the caller passes a writable port attribute structure at least as long as
    // the original one, which ends with `link_layer`; the writes are field by field.
    unsafe {
        (*a).state = sys::IBV_PORT_ACTIVE;
        (*a).max_mtu = sys::IBV_MTU_4096;
        (*a).active_mtu = sys::IBV_MTU_1024;
        (*a).gid_tbl_len = 1;
        (*a).port_cap_flags = 0;
        (*a).max_msg_sz = MAX_MSG;
        (*a).pkey_tbl_len = 1;
        (*a).active_width = 1;
        (*a).active_speed = 1;
        // LinkUp.
        (*a).phys_state = 5;
        (*a).link_layer = sys::IBV_LINK_LAYER_ETHERNET as u8;
    }
    0
}

/// The port's GID: the IPv4-mapped address of `RNIC_IP` (127.0.0.1 by default), how
/// iWARP devices name themselves by IP address.
fn gid() -> [u8; 16] {
    let ip: std::net::Ipv4Addr =
        std::env::var("RNIC_IP").ok().and_then(|s| s.parse().ok()).unwrap_or(std::net::Ipv4Addr::LOCALHOST);
    ip.to_ipv6_mapped().octets()
}

/// `int ibv_query_gid(struct ibv_context *context, uint8_t port, int index, union ibv_gid
/// *gid)`.
#[no_mangle]
pub unsafe extern "C" fn rnic_ibv_query_gid(
    _ctx: *mut sys::ibv_context,
    port: u8,
    index: c_int,
    out: *mut sys::ibv_gid,
) -> c_int {
    if port != PORT || index != 0 {
        errno::set(libc::EINVAL);
        return -1;
    }
    // SAFETY: the caller passes a writable GID.
    unsafe { (*out).raw = gid() };
    0
}

/// `int _ibv_query_gid_ex(struct ibv_context *context, uint32_t port_num, uint32_t
/// gid_index, struct ibv_gid_entry *entry, uint32_t flags, size_t entry_size)`: the one GID,
/// as an entry (the header's `ibv_query_gid_ex` calls this).
#[no_mangle]
pub unsafe extern "C" fn rnic_ibv_query_gid_ex(
    _ctx: *mut sys::ibv_context,
    port: u32,
    index: u32,
    entry: *mut sys::ibv_gid_entry,
    _flags: u32,
    entry_size: usize,
) -> c_int {
    if port != u32::from(PORT) || index != 0 {
        return libc::EINVAL;
    }
    if entry_size < size_of::<sys::ibv_gid_entry>() {
        return libc::EINVAL;
    }
    let e = sys::ibv_gid_entry {
        gid: sys::ibv_gid { raw: gid() },
        gid_index: 0,
        port_num: port,
        gid_type: sys::IBV_GID_TYPE_IB,
        ndev_ifindex: 0,
    };
    // SAFETY: the caller passes a writable entry of `entry_size` octets, checked above.
    unsafe { entry.write(e) };
    0
}

/// `int ibv_query_gid_type(struct ibv_context *context, uint8_t port_num, unsigned int
/// index, enum ibv_gid_type_sysfs *type)` (rdma-core's private node, which its own tools
/// use): the GID is not a RoCE one.
#[no_mangle]
pub unsafe extern "C" fn rnic_ibv_query_gid_type(
    _ctx: *mut sys::ibv_context,
    port: u8,
    index: u32,
    kind: *mut u32,
) -> c_int {
    if port != PORT || index != 0 {
        errno::set(libc::EINVAL);
        return -1;
    }
    // SAFETY: the caller passes a writable enum.
    unsafe { *kind = sys::IBV_GID_TYPE_IB };
    0
}

/// `int ibv_query_pkey(struct ibv_context *context, uint8_t port, int index, __be16
/// *pkey)`: the default P_Key, the only one.
#[no_mangle]
pub unsafe extern "C" fn rnic_ibv_query_pkey(
    _ctx: *mut sys::ibv_context,
    port: u8,
    index: c_int,
    pkey: *mut u16,
) -> c_int {
    if port != PORT || index != 0 {
        errno::set(libc::EINVAL);
        return -1;
    }
    // SAFETY: the caller passes a writable 16-bit P_Key.
    unsafe { *pkey = 0xffffu16.to_be() };
    0
}

/// `const char *ibv_wc_status_str(enum ibv_wc_status status)`, rdma-core's words.
#[no_mangle]
pub extern "C" fn rnic_ibv_wc_status_str(status: sys::ibv_wc_status) -> *const c_char {
    let s: &'static CStr = match status {
        sys::IBV_WC_SUCCESS => c"success",
        sys::IBV_WC_LOC_LEN_ERR => c"local length error",
        sys::IBV_WC_LOC_QP_OP_ERR => c"local QP operation error",
        sys::IBV_WC_LOC_PROT_ERR => c"local protection error",
        sys::IBV_WC_WR_FLUSH_ERR => c"Work Request Flushed Error",
        sys::IBV_WC_REM_ACCESS_ERR => c"remote access error",
        sys::IBV_WC_REM_OP_ERR => c"remote operation error",
        sys::IBV_WC_REM_ABORT_ERR => c"operation aborted",
        sys::IBV_WC_GENERAL_ERR => c"general error",
        _ => c"unknown",
    };
    s.as_ptr()
}

#[cfg(test)]
mod tests {
    #[test]
    fn the_device_name_is_what_the_list_says() {
        // SAFETY: the library's own device.
        let name = unsafe { std::ffi::CStr::from_ptr(super::rnic_ibv_get_device_name(super::device())) };
        assert_eq!(name.to_str(), Ok(crate::objects::DEVICE_NAME));
    }
}
