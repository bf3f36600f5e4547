"""Max-pool on VTA-8, separable: a MAX along each row, then a MAX down the columns.

Per tile (one batch block x one channel block x `rows` output rows), as ALU instructions
written op by op (intrinsics.alu_program):
- LOAD ACC_8BIT of the input rows with their halo, zero padded at the edges by the DMA
  (int8 DRAM sign-extended into int32 ACC entries): X, `rows_in` rows of `wp` entries;
- along the rows, k - 1 MAX(tensor) instructions, in place. Where one position j0 of the window
  is read by no other window (`in_place_column`: stride 2 and k = 3, as ResNet's pool, gives
  the middle column), each window's maximum gathers there, X[r, x s + j0] = max_d X[r, x s + d].
  Otherwise (stride 1; k = 4 at stride 2) pass p takes X[r, c] = max(X[r, c], X[r, c + 1]) over the row in
  increasing c, each iteration reading the entry the next one writes before it writes it, so
  that after k - 1 passes X[r, c] is the maximum of columns c .. c + k - 1 (the window starting
  at c); no entry is copied either way;
- down the columns, into the output region O (rows x ow): a copy of the window's first row,
  then k - 1 MAX(tensor) instructions;
- STORE of the int8 result.

Per output entry that is about 2 (k - 1) s + 3 + 2 (k - 1) ALU cycles (15 for 3x3 stride 2, 11
for 3x3 stride 1), against 2 + 2 k^2 (20) for a fill of -128 and one MAX per tap (docs/ops.md,
"Max-pool").
Tiles alternate between `vthreads` halves of ACC, so one tile's store overlaps the next one's
loads and ALU work.

Padded positions hold 0, not -inf: the result equals the usual max-pool with padding only
when the input is non-negative (e.g. after a ReLU); the graph pads with -128 on the host
where that is not known (graph.ops.host_padding). Batch and channels that are not whole blocks
are padded with zeros here and cropped again.
"""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from intrinsics.alu_program import AluProgram, Level, Param
from vta_sim.errors import CompileError
from vta_sim.config import Config
from vta_sim.isa import MAX_PAD
from vta_sim.packing import pack_nchw, unpack_nchw

from .op_kernel import OpKernel
from .vta_workloads import out_size


@dataclass(frozen=True)
class PoolShape:
    n: int
    c: int
    h: int
    w: int
    k: int
    stride: int
    pad: int

    @property
    def oh(self) -> int:
        return out_size(self.h, self.k, self.pad, self.stride)

    @property
    def ow(self) -> int:
        return out_size(self.w, self.k, self.pad, self.stride)

    @property
    def wp(self) -> int:
        return self.w + 2 * self.pad


