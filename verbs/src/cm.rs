//! librdmacm: connections made by rdma_cm over kernel TCP, as an iWARP RNIC makes them.
//!
//! The library is also `librdmacm.so.1` (the same file under its second name, so both
//! share one device): a program linked against Debian's librdmacm finds the `rdma_*`
//! functions here at the RDMACM version nodes it recorded.
//!
//! An id's operations that wait on the network run on threads of their own, and what
//! they find is an event on the id's event channel, in the order librdmacm delivers
//! them: ADDR_RESOLVED and ROUTE_RESOLVED at once (the address is the host's own TCP
//! endpoint), then ESTABLISHED, REJECTED, UNREACHABLE or CONNECT_ERROR on the active side;
//! CONNECT_REQUEST with a new id, then ESTABLISHED once accepted, on the passive side; and
//! DISCONNECTED on both sides when either disconnects or the TCP connection ends. The MPA
//! exchange (revision 2, IRD/ORD, private data) is `rnic_driver::cm`'s; the established
//! socket then carries the QP's FPDUs (the device thread's socket bridge), and the QP is
//! in RTS.
//!
//! A channel is a pipe, one octet per event, so its `fd` can be polled as librdmacm's can.
use std::collections::VecDeque;
use std::net::{SocketAddr, TcpListener, TcpStream};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{mpsc, Arc, Mutex, OnceLock};
use std::time::Duration;

use libc::{c_char, c_int, c_void};
use rnic_driver::cm::{self as mpa, CmError, Decision, Established, MpaConfig};

use crate::abi::context;
use crate::objects::device;
use crate::{errno, sys};

/// How long the passive side waits for the program to accept or reject a request.
const DECISION_WAIT: Duration = Duration::from_secs(60);
/// Bound on an MPA exchange.
const MPA_TIMEOUT: Duration = Duration::from_secs(10);
/// How often a listener looks whether its id was destroyed.
const LISTEN_POLL: Duration = Duration::from_millis(5);
/// Private data a Request or Reply may carry with MPA revision 2 (the IRD/ORD word takes 4
/// of the 512 octets).
const MAX_PRIVATE_DATA: usize = 508;

/// An event channel: the program reads its `fd`, the library writes one octet per event.
#[repr(C)]
pub(crate) struct Channel {
    ibv: sys::rdma_event_channel,
    write_fd: c_int,
    events: Mutex<VecDeque<usize>>,
    destroyed: AtomicBool,
}

/// An event, with the private data its `param.conn` points to.
#[repr(C)]
struct Event {
    ibv: sys::rdma_cm_event,
    private: Vec<u8>,
}

/// An rdma_cm id.
#[repr(C)]
pub(crate) struct Id {
    ibv: sys::rdma_cm_id,
    state: Mutex<IdState>,
}

#[derive(Default)]
struct IdState {
    remote: Option<SocketAddr>,
    listener: Option<TcpListener>,
    /// Set when the id is destroyed: its listener stops.
    stop: Arc<AtomicBool>,
    /// A connection request waiting for the program's answer.
    decision: Option<mpsc::Sender<Decision>>,
}

/// The ids alive, by address: an id a program passes after destroying it (or never had) is
/// EINVAL. A destroyed id's structure stays allocated (a tombstone), so no new id gets its
/// address.
static IDS: Mutex<Vec<usize>> = Mutex::new(Vec::new());

/// Whether `id` is an id this library made and has not destroyed.
fn live(id: *mut sys::rdma_cm_id) -> bool {
    IDS.lock().expect("id registry").contains(&(id as usize))
}

/// EINVAL (as librdmacm's -1 and errno) for an id that is not alive.
macro_rules! check_id {
    ($id:expr) => {
        if !live($id) {
            return fail(libc::EINVAL);
        }
    };
}

/// How long the listening socket of a destroyed id stays open for an id that binds the
/// same address next. Programs that connect twice in a row (perftest: parameters first,
/// then its QPs) destroy the listening id and listen again, and the peer's second connect
/// comes at once: it waits in the socket's backlog instead of being refused in between.
const LINGER: Duration = Duration::from_secs(2);

/// Listening sockets of destroyed ids, with when they were given up.
static LINGERING: Mutex<Vec<(SocketAddr, TcpListener, std::time::Instant)>> = Mutex::new(Vec::new());

/// Connections accepted for an id destroyed meanwhile, by the address they came to: the
/// next id listening on that port takes them.
#[allow(clippy::type_complexity)]
static ORPHANS: Mutex<Vec<(SocketAddr, TcpStream, SocketAddr, std::time::Instant)>> = Mutex::new(Vec::new());

/// The lingering listener bound to `addr`, if any (and drops the ones past [`LINGER`]).
fn take_lingering(addr: SocketAddr) -> Option<TcpListener> {
    let mut pool = LINGERING.lock().expect("lingering listeners");
    pool.retain(|(_, _, since)| since.elapsed() < LINGER);
    let at = pool.iter().position(|(a, ..)| *a == addr && addr.port() != 0)?;
    Some(pool.swap_remove(at).1)
}

/// A raw pointer sent to the thread that works for its object (which outlives the work,
/// as the verbs rules say: an id is not destroyed while its operations run).
#[derive(Clone, Copy)]
struct Ptr(usize);

