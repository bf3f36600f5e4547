"""Reading a QDQ block of the float graph: what each quantised tensor's scale and zero point
are, seen through DequantizeLinear/Reshape/Transpose, with the reason a block cannot be mapped.

Every op's `plan` (graph/ops/*.py) reads its block with these and raises `Refusal` naming what
does not fit; graph.qdq turns the refusal into the layer's `Decision.reason`.
"""
from __future__ import annotations

import math
from typing import Any, Iterator

import numpy as np
import tvm
from tvm import relax, tirx
from tvm.ir.expr import Constant

from ..errors import GraphError
from .base import Refusal, op_name

#: uint8 x with zero point z is int8 x - 128 with zero point z - 128.
UINT8_OFFSET = 128


def bindings(func: relax.Function) -> Iterator[Any]:
    for block in func.body.blocks:
        yield from block.bindings


#: Elementwise ops of an importer's index arithmetic that `QdqGraph.const` evaluates (and take).
_INDEX_OPS: dict[str, Any] = {"relax.less": np.less, "relax.add": np.add, "relax.subtract": np.subtract,
                              "relax.where": lambda c, a, b: np.where(c.astype(bool), a, b), "relax.take": None}


class QdqGraph:
    """The function's bindings: what each var is bound to and how often it is used."""

    def __init__(self, func: relax.Function):
        self.value = dict(relax.analysis.get_var2val(func))
        self.uses: dict[Any, Any] = {}
        for binding in bindings(func):
            for v in relax.analysis.free_vars(binding.value):
                self.uses[v] = self.uses.get(v, 0) + 1
        for v in relax.analysis.free_vars(func.body.body):
            self.uses[v] = self.uses.get(v, 0) + 1

    def val(self, e: Any) -> Any:
        """The expression a var is bound to (or the expression itself)."""
        return self.value.get(e, e) if isinstance(e, relax.Var) else e

    def call(self, e: Any, name: str) -> relax.Call | None:
        v = self.val(e)
        return v if op_name(v) == name else None

    def const(self, e: Any) -> np.ndarray | None:
        """The float64 value of a constant, seen through dequantize/reshape/permute_dims."""
        v = self.val(e)
        if isinstance(v, Constant):
            return np.asarray(v.value.numpy(), np.float64)
        name = op_name(v)
        if name == "relax.dequantize":
            data, scale, zero = (self.const(a) for a in v.args)
            if data is None or scale is None or zero is None:
                return None
            return np.asarray((data - _axis_view(zero, v, data.ndim)) * _axis_view(scale, v, data.ndim))
        if name == "relax.reshape":
            inner = self.const(v.args[0])
            return None if inner is None else inner.reshape([int(d) for d in v.args[1].values])
        if name == "relax.permute_dims":
            inner = self.const(v.args[0])
            axes = None if v.attrs.axes is None else [int(a) for a in v.attrs.axes]
            return None if inner is None else np.transpose(inner, axes)
        return self._index_arithmetic(v, name)

    def _index_arithmetic(self, v: Any, name: str | None) -> np.ndarray | None:
        """The value of the small integer arithmetic TVM's importer writes for an index (a
        Gather's, normalised as where(i < 0, i + dim, i) with dim from a static shape)."""
        if name == "relax.shape_of":
            shape = getattr(v.args[0].ty, "shape", None)
            dims = getattr(shape, "values", None)
            if dims is None or not all(isinstance(d, tirx.IntImm) for d in dims):
                return None
            return np.array([int(d) for d in dims], np.float64)
        if name == "relax.shape_to_tensor":
            return self.const(v.args[0])
        if name not in _INDEX_OPS:
            return None
        args = [self.const(a) for a in v.args]
        if any(a is None for a in args):
            return None
        values = [a for a in args if a is not None]
        if name == "relax.take":
            return np.asarray(np.take(values[0], values[1].astype(np.int64), axis=int(v.attrs.axis), mode="wrap"),
                              np.float64)
        return np.asarray(_INDEX_OPS[name](*values), np.float64)

    def quantised_activation(self, e: Any) -> bool:
        """`dequantize(x_q)` of an activation (not of a constant)."""
        dq = self.call(e, "relax.dequantize")
        return dq is not None and self.const(dq.args[0]) is None


