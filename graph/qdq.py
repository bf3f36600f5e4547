"""The QDQ pass: QuantizeLinear/DequantizeLinear around float ops -> integer ops.

TVM's ONNX frontend imports a QDQ model as `quantize(op(dequantize(x_q), dequantize(W_q)) + b)`
in float. Wherever the scales allow the accelerator's requantisation, this pass rewrites the
block into the integer graph the accelerator runs and the CPU build reproduces bit for bit:

    conv2d / matmul:  astype_i8(clip(((x_q (*) W_q : int32) + bias') >> shift, lo, hi))
                      (grouped and depthwise convs alike)
    residual add:     astype_i8(clip(((a << ka) + (b << kb) + rnd) >> shift, lo, hi)), or with
                      zero points and any scales round_shift((a - za) m_a + (b - zb) m_b)
    average pool:     a depthwise conv2d of ones, then the fixed-point requantisation by
                      s_x / (s_y k^2), ties to even (global pools: k = H = W)
    max-pool:         max_pool2d(x_q) on int8 (same scale in and out)
    concat:           concat(x_i or astype_i8(clip(round_shift((x_i - z_i) m_i) + zy))) along the
                      channels: inputs of another scale or zero point moved into the output's
    reshape:          reshape(x_q) (same scale in and out)

With power-of-two multipliers s_x s_w / s_y = 2^-shift and no zero points the requantisation is
`(acc + bias') >> shift` with `bias' = round(b / (s_x s_w)) + 2^(shift-1)` (round to nearest
folded into the bias). Float scales, per-channel weight scales and zero points take the
fixed-point form of requantisation.fixed_point (clamp, two-part multiply, rounding shift, + zp_y); an
input zero point folds `-zp_x * sum(W)` into the bias and pads explicitly with zp_x; uint8
tensors are read as int8 - 128 on the CPU side. A ReLU between the op and its quantize raises
the clip's floor. Anything else (a weight zero point, an average pool whose divisor changes at
the border, an op it does not map) stays in float on the CPU, and its `Decision` says why.
"""
from __future__ import annotations

import dataclasses
import math
from fractions import Fraction
from dataclasses import dataclass

import numpy as np
import tvm
from tvm import relax
from tvm.ir.expr import Constant
from tvm.relax.expr_functor import PyExprMutator, mutator

from intrinsics.errors import CompileError
from requantisation import add as rq_add
from requantisation import fixed_point
from requantisation import relax as rq_relax
from requantisation.bounds import INT8_MAX, INT8_MIN
from requantisation.rule import PowerOfTwo, rounding_constant

from .errors import GraphError

#: uint8 x with zero point z is int8 x - 128 with zero point z - 128.
UINT8_OFFSET = 128
#: Relax op -> the layer kind reports use.
LAYER_OPS = {"relax.nn.conv2d": "conv2d", "relax.matmul": "dense", "relax.nn.max_pool2d": "max_pool",
             "relax.add": "add", "relax.nn.avg_pool2d": "avg_pool", "relax.mean": "avg_pool",
             "relax.concat": "concat"}


@dataclass
class Decision:
    """What the pass did with one layer (conv2d, dense, max_pool, residual add), in graph order."""
    name: str
    op: str
    integer: bool            # rewritten into integer ops (the accelerator may take it)
    reason: str | None       # why it stays in float on the CPU


def _op(e) -> str | None:
    return e.op.name if isinstance(e, relax.Call) and isinstance(e.op, tvm.ir.Op) else None


class _Graph:
    """The function's bindings: what each var is bound to and how often it is used."""

    def __init__(self, func):
        self.value = dict(relax.analysis.get_var2val(func))
        self.uses: dict = {}
        for binding in _bindings(func):
            for v in relax.analysis.free_vars(binding.value):
                self.uses[v] = self.uses.get(v, 0) + 1
        for v in relax.analysis.free_vars(func.body.body):
            self.uses[v] = self.uses.get(v, 0) + 1

    def val(self, e):
        """The expression a var is bound to (or the expression itself)."""
        return self.value.get(e, e) if isinstance(e, relax.Var) else e

    def call(self, e, name: str):
        v = self.val(e)
        return v if _op(v) == name else None

    def const(self, e) -> np.ndarray | None:
        """The float64 value of a constant, seen through dequantize/reshape/permute_dims."""
        v = self.val(e)
        if isinstance(v, Constant):
            return v.value.numpy().astype(np.float64)
        name = _op(v)
        if name == "relax.dequantize":
            data, scale, zero = (self.const(a) for a in v.args)
            if data is None or scale is None or zero is None:
                return None
            return (data - _axis_view(zero, v, data.ndim)) * _axis_view(scale, v, data.ndim)
        if name == "relax.reshape":
            inner = self.const(v.args[0])
            return None if inner is None else inner.reshape([int(d) for d in v.args[1].values])
        if name == "relax.permute_dims":
            inner = self.const(v.args[0])
            axes = None if v.attrs.axes is None else [int(a) for a in v.attrs.axes]
            return None if inner is None else np.transpose(inner, axes)
        return None