/// The device librdmacm's ids use (opened once, like librdmacm opens every device once).
fn shared_context() -> Result<*mut sys::ibv_context, c_int> {
    static CONTEXT: OnceLock<usize> = OnceLock::new();
    if let Some(&ctx) = CONTEXT.get() {
        return Ok(ctx as *mut sys::ibv_context);
    }
    // SAFETY: the library's own device.
    let ctx = unsafe { crate::abi::rnic_ibv_open_device(device()) };
    if ctx.is_null() {
        return Err(libc::ENODEV);
    }
    match CONTEXT.set(ctx as usize) {
        Ok(()) => Ok(ctx),
        Err(_) => {
            // Another thread opened it first: keep theirs.
            // SAFETY: ours, just opened, not handed out.
            unsafe { crate::abi::rnic_ibv_close_device(ctx) };
            Ok(*CONTEXT.get().expect("set") as *mut sys::ibv_context)
        }
    }
}

/// The PD `rdma_create_qp` uses when the program gives none.
fn default_pd(ctx: *mut sys::ibv_context) -> Result<*mut sys::ibv_pd, c_int> {
    static PD: OnceLock<usize> = OnceLock::new();
    if let Some(&pd) = PD.get() {
        return Ok(pd as *mut sys::ibv_pd);
    }
    // SAFETY: a live context.
    let pd = unsafe { crate::abi::rnic_ibv_alloc_pd(ctx) };
    if pd.is_null() {
        return Err(libc::ENOMEM);
    }
    Ok(*PD.get_or_init(|| pd as usize) as *mut sys::ibv_pd)
}

/// Returns -1 with `errno` set, librdmacm's way.
fn fail(e: c_int) -> c_int {
    errno::set(e);
    -1
}

/// Queues an event on `id`'s channel.
fn post(
    id: *mut sys::rdma_cm_id,
    listen_id: *mut sys::rdma_cm_id,
    kind: sys::rdma_cm_event_type,
    status: c_int,
    private: Vec<u8>,
) {
    // SAFETY: a live id (events are posted for ids whose operations are running).
    let channel = unsafe { (*id).channel }.cast::<Channel>();
    if channel.is_null() {
        return;
    }
    // SAFETY: plain data; zero is valid.
    let mut ibv: sys::rdma_cm_event = unsafe { std::mem::zeroed() };
    ibv.id = id;
    ibv.listen_id = listen_id;
    ibv.event = kind;
    ibv.status = status;
    let mut event = Box::new(Event { ibv, private });
    // The private data lives as long as the event (freed by `rdma_ack_cm_event`).
    // SAFETY: plain data; zero is valid.
    let rest: sys::rdma_conn_param = unsafe { std::mem::zeroed() };
    event.ibv.param.conn = sys::rdma_conn_param {
        private_data: if event.private.is_empty() { std::ptr::null() } else { event.private.as_ptr().cast() },
        private_data_len: event.private.len() as u8,
        responder_resources: crate::abi::RD_ATOMIC,
        initiator_depth: crate::abi::RD_ATOMIC,
        ..rest
    };
    // SAFETY: a live channel (destroyed only when its ids are gone).
    let ch = unsafe { &*channel };
    ch.events.lock().expect("event queue").push_back(Box::into_raw(event) as usize);
    // SAFETY: the channel's own pipe; one octet from a local.
    unsafe { libc::write(ch.write_fd, [1u8].as_ptr().cast(), 1) };
}

/// DISCONNECTED for `id` (from the device thread, when the peer closed the connection).
pub(crate) fn post_disconnected(id: usize) {
    post(id as *mut sys::rdma_cm_id, std::ptr::null_mut(), sys::RDMA_CM_EVENT_DISCONNECTED, 0, Vec::new());
}

/// `struct rdma_event_channel *rdma_create_event_channel(void)`.
#[no_mangle]
pub extern "C" fn rnic_rdma_create_event_channel() -> *mut sys::rdma_event_channel {
    let mut fds = [0 as c_int; 2];
    // SAFETY: room for two descriptors.
    if unsafe { libc::pipe2(fds.as_mut_ptr(), libc::O_CLOEXEC) } != 0 {
        return std::ptr::null_mut();
    }
    let ch = Channel {
        ibv: sys::rdma_event_channel { fd: fds[0] },
        write_fd: fds[1],
        events: Mutex::default(),
        destroyed: AtomicBool::new(false),
    };
    Box::into_raw(Box::new(ch)).cast()
}

/// `void rdma_destroy_event_channel(struct rdma_event_channel *channel)`.
#[no_mangle]
pub unsafe extern "C" fn rnic_rdma_destroy_event_channel(channel: *mut sys::rdma_event_channel) {
    // SAFETY: a channel from `rdma_create_event_channel`, live or a tombstone.
    let ch = unsafe { &*channel.cast::<Channel>() };
    if ch.destroyed.swap(true, Ordering::AcqRel) {
        return;
    }
    crate::objects::tombstone(channel);
    for event in ch.events.lock().expect("event queue").drain(..) {
        // SAFETY: events not taken are still ours.
        drop(unsafe { Box::from_raw(event as *mut Event) });
    }
    // Only the read end is closed. A thread still blocked in `rdma_get_cm_event` stays
    // blocked, as it does with librdmacm (whose read on the rdma_cm device a close does not
    // end), instead of seeing the pipe end and reporting an error: programs destroy the
    // channel with their event thread still waiting on it. The write end stays open for
    // that; one descriptor per destroyed channel.
    // SAFETY: the channel's own descriptor.
    unsafe { libc::close(ch.ibv.fd) };
}

