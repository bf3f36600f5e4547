"""Tensorised CPU builds of the int8 workloads: the dot products mapped onto x86 SIMD dot
instructions, in the optimised build's loop structure (packed weights, local accumulator
tile) with a register tile per ISA (ISAS), cache-blocked: each block of 64 rows (run in
parallel) sweeps every column tile, so one column tile's packed weights (one contiguous panel,
`_panel_map`) stay in cache across the block's row tiles.

- `avx2`: the int8 x int8 -> int32 dot product is exact with VPMADDWD (int16 pairs -> int32),
  8 output columns x 2 reduction elements per instruction. It runs on the workload's int16 form
  (`Workload.te_graph(form="i16")`): both operands are sign-extended once, ahead of the GEMM (the
  weights inside their packing copy), so the inner loop is VPMADDWD and VPADDD on loaded
  operands, with one VPBROADCASTD per row and reduction pair. (Widening in the inner loop
  instead, a VPMOVSXBW per weight vector and three instructions per broadcast, ran 1.3x slower.)
- `vnni`: AVX-512 VNNI's VPDPBUSD (as TVM's `dot_16x4_vnni`) multiplies *unsigned* by signed
  bytes, 16 columns x 4 reduction elements. It runs on the workload's uint8-shifted form
  (`form="u8"`: operand + 128, then 128 * sum(weights) subtracted), which is exact. Where the host has no avx512_vnni it is built (for -mcpu=cascadelake) but not run, and
- `vnni_layout` runs the very same schedule with a plain-loop body in place of VPDPBUSD, so the
  shift, the correction and the 16x4 packing are verified on any host.

(The intrinsics are registered here rather than imported from tvm.s_tir.tensor_intrin, whose
import parses ~500 TVMScript functions: tens of seconds on this machine.)
"""
from typing import NamedTuple

import tvm
from tvm import s_tir
from tvm.s_tir import TensorIntrin
from tvm.script import tirx as T

from baselines import cpu_schedules
from baselines.cpu_schedules import (Tiling, apply_steps, has_block, parallel_copies, pick_factor,
                                     read_index)

AVX2_LANES, AVX2_GROUP = 8, 2
AVX2_INTRIN = "vta_compare_dot_8x2_i16i16i32_avx2"


def _dot_desc(lanes: int, group: int, a_dtype: str, b_dtype: str):
    """The description both ISAs tensorise: C[i] += A[k] * B[i, k] for `lanes` x `group`."""
    @T.prim_func(s_tir=True)
    def desc(
        A: T.Buffer((group,), a_dtype, offset_factor=1),
        B: T.Buffer((lanes, group), b_dtype, offset_factor=1),
        C: T.Buffer((lanes,), "int32", offset_factor=1, scope="local"),
    ) -> None:
        with T.sblock("root"):
            T.reads(C[0:lanes], A[0:group], B[0:lanes, 0:group])
            T.writes(C[0:lanes])
            for i in T.serial(0, lanes):
                for k in T.serial(0, group):
                    with T.sblock("update"):
                        vi, vk = T.axis.remap("SR", [i, k])
                        C[vi] = C[vi] + T.Cast("int32", A[vk]) * T.Cast("int32", B[vi, vk])
    return desc


@T.prim_func(s_tir=True)
def _dot_8x2_avx2(
    A: T.Buffer((2,), "int16", offset_factor=1),
    B: T.Buffer((8, 2), "int16", offset_factor=1),
    C: T.Buffer((8,), "int32", offset_factor=1, scope="local"),
) -> None:
    with T.sblock("root"):
        T.reads(C[0:8], A[0:2], B[0:8, 0:2])
        T.writes(C[0:8])
        # the row's int16 pair as one int32, broadcast: a single VPBROADCASTD from memory
        a_pair = T.reinterpret(A.vload([0], "int16x2"), dtype="int32")
        a16 = T.reinterpret(T.broadcast(a_pair, 8), dtype="int16x16")
        C[T.ramp(T.int32(0), 1, 8)] += T.call_llvm_pure_intrin(
            T.llvm_lookup_intrinsic_id("llvm.x86.avx2.pmadd.wd"), a16,
            B.vload([0, 0], dtype="int16x16"), dtype="int32x8")


TensorIntrin.register(AVX2_INTRIN, _dot_desc(AVX2_LANES, AVX2_GROUP, "int16", "int16"), _dot_8x2_avx2,
                      override=True)

VNNI_LANES, VNNI_GROUP = 16, 4
VNNI_INTRIN = "vta_compare_dot_16x4_u8i8i32_vnni"
VNNI_LAYOUT_INTRIN = "vta_compare_dot_16x4_u8i8i32_loops"
VNNI_TARGET_CPU = "cascadelake"  # an LLVM CPU with avx512_vnni, for the build-only check


