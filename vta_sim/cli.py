"""`vta-sim` command line: run and disassemble DRAM images, the demo, and plugin subcommands.

Subsystems outside vta_sim (the compiler, the comparisons, the RTL) add their subcommands
through a `register(subparsers)` function in the modules of `PLUGINS`; a plugin that cannot
be imported here (missing optional dependency) is simply absent from the command list.
"""
from __future__ import annotations

import argparse
import importlib
import json
import sys
import time
from pathlib import Path

import numpy as np

from . import backends, isa
from .config import Config
from .errors import VTAError

PLUGINS = ("schedules.cli", "schedules.compare_cli", "hw.cli")


def _int(text: str) -> int:
    return int(text, 0)


def add_config_args(p: argparse.ArgumentParser, backend: bool = True) -> None:
    """--config (and --backend) as every subcommand takes them."""
    p.add_argument("--config", default="1x8x8", help="1x8x8 (default), 8x8x8 or a JSON file")
    if backend:
        p.add_argument("--backend", default="sim", choices=backends.names(), help="sim (default) or rtl")


class Progress:
    """Progress on stderr for long runs: at most twice a second, only after the first second."""

    def __init__(self, label: str, stream=sys.stderr):
        self.label, self.stream = label, stream
        self.t0 = self.last = time.perf_counter()
        self.shown = False

    def __call__(self, done: int, total: int, cycle: int) -> None:
        now = time.perf_counter()
        if now - self.t0 > 1.0 and (now - self.last > 0.5 or done == total):
            self.last, self.shown = now, True
            self.stream.write(f"\r{self.label}: fetched {done}/{total} instructions, cycle {cycle:,}  ")
            self.stream.flush()

    def close(self) -> None:
        if self.shown:
            self.stream.write("\n")


def _read_image(path: str) -> np.ndarray:
    try:
        return np.fromfile(path, dtype=np.uint8)
    except OSError as exc:
        raise VTAError(f"cannot read DRAM image {path!r}: {exc.strerror}") from None


def cmd_run(args) -> int:
    cfg = Config.load(args.config)
    image = _read_image(args.image)
    runner = backends.get_backend(args.backend, cfg)
    progress = Progress(f"{args.backend}") if args.backend == "sim" else None
    t0 = time.perf_counter()
    kwargs = {"progress": progress} if progress else {}
    result = runner.run(image, insn_addr=args.insn_addr, insn_count=args.insn_count,
                        trace=bool(args.trace), **kwargs)
    wall = time.perf_counter() - t0
    if progress:
        progress.close()
    st = result.stats
    print(f"{args.image}: {args.insn_count} instructions on {cfg.name} ({args.backend}): "
          f"{result.cycles:,} cycles in {wall:.2f} s")
    for key in ("inp_load_nbytes", "wgt_load_nbytes", "acc_load_nbytes", "uop_load_nbytes",
                "out_store_nbytes", "gemm_counter", "alu_counter"):
        print(f"  {key:<18} {st.get(key, 0):>12,}")
    for mod in ("load", "compute", "store"):
        if f"{mod}_busy_cycles" in st:
            print(f"  {mod + ' busy':<18} {st[f'{mod}_busy_cycles']:>12,}  "
                  f"({100 * st[f'{mod}_busy_cycles'] / max(result.cycles, 1):.1f} %)")
    if args.out:
        result.dram.tofile(args.out)
        print(f"  final DRAM image written to {args.out}")
    if args.stats:
        Path(args.stats).write_text(json.dumps(result.to_json(), indent=2))
        print(f"  statistics written to {args.stats}")
    if args.trace:
        if result.trace is None:
            print(f"  backend {args.backend} records no trace")
        elif args.trace.endswith(".png"):
            result.trace.save_png(args.trace)
        else:
            result.trace.save_json(args.trace)
        print(f"  trace written to {args.trace}")
    return 0


def cmd_disasm(args) -> int:
    cfg = Config.load(args.config)
    image = _read_image(args.image)
    end = args.insn_addr + args.insn_count * isa.INSN_BYTES
    if args.insn_addr % isa.INSN_BYTES or end > image.size:
        raise VTAError(f"instructions [{args.insn_addr:#x}, {end:#x}) are misaligned or outside the "
                       f"{image.size}-byte image")
    for line in isa.disasm_program(image[args.insn_addr:end].tobytes(), cfg):
        print(line)
    return 0


def cmd_demo(args) -> int:
    from examples.blocked_gemm import run_and_report

    out = Path(args.out_dir)
    out.mkdir(parents=True, exist_ok=True)
    figures = run_and_report(args.config, vthreads=2, timeline=out / "demo_gemm_timeline.png",
                             image=out / "demo_gemm.bin")
    ok = figures["verified"]
    try:
        compiler_demo = importlib.import_module("schedules.cli").demo
    except (ImportError, AttributeError):
        compiler_demo = None
    if compiler_demo is not None:
        print()
        ok = compiler_demo(out_dir=str(out)) and ok
    return 0 if ok else 1


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="vta-sim", description="VTA-8 accelerator toolkit")
    sub = parser.add_subparsers(dest="command", required=True)

    p = sub.add_parser("run", help="run a DRAM image on a backend")
    p.add_argument("image", help="raw DRAM image (bytes from address 0)")
    p.add_argument("--insn-addr", type=_int, required=True, help="byte address of the first instruction")
    p.add_argument("--insn-count", type=_int, required=True)
    add_config_args(p)
    p.add_argument("--out", help="write the final DRAM image here")
    p.add_argument("--stats", help="write cycles and statistics as JSON here")
    p.add_argument("--trace", help="write a trace: Chrome/Perfetto JSON, or a PNG timeline if it ends in .png")
    p.set_defaults(func=cmd_run)

    p = sub.add_parser("disasm", help="disassemble the instructions of a DRAM image")
    p.add_argument("image")
    p.add_argument("--insn-addr", type=_int, required=True)
    p.add_argument("--insn-count", type=_int, required=True)
    add_config_args(p, backend=False)
    p.set_defaults(func=cmd_disasm)

    p = sub.add_parser("demo", help="the double-buffered blocked GEMM (and the compiled conv2d when available)")
    add_config_args(p, backend=False)
    p.add_argument("--out-dir", default="out", help="where timelines go (default: out/)")
    p.set_defaults(func=cmd_demo)

    for name in PLUGINS:
        try:
            module = importlib.import_module(name)
        except ImportError:
            continue
        register = getattr(module, "register", None)
        if register is not None:
            register(sub)
    return parser


def main(argv=None) -> int:
    parser = build_parser()
    args = parser.parse_args(argv)
    try:
        return args.func(args)
    except VTAError as exc:
        print(f"vta-sim: error: {exc}", file=sys.stderr)
        return 2


if __name__ == "__main__":
    sys.exit(main())