def _axis_view(per_axis: np.ndarray, dq, ndim: int) -> np.ndarray:
    """A per-axis scale/zero point shaped to broadcast along the dequantize's axis."""
    if per_axis.size == 1:
        return per_axis.reshape(())
    shape = [1] * ndim
    shape[int(dq.attrs.axis) % ndim] = per_axis.size
    return per_axis.reshape(shape)


def _bindings(func):
    for block in func.body.blocks:
        yield from block.bindings


@dataclass
class _Plan:
    """The integer replacement of one quantize binding."""
    kind: str                 # conv2d, dense, add, max_pool, reshape, identity
    args: dict


class _Refusal(Exception):
    """Why a matched layer stays in float (internal: becomes Decision.reason)."""


def _scalar(g: _Graph, e, what: str) -> float:
    value = g.const(e)
    if value is None:
        raise _Refusal(f"the {what} is not a constant")
    if value.size != 1:
        raise _Refusal(f"per-channel {what}s ({value.size} values); the accelerator requantises "
                       "with one power-of-two scale per tensor")
    return float(value.reshape(()))


def _dq_input(g: _Graph, e, what: str, zero_point_ok: bool = False, uint8_ok: bool = False):
    """(x_q var, scale, zero point, uint8) of `dequantize(x_q, scale, zp)`, else refuse with the
    reason (a zero point only where `zero_point_ok`). A uint8 x_q (where `uint8_ok`) is read as
    int8 x_q - 128 with zero point zp - 128: the same real values."""
    dq = g.call(e, "relax.dequantize")
    if dq is None:
        raise _Refusal(f"its {what} is not quantised (no DequantizeLinear in front of it)")
    scale = _scalar(g, dq.args[1], f"{what} scale")
    zero = _scalar(g, dq.args[2], f"{what} zero point")
    if zero != 0 and not zero_point_ok:
        raise _Refusal(f"the {what} has zero point {zero:g}; this op takes symmetric (zero point 0) "
                       "tensors on the accelerator")
    dtype = dq.args[0].ty.dtype
    if dtype == "uint8" and uint8_ok:
        return dq.args[0], scale, int(zero) - UINT8_OFFSET, True
    if dtype != "int8":
        raise _Refusal(f"the {what} is {dtype}; this op takes int8 on the accelerator"
                       + (" (uint8 is mapped for conv2d and dense only)" if dtype == "uint8" else ""))
    return dq.args[0], scale, int(zero), False


def _pow2_shift(multiplier: float, what: str) -> int:
    """n with multiplier = 2^-n, 0 <= n <= 31, else refuse naming the multiplier."""
    exponent = math.log2(multiplier) if multiplier > 0 else float("nan")
    if not math.isfinite(exponent) or abs(exponent - round(exponent)) > 1e-9:
        raise _Refusal(f"{what} {multiplier:.6g} is not a power of two")
    shift = -round(exponent)
    if not 0 <= shift <= 31:
        raise _Refusal(f"{what} {multiplier:.6g} = 2^{-shift} needs a shift outside 0..31")
    return shift


def _single_use(g: _Graph, *vars_) -> None:
    for v in vars_:
        if isinstance(v, relax.Var) and g.uses.get(v, 0) != 1:
            raise _Refusal("an intermediate float value of the block is used elsewhere")