# ----------------------------------------------------------------------------- plain <-> packed
def blocked(cfg: Config, n: int, c: int) -> tuple:
    """(batch, channels) rounded up to whole blocks: what the accelerator computes."""
    B, BO = cfg.BATCH, cfg.BLOCK_OUT
    return -(-n // B) * B, -(-c // BO) * BO


def pad_pack_nchw(cfg: Config, x: np.ndarray, shape: tuple, what: str) -> np.ndarray:
    """Plain int8 NCHW -> (N/B, C/BO, H, W, B, BO) with zero batch/channel padding (a copy)."""
    x = np.asarray(x)
    if x.shape != tuple(shape) or x.dtype != np.int8:
        raise CompileError(f"{what}: expected int8{list(shape)} NCHW, got {x.dtype}{list(x.shape)}")
    n, c, h, w = shape
    full = np.zeros((*blocked(cfg, n, c), h, w), np.int8)
    full[:n, :c] = x
    return pack_nchw(full, cfg.BATCH, cfg.BLOCK_OUT)


def crop_unpack_nchw(packed: np.ndarray, n: int, c: int) -> np.ndarray:
    """Packed int8 -> plain NCHW, the batch/channel padding cropped away."""
    return np.ascontiguousarray(unpack_nchw(packed)[:n, :c])


# ----------------------------------------------------------------------------- tiles
def in_place_column(k: int, stride: int) -> int | None:
    """A window column j0 that no other window reads (no other d in [0, k) with d = j0 modulo
    the stride), where the MAX along a row can gather in place; None where there is none
    (stride 1 with k > 1)."""
    for j0 in range(k):
        if all((d - j0) % stride for d in range(k) if d != j0):
            return j0
    return None


def rows_in(s: PoolShape, rows: int) -> int:
    """Input rows (halo included) of a tile of `rows` output rows."""
    return (rows - 1) * s.stride + s.k


def acc_entries(s: PoolShape, rows: int) -> int:
    """ACC entries of one tile: its input rows with halo (where the row maxima are built in
    place), then its output rows."""
    return rows_in(s, rows) * s.wp + rows * s.ow


def check_shape(cfg: Config, s: PoolShape, vthreads: int) -> None:
    if min(s.n, s.c, s.h, s.w) < 1:
        raise CompileError(f"max-pool shape n={s.n} c={s.c} h={s.h} w={s.w}: all must be >= 1")
    if not 0 <= s.pad <= MAX_PAD:
        raise CompileError(f"pad = {s.pad}: the DMA zero-pads 0..{MAX_PAD} rows/columns")
    if s.pad >= s.k:
        raise CompileError(f"pad = {s.pad} with kernel {s.k}: a window would hold only padding; "
                           "use pad < k")
    out_size(min(s.h, s.w), s.k, s.pad, s.stride)      # refuses k/stride/pad leaving no output
    if vthreads not in (1, 2):
        raise CompileError(f"vthreads = {vthreads}: use 1 or 2")
    if s.oh % vthreads:
        raise CompileError(f"{vthreads} virtual threads split the {s.oh} output rows, which is odd; "
                           "use vthreads=1")
    la = cfg.buffers["acc"].depth
    if s.stride * s.wp >= la or s.ow >= la:
        raise CompileError(f"a padded row of {s.wp} entries (stride {s.stride}) exceeds the ALU's "
                           f"{la - 1}-entry factor fields; split the width")


def choose_rows(cfg: Config, s: PoolShape, vthreads: int) -> int:
    """The most output rows per tile (dividing each thread's rows) that fit a thread's ACC."""
    have = cfg.buffers["acc"].depth // vthreads
    per_thread = s.oh // vthreads
    fitting = [r for r in range(1, per_thread + 1) if per_thread % r == 0 and acc_entries(s, r) <= have]
    if not fitting:
        raise CompileError(f"one output row of max-pool {s} needs {acc_entries(s, 1)} ACC entries, "
                           f"{have} available per thread; use a narrower input or vthreads=1")
    return fitting[-1]


def plan(cfg: Config, s: PoolShape, vthreads: int = 1) -> int:
    """Output rows per tile of `s`, or a CompileError saying why the shape does not fit: what
    max_pool_kernel compiles, and what the graph's partitioner asks before offloading."""
    check_shape(cfg, s, vthreads)
    return choose_rows(cfg, s, vthreads)


# ----------------------------------------------------------------------------- program
def program(cfg: Config, s: PoolShape, rows: int, vthreads: int = 1) -> AluProgram:
    """The kernel's calls over the packed, block-padded layout: data (N/B C/BO H W entries) ->
    out (N/B C/BO OH OW entries)."""
    B, BO = cfg.BATCH, cfg.BLOCK_OUT
    nb, cb = (x // b for x, b in zip(blocked(cfg, s.n, s.c), (B, BO)))
    prog = AluProgram(cfg, [Param("data", (nb * cb * s.h * s.w, B, BO), "int8", "acc8"),
                            Param("out", (nb * cb * s.oh * s.ow, B, BO), "int8", "out")])
    j0 = in_place_column(s.k, s.stride)
    n_in, region = rows_in(s, rows), cfg.buffers["acc"].depth // vthreads
    tile = 0
    for plane in range(nb * cb):
        for y0 in range(0, s.oh, rows):
            x_base = (tile % vthreads) * region
            o_base = x_base + n_in * s.wp            # the output rows after the input rows
            tile += 1
            top = y0 * s.stride - s.pad                   # the tile's first input row, unpadded
            first, last = max(0, top), min(s.h, top + n_in)
            if s.pad:
                prog.load_rows("data", (plane * s.h + first) * s.w, s.w, last - first, s.w, x_base,
                               (first - top, top + n_in - last, s.pad, s.pad))
            else:                          # unpadded rows are contiguous: one row, fewer bursts
                prog.load("data", (plane * s.h + first) * s.w, n_in * s.w, x_base)
            if j0 is not None:             # each window's maximum in place at its column j0
                for d in range(s.k):
                    if d != j0:
                        prog.alu("max", x_base + j0, x_base + d, outer=Level(n_in, s.wp, s.wp),
                                 inner=Level(s.ow, s.stride, s.stride))
            else:                          # sliding maxima in place: after pass p, column x holds
                for p in range(1, s.k):    # the maximum of columns x .. x + p
                    prog.alu("max", x_base, x_base + 1, outer=Level(n_in, s.wp, s.wp),
                             inner=Level(s.wp - p, 1, 1))
            along = x_base + (j0 or 0)     # window x's maximum: column x * stride + (j0 or 0)
            _copy_max(prog, o_base, [along + dy * s.wp for dy in range(s.k)],
                      Level(rows, s.ow, s.stride * s.wp), Level(s.ow, 1, s.stride), rows * s.ow)
            prog.store("out", (plane * s.oh + y0) * s.ow, rows * s.ow, o_base)
    return prog


def _copy_max(prog: AluProgram, dst: int, sources: list, outer: Level, inner: Level, entries: int) -> None:
    """dst = the first source (AluProgram.copy), then MAX with each other source, over the loop
    nest (`entries` consecutive entries from dst)."""
    first, *rest = sources
    prog.copy(dst, first, entries, outer=outer, inner=inner)
    for src in rest:
        prog.alu("max", dst, src, outer=outer, inner=inner)


def max_pool_kernel(cfg: Config, n: int, c: int, h: int, w: int, k: int, stride: int, pad: int = 0,
                    vthreads: int = 1) -> OpKernel:
    """Compiled max-pool on plain int8 NCHW (n, c, h, w) -> int8 NCHW (n, c, oh, ow).

    Padded positions count as 0 (see the module docstring)."""
    s = PoolShape(n, c, h, w, k, stride, pad)
    rows = plan(cfg, s, vthreads)
    kernel = program(cfg, s, rows, vthreads).compile()
    packed_out = (*(x // b for x, b in zip(blocked(cfg, n, c), (cfg.BATCH, cfg.BLOCK_OUT))), s.oh, s.ow,
                  cfg.BATCH, cfg.BLOCK_OUT)

    def pack(x: np.ndarray) -> tuple:
        packed = pad_pack_nchw(cfg, x, (n, c, h, w), "max-pool input")
        return (packed.reshape(-1, cfg.BATCH, cfg.BLOCK_OUT),)

    return OpKernel("max_pool", kernel, pack=pack,
                    unpack=lambda out: crop_unpack_nchw(out.reshape(packed_out), n, c),
                    tiles={"rows": rows, "vthreads": vthreads})


# ----------------------------------------------------------------------------- reference
def max_pool_ref(x: np.ndarray, k: int, stride: int, pad: int = 0) -> np.ndarray:
    """int8 NCHW max-pool in int64 with zero padding (the accelerator's semantics)."""
    n, c, h, w = x.shape
    oh, ow = (h + 2 * pad - k) // stride + 1, (w + 2 * pad - k) // stride + 1
    padded = np.zeros((n, c, h + 2 * pad, w + 2 * pad), np.int64)
    padded[:, :, pad:pad + h, pad:pad + w] = x
    out = np.full((n, c, oh, ow), np.iinfo(np.int64).min)
    for dy in range(k):
        for dx in range(k):
            out = np.maximum(out, padded[:, :, dy:dy + stride * (oh - 1) + 1:stride,
                                         dx:dx + stride * (ow - 1) + 1:stride])
    return out.astype(np.int8)
