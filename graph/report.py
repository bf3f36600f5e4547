"""The per-layer report of a model run: rows (JSON), the text table, the merged trace."""
from __future__ import annotations

import dataclasses

import numpy as np

from vta_sim.config import Config
from vta_sim.isa import MODULES
from vta_sim.result import BYTES_STATS as BYTES_KEYS, RunResult, busy_fraction
from vta_sim.trace import Trace


#: A run's statistic: the cycles of a fused layer's k-th program (its spec's `pieces`).
PIECE = "piece_cycles."


def layer_rows(layers: list, runs: list, cfg: Config) -> list:
    """One dict per layer: where it ran and, for accelerator layers, its figures.

    Offloaded layers run in graph order, so the i-th accelerator layer is the i-th run."""
    vta_layers = [layer for layer in layers if layer.target == "vta"]
    if len(vta_layers) != len(runs) or any(l.symbol != r.region.symbol for l, r in zip(vta_layers, runs)):
        raise RuntimeError(f"{len(runs)} accelerator runs for {len(vta_layers)} offloaded layers: "
                           "the VM did not call the regions in graph order")
    by_layer = dict(zip((id(l) for l in vta_layers), runs))
    names = {l.symbol: l.name for l in vta_layers}
    rows = []
    for layer in layers:
        row = {"name": layer.name, "op": layer.op, "target": layer.target, "macs": layer.macs, "cycles": None,
               "utilization": None, "verified": None}
        if layer.target == "cpu":
            row["reason"] = layer.reason
        else:
            run = by_layer[id(layer)]
            stats, cycles, spec = run.result.stats, int(run.result.cycles), run.region.spec
            source = run.region.kernel.tile_source
            if source is not None:
                row["tiles_from"] = source.describe()
            row.update(shape=run.region.describe(), cycles=cycles, verified=run.verified,
                       utilization=spec.macs / cfg.macs_per_cycle / cycles if spec.macs else None,
                       dram_bytes=int(sum(stats.get(k, 0) for k in BYTES_KEYS)),
                       compile_s=run.region.kernel.compile_s, sim_s=run.seconds,
                       **{f"{m}_busy": busy_fraction(stats, m, cycles) for m in MODULES})
            if run.region.placement is not None:
                row["slices"] = run.region.placement.summary()
            if getattr(spec, "epilogue", None):
                row["epilogue"] = list(spec.epilogue)     # what graph.fusion ran on its accumulator
            if run.chained:                               # inputs as the layers before stored them
                row["inputs_stored"] = [{"from": names[symbol], "as": how} for symbol, how in run.chained]
            if getattr(spec, "pieces", None):             # a fused layer's programs (graph.attention)
                row["pieces"] = [{"op": op, "macs": macs, "cycles": int(stats.get(f"{PIECE}{k}", 0))}
                                 for k, (op, macs) in enumerate(spec.pieces)]
        rows.append(row)
    return rows


def _pct(value) -> str:
    return "" if value is None else f"{100 * value:.1f}"


def table(rows: list) -> str:
    """The layer table (Gemmini-style): op, target, cycles, utilisation, module busy, DRAM bytes.
    The name, op and shape columns are as wide as their longest entry (a fused layer's names
    joined, `matmul1+add2+softmax1+matmul2`), a space at least between columns."""
    name_w = max([12] + [len(r["name"]) + 1 for r in rows])
    op_w = max([11] + [len(r["op"]) + 1 for r in rows])
    shape_w = min(max([28] + [len(r["shape"]) + 1 for r in rows if r["target"] != "cpu"]), 48)   # longer ones push their row
    head = (f"{'layer':<{name_w}}{'op':<{op_w}}{'target':<7}{'shape':<{shape_w}}{'MACs':>13}{'cycles':>12}{'util %':>8}"
            f"{'load %':>8}{'comp %':>8}{'store %':>8}{'DRAM bytes':>12}  verified  onnxruntime")
    out = [head, "-" * len(head)]
    for r in rows:
        start = f"{r['name']:<{name_w}}{r['op']:<{op_w}}{r['target']:<7}"
        if r["target"] == "cpu":
            out.append(f"{start}{r['macs']:>{shape_w + 13},}  {r['reason']}")
            continue
        out.append(f"{start}{r['shape']:<{shape_w}}{r['macs']:>13,}{r['cycles']:>12,}"
                   f"{_pct(r['utilization']):>8}" + "".join(f"{_pct(r[f'{m}_busy']):>8}" for m in MODULES)
                   + f"{r['dram_bytes']:>12,}  {'yes' if r['verified'] else 'NO':<8}  {_agreement(r)}")
    return "\n".join(out)


def _agreement(row) -> str:
    o = row.get("onnxruntime")
    if o is None:
        return ""
    if o.get("identical_fraction") is None:
        return o["reason"]
    return f"{100 * o['identical_fraction']:.2f} % identical, max {o['max_abs_lsb']} LSB"


