"""Issue 36's before and after: the built-in encoder and BERT with softmax, LayerNorm and GELU on
the CPU (their rules switched off) and on VTA-8's ALU: total cycles, the ALU layers' cycles and
DRAM bytes, how many layers leave the accelerator, and the logits against onnxruntime
(docs/graph.md, "Attention without the CPU").

    python bench/bench_transformer_ops.py [--json-dir DIR] [MODEL ...]      # encoder bert

`--json-dir`: each run's report as DIR/MODEL_cpu.json and DIR/MODEL_alu.json (bench/draw_timeline.py
draws them).
"""
import argparse
import dataclasses
import json
from pathlib import Path

from graph import ops
from graph.ops.base import Refusal
from graph.run import load_case, run_model

ALU_OPS = ("softmax", "layer_norm", "gelu")


def switched_off(kinds):
    """The registry with the rules of `kinds` refusing every block (the layers stay on the CPU)."""
    def refuse(g, block):
        raise Refusal("switched off for the comparison")
    saved = ops.RULES, dict(ops.BY_KIND)
    rules = tuple(dataclasses.replace(r, plan=refuse) if r.kind in kinds else r for r in ops.RULES)
    ops.RULES, ops.BY_KIND = rules, {r.kind: r for r in rules}
    return saved


def run(model, on_alu):
    saved = None if on_alu else switched_off(ALU_OPS)
    try:
        return run_model(load_case(model, quantizer="onnxruntime-symmetric"), "1x8x8", compare_onnxruntime=True)
    finally:
        if saved:
            ops.RULES, ops.BY_KIND = saved[0], saved[1]


parser = argparse.ArgumentParser()
parser.add_argument("models", nargs="*", default=["encoder", "bert"])
parser.add_argument("--json-dir", type=Path)
args = parser.parse_args()
print("| model | softmax, LayerNorm, GELU | layers on VTA-8 | layers on the CPU | total cycles | their cycles | their DRAM bytes | logits vs onnxruntime |")
print("|---|---|---|---|---|---|---|---|")
for model in args.models:
    for on_alu in (False, True):
        r = run(model, on_alu)
        if args.json_dir:
            args.json_dir.mkdir(parents=True, exist_ok=True)
            (args.json_dir / f"{model}_{'alu' if on_alu else 'cpu'}.json").write_text(json.dumps(r.to_json(), default=str))
        mine = [x for x in r.layers if x["op"] in ALU_OPS and x["target"] == "vta"]
        on = sum(x["target"] == "vta" for x in r.layers)
        o = r.onnxruntime
        print(f"| {model} | {'VTA-8 ALU' if on_alu else 'CPU'} | {on} of {len(r.layers)} | {len(r.layers) - on} | "
              f"{r.total_cycles:,} | {sum(x['cycles'] for x in mine):,} | {sum(x['dram_bytes'] for x in mine):,} | "
              f"{100 * o['identical_fraction']:.0f} % identical, max {o['max_abs_lsb']} LSB, argmax "
              f"{'equal' if o['argmax_equal'] else 'differs'} |")
