"""A whole model on every build: onnxruntime, TVM Relax (plain, fused, tuned) on the CPU and
on CUDA, PyTorch eager, and VTA-8; each verified, then timed, in one table per device.

`compare_model(case, opts)` returns `ModelRow`s in the order of the table. The first row,
onnxruntime fp32 on the CPU, is the baseline of every speedup. Verification comes first:
- fp32 rows against onnxruntime's reference kernels (graph optimisations off) on the same
  input, within FP32_RTOL of the largest logit;
- integer rows (TVM builds of the integer graph, the accelerator) bit-exact with the integer
  graph's CPU build (graph.build.CpuModel), which `vta-sim model` verifies the accelerator
  against;
- onnxruntime's QDQ model, whose float32 requantisation rounds near-ties either way, within
  QDQ_LSB output quantisation steps of the integer graph.
A row that cannot run here is skipped with the reason; a build that raises or does not verify
is a failed row, and `vta-sim compare` exits 1.
"""
from __future__ import annotations

import dataclasses
import json
import os
import sys
import time
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np

from baselines.compare import time_python
from graph.errors import one_line

#: fp32 rows agree with onnxruntime's reference kernels within this fraction of the largest |logit|.
FP32_RTOL = 1e-3
#: onnxruntime's optimised QDQ model agrees with the integer graph within this many output steps,
#: with the same top class: its float32 requantisation rounds near-ties either way, 1 step per
#: layer at most, which compounds over depth (4 steps at ResNet-18's logits on a Xeon host).
QDQ_LSB = 8


@dataclass
class ModelRow:
    model: str
    device: str                      # cpu | gpu | vta
    build: str                       # e.g. "onnxruntime fp32", "tvm fp32 fused"
    dtype: str                       # fp32 | int8
    time_s: float | None = None      # one frame (the model's batch), median of the repeats
    speedup: float | None = None     # over the first row
    verified: bool = False
    agreement: str = ""              # what verification measured
    skipped: str | None = None
    error: str | None = None
    compile_s: float | None = None
    note: str = ""

    @property
    def frames_per_s(self) -> float | None:
        return 1.0 / self.time_s if self.time_s else None

    def to_json(self) -> dict:
        return {**dataclasses.asdict(self), "frames_per_s": self.frames_per_s}


@dataclass(frozen=True)
class Options:
    repeats: int = 5
    min_time_s: float = 0.2          # each repeat calls the model until this much time passed
    trials: int = 4                  # meta_schedule trials per tuning task; 0: no tuned rows
    threads: int | None = None
    work_dir: str = ""               # "": compare/ in the cache root (vta_sim.paths)
    vta_config: str = "1x8x8"
    devices: tuple = ("cpu", "gpu", "vta")


@dataclass
class ModelCase:
    """A model as the comparison takes it: its float and QDQ forms and one frame of input."""
    name: str
    float_onnx: object | None        # None when only a quantised file was given
    qdq_onnx: object | None
    x: np.ndarray
    notes: list = field(default_factory=list)


def log(text: str) -> None:
    """Progress on stderr, one plain line each (clean when redirected to a file)."""
    print(f"[compare] {text}", file=sys.stderr, flush=True)


# ---------------------------------------------------------------- timing
def fp32_agreement(out: np.ndarray, ref: np.ndarray) -> tuple[bool, str]:
    if out.shape != ref.shape:
        return False, f"shape {out.shape}, expected {ref.shape}"
    scale = float(np.abs(ref).max()) or 1.0
    err = float(np.abs(out.astype(np.float64) - ref).max()) / scale
    return err <= FP32_RTOL, f"max |d| {err:.1e} of max |logit|"


def exact_agreement(out: np.ndarray, ref: np.ndarray) -> tuple[bool, str]:
    if out.shape != ref.shape:
        return False, f"shape {out.shape}, expected {ref.shape}"
    same = bool(np.array_equal(out, ref))
    return same, "bit-exact" if same else f"{int((out != ref).sum())} of {ref.size} outputs differ"