/// `int rdma_get_cm_event(struct rdma_event_channel *channel, struct rdma_cm_event
/// **event)`: waits for the next event (unless the program made the fd non-blocking).
#[no_mangle]
pub unsafe extern "C" fn rnic_rdma_get_cm_event(
    channel: *mut sys::rdma_event_channel,
    event: *mut *mut sys::rdma_cm_event,
) -> c_int {
    let mut octet = [0u8; 1];
    // SAFETY: a live channel; one octet of room.
    if unsafe { libc::read((*channel).fd, octet.as_mut_ptr().cast(), 1) } != 1 {
        return -1;
    }
    // SAFETY: a live channel.
    let ch = unsafe { &*channel.cast::<Channel>() };
    match ch.events.lock().expect("event queue").pop_front() {
        Some(e) => {
            // SAFETY: the caller's out pointer.
            unsafe { *event = e as *mut sys::rdma_cm_event };
            0
        }
        None => fail(libc::EAGAIN),
    }
}

/// `int rdma_ack_cm_event(struct rdma_cm_event *event)`.
#[no_mangle]
pub unsafe extern "C" fn rnic_rdma_ack_cm_event(event: *mut sys::rdma_cm_event) -> c_int {
    // SAFETY: an event from `rdma_get_cm_event`, acknowledged once.
    drop(unsafe { Box::from_raw(event.cast::<Event>()) });
    0
}

/// `const char *rdma_event_str(enum rdma_cm_event_type event)`, librdmacm's names.
#[no_mangle]
pub extern "C" fn rnic_rdma_event_str(event: sys::rdma_cm_event_type) -> *const c_char {
    let name: &'static std::ffi::CStr = match event {
        sys::RDMA_CM_EVENT_ADDR_RESOLVED => c"RDMA_CM_EVENT_ADDR_RESOLVED",
        sys::RDMA_CM_EVENT_ADDR_ERROR => c"RDMA_CM_EVENT_ADDR_ERROR",
        sys::RDMA_CM_EVENT_ROUTE_RESOLVED => c"RDMA_CM_EVENT_ROUTE_RESOLVED",
        sys::RDMA_CM_EVENT_ROUTE_ERROR => c"RDMA_CM_EVENT_ROUTE_ERROR",
        sys::RDMA_CM_EVENT_CONNECT_REQUEST => c"RDMA_CM_EVENT_CONNECT_REQUEST",
        sys::RDMA_CM_EVENT_CONNECT_RESPONSE => c"RDMA_CM_EVENT_CONNECT_RESPONSE",
        sys::RDMA_CM_EVENT_CONNECT_ERROR => c"RDMA_CM_EVENT_CONNECT_ERROR",
        sys::RDMA_CM_EVENT_UNREACHABLE => c"RDMA_CM_EVENT_UNREACHABLE",
        sys::RDMA_CM_EVENT_REJECTED => c"RDMA_CM_EVENT_REJECTED",
        sys::RDMA_CM_EVENT_ESTABLISHED => c"RDMA_CM_EVENT_ESTABLISHED",
        sys::RDMA_CM_EVENT_DISCONNECTED => c"RDMA_CM_EVENT_DISCONNECTED",
        sys::RDMA_CM_EVENT_DEVICE_REMOVAL => c"RDMA_CM_EVENT_DEVICE_REMOVAL",
        sys::RDMA_CM_EVENT_TIMEWAIT_EXIT => c"RDMA_CM_EVENT_TIMEWAIT_EXIT",
        _ => c"UNKNOWN EVENT",
    };
    name.as_ptr()
}

/// `int rdma_create_id(struct rdma_event_channel *channel, struct rdma_cm_id **id, void
/// *context, enum rdma_port_space ps)`: RDMA_PS_TCP only (iWARP is RC).
#[no_mangle]
pub unsafe extern "C" fn rnic_rdma_create_id(
    channel: *mut sys::rdma_event_channel,
    id: *mut *mut sys::rdma_cm_id,
    ctx: *mut c_void,
    ps: sys::rdma_port_space,
) -> c_int {
    if ps != sys::RDMA_PS_TCP {
        return fail(libc::EOPNOTSUPP);
    }
    // SAFETY: plain data; zero is valid.
    let mut ibv: sys::rdma_cm_id = unsafe { std::mem::zeroed() };
    ibv.channel = channel;
    ibv.context = ctx;
    ibv.ps = ps;
    ibv.qp_type = sys::IBV_QPT_RC;
    let made = Box::into_raw(Box::new(Id { ibv, state: Mutex::default() }));
    IDS.lock().expect("id registry").push(made as usize);
    // SAFETY: the caller's out pointer.
    unsafe { *id = made.cast() };
    0
}

/// `int rdma_destroy_id(struct rdma_cm_id *id)`: a listener stops listening.
#[no_mangle]
pub unsafe extern "C" fn rnic_rdma_destroy_id(id: *mut sys::rdma_cm_id) -> c_int {
    {
        let mut ids = IDS.lock().expect("id registry");
        let Some(at) = ids.iter().position(|&i| i == id as usize) else { return fail(libc::EINVAL) };
        ids.swap_remove(at);
    }
    crate::debug!("id {id:p}: destroyed");
    // SAFETY: an id from `rdma_create_id` or a connection request, alive until now.
    let ours = unsafe { &*id.cast::<Id>() };
    // What it holds (a listening socket) goes; the structure stays, a tombstone.
    let state = std::mem::take(&mut *ours.state.lock().expect("id state"));
    state.stop.store(true, Ordering::Release);
    crate::objects::tombstone(id);
    0
}

