"""The full formal run: every harness of hw/formal/ at its own depth, its covers, and every
deliberate bug of hw.prove.MUTATIONS caught; wall times per task (docs/hardware.md, "Formal").

  python bench/bench_prove.py [--config 1x8x8] [--json bench/results/prove.json] [--no-mutations]
"""
from __future__ import annotations

import argparse
import json
import sys
import tempfile
from pathlib import Path

from hw import prove


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--config", default="1x8x8")
    ap.add_argument("--json", help="write the report here")
    ap.add_argument("--no-mutations", action="store_true", help="skip the deliberate bugs")
    args = ap.parse_args(argv)
    report = prove.prove(args.config, progress=lambda text: print(text, flush=True))
    print(prove.table(report))
    caught = []
    if not args.no_mutations:
        with tempfile.TemporaryDirectory() as tmp:
            for m in prove.MUTATIONS:
                _, h = prove.mutate(m.name, Path(tmp) / m.name / "rtl")
                res = prove.prove(args.config, rtl_dir=Path(tmp) / m.name / "rtl", out_dir=Path(tmp) / m.name / "run",
                                  harnesses=[h.name], depth=m.depth, covers=False, bmc_only=True,
                                  progress=None)
                (task,) = res["tasks"]
                hit = m.catches in {f["property"] for f in task["failed"]}
                caught.append({"mutation": m.name, "harness": h.name, "depth": m.depth, "caught": hit,
                               "status": task["status"], "wall_s": task["wall_s"],
                               "failed": [f"{f['property']} at {f['where']}" for f in task["failed"]]})
                print(f"mutation {m.name:<18} {h.name:<12} depth {m.depth:>3}  "
                      f"{'caught' if hit else 'MISSED'}  {task['wall_s']:6.1f} s  {caught[-1]['failed'][:1]}")
    if args.json:
        Path(args.json).parent.mkdir(parents=True, exist_ok=True)
        Path(args.json).write_text(json.dumps({**report, "mutations": caught}, indent=1))
    return 0 if report["ok"] and all(c["caught"] for c in caught) else 1


if __name__ == "__main__":
    sys.exit(main())