def lsb_agreement(out: np.ndarray, ref: np.ndarray, step: float) -> tuple[bool, str]:
    if out.shape != ref.shape:
        return False, f"shape {out.shape}, expected {ref.shape}"
    lsb = np.abs(out.astype(np.float64) - ref.astype(np.float64)) / step
    worst = int(np.round(lsb.max()))
    same_top = bool(np.array_equal(out.argmax(-1), ref.argmax(-1)))
    return (worst <= QDQ_LSB and same_top,
            f"max {worst} LSB, {float((lsb < 0.5).mean()):.1%} identical, top class "
            + ("equal" if same_top else "DIFFERS"))


# ---------------------------------------------------------------- the rows
def _threads(opts: Options) -> int:
    return opts.threads or os.cpu_count() or 1


def onnxruntime_rows(case: ModelCase, refs: dict, opts: Options) -> list:
    import onnxruntime as ort

    rows = []
    for dtype, proto in (("fp32", case.float_onnx), ("int8", case.qdq_onnx)):
        row = ModelRow(case.name, "cpu", f"onnxruntime {dtype}", dtype)
        rows.append(row)
        if proto is None:
            row.skipped = f"no {dtype} form of this model" + (
                "" if dtype == "int8" else ": the file given is quantised")
            continue
        so = ort.SessionOptions()
        so.intra_op_num_threads = _threads(opts)
        t0 = time.perf_counter()
        sess = ort.InferenceSession(proto.SerializeToString(), so, providers=["CPUExecutionProvider"])
        row.compile_s = time.perf_counter() - t0
        feed = {sess.get_inputs()[0].name: case.x}
        out = sess.run(None, feed)[0]
        if dtype == "fp32":
            row.verified, row.agreement = fp32_agreement(out, refs["fp32"])
        elif "int8" in refs:
            row.verified, row.agreement = lsb_agreement(out, refs["int8"], refs["int8_step"])
        else:  # no integer graph: against onnxruntime's own reference kernels
            row.verified, row.agreement = lsb_agreement(out, refs["qdq"], refs["int8_step"])
            row.agreement = "against onnxruntime's reference kernels (no integer graph): " + row.agreement
        row.note = f"default graph optimisations, {_threads(opts)} intra-op threads, onnxruntime {ort.__version__}"
        if row.verified:
            row.time_s = time_python(lambda: sess.run(None, feed), opts)  # noqa: B023 (timed now, in this iteration)
    return rows


def tvm_rows(case: ModelCase, refs: dict, opts: Options, device: str) -> list:
    """TVM Relax builds on `device` ("cpu" or "gpu"): fp32 plain/fused/tuned, int8 plain/fused."""
    import tvm
    from tvm import relax

    from baselines import relax_builds
    from baselines.cpu_schedules import cpu_target
    from graph.ops.packed_form import packed_calls
    from baselines.gpu_schedules import cuda_target, gpu_status

    plan = [("fp32", "plain"), ("fp32", "fused"), ("fp32", "tuned"), ("int8", "plain"), ("int8", "fused")]
    rows = [ModelRow(case.name, device, f"tvm {dtype} {rung}", dtype) for dtype, rung in plan]
    if device == "gpu":
        status = gpu_status()
        if not status.usable:
            for row in rows:
                row.skipped = status.reason
            return rows
        target, dev, where = cuda_target(), tvm.cuda(0), status.reason
    else:
        target, dev = cpu_target(opts.threads), tvm.cpu()
        where = f"llvm -mcpu={target.attrs['mcpu']}, {target.attrs['num-cores']} threads"
    tuning = relax_builds.Tuning(opts.trials, opts.work_dir)
    for row, (dtype, rung) in zip(rows, plan):
        mod = refs.get(f"{dtype}_relax")
        if mod is None:
            row.skipped = refs.get(f"{dtype}_why", f"no {dtype} form of this model")
            continue
        if rung == "tuned" and opts.trials < 1:
            row.skipped = "tuning not asked for (--trials 0)"
            continue
        callbacks = packed_calls(mod) if dtype == "int8" else []
        if callbacks and device == "gpu":
            row.skipped = (f"its integer graph calls numpy for {', '.join(callbacks)} (graph.ops.packed_form: the "
                           "accelerator's softmax, LayerNorm and GELU), which runs on the CPU only")
            continue
        log(f"{case.name}: building {row.build} for {device}")
        try:
            built = relax_builds.build(mod, target, rung, tuning, progress=lambda t: log(f"{case.name}: {t}"))
            vm = relax.VirtualMachine(built.exe, dev)
            x = tvm.runtime.tensor(case.x, device=dev)
            out = vm["main"](x).numpy()
        except Exception as err:  # noqa: BLE001 - the row reports it; compare exits 1
            row.error = one_line(err)
            if os.environ.get("VTA_COMPARE_TRACEBACK"):
                import traceback
                traceback.print_exc()
            continue
        row.compile_s, row.note = built.compile_s, f"{built.note}; {where}"
        if callbacks:
            row.note += f"; {', '.join(callbacks)} run as numpy callbacks (the integer graph's reference form)"
        check = fp32_agreement(out, refs["fp32"]) if dtype == "fp32" else exact_agreement(out, refs["int8"])
        row.verified, row.agreement = check
        if row.verified:
            row.time_s = time_python(lambda: vm["main"](x), opts, dev.sync)  # noqa: B023 (timed now)
    return rows