def summary(result) -> str:
    """Totals, agreement and accuracy in a few lines."""
    j = result.to_json()
    vta_rows = [r for r in j["layers"] if r["target"] == "vta"]
    fraction = j["mac_fraction_vta"]
    lines = [
        f"{j['model']} on {j['config']} ({j['backend']}, {j['vthreads']} virtual thread(s)), batch {j['batch']}: "
        f"{len(vta_rows)} of {len(j['layers'])} layers on the accelerator, "
        + (f"{100 * fraction:.1f} % of {j['macs']:,} MACs" if fraction is not None else "no MACs"),
        f"  logits identical to the CPU build   {'yes' if j['logits_identical'] else 'NO'}",
        f"  every offloaded layer bit-exact      {'yes' if all(r['verified'] for r in vta_rows) else 'NO'}",
    ]
    if len(j["outputs"]) > 1:
        lines[1:2] = [f"  output {o['name']} identical to the CPU build   {'yes' if o['identical'] else 'NO'}"
                      for o in j["outputs"]]
    if j["accuracy_cpu"] is not None:
        ort = f"   onnxruntime {j['accuracy_onnxruntime']:.4f}" if "accuracy_onnxruntime" in j else ""
        lines.append(f"  accuracy  cpu {j['accuracy_cpu']:.4f}   vta {j['accuracy_vta']:.4f}{ort}")
    if "onnxruntime" in j:
        o = j["onnxruntime"]
        lines.append(f"  against onnxruntime (ORT_DISABLE_ALL): {100 * o['identical_fraction']:.2f} % of outputs "
                     f"identical, max {o['max_abs_lsb']} LSB, argmax {'equal' if o['argmax_equal'] else 'DIFFERS'}")
    chained = [i for r in vta_rows for i in r.get("inputs_stored", ())]
    if chained:
        stored = sum(i["as"] == "as stored" for i in chained)
        lines.append(f"  inputs taken as the layer before stored them (no host copy): {stored}"
                     + (f", {len(chained) - stored} more padded by the host" if stored < len(chained) else ""))
    slices = [s for r in vta_rows for s in r.get("slices", ())]
    if slices:
        lines.append("  concat slices  " + slice_counts(slices))
    sources = sorted({r["tiles_from"] for r in vta_rows if "tiles_from" in r})
    if sources:
        lines.append("  tiles from   " + "; ".join(sources))
    if j["frames_per_second"] is None:
        cpu = [r for r in j["layers"] if r["target"] == "cpu"]
        reasons = sorted({r["reason"] for r in cpu if r.get("reason")})
        lines.append(f"  nothing ran on the accelerator: all {len(cpu)} layers stayed on the CPU"
                     + (f" ({'; '.join(reasons[:3])}{'; ...' if len(reasons) > 3 else ''})" if reasons else ""))
    else:
        unit = j.get("sample", "frame")
        lines.append(f"  total cycles {j['total_cycles']:,}   ({j['total_cycles'] / j['batch']:,.0f} per {unit}, "
                     f"{j['frames_per_second']:,.1f} {unit}s/s at {j['clock_mhz']:g} MHz)")
        lines.append(f"  clock: {j['clock_source']}")
    lines += [
        f"  compile {j['compile_s']:.1f} s (CPU reference build {j['cpu_compile_s']:.1f} s)   "
        f"simulate {j['run_s']:.1f} s",
    ]
    return "\n".join(lines)


def slice_counts(slices: list) -> str:
    """How the Concats' slices were written: by their producers' or rescales' STOREs, or the
    host (with its reasons, most frequent first)."""
    count = {w: sum(s["writer"] == w for s in slices) for w in ("producer", "rescale", "host")}
    reasons: dict = {}
    for s in slices:
        if "reason" in s:
            key = s["reason"].split(":")[0]
            reasons[key] = reasons.get(key, 0) + 1
    why = "; ".join(f"{n} {r}" for r, n in sorted(reasons.items(), key=lambda kv: -kv[1]))
    return (f"{count['producer']} stored in place by their producers, {count['rescale']} by their rescale "
            f"programs, {count['host']} placed by the host" + (f" ({why})" if why else ""))


def merged_trace(runs: list, cfg: Config) -> Trace:
    """One timeline of all accelerator layers, back to back in run order."""
    return chained([run.result for run in runs], cfg.name)


def chained(results: list, config_name: str) -> Trace:
    """The traces of `results` (RunResults) back to back in order."""
    events, offset = [], 0
    for result in results:
        if result.trace is None:
            raise RuntimeError("the model was run without traces; build it with trace=True")
        for e in result.trace.events:
            events.append(dataclasses.replace(
                e, enqueue=e.enqueue + offset, start=e.start + offset, grant=e.grant + offset,
                done=e.done + offset, free=e.free + offset))
        offset += int(result.cycles)
    return Trace(events, offset, config_name)


def back_to_back(results: list, config_name: str, backend: str, trace: bool):
    """One RunResult for programs run one after another: cycles and statistics summed, traces
    chained (a Concat's rescales, a batched matmul's batches)."""
    stats: dict = {}
    for result in results:
        for key, value in result.stats.items():
            stats[key] = stats.get(key, 0) + value
    return RunResult(np.zeros(0, np.uint8), sum(int(r.cycles) for r in results), stats,
                     chained(results, config_name) if trace else None, backend)
