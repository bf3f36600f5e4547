"""CPU builds of a workload, one named optimisation step at a time.

`scalar` is the unscheduled PrimFunc. The optimised builds are cumulative: `step_module(wl,
"packed")` applies every step up to and including packing, so the table shows what each step
adds on top of the previous one (the order of TVM's "How to optimize GEMM on CPU"). Every
step works on the GEMM roles a workload's `BlockView` gives its loops, so one schedule serves
GEMM, conv2d, conv1d and both halves of the depthwise-separable conv.
"""
import os
from dataclasses import dataclass

import tvm
from tvm import s_tir
from tvm.tirx import IndexMap

# Step name -> what it does; the order is the order they are applied.
STEPS = {
    "tiled": "split rows (M) and columns (N) into register-sized tiles (from the host's vector "
             "width: 4x16 on AVX2, 8x32 on AVX-512) and the long reduction "
             "into chunks; blocking order: column tile, row tile, reduction, tile (a column "
             "panel of the re-read operand stays in cache across the row tiles)",
    "vectorized": "vectorise the innermost column loop (one SIMD register per column chunk)",
    "reordered": "move the row loop outside the inner reduction chunk, so one row's "
                 "accumulators stay live while the chunk is swept",
    "packed": "copy the re-read operand (GEMM B, conv weights) into [N/bn, ..., bn] so the "
              "vector loads are contiguous",
    "write_cache": "accumulate each tile in a local buffer (registers) and write it back once",
    "unrolled": "unroll the inner reduction chunk and the tile rows",
    "parallel": "run the column tiles on all cores, each core sweeping whole column panels (the "
                "row tiles too where there are few panels), and the pad / pack copies",
}