def torch_rows(case: ModelCase, refs: dict, opts: Options, device: str) -> list:
    from baselines import torch_eager

    row = ModelRow(case.name, device, "pytorch eager fp32", "fp32")
    torch_device = "cuda" if device == "gpu" else "cpu"
    why = torch_eager.available(torch_device)
    if why is None and case.float_onnx is None:
        why = "no fp32 form of this model"
    if why is not None:
        row.skipped = why
        return [row]
    try:
        model = torch_eager.EagerModel(case.float_onnx, torch_device)
    except torch_eager.Unsupported as err:
        row.skipped = str(err)
        return [row]
    import torch

    if device == "cpu":
        torch.set_num_threads(_threads(opts))
    x = model.to_device(case.x)
    out = model(x).cpu().numpy()
    row.verified, row.agreement = fp32_agreement(out, refs["fp32"])
    row.note = f"torch {torch.__version__}, ONNX graph run node by node as torch ops" + (
        f", {torch.get_num_threads()} threads" if device == "cpu" else f", {torch.cuda.get_device_name()}")
    if row.verified:
        row.time_s = time_python(lambda: model(x), opts, model.sync)
    return [row]


def vta_rows(case: ModelCase, refs: dict, opts: Options) -> list:
    """VTA-8: the QDQ model through `vta-sim model`'s path; simulated cycles at the clock the
    configuration closes at (vta_sim.config.report_clock),
    and the host's share measured on this CPU."""
    from graph.errors import GraphError
    from graph.run import ModelCase as GraphCase
    from graph.run import run_model
    from vta_sim.config import Config, report_clock

    acc = ModelRow(case.name, "vta", "VTA-8 accelerator", "int8")
    both = ModelRow(case.name, "vta", "VTA-8 + host work", "int8")
    if case.qdq_onnx is None:
        acc.skipped = both.skipped = "no int8 (QDQ) form of this model"
        return [acc, both]
    cfg = Config.load(opts.vta_config)
    clock = report_clock(cfg)
    log(f"{case.name}: compiling and simulating on VTA-8 {cfg.name}")
    try:
        result = run_model(GraphCase(case.name, case.qdq_onnx, case.x), cfg, measure_host=True)
    except GraphError as err:
        acc.skipped = both.skipped = f"the graph level refuses it: {err}"
        return [acc, both]
    except Exception as err:  # noqa: BLE001 - the row reports it; compare exits 1
        acc.error = both.error = one_line(err)
        return [acc, both]
    on_vta = [r for r in result.layers if r["target"] == "vta"]
    on_cpu = [r for r in result.layers if r["target"] == "cpu"]
    for row in (acc, both):
        row.verified, row.agreement = exact_agreement(result.logits_vta, refs["int8"])
        row.verified = row.verified and result.verified
        row.compile_s = result.compile_s
    if not acc.verified:
        return [acc, both]
    cycles = result.total_cycles / result.batch
    host_s = result.host_s / result.batch
    acc.time_s = cycles / (clock.mhz * 1e6) if cycles else None
    if not cycles:
        acc.skipped, acc.verified = "no layer of this model runs on the accelerator", False
    acc.note = (f"{cfg.name}: {int(cycles):,} cycles at {clock.describe()}; "
                f"{len(on_vta)} of {len(result.layers)} layers, "
                f"{result.mac_fraction_vta or 0:.1%} of the MACs on VTA-8")
    both.time_s = (acc.time_s or 0.0) + host_s
    both.note = (f"accelerator time plus {host_s * 1e3:.3f} ms of host work measured on this CPU "
                 f"(the model run with each accelerator layer replaying its output): "
                 f"{len(on_cpu)} CPU layers"
                 + (f" ({', '.join(sorted({r['op'] for r in on_cpu}))})" if on_cpu else "")
                 + ", the integer glue between layers, the Relax VM's calls")
    return [acc, both]