/// The socket address a C `sockaddr` holds (IPv4 or IPv6).
///
/// # Safety
///
/// `sa` must be NULL or point to a socket address of its family's size.
unsafe fn std_addr(sa: *const sys::sockaddr) -> Option<SocketAddr> {
    if sa.is_null() {
        return None;
    }
    // SAFETY: the caller's promise; the family says which structure it is.
    unsafe {
        match c_int::from((*sa.cast::<libc::sockaddr>()).sa_family) {
            libc::AF_INET => {
                let sin = sa.cast::<libc::sockaddr_in>().read_unaligned();
                let ip = std::net::Ipv4Addr::from(u32::from_be(sin.sin_addr.s_addr));
                Some(SocketAddr::from((ip, u16::from_be(sin.sin_port))))
            }
            libc::AF_INET6 => {
                let sin6 = sa.cast::<libc::sockaddr_in6>().read_unaligned();
                Some(SocketAddr::from((sin6.sin6_addr.s6_addr, u16::from_be(sin6.sin6_port))))
            }
            _ => None,
        }
    }
}

/// `addr` as a C socket address, in storage large enough for any.
fn c_addr(addr: SocketAddr) -> (libc::sockaddr_storage, libc::socklen_t) {
    // SAFETY: plain data; zero is valid.
    let mut storage: libc::sockaddr_storage = unsafe { std::mem::zeroed() };
    let len = match addr {
        SocketAddr::V4(a) => {
            let sin = libc::sockaddr_in {
                sin_family: libc::AF_INET as libc::sa_family_t,
                sin_port: a.port().to_be(),
                sin_addr: libc::in_addr { s_addr: u32::from(*a.ip()).to_be() },
                sin_zero: [0; 8],
            };
            // SAFETY: `sockaddr_storage` is larger than `sockaddr_in` and aligned for it.
            unsafe { std::ptr::from_mut(&mut storage).cast::<libc::sockaddr_in>().write(sin) };
            std::mem::size_of::<libc::sockaddr_in>()
        }
        SocketAddr::V6(a) => {
            let sin6 = libc::sockaddr_in6 {
                sin6_family: libc::AF_INET6 as libc::sa_family_t,
                sin6_port: a.port().to_be(),
                sin6_flowinfo: a.flowinfo(),
                sin6_addr: libc::in6_addr { s6_addr: a.ip().octets() },
                sin6_scope_id: a.scope_id(),
            };
            // SAFETY: as above, for `sockaddr_in6`.
            unsafe { std::ptr::from_mut(&mut storage).cast::<libc::sockaddr_in6>().write(sin6) };
            std::mem::size_of::<libc::sockaddr_in6>()
        }
    };
    (storage, len as libc::socklen_t)
}

/// Writes an id's source (or destination) address into its route.
///
/// # Safety
///
/// `id` must be a live id.
unsafe fn set_route_addr(id: *mut sys::rdma_cm_id, addr: SocketAddr, source: bool) {
    let (storage, _) = c_addr(addr);
    // SAFETY: the route's address unions are `sockaddr_storage` sized, as `storage` is.
    unsafe {
        let field = if source {
            std::ptr::addr_of_mut!((*id).route.addr.__bindgen_anon_1).cast::<libc::sockaddr_storage>()
        } else {
            std::ptr::addr_of_mut!((*id).route.addr.__bindgen_anon_2).cast::<libc::sockaddr_storage>()
        };
        field.write_unaligned(storage);
    }
}

/// The library's id behind a C id.
///
/// # Safety
///
/// `id` must be a live id.
unsafe fn state<'a>(id: *mut sys::rdma_cm_id) -> std::sync::MutexGuard<'a, IdState> {
    // SAFETY: the caller's promise.
    unsafe { &*id.cast::<Id>() }.state.lock().expect("id state")
}

/// Gives an id the device.
///
/// # Safety
///
/// `id` must be a live id.
unsafe fn bind_device(id: *mut sys::rdma_cm_id) -> Result<(), c_int> {
    let ctx = shared_context()?;
    // SAFETY: the caller's promise.
    unsafe {
        (*id).verbs = ctx;
        (*id).port_num = 1;
    }
    Ok(())
}

/// A TCP socket bound to `addr` and not listening yet: as with librdmacm, the port is taken
/// at `rdma_bind_addr` and connections are taken from `rdma_listen` on (programs bind ids
/// only to find the device of an address, too).
fn bound_socket(addr: SocketAddr) -> std::io::Result<TcpListener> {
    use std::os::fd::{FromRawFd, OwnedFd};
    let family = if addr.is_ipv4() { libc::AF_INET } else { libc::AF_INET6 };
    // SAFETY: plain system calls on a descriptor this function owns from its creation;
    // `c_addr` gives a socket address of the length it says.
    unsafe {
        let fd = libc::socket(family, libc::SOCK_STREAM | libc::SOCK_CLOEXEC, 0);
        if fd < 0 {
            return Err(std::io::Error::last_os_error());
        }
        let fd = OwnedFd::from_raw_fd(fd);
        let on: c_int = 1;
        let on_ptr = std::ptr::from_ref(&on).cast();
        libc::setsockopt(std::os::fd::AsRawFd::as_raw_fd(&fd), libc::SOL_SOCKET, libc::SO_REUSEADDR, on_ptr, 4);
        let (storage, len) = c_addr(addr);
        let sa = std::ptr::from_ref(&storage).cast::<libc::sockaddr>();
        if libc::bind(std::os::fd::AsRawFd::as_raw_fd(&fd), sa, len) != 0 {
            return Err(std::io::Error::last_os_error());
        }
        Ok(TcpListener::from(fd))
    }
}

