"""Max-pool on VTA-8 as the VTA paper micro-codes it: the window walk is one ALU instruction.

Per tile (one batch block x one channel block x `rows` output rows):
- LOAD ACC_8BIT of the input rows with their halo, zero padded at the edges by the DMA
  (int8 DRAM sign-extended into int32 ACC entries);
- fill the output entries with -128 (reset, then ADD imm: -128 is the identity of max over int8);
- one ALU MAX(tensor) instruction: iter_out/iter_in walk the output rows/columns (dst factors
  OW, 1; src factors stride*W_padded, stride) and its k*k micro-ops walk the window (dst fixed,
  src = dy*W_padded + dx);
- STORE of the int8 result.

Padded positions hold 0, not -inf: the result equals the usual max-pool with padding only
when the input is non-negative (e.g. after a ReLU); the graph decides when pad > 0 is right.
Batch and channels that are not whole blocks are padded with zeros here and cropped again.
"""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np
from tvm import s_tir, te, tirx

from intrinsics.build import compile_vta
from vta_sim.errors import CompileError
from intrinsics.tensor_intrin import SCOPES, alu_update_intrin, fill_intrin, tensorize_loop
from requantisation.bounds import INT8_MIN
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
def acc_entries(s: PoolShape, rows: int) -> int:
    """ACC entries of one tile: its input rows with halo, then its output rows."""
    return ((rows - 1) * s.stride + s.k) * s.wp + rows * s.ow


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


# ----------------------------------------------------------------------------- TE and schedule
def workload(cfg: Config, s: PoolShape) -> list:
    """TE tensors [data, out] on the packed, block-padded layout."""
    B, BO = cfg.BATCH, cfg.BLOCK_OUT
    nb, cb = blocked(cfg, s.n, s.c)
    nb, cb = nb // B, cb // BO
    data = te.placeholder((nb, cb, s.h, s.w, B, BO), "int8", name="data")
    p = s.pad

    def staged(i, c, y, x, b, o):
        value = data[i, c, y - p, x - p, b, o].astype("int32")
        if p == 0:
            return value
        inside = tirx.all(y >= p, y < s.h + p, x >= p, x < s.w + p)
        return tirx.if_then_else(inside, value, tirx.const(0, "int32"))

    pad = te.compute((nb, cb, s.h + 2 * p, s.wp, B, BO), staged, name="pad")
    # max over int8 values: -128 is the identity, so the init is a fill, not -2^31.
    max8 = te.comm_reducer(lambda x, y: tirx.max(x, y), lambda t: tirx.const(INT8_MIN, t), name="max8")
    rkh = te.reduce_axis((0, s.k), name="rkh")
    rkw = te.reduce_axis((0, s.k), name="rkw")
    pool = te.compute(
        (nb, cb, s.oh, s.ow, B, BO),
        lambda i, c, y, x, b, o: max8(pad[i, c, y * s.stride + rkh, x * s.stride + rkw, b, o],
                                      axis=[rkh, rkw]),
        name="pool")
    out = te.compute(pool.shape, lambda *i: pool(*i).astype("int8"), name="out")
    return [data, out]


def schedule(cfg: Config, s: PoolShape, rows: int, vthreads: int = 1):
    """The scheduled, tensorized TensorIR module: per tile load, fill, one MAX walk, store."""
    sch = s_tir.Schedule(te.create_prim_func(workload(cfg, s)))
    pool = sch.get_sblock("pool")
    n, c, y, x, b, o, rkh, rkw = sch.get_loops(pool)
    y_t, y_v, y_i = sch.split(y, [None, vthreads, rows])
    sch.reorder(n, c, y_t, y_v, y_i, x, rkh, rkw, b, o)
    if vthreads > 1:
        sch.bind(y_v, "vthread.x")
    sch.set_scope(pool, 0, SCOPES["acc"])
    pad = sch.get_sblock("pad")
    sch.set_scope(pad, 0, SCOPES["acc"])
    sch.compute_at(pad, y_v)
    sch.reverse_compute_at(sch.get_sblock("out"), y_v)
    init = sch.decompose_reduction(pool, y_i)
    sch.tensorize(tensorize_loop(sch, init, cfg), fill_intrin(cfg, INT8_MIN))
    sch.tensorize(tensorize_loop(sch, pool, cfg), alu_update_intrin(cfg, "max"))
    return sch.mod


def max_pool_kernel(cfg: Config, n: int, c: int, h: int, w: int, k: int, stride: int, pad: int = 0,
                    vthreads: int = 1) -> OpKernel:
    """Compiled max-pool on plain int8 NCHW (n, c, h, w) -> int8 NCHW (n, c, oh, ow).

    Padded positions count as 0 (see the module docstring)."""
    s = PoolShape(n, c, h, w, k, stride, pad)
    rows = plan(cfg, s, vthreads)
    kernel = compile_vta(schedule(cfg, s, rows, vthreads), cfg)
    return OpKernel("max_pool", kernel,
                    pack=lambda x: (pad_pack_nchw(cfg, x, (n, c, h, w), "max-pool input"),),
                    unpack=lambda out: crop_unpack_nchw(out, n, c),
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