# ---------------------------------------------------------------- references and the table
def references(case: ModelCase) -> dict:
    """The verification references, and the Relax modules of both forms."""
    from graph import onnx_import
    from graph.build import CpuModel
    from graph.errors import GraphError
    from graph.qdq import lower_qdq
    from graph.run import onnxruntime_outputs, output_step

    refs: dict = {}
    if case.float_onnx is not None:
        refs["fp32"] = onnxruntime_outputs(case.float_onnx, case.x)[case.float_onnx.graph.output[0].name]
        refs["fp32_relax"], _ = onnx_import.import_onnx(case.float_onnx, batch=len(case.x))
    else:
        refs["fp32_why"] = "no fp32 form of this model: the file given is quantised"
    if case.qdq_onnx is not None:
        refs["qdq"] = onnxruntime_outputs(case.qdq_onnx, case.x)[case.qdq_onnx.graph.output[0].name]
        refs["int8_step"] = output_step(case.qdq_onnx)
        try:
            mod, _ = onnx_import.import_onnx(case.qdq_onnx, batch=len(case.x))
            integer, _ = lower_qdq(mod)
            refs["int8_relax"] = integer
            refs["int8"] = CpuModel(integer).run(case.x)
        except GraphError as err:
            refs["int8_why"] = f"the graph level refuses its QDQ form: {err}"
        except Exception as err:  # noqa: BLE001 - named in every int8 row
            refs["int8_why"] = (f"the graph level cannot lower its QDQ form to integer ops yet "
                                f"({one_line(err, 200)})")
    return refs


def compare_model(case: ModelCase, opts: Options = Options()) -> list:
    bad = [d for d in opts.devices if d not in ("cpu", "gpu", "vta")]
    if bad:
        raise ValueError(f"unknown device(s) {bad}; accepted: cpu, gpu, vta")
    log(f"{case.name}: references (onnxruntime reference kernels, the integer graph on the CPU)")
    refs = references(case)
    rows = onnxruntime_rows(case, refs, opts)
    for device in ("cpu", "gpu"):
        if device in opts.devices:
            rows += tvm_rows(case, refs, opts, device) + torch_rows(case, refs, opts, device)
    if "vta" in opts.devices:
        if "int8" in refs:
            rows += vta_rows(case, refs, opts)
        else:
            rows += [ModelRow(case.name, "vta", b, "int8", skipped=refs.get("int8_why"))
                     for b in ("VTA-8 accelerator", "VTA-8 + host work")]
    base = rows[0].time_s
    for row in rows:
        row.speedup = base / row.time_s if base and row.time_s else None
    return rows


def _fmt(v, spec):
    return "-" if v is None else format(v, spec)


def status(row: ModelRow) -> str:
    if row.skipped:
        return "skipped: " + row.skipped
    if row.error:
        return "FAILED: " + row.error
    return ("yes, " if row.verified else "NO, ") + row.agreement