def _weight(g: _Graph, wexpr, kind: str):
    """(int8 weight in the op's layout, per-output-channel scales) of a dequantized constant."""
    transposed = g.call(wexpr, "relax.permute_dims")
    wdq = g.call(transposed.args[0] if transposed is not None else wexpr, "relax.dequantize")
    if wdq is None or not isinstance(g.val(wdq.args[0]), Constant):
        raise _Refusal("its weight is not a quantised constant (no DequantizeLinear on a constant)")
    weight = g.val(wdq.args[0]).value.numpy()
    if weight.dtype != np.int8:
        raise _Refusal(f"its weights are {weight.dtype}; the accelerator takes int8")
    zero = g.const(wdq.args[2])
    if zero is None or np.any(zero != 0):
        raise _Refusal("its weights have a non-zero zero point; the accelerator's GEMM takes "
                       "symmetric weights")
    scale = g.const(wdq.args[1]).reshape(-1)
    axis = int(wdq.attrs.axis) % weight.ndim
    if transposed is not None:
        axes = [int(a) for a in transposed.attrs.axes]
        weight, axis = np.transpose(weight, axes), axes.index(axis)
    out_axis = 0 if kind == "conv2d" else weight.ndim - 1
    channels = weight.shape[out_axis]
    if scale.size == 1:
        scale = np.full(channels, scale[0])
    elif scale.size != channels or axis != out_axis:
        raise _Refusal(f"its weight scales run along axis {axis}, not the output channels")
    return weight, scale


def _plan_linear(g: _Graph, q, body, relu_var, relu: bool):
    """conv2d / matmul (+ bias) (+ relu) -> quantize."""
    bias, op_var = None, body
    add = g.call(body, "relax.add")
    if add is not None:
        for first, second in ((0, 1), (1, 0)):
            if _op(g.val(add.args[first])) in ("relax.nn.conv2d", "relax.matmul"):
                bias = g.const(add.args[second])
                if bias is None:
                    raise _Refusal("its bias is not a constant")
                op_var = add.args[first]
                break
    op = g.val(op_var)
    _single_use(g, *(v for v in (op_var, body if add is not None else None, relu_var) if v is not None))
    kind = "conv2d" if _op(op) == "relax.nn.conv2d" else "dense"
    x, sx, zx, x_uint8 = _dq_input(g, op.args[0], "input", zero_point_ok=True, uint8_ok=True)
    weight, sw = _weight(g, op.args[1], kind)
    sy, zy = _scalar(g, q.args[1], "output scale"), _scalar(g, q.args[2], "output zero point")
    y_uint8 = q.attrs.out_dtype == "uint8"
    zy -= UINT8_OFFSET if y_uint8 else 0
    channels = sw.size
    acc_bias = np.zeros(channels) if bias is None else bias.reshape(-1) / (sx * sw)
    if acc_bias.size != channels:
        raise _Refusal(f"its bias has {acc_bias.size} values for {channels} output channels")
    reduce = tuple(range(1, weight.ndim)) if kind == "conv2d" else 0
    sums = weight.astype(np.int64).sum(axis=reduce)
    acc_bias = np.round(acc_bias) - zx * sums             # real zero of the input is x_q = zp_x
    # |acc + bias'| never exceeds this: int8 inputs times the channel's weights
    acc_bound = -INT8_MIN * np.abs(weight.astype(np.int64)).sum(axis=reduce) + np.abs(acc_bias)
    lo = max(INT8_MIN, int(zy)) if relu else INT8_MIN
    multipliers = sx * sw / sy
    shift = _common_pow2_shift(multipliers)
    if shift is not None and zy == 0:
        requant = PowerOfTwo(shift, lo, INT8_MAX)
        acc_bias = acc_bias + rounding_constant(shift)
        params = None
    else:
        reach = -INT8_MIN * np.abs(weight.astype(np.int64)).sum(axis=reduce)
        multipliers, acc_bias, few = _few_valued(multipliers, acc_bias, reach, int(zy), lo)
        acc_bound = reach + np.abs(acc_bias)
        try:
            requant, params = fixed_point.choose(multipliers, int(zy), lo, INT8_MAX, acc_bound=acc_bound)
            params = _clamped(params, few, acc_bias)
            requant = dataclasses.replace(requant, step=bool(few.steps))
            _check_left_to_choose(requant, params, multipliers, acc_bias, reach, int(zy), lo, few)
        except CompileError as exc:
            raise _Refusal(f"its requantisation multipliers cannot be encoded: {exc}") from None
    if np.abs(acc_bias).max(initial=0) >= 2 ** 31:
        raise _Refusal("its bias does not fit int32 at scale s_x*s_w")
    return _Plan(kind, dict(x=x, weight=weight, bias=acc_bias.astype(np.int32), requant=requant,
                            params=params, pad_value=zx, op=op, x_uint8=x_uint8, y_uint8=y_uint8))