/// `int rdma_bind_addr(struct rdma_cm_id *id, struct sockaddr *addr)`: the TCP endpoint
/// the id listens on once `rdma_listen` says so.
#[no_mangle]
pub unsafe extern "C" fn rnic_rdma_bind_addr(id: *mut sys::rdma_cm_id, addr: *mut sys::sockaddr) -> c_int {
    check_id!(id);
    // SAFETY: the caller's socket address.
    let Some(addr) = (unsafe { std_addr(addr) }) else { return fail(libc::EAFNOSUPPORT) };
    let listener = match take_lingering(addr).map_or_else(|| bound_socket(addr), Ok) {
        Ok(l) => l,
        Err(e) => return fail(e.raw_os_error().unwrap_or(libc::EADDRINUSE)),
    };
    // SAFETY: a live id.
    if let Err(e) = unsafe { bind_device(id) } {
        return fail(e);
    }
    let bound = listener.local_addr().unwrap_or(addr);
    crate::debug!("id {id:p}: bound to {bound}");
    // SAFETY: a live id.
    unsafe {
        set_route_addr(id, bound, true);
        state(id).listener = Some(listener);
    }
    0
}

/// `int rdma_listen(struct rdma_cm_id *id, int backlog)`: each connection that arrives
/// becomes CONNECT_REQUEST with a new id.
#[no_mangle]
pub unsafe extern "C" fn rnic_rdma_listen(id: *mut sys::rdma_cm_id, backlog: c_int) -> c_int {
    check_id!(id);
    // SAFETY: a live id.
    let (listener, stop) = {
        let mut st = unsafe { state(id) };
        (st.listener.take(), Arc::clone(&st.stop))
    };
    let Some(listener) = listener else { return fail(libc::EINVAL) };
    // SAFETY: the id's own bound socket.
    if unsafe { libc::listen(std::os::fd::AsRawFd::as_raw_fd(&listener), backlog.max(1)) } != 0 {
        return fail(std::io::Error::last_os_error().raw_os_error().unwrap_or(libc::EIO));
    }
    if listener.set_nonblocking(true).is_err() {
        return fail(libc::EIO);
    }
    let listen_id = Ptr(id as usize);
    crate::debug!("id {id:p}: listening");
    let bound = listener.local_addr().ok();
    std::thread::spawn(move || {
        while !stop.load(Ordering::Acquire) {
            let orphan = {
                let mut orphans = ORPHANS.lock().expect("orphan connections");
                orphans.retain(|(.., since)| since.elapsed() < LINGER);
                // By port: the listener may be bound to the wildcard address.
                let at = orphans.iter().position(|(a, ..)| Some(a.port()) == bound.map(|b| b.port()));
                at.map(|at| orphans.swap_remove(at))
            };
            if let Some((_, stream, peer, _)) = orphan {
                std::thread::spawn(move || serve_request(listen_id, stream, peer));
                continue;
            }
            match listener.accept() {
                Ok((stream, peer)) => {
                    std::thread::spawn(move || serve_request(listen_id, stream, peer));
                }
                Err(_) => std::thread::sleep(LISTEN_POLL),
            }
        }
        if let Ok(addr) = listener.local_addr() {
            LINGERING.lock().expect("lingering listeners").push((addr, listener, std::time::Instant::now()));
        }
    });
    0
}

/// The passive side of one connection: the Request becomes CONNECT_REQUEST on a new id,
/// the program's answer goes back in the Reply, and an accepted connection is handed to
/// the id's QP (then ESTABLISHED).
fn serve_request(listen_id: Ptr, stream: TcpStream, peer: SocketAddr) {
    let listen = listen_id.0 as *mut sys::rdma_cm_id;
    let local = stream.local_addr().ok();
    let (answer, decision) = mpsc::channel();
    let mut child: Option<Ptr> = None;
    let config = MpaConfig { timeout: MPA_TIMEOUT, ..MpaConfig::default() };
    if !live(listen) {
        // Accepted just as its id was destroyed: for the next id listening here.
        if let Ok(local) = stream.local_addr() {
            ORPHANS.lock().expect("orphan connections").push((local, stream, peer, std::time::Instant::now()));
        }
        return;
    }
    let result = mpa::accept_on(stream, &config, |request| {
        // SAFETY: the listening id lives while it listens (checked just above; a program
        // destroys it only after its connection requests are answered).
        let (channel, ctx, verbs) = unsafe { ((*listen).channel, (*listen).context, (*listen).verbs) };
        let mut made: *mut sys::rdma_cm_id = std::ptr::null_mut();
        // SAFETY: a fresh id on the listener's channel.
        unsafe { rnic_rdma_create_id(channel, &mut made, ctx, sys::RDMA_PS_TCP) };
        // SAFETY: the id just made.
        unsafe {
            (*made).verbs = verbs;
            (*made).port_num = 1;
            if let Some(local) = local {
                set_route_addr(made, local, true);
            }
            set_route_addr(made, peer, false);
            let mut st = state(made);
            st.remote = Some(peer);
            st.decision = Some(answer);
        }
        child = Some(Ptr(made as usize));
        post(made, listen, sys::RDMA_CM_EVENT_CONNECT_REQUEST, 0, request.private_data.clone());
        decision.recv_timeout(DECISION_WAIT).unwrap_or_else(|e| {
            crate::debug!("connection request from {peer}: no answer from the program ({e}): rejected");
            Decision::Reject(Vec::new())
        })
    });
    if let Err(e) = &result {
        crate::debug!("connection request from {peer}: {e}");
    }
    let Some(Ptr(child)) = child else { return };
    let child = child as *mut sys::rdma_cm_id;
    match result {
        Ok(established) => {
            let private = established.peer_private_data.clone();
            match attach(child, established) {
                Ok(()) => post(child, std::ptr::null_mut(), sys::RDMA_CM_EVENT_ESTABLISHED, 0, Vec::new()),
                Err(e) => post(child, std::ptr::null_mut(), sys::RDMA_CM_EVENT_CONNECT_ERROR, -e, private),
            }
        }
        Err(CmError::RejectedHere) => {}
        Err(_) => post(child, std::ptr::null_mut(), sys::RDMA_CM_EVENT_CONNECT_ERROR, -libc::ECONNRESET, Vec::new()),
    }
}

