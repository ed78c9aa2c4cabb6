//! A safe handle on one Verilated model.
use std::ffi::{CStr, CString};
use std::marker::PhantomData;
use std::path::{Path, PathBuf};
use std::ptr::NonNull;
use std::sync::atomic::{AtomicU64, Ordering};

use crate::ffi;
use crate::models::MODELS;

/// Errors when opening a model or its trace.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum SimError {
    /// No design of that name was compiled.
    UnknownModel(String),
    /// The VCD file could not be created.
    Trace(PathBuf),
    /// The model was built without tracing (a fast variant, see [`Model::new`]).
    Untraceable(String),
}

impl std::fmt::Display for SimError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            SimError::UnknownModel(n) => {
                write!(f, "no model named {n:?}; compiled models: {}", MODELS.join(", "))
            }
            SimError::Trace(p) => write!(f, "cannot write waveform {}", p.display()),
            SimError::Untraceable(n) => {
                write!(f, "this model of {n} was built without tracing; set RNIC_TRACE before creating it")
            }
        }
    }
}

impl std::error::Error for SimError {}

/// A port of a [`Model`], resolved once by name and then used every cycle. It belongs to
/// the model that gave it out; using it with another model panics.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Port {
    model: u64,
    index: usize,
    width: u32,
    output: bool,
}

/// Gives every model an identity its ports carry.
static NEXT_MODEL_ID: AtomicU64 = AtomicU64::new(1);

impl Port {
    /// Width in bits.
    pub fn width(&self) -> u32 {
        self.width
    }
}

struct PortInfo {
    name: String,
    port: Port,
    /// Verilator's storage for the port, valid while the model lives.
    storage: *mut u8,
}

/// How often (in cycles) a bounded trace's file size is looked at.
const TRACE_SIZE_CHECK_CYCLES: u64 = 1024;

/// One Verilated design. Not `Send`: a model belongs to the thread that made it.
pub struct Model {
    raw: NonNull<ffi::RnicModelHandle>,
    design: String,
    ports: Vec<PortInfo>,
    clock: Option<Port>,
    time: u64,
    cycles: u64,
    /// Inputs changed since the last `eval`.
    dirty: bool,
    tracing: Option<PathBuf>,
    /// A failure trace's size bound (see [`crate::trace::FAILURE_TRACE_BYTES`]).
    trace_limit: Option<u64>,
    _not_send: PhantomData<*mut ()>,
}

impl Model {
    /// A model of `<design>_x` (see `X_DESIGNS` in `build.rs`): every register starts, and
    /// every X is assigned, with a random value drawn from `seed` (non-zero), as Verilator's
    /// `+verilator+rand+reset+2 +verilator+seed+<seed>` would.
    pub fn new_random_reset(design: &str, seed: u64) -> Result<Model, SimError> {
        assert_ne!(seed, 0, "a random-reset seed is not 0");
        // SAFETY: sets a thread-local of the C++ side; models are created on this thread.
        unsafe { ffi::rnic_model_set_reset_seed(seed) };
        let model = Model::new(&format!("{design}_x"));
        // SAFETY: as above.
        unsafe { ffi::rnic_model_set_reset_seed(0) };
        model
    }

    /// Creates a model of `design` (the file stem under `hdl/verilog/`), with its clock
    /// low. Traces to a VCD file when `RNIC_TRACE` is set or [`crate::trace::on_failure`]
    /// is re-running a failed case; otherwise a design built also without tracing (see
    /// `FAST_DESIGNS` in `build.rs`) runs that faster model.
    pub fn new(design: &str) -> Result<Model, SimError> {
        let trace = crate::trace::path_for(design);
        let create = |name: &str| {
            let cname = CString::new(name).map_err(|_| SimError::UnknownModel(design.into()))?;
            // SAFETY: `cname` is a valid NUL-terminated string for the duration of the call.
            Ok::<_, SimError>(NonNull::new(unsafe { ffi::rnic_model_new(cname.as_ptr()) }))
        };
        let fast = if trace.is_none() { create(&format!("{design}_fast"))? } else { None };
        let raw = match fast {
            Some(raw) => raw,
            None => create(design)?.ok_or_else(|| SimError::UnknownModel(design.into()))?,
        };
        let model = NEXT_MODEL_ID.fetch_add(1, Ordering::Relaxed);
        // SAFETY: `raw` is a live model; the index is below the count it reports and the
        // name it returns points into a static string table of the generated code.
        let ports = unsafe {
            (0..ffi::rnic_model_port_count(raw.as_ptr()))
                .map(|index| PortInfo {
                    name: CStr::from_ptr(ffi::rnic_model_port_name(raw.as_ptr(), index)).to_string_lossy().into_owned(),
                    port: Port {
                        model,
                        index,
                        width: ffi::rnic_model_port_width(raw.as_ptr(), index),
                        output: ffi::rnic_model_port_is_output(raw.as_ptr(), index) != 0,
                    },
                    storage: ffi::rnic_model_port_storage(raw.as_ptr(), index).cast(),
                })
                .collect::<Vec<_>>()
        };
        let mut model = Model {
            raw,
            design: design.to_string(),
            ports,
            clock: None,
            time: 0,
            cycles: 0,
            dirty: true,
            tracing: None,
            trace_limit: trace.as_ref().and_then(|plan| plan.limit),
            _not_send: PhantomData,
        };
        model.clock = model.try_port("clock");
        if let Some(plan) = trace {
            model.trace_to(&plan.path)?;
        }
        model.eval();
        Ok(model)
    }

