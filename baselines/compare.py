"""One workload, every build: verify each against the exact reference, then time it.

`compare(wl, targets)` returns `Row`s (the JSON rows of `vta-sim compare`): the CPU scalar
build, the cumulative optimisation steps, the tensorised and auto-tuned builds, the GPU build,
the accelerator and the baselines. Only a missing environment (no GPU, no AVX2/VNNI, no
onnxruntime or torch) makes a row `skipped`, with the reason; a variant whose output differs
from the reference is `verified: false` and is not timed; a variant whose build or run raised
is `verified: false` with the exception in `error`. `vta-sim compare` exits non-zero on both.
"""
import statistics
import time
from dataclasses import asdict, dataclass, field

import numpy as np
import tvm

from schedules import measure
from baselines import cpu_autotune, cpu_schedules, cpu_tensorised, gpu_schedules, references
from vta_sim.config import Config, report_clock

TARGETS = ("cpu", "gpu", "vta", "reference")


@dataclass
class Row:
    workload: str
    target: str
    variant: str
    time_s: float | None = None
    gops: float | None = None
    speedup_vs_scalar: float | None = None
    speedup_vs_reference: float | None = None
    verified: bool = False
    skipped: str | None = None
    error: str | None = None
    note: str = ""
    script: str | None = field(default=None, repr=False)  # scheduled TIR, for the report

    def to_json(self):
        d = asdict(self)
        d.pop("script")
        return d


@dataclass(frozen=True)
class Options:
    repeats: int = 5
    min_time_s: float = 0.05  # each timed repeat runs the kernel until this much time passed
    trials: int = 16  # meta_schedule trial budget
    work_dir: str = ""        # the meta_schedule database; "": compare/ in the cache root (vta_sim.paths)
    threads: int | None = None  # CPU threads for TVM and the baselines (default: all cores)
    vta_config: str = "1x8x8"  # accelerator configuration of the vta column


def matches(out, ref, dtype):
    """Exact for integer outputs; fp32 within accumulated-rounding tolerance."""
    if out.shape != ref.shape:
        return False
    if dtype == "int8":
        return bool(np.array_equal(out, ref))
    scale = float(np.abs(ref).max()) or 1.0
    return bool(np.allclose(out, ref, rtol=1e-3, atol=1e-4 * scale))


def time_python(fn, opts, sync=lambda: None):
    """Median over `repeats` of the mean time of back-to-back calls lasting >= min_time_s;
    `sync` waits for the device (a GPU's calls return before their kernels finish)."""
    fn()
    sync()
    start = time.perf_counter()
    fn()
    sync()
    number = max(1, int(opts.min_time_s / max(time.perf_counter() - start, 1e-9)))
    samples = []
    for _ in range(opts.repeats):
        t0 = time.perf_counter()
        for _ in range(number):
            fn()
        sync()
        samples.append((time.perf_counter() - t0) / number)
    return statistics.median(samples)


def verified_host_call(mod, wl, inputs):
    """`mod` built for the host and run once on `inputs`: a zero-argument call of it if its
    output matches the workload's exact reference, else None (for the benches' interleaving)."""
    exe = tvm.compile(mod, target=cpu_schedules.cpu_target()).jit()
    args = [tvm.runtime.tensor(a) for a in inputs]
    out = tvm.runtime.tensor(np.zeros(wl.output_shape, wl.out_dtype))
    exe["main"](*args, out)
    if not matches(out.numpy(), wl.reference(inputs), wl.dtype):
        return None
    return lambda: exe["main"](*args, out)


def run_tvm(mod, target, dev, wl, inputs, ref, opts):
    """Build, run once, verify; time with time_evaluator only if it verified."""
    exe = tvm.compile(mod, target=target).jit()
    args = [tvm.runtime.tensor(a, device=dev) for a in inputs]
    out = tvm.runtime.tensor(np.zeros(wl.output_shape, wl.out_dtype), device=dev)
    exe["main"](*args, out)
    if not matches(out.numpy(), ref, wl.dtype):
        return False, None
    ev = exe.time_evaluator("main", dev, number=1, repeat=opts.repeats,
                            min_repeat_ms=int(opts.min_time_s * 1000))
    return True, statistics.median(ev(*args, out).results)


def _cpu_variants(wl, opts):
    """(variant, IRModule | None, target, skipped reason | None, note)."""
    target = cpu_schedules.cpu_target(opts.threads)
    yield "scalar", cpu_schedules.scalar(wl), target, None, "unscheduled PrimFunc"
    for step, doc in cpu_schedules.STEPS.items():
        yield step, cpu_schedules.step_module(wl, step), target, None, doc
    yield from cpu_tensorised.variants(wl, opts.threads)
    try:
        mod, fresh = cpu_autotune.tuned_module(wl, target, opts.trials, opts.work_dir)
        how = f"tuned now, {opts.trials} trials" if fresh else "best record of the earlier tuning"
        yield "meta_schedule", mod, target, None, f"{how} (database under {cpu_autotune.work_root(opts.work_dir)})"
    except cpu_autotune.TuningFailed as err:
        yield "meta_schedule", None, target, str(err), ""


