"""`vta-sim hw ...`: lint, build, run with waves, coverage and synthesis of the Verilog in hw/."""
from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import time
from pathlib import Path

import numpy as np

from vta_sim.config import Config

from . import build as hwbuild
from . import coverage as hwcov
from .header import header_text


def cmd_lint(args) -> int:
    cfg = Config.load(args.config)
    hwbuild.ensure_tools_on_path()
    inc = hwbuild.build_root() / f"lint-{cfg.name}"
    inc.mkdir(parents=True, exist_ok=True)
    (inc / "vta_cfg.vh").write_text(header_text(cfg))
    proc = subprocess.run(["verilator", "--lint-only", "-Wall", f"-I{inc}", f"-I{hwbuild.RTL_DIR}",
                           "--top-module", hwbuild.TOPLEVEL, *map(str, hwbuild.rtl_sources())],
                          capture_output=True, text=True)
    print(proc.stderr.strip() or f"verilator --lint-only -Wall: clean ({cfg.name})")
    return proc.returncode


def cmd_build(args) -> int:
    print(hwbuild.build(args.config, coverage=args.coverage, waves=args.waves))
    return 0


def cmd_run(args) -> int:
    """One image on the RTL through the top bench, optionally with waves and back-pressure."""
    from .backend import run_jobs

    cfg = Config.load(args.config)
    image = np.fromfile(args.image, dtype=np.uint8)
    workdir = Path(args.workdir or hwbuild.build_root() / "run")
    job = {"name": Path(args.image).name, "image": image.tobytes(), "insn_addr": args.insn_addr,
           "insn_count": args.insn_count, "backpressure": args.backpressure}
    t0 = time.perf_counter()
    results, outputs, failures = run_jobs(cfg, [job], compare=args.compare, waves=bool(args.waves),
                                          workdir=workdir)
    wall = time.perf_counter() - t0
    for f in failures:
        print(f"FAIL {f}")
    if results:
        res = results[0]
        print(json.dumps({k: v for k, v in res.items() if k != "stats"}))
        if res.get("cycles"):
            print(f"{res['cycles']:,} cycles in {wall:.2f} s ({res['cycles'] / wall:,.0f} cycles/s)")
    if args.waves:
        dump = workdir / hwbuild.waves_name()
        target = Path(args.waves)
        if target.suffix != dump.suffix:
            target = target.with_suffix(dump.suffix)
            print(f"note: no lz4 headers for FST (install liblz4-dev); writing VCD to {target}")
        shutil.copy(dump, target)
        print(f"waves written to {target}")
    if args.out and outputs and outputs[0] is not None:
        outputs[0].tofile(args.out)
    return 1 if failures or not results or results[0].get("error") else 0


def cmd_coverage(args) -> int:
    """Run tests/hw with coverage builds, merge the coverage files, report line/toggle coverage."""
    collect = Path(args.out_dir or hwbuild.build_root() / "coverage").resolve()
    shutil.rmtree(collect, ignore_errors=True)
    collect.mkdir(parents=True)
    env = dict(os.environ, **{hwbuild.COVERAGE_ENV: str(collect)})
    tests = str(hwbuild.ROOT / "tests" / "hw")
    cmd = [sys.executable, "-m", "pytest", "-q", "-n", str(args.jobs), tests, "-p", "no:cacheprovider"]
    t0 = time.perf_counter()
    proc = subprocess.run(cmd, env=env, cwd=hwbuild.ROOT)
    files = sorted(collect.glob("*.dat"))
    if not files:
        print("no coverage files were written")
        return 1
    points = hwcov.merge(files)
    rep = hwcov.report(points, str(hwbuild.HW_DIR))
    (collect / "report.json").write_text(json.dumps(rep, indent=1))
    print(f"coverage of hw/ merged over {len(files)} simulations ({time.perf_counter() - t0:.0f} s):")
    for kind in ("line", "toggle"):
        r = rep[kind]
        print(f"  {kind:<6} {r['percent']:5.1f} %  ({r['covered']}/{r['points']} points)")
    for name, pct in rep["line"]["files"].items():
        print(f"    {name:<22} line {pct:5.1f} %   toggle {rep['toggle']['files'].get(name, 0):5.1f} %")
    holes = hwcov.uncovered_lines(points, str(hwbuild.HW_DIR))
    if holes:
        print("  lines never executed: " + ", ".join(f"{f}:{line}" for f, line in holes[:40]))
    ok = proc.returncode == 0 and rep["line"]["percent"] >= args.min_line
    if rep["line"]["percent"] < args.min_line:
        print(f"line coverage below the {args.min_line:.0f} % target")
    return 0 if ok else 1


def cmd_synth(args) -> int:
    """Yosys (+ nextpnr for ECP5) on vta_top: resources, Fmax and critical path, cached in synth/ under the cache root."""
    from . import synth

    def progress(line):
        print(f"[synth {time.perf_counter() - t0:6.0f} s] {line}", file=sys.stderr, flush=True)

    t0 = time.perf_counter()
    res = synth.synth_config(args.config, args.target, pnr=not args.no_pnr, progress=progress, module=args.module,
                             seed=synth.SEED if args.seed is None else args.seed)
    print(synth.summary(res))
    if args.json:
        Path(args.json).write_text(json.dumps(res, indent=1))
    return 0