#: A bias' this large leaves the fixed-point sequence (products below 2^31) no room for M.
HUGE_BIAS = 1 << 24
#: How far (LSB) `fixed_point.choose` may put such a channel off the real multiplier: 1, the
#: agreement every offloaded layer keeps with onnxruntime.
HUGE_BIAS_LSB = 1


@dataclass
class _FewValued:
    """Channels re-encoded by `_few_valued`: {channel: (n0, n0 + 1)} clamp bounds of the
    sequence, and {channel: t2} where a third value n0 + 2 starts (the output step)."""
    bounds: dict
    steps: dict


def _few_valued(mult, bias, reach, zy: int, lo: int) -> tuple:
    """(multipliers, biases, _FewValued): the channels that output at most three values
    re-encoded exactly.

    quantize_static keeps a bias in int32 by widening the weight scales when the input's scale
    is tiny (GoogLeNet's and ShuffleNet's classifiers at 64x64 with random weights: 3e-14), so a
    channel may have M = 3e-8 and bias' near 2^31: no fixed-point encoding fits. Over the
    channel's accumulators (|acc| <= reach) its output clip(round(M (acc + bias')) + zy) then
    takes a few values n0, n0 + 1, n0 + 2, stepping at acc = t1 and t2 (exact arithmetic):
    M' = 1, bias'' = n0 + 1 - t1 and the sequence's clamp to [n0, n0 + 1] (`_clamped`) give the
    first step; the output step [acc >= t2] (ChannelParams.s_*) the second. Over +-reach only
    these steps exist, so every accumulator gives the same output. (A fixed-point M' cannot
    place both steps: they lie 1/M ~ 2^24 apart, which needs 24 bits of M' where the products
    leave 13.) Only channels whose bias' exceeds HUGE_BIAS are touched; four values or more
    are left to `fixed_point.choose`, and `_check_left_to_choose` holds its encoding to them."""
    mult, bias, reach = (np.array(v, np.float64) for v in np.broadcast_arrays(mult, bias, reach))
    done = _FewValued({}, {})
    for c in _huge_bias(mult, bias):
        real = _RealChannel(mult[c], bias[c], zy, lo)
        r = int(reach[c])
        n0, n1 = real.out(-r), real.out(r)
        if n1 - n0 > 2:
            continue
        mult[c], bias[c], done.bounds[int(c)] = 1.0, n0 + 1 - min(real.first(n0), r + 1), (n0, n0 + 1)
        if n1 - n0 == 2:
            done.steps[int(c)] = real.first(n0 + 1)
    return mult, bias, done


def _huge_bias(mult, bias) -> np.ndarray:
    """The channels `_few_valued` looks at: bias' above HUGE_BIAS, a multiplier above 0."""
    return np.flatnonzero((np.abs(bias) > HUGE_BIAS) & (mult > 0))


class _RealChannel:
    """One channel's output under its real multiplier M and bias', in exact arithmetic, before
    the zero point and clipped one past where the output clips (`out`), and where it steps."""

    def __init__(self, mult: float, bias: float, zy: int, lo: int):
        self.m, self.b = Fraction(float(mult)), int(bias)
        self.low, self.high = lo - zy, INT8_MAX - zy

    def out(self, acc: int) -> int:
        return min(max(math.floor(self.m * (acc + self.b) + Fraction(1, 2)), self.low - 1), self.high + 1)

    def first(self, n: int) -> int:
        """The least accumulator whose output exceeds n (it may lie past the reach)."""
        return math.ceil((n + Fraction(1, 2)) / self.m - self.b)


