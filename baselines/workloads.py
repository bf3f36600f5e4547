"""TE compute definitions of the workloads that `vta-sim compare` builds every way TVM allows.

Each workload is one `Workload`: its TE graph (inputs first, output last), its operation count,
seeded random inputs and an exact numpy reference (int64 / float64), so every build, every
schedule and every baseline is checked against the same thing.

Loop roles. Each compute block's loops are ordered [spatial..., reduction...]; a `BlockView`
names which loops play the GEMM roles that the CPU and GPU schedules tile: `outer` (batch),
`rows` (the M-like output axes, fused into one), `col` (the N-like output-channel axis, the
one vectorised) and `reduce` (the first one is the long, split reduction). `reused` is the
operand that every row reads again (GEMM B, conv weights): the one worth packing.
"""
from dataclasses import dataclass, field
from typing import Callable

import numpy as np
from tvm import te, tirx

from schedules.layers import get_layer

DTYPES = {"int8": ("int8", "int32"), "fp32": ("float32", "float32")}
# Right shift that brings the int8 depthwise accumulator back to int8 before the pointwise conv
# (the accelerator's SHR + clip); float workloads skip it.
DWSEP_SHIFT = 4
# The forms of an int8 workload's dot-product operands (`Workload.te_graph(form=...)`): the same
# inputs and result, the operands in the type an x86 dot instruction multiplies.
FORMS = {
    "int8": "the operands as given",
    "u8": "the streamed operand + 128 as uint8 (stage `<name>_u8`, or inside `pad` / `requant`), "
          "128 * sum(weights) per output column (stage `comp`) subtracted at the end: VPDPBUSD's form",
    "i16": "both operands sign-extended to int16 ahead of the dot product (stages `<name>_i16`, "
           "or inside `pad` / `requant`): VPMADDWD's, whose every operand then loads as it is",
}


@dataclass(frozen=True)
class BlockView:
    """GEMM roles of one compute block's loops (positions in `get_loops(block)`)."""

    block: str
    outer: tuple[int, ...]
    rows: tuple[int, ...]
    col: int
    reduce: tuple[int, ...]
    reused: str | None  # name of the operand buffer re-read by every row (None: nothing to pack)
    reused_col_dim: int | None  # which dimension of `reused` runs along `col`
    reused_red_dim: int | None = None  # ... and which along the first reduction
    stream: str | None = None  # the other operand (read once per row); int8 dot products
    stream_red_dim: int | None = None  # need its reduction dimension innermost


@dataclass(frozen=True)
class Workload:
    """One workload: shape, dtype, TE graph and the exact reference."""

    kind: str
    dtype: str
    shape_name: str
    inputs: tuple[tuple[str, tuple[int, ...]], ...]
    output_shape: tuple[int, ...]
    ops: int  # 2 x multiply-accumulates
    views: tuple[BlockView, ...]
    _te: Callable = field(repr=False, compare=False)
    _ref: Callable = field(repr=False, compare=False)
    params: dict = field(default_factory=dict, compare=False)

    @property
    def name(self):
        """e.g. gemm_int8_1024x1024x1024: kind, dtype and shape, as in the JSON rows."""
        return f"{self.kind}_{self.dtype}_{self.shape_name}"

    @property
    def in_dtype(self):
        return DTYPES[self.dtype][0]

    @property
    def out_dtype(self):
        return DTYPES[self.dtype][1]

    def te_graph(self, form="int8"):
        """Fresh TE tensors [inputs..., output]; `form`: the dot products' operand form (FORMS;
        forms other than int8 exist for int8 workloads only)."""
        if form not in FORMS:
            raise ValueError(f"unknown operand form {form!r}; accepted: {', '.join(FORMS)}")
        if form != "int8" and self.dtype != "int8":
            raise ValueError(f"the {form} operand form exists for int8 workloads, not {self.dtype}")
        placeholders = [te.placeholder(shape, self.in_dtype, name=n) for n, shape in self.inputs]
        return placeholders + [self._te(*placeholders, form=form)]

    def prim_func(self, form="int8"):
        """The unscheduled PrimFunc (the 'scalar' build)."""
        return te.create_prim_func(self.te_graph(form)).with_attr("global_symbol", "main")

    def random_inputs(self, seed=0):
        """Seeded inputs: full-range int8 for int8 workloads, [-1, 1) for fp32."""
        rng = np.random.default_rng(seed)
        if self.dtype == "int8":
            return [rng.integers(-128, 128, size=s, dtype=np.int8) for _, s in self.inputs]
        return [rng.uniform(-1, 1, size=s).astype(np.float32) for _, s in self.inputs]

    def evaluate(self, arrays):
        """The numpy formula in the arrays' own dtype (the fp32 numpy baseline uses this)."""
        return self._ref(*arrays)

    def reference(self, arrays):
        """Exact result in int64 / float64, cast to the output dtype."""
        wide = [a.astype(np.int64 if self.dtype == "int8" else np.float64) for a in arrays]
        return self._ref(*wide).astype(self.out_dtype)


