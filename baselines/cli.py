"""`vta-sim compare`: one workload built every way (CPU steps, tensorised, tuned, GPU, the
accelerator) next to numpy / onnxruntime / PyTorch, verified, timed, tabulated, reported; or,
with `--model`, a whole model on onnxruntime, TVM Relax (plain, fused, tuned) on CPU and CUDA,
PyTorch eager and VTA-8."""
import json
import os
import platform
import sys
from pathlib import Path

from baselines import compare, workloads
from graph.errors import GraphError

WORKLOADS = ("gemm", "conv2d", "conv1d", "dwsep")
# Shape defaults of the convolution workloads (conv2d without any of these: resnet18.C5).
CONV_DEFAULTS = {
    "conv2d": dict(channels=64, height=28, width=28, filters=64, kernel=3, stride=1, pad=1),
    "conv1d": dict(channels=64, width=256, filters=64, kernel=3, stride=1, pad=1),
    "dwsep": dict(channels=64, height=28, width=28, filters=128),
}


def register(subparsers):
    p = subparsers.add_parser(
        "compare", help="build one workload for CPU / GPU / accelerator and compare",
        description=__doc__)
    p.add_argument("--workload", choices=WORKLOADS, default="gemm")
    p.add_argument("--model", default=None, action="append",
                   help="a whole model instead of one operator: digits, resnet18, mobilenet_v2, encoder, "
                        "vit, digits-vit or PATH.onnx (repeat the option for several)")
    p.add_argument("--quantizer", default=None,
                   help="--model: the quantiser of its int8 rows (default: pow2 for digits and resnet18, "
                        "onnxruntime-symmetric for encoder, vit and digits-vit, onnxruntime otherwise; a QDQ "
                        "file is taken as it is)")
    p.add_argument("--dtype", default=None,
                   help="int8, fp32 or both comma-separated (default: gemm int8,fp32; others int8)")
    g = p.add_argument_group("shape (defaults: GEMM 1024^3, conv2d resnet18.C5)")
    g.add_argument("--m", type=int, default=1024)
    g.add_argument("--n", type=int, default=1024)
    g.add_argument("--k", type=int, default=1024)
    g.add_argument("--layer", default=None, help="conv2d: ResNet-18 layer, e.g. resnet18.C5")
    g.add_argument("--batch", type=int, default=1)
    for name in CONV_DEFAULTS["conv2d"]:
        g.add_argument(f"--{name}", type=int, default=None,
                       help="conv default: " + ", ".join(f"{w} {d[name]}" for w, d in
                                                          CONV_DEFAULTS.items() if name in d))
    p.add_argument("--targets", default=None,
                   help="comma-separated subset of " + ",".join(compare.TARGETS) + " (--model: of "
                        "cpu,gpu,vta; default all)")
    p.add_argument("--repeats", type=int, default=5, help="timed repeats (median reported)")
    p.add_argument("--trials", type=int, default=None,
                   help="meta_schedule trial budget: in all (operators, default 16) or per tuning task "
                        "(--model, default 4; 0 skips the tuned rows)")
    p.add_argument("--threads", type=int, default=None, help="threads of the TVM builds and onnxruntime (default: all cores; "
                        "numpy keeps OpenBLAS's own setting)")
    p.add_argument("--vta-config", default="1x8x8", help="accelerator configuration (vta column)")
    p.add_argument("--work-dir", default="", help="meta_schedule database lives here (default: compare/ in the "
                   "cache root, $VTA_CACHE or build/)")
    p.add_argument("--json", default=None, help="write the rows as a JSON list")
    p.add_argument("--report", default=None, help="write report.md and charts into this directory")
    p.set_defaults(func=run)


def make_workloads(args):
    """The workloads named by the arguments (one per dtype)."""
    default = "int8,fp32" if args.workload == "gemm" else "int8"
    dtypes = [d.strip() for d in (args.dtype or default).split(",") if d.strip()]
    given = {k: getattr(args, k) for k in CONV_DEFAULTS["conv2d"] if getattr(args, k) is not None}
    if args.workload == "conv2d" and (args.layer or not given):
        return [workloads.conv2d_layer(args.layer or "resnet18.C5", dt, args.batch) for dt in dtypes]
    if args.workload == "gemm":
        return [workloads.gemm(args.m, args.n, args.k, dt) for dt in dtypes]
    s = {**CONV_DEFAULTS[args.workload], **given}
    if args.workload == "conv2d":
        return [workloads.conv2d(args.batch, s["channels"], s["height"], s["width"], s["filters"],
                                 s["kernel"], s["kernel"], s["stride"], s["pad"], dt) for dt in dtypes]
    if args.workload == "conv1d":
        return [workloads.conv1d(args.batch, s["channels"], s["width"], s["filters"], s["kernel"],
                                 s["stride"], s["pad"], dt) for dt in dtypes]
    return [workloads.dwsep(args.batch, s["channels"], s["height"], s["width"], s["filters"], dt)
            for dt in dtypes]