def _check_left_to_choose(requant, params, mult, bias, reach, zy: int, lo: int, few: _FewValued) -> None:
    """Refuse (CompileError) a channel with bias' above HUGE_BIAS that `_few_valued` left to
    `fixed_point.choose` (four output values or more) where the encoding is more than
    `HUGE_BIAS_LSB` off the real multiplier: its reach leaves the multiplier too few bits.
    Checked on both sides of every step of the real output and at both ends of the range: both
    outputs are monotone in the accumulator, so the largest difference is at one of them."""
    mult, bias, reach = np.broadcast_arrays(mult, bias, reach)
    for c in _huge_bias(mult, bias):
        if int(c) in few.bounds:
            continue
        real, r = _RealChannel(mult[c], bias[c], zy, lo), int(reach[c])
        steps = [real.first(n) for n in range(real.out(-r), real.out(r))]
        points = [-r, r] + steps + [t - 1 for t in steps]
        acc = np.array(points, np.int64)
        one = fixed_point.ChannelParams(*(v[c:c + 1] for v in params.arrays()))
        got = fixed_point.requantize_ref(acc + int(bias[c]), requant, one, axis=0).astype(np.int64)
        want = np.clip(np.array([real.out(int(a)) for a in points]) + zy, lo, INT8_MAX)
        worst = int(np.argmax(np.abs(got - want)))
        if abs(int(got[worst] - want[worst])) > HUGE_BIAS_LSB:
            raise CompileError(f"channel {int(c)} (multiplier {mult[c]:.3g}, bias' {int(bias[c])}, "
                               f"{real.out(r) - real.out(-r) + 1} output values) is encoded "
                               f"{abs(int(got[worst] - want[worst]))} LSB off the real multiplier at "
                               f"accumulator {points[worst]}: its reach leaves the multiplier too few bits")


def _clamped(params: fixed_point.ChannelParams, few: _FewValued, bias) -> fixed_point.ChannelParams:
    """`params` with the clamp bounds of `_few_valued`'s channels, and its output steps
    [acc >= t2] = clamp(acc + bias'' + s_bias, 0, 1) where there are any (0 elsewhere)."""
    a_min, a_max = params.a_min.copy(), params.a_max.copy()
    for c, (first, last) in few.bounds.items():
        a_min[c], a_max[c] = first, last
    if not few.steps:
        return dataclasses.replace(params, a_min=a_min, a_max=a_max)
    s_bias, s_max = np.zeros_like(a_min), np.zeros_like(a_max)
    for c, t2 in few.steps.items():
        s_bias[c], s_max[c] = 1 - t2 - int(bias[c]), 1
    return dataclasses.replace(params, a_min=a_min, a_max=a_max, s_bias=s_bias, s_min=np.zeros_like(a_min),
                               s_max=s_max)


def _common_pow2_shift(multipliers: np.ndarray) -> int | None:
    """n when every multiplier is the same 2^-n with 0 <= n <= 31, else None."""
    first = float(multipliers[0])
    if not np.all(multipliers == first):
        return None
    try:
        return _pow2_shift(first, "multiplier")
    except _Refusal:
        return None


def _plan_add(g: _Graph, q, add, body, relu_var):
    """A residual add: the power-of-two form where the scales allow it (ratios 2^k, zero points
    0), else the fixed-point form with zero points and any scales (requantisation.add)."""
    _single_use(g, body, relu_var)
    (a, sa, za, _), (b, sb, zb, _) = (_dq_input(g, arg, "operand", zero_point_ok=True) for arg in add.args)
    sy, zy = _scalar(g, q.args[1], "output scale"), int(_scalar(g, q.args[2], "output zero point"))
    lo = max(INT8_MIN, zy) if relu_var is not None else INT8_MIN   # a ReLU clips at the real zero
    try:
        if za or zb or zy:
            raise _Refusal("zero points")
        ka = -_pow2_exponent(sa / sy, "operand scale / output scale")
        kb = -_pow2_exponent(sb / sy, "operand scale / output scale")
        low = min(ka, kb, 0)
        params = rq_add.AddParams(ka - low, kb - low, -low, lo, INT8_MAX)
        rq_add.check_params(params)
        return _Plan("add", dict(a=a, b=b, params=params))
    except (_Refusal, CompileError):
        pass
    try:
        r, (m_a, m_b) = fixed_point.choose_sum([sa / sy, sb / sy], rq_add.OPERAND_REACH, zy, lo, INT8_MAX)
        params = rq_add.ScaledAddParams(za, zb, m_a, m_b, r)
        rq_add.check_params(params)
    except CompileError as exc:
        raise _Refusal(f"its scales do not fit the integer add: {exc}") from None
    return _Plan("add", dict(a=a, b=b, params=params))