@T.prim_func(s_tir=True)
def _dot_16x4_vnni(
    A: T.Buffer((4,), "uint8", offset_factor=1),
    B: T.Buffer((16, 4), "int8", offset_factor=1),
    C: T.Buffer((16,), "int32", offset_factor=1, scope="local"),
) -> None:
    with T.sblock("root"):
        T.reads(C[0:16], A[0:4], B[0:16, 0:4])
        T.writes(C[0:16])
        # LLVM >= 18 declares the byte operands <64 x i8> (TVM 0.27's own dot_16x4_vnni still
        # passes <16 x i32> and fails LLVM verification)
        a_i32 = T.reinterpret(A.vload([0], "uint8x4"), dtype="int32")
        a_x64 = T.reinterpret(T.broadcast(a_i32, 16), dtype="int8x64")
        C[T.ramp(T.int32(0), 1, 16)] = T.call_llvm_pure_intrin(
            T.llvm_lookup_intrinsic_id("llvm.x86.avx512.vpdpbusd.512"),
            C.vload([0], dtype="int32x16"), a_x64, B.vload([0, 0], dtype="int8x64"),
            dtype="int32x16")


_DOT_16X4_DESC = _dot_desc(VNNI_LANES, VNNI_GROUP, "uint8", "int8")
TensorIntrin.register(VNNI_INTRIN, _DOT_16X4_DESC, _dot_16x4_vnni, override=True)
TensorIntrin.register(VNNI_LAYOUT_INTRIN, _DOT_16X4_DESC, _DOT_16X4_DESC, override=True)
# the default tilings. AVX2: 1 row x 64 columns (8 ymm accumulators, one broadcast per 8
# VPMADDWD), 128-element reduction blocks (a 16 KiB panel in L1), measured best of the
# power-of-two tiles at GEMM 1024^3 (docs/history.md); VNNI's 2 x 32 is unmeasured (no host).
AVX2_TILING = Tiling(rows=1, cols=64, red=8, row_block=64, red_block=128)
VNNI_TILING = Tiling(rows=2, cols=32, red=4, row_block=64)
class Isa(NamedTuple):
    form: str          # the workload's operand form (workloads.FORMS)
    lanes: int         # output columns per intrinsic call
    group: int         # reduction elements per intrinsic call
    intrin: str
    tiling: Tiling     # the default tiling


ISAS = {
    "avx2": Isa("i16", AVX2_LANES, AVX2_GROUP, AVX2_INTRIN, AVX2_TILING),
    "vnni": Isa("u8", VNNI_LANES, VNNI_GROUP, VNNI_INTRIN, VNNI_TILING),
    "vnni_layout": Isa("u8", VNNI_LANES, VNNI_GROUP, VNNI_LAYOUT_INTRIN, VNNI_TILING),
}


def _tiling_note(t: Tiling) -> str:
    """The tiling as the compare rows' notes name it."""
    blocks = f", {t.red_block}-element reduction blocks" if t.red_block else ""
    return f"{t.rows}x{t.cols} register tile{blocks}"


def host_flags():
    """CPU feature flags of this Linux host (empty elsewhere)."""
    try:
        with open("/proc/cpuinfo") as f:
            return set(next(l for l in f if l.startswith("flags")).split(":")[1].split())
    except (OSError, StopIteration):
        return set()


