"""Typed descriptions of the integer ops the accelerator runs, read off Relax calls.

One `OpSpec` per layer: its shape and requantisation parameters (what a kernel is compiled for,
and its cache key) and its constants (weights, bias: inputs of the compiled kernel, not part of
the key). `check(root, value_of)` is the one place that says whether VTA-8 takes an op, so the pattern
check of the partitioner and the report's reason for a CPU layer always agree.
"""
from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np
import tvm
from tvm import relax
from tvm.ir.expr import Constant

from intrinsics.errors import CompileError
from schedules import vta_eltwise
from schedules.fixed_point import SPLIT, ScaledRequant
from schedules.vta_conv2d import ConvShape
from schedules.vta_dense import DenseShape
from schedules.vta_eltwise import AddParams, ScaledAddParams
from schedules.vta_ops import Requant
from schedules.vta_pool import PoolShape

from .errors import GraphError
from .qdq import static_shape



@dataclass(frozen=True)
class ConvSpec:
    shape: ConvShape
    requant: Requant | ScaledRequant
    pad_value: int = 0        # the input's zero point: what padding holds
    op: str = "conv2d"        # "avg_pool": graph.qdq's average pool, a depthwise conv of ones

    @property
    def macs(self) -> int:
        return self.shape.macs()

    def describe(self) -> str:
        s = self.shape
        kind = "" if s.groups == 1 else " dw" if s.groups == s.ic else f" g{s.groups}"
        return f"{s.k}x{s.k}/{s.stride}{kind} {s.ic}->{s.oc} {s.h}x{s.w}"


@dataclass(frozen=True)
class DenseSpec:
    shape: DenseShape
    requant: Requant | ScaledRequant
    op: str = field(default="dense", init=False)

    @property
    def macs(self) -> int:
        return self.shape.macs()

    def describe(self) -> str:
        s = self.shape
        return f"{s.m}x{s.k} . {s.k}x{s.n}"


@dataclass(frozen=True)
class PoolSpec:
    shape: PoolShape
    ceil_extra: int = 0       # ceil_mode: rows/columns of -128 the host adds at the bottom/right
    op: str = field(default="max_pool", init=False)
    macs = 0

    def describe(self) -> str:
        s = self.shape
        return f"{s.k}x{s.k}/{s.stride} pad {s.pad}{' ceil' if self.ceil_extra else ''} {s.c}x{s.h}x{s.w}"


@dataclass(frozen=True)
class AddSpec:
    shape: tuple              # (n, c, h, w)
    params: AddParams | ScaledAddParams
    op: str = field(default="add", init=False)
    macs = 0

    def describe(self) -> str:
        p, (_, c, h, w) = self.params, self.shape
        if isinstance(p, ScaledAddParams):
            return f"(a{-p.zero_a:+d})Ma+(b{-p.zero_b:+d})Mb {c}x{h}x{w}"
        return f"(a<<{p.shift_a}) + (b<<{p.shift_b}) >> {p.shift} {c}x{h}x{w}"


def _ints(values) -> list:
    return [int(v) for v in values]


def _const(e) -> np.ndarray:
    if not isinstance(e, Constant):
        raise GraphError(f"expected a constant, got {type(e).__name__}")
    return e.value.numpy()


def _prim(e) -> int:
    return int(e.value) if hasattr(e, "value") else int(e)


def value_lookup(func, extra=None):
    """e -> the value a var of `func` is bound to (looking in `extra` first), else e itself."""
    var2val = dict(relax.analysis.get_var2val(func))

    def value_of(e):
        if not isinstance(e, relax.Var):
            return e
        if extra is not None and e in extra:
            return extra[e]
        return var2val.get(e, e)
    return value_of


def op_name(e) -> str | None:
    return e.op.name if isinstance(e, relax.Call) and isinstance(e.op, tvm.ir.Op) else None


def _vector(e) -> np.ndarray:
    return _const(e).reshape(-1).astype(np.int32)