    /// The design this model runs.
    pub fn design(&self) -> &str {
        &self.design
    }

    /// The port called `name`, if the design has one.
    pub fn try_port(&self, name: &str) -> Option<Port> {
        self.ports.iter().find(|p| p.name == name).map(|p| p.port)
    }

    /// The port called `name`. Panics with the list of ports if there is none: a test
    /// bench naming a port the design lacks is a bug in the bench.
    pub fn port(&self, name: &str) -> Port {
        self.try_port(name).unwrap_or_else(|| {
            let names: Vec<&str> = self.ports.iter().map(|p| p.name.as_str()).collect();
            panic!("{} has no port {name:?}; its ports: {}", self.design, names.join(", "))
        })
    }

    fn storage(&self, port: Port) -> *mut u8 {
        // The accessors below size their reads and writes by `port.width`, so a port of
        // another model must never index this one's table.
        assert_eq!(port.model, self.ports[0].port.model, "{}: port of another model", self.design);
        self.ports[port.index].storage
    }

    /// Drives an input of at most 64 bits; bits above the port width are dropped.
    pub fn set(&mut self, port: Port, value: u64) {
        assert!(!port.output, "{}: cannot drive an output", self.design);
        assert!(port.width <= 64, "{}: use set_bytes for a {}-bit port", self.design, port.width);
        let value = if port.width == 64 { value } else { value & ((1u64 << port.width) - 1) };
        self.dirty = true;
        let p = self.storage(port);
        // SAFETY: Verilator stores a port of this width as u8/u16/u32/u64 (rnic_model.h);
        // the pointer is live while the model is, and nothing else aliases it right now.
        unsafe {
            match port.width {
                0..=8 => p.write(value as u8),
                9..=16 => p.cast::<u16>().write_unaligned(value as u16),
                17..=32 => p.cast::<u32>().write_unaligned(value as u32),
                _ => p.cast::<u64>().write_unaligned(value),
            }
        }
    }

    /// Reads a port of at most 64 bits.
    pub fn get(&self, port: Port) -> u64 {
        assert!(port.width <= 64, "{}: use get_bytes for a {}-bit port", self.design, port.width);
        let p = self.storage(port);
        // SAFETY: as in `set`; a plain read of the port's storage.
        unsafe {
            match port.width {
                0..=8 => u64::from(p.read()),
                9..=16 => u64::from(p.cast::<u16>().read_unaligned()),
                17..=32 => u64::from(p.cast::<u32>().read_unaligned()),
                _ => p.cast::<u64>().read_unaligned(),
            }
        }
    }

    /// Drives a one-bit input.
    pub fn set_bit(&mut self, port: Port, value: bool) {
        self.set(port, u64::from(value));
    }

    /// Reads a one-bit port.
    pub fn get_bit(&self, port: Port) -> bool {
        self.get(port) & 1 != 0
    }

    /// Drives a port of any width from bytes, byte i into bits 8i+7..8i (byte lane order of
    /// an AXI-Stream `tdata`). Bytes beyond the slice are zero.
    pub fn set_bytes(&mut self, port: Port, bytes: &[u8]) {
        assert!(!port.output, "{}: cannot drive an output", self.design);
        let lanes = port.width.div_ceil(8) as usize;
        assert!(bytes.len() <= lanes, "{}: {} bytes for a {lanes}-byte port", self.design, bytes.len());
        if port.width <= 64 {
            let mut v = [0u8; 8];
            v[..bytes.len()].copy_from_slice(bytes);
            self.set(port, u64::from_le_bytes(v));
            return;
        }
        self.dirty = true;
        let p = self.storage(port).cast::<u32>();
        for word in 0..lanes.div_ceil(4) {
            let mut w = [0u8; 4];
            for (i, b) in w.iter_mut().enumerate() {
                *b = bytes.get(word * 4 + i).copied().unwrap_or(0);
            }
            // SAFETY: a port wider than 64 bits is a VlWide array of ceil(width/32) u32
            // words (rnic_model.h); `word` stays below that count.
            unsafe { p.add(word).write_unaligned(u32::from_le_bytes(w)) };
        }
    }