def machine_line(threads=None):
    from baselines.cpu_tensorised import host_flags
    from baselines.gpu_schedules import gpu_status

    flags = host_flags()
    simd = [f for f in ("avx2", "avx512f", "avx512_vnni", "avx_vnni") if f in flags]
    gpu = gpu_status()
    return (f"Host: {cpu_model()}, {threads or os.cpu_count()} "
            f"threads, SIMD: {', '.join(simd) or 'none detected'}. "
            f"GPU: {gpu.reason if gpu.usable else 'not usable, ' + gpu.reason}. "
            f"Libraries: {library_versions()}.")


def cpu_model() -> str:
    """The CPU's model name (/proc/cpuinfo), else what platform knows."""
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return platform.processor() or platform.machine()


def library_versions() -> str:
    from importlib.metadata import PackageNotFoundError, version

    found = []
    for dist in ("apache-tvm", "numpy", "onnxruntime", "torch"):
        try:
            found.append(f"{dist} {version(dist)}")
        except PackageNotFoundError:
            pass
    return ", ".join(found) or "none found"


def _thread_environment(threads):
    # TVM's pool threads spin-wait after each parallel kernel and would steal the cores from the
    # numpy / onnxruntime baselines timed next; read when the pool starts, so set it first.
    os.environ.setdefault("TVM_THREAD_POOL_SPIN_COUNT", "0")
    # Unset, TVM's pool takes half the hardware threads (it assumes hyper-threading): one of
    # this machine's two cores. The default is all cores, as for the baselines.
    if threads:
        os.environ["TVM_NUM_THREADS"] = str(threads)
    else:
        os.environ.setdefault("TVM_NUM_THREADS", str(os.cpu_count()))


def run_models(args):
    """`vta-sim compare --model ...`: one table per model."""
    from baselines import model_cases, model_compare

    _thread_environment(args.threads)
    devices = tuple(t.strip() for t in (args.targets or "cpu,gpu,vta").split(",") if t.strip())
    trials = 4 if args.trials is None else args.trials
    try:
        if args.repeats < 1:
            raise ValueError(f"--repeats must be >= 1, got {args.repeats}")
        if trials < 0:
            raise ValueError(f"--trials must be >= 0, got {trials}")
        opts = model_compare.Options(repeats=args.repeats, trials=trials,
                                     threads=args.threads, work_dir=args.work_dir,
                                     vta_config=args.vta_config, devices=devices)
        bad = [d for d in devices if d not in ("cpu", "gpu", "vta")]
        if bad:
            raise ValueError(f"--targets {','.join(bad)}: with --model accepted are cpu, gpu, vta")
        cases = [model_cases.load_case(m, args.quantizer) for m in args.model]
    except (ValueError, GraphError) as err:
        print(f"vta-sim compare: {err}", file=sys.stderr)
        return 2
    results = {}
    for case in cases:
        rows = model_compare.compare_model(case, opts)
        results[case.name] = rows
        print(f"\n{case.name}  (batch 1)\n")
        for note in case.notes:
            print(f"  {note}")
        print(model_compare.format_table(rows))
    return _finish(args, results, lambda: model_compare.write_report(results, args.report,
                                                                     machine_line(args.threads)),
                   lambda r: f"{r.model} {r.device}/{r.build}")


def _finish(args, results, report, label):
    """--json, --report, and the exit status: 1 if a row that ran did not verify."""
    rows = [r for rs in results.values() for r in rs]
    failed = [(label(r), r.error) for r in rows if not r.skipped and not r.verified]
    if args.json:
        path = Path(args.json)
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(json.dumps([r.to_json() for r in rows], indent=1))
        print(f"\nrows written to {args.json}")
    if args.report:
        print(f"report written to {report()}")
    if failed:
        print("vta-sim compare: FAILED: " + ", ".join(
            f"{what} ({error or 'output differs from the reference'})" for what, error in failed),
            file=sys.stderr)
    return 1 if failed else 0


def run(args):
    if args.model:
        return run_models(args)
    _thread_environment(args.threads)
    try:
        wls = make_workloads(args)
        targets = [t.strip() for t in (args.targets or ",".join(compare.TARGETS)).split(",") if t.strip()]
        opts = compare.Options(repeats=args.repeats, trials=16 if args.trials is None else args.trials,
                               work_dir=args.work_dir,
                               threads=args.threads, vta_config=args.vta_config)
        if args.repeats < 1:
            raise ValueError(f"--repeats must be >= 1, got {args.repeats}")
        results = {wl: compare.compare(wl, targets, opts) for wl in wls}
    except ValueError as err:
        print(f"vta-sim compare: {err}", file=sys.stderr)
        return 2
    for wl, rows in results.items():
        print(f"\n{wl.name}  ({wl.ops / 1e9:.3f} G ops)\n")
        print(compare.format_table(rows))
    return _finish(args, results, lambda: compare.write_report(results, args.report,
                                                               machine_line(args.threads)),
                   lambda r: f"{r.workload} {r.target}/{r.variant}")