def _axis_view(per_axis: np.ndarray, dq: relax.Call, ndim: int) -> np.ndarray:
    """A per-axis scale/zero point shaped to broadcast along the dequantize's axis."""
    if per_axis.size == 1:
        return per_axis.reshape(())
    shape = [1] * ndim
    shape[int(dq.attrs.axis) % ndim] = per_axis.size
    return per_axis.reshape(shape)


def scalar(g: QdqGraph, e: Any, what: str) -> float:
    value = g.const(e)
    if value is None:
        raise Refusal(f"the {what} is not a constant")
    if value.size != 1:
        raise Refusal(f"per-channel {what}s ({value.size} values); the accelerator requantises "
                      "with one power-of-two scale per tensor")
    return float(value.reshape(()))


def output_scale(g: QdqGraph, q: relax.Call) -> tuple[float, int]:
    """(scale, zero point) of a quantize call."""
    return scalar(g, q.args[1], "output scale"), int(scalar(g, q.args[2], "output zero point"))


def dq_input(g: QdqGraph, e: Any, what: str, zero_point_ok: bool = False,
             uint8_ok: bool = False) -> tuple[Any, float, int, bool]:
    """(x_q var, scale, zero point, uint8) of `dequantize(x_q, scale, zp)`, else refuse with the
    reason (a zero point only where `zero_point_ok`). A uint8 x_q (where `uint8_ok`) is read as
    int8 x_q - 128 with zero point zp - 128: the same real values."""
    dq = g.call(e, "relax.dequantize")
    if dq is None:
        raise Refusal(f"its {what} is not quantised (no DequantizeLinear in front of it)")
    scale = scalar(g, dq.args[1], f"{what} scale")
    zero = scalar(g, dq.args[2], f"{what} zero point")
    if zero != 0 and not zero_point_ok:
        raise Refusal(f"the {what} has zero point {zero:g}; this op takes symmetric (zero point 0) "
                      "tensors on the accelerator")
    dtype = dq.args[0].ty.dtype
    if dtype == "uint8" and uint8_ok:
        return dq.args[0], scale, int(zero) - UINT8_OFFSET, True
    if dtype != "int8":
        raise Refusal(f"the {what} is {dtype}; this op takes int8 on the accelerator"
                      + (" (uint8 is mapped for conv2d and dense only)" if dtype == "uint8" else ""))
    return dq.args[0], scale, int(zero), False


def pow2_exponent(ratio: float, what: str) -> int:
    """e with ratio = 2^-e (any sign), else refuse naming the ratio."""
    exponent = math.log2(ratio) if ratio > 0 else float("nan")
    if not math.isfinite(exponent) or abs(exponent - round(exponent)) > 1e-9:
        raise Refusal(f"{what} {ratio:.6g} is not a power of two")
    return -round(exponent)


def pow2_shift(multiplier: float, what: str) -> int:
    """n with multiplier = 2^-n, 0 <= n <= 31, else refuse naming the multiplier."""
    shift = pow2_exponent(multiplier, what)
    if not 0 <= shift <= 31:
        raise Refusal(f"{what} {multiplier:.6g} = 2^{-shift} needs a shift outside 0..31")
    return shift


def single_use(g: QdqGraph, *vars_: Any) -> None:
    for v in vars_:
        if isinstance(v, relax.Var) and g.uses.get(v, 0) != 1:
            raise Refusal("an intermediate float value of the block is used elsewhere")


def ints(values: Any) -> list[Any]:
    return [int(v) for v in values]


def static_shape(e: Any) -> tuple[Any, ...]:
    """The dims of a tensor's shape, or a GraphError where TVM's frontend left them unknown."""
    shape = e.ty.shape
    if shape is None or not all(isinstance(d, (int, tvm.tirx.IntImm)) for d in shape):
        raise GraphError(f"its input's shape {e.ty} is not known when the graph is built (a Slice or "
                         "Reshape computed from Shape ops, as torch writes x.chunk; "
                         "onnxruntime.quantization.quant_pre_process on the float model folds them)")
    return tuple(int(d) for d in shape)


def known_shape(e: Any) -> tuple[Any, ...]:
    """static_shape, a Refusal where it is unknown."""
    try:
        return static_shape(e)
    except GraphError as exc:
        raise Refusal(str(exc)) from None
