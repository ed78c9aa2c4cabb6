//! Verbs for what an iWARP RNIC does not have: address handles and multicast (UD only),
//! shared receive queues, extended QPs, sysfs. Programs link them (and are bound to them
//! when loaded), so they are here, and each says no the way libibverbs does: NULL or -1
//! with `errno` EOPNOTSUPP, or the errno value itself.
use libc::{c_char, c_int, c_void};

use crate::{errno, sys};

/// NULL with `errno` EOPNOTSUPP.
fn none<T>() -> *mut T {
    errno::set(libc::EOPNOTSUPP);
    std::ptr::null_mut()
}

/// `struct ibv_ah *ibv_create_ah(struct ibv_pd *pd, struct ibv_ah_attr *attr)`.
#[no_mangle]
pub extern "C" fn rnic_ibv_create_ah(_pd: *mut sys::ibv_pd, _attr: *mut c_void) -> *mut c_void {
    none()
}

/// `struct ibv_ah *ibv_create_ah_from_wc(struct ibv_pd *pd, struct ibv_wc *wc, struct
/// ibv_grh *grh, uint8_t port_num)`.
#[no_mangle]
pub extern "C" fn rnic_ibv_create_ah_from_wc(
    _pd: *mut sys::ibv_pd,
    _wc: *mut c_void,
    _grh: *mut c_void,
    _port: u8,
) -> *mut c_void {
    none()
}

/// `int ibv_destroy_ah(struct ibv_ah *ah)`: there are none.
#[no_mangle]
pub extern "C" fn rnic_ibv_destroy_ah(_ah: *mut c_void) -> c_int {
    libc::EINVAL
}

/// `int ibv_attach_mcast(struct ibv_qp *qp, const union ibv_gid *gid, uint16_t lid)`.
#[no_mangle]
pub extern "C" fn rnic_ibv_attach_mcast(_qp: *mut sys::ibv_qp, _gid: *const c_void, _lid: u16) -> c_int {
    libc::EOPNOTSUPP
}

/// `int ibv_detach_mcast(struct ibv_qp *qp, const union ibv_gid *gid, uint16_t lid)`.
#[no_mangle]
pub extern "C" fn rnic_ibv_detach_mcast(_qp: *mut sys::ibv_qp, _gid: *const c_void, _lid: u16) -> c_int {
    libc::EOPNOTSUPP
}

/// `struct ibv_srq *ibv_create_srq(struct ibv_pd *pd, struct ibv_srq_init_attr *attr)`.
#[no_mangle]
pub extern "C" fn rnic_ibv_create_srq(_pd: *mut sys::ibv_pd, _attr: *mut c_void) -> *mut c_void {
    none()
}

/// `int ibv_destroy_srq(struct ibv_srq *srq)`: there are none.
#[no_mangle]
pub extern "C" fn rnic_ibv_destroy_srq(_srq: *mut c_void) -> c_int {
    libc::EINVAL
}

/// `struct ibv_qp_ex *ibv_qp_to_qp_ex(struct ibv_qp *qp)`: NULL, as for a QP not created
/// with `ibv_create_qp_ex` (the only kind here).
#[no_mangle]
pub extern "C" fn rnic_ibv_qp_to_qp_ex(_qp: *mut sys::ibv_qp) -> *mut c_void {
    std::ptr::null_mut()
}

/// `int ibv_read_sysfs_file(const char *dir, const char *file, char *buf, size_t size)`:
/// the simulated device has no sysfs.
#[no_mangle]
pub extern "C" fn rnic_ibv_read_sysfs_file(
    _dir: *const c_char,
    _file: *const c_char,
    _buf: *mut c_char,
    _size: usize,
) -> c_int {
    errno::set(libc::ENOENT);
    -1
}
