"""Hand-written CUDA schedule of every workload: block / virtual-thread / thread tiling of the
output, shared-memory tiles of both operands per reduction chunk, a register accumulator.

It uses the same `BlockView` roles as the CPU schedules. CUDA source is generated everywhere
(`cuda_source`); running and timing it needs a usable GPU, and `gpu_status` says which piece
is missing when there is none.
"""
import ctypes
import importlib.util
import os
import shutil
from dataclasses import dataclass

import tvm
from tvm import s_tir

from baselines.cpu_schedules import has_block, pick_factor, read_index, scalar

CUDA_ARCH = "sm_80"  # without a device: any arch compiles, the source is what is checked


@dataclass(frozen=True)
class GpuTiling:
    """Per-dimension targets: per-thread elements x threads x virtual threads (x blocks)."""

    inner: int = 4
    threads: int = 8
    vthreads: int = 2
    red: int = 8
    elementwise_threads: int = 256


def cuda_target():
    """CUDA target of the present device (its compute capability, shared memory and threads per
    block, which meta_schedule's GPU rules read); CUDA_ARCH without one."""
    if gpu_status().usable:
        return tvm.target.Target.from_device(tvm.cuda(0))
    return tvm.target.Target({"kind": "cuda", "arch": CUDA_ARCH})


@dataclass(frozen=True)
class GpuStatus:
    """Whether the CUDA builds can run here; `reason` names the missing piece, or the device."""

    usable: bool
    reason: str


GPU_EXTRA_HINT = ("pip install -e '.[gpu]' brings libcudart.so.13 and NVRTC (put "
                  "site-packages/nvidia/cu13/lib on LD_LIBRARY_PATH)")


def gpu_status() -> GpuStatus:
    """Driver, CUDA runtime, device and kernel compiler, checked in that order.

    TVM's wheel loads its CUDA runtime (libtvm_runtime_cuda.so) at import and drops it silently
    when a library it needs is missing; this finds out which one.
    """
    if tvm.get_global_func("device_api.cuda", allow_missing=True) is None:
        for lib, what in (("libcuda.so.1", "no NVIDIA driver"),
                          ("libcudart.so.13", "no CUDA 13 runtime library")):
            try:
                ctypes.CDLL(lib)
            except OSError as err:
                hint = GPU_EXTRA_HINT if lib == "libcudart.so.13" else "install the NVIDIA driver"
                return GpuStatus(False, f"{what}: {lib} cannot be loaded ({err}); {hint}")
        return GpuStatus(False, "TVM's CUDA runtime (libtvm_runtime_cuda.so) did not load")
    if not tvm.cuda(0).exist:
        return GpuStatus(False, "no CUDA device: the driver and runtime load but see no GPU")
    mode = os.environ.get("TVM_CUDA_COMPILE_MODE", "nvrtc").lower()
    if mode == "nvcc" and shutil.which("nvcc") is None:
        return GpuStatus(False, "no kernel compiler: TVM_CUDA_COMPILE_MODE=nvcc but nvcc is not on PATH")
    if mode == "nvrtc" and not _has_module("cuda", "cuda.bindings"):
        return GpuStatus(False, f"no kernel compiler: TVM's default NVRTC needs cuda-bindings; "
                                f"{GPU_EXTRA_HINT}, or set TVM_CUDA_COMPILE_MODE=nvcc")
    if mode not in ("nvrtc", "nvcc"):
        return GpuStatus(False, f"TVM_CUDA_COMPILE_MODE={mode!r}: accepted nvrtc (default) or nvcc")
    dev = tvm.cuda(0)
    return GpuStatus(True, f"{dev.device_name}, compute capability {dev.compute_version}, {mode}")


def _has_module(*names) -> bool:
    """Importable without importing it; parents first (find_spec raises on a missing parent)."""
    return all(importlib.util.find_spec(n) is not None for n in names)


def _split3(sch, loop, t):
    """loop -> (block, vthread, thread, inner) with each factor a divisor of what remains; the
    threads are chosen first, so a short loop (a conv's output width) still spreads over
    threads rather than into one thread's tile."""
    ext = int(sch.get(loop).extent)
    threads = pick_factor(ext, t.threads)
    inner = pick_factor(ext // threads, t.inner)
    vt = pick_factor(ext // inner // threads, t.vthreads)
    return sch.split(loop, [None, vt, threads, inner]), threads


def _cooperative_fetch(sch, block, at, n_ty, n_tx):
    sch.compute_at(block, at)
    loops = sch.get_loops(block)
    depth = next(i for i, l in enumerate(loops) if sch.get(l).same_as(sch.get(at))) + 1
    fused = sch.fuse(*loops[depth:])
    _, ty, tx = sch.split(fused, [None, n_ty, n_tx])
    sch.bind(ty, "threadIdx.y")
    sch.bind(tx, "threadIdx.x")


def _schedule_view(sch, view, t):
    """Thread tiles along the innermost row loop only; the outer row loops (batch, conv's y) go
    to the blocks. A tile of a fused y*x row would straddle image rows where the tile does not
    divide the width, and the write-back of each thread's accumulators would then cover its
    tile's bounding box, whole image rows, writing other threads' outputs from registers it
    never set (conv2d 10x10 with 4-row tiles: 70 % of the outputs wrong on an H200)."""
    blk = sch.get_sblock(view.block)
    loops = sch.get_loops(blk)
    outer = [loops[i] for i in view.outer + view.rows[:-1]]
    row, col, red = loops[view.rows[-1]], loops[view.col], [loops[i] for i in view.reduce]
    sch.reorder(*outer, row, col)
    (by, vy, ty, yi), n_ty = _split3(sch, row, t)
    if outer:
        by = sch.fuse(*outer, by)
    (bx, vx, tx, xi), n_tx = _split3(sch, col, t)
    ko, ki = sch.split(red[0], [None, pick_factor(int(sch.get(red[0]).extent), t.red)])
    sch.reorder(by, bx, vy, vx, ty, tx, ko, *red[1:], ki, yi, xi)
    for loop, tag in ((by, "blockIdx.y"), (bx, "blockIdx.x"), (vy, "vthread.y"),
                      (vx, "vthread.x"), (ty, "threadIdx.y"), (tx, "threadIdx.x")):
        sch.bind(loop, tag)
    sch.reverse_compute_at(sch.cache_write(blk, 0, "local"), tx)
    operands = [view.stream, view.reused] if view.reused else [view.stream]
    for name in [n for n in operands if n]:
        _cooperative_fetch(sch, sch.cache_read(blk, read_index(sch, blk, name), "shared"),
                           ko, n_ty, n_tx)
    sch.decompose_reduction(blk, ko)


def _schedule_elementwise(sch, name, t):
    blk = sch.get_sblock(name)
    fused = sch.fuse(*sch.get_loops(blk))
    bx, tx = sch.split(fused, [None, t.elementwise_threads])
    sch.bind(bx, "blockIdx.x")
    sch.bind(tx, "threadIdx.x")


def schedule(wl, tiling=GpuTiling()):
    """IRModule of `wl` scheduled for CUDA."""
    sch = s_tir.Schedule(scalar(wl))
    for view in wl.views:
        _schedule_view(sch, view, tiling)
    for name in ("pad", "requant"):
        if has_block(sch, name):
            _schedule_elementwise(sch, name, tiling)
    return sch.mod


def build(mod):
    return tvm.compile(mod, target=cuda_target())


def cuda_source(mod):
    """The generated CUDA C of a scheduled module."""
    exe = build(mod)
    return "\n".join(m.inspect_source() for m in exe.mod.imports)