def _plan_concat(g: _Graph, q, concat, body, relu_var):
    """A channel Concat of quantised tensors: each input in the output's scale and zero point
    is taken as it is, each other one moved into them by a rescale (requantisation.add's
    choose_rescale: the real multiplier's result on every int8 value); a ReLU
    after the Concat raises the clip's floor (an input it would clip is rescaled by 1)."""
    _single_use(g, body, relu_var)
    fields = g.val(concat.args[0])
    if not isinstance(fields, relax.Tuple):
        raise _Refusal("its inputs are a tuple variable, not a list of tensors")
    try:
        shapes = [static_shape(f) for f in fields.fields]
    except GraphError as exc:
        raise _Refusal(str(exc)) from None
    if len(shapes[0]) != 4 or int(concat.attrs.axis) not in (1, -3):
        raise _Refusal(f"a concat along axis {int(concat.attrs.axis)} of {len(shapes[0])}-d tensors: "
                       "the accelerator writes channel slices of NCHW tensors")
    sy, zy = _scalar(g, q.args[1], "output scale"), int(_scalar(g, q.args[2], "output zero point"))
    lo = max(INT8_MIN, zy) if relu_var is not None else INT8_MIN
    inputs = []
    for field in fields.fields:
        x, sx, zx, _ = _dq_input(g, field, "input", zero_point_ok=True)
        if (sx, zx, lo) == (sy, zy, INT8_MIN):
            inputs.append((x, None))
            continue
        try:
            params = rq_add.choose_rescale(zx, sx / sy, zy, lo, INT8_MAX)
            rq_add.check_params(params)
        except CompileError as exc:
            raise _Refusal(f"an input's scale does not fit the rescale: {exc}") from None
        inputs.append((x, params))
    return _Plan("concat", dict(inputs=inputs, axis=int(concat.attrs.axis)))


def _pool_window(pool, h: int, w: int) -> tuple:
    """(k, stride, pad) of an average pool (avg_pool2d, or a global mean over H and W), or refuse
    what the depthwise form cannot hold exactly."""
    if _op(pool) == "relax.mean":
        axes = sorted(int(a) % 4 for a in pool.attrs.axis)
        if axes != [2, 3]:
            raise _Refusal(f"a mean over axes {axes}: only the global average pool (over H and W)")
        if h != w:
            raise _Refusal(f"a global average pool over {h}x{w}: the accelerator's windows are square")
        return h, 1, 0
    a = pool.attrs
    size, strides, pads = _ints(a.pool_size), _ints(a.strides), _ints(a.padding)
    if len(set(size)) != 1 or len(set(strides)) != 1 or len(set(pads)) != 1 or set(_ints(a.dilation)) != {1} \
            or a.layout != "NCHW":
        raise _Refusal(f"window {size}, strides {strides}, padding {pads}: square, equal on all sides, "
                       "undilated NCHW windows only")
    k, stride, pad = size[0], strides[0], pads[0]
    if pad and not a.count_include_pad:
        raise _Refusal("count_include_pad=0 with padding: the divisor changes at the borders")
    if a.ceil_mode and any((d + 2 * pad - k) % stride for d in (h, w)):
        raise _Refusal("ceil_mode adds partial windows at the border, whose divisor differs")
    return k, stride, pad


def _ints(values) -> list:
    return [int(v) for v in values]


def static_shape(e) -> tuple:
    """The dims of a tensor's shape, or a GraphError where TVM's frontend left them unknown."""
    shape = e.ty.shape
    if shape is None or not all(isinstance(d, (int, tvm.tirx.IntImm)) for d in shape):
        raise GraphError(f"its input's shape {e.ty} is not known when the graph is built (a Slice or "
                         "Reshape computed from Shape ops, as torch writes x.chunk; "
                         "onnxruntime.quantization.quant_pre_process on the float model folds them)")
    return tuple(int(d) for d in shape)


def _plan_avg_pool(g: _Graph, q, pool):
    """An average pool as the integer graph computes it: the window sum is a depthwise conv of
    ones (its padding holds the input's zero point, the real zero), then the fixed-point
    requantisation by s_x / (s_y k^2) with -k^2 zp_x folded into the bias (docs/ops.md)."""
    x, sx, zx, _ = _dq_input(g, pool.args[0], "input", zero_point_ok=True)
    _single_use(g, q.args[0])
    try:
        _, c, h, w = static_shape(x)
    except GraphError as exc:
        raise _Refusal(str(exc)) from None
    k, stride, pad = _pool_window(pool, h, w)
    sy, zy = _scalar(g, q.args[1], "output scale"), int(_scalar(g, q.args[2], "output zero point"))
    count = k * k
    try:
        requant, params = fixed_point.choose(np.full(c, sx / (sy * count)), zy, INT8_MIN, INT8_MAX,
                                             acc_bound=count * rq_add.OPERAND_REACH, ties_even=True)
    except CompileError as exc:
        raise _Refusal(f"its requantisation multiplier cannot be encoded: {exc}") from None
    weight = np.ones((c, 1, k, k), np.int8)
    op = relax.op.nn.conv2d(x, relax.const(weight), strides=[stride, stride], padding=[pad] * 4, groups=c)
    # MnasNet's x.mean([2, 3]) keeps no dims: the pool's (N, C, 1, 1) is reshaped to its shape
    squeeze = None if _op(pool) != "relax.mean" or pool.attrs.keepdims else [int(d) for d in pool.ty.shape]
    return _Plan("conv2d", dict(x=x, weight=weight, bias=np.full(c, -count * zx, np.int32), requant=requant,
                                params=params, pad_value=zx, op=op, x_uint8=False, y_uint8=False,
                                squeeze=squeeze))