def _check_dtype(dtype):
    if dtype not in DTYPES:
        raise ValueError(f"unknown dtype {dtype!r}; accepted: {', '.join(DTYPES)}")


def _check_positive(**dims):
    bad = {k: v for k, v in dims.items() if not (isinstance(v, int) and v > 0)}
    if bad:
        raise ValueError(f"shape values must be positive integers, got {bad}")


def _acc(x, dtype):
    return x.astype(DTYPES[dtype][1])


def _shift_u8(x):
    """int8 -> uint8 by +128 (the VNNI operand form)."""
    return (x.astype("int32") + 128).astype("uint8")


def _streamed(value, form):
    """A streamed-operand value (int8, or any dtype in form int8) in `form` (FORMS)."""
    if form == "u8":
        return _shift_u8(value)
    if form == "i16":
        return value.astype("int16")
    return value


def _zero(form, dtype):
    """Zero padding of a streamed operand of `dtype` in `form`."""
    return tirx.const(*{"u8": (128, "uint8"), "i16": (0, "int16")}.get(form, (0, dtype)))


def _stage(X, form):
    """The operand X as the dot product reads it: X itself, or (form u8 / i16) a stage
    `<name>_<form>` holding it converted."""
    if form == "int8":
        return X
    return te.compute(X.shape, lambda *i: _streamed(X[i], form), name=f"{X.op.name}_{form}")


def _weights(W, form):
    """The reused operand as the dot product reads it: i16 widens it in a stage `<name>_i16`
    (the tensorised schedule inlines it into the packing copy); the other forms read it as given."""
    return _stage(W, form) if form == "i16" else W


def _corrected(acc, weights, col_dim):
    """acc - 128 * (sum of the weights feeding each output column): undoes the +128 shift.

    The output column (GEMM j, conv k) is dimension 1 of every workload's output."""
    nd = len(weights.shape)
    red = {i: te.reduce_axis((0, weights.shape[i]), name=f"w{i}") for i in range(nd) if i != col_dim}
    comp = te.compute(
        (weights.shape[col_dim],),
        lambda j: te.sum(weights[tuple(j if i == col_dim else red[i] for i in range(nd))]
                         .astype("int32") * 128, axis=list(red.values())),
        name="comp")
    return te.compute(acc.shape, lambda *i: acc[i] - comp[i[1]], name="out")


def gemm(M, N, K, dtype="int8"):
    """C[M, N] = A[M, K] . B[K, N], int8 -> int32 or fp32."""
    _check_dtype(dtype)
    _check_positive(M=M, N=N, K=K)

    def build(A, B, form="int8"):
        src, w = _stage(A, form), _weights(B, form)
        k = te.reduce_axis((0, K), name="k")
        C = te.compute(
            (M, N), lambda i, j: te.sum(_acc(src[i, k], dtype) * _acc(w[k, j], dtype), axis=k),
            name="C")
        return _corrected(C, B, 1) if form == "u8" else C

    view = BlockView("C", outer=(), rows=(0,), col=1, reduce=(2,), reused="B", reused_col_dim=1,
                     reused_red_dim=0, stream="A", stream_red_dim=1)
    return Workload("gemm", dtype, f"{M}x{N}x{K}", (("A", (M, K)), ("B", (K, N))), (M, N),
                    2 * M * N * K, (view,), build, lambda a, b: a @ b)


def _out_size(size, kernel, stride, pad):
    out = (size + 2 * pad - kernel) // stride + 1
    if out <= 0:
        raise ValueError(f"kernel {kernel} with pad {pad} does not fit input size {size}")
    return out