/// Hands an established connection to the id's QP on its device thread.
fn attach(id: *mut sys::rdma_cm_id, established: Established) -> Result<(), c_int> {
    // SAFETY: a live id (the program keeps it while it connects).
    let (qp, ctx) = unsafe { ((*id).qp, (*id).verbs) };
    if qp.is_null() || ctx.is_null() {
        return Err(libc::EINVAL);
    }
    let (key, id_key) = (qp as usize, id as usize);
    // SAFETY: a live context.
    let engine = &unsafe { context(ctx) }.engine;
    engine.call(move |st| st.attach(key, id_key, established)).map_err(crate::abi::gone)??;
    // SAFETY: a live QP; the program reads its state.
    unsafe { (*qp).state = sys::IBV_QPS_RTS };
    Ok(())
}

/// Copies the private data of a connection parameter block.
///
/// # Safety
///
/// `param` must be NULL or point to a readable block whose private data is readable.
unsafe fn private_data(param: *const sys::rdma_conn_param) -> Result<Vec<u8>, c_int> {
    if param.is_null() {
        return Ok(Vec::new());
    }
    // SAFETY: the caller's promise.
    let p = unsafe { param.read() };
    let len = usize::from(p.private_data_len);
    if len > MAX_PRIVATE_DATA {
        return Err(libc::EINVAL);
    }
    if len == 0 || p.private_data.is_null() {
        return Ok(Vec::new());
    }
    // SAFETY: `len` readable octets (the caller's promise).
    Ok(unsafe { std::slice::from_raw_parts(p.private_data.cast::<u8>(), len) }.to_vec())
}

/// `int rdma_resolve_addr(struct rdma_cm_id *id, struct sockaddr *src_addr, struct
/// sockaddr *dst_addr, int timeout_ms)`: ADDR_RESOLVED at once.
#[no_mangle]
pub unsafe extern "C" fn rnic_rdma_resolve_addr(
    id: *mut sys::rdma_cm_id,
    src: *mut sys::sockaddr,
    dst: *mut sys::sockaddr,
    _timeout_ms: c_int,
) -> c_int {
    check_id!(id);
    // SAFETY: the caller's socket addresses.
    let (Some(remote), source) = (unsafe { std_addr(dst) }, unsafe { std_addr(src) }) else {
        return fail(libc::EAFNOSUPPORT);
    };
    // SAFETY: a live id.
    if let Err(e) = unsafe { bind_device(id) } {
        return fail(e);
    }
    // SAFETY: a live id.
    unsafe {
        set_route_addr(id, remote, false);
        if let Some(source) = source {
            set_route_addr(id, source, true);
        }
        state(id).remote = Some(remote);
    }
    post(id, std::ptr::null_mut(), sys::RDMA_CM_EVENT_ADDR_RESOLVED, 0, Vec::new());
    0
}

/// `int rdma_resolve_route(struct rdma_cm_id *id, int timeout_ms)`: ROUTE_RESOLVED at once
/// (TCP routes by itself).
#[no_mangle]
pub unsafe extern "C" fn rnic_rdma_resolve_route(id: *mut sys::rdma_cm_id, _timeout_ms: c_int) -> c_int {
    check_id!(id);
    // SAFETY: a live id.
    if unsafe { state(id) }.remote.is_none() {
        return fail(libc::EINVAL);
    }
    post(id, std::ptr::null_mut(), sys::RDMA_CM_EVENT_ROUTE_RESOLVED, 0, Vec::new());
    0
}

/// `int rdma_create_qp(struct rdma_cm_id *id, struct ibv_pd *pd, struct ibv_qp_init_attr
/// *qp_init_attr)`: an RC QP on the id's device, in INIT, waiting for its connection.
#[no_mangle]
pub unsafe extern "C" fn rnic_rdma_create_qp(
    id: *mut sys::rdma_cm_id,
    pd: *mut sys::ibv_pd,
    attr: *mut sys::ibv_qp_init_attr,
) -> c_int {
    check_id!(id);
    // SAFETY: a live id.
    let ctx = unsafe { (*id).verbs };
    if ctx.is_null() {
        return fail(libc::EINVAL);
    }
    let pd = if pd.is_null() {
        match default_pd(ctx) {
            Ok(pd) => pd,
            Err(e) => return fail(e),
        }
    } else {
        pd
    };
    // SAFETY: a live PD and the caller's attributes.
    let qp = unsafe { crate::abi::rnic_ibv_create_qp(pd, attr) };
    if qp.is_null() {
        return -1;
    }
    // SAFETY: plain data; zero is valid.
    let mut init: sys::ibv_qp_attr = unsafe { std::mem::zeroed() };
    init.qp_state = sys::IBV_QPS_INIT;
    // SAFETY: the QP just made.
    let e = unsafe { crate::abi::rnic_ibv_modify_qp(qp, &mut init, sys::IBV_QP_STATE as c_int) };
    if e != 0 {
        // SAFETY: as above.
        unsafe { crate::abi::rnic_ibv_destroy_qp(qp) };
        return fail(e);
    }
    // SAFETY: a live id.
    unsafe {
        (*id).qp = qp;
        (*id).pd = pd;
    }
    0
}

