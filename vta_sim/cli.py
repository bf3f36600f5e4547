"""`vta-sim` command line: run and disassemble DRAM images, the demo, and plugin subcommands.

vta_sim imports nothing above it. The subsystems built on it (the compiler, the comparisons,
the RTL, the graph level) are plugins: entry points of the group `vta_sim.plugins`, one per
subcommand, named after the command and pointing at the module that adds it with
`register(subparsers)` (several commands may share a module). A plugin module may also have
`demo(out_dir, config) -> bool`, a part of `vta-sim demo`; parts run in the order of their
modules' first command names (sorted, whatever order the installer wrote them in).

A plugin that cannot be imported is not hidden: `vta-sim --help` lists it with the reason,
its commands remain as stubs that print the reason and exit 2, and `vta-sim demo` fails.
"""
from __future__ import annotations

import argparse
import json
import sys
import time
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass
from importlib import import_module
from importlib.metadata import EntryPoint, entry_points
from pathlib import Path
from types import ModuleType
from typing import Any, TextIO

import numpy as np

from . import backends, isa
from .blocked_gemm import run_and_report
from .config import Config
from .errors import VTAError
from .result import FUNCTIONAL_STATS, busy_fraction

PLUGIN_GROUP = "vta_sim.plugins"


def _int(text: str) -> int:
    return int(text, 0)


def add_config_args(p: argparse.ArgumentParser, backend: bool = True) -> None:
    """--config (and --backend) as every subcommand takes them."""
    p.add_argument("--config", default="1x8x8", help="1x8x8 (default), 8x8x8 or a JSON file")
    if backend:
        p.add_argument("--backend", default="sim", choices=backends.names(), help="sim (default) or rtl")


class Progress:
    """Progress of one long simulation on stderr, redrawn in place at most twice a second after
    the first second; only on a terminal (a log gets nothing: the command prints its result)."""

    def __init__(self, label: str, stream: TextIO = sys.stderr):
        self.label, self.stream = label, stream
        self.on_terminal = getattr(stream, "isatty", lambda: False)()
        self.t0 = self.last = time.perf_counter()
        self.shown = False

    def __call__(self, done: int, total: int, cycle: int) -> None:
        now = time.perf_counter()
        if self.on_terminal and now - self.t0 > 1.0 and (now - self.last > 0.5 or done == total):
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


def cmd_run(args: argparse.Namespace) -> int:
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
    for key in FUNCTIONAL_STATS:
        print(f"  {key:<18} {st.get(key, 0):>12,}")
    for mod in isa.MODULES:
        print(f"  {mod + ' busy':<18} {100 * busy_fraction(st, mod, result.cycles):>11.1f} %")
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


def cmd_disasm(args: argparse.Namespace) -> int:
    cfg = Config.load(args.config)
    image = _read_image(args.image)
    end = args.insn_addr + args.insn_count * isa.INSN_BYTES
    if args.insn_addr % isa.INSN_BYTES or end > image.size:
        raise VTAError(f"instructions [{args.insn_addr:#x}, {end:#x}) are misaligned or outside the "
                       f"{image.size}-byte image")
    for line in isa.disasm_program(image[args.insn_addr:end].tobytes(), cfg):
        print(line)
    return 0


@dataclass
class Plugin:
    """One plugin module, the commands its entry points declare, and the module or why not."""

    module_name: str
    commands: list[str]
    module: ModuleType | None = None
    error: str | None = None


def load_plugins(eps: Iterable[EntryPoint] | None = None) -> list[Plugin]:
    """The `vta_sim.plugins` entry points grouped by module, ordered by command name, imported.

    An import failure of any kind is recorded as the plugin's `error`, never raised: one
    broken subsystem must not take down the others, and the reason is shown to the user.
    """
    plugins: dict[str, Plugin] = {}
    for ep in sorted(entry_points(group=PLUGIN_GROUP) if eps is None else eps, key=lambda e: e.name):
        plugins.setdefault(ep.value, Plugin(ep.value, [])).commands.append(ep.name)
    for plugin in plugins.values():
        try:
            plugin.module = import_module(plugin.module_name)
        except Exception as exc:  # noqa: BLE001 - reported in --help, by its commands and by demo
            plugin.error = f"{type(exc).__name__}: {exc}"
    return list(plugins.values())


#: Commands of vta_sim itself that need no plugin.
CORE_COMMANDS = ("run", "disasm")