def _pow2_exponent(ratio: float, what: str) -> int:
    """e with ratio = 2^-e (any sign), else refuse."""
    exponent = math.log2(ratio)
    if abs(exponent - round(exponent)) > 1e-9:
        raise _Refusal(f"{what} {ratio:.6g} is not a power of two")
    return -round(exponent)


def _plan_same_scale(g: _Graph, q, inner, kind):
    """max_pool2d / reshape / identity between a dequantize and a quantize of the same scale."""
    source = inner.args[0] if kind != "identity" else q.args[0]
    x, sx, zx, _ = _dq_input(g, source, "input", zero_point_ok=True)
    sy, zy = _scalar(g, q.args[1], "output scale"), _scalar(g, q.args[2], "output zero point")
    if (sx, zx) != (sy, zy):
        raise _Refusal(f"input scale/zero point {sx:g}/{zx} and output {sy:g}/{zy:g} differ")
    if kind != "identity":
        _single_use(g, q.args[0])
    return _Plan(kind, dict(x=x, op=inner))


def plan(func) -> tuple[dict, list]:
    """({quantize var: _Plan}, decisions) for every quantised block of `func`."""
    g = _Graph(func)
    plans, decided = {}, {}
    for binding in _bindings(func):
        q = binding.value
        if _op(q) != "relax.quantize":
            continue
        body, relu_var = q.args[0], None
        if g.call(body, "relax.nn.relu") is not None:
            relu_var, body = body, g.val(body).args[0]
        inner = g.val(body)
        name = _op(inner)
        layer_var = body
        try:
            linear = name in ("relax.nn.conv2d", "relax.matmul") or (name == "relax.add" and any(
                _op(g.val(a)) in ("relax.nn.conv2d", "relax.matmul") for a in inner.args))
            if q.attrs.out_dtype not in (("int8", "uint8") if linear else ("int8",)):
                raise _Refusal(f"its output is {q.attrs.out_dtype}; this op writes int8 on the "
                               "accelerator" + (" (uint8 is mapped for conv2d and dense only)"
                                                if q.attrs.out_dtype == "uint8" else ""))
            if name == "relax.add" and not linear:
                plans[binding.var] = _plan_add(g, q, inner, body, relu_var)
            elif linear:
                if name == "relax.add":
                    layer_var = next(a for a in inner.args
                                     if _op(g.val(a)) in ("relax.nn.conv2d", "relax.matmul"))
                plans[binding.var] = _plan_linear(g, q, body, relu_var, relu_var is not None)
            elif name == "relax.concat":
                plans[binding.var] = _plan_concat(g, q, inner, body, relu_var)
            elif name in ("relax.nn.avg_pool2d", "relax.mean") and relu_var is None:
                plans[binding.var] = _plan_avg_pool(g, q, inner)
            elif name == "relax.nn.max_pool2d" and relu_var is None:
                plans[binding.var] = _plan_same_scale(g, q, inner, "max_pool")
            elif name == "relax.reshape" and relu_var is None:
                plans[binding.var] = _plan_same_scale(g, q, inner, "reshape")
                continue
            elif name == "relax.dequantize" and relu_var is None:
                plans[binding.var] = _plan_same_scale(g, q, inner, "identity")
                continue
            else:
                continue
            decided[layer_var] = None
        except _Refusal as why:
            if name in LAYER_OPS:
                decided[layer_var] = str(why)
    decisions, counts = [], {}
    for binding in _bindings(func):
        kind = LAYER_OPS.get(_op(binding.value))
        if kind is None or (kind == "add" and binding.var not in decided):
            continue
        index = counts[kind] = counts.get(kind, 0) + 1
        reason = decided.get(binding.var, "not quantised: no QuantizeLinear/DequantizeLinear around it")
        decisions.append(Decision(f"{kind}{index}", kind, binding.var in decided and reason is None,
                                  reason))
    return plans, decisions


