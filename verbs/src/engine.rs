//! The device thread: one per opened context, owning the backend, the driver's `Device`
//! and every object made on it.
//!
//! The driver's objects borrow their device (a QP its PD and CQs, an MR its PD and
//! memory), and the simulated backend is not `Send`. A C program, though, keeps objects
//! for as long as it likes and calls verbs from any thread. So the thread that opened the
//! backend keeps it, the objects live on it as [`Pinned`] values at fixed addresses, and a
//! verb is a job sent to it ([`Engine::call`]). An object is freed only once no other
//! object borrows it (the `users` counts), which is also when verbs allows destroying it
//! (EBUSY before).
//!
//! A simulated RNIC runs only when clocked: while QPs exist the thread runs the model
//! between jobs ([`CHUNK`] cycles at a time), and a poll that finds a CQ empty runs it
//! too, so a program that spins on `ibv_poll_cq` sees its work complete. After every run
//! the interrupts of armed CQs become events on their completion channels.
use std::collections::{HashMap, VecDeque};
use std::ptr::NonNull;
use std::sync::{mpsc, Mutex};
use std::time::Duration;

use rnic_driver::{
    CompletionQueue, Connection, Device, DmaRegion, Hal, MemoryRegion, ProtectionDomain, QpState, QueuePair,
    RecvRequest,
};

pub(crate) use crate::backend::Config;
use crate::backend::{Hardware, Streams};
use crate::sys;

/// The backend behind a device, whatever it is.
pub(crate) type DynHal = Box<dyn Hal>;
pub(crate) type Dev = Device<DynHal>;

/// Cycles the thread runs the model between two looks at its job queue.
pub(crate) const CHUNK: u64 = 64;

/// A job: a verb run on the device thread.
type Job = Box<dyn FnOnce(&mut State) + Send>;

/// How the library reaches a device: the sending end of its thread's job queue.
pub(crate) struct Engine {
    /// `None` once the device is closed.
    jobs: Mutex<Option<mpsc::Sender<Job>>>,
    thread: Mutex<Option<std::thread::JoinHandle<()>>>,
    /// What the device said when opened.
    pub(crate) info: rnic_driver::DeviceInfo,
}

/// Why a verb did not run: the program closed the device, or its thread stopped (a
/// panic in the model or the driver) and nothing more runs.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Gone {
    Closed,
    Stopped,
}

impl Engine {
    /// Starts a device thread on a freshly opened backend.
    pub(crate) fn start(config: Config, events: std::sync::Arc<crate::objects::AsyncEvents>) -> Result<Engine, String> {
        let (jobs, queue) = mpsc::channel::<Job>();
        let (opened, open_result) = mpsc::sync_channel(1);
        let thread = std::thread::Builder::new()
            .name("rnic-device".into())
            .spawn(move || match State::open(&config, events) {
                Ok(mut state) => {
                    let _ = opened.send(Ok(*state.dev().info()));
                    state.serve(queue);
                }
                Err(e) => {
                    let _ = opened.send(Err(e));
                }
            })
            .map_err(|e| format!("cannot start the device thread: {e}"))?;
        match open_result.recv() {
            Ok(Ok(info)) => Ok(Engine { jobs: Mutex::new(Some(jobs)), thread: Mutex::new(Some(thread)), info }),
            Ok(Err(e)) => Err(e),
            Err(_) => Err("the device thread stopped while opening the device".into()),
        }
    }

    /// Runs `job` on the device thread and returns its result.
    pub(crate) fn call<R: Send + 'static>(
        &self,
        job: impl FnOnce(&mut State) -> R + Send + 'static,
    ) -> Result<R, Gone> {
        let (done, result) = mpsc::sync_channel(1);
        let jobs = self.jobs.lock().expect("job queue").clone().ok_or(Gone::Closed)?;
        jobs.send(Box::new(move |state| {
            let _ = done.send(job(state));
        }))
        .map_err(|_| Gone::Stopped)?;
        result.recv().map_err(|_| Gone::Stopped)
    }

    /// Closes the job queue; the thread frees every object and the device, and ends.
    /// Whether it was open.
    pub(crate) fn close(&self) -> bool {
        let was_open = self.jobs.lock().expect("job queue").take().is_some();
        if let Some(thread) = self.thread.lock().expect("device thread").take() {
            let _ = thread.join();
        }
        was_open
    }
}

impl Drop for Engine {
    fn drop(&mut self) {
        self.close();
    }
}