@dataclass(frozen=True)
class Tiling:
    """Target tile sizes (each is replaced by a divisor of the actual loop extent)."""

    rows: int = 4
    cols: int = 16
    red: int = 8
    row_block: int = 64  # rows per cache block (tensorised builds: a row block sweeps all columns)
    # reduction elements per cache block (tensorised builds; None: the whole reduction at once):
    # one column tile's panel of that many elements stays in L1 across the row block
    red_block: int | None = None

    @classmethod
    def for_vector(cls, lanes, registers):
        """The register tile of a SIMD unit with `lanes` fp32 lanes and `registers` vector
        registers: 2 vectors of columns, and as many rows as keep half the registers as
        accumulators (2 x rows; the rest hold the loaded columns and the broadcast), enough
        independent FMA chains to cover the FMA latency x ports. AVX2 (8 lanes, 16 ymm): 4x16;
        AVX-512 (16 lanes, 32 zmm): 8x32; SSE / no flags (4 lanes, 16 xmm): 4x8."""
        return cls(rows=max(1, registers // 4), cols=2 * lanes)


def vector_shape(flags):
    """(fp32 lanes, vector registers) of the widest SIMD unit in the CPU feature `flags`."""
    if "avx512f" in flags:
        return 16, 32
    if "avx2" in flags or "avx" in flags:
        return 8, 16
    return 4, 16


def host_tiling(flags=None):
    """Tiling.for_vector of this host (flags: a CPU flag set, default /proc/cpuinfo's)."""
    if flags is None:
        from baselines.cpu_tensorised import host_flags

        flags = host_flags()
    return Tiling.for_vector(*vector_shape(flags))


def cpu_target(cores=None):
    """The host CPU as an LLVM target (its own -mcpu, so AVX2 / AVX-512 are used if present)."""
    return tvm.target.Target({"kind": "llvm", "mcpu": tvm.target.codegen.llvm_get_system_cpu(),
                              "num-cores": cores or os.cpu_count()})


def pick_factor(extent, target):
    """Largest divisor of extent <= target; if that is under target/2, the smallest one <= 2*target."""
    best = max(d for d in range(1, min(extent, target) + 1) if extent % d == 0)
    if best * 2 < target:
        bigger = [d for d in range(target, min(extent, 2 * target) + 1) if extent % d == 0]
        best = bigger[0] if bigger else best
    return best


def scalar(wl):
    """The unscheduled PrimFunc as an IRModule."""
    return tvm.IRModule({"main": wl.prim_func()})


def read_index(sch, block, buffer_name):
    """Position of `buffer_name` in the block's reads (cache_read / transform_layout need it)."""
    names = [r.source.name for r in sch.get(block).reads]
    return names.index(buffer_name)


def pack_map(ndim, col_dim, bn):
    """Index map that moves `col_dim` out as [.., d // bn] first and [d % bn] innermost."""
    def fn(*ax):
        rest = [a for i, a in enumerate(ax) if i != col_dim]
        return (ax[col_dim] // bn, *rest, ax[col_dim] % bn)
    return IndexMap.from_func(fn, ndim=ndim, index_dtype="int32")


def _extent(sch, loop):
    return int(sch.get(loop).extent)


def tile(sch, view, tiling):
    """Split a block's loops by its roles; returns the named loops (blocking order applied).

    Only the innermost row loop is split (conv: x); the other row loops stay whole, so every
    index stays affine (a fused y*x row would put div/mod in the inner loop's addresses).
    """
    blk = sch.get_sblock(view.block)
    loops = sch.get_loops(blk)
    outer = [loops[i] for i in view.outer + view.rows[:-1]]
    row, col = loops[view.rows[-1]], loops[view.col]
    red = [loops[i] for i in view.reduce]
    bm = pick_factor(_extent(sch, row), tiling.rows)
    bn = pick_factor(_extent(sch, col), tiling.cols)
    kf = pick_factor(_extent(sch, red[0]), tiling.red)
    ro, ri = sch.split(row, [None, bm])
    co, ci = sch.split(col, [None, bn])
    ko, ki = sch.split(red[0], [None, kf])
    sch.reorder(co, *outer, ro, ko, *red[1:], ki, ri, ci)
    return dict(blk=blk, outer=outer, ro=ro, ri=ri, co=co, ci=ci, ko=ko, ki=ki, rest=red[1:], bn=bn)


def apply_steps(sch, wl, upto, tiling=None, views=None):
    """Apply STEPS in order up to and including `upto` to `views` (default: every block of `wl`);
    tiling defaults to the host's vector width (host_tiling)."""
    tiling = tiling or host_tiling()
    if upto not in STEPS:
        raise ValueError(f"unknown CPU step {upto!r}; accepted: {', '.join(STEPS)}")
    level = list(STEPS).index(upto)
    on = lambda step: list(STEPS).index(step) <= level  # noqa: E731
    aux_blocks = []
    for view in wl.views if views is None else views:
        t = tile(sch, view, tiling)
        blk = t["blk"]
        if on("vectorized"):
            sch.vectorize(t["ci"])
        if on("reordered"):
            sch.reorder(t["ko"], *t["rest"], t["ri"], t["ki"], t["ci"])
        if on("packed") and view.reused:
            idx = read_index(sch, blk, view.reused)
            aux_blocks.append(sch.cache_read(blk, idx, "global"))
            ndim = len(sch.get(blk).reads[idx].source.shape)
            sch.transform_layout(blk, ("read", idx), pack_map(ndim, view.reused_col_dim, t["bn"]))
        if on("write_cache"):
            sch.reverse_compute_at(sch.cache_write(blk, 0, "local"), t["ro"])
        if on("unrolled"):
            sch.unroll(t["ki"])
            sch.unroll(t["ri"])
        if on("parallel"):
            sch.parallel(sch.fuse(*parallel_loops(sch, t)))
        sch.decompose_reduction(blk, t["ko"])
    if on("parallel"):
        parallel_copies(sch, aux_blocks, stages=views is None)  # a caller with views does its own
    return sch


def parallel_loops(sch, t, cores=None):
    """The loops the `parallel` step spreads over the cores: the column tiles (and a conv's
    outer row loops), so each core sweeps whole column panels of the packed operand while the
    other streams its own; the row tiles join only when those give under 4 tasks a core.
    Fusing the row tiles in always (each core taking every other row tile of one panel, both
    streaming all of A) ran 5-10 % slower on fp32 GEMM 1024^3 (2 cores)."""
    loops = [t["co"], *t["outer"]]
    tasks = 1
    for loop in loops:
        tasks *= _extent(sch, loop)
    if tasks < 4 * (cores or os.cpu_count() or 1):
        loops.append(t["ro"])
    return loops


def parallel_copies(sch, blocks, stages=True):
    """Parallelise the pack copies and (stages) the pad / requantise stages (outermost loop)."""
    names = ("pad", "requant") if stages else ()
    blocks = list(blocks) + [sch.get_sblock(n) for n in names if has_block(sch, n)]
    for b in blocks:
        sch.parallel(sch.get_loops(b)[0])


def has_block(sch, name):
    try:
        sch.get_sblock(name)
    except Exception:  # noqa: BLE001  (s_tir raises a generic error for a missing block)
        return False
    return True


def step_module(wl, upto, tiling=None):
    """IRModule of `wl` with STEPS applied up to `upto` (tiling: default host_tiling())."""
    sch = s_tir.Schedule(scalar(wl))
    return apply_steps(sch, wl, upto, tiling).mod