def _padded(X, pads, form="int8", name="pad"):
    """Zero-pad the trailing spatial dims of an N C ... tensor (materialised: one TE stage),
    in the operand form `form` (u8: the padding zero becomes 128)."""
    shape = list(X.shape[:2]) + [X.shape[2 + i] + 2 * p for i, p in enumerate(pads)]

    def fn(*idx):
        inside = [tirx.all(idx[2 + i] >= p, idx[2 + i] < X.shape[2 + i] + p)
                  for i, p in enumerate(pads) if p]
        value = X[idx[:2] + tuple(idx[2 + i] - p for i, p in enumerate(pads))]
        value, zero = _streamed(value, form), _zero(form, X.dtype)
        return tirx.if_then_else(tirx.all(*inside), value, zero) if inside else value

    return te.compute(shape, fn, name=name)


def _np_pad(x, pads):
    return np.pad(x, [(0, 0), (0, 0)] + [(p, p) for p in pads])


def conv2d(N, C, H, W, K, R, S, stride=1, pad=0, dtype="int8"):
    """NCHW conv2d, weights KCRS: out[n, k, y, x] = sum_{c,r,s} in[n, c, y*st+r, x*st+s] w[k, c, r, s]."""
    _check_dtype(dtype)
    _check_positive(N=N, C=C, H=H, W=W, K=K, R=R, S=S, stride=stride)
    OH, OW = _out_size(H, R, stride, pad), _out_size(W, S, stride, pad)

    def build(X, Wt, form="int8"):
        P, w = _padded(X, (pad, pad), form), _weights(Wt, form)
        c, r, s = (te.reduce_axis((0, e), name=n) for e, n in ((C, "c"), (R, "r"), (S, "s")))
        out = te.compute(
            (N, K, OH, OW),
            lambda n, k, y, x: te.sum(
                _acc(P[n, c, y * stride + r, x * stride + s], dtype) * _acc(w[k, c, r, s], dtype),
                axis=[c, r, s]),
            name="conv")
        return _corrected(out, Wt, 0) if form == "u8" else out

    def ref(x, w):
        cols = _im2col(_np_pad(x, (pad, pad)), (R, S), stride, (OH, OW))  # N, OH*OW, C*R*S
        return (cols @ w.reshape(K, -1).T).transpose(0, 2, 1).reshape(N, K, OH, OW)

    view = BlockView("conv", outer=(0,), rows=(2, 3), col=1, reduce=(4, 5, 6), reused="W",
                     reused_col_dim=0, reused_red_dim=1, stream="pad", stream_red_dim=1)
    shape = f"n{N}c{C}h{H}w{W}k{K}r{R}s{S}st{stride}p{pad}"
    return Workload("conv2d", dtype, shape, (("X", (N, C, H, W)), ("W", (K, C, R, S))),
                    (N, K, OH, OW), 2 * N * K * OH * OW * C * R * S, (view,), build, ref,
                    dict(stride=stride, pad=pad, nd=2))


def conv2d_layer(layer, dtype="int8", batch=1):
    """A ResNet-18 layer from `schedules.layers` ('resnet18.C5'), named after the layer."""
    try:
        L = get_layer(layer)
    except KeyError as err:
        raise ValueError(err.args[0]) from None
    wl = conv2d(batch, L.IC, L.H, L.H, L.OC, L.K, L.K, L.stride, L.pad, dtype)
    tag = layer.split(".")[-1].upper()
    return Workload(wl.kind, dtype, f"resnet18.{tag}_{wl.shape_name}", wl.inputs, wl.output_shape,
                    wl.ops, wl.views, wl._te, wl._ref, wl.params)


def _im2col(xp, kernel, stride, out):
    """Patches of a padded N C *spatial array: (N, prod(out), C * prod(kernel))."""
    n, c = xp.shape[:2]
    win = np.lib.stride_tricks.sliding_window_view(xp, kernel, axis=tuple(range(2, xp.ndim)))
    win = win[(slice(None), slice(None)) + tuple(slice(None, o * stride, stride) for o in out)]
    # win: N, C, *out, *kernel -> N, *out, C, *kernel
    nd = len(out)
    order = (0,) + tuple(range(2, 2 + nd)) + (1,) + tuple(range(2 + nd, 2 + 2 * nd))
    return win.transpose(order).reshape(n, int(np.prod(out)), c * int(np.prod(kernel)))