/// How far the model ran while QPs existed: the ratio of its cycles to wall time converts
/// a program's wall-clock averages (perftest's) to the RNIC's clock. Reported when the last
/// QP goes, with `RNIC_VERBS_STATS=1`.
#[derive(Default)]
struct Ran {
    /// Every cycle run.
    cycles: u64,
    /// When QPs first existed, and `cycles` then.
    since: Option<(std::time::Instant, u64)>,
}

impl Ran {
    /// `cycles` more were run; `busy` while QPs exist.
    fn add(&mut self, cycles: u64, busy: bool) {
        if busy && self.since.is_none() {
            self.since = Some((std::time::Instant::now(), self.cycles));
        }
        self.cycles += cycles;
    }

    /// The last QP is gone: report the stretch.
    fn end(&mut self) {
        let Some((t0, c0)) = self.since.take() else { return };
        if crate::stats_on() {
            let (cycles, secs) = (self.cycles - c0, t0.elapsed().as_secs_f64());
            eprintln!(
                "libibverbs (rnic): ran {cycles} cycles in {secs:.6} s of wall time while QPs existed ({:.0} \
                 cycles/s)",
                cycles as f64 / secs
            );
        }
    }
}

/// A value other values borrow for as long as the program keeps them: boxed at a fixed
/// address, and freed only by [`Pinned::free`], which the owner calls once nothing
/// borrows it any more.
pub(crate) struct Pinned<T: 'static>(NonNull<T>);

impl<T: 'static> Pinned<T> {
    pub(crate) fn new(value: T) -> Self {
        Pinned(NonNull::from(Box::leak(Box::new(value))))
    }

    /// A borrow for as long as the caller promises.
    ///
    /// # Safety
    ///
    /// The reference, and everything made from it, must be gone before [`Pinned::free`].
    pub(crate) unsafe fn borrow(&self) -> &'static T {
        // SAFETY: the box is alive until `free`; the caller drops the borrow before that.
        unsafe { self.0.as_ref() }
    }

    /// The value, for as long as this handle lives.
    pub(crate) fn get(&self) -> &T {
        // SAFETY: the box is alive until `free`, which takes the handle.
        unsafe { self.0.as_ref() }
    }

    /// Drops the value.
    ///
    /// # Safety
    ///
    /// No reference from [`Pinned::borrow`] may still exist.
    pub(crate) unsafe fn free(self) {
        // SAFETY: passed on from the caller.
        drop(unsafe { self.into_inner() });
    }

    /// Takes the value back.
    ///
    /// # Safety
    ///
    /// No reference from [`Pinned::borrow`] may still exist.
    pub(crate) unsafe fn into_inner(self) -> T {
        // SAFETY: the pointer came from `Box::leak` and is reclaimed once (this takes the
        // handle); no borrow of it is left (the caller's promise).
        *unsafe { Box::from_raw(self.0.as_ptr()) }
    }
}

/// A protection domain and the objects made in it.
pub(crate) struct PdEntry {
    pub(crate) pd: Pinned<ProtectionDomain<'static, DynHal>>,
    pub(crate) users: u32,
}

/// A memory region over the program's memory, mapped for the device.
pub(crate) struct MrEntry {
    /// `None` once deregistered (only while being destroyed).
    pub(crate) mr: Option<MemoryRegion<'static, DynHal>>,
    pub(crate) memory: Pinned<DmaRegion<'static>>,
    pub(crate) pd: usize,
}

/// A completion queue, whether it is armed, and where its events go.
pub(crate) struct CqEntry {
    pub(crate) cq: Pinned<CompletionQueue<'static, DynHal>>,
    pub(crate) users: u32,
    /// Armed, and whether for solicited completions only.
    pub(crate) armed: Option<bool>,
    /// The write end of its completion channel's pipe.
    pub(crate) channel: Option<libc::c_int>,
    /// IBV_EVENT_CQ_ERR has been reported (a CQE found the ring full).
    pub(crate) overflowed: bool,
}