/// `void rdma_destroy_qp(struct rdma_cm_id *id)`.
#[no_mangle]
pub unsafe extern "C" fn rnic_rdma_destroy_qp(id: *mut sys::rdma_cm_id) {
    if !live(id) {
        return;
    }
    // SAFETY: a live id.
    let qp = unsafe { (*id).qp };
    if !qp.is_null() {
        // SAFETY: the id's QP, destroyed once.
        unsafe {
            crate::abi::rnic_ibv_destroy_qp(qp);
            (*id).qp = std::ptr::null_mut();
        }
    }
}

/// `int rdma_connect(struct rdma_cm_id *id, struct rdma_conn_param *conn_param)`: the
/// MPA Request goes out; ESTABLISHED, REJECTED, UNREACHABLE or CONNECT_ERROR follows.
#[no_mangle]
pub unsafe extern "C" fn rnic_rdma_connect(id: *mut sys::rdma_cm_id, param: *mut sys::rdma_conn_param) -> c_int {
    check_id!(id);
    // SAFETY: a live id, the caller's parameters.
    let (remote, private) = match (unsafe { state(id) }.remote, unsafe { private_data(param) }) {
        (Some(remote), Ok(private)) => (remote, private),
        (None, _) => return fail(libc::EINVAL),
        (_, Err(e)) => return fail(e),
    };
    // SAFETY: a live id.
    if unsafe { (*id).qp }.is_null() {
        return fail(libc::EINVAL);
    }
    let target = Ptr(id as usize);
    std::thread::spawn(move || {
        let id = target.0 as *mut sys::rdma_cm_id;
        let config = MpaConfig { private_data: private, timeout: MPA_TIMEOUT, ..MpaConfig::default() };
        let none = std::ptr::null_mut();
        let result = mpa::connect(remote, &config);
        if let Err(e) = &result {
            crate::debug!("connecting to {remote}: {e}");
        }
        match result {
            Ok(established) => {
                let private = established.peer_private_data.clone();
                match attach(id, established) {
                    Ok(()) => post(id, none, sys::RDMA_CM_EVENT_ESTABLISHED, 0, private),
                    Err(e) => post(id, none, sys::RDMA_CM_EVENT_CONNECT_ERROR, -e, private),
                }
            }
            Err(CmError::Rejected { private_data }) => {
                post(id, none, sys::RDMA_CM_EVENT_REJECTED, -libc::ECONNREFUSED, private_data)
            }
            Err(CmError::Io(e)) if e.kind() == std::io::ErrorKind::ConnectionRefused => {
                post(id, none, sys::RDMA_CM_EVENT_REJECTED, -libc::ECONNREFUSED, Vec::new())
            }
            Err(CmError::Io(_)) => post(id, none, sys::RDMA_CM_EVENT_UNREACHABLE, -libc::EHOSTUNREACH, Vec::new()),
            Err(_) => post(id, none, sys::RDMA_CM_EVENT_CONNECT_ERROR, -libc::ECONNRESET, Vec::new()),
        }
    });
    0
}

/// Sends the program's answer to a connection request.
///
/// # Safety
///
/// `id` must be a live id.
unsafe fn answer(id: *mut sys::rdma_cm_id, decision: Decision) -> c_int {
    // SAFETY: the caller's promise.
    let sender = unsafe { state(id) }.decision.take();
    match sender.map(|s| s.send(decision)) {
        Some(Ok(())) => 0,
        _ => fail(libc::EINVAL),
    }
}

/// `int rdma_accept(struct rdma_cm_id *id, struct rdma_conn_param *conn_param)`: the Reply
/// goes out; ESTABLISHED follows once the id's QP has the connection.
#[no_mangle]
pub unsafe extern "C" fn rnic_rdma_accept(id: *mut sys::rdma_cm_id, param: *mut sys::rdma_conn_param) -> c_int {
    check_id!(id);
    // SAFETY: a live id.
    if unsafe { (*id).qp }.is_null() {
        return fail(libc::EINVAL);
    }
    // SAFETY: the caller's parameters.
    match unsafe { private_data(param) } {
        // SAFETY: a live id.
        Ok(private) => unsafe { answer(id, Decision::AcceptWith(private)) },
        Err(e) => fail(e),
    }
}

/// `int rdma_reject(struct rdma_cm_id *id, const void *private_data, uint8_t
/// private_data_len)`: the Reply rejects, with this private data.
#[no_mangle]
pub unsafe extern "C" fn rnic_rdma_reject(id: *mut sys::rdma_cm_id, private: *const c_void, len: u8) -> c_int {
    check_id!(id);
    let data = if private.is_null() || len == 0 {
        Vec::new()
    } else {
        // SAFETY: `len` readable octets (the caller's).
        unsafe { std::slice::from_raw_parts(private.cast::<u8>(), len.into()) }.to_vec()
    };
    // SAFETY: a live id.
    unsafe { answer(id, Decision::Reject(data)) }
}