def cpu_rows(wl, inputs, ref, opts):
    rows = []
    for variant, mod, target, skipped, note in _cpu_variants(wl, opts):
        row = Row(wl.name, "cpu", variant, note=note, skipped=skipped,
                  script=mod.script() if mod is not None else None)
        if skipped is None:
            row.verified, row.time_s = run_tvm(mod, target, tvm.cpu(), wl, inputs, ref, opts)
        rows.append(row)
    return rows


def gpu_rows(wl, inputs, ref, opts):
    mod = gpu_schedules.schedule(wl)
    source = gpu_schedules.cuda_source(mod)
    row = Row(wl.name, "gpu", "cuda", script=mod.script(),
              note=f"hand schedule; CUDA source {len(source.splitlines())} lines")
    status = gpu_schedules.gpu_status()
    if not status.usable:
        row.skipped = f"{status.reason} (CUDA source generated and checked, not run)"
    else:
        row.verified, row.time_s = run_tvm(mod, gpu_schedules.cuda_target(), tvm.cuda(), wl,
                                           inputs, ref, opts)
    return [row]


def vta_shape(wl):
    """`schedules.measure.run_vta` arguments for `wl`, or None if the compiler path lacks its kind."""
    if wl.kind == "gemm":
        (M, K), (_, N) = wl.inputs[0][1], wl.inputs[1][1]
        return "gemm", dict(m=M, k=K, n=N)
    if wl.kind == "conv2d":
        (B, C, H, W), (K, _, R, S) = wl.inputs[0][1], wl.inputs[1][1]
        if R == S:
            return "conv2d", dict(batch=B, ic=C, h=H, w=W, oc=K, k=R, pad=wl.params["pad"],
                                  stride=wl.params["stride"])
    return None


def vta_rows(wl, inputs, ref, opts):
    """The compiler path's simulated cycles at the config's placed-and-routed clock
    (schedules.measure.run_vta; vta_sim.config.report_clock).

    run_vta draws its own seeded inputs and checks the output bit-exactly against its numpy
    reference; that check is this row's `verified`. A float workload or a kind the compiler
    path has no schedule for is outside the accelerator (skipped); a compiler or simulator
    error is a failure of the row.
    """
    row = Row(wl.name, "vta", "sim")
    case = vta_shape(wl)
    if wl.dtype != "int8":
        row.skipped = "the accelerator computes int8 -> int32 only"
    elif case is None:
        row.skipped = f"the compiler path (schedules.measure.run_vta) has no {wl.kind} schedule"
    if row.skipped:
        return [row]
    cfg = Config.load(opts.vta_config)
    try:
        fig = measure.run_vta(case[0], case[1], config=opts.vta_config)
    except Exception as err:  # noqa: BLE001 - reported as the row's error; compare exits non-zero
        row.error = f"run_vta{case} raised {type(err).__name__}: {err}"
        return [row]
    row.verified = bool(fig["verified"])
    if row.verified:
        clock = report_clock(cfg)
        row.time_s = fig["cycles"] / (clock.mhz * 1e6)
        row.note = (f"{cfg.name}: {fig['cycles']:,} cycles at {clock.describe()}; GEMM-core "
                    f"utilisation {fig['utilization']:.1%} (simulated in {fig['sim_s']:.1f} s)")
    return [row]


def reference_rows(wl, inputs, ref, opts):
    threads = opts.threads or cpu_schedules.cpu_target().attrs["num-cores"]
    makers = [lambda: references.numpy_fp32(wl, inputs),
              lambda: references.onnxruntime_baseline(wl, inputs, int(threads)),
              lambda: references.torch_baseline(wl, inputs, "cpu"),
              lambda: references.torch_baseline(wl, inputs, "cuda")]
    names = ["numpy", "onnxruntime", "torch_cpu", "torch_cuda"]
    rows = []
    for name, make in zip(names, makers):
        row = Row(wl.name, "reference", name)
        try:
            base = make()
        except references.Unavailable as err:
            row.skipped = str(err)
            rows.append(row)
            continue
        row.note = base.note
        row.verified = matches(base.result(base.run()), ref, wl.dtype)
        if row.verified:
            row.time_s = time_python(base.run, opts)
        rows.append(row)
    return rows


COLUMNS = {"cpu": cpu_rows, "gpu": gpu_rows, "vta": vta_rows, "reference": reference_rows}


def compare(wl, targets=TARGETS, opts=Options()):
    """All rows for `wl`, with GOPS and speedups filled in."""
    bad = [t for t in targets if t not in COLUMNS]
    if bad:
        raise ValueError(f"unknown target(s) {bad}; accepted: {', '.join(TARGETS)}")
    inputs = wl.random_inputs()
    ref = wl.reference(inputs)
    rows = [r for t in targets for r in COLUMNS[t](wl, inputs, ref, opts)]
    fill_speedups(rows, wl.ops)
    return rows