def _tail_map(ndim, moves):
    """Index map that splits dims {dim: factor} as d // f in place and d % f appended, in order."""
    from tvm.tirx import IndexMap

    def fn(*ax):
        head = [ax[d] // moves[d] if d in moves else ax[d] for d in range(ndim)]
        return (*head, *(ax[d] % f for d, f in moves.items()))
    return IndexMap.from_func(fn, ndim=ndim, index_dtype="int32")


def _panel_map(ndim, col_dim, red_dim, panel, lanes, group):
    """Index map of the packed reused operand: [col // panel, red // group, rest...,
    col % panel // lanes, col % lanes, red % group]. Each column tile's panel (`panel` columns
    by the whole reduction) is one contiguous block, in the order the tile reads it, and its
    innermost (lanes x group) is the intrinsic's B tile. (A layout with the reduction outermost
    puts one tile's consecutive reduction groups a whole row of columns apart: at 1024
    columns every one of them falls in the same two L1 sets.)"""
    from tvm.tirx import IndexMap

    def fn(*ax):
        rest = [ax[d] for d in range(ndim) if d not in (col_dim, red_dim)]
        c, r = ax[col_dim], ax[red_dim]
        return (c // panel, r // group, *rest, c % panel // lanes, c % lanes, r % group)
    return IndexMap.from_func(fn, ndim=ndim, index_dtype="int32")


def _in_form(sch, name, form):
    """The buffer a block reads for operand `name` in `form`: its stage `<name>_<form>` where
    the workload has one (GEMM's A_u8, A_i16, the weights' W_i16), else the operand itself."""
    staged = f"{name}_{form}"
    return staged if has_block(sch, staged) else name


def _pack_reused(sch, blk, view, form, panel, lanes, group):
    """Pack the reused operand (in `form`, its widening stage folded into the copy) into
    `_panel_map`'s layout; returns the packing block."""
    reused = _in_form(sch, view.reused, form)
    idx = read_index(sch, blk, reused)
    pack = sch.cache_read(blk, idx, "global")
    if reused != view.reused:
        sch.compute_inline(sch.get_sblock(reused))
    # the copy walks the packed layout's order (panel, reduction group, rest, column, group
    # element), so it writes each panel front to back in one pass
    loops = sch.get_loops(pack)
    p_out, p_in = sch.split(loops[view.reused_col_dim], [None, panel])
    g_out, g_in = sch.split(loops[view.reused_red_dim], [None, group])
    rest = [lp for i, lp in enumerate(loops) if i not in (view.reused_col_dim, view.reused_red_dim)]
    sch.reorder(p_out, g_out, *rest, p_in, g_in)
    ndim = len(sch.get(blk).reads[idx].source.shape)
    sch.transform_layout(blk, ("read", idx), _panel_map(ndim, view.reused_col_dim, view.reused_red_dim,
                                                        panel, lanes, group))
    return pack


def _block_steps(sch, red, steps, per_step, red_block):
    """Steps of the first reduction loop (each `per_step` elements, times the other reduction
    loops' extents) in one reduction block of about `red_block` elements; all `steps` when
    `red_block` is None."""
    if not red_block:
        return steps
    inner = per_step
    for r in red[1:]:
        inner *= int(sch.get(r).extent)
    return pick_factor(steps, max(1, red_block // inner))


def tensorise_view(sch, view, tiling, lanes, group, intrin, form):
    """Tile one block like the optimised build and map (lanes columns x group reduction
    elements) onto `intrin`; the workload's graph is in operand form `form`."""
    blk = sch.get_sblock(view.block)
    stream = _in_form(sch, view.stream, form)
    # The streamed operand's reduction groups must be adjacent: move its channel dim innermost.
    ndim_s = len(sch.get(blk).reads[read_index(sch, blk, stream)].source.shape)
    if view.stream_red_dim != ndim_s - 1:
        sch.transform_layout(sch.get_sblock(stream), ("write", 0),
                             _tail_map(ndim_s, {view.stream_red_dim: group}))
    loops = sch.get_loops(blk)
    # register tile: bm rows x (cu x lanes) columns, cu intrinsic calls sharing each row's
    # broadcast operand (tiling.cols columns in all, as in the optimised build)
    cu = pick_factor(int(sch.get(loops[view.col]).extent) // lanes, max(1, tiling.cols // lanes))
    pack = _pack_reused(sch, blk, view, form, cu * lanes, lanes, group)
    loops = sch.get_loops(blk)
    outer, rows = [loops[i] for i in view.outer], [loops[i] for i in view.rows]
    col, red = loops[view.col], [loops[i] for i in view.reduce]
    bm = pick_factor(int(sch.get(rows[-1]).extent), tiling.rows)
    # Rows are not fused here (blockize cannot see through the fused div/mod bindings).
    outer = outer + rows[:-1]
    # cache blocking: a block of `row_block` rows (its streamed rows stay in L2) sweeps every
    # column tile, so one column tile's packed weights (K x cols) stay in L1/L2 across the
    # block's row tiles instead of the whole packed operand streaming once per row tile
    nb = pick_factor(int(sch.get(rows[-1]).extent) // bm, max(1, tiling.row_block // bm))
    mo, ro, ri = sch.split(rows[-1], [None, nb, bm])
    co, cj, ci = sch.split(col, [None, cu, lanes])
    red_extent = int(sch.get(red[0]).extent)
    ku = pick_factor(red_extent // group, max(1, tiling.red // group))
    steps = red_extent // (ku * group)
    kb = _block_steps(sch, red, steps, ku * group, tiling.red_block)
    if kb < steps:
        # reduction blocks: the row block's accumulator tile (row_block x cols, in L1) stays
        # across them, each row tile's part of it in registers over one block
        kbo, ko, kj, ki = sch.split(red[0], [None, kb, ku, group])
        sch.reorder(*outer, mo, co, kbo, ro, ko, *red[1:], kj, ri, cj, ci, ki)
        acc_at, init_at = co, kbo
    else:
        ko, kj, ki = sch.split(red[0], [None, ku, group])
        sch.reorder(*outer, mo, co, ro, ko, *red[1:], kj, ri, cj, ci, ki)
        acc_at, init_at = ro, ko
    if stream != view.stream:
        # the converted copy of the streamed operand (GEMM's A_i16 / A_u8) made per row block,
        # by the thread that reads it, while it is in that core's L2
        sch.compute_at(sch.get_sblock(stream), mo)
    # a local accumulator (the intrinsics' C is local): LLVM keeps it in registers
    cache = sch.cache_write(blk, 0, "local")
    sch.reverse_compute_at(cache, acc_at)
    ndim_o = len(sch.get(blk).writes[0].source.shape)
    if view.col != ndim_o - 1 and len(view.outer) + len(view.rows) + 1 == ndim_o:
        # local accumulator with the `lanes` columns innermost, as the intrinsic's C
        sch.transform_layout(blk, ("write", 0), _tail_map(ndim_o, {view.col: lanes}))
    sch.unroll(kj)
    sch.unroll(ri)
    sch.unroll(cj)
    # Column tiles stay out of the parallel fuse: blockize needs plain `co * lanes + ci` bindings.
    sch.parallel(sch.fuse(*outer, mo))
    sch.decompose_reduction(blk, init_at)
    sch.tensorize(ci, intrin)
    return pack


def tensorised_module(wl, isa="avx2", tiling=None):
    """IRModule of `wl` with every dot-product block tensorised for `isa` (see ISAS; tiling: the
    ISA's default); the other blocks (depthwise) get the optimised build."""
    if wl.dtype != "int8":
        raise ValueError(f"tensorisation applies to int8 workloads, not {wl.dtype}")
    if isa not in ISAS:
        raise ValueError(f"unknown tensorisation {isa!r}; accepted: {', '.join(ISAS)}")
    form, lanes, group, intrin, default_tiling = ISAS[isa]
    tiling = tiling or default_tiling
    sch = s_tir.Schedule(tvm.IRModule({"main": wl.prim_func(form)}))
    dots = [v for v in wl.views if v.reused is not None]
    for v in dots:
        loops = sch.get_loops(sch.get_sblock(v.block))
        cols, red = (int(sch.get(loops[i]).extent) for i in (v.col, v.reduce[0]))
        if cols % lanes or red % group:
            raise ValueError(f"{isa} tensorisation of {wl.name} needs its output columns ({cols}) "
                             f"divisible by {lanes} and its reduction ({red}) by {group}")
    others = [v for v in wl.views if v.reused is None]
    if others:
        apply_steps(sch, wl, "parallel", tiling, views=others)
    packs = [tensorise_view(sch, v, tiling, lanes, group, intrin, form) for v in dots]
    # the u8 form's extra stages: weight sums, correction
    packs += [sch.get_sblock(n) for n in ("comp", "out") if has_block(sch, n)]
    parallel_copies(sch, packs)
    return sch.mod


def vnni_target():
    return tvm.target.Target({"kind": "llvm", "mcpu": VNNI_TARGET_CPU})


def variants(wl, threads=None):
    """(variant, mod, target, skipped, note) rows for compare: avx2, vnni, vnni_layout."""
    target = cpu_schedules.cpu_target(threads)
    if wl.dtype != "int8":
        for isa in ISAS:
            yield isa, None, target, "tensorisation applies to the int8 workloads only", ""
        return
    flags = host_flags()
    notes = {"avx2": "VPMADDWD 8x2 dot on int16-widened operands (exact), " + _tiling_note(AVX2_TILING),
             "vnni": "VPDPBUSD 16x4 u8 x s8 dot on the +128-shifted operand, " + _tiling_note(VNNI_TILING),
             "vnni_layout": "the vnni schedule with a plain-loop dot in place of VPDPBUSD"}
    for isa in ISAS:
        try:
            mod = tensorised_module(wl, isa)
        except ValueError as err:
            yield isa, None, target, str(err), ""
            continue
        skipped = None
        if isa == "avx2" and "avx2" not in flags:
            skipped = "host CPU has no AVX2"
        if isa == "vnni" and "avx512_vnni" not in flags:
            asm = tvm.compile(mod, target=vnni_target()).mod.inspect_source("s")
            found = "VPDPBUSD in the code" if "vpdpbusd" in asm else "yet no VPDPBUSD in the code"
            skipped = (f"host CPU has no avx512_vnni: built for -mcpu={VNNI_TARGET_CPU} only "
                       f"({found}); vnni_layout verifies the same schedule here")
        yield isa, mod, target, skipped, notes[isa]