def cmd_prove(args) -> int:
    """SymbiYosys on hw/formal/'s harnesses: a line per task, a table, JSON; non-zero on any failure."""
    from . import prove

    kw = {"harnesses": args.harness} if args.harness else {}
    if args.mutate:   # a deliberate bug in a copy of the RTL: its harness must fail
        dest = prove.prove_root() / "mutated" / args.mutate
        m, h = prove.mutate(args.mutate, dest / "rtl")
        print(f"mutation {m.name}: {m.bug} ({m.file}); expect {m.catches} of {h.name} to fail")
        kw = {"rtl_dir": dest / "rtl", "out_dir": dest / "run", "harnesses": [h.name], "covers": False,
              "bmc_only": True, "focus": m.focus}
        args.depth = args.depth or m.depth
    limit = prove.TIME_LIMIT_S if args.time_limit is None else args.time_limit
    report = prove.prove(args.config, groups=args.group, depth=args.depth, time_limit=limit,
                         progress=lambda text: print(text, flush=True), **kw)
    print(prove.table(report))
    if args.json:
        Path(args.json).write_text(json.dumps(report, indent=1))
    return 0 if report["ok"] else 1


def register(subparsers) -> None:
    p = subparsers.add_parser("hw", help="the Verilog RTL: lint, build, run with waves, coverage")
    sub = p.add_subparsers(dest="hw_command", required=True)

    def common(q):
        q.add_argument("--config", default="1x8x8", help="1x8x8 (default), 8x8x8 or a JSON path")

    q = sub.add_parser("lint", help="verilator --lint-only -Wall on the RTL")
    common(q)
    q.set_defaults(func=cmd_lint)
    q = sub.add_parser("build", help="build (or find cached) the Verilated model")
    common(q)
    q.add_argument("--coverage", action="store_true")
    q.add_argument("--waves", action="store_true")
    q.set_defaults(func=cmd_build)
    q = sub.add_parser("run", help="run a DRAM image on the RTL (waves, back-pressure, compare)")
    q.add_argument("image")
    q.add_argument("--insn-addr", type=lambda s: int(s, 0), required=True)
    q.add_argument("--insn-count", type=lambda s: int(s, 0), required=True)
    common(q)
    q.add_argument("--waves", help="dump waves of the run to this file (FST; VCD without lz4)")
    q.add_argument("--backpressure", type=int, help="seed of random AXI stalls")
    q.add_argument("--compare", action="store_true", help="check DRAM/CYCLES/stats against vta_sim")
    q.add_argument("--out", help="write the final DRAM image here")
    q.add_argument("--workdir", help="keep the bench files here (default hw/run in the cache root)")
    q.set_defaults(func=cmd_run)
    q = sub.add_parser("coverage", help="run tests/hw with Verilator coverage and report it")
    q.add_argument("--out-dir", help="the merged coverage (default hw/coverage in the cache root)")
    q.add_argument("--jobs", type=int, default=2, help="pytest workers (default 2)")
    q.add_argument("--min-line", type=float, default=90.0, help="fail below this line coverage (%%)")
    q.set_defaults(func=cmd_coverage)
    q = sub.add_parser("synth", help="synthesise (Yosys) and, for ECP5, place and route (nextpnr)")
    common(q)
    q.add_argument("--target", choices=("ecp5", "xilinx", "generic"), default="ecp5",
                   help="ecp5: LFE5UM-85F with place-and-route (default); xilinx: synth_xilinx estimate")
    q.add_argument("--no-pnr", action="store_true", help="ECP5: stop after synthesis (no Fmax)")
    q.add_argument("--module", default="vta_top",
                   help="place one module alone (e.g. vta_dma_read): minutes instead of half an hour")
    q.add_argument("--seed", type=int,
                   help="ECP5: nextpnr's placer seed (default hw.synth.SEED, the clock record's); each seed is a run of "
                        "its own")
    q.add_argument("--json", help="write the report here (lut, ff, dsp, bram, fmax_mhz, critical_path, ...)")
    q.set_defaults(func=cmd_synth)
    q = sub.add_parser("prove", help="formal proofs of the RTL's properties (SymbiYosys, from pip)")
    common(q)
    q.add_argument("--depth", type=int, help="induction length / BMC bound for every harness (default: each its own)")
    q.add_argument("--group", action="append", help="only this property group (repeatable)")
    q.add_argument("--time-limit", type=float, default=None, metavar="S",
                   help="stop a task after S seconds and report it TIMEOUT (default 1800, hw/prove.py TIME_LIMIT_S)")
    q.add_argument("--harness", action="append", help="only this harness, e.g. axi_read (repeatable; "
                   "hw/prove.py HARNESSES)")
    q.add_argument("--json", help="write every property's group, mode, depth and status here")
    q.add_argument("--mutate", help="prove a copy of the RTL with this deliberate bug (hw/prove.py MUTATIONS)")
    q.set_defaults(func=cmd_prove)