def format_table(rows: list) -> str:
    """Markdown: one block per device, speedups over the first row (onnxruntime fp32, CPU)."""
    head = "| device | build | time (ms) | frames/s | x onnxruntime fp32 | verified | note |"
    lines = [head, "|" + "---|" * 7]
    for i, r in enumerate(rows):
        if r.skipped and i and rows[i - 1].device == r.device and rows[i - 1].skipped == r.skipped:
            continue                  # one line for a run of builds skipped for the same reason
        same = [r]
        for later in rows[i + 1:]:
            if later.device != r.device or later.skipped != r.skipped or not r.skipped:
                break
            same.append(later)
        if len(same) > 1:
            lines.append(f"| {r.device} | {', '.join(x.build for x in same)} | - | - | - | "
                         f"skipped: {r.skipped} |  |")
            continue
        lines.append(f"| {r.device} | {r.build} | {_fmt(r.time_s and r.time_s * 1e3, '.3f')} | "
                     f"{_fmt(r.frames_per_s, ',.1f')} | {_fmt(r.speedup, '.2f')} | {status(r)} | {r.note} |")
    return "\n".join(lines)


def _rate(v: float) -> str:
    """Frames/s with three significant digits or more (0.455, 2.56, 39.5, 4,326)."""
    return f"{v:,.0f}" if v >= 100 else f"{v:.1f}" if v >= 10 else f"{v:.2f}" if v >= 1 else f"{v:.3f}"


def chart(rows: list, path: Path, title: str) -> None:
    """One panel per device: frames/s of each verified, timed build (log scale)."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    import matplotlib.ticker

    devices = [d for d in ("cpu", "gpu", "vta") if any(r.device == d and r.time_s for r in rows)]
    if not devices:
        return
    colours = {"cpu": "tab:blue", "gpu": "tab:green", "vta": "tab:red"}
    timed = {d: [r for r in rows if r.device == d and r.time_s] for d in devices}
    fig, axes = plt.subplots(len(devices), 1, squeeze=False,
                             figsize=(8, 1.0 + 0.32 * sum(len(v) for v in timed.values()) + 0.5 * len(devices)),
                             gridspec_kw={"height_ratios": [len(timed[d]) for d in devices]})
    lo = min(r.frames_per_s for v in timed.values() for r in v)
    hi = max(r.frames_per_s for v in timed.values() for r in v)
    for ax, d in zip(axes[:, 0], devices):
        rs = timed[d]
        ax.barh([r.build for r in rs], [r.frames_per_s for r in rs], color=colours[d])
        ax.invert_yaxis()
        ax.set_xscale("log")
        ax.xaxis.set_minor_formatter(matplotlib.ticker.NullFormatter())
        ax.set_xlim(lo / 2, hi * 4)
        ax.set_ylabel(d, rotation=0, ha="right", va="center", fontweight="bold")
        for i, r in enumerate(rs):
            rate = _rate(r.frames_per_s)
            ax.text(r.frames_per_s, i, f" {rate}/s ({r.speedup:.2f}x)" if r.speedup else f" {rate}/s",
                    va="center", fontsize=8)
    axes[-1, 0].set_xlabel("frames per second, batch 1 (log scale); in brackets: x onnxruntime fp32 on the CPU")
    axes[0, 0].set_title(title, fontsize=10)
    fig.tight_layout()
    fig.savefig(path, dpi=110)
    plt.close(fig)


def write_report(results: dict, out_dir, machine: str) -> Path:
    """report.md and one chart per model under out_dir; `results` maps model name -> rows."""
    out = Path(out_dir)
    out.mkdir(parents=True, exist_ok=True)
    lines = ["# `vta-sim compare --model` report", "", machine, "",
             "Batch 1. Every timed row was verified first (fp32 against onnxruntime's reference "
             f"kernels within {FP32_RTOL:g} of the largest logit; integer builds bit-exact with the "
             f"integer graph; onnxruntime's QDQ model within {QDQ_LSB} output steps of it). Time: median "
             "of the repeats; speedups over onnxruntime fp32 on the CPU.", ""]
    for name, rows in results.items():
        png = f"{name}.png"
        chart(rows, out / png, f"{name}: frames/s per build")
        lines += [f"## {name}", "", format_table(rows), "", f"![{name}]({png})", ""]
    path = out / "report.md"
    path.write_text("\n".join(lines))
    (out / "rows.json").write_text(json.dumps([r.to_json() for rows in results.values() for r in rows],
                                              indent=1))
    return path