def fill_speedups(rows, ops):
    """GOPS; speedups over the CPU scalar build and over the best verified reference."""
    timed = [r for r in rows if r.time_s]
    for r in timed:
        r.gops = ops / r.time_s / 1e9
    scalar = next((r.time_s for r in timed if r.target == "cpu" and r.variant == "scalar"), None)
    refs = [r.time_s for r in timed if r.target == "reference"]
    best_ref = min(refs) if refs else None
    for r in timed:
        r.speedup_vs_scalar = scalar / r.time_s if scalar else None
        r.speedup_vs_reference = best_ref / r.time_s if best_ref else None


def _fmt(v, spec):
    return "-" if v is None else format(v, spec)


def format_table(rows):
    """Plain-text table; markdown-compatible."""
    head = "| target | variant | time (ms) | GOPS | x scalar | x best ref | verified | note |"
    lines = [head, "|" + "---|" * 8]
    for r in rows:
        status = ("skipped: " + r.skipped if r.skipped else "FAILED: " + r.error if r.error
                  else "yes" if r.verified else "NO")
        lines.append(f"| {r.target} | {r.variant} | {_fmt(r.time_s and r.time_s * 1e3, '.3f')} | "
                     f"{_fmt(r.gops, '.2f')} | {_fmt(r.speedup_vs_scalar, '.1f')} | "
                     f"{_fmt(r.speedup_vs_reference, '.2f')} | {status} | {r.note} |")
    return "\n".join(lines)


# ---------------------------------------------------------------- markdown report
def _chart(rows, path, title):
    """Horizontal bar chart of GOPS per verified, timed variant (log scale)."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    import matplotlib.ticker

    timed = [r for r in rows if r.gops]
    colours = {"cpu": "tab:blue", "gpu": "tab:green", "vta": "tab:red", "reference": "tab:gray"}
    fig, ax = plt.subplots(figsize=(8, 0.35 * len(timed) + 1.2))
    ax.barh([f"{r.target}: {r.variant}" for r in timed], [r.gops for r in timed],
            color=[colours[r.target] for r in timed])
    ax.invert_yaxis()
    ax.set_xscale("log")
    ax.xaxis.set_minor_formatter(matplotlib.ticker.NullFormatter())
    ax.set_xlabel("GOPS (log scale; 2 ops per multiply-accumulate)")
    ax.set_title(title, fontsize=10)
    for i, r in enumerate(timed):
        ax.text(r.gops, i, f" {r.gops:.2f}", va="center", fontsize=8)
    fig.tight_layout()
    fig.savefig(path, dpi=110)
    plt.close(fig)


def _step_sections(rows):
    """Each CPU variant's scheduled TIR, with the diff against the previous step."""
    import difflib

    out, prev = [], None
    for r in rows:
        if r.target != "cpu" or r.script is None:
            continue
        out.append(f"### cpu / {r.variant}\n\n{r.note}\n")
        if prev is not None and r.variant in cpu_schedules.STEPS:
            diff = difflib.unified_diff(prev.script.splitlines(), r.script.splitlines(),
                                        f"{prev.variant}", f"{r.variant}", lineterm="", n=1)
            out.append(f"Changes against `{prev.variant}`:\n\n```diff\n" + "\n".join(diff) + "\n```\n")
        out.append(f"<details><summary>full TIR of {r.variant}</summary>\n\n```python\n"
                   f"{r.script}\n```\n</details>\n")
        if r.variant == "scalar" or r.variant in cpu_schedules.STEPS:
            prev = r
    return out


def write_report(results, out_dir, machine):
    """report.md plus one chart per workload under out_dir; `results` maps workload -> rows."""
    from pathlib import Path

    out = Path(out_dir)
    out.mkdir(parents=True, exist_ok=True)
    lines = ["# `vta-sim compare` report", "", machine, "",
             "Time is the median of the repeats; every timed row was verified against the exact "
             "numpy int64/float64 reference first. `x scalar`: speedup over the CPU scalar build; "
             "`x best ref`: over the fastest verified reference (numpy / onnxruntime / torch).", ""]
    for wl, rows in results.items():
        chart = f"{wl.name}.png"
        _chart(rows, out / chart, wl.name)
        lines += [f"## {wl.name}", "", f"{wl.ops / 1e9:.3f} G ops.", "", format_table(rows), "",
                  f"![{wl.name}]({chart})", ""]
        lines += _step_sections(rows)
        gpu = [r for r in rows if r.target == "gpu" and r.script]
        for r in gpu:
            lines.append(f"<details><summary>GPU schedule TIR</summary>\n\n```python\n{r.script}\n"
                         "```\n</details>\n")
    path = out / "report.md"
    path.write_text("\n".join(lines))
    return path