def plugins_for(argv: list[str]) -> list[Plugin]:
    """The plugins a command line needs: none for `run` and `disasm`, only its own module for a
    plugin command (importing every subsystem takes seconds), all of them for anything else
    (--help, demo, a mistyped command)."""
    eps = list(entry_points(group=PLUGIN_GROUP))
    command = next((a for a in argv if not a.startswith("-")), None)
    if command in CORE_COMMANDS:
        return []
    module = next((ep.value for ep in eps if ep.name == command), None)
    return load_plugins([ep for ep in eps if module is None or ep.value == module])


def unavailable_text(plugins: list[Plugin]) -> str:
    """The --help epilog: one line per plugin that failed to load, with the reason."""
    lines = [f"  {', '.join(p.commands)} ({p.module_name}): {p.error}" for p in plugins if p.error]
    return "unavailable plugins:\n" + "\n".join(lines) if lines else ""


def _register(sub: Any, plugin: Plugin) -> None:
    """Add the plugin's commands, or a stub per declared command when it failed to load."""
    if plugin.error:
        for name in plugin.commands:
            p = sub.add_parser(name, add_help=False, help=f"unavailable: {plugin.error}")
            p.set_defaults(func=_unavailable(name, plugin), takes_any_args=True)
        return
    assert plugin.module is not None   # loaded: no error
    before = set(sub.choices)
    plugin.module.register(sub)
    added = sorted(set(sub.choices) - before)
    if added != sorted(plugin.commands):
        raise VTAError(f"plugin {plugin.module_name} registered the commands {added} but its "
                       f"{PLUGIN_GROUP!r} entry points declare {sorted(plugin.commands)}")


def _unavailable(name: str, plugin: Plugin) -> Callable[[argparse.Namespace], int]:
    def run(args: argparse.Namespace) -> int:
        raise VTAError(f"command {name!r} is unavailable: its plugin {plugin.module_name} failed "
                       f"to load: {plugin.error}")
    return run


def cmd_demo(args: argparse.Namespace) -> int:
    """The blocked GEMM, then each plugin's demo part; non-zero if any part failed or is missing."""
    out = Path(args.out_dir)
    out.mkdir(parents=True, exist_ok=True)
    figures = run_and_report(args.config, vthreads=2, timeline=out / "demo_gemm_timeline.png",
                             image=out / "demo_gemm.bin")
    failed: list[str] = [] if figures["verified"] else ["blocked GEMM (not bit-exact)"]
    for plugin in args.plugins:
        if plugin.error:
            failed.append(f"{plugin.module_name} (failed to load: {plugin.error})")
        elif hasattr(plugin.module, "demo"):
            print()
            if not plugin.module.demo(out_dir=str(out), config=args.config):
                failed.append(f"{plugin.module_name} (not verified)")
    if failed:
        print("\nvta-sim demo: FAILED: " + "; ".join(failed), file=sys.stderr)
    return 1 if failed else 0


def build_parser(plugins: list[Plugin] | None = None) -> argparse.ArgumentParser:
    """The full command line; `plugins` defaults to the installed ones (`load_plugins()`)."""
    plugins = load_plugins() if plugins is None else plugins
    parser = argparse.ArgumentParser(prog="vta-sim", description="VTA-8 accelerator toolkit",
                                     epilog=unavailable_text(plugins),
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
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

    parts = ", ".join(p.module_name for p in plugins if p.error or hasattr(p.module, "demo"))
    p = sub.add_parser("demo", help=f"the double-buffered blocked GEMM, then the plugins' demos ({parts})")
    add_config_args(p, backend=False)
    p.add_argument("--out-dir", default="out", help="where timelines go (default: out/)")
    p.set_defaults(func=cmd_demo, plugins=plugins)

    for plugin in plugins:
        _register(sub, plugin)
    return parser


def main(argv: Sequence[str] | None = None, plugins: list[Plugin] | None = None) -> int:
    argv = sys.argv[1:] if argv is None else list(argv)
    try:
        parser = build_parser(plugins_for(argv) if plugins is None else plugins)
    except VTAError as exc:
        print(f"vta-sim: error: {exc}", file=sys.stderr)
        return 2
    # Known args only, so that a stub takes whatever the real command would have taken.
    args, extra = parser.parse_known_args(argv)
    if extra and not getattr(args, "takes_any_args", False):
        parser.error(f"unrecognized arguments: {' '.join(extra)}")
    try:
        rc: int = args.func(args)
        return rc
    except VTAError as exc:
        print(f"vta-sim: error: {exc}", file=sys.stderr)
        return 2


if __name__ == "__main__":
    sys.exit(main())