/// A queue pair and the verbs state the device does not keep.
pub(crate) struct QpEntry {
    pub(crate) qp: QueuePair<'static, DynHal>,
    pub(crate) pd: usize,
    pub(crate) send_cq: usize,
    pub(crate) recv_cq: usize,
    /// The verbs state: RESET, INIT and RTR are all RESET in the device.
    pub(crate) state: sys::ibv_qp_state,
    /// Receives posted in INIT or RTR, handed to the device on the way to RTS.
    pub(crate) early_recvs: Vec<RecvRequest>,
    /// The peer QP, once given.
    pub(crate) dest_qpn: Option<u32>,
    pub(crate) sq_sig_all: bool,
    pub(crate) caps: sys::ibv_qp_cap,
    /// Every posted SQ request, oldest first, so that a completion gets the opcode of its
    /// request (and its staged octets are finished); completions come in order, so what
    /// is older than a completion's request completed unsignaled.
    pub(crate) posted: VecDeque<crate::staging::SendRecord>,
    /// Every posted receive, oldest first (early ones too), with its staged octets.
    pub(crate) recvs: crate::staging::RecvRecords,
    /// SGE lists and inline data go through it; made on first need, dropped after `qp`.
    pub(crate) staging: Option<crate::staging::Staging>,
    /// The connection rdma_cm made for it, carried over a socket.
    pub(crate) link: Option<CmLink>,
    /// IBV_EVENT_QP_FATAL has been reported (the device stopped it: a Terminate).
    pub(crate) fatal: bool,
}

/// A QP's connection over a socket, and the rdma_cm id events about it go to.
pub(crate) struct CmLink {
    /// The `rdma_cm_id` (its address).
    pub(crate) id: usize,
    pub(crate) conn_id: u16,
    /// DISCONNECTED has been reported.
    pub(crate) ended: bool,
}

/// CONN_IDs of connections carried over sockets: this plus the QP number, above every QP
/// number (which name the looped-back connections).
const SOCKET_CONN_IDS: u16 = 0x8000;

/// What a field that is `None` only while the state is dropped says when it is not there.
const OPEN: &str = "open until dropped";

/// Chunks of clocking between two looks at whether a socket's connection ended.
const ENDED_CHECK_CHUNKS: u64 = 64;

/// Everything on the device thread.
pub(crate) struct State {
    /// `None` only while being dropped.
    hardware: Option<Hardware>,
    dev: Option<Pinned<Dev>>,
    pub(crate) pds: HashMap<usize, PdEntry>,
    pub(crate) mrs: HashMap<usize, MrEntry>,
    pub(crate) cqs: HashMap<usize, CqEntry>,
    pub(crate) qps: HashMap<usize, QpEntry>,
    next_vector: u16,
    /// The device's streams: to sockets for connections rdma_cm made, looped back for QPs
    /// connected on the device itself. `None` only while being dropped.
    streams: Option<Streams>,
    chunks: u64,
    ran: Ran,
    /// Where asynchronous events go (the context's `async_fd`).
    events: std::sync::Arc<crate::objects::AsyncEvents>,
}

impl State {
    fn open(config: &Config, events: std::sync::Arc<crate::objects::AsyncEvents>) -> Result<State, String> {
        let (hardware, ports) = Hardware::open(config)?;
        // SAFETY: the device (and every object, which all borrow the device) is dropped
        // before the backend is freed (`Drop for State`).
        let hal = unsafe { hardware.hal() };
        let dev = match Device::open(hal) {
            Ok(dev) => Pinned::new(dev),
            Err(e) => {
                // SAFETY: the device holding the borrow failed to open and is gone.
                unsafe { hardware.free() };
                return Err(format!("cannot open the RNIC: {e}"));
            }
        };
        dev.get().enable();
        // SAFETY: the rings are dropped before the device (`Drop for State`).
        let streams = match Streams::new(ports, unsafe { dev.borrow() }.hal()) {
            Ok(streams) => streams,
            Err(e) => {
                // SAFETY: nothing borrows the device; then nothing borrows the backend.
                unsafe {
                    dev.free();
                    hardware.free();
                }
                return Err(e);
            }
        };
        Ok(State {
            hardware: Some(hardware),
            dev: Some(dev),
            pds: HashMap::new(),
            mrs: HashMap::new(),
            cqs: HashMap::new(),
            qps: HashMap::new(),
            next_vector: 0,
            streams: Some(streams),
            chunks: 0,
            ran: Ran::default(),
            events,
        })
    }

    /// The device.
    pub(crate) fn dev(&self) -> &Dev {
        self.dev.as_ref().expect(OPEN).get()
    }