def _requant_chain(root, value_of):
    """(acc call, per-channel constants, requantisation) of graph.qdq's two forms:

    power of two:  astype(clip(right_shift(add(acc, bias), shift), lo, hi))
    fixed point:   astype(clip(add(right_shift(add(right_shift(p, t), rnd), s - t), zp), lo, hi))
                   p = add(multiply(a, m_hi), right_shift(multiply(a, m_lo), k))
                   a = minimum(maximum(add(acc, bias), a_min), a_max)
    """
    clip = value_of(root.args[0])
    lo, hi = _prim(clip.args[1]), _prim(clip.args[2])
    inner = value_of(clip.args[0])
    if op_name(inner) == "relax.right_shift":
        add = value_of(inner.args[0])
        return value_of(add.args[0]), (_vector(add.args[1]),), Requant(int(_const(inner.args[1])), lo, hi)
    zp = int(_const(inner.args[1]))
    shr_s = value_of(inner.args[0])
    rnd_add = value_of(shr_s.args[0])
    shr_t = value_of(rnd_add.args[0])
    ties_even = op_name(shr_t) == "relax.add"          # u + parity (graph.qdq._round_shift)
    if ties_even:
        shr_t = value_of(shr_t.args[0])
    p = value_of(shr_t.args[0])
    t = int(_const(shr_t.args[1]))

    def requant(k):
        r = ScaledRequant(k, t, t + int(_const(shr_s.args[1])), zp, lo, hi, ties_even)
        if r.rounding - ties_even != int(_const(rnd_add.args[1])):
            raise _Unsupported(f"rounding constant {int(_const(rnd_add.args[1]))} is not 2^(s-t-1)"
                               + (" - 1" if ties_even else ""))
        return r
    high, low_shr = (value_of(v) for v in p.args)
    if op_name(low_shr) == "relax.multiply":        # the scaled add: (a - za) m_a + (b - zb) m_b
        return p, (), requant(SPLIT)
    low = value_of(low_shr.args[0])
    clamp_hi = value_of(high.args[0])
    clamp_lo = value_of(clamp_hi.args[0])
    add = value_of(clamp_lo.args[0])
    constants = (_vector(add.args[1]), _vector(clamp_lo.args[1]), _vector(clamp_hi.args[1]),
                 _vector(high.args[1]), _vector(low.args[1]))
    return value_of(add.args[0]), constants, requant(int(_const(low_shr.args[1])))


def read_spec(root, value_of=lambda e: e):
    """(OpSpec, constants) of the integer op whose final call is `root` (see graph.qdq's forms).

    Constants are the kernel's inputs after the activations: the weight and the per-channel
    vectors (bias, then a_min, a_max, m_hi, m_lo for a fixed-point requantisation). `value_of`
    maps a var to its bound value."""
    name = op_name(root)
    if name == "relax.nn.max_pool2d":
        a = root.attrs
        x = root.args[0]
        if x.ty.dtype != "int8":
            raise _Unsupported(f"a {x.ty.dtype} max-pool: the accelerator pools int8")
        n, c, h, w = static_shape(x)
        pool, strides, pad = _ints(a.pool_size), _ints(a.strides), _ints(a.padding)
        _check_pool_attrs(pool, strides, pad, a)
        oh, ow = static_shape(root)[2:]
        shape = PoolShape(n, c, h, w, pool[0], strides[0], pad[0])
        # ceil_mode's last window may run past the padding: pad that far with -128 (never a max)
        extra = max(0, (oh - 1) * shape.stride + shape.k - (h + 2 * shape.pad)) if a.ceil_mode else 0
        if extra != max(0, (ow - 1) * shape.stride + shape.k - (w + 2 * shape.pad)):
            raise _Unsupported(f"ceil_mode pads {h}x{w} differently per axis")
        return PoolSpec(shape, extra), ()
    acc, vectors, requant = _requant_chain(root, value_of)
    kind = op_name(acc)
    if kind == "relax.nn.conv2d":
        a = acc.attrs
        x, wgt = acc.args
        pad, pad_value = _ints(a.padding), 0
        padded = value_of(x)
        if op_name(padded) == "relax.nn.pad":           # an input zero point: pad with it
            x, pad, pad_value = padded.args[0], _explicit_pad(padded), int(padded.attrs.pad_value)
        n, ic, h, w = static_shape(x)
        weight = _const(wgt)
        oc, _, kh, kw = weight.shape
        _check_conv_attrs(kh, kw, a, pad, ic, oc)
        spec = ConvSpec(ConvShape(n, h, w, ic, oc, kh, pad[0], _ints(a.strides)[0], int(a.groups)),
                        requant, pad_value, conv_kind(acc))
        return spec, (weight, *vectors)
    if kind == "relax.matmul":
        x, wgt = acc.args
        weight = _const(wgt)                       # (K, N)
        m, k = static_shape(x)
        spec = DenseSpec(DenseShape(m, k, weight.shape[1]), requant)
        return spec, (np.ascontiguousarray(weight.T), *vectors)
    if kind == "relax.add":      # residual: add(a << ka, b << kb) + rnd, or add((a - za) m_a, (b - zb) m_b)
        terms = [value_of(t) for t in acc.args]
        n, c, h, w = static_shape(add_operands(acc, value_of)[0])
        if isinstance(requant, ScaledRequant):
            (za, ma), (zb, mb) = ((-int(_const(value_of(t.args[0]).args[1])), int(_const(t.args[1])))
                                  for t in terms)
            params = ScaledAddParams(za, zb, ma, mb, requant)
        else:
            ka, kb = (int(_const(t.args[1])) for t in terms)
            params = AddParams(ka, kb, requant.shift, requant.lo, requant.hi)
        vta_eltwise.check_params(params)
        return AddSpec((n, c, h, w), params), ()
    raise GraphError(f"not an accelerator op: {name}({kind})")


