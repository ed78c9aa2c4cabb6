//! The C structures handed to the program. Each starts with the rdma-core structure the
//! program reads (so a pointer to one is a pointer to the other) and keeps what the
//! library needs beside it. The device thread keys its state by their addresses.
use std::collections::VecDeque;
use std::sync::atomic::AtomicU32;
use std::sync::{Mutex, OnceLock};

use libc::c_int;

use crate::engine::Engine;
use crate::sys;

/// An opened device.
#[repr(C)]
pub(crate) struct Context {
    pub(crate) ibv: sys::ibv_context,
    pub(crate) engine: Engine,
    pub(crate) events: std::sync::Arc<AsyncEvents>,
}

/// A context's asynchronous events: its `async_fd` is the read end of a pipe that carries
/// one octet per event; the events wait here.
pub(crate) struct AsyncEvents {
    pub(crate) read_fd: c_int,
    write_fd: c_int,
    queue: Mutex<VecDeque<(sys::ibv_event_type, usize)>>,
}

impl AsyncEvents {
    /// A pipe for them, or the errno why not.
    pub(crate) fn new() -> Result<AsyncEvents, c_int> {
        let mut fds = [0 as c_int; 2];
        // SAFETY: room for the two descriptors.
        if unsafe { libc::pipe2(fds.as_mut_ptr(), libc::O_CLOEXEC) } != 0 {
            return Err(std::io::Error::last_os_error().raw_os_error().unwrap_or(libc::EMFILE));
        }
        Ok(AsyncEvents { read_fd: fds[0], write_fd: fds[1], queue: Mutex::default() })
    }

    /// Queues an event about `element` (the address of a CQ or QP).
    pub(crate) fn post(&self, kind: sys::ibv_event_type, element: usize) {
        self.queue.lock().expect("async events").push_back((kind, element));
        // SAFETY: the pipe's own write end; one octet from a local.
        unsafe { libc::write(self.write_fd, [1u8].as_ptr().cast(), 1) };
    }

    /// The oldest event, once its octet has been read.
    pub(crate) fn take(&self) -> Option<(sys::ibv_event_type, usize)> {
        self.queue.lock().expect("async events").pop_front()
    }
}

impl Drop for AsyncEvents {
    fn drop(&mut self) {
        // SAFETY: the pipe's own descriptors, closed once.
        unsafe {
            libc::close(self.read_fd);
            libc::close(self.write_fd);
        }
    }
}

/// What becomes of a destroyed object's structure: it stays allocated, a tombstone. A
/// program that passes it again gets EINVAL (the device thread no longer knows its
/// address) instead of the library reading freed memory, and no later object is given its
/// address to be mistaken for it. The cost is the structure's few hundred octets per
/// destroyed object; what it held on the device is freed.
pub(crate) fn tombstone<T>(object: *mut T) {
    let _ = object;
}

/// A protection domain.
#[repr(C)]
pub(crate) struct Pd {
    pub(crate) ibv: sys::ibv_pd,
}

/// A memory region.
#[repr(C)]
pub(crate) struct Mr {
    pub(crate) ibv: sys::ibv_mr,
}

/// A completion queue, with the counts of events handed out and acknowledged.
#[repr(C)]
pub(crate) struct Cq {
    pub(crate) ibv: sys::ibv_cq,
    pub(crate) events: AtomicU32,
    pub(crate) acked: AtomicU32,
}

/// A queue pair, with what it was created with that posting needs.
#[repr(C)]
pub(crate) struct Qp {
    pub(crate) ibv: sys::ibv_qp,
    /// Every send request completes, signaled or not.
    pub(crate) sq_sig_all: bool,
}

/// A completion channel: a pipe, the program polls and reads its `fd` (the read end), the
/// device thread writes the address of a CQ into the other end for each event.
#[repr(C)]
pub(crate) struct Channel {
    pub(crate) ibv: sys::ibv_comp_channel,
    pub(crate) write_fd: c_int,
    /// CQs using it.
    pub(crate) users: AtomicU32,
    pub(crate) destroyed: std::sync::atomic::AtomicBool,
}

/// The one device this library offers.
struct DeviceCell(sys::ibv_device);
// SAFETY: the device structure is written once, before it is shared, and only read after;
// its pointers are null.
unsafe impl Sync for DeviceCell {}
// SAFETY: as above.
unsafe impl Send for DeviceCell {}

/// The device's name, as `ibv_devices` lists it.
pub(crate) const DEVICE_NAME: &str = "rnic0";

/// The device structure, made on first use.
pub(crate) fn device() -> *mut sys::ibv_device {
    static DEVICE: OnceLock<DeviceCell> = OnceLock::new();
    let cell = DEVICE.get_or_init(|| {
        // SAFETY: `ibv_device` is plain data (integers, arrays, nullable function
        // pointers), for which all zeroes is a valid value.
        let mut dev: sys::ibv_device = unsafe { std::mem::zeroed() };
        dev.node_type = sys::IBV_NODE_RNIC;
        dev.transport_type = sys::IBV_TRANSPORT_IWARP;
        copy_str(&mut dev.name, DEVICE_NAME);
        copy_str(&mut dev.dev_name, "uverbs0");
        copy_str(&mut dev.dev_path, "/sys/class/infiniband_verbs/uverbs0");
        copy_str(&mut dev.ibdev_path, &format!("/sys/class/infiniband/{DEVICE_NAME}"));
        DeviceCell(dev)
    });
    std::ptr::from_ref(&cell.0).cast_mut()
}

/// Copies `s` into a C string field, NUL-terminated, cut to fit.
pub(crate) fn copy_str(field: &mut [libc::c_char], s: &str) {
    let n = s.len().min(field.len() - 1);
    for (dst, &src) in field.iter_mut().zip(&s.as_bytes()[..n]) {
        *dst = src as libc::c_char;
    }
    field[n] = 0;
}
