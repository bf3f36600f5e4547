"""Replays recorded programs (tests/record_programs.py) through both simulator engines and
checks identical cycles, statistics, DRAM and errors (type and message).

    VTA_RECORD_PROGRAMS=build/programs PYTHONPATH=tests pytest -p record_programs tests/
    PYTHONPATH=. python bench/replay_engines.py build/programs
"""
from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

import numpy as np

from vta_sim import Config, Simulator, VTAError


def outcome(engine: str, cfg: Config, image, addr: int, count: int):
    try:
        r = Simulator(cfg, engine=engine).run(image, insn_addr=addr, insn_count=count)
    except VTAError as exc:
        return ("error", type(exc).__name__, str(exc))
    return ("ok", r.cycles, r.stats, r.dram.tobytes())


def main(argv=None) -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("folder", type=Path)
    args = p.parse_args(argv)
    files = sorted(args.folder.glob("*.npz"))
    if not files:
        raise SystemExit(f"no recorded programs (*.npz) in {args.folder}")
    kinds, bad, seconds = {"ok": 0, "error": 0}, [], {"compiled": 0.0, "reference": 0.0}
    for path in files:
        with np.load(path) as z:
            cfg = Config.from_text(str(z["config"]))
            image, addr, count = z["image"], int(z["insn_addr"]), int(z["insn_count"])
        seen = {}
        for engine in seconds:
            t0 = time.perf_counter()
            seen[engine] = outcome(engine, cfg, image, addr, count)
            seconds[engine] += time.perf_counter() - t0
        kinds[seen["reference"][0]] += 1
        if seen["compiled"] != seen["reference"]:
            bad.append(path.name)
            print(f"DIFFERENT: {path.name}: compiled {seen['compiled'][:3]!r:.300} reference "
                  f"{seen['reference'][:3]!r:.300}")
    print(f"{len(files)} programs ({kinds['ok']} run, {kinds['error']} refused): {len(bad)} differ; "
          f"compiled {seconds['compiled']:.1f} s, reference {seconds['reference']:.1f} s")
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