def add_operands(acc, value_of) -> list:
    """The two int8 activations of a residual add's integer form (either of graph.qdq's)."""
    out = []
    for term in acc.args:
        e = value_of(value_of(term).args[0])          # astype (pow2) or add(astype, -z) (scaled)
        if op_name(e) == "relax.add":
            e = value_of(e.args[0])
        out.append(e.args[0])
    return out


def _explicit_pad(pad_call) -> list:
    """[top, left, bottom, right] of an NCHW nn.pad that pads only H and W."""
    widths = _ints(pad_call.attrs.pad_width)
    if any(widths[:4]) or pad_call.attrs.pad_mode != "constant":
        raise _Unsupported(f"pad {widths} ({pad_call.attrs.pad_mode}) touches N or C or is not constant")
    return [widths[4], widths[6], widths[5], widths[7]]


class _Unsupported(GraphError):
    pass


def conv_kind(call) -> str:
    """"avg_pool" for graph.qdq's integer average pool (a depthwise conv whose weights are all
    1), else "conv2d": the name the report gives the layer."""
    weight = call.args[1]
    depthwise = int(call.attrs.groups) > 1 and int(call.attrs.groups) == int(weight.ty.shape[0])
    if depthwise and isinstance(weight, Constant) and np.all(weight.value.numpy() == 1):
        return "avg_pool"
    return "conv2d"


def call_macs(call) -> int:
    """Multiply-accumulates of a conv2d or matmul call from its shapes (0 for other ops and for
    average pools: a model's MACs are its convolutions' and dense layers'). A CPU layer whose
    output shape TVM's frontend left unknown counts 0: its reason says so (qdq.static_shape)."""
    name = op_name(call)
    if call.ty.shape is None:
        return 0
    if name == "relax.nn.conv2d" and conv_kind(call) == "conv2d":
        _, per, kh, kw = (int(d) for d in call.args[1].ty.shape)
        return int(np.prod([int(d) for d in call.ty.shape])) * per * kh * kw
    if name == "relax.matmul":
        return int(np.prod([int(d) for d in call.ty.shape])) * int(call.args[0].ty.shape[-1])
    return 0


def _check_conv_attrs(kh, kw, a, pads, ic, oc) -> None:
    strides, dil, groups = _ints(a.strides), _ints(a.dilation), int(a.groups)
    if kh != kw:
        raise _Unsupported(f"kernel {kh}x{kw} is not square")
    if len(set(pads)) != 1 or len(set(strides)) != 1:
        raise _Unsupported(f"padding {pads} / strides {strides} differ between the axes")
    if set(dil) != {1}:
        raise _Unsupported(f"dilation {dil}: only 1-dilated convs")
    if groups != 1 and ic != oc:
        raise _Unsupported(f"groups {groups} with {ic} input and {oc} output channels: grouped convs "
                           "take as many output as input channels per group")
    if (a.data_layout, a.kernel_layout) != ("NCHW", "OIHW"):
        raise _Unsupported(f"layout {a.data_layout}/{a.kernel_layout}: NCHW/OIHW only")


def _check_pool_attrs(pool, strides, pad, a) -> None:
    if len(set(pool)) != 1 or len(set(strides)) != 1 or len(set(pad)) != 1:
        raise _Unsupported(f"window {pool}, strides {strides}, padding {pad} differ between the axes")
    if set(_ints(a.dilation)) != {1} or a.layout != "NCHW":
        raise _Unsupported("dilation or a layout other than NCHW")


def layer_call(root, value_of):
    """The call that names the layer of a matched op: the conv2d/matmul, the residual add, the pool."""
    if op_name(root) == "relax.nn.max_pool2d":
        return root
    return _requant_chain(root, value_of)[0]


def check(root, value_of, misfit=lambda spec: None) -> str | None:
    """Why the op at `root` stays on the CPU (None: VTA-8 runs it), given its graph context;
    `misfit(spec)` says why a readable op's shape does not fit the accelerator's buffers."""
    try:
        spec, _ = read_spec(root, value_of)
    except CompileError as exc:      # an attribute or requantisation range VTA-8 does not take
        return str(exc)
    return misfit(spec)