def conv1d(N, C, W, K, R, stride=1, pad=0, dtype="int8"):
    """NCW conv1d, weights KCR."""
    _check_dtype(dtype)
    _check_positive(N=N, C=C, W=W, K=K, R=R, stride=stride)
    OW = _out_size(W, R, stride, pad)

    def build(X, Wt, form="int8"):
        P, w = _padded(X, (pad,), form), _weights(Wt, form)
        c, r = te.reduce_axis((0, C), name="c"), te.reduce_axis((0, R), name="r")
        out = te.compute(
            (N, K, OW),
            lambda n, k, x: te.sum(
                _acc(P[n, c, x * stride + r], dtype) * _acc(w[k, c, r], dtype), axis=[c, r]),
            name="conv")
        return _corrected(out, Wt, 0) if form == "u8" else out

    def ref(x, w):
        cols = _im2col(_np_pad(x, (pad,)), (R,), stride, (OW,))
        return (cols @ w.reshape(K, -1).T).transpose(0, 2, 1)

    view = BlockView("conv", outer=(0,), rows=(2,), col=1, reduce=(3, 4), reused="W",
                     reused_col_dim=0, reused_red_dim=1, stream="pad", stream_red_dim=1)
    return Workload("conv1d", dtype, f"n{N}c{C}w{W}k{K}r{R}st{stride}p{pad}",
                    (("X", (N, C, W)), ("W", (K, C, R))), (N, K, OW), 2 * N * K * OW * C * R,
                    (view,), build, ref, dict(stride=stride, pad=pad, nd=1))


def dwsep(N, C, H, W, K, dtype="int8"):
    """Depthwise 3x3 (pad 1) then pointwise 1x1; int8 requantises between (>> DWSEP_SHIFT, clip)."""
    _check_dtype(dtype)
    _check_positive(N=N, C=C, H=H, W=W, K=K)

    def build(X, DW, PW, form="int8"):
        P = _padded(X, (1, 1))
        r, s = te.reduce_axis((0, 3), name="r"), te.reduce_axis((0, 3), name="s")
        D = te.compute(
            (N, C, H, W),
            lambda n, c, y, x: te.sum(_acc(P[n, c, y + r, x + s], dtype) * _acc(DW[c, r, s], dtype),
                                      axis=[r, s]),
            name="dw")
        if dtype == "int8":
            # (the pointwise conv's operand in its form right here)
            D = te.compute(
                D.shape, lambda *i: _streamed(
                    tirx.max(tirx.min(D[i] >> DWSEP_SHIFT, 127), -128).astype("int8"), form),
                name="requant")
        c, w = te.reduce_axis((0, C), name="c"), _weights(PW, form)
        out = te.compute(
            (N, K, H, W),
            lambda n, k, y, x: te.sum(_acc(D[n, c, y, x], dtype) * _acc(w[k, c], dtype), axis=c),
            name="pw")
        return _corrected(out, PW, 0) if form == "u8" else out

    def ref(x, dw, pw):
        cols = _im2col(_np_pad(x, (1, 1)), (3, 3), 1, (H, W)).reshape(N, H * W, C, 9)
        d = np.einsum("npcq,cq->ncp", cols, dw.reshape(C, 9))
        if dtype == "int8":
            d = np.clip(d // (1 << DWSEP_SHIFT), -128, 127)  # floor: == >> on ints
        return np.einsum("ncp,kc->nkp", d, pw).reshape(N, K, H, W)

    # Depthwise has no channel reduction: its vector axis is x (contiguous in input and output)
    # and no operand is re-read along it, so nothing is packed.
    views = (BlockView("dw", outer=(0, 1), rows=(2,), col=3, reduce=(4, 5), reused=None,
                       reused_col_dim=None),
             BlockView("pw", outer=(0,), rows=(2, 3), col=1, reduce=(4,), reused="PW",
                       reused_col_dim=0, reused_red_dim=1,
                       stream="requant" if dtype == "int8" else "dw", stream_red_dim=1))
    return Workload("dwsep", dtype, f"n{N}c{C}h{H}w{W}k{K}",
                    (("X", (N, C, H, W)), ("DW", (C, 3, 3)), ("PW", (K, C))), (N, K, H, W),
                    2 * N * H * W * C * (9 + K), views, build, ref, dict(C=C, K=K))