/// `int rdma_disconnect(struct rdma_cm_id *id)`: the QP goes to ERROR (its work flushed),
/// the TCP connection closes, and both sides get DISCONNECTED.
#[no_mangle]
pub unsafe extern "C" fn rnic_rdma_disconnect(id: *mut sys::rdma_cm_id) -> c_int {
    check_id!(id);
    // SAFETY: a live id.
    let (qp, ctx) = unsafe { ((*id).qp, (*id).verbs) };
    if qp.is_null() || ctx.is_null() {
        return fail(libc::EINVAL);
    }
    let key = qp as usize;
    // SAFETY: a live context.
    let engine = &unsafe { context(ctx) }.engine;
    match engine.call(move |st| st.disconnect(key)) {
        Ok(true) => {
            // SAFETY: a live QP.
            unsafe { (*qp).state = sys::IBV_QPS_ERR };
            post(id, std::ptr::null_mut(), sys::RDMA_CM_EVENT_DISCONNECTED, 0, Vec::new());
            0
        }
        Ok(false) => fail(libc::EINVAL),
        Err(_) => fail(libc::EIO),
    }
}

/// `int rdma_set_option(struct rdma_cm_id *id, int level, int optname, void *optval,
/// size_t optlen)`: options are hints for this device (type of service, reuse of
/// addresses, timeouts), taken and ignored.
#[no_mangle]
pub extern "C" fn rnic_rdma_set_option(
    _id: *mut sys::rdma_cm_id,
    _level: c_int,
    _name: c_int,
    _val: *mut c_void,
    _len: usize,
) -> c_int {
    0
}

/// `int rdma_getaddrinfo(const char *node, const char *service, const struct
/// rdma_addrinfo *hints, struct rdma_addrinfo **res)`: the first address the resolver
/// gives, as the destination (or, with RAI_PASSIVE, the source).
#[no_mangle]
pub unsafe extern "C" fn rnic_rdma_getaddrinfo(
    node: *const c_char,
    service: *const c_char,
    hints: *const sys::rdma_addrinfo,
    res: *mut *mut sys::rdma_addrinfo,
) -> c_int {
    let text = |p: *const c_char| {
        // SAFETY: NULL or a C string (the caller's).
        (!p.is_null()).then(|| unsafe { std::ffi::CStr::from_ptr(p) }.to_string_lossy().into_owned())
    };
    let passive = !hints.is_null() && {
        // SAFETY: readable hints (the caller's).
        (unsafe { (*hints).ai_flags }) as u32 & sys::RAI_PASSIVE != 0
    };
    let host = text(node).unwrap_or_else(|| if passive { "0.0.0.0".into() } else { "127.0.0.1".into() });
    let port: u16 = text(service).and_then(|s| s.parse().ok()).unwrap_or(0);
    use std::net::ToSocketAddrs;
    let Some(addr) = (host.as_str(), port).to_socket_addrs().ok().and_then(|mut a| a.next()) else {
        return fail(libc::EADDRNOTAVAIL);
    };
    let (storage, len) = c_addr(addr);
    // SAFETY: calloc'd structures, freed by `rdma_freeaddrinfo`.
    unsafe {
        let info = libc::calloc(1, std::mem::size_of::<sys::rdma_addrinfo>()).cast::<sys::rdma_addrinfo>();
        let sa = libc::calloc(1, std::mem::size_of::<libc::sockaddr_storage>()).cast::<libc::sockaddr_storage>();
        if info.is_null() || sa.is_null() {
            libc::free(info.cast());
            libc::free(sa.cast());
            return fail(libc::ENOMEM);
        }
        sa.write(storage);
        (*info).ai_flags = if passive { sys::RAI_PASSIVE as c_int } else { 0 };
        (*info).ai_family = c_int::from(storage.ss_family);
        (*info).ai_qp_type = sys::IBV_QPT_RC as c_int;
        (*info).ai_port_space = sys::RDMA_PS_TCP as c_int;
        if passive {
            (*info).ai_src_addr = sa.cast();
            (*info).ai_src_len = len;
        } else {
            (*info).ai_dst_addr = sa.cast();
            (*info).ai_dst_len = len;
        }
        *res = info;
    }
    0
}

/// `void rdma_freeaddrinfo(struct rdma_addrinfo *res)`.
#[no_mangle]
pub unsafe extern "C" fn rnic_rdma_freeaddrinfo(mut res: *mut sys::rdma_addrinfo) {
    while !res.is_null() {
        // SAFETY: a list from `rdma_getaddrinfo`, freed once.
        unsafe {
            let next = (*res).ai_next;
            libc::free((*res).ai_src_addr.cast());
            libc::free((*res).ai_dst_addr.cast());
            libc::free(res.cast());
            res = next;
        }
    }
}

/// librdmacm functions that programs link against but this library does not offer yet
/// (extended QP creation, connecting a QP the program created itself, rsockets): -1 with
/// ENOSYS, so a program that calls one says so instead of failing to load.
macro_rules! not_offered {
    ($($name:ident),* $(,)?) => {$(
        #[no_mangle]
        pub extern "C" fn $name() -> c_int {
            fail(libc::ENOSYS)
        }
    )*};
}

not_offered!(rnic_rdma_create_qp_ex, rnic_rdma_establish, rnic_rdma_init_qp_attr, rnic_rpoll);