    /// Reads a port of any width into `out` (byte lane order as in [`Model::set_bytes`]).
    pub fn get_bytes(&self, port: Port, out: &mut [u8]) {
        let lanes = port.width.div_ceil(8) as usize;
        assert!(out.len() <= lanes, "{}: {} bytes from a {lanes}-byte port", self.design, out.len());
        if port.width <= 64 {
            let v = self.get(port).to_le_bytes();
            out.copy_from_slice(&v[..out.len()]);
            return;
        }
        let p = self.storage(port).cast::<u32>();
        for (word, chunk) in out.chunks_mut(4).enumerate() {
            // SAFETY: as in `set_bytes`.
            let w = unsafe { p.add(word).read_unaligned() }.to_le_bytes();
            chunk.copy_from_slice(&w[..chunk.len()]);
        }
    }

    /// Settles the combinational logic after inputs changed. Outputs read before this
    /// still show the values from before the change.
    pub fn eval(&mut self) {
        // SAFETY: `raw` is live and used from its own thread only.
        unsafe { ffi::rnic_model_eval(self.raw.as_ptr()) }
        self.dirty = false;
    }

    /// One clock cycle: the logic settled with the current inputs, a rising edge, then the
    /// clock back low. Outputs read after `tick` show the new state (every design is
    /// rising-edge only, so the falling edge changes nothing and is evaluated lazily, by
    /// the next `eval` or `tick`); inputs set after it apply to the next edge.
    pub fn tick(&mut self) {
        let clock = self.clock.unwrap_or_else(|| panic!("{} has no clock port", self.design));
        if self.dirty {
            self.eval();
        }
        self.dump();
        self.set(clock, 1);
        self.eval();
        self.time += 1;
        self.dump();
        self.set(clock, 0);
        self.time += 1;
        self.cycles += 1;
        if self.trace_limit.is_some() && self.cycles.is_multiple_of(TRACE_SIZE_CHECK_CYCLES) {
            self.bound_trace();
        }
    }

    /// Sets a failure trace's file aside as `<name>.earlier.vcd` once it passes its bound,
    /// and begins a new one, so the latest stretch before a failure is always kept.
    fn bound_trace(&mut self) {
        let (Some(path), Some(limit)) = (self.tracing.clone(), self.trace_limit) else { return };
        // SAFETY: `raw` is live; the trace was opened by `trace_to`.
        unsafe { ffi::rnic_model_trace_flush(self.raw.as_ptr()) };
        let big = std::fs::metadata(&path).map(|m| m.len() > limit).unwrap_or(false);
        if big && std::fs::rename(&path, crate::trace::earlier_path(&path)).is_ok() {
            // The open trace keeps writing to the renamed file until `trace_to` closes it.
            let _ = self.trace_to(&path);
        }
    }

    /// Holds the design's `reset` input high for `cycles` clock cycles, then releases it.
    pub fn reset_for(&mut self, cycles: u32) {
        let reset = self.port("reset");
        self.set_bit(reset, true);
        for _ in 0..cycles {
            self.tick();
        }
        self.set_bit(reset, false);
    }

    /// Rising edges so far.
    pub fn cycles(&self) -> u64 {
        self.cycles
    }

    fn dump(&mut self) {
        if self.tracing.is_some() {
            // SAFETY: `raw` is live; the trace was opened by `trace_to`.
            unsafe { ffi::rnic_model_trace_dump(self.raw.as_ptr(), self.time) }
        }
    }

    /// Starts (or restarts) a VCD trace into `path`.
    pub fn trace_to(&mut self, path: &Path) -> Result<(), SimError> {
        if let Some(dir) = path.parent() {
            let _ = std::fs::create_dir_all(dir);
        }
        let cpath = CString::new(path.as_os_str().as_encoded_bytes()).map_err(|_| SimError::Trace(path.into()))?;
        // SAFETY: `raw` is live; `cpath` outlives the call.
        let rc = unsafe { ffi::rnic_model_trace_open(self.raw.as_ptr(), cpath.as_ptr()) };
        if rc == -2 {
            return Err(SimError::Untraceable(self.design.clone()));
        }
        if rc != 0 {
            return Err(SimError::Trace(path.into()));
        }
        self.tracing = Some(path.to_path_buf());
        Ok(())
    }

    /// Restarts an open trace from the current cycle, so that a long run keeps only its
    /// latest stretch (test benches call this at the start of each case).
    pub fn trace_restart(&mut self) {
        if let Some(path) = self.tracing.clone() {
            let _ = self.trace_to(&path);
        }
    }

    /// Where this model traces to, if it does.
    pub fn trace_path(&self) -> Option<&Path> {
        self.tracing.as_deref()
    }
}

impl Drop for Model {
    fn drop(&mut self) {
        // SAFETY: `raw` came from rnic_model_new and is freed exactly once, here.
        unsafe { ffi::rnic_model_free(self.raw.as_ptr()) }
    }
}