@mutator
class _Rewriter(PyExprMutator):
    """Emits each planned quantize binding's integer replacement; the rest is copied."""

    def __init__(self, mod, plans):
        super().__init__(mod)
        self.plans = plans

    def visit_var_binding_(self, binding):
        p = self.plans.get(binding.var)
        if p is None:
            return super().visit_var_binding_(binding)
        new = self.builder_.emit(self._integer(p))
        if p.args.get("squeeze"):
            new = self.builder_.emit(relax.op.reshape(new, p.args["squeeze"]))
        self.set_var_remap(binding.var, new)

    def _integer(self, p: _Plan):
        a = p.args
        if p.kind in ("reshape", "identity", "max_pool"):
            x = self.visit_expr(a["x"])
            if p.kind == "identity":
                return x
            op = a["op"]
            return relax.Call(op.op, [x] + list(op.args[1:]), op.attrs)
        if p.kind == "concat":
            return self._concat(a)
        if p.kind != "add":
            return self._linear(a)
        form, values = rq_relax.add_values(a["params"])
        inputs = {"a": self.visit_expr(a["a"]), "b": self.visit_expr(a["b"])}
        return rq_relax.emit(form, inputs, values, self.builder_.emit)

    def _concat(self, a: dict):
        """The inputs, each through its rescale where it has one, concatenated."""
        items = []
        for x, params in a["inputs"]:
            x = self.visit_expr(x)
            if params is not None:
                x = self.builder_.emit(rq_relax.emit(rq_relax.RESCALE, {"a": x}, rq_relax.rescale_values(params),
                                                     self.builder_.emit))
            items.append(x)
        return relax.op.concat(items, axis=a["axis"])

    def _linear(self, a: dict):
        """conv2d/matmul, + bias, then the power-of-two or the fixed-point requantisation."""
        emit = self.builder_.emit
        x, op = self.visit_expr(a["x"]), a["op"]
        if a["x_uint8"]:
            x = emit(relax.op.astype(_shifted(x, -UINT8_OFFSET), "int8"))
        weight = relax.const(a["weight"], "int8")
        if _op(op) == "relax.nn.conv2d":
            at = op.attrs
            padding = [int(v) for v in at.padding]
            if a["pad_value"] and any(padding):      # the input's real zero is its zero point
                top, left, bottom, right = padding
                x = emit(relax.op.nn.pad(x, [0, 0, 0, 0, top, bottom, left, right],
                                         pad_value=float(a["pad_value"])))
                padding = [0, 0, 0, 0]
            acc = relax.op.nn.conv2d(x, weight, strides=list(at.strides), padding=padding,
                                     dilation=list(at.dilation), groups=int(at.groups),
                                     data_layout=at.data_layout, kernel_layout=at.kernel_layout,
                                     out_layout=at.out_layout, out_dtype="int32")
            shape = (1, -1, 1, 1)
        else:
            acc = relax.op.matmul(x, weight, out_dtype="int32")
            shape = (-1,)

        vectors = (np.asarray(a["bias"]),) + (() if a["params"] is None else a["params"].arrays())
        form, values = rq_relax.linear_values(a["requant"], vectors)
        out = rq_relax.emit(form, {"acc": emit(acc)}, values, emit, shape)
        if not a["y_uint8"]:
            return out
        return relax.op.astype(_shifted(emit(out), UINT8_OFFSET), "uint8")


def _shifted(x, offset: int):
    """x + offset in int16: the CPU-side map between uint8 and int8 views of one tensor."""
    return relax.op.add(relax.op.astype(x, "int16"), relax.const(offset, "int16"))


def lower_qdq(mod) -> tuple:
    """(integer IRModule, decisions): the QDQ blocks of `mod["main"]` as integer ops."""
    if "main" not in mod.get_global_vars() and not any(gv.name_hint == "main" for gv in mod.get_global_vars()):
        raise GraphError("the module has no main function")
    plans, decisions = plan(mod["main"])
    rewriter = _Rewriter(mod, plans)
    func = rewriter.visit_expr(mod["main"])
    out = tvm.IRModule({"main": func})
    out = relax.transform.DeadCodeElimination(["main"])(out)
    return out, decisions