    /// The device, for objects that keep a borrow of it.
    pub(crate) fn dev_static(&self) -> &'static Dev {
        // SAFETY: every object is dropped before the device (`Drop for State`).
        unsafe { self.dev.as_ref().expect(OPEN).borrow() }
    }

    /// An interrupt vector for a new CQ: each its own, so an interrupt names its CQ.
    pub(crate) fn next_vector(&mut self) -> u16 {
        self.next_vector = self.next_vector.wrapping_add(1);
        self.next_vector
    }

    /// Runs jobs as they come, clocking the model between them while QPs exist.
    fn serve(&mut self, queue: mpsc::Receiver<Job>) {
        loop {
            let job = if self.qps.is_empty() {
                match queue.recv() {
                    Ok(job) => job,
                    Err(_) => return,
                }
            } else {
                match queue.try_recv() {
                    Ok(job) => job,
                    Err(mpsc::TryRecvError::Empty) => {
                        self.clock(CHUNK);
                        self.chunks += 1;
                        if self.chunks.is_multiple_of(ENDED_CHECK_CHUNKS) {
                            self.reap_ended();
                            self.watch_errors();
                        }
                        continue;
                    }
                    Err(mpsc::TryRecvError::Disconnected) => return,
                }
            };
            job(self);
            if self.qps.is_empty() {
                self.ran.end();
            }
        }
    }

    /// Runs the model for `cycles` and delivers the events of armed CQs that interrupted,
    /// or (armed for any completion) that hold one: a CQ armed with completions already in
    /// its ring wakes at once, as a device armed with its consumer index does, so a program
    /// that arms without polling once more does not sleep on them.
    pub(crate) fn clock(&mut self, cycles: u64) {
        let hardware = self.hardware.as_ref().expect(OPEN);
        hardware.run(cycles);
        if hardware.sim().is_some() {
            self.ran.add(cycles, !self.qps.is_empty());
        }
        self.streams.as_mut().expect(OPEN).pump();
        let hal = self.dev_static().hal();
        for (&cq_ptr, entry) in self.cqs.iter_mut() {
            let Some(solicited_only) = entry.armed else { continue };
            let cq = entry.cq.get();
            let interrupted = hal.wait_irq(cq.vector(), Duration::ZERO) == Ok(true);
            // A waiting completion wakes an arm for any; a solicited-only arm waits for
            // the interrupt: only the device knows which completions are solicited.
            if interrupted || (!solicited_only && cq.has_completion()) {
                entry.armed = None;
                if let Some(fd) = entry.channel {
                    let event = (cq_ptr as u64).to_ne_bytes();
                    // SAFETY: `fd` is the open write end of the channel's pipe (closed
                    // only when the channel is destroyed, which no CQ may still use) and
                    // `event` is 8 readable octets.
                    let _ = unsafe { libc::write(fd, event.as_ptr().cast(), event.len()) };
                }
            }
        }
    }
}

impl State {
    /// Hands QP `key` (in RESET or INIT) the connection rdma_cm set up, moves it to RTS and
    /// starts carrying its FPDUs over the connection's socket; events about it go to `id`.
    pub(crate) fn attach(
        &mut self,
        key: usize,
        id: usize,
        negotiated: rnic_driver::cm::Established,
    ) -> Result<(), libc::c_int> {
        let entry = self.qps.get_mut(&key).ok_or(libc::EINVAL)?;
        if !matches!(entry.state, sys::IBV_QPS_RESET | sys::IBV_QPS_INIT) {
            return Err(libc::EINVAL);
        }
        let conn_id = SOCKET_CONN_IDS | entry.qp.qpn() as u16;
        let depth = |n: u16| n.clamp(1, crate::abi::RD_ATOMIC.into()) as u8;
        let conn = Connection {
            conn_id,
            crc: negotiated.tx.crc,
            markers_tx: negotiated.tx.markers,
            markers_rx: negotiated.rx.markers,
            ird: depth(negotiated.ird),
            ord: depth(negotiated.ord),
        };
        let driver = |r: Result<(), rnic_driver::DriverError>| r.map_err(|e| crate::errno::of(&e));
        driver(entry.qp.set_connection(conn))?;
        self.streams
            .as_mut()
            .expect(OPEN)
            .add(negotiated.stream, entry.qp.qpn(), conn_id, negotiated.rx.markers)
            .map_err(|_| libc::EIO)?;
        driver(entry.qp.ready())?;
        driver(entry.qp.post_recv_batch(&std::mem::take(&mut entry.early_recvs)))?;
        entry.state = sys::IBV_QPS_RTS;
        entry.link = Some(CmLink { id, conn_id, ended: false });
        crate::debug!("QP {} connected as CONN_ID {conn_id:#x}: {conn:?}", entry.qp.qpn());
        Ok(())
    }

