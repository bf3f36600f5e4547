"""Many generated ONNX models through `vta-sim model`, in process: what verified, what was refused
and why, and every finding (a traceback, a run that did not verify, a refusal of more than one
line), one class each with its smallest model.

    PYTHONPATH=$PWD .venv/bin/python bench/fuzz_graph.py --examples 2000 --seed 1 --budget 3600

The models are graph.fuzz.models.cases(); each is run as graph.fuzz.outcome.run_case runs it.
Writes OUT/report.json and OUT/report.md (default OUT: bench/results/fuzz_graph), and the
smallest model of each finding's class and each refusal's class under OUT/classes/ (the model,
its inputs as .npz, and the command line that reproduces it). One process; CPU heavy (each
quantised model compiles its accelerator kernels; the disk cache keeps them for the next run).
"""
from __future__ import annotations

import argparse
import json
import time
from collections import Counter
from pathlib import Path

import numpy as np
import onnx
from hypothesis import HealthCheck, Phase, given, seed, settings

from graph.fuzz.models import cases
from graph.fuzz.outcome import run_case

OUT = Path(__file__).parent / "results" / "fuzz_graph"


class _Budget(Exception):
    """The time budget is spent: stop drawing."""


def _size(case) -> tuple:
    return len(case.model.graph.node), sum(v.size for v in case.feeds.values())


def fuzz(examples: int, seed_: int, budget: float, out: Path, log=print) -> dict:
    """Run up to `examples` generated models (stopping after `budget` seconds), write the report."""
    t0 = time.monotonic()
    kinds: Counter = Counter()
    classes: dict = {}                    # key -> {kind, count, message, case, internal}
    ran = [0]

    @seed(seed_)
    @settings(max_examples=examples, deadline=None, database=None, phases=[Phase.generate],
              suppress_health_check=list(HealthCheck))
    @given(cases())
    def one(case):
        if time.monotonic() - t0 > budget:
            raise _Budget
        started = time.monotonic()
        outcome = run_case(case)
        ran[0] += 1
        kinds[outcome.kind] += 1
        entry = classes.setdefault(outcome.key, {"kind": outcome.kind, "count": 0, "internal": outcome.internal})
        entry["count"] += 1
        if "case" not in entry or _size(case) < _size(entry["case"]):
            entry.update(case=case, message=outcome.message, detail=outcome.detail)
        log(f"{ran[0]:5d} {time.monotonic() - t0:7.0f} s  {outcome.kind:12s} {time.monotonic() - started:5.1f} s  "
            f"{case.describe()[:150]}" + (f"\n      {outcome.key}: {outcome.message[:200]}" if outcome.finding
                                          or outcome.internal else ""))

    try:
        one()
    except BaseException as err:  # noqa: BLE001 - _Budget, or Hypothesis reporting it: the run is over
        if not isinstance(err, _Budget) and "_Budget" not in repr(err):
            raise
    report = _report(ran[0], time.monotonic() - t0, seed_, kinds, classes, out)
    return report


def _report(ran: int, seconds: float, seed_: int, kinds: Counter, classes: dict, out: Path) -> dict:
    (out / "classes").mkdir(parents=True, exist_ok=True)
    rows = []
    for i, (key, entry) in enumerate(sorted(classes.items(), key=lambda kv: (kv[1]["kind"], -kv[1]["count"]))):
        case = entry["case"]
        stem = out / "classes" / f"{i:03d}"
        if entry["kind"] != "verified":
            onnx.save(case.model, f"{stem}.onnx")
            np.savez(f"{stem}.npz", **case.feeds)
        rows.append({"class": key, "kind": entry["kind"], "count": entry["count"], "internal": entry["internal"],
                     "message": entry["message"], "smallest": case.describe(),
                     "files": None if entry["kind"] == "verified" else f"classes/{i:03d}.onnx",
                     "command": None if entry["kind"] == "verified" else
                     f"vta-sim model classes/{i:03d}.onnx"
                     + (f" --quantizer {case.quantizer}" if case.quantizer else "")
                     + (f" --input classes/{i:03d}.npz" if case.give_inputs else ""),
                     "detail": entry["detail"]})
    report = {"examples": ran, "seconds": round(seconds), "seed": seed_, "outcomes": dict(kinds),
              "findings": sum(r["kind"] in ("traceback", "not_verified", "multi_line") for r in rows),
              "classes": rows}
    (out / "report.json").write_text(json.dumps(report, indent=2))
    lines = [f"# bench/fuzz_graph.py: {ran} generated models in {seconds:.0f} s (seed {seed_})", "",
             "| outcome | models |", "|---|---|", *(f"| {k} | {v} |" for k, v in sorted(kinds.items())), "",
             "| kind | models | class | smallest model |", "|---|---|---|---|"]
    for r in rows:
        mark = " (internal error caught at the boundary)" if r["internal"] else ""
        lines.append(f"| {r['kind']}{mark} | {r['count']} | {r['class'].replace('|', '/')} | "
                     f"{r['smallest'].replace('|', '/')} |")
    (out / "report.md").write_text("\n".join(lines) + "\n")
    return report


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--examples", type=int, default=2000, help="models to draw at most (default 2000)")
    parser.add_argument("--seed", type=int, default=1, help="Hypothesis seed (default 1)")
    parser.add_argument("--budget", type=float, default=3600, help="stop drawing after this many seconds")
    parser.add_argument("--out", type=Path, default=OUT, help=f"report folder (default {OUT})")
    args = parser.parse_args()
    report = fuzz(args.examples, args.seed, args.budget, args.out)
    print(f"{report['examples']} models in {report['seconds']} s: {report['outcomes']}; "
          f"{report['findings']} finding classes; report in {args.out}/report.md")


if __name__ == "__main__":
    main()
