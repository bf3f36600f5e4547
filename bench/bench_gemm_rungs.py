"""The two CPU rungs of `vta-sim compare --workload gemm` that should beat their baseline.

  fp32 GEMM: the optimised schedule (`parallel`, last of cpu_schedules.STEPS) / numpy matmul
  int8 GEMM: the tensorised schedule (`avx2`, VPMADDWD) / onnxruntime MatMulInteger (u8u8)

Each TVM build is verified against the exact reference first. Kernel and baseline alternate
call by call (`--rounds` rounds of `--calls` back-to-back calls each, a short pause between, so
the other library's spinning workers are idle) and each side's time is the median, so a
machine shared with another job disturbs both sides alike. The ratio is baseline time / TVM
time (> 1: TVM is faster). Threads: TVM_NUM_THREADS / OPENBLAS_NUM_THREADS / onnxruntime
intra-op threads all `--threads` (default: all cores), TVM_THREAD_POOL_SPIN_COUNT=0, as
`vta-sim compare` sets them. Usage:

    .venv/bin/python bench/bench_gemm_rungs.py [--size 1024] [--rounds 21] [--threads N] [--json F]
"""
import argparse
import json
import os
import platform
import statistics
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))


def _threads_from_argv():
    if "--threads" in sys.argv:
        return int(sys.argv[sys.argv.index("--threads") + 1])
    return os.cpu_count()


THREADS = _threads_from_argv()
# the pools read these once, when numpy / TVM load: set them before the imports
os.environ.setdefault("TVM_THREAD_POOL_SPIN_COUNT", "0")
os.environ.setdefault("TVM_NUM_THREADS", str(THREADS))
os.environ.setdefault("OPENBLAS_NUM_THREADS", str(THREADS))

import numpy as np  # noqa: E402
import tvm  # noqa: E402

from baselines import compare, cpu_schedules, cpu_tensorised, references, workloads  # noqa: E402


def tvm_callable(mod, wl, inputs):
    """Build for the host, verify against the exact reference, return a zero-argument call."""
    call = compare.verified_host_call(mod, wl, inputs)
    if call is None:
        raise SystemExit(f"{wl.name}: TVM build does not match the reference")
    return call


def baseline_callable(base, wl, inputs):
    if not compare.matches(base.result(base.run()), wl.reference(inputs), wl.dtype):
        raise SystemExit(f"{wl.name}: {base.variant} does not match the reference")
    return base.run


def interleaved(calls, rounds, per_round=3, pause=0.2):
    """calls: name -> zero-argument callable. Median seconds per call of each, alternating."""
    for f in calls.values():  # warm up (thread pools, caches, lazy init)
        f()
        f()
    samples = {n: [] for n in calls}
    for _ in range(rounds):
        for name, f in calls.items():
            time.sleep(pause)
            t0 = time.perf_counter()
            for _ in range(per_round):
                f()
            samples[name].append((time.perf_counter() - t0) / per_round)
    return {n: statistics.median(s) for n, s in samples.items()}


def rungs(n, threads):
    """(title, workload, {name: callable}, baseline name) of the two comparisons."""
    fp32 = workloads.gemm(n, n, n, "fp32")
    x = fp32.random_inputs()
    f = {"parallel": tvm_callable(cpu_schedules.step_module(fp32, "parallel"), fp32, x),
         "numpy": baseline_callable(references.numpy_fp32(fp32, x), fp32, x)}
    int8 = workloads.gemm(n, n, n, "int8")
    y = int8.random_inputs()
    i = {"avx2": tvm_callable(cpu_tensorised.tensorised_module(int8, "avx2"), int8, y),
         "onnxruntime": baseline_callable(references.onnxruntime_baseline(int8, y, threads), int8, y)}
    return [("fp32 parallel / numpy", fp32, f, "numpy"),
            ("int8 avx2 / onnxruntime MatMulInteger u8u8", int8, i, "onnxruntime")]


def host_line(threads):
    import onnxruntime

    flags = cpu_tensorised.host_flags()
    cpu = next((ln.split(":", 1)[1].strip() for ln in open("/proc/cpuinfo")
                if ln.startswith("model name")), platform.processor()) if Path("/proc/cpuinfo").exists() \
        else platform.processor()
    simd = [f for f in ("avx2", "fma", "avx512f", "avx512_vnni") if f in flags]
    tiling = cpu_schedules.host_tiling()
    return (f"host: {cpu}, {os.cpu_count()} cores, {threads} threads (TVM_NUM_THREADS="
            f"{os.environ['TVM_NUM_THREADS']}, spin {os.environ['TVM_THREAD_POOL_SPIN_COUNT']}), "
            f"SIMD {' '.join(simd)}, fp32 tile {tiling.rows}x{tiling.cols} red {tiling.red}\n"
            f"numpy {np.__version__}, onnxruntime {onnxruntime.__version__}, tvm {tvm.__version__}")


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--size", type=int, default=1024)
    ap.add_argument("--rounds", type=int, default=21)
    ap.add_argument("--threads", type=int, default=None, help="threads per library (default: all)")
    ap.add_argument("--json", default=None)
    a = ap.parse_args()
    print(host_line(THREADS))
    rows = []
    for title, wl, calls, base in rungs(a.size, THREADS):
        t = interleaved(calls, a.rounds)
        (mine,) = [k for k in calls if k != base]
        ratio = t[base] / t[mine]
        rows.append(dict(workload=wl.name, variant=mine, baseline=base, threads=THREADS,
                         time_s=t[mine], baseline_time_s=t[base], ratio=ratio))
        print(f"{title:<44} {mine} {t[mine] * 1e3:7.2f} ms ({wl.ops / t[mine] / 1e9:6.1f} GOPS)  "
              f"{base} {t[base] * 1e3:7.2f} ms ({wl.ops / t[base] / 1e9:6.1f} GOPS)  "
              f"ratio {ratio:.2f}x")
    if a.json:
        Path(a.json).write_text(json.dumps(rows, indent=1))


if __name__ == "__main__":
    main()
