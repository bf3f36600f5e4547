"""Acceptance ratios of issue 5, measured interleaved so both sides see the same machine load.

  fp32 GEMM 1024^3: best hand-optimised CPU schedule / numpy          (target >= 50 %)
  int8 GEMM 1024^3: tensorised CPU schedule / onnxruntime MatMulInteger (target >= 25 %)

The TVM kernel and its baseline alternate call by call for `--rounds` rounds; each side's time
is the median, and the ratio is of throughputs. On a 2-core machine shared with other jobs a
sequential measurement (the `vta-sim compare` table) can disagree by 2x between two rows; the
interleaving cancels most of that. `--threads N` pins TVM, onnxruntime and OpenBLAS (numpy)
to N threads each (set before they load); `--threads 1` compares single-core kernels, which a
machine busy with other jobs disturbs least. Usage:

    .venv/bin/python bench/bench_compare.py [--size 1024] [--rounds 15] [--threads N] [--json FILE]
"""
import argparse
import json
import os
import statistics
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
os.environ.setdefault("TVM_THREAD_POOL_SPIN_COUNT", "0")
if "--threads" in sys.argv:  # the thread pools read these once, when numpy / TVM load
    _n = sys.argv[sys.argv.index("--threads") + 1]
    os.environ.update(TVM_NUM_THREADS=_n, OPENBLAS_NUM_THREADS=_n, OMP_NUM_THREADS=_n)
else:  # unset, TVM's pool would take half the hardware threads (it assumes hyper-threading)
    os.environ.setdefault("TVM_NUM_THREADS", str(os.cpu_count()))

from baselines import compare, cpu_schedules, cpu_tensorised, references, workloads  # noqa: E402


def tvm_callable(mod, wl, inputs):
    """Build for the host, verify against the exact reference, return a zero-argument call."""
    call = compare.verified_host_call(mod, wl, inputs)
    if call is None:
        raise SystemExit(f"{wl.name}: TVM build does not match the reference")
    return call


def interleaved(fa, fb, rounds, pause=0.3):
    """Alternate the two calls; the pause lets each library's worker threads (OpenBLAS,
    onnxruntime and TVM all spin-wait a while after a call) go idle before the other runs."""
    ta, tb = [], []
    for _ in range(rounds):
        for f, acc in ((fa, ta), (fb, tb)):
            time.sleep(pause)
            t0 = time.perf_counter()
            f()
            acc.append(time.perf_counter() - t0)
    return statistics.median(ta), statistics.median(tb)


def measure(wl, candidates, baseline, rounds, threads):
    inputs = wl.random_inputs()
    base = baseline(wl, inputs)
    if not compare.matches(base.result(base.run()), wl.reference(inputs), wl.dtype):
        raise SystemExit(f"{wl.name}: {base.variant} does not match the reference")
    rows = []
    for name, mod in candidates:
        t_tvm, t_base = interleaved(tvm_callable(mod, wl, inputs), base.run, rounds)
        rows.append(dict(workload=wl.name, variant=name, baseline=base.variant, threads=threads,
                         tvm_gops=wl.ops / t_tvm / 1e9, baseline_gops=wl.ops / t_base / 1e9,
                         ratio=t_base / t_tvm))
    return rows


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--size", type=int, default=1024)
    ap.add_argument("--rounds", type=int, default=15)
    ap.add_argument("--threads", type=int, default=None, help="threads per library (default: all)")
    ap.add_argument("--json", default=None)
    a = ap.parse_args()
    n = a.size
    fp32 = workloads.gemm(n, n, n, "fp32")
    int8 = workloads.gemm(n, n, n, "int8")
    threads = a.threads or os.cpu_count()
    rows = measure(fp32, [(s, cpu_schedules.step_module(fp32, s)) for s in ("unrolled", "parallel")],
                   lambda wl, x: references.numpy_fp32(wl, x), a.rounds, threads)
    rows += measure(int8, [("parallel", cpu_schedules.step_module(int8, "parallel")),
                           ("avx2", cpu_tensorised.tensorised_module(int8))],
                    lambda wl, x: references.onnxruntime_baseline(wl, x, threads), a.rounds, threads)
    for r in rows:
        print(f"{r['workload']:<26} {r['threads']}T {r['variant']:<9} {r['tvm_gops']:7.1f} GOPS   "
              f"{r['baseline']:<11} {r['baseline_gops']:7.1f} GOPS   ratio {100 * r['ratio']:5.1f} %")
    if a.json:
        Path(a.json).write_text(json.dumps(rows, indent=1))


if __name__ == "__main__":
    main()