    /// Ends QP `key`'s connection from this side: ERROR (outstanding work is flushed), the
    /// socket closed (the peer sees it end). Whether it had one still open.
    pub(crate) fn disconnect(&mut self, key: usize) -> bool {
        let Some(entry) = self.qps.get_mut(&key) else { return false };
        let Some(link) = entry.link.as_mut().filter(|l| !l.ended) else { return false };
        link.ended = true;
        self.streams.as_mut().expect(OPEN).remove(link.conn_id);
        if entry.qp.state() == QpState::Rts {
            let _ = entry.qp.modify(QpState::Error);
        }
        entry.state = sys::IBV_QPS_ERR;
        true
    }

    /// Connections the peer closed: their QPs go to ERROR and their ids get DISCONNECTED.
    fn reap_ended(&mut self) {
        let ended: Vec<usize> = self
            .qps
            .iter()
            .filter(|(_, q)| {
                q.link
                    .as_ref()
                    .is_some_and(|l| !l.ended && self.streams.as_ref().expect(OPEN).ended(l.conn_id).is_some())
            })
            .map(|(&k, _)| k)
            .collect();
        for key in ended {
            let link = self.qps[&key].link.as_ref().expect("linked");
            let id = link.id;
            let why = self.streams.as_ref().expect(OPEN).ended(link.conn_id).unwrap_or_default();
            crate::debug!("QP {}: the connection ended: {why}", self.qps[&key].qp.qpn());
            if self.disconnect(key) {
                crate::cm::post_disconnected(id);
            }
        }
    }

    /// Asynchronous events: a CQ that overflowed (IBV_EVENT_CQ_ERR), a QP in RTS that the
    /// device stopped (IBV_EVENT_QP_FATAL), each once.
    fn watch_errors(&mut self) {
        let dev = self.dev_static();
        for (&key, entry) in self.cqs.iter_mut().filter(|(_, e)| !e.overflowed) {
            if matches!(dev.query_cq(entry.cq.get().cqn()), Ok((_, status)) if status.overflow) {
                entry.overflowed = true;
                crate::debug!("CQ {}: overflowed", entry.cq.get().cqn());
                self.events.post(sys::IBV_EVENT_CQ_ERR, key);
            }
        }
        for (&key, entry) in self.qps.iter_mut().filter(|(_, e)| !e.fatal && e.state == sys::IBV_QPS_RTS) {
            if matches!(entry.qp.error(), Ok(Some(_))) {
                entry.fatal = true;
                entry.state = sys::IBV_QPS_ERR;
                crate::debug!("QP {}: stopped by the device", entry.qp.qpn());
                self.events.post(sys::IBV_EVENT_QP_FATAL, key);
            }
        }
    }

    /// Forgets QP `key`'s socket, if it has one (the QP is being destroyed).
    pub(crate) fn unlink(&mut self, link: Option<CmLink>) {
        if let Some(link) = link {
            self.streams.as_mut().expect(OPEN).remove(link.conn_id);
        }
    }
}

impl Drop for State {
    /// Frees what the program did not destroy, borrowers first, then the device, then the
    /// backend.
    fn drop(&mut self) {
        let sim = self.hardware.as_ref().and_then(Hardware::sim);
        let faults = sim.map_or(0, |sim| sim.with_memory(|m| m.faults().len()));
        crate::debug!("closing the device ({} QPs left, {faults} IOMMU faults)", self.qps.len());
        self.qps.clear();
        // The rings go first: they borrow the device's backend and turn themselves off.
        self.streams = None;
        let hal = self.dev_static().hal();
        for (_, mut entry) in self.mrs.drain() {
            drop(entry.mr.take());
            // SAFETY: the MR that borrowed the memory is gone.
            hal.dma_free(unsafe { entry.memory.into_inner() });
        }
        for (_, entry) in self.cqs.drain() {
            // SAFETY: the QPs that borrowed it are gone.
            unsafe { entry.cq.free() };
        }
        for (_, entry) in self.pds.drain() {
            // SAFETY: the QPs and MRs that borrowed it are gone.
            unsafe { entry.pd.free() };
        }
        if let Some(dev) = self.dev.take() {
            // SAFETY: every object that borrowed the device is gone.
            unsafe { dev.free() };
        }
        if let Some(hardware) = self.hardware.take() {
            // SAFETY: the device, the only borrower of the backend, is gone.
            unsafe { hardware.free() };
        }
    }
}
