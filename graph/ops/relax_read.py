"""Reading the integer graph the QDQ pass wrote: bound values, constants and attributes, for
each op's `read` (graph/ops/*.py) and the partitioner."""
from __future__ import annotations

from typing import Any, Callable

import numpy as np
from tvm import relax
from tvm.ir.expr import Constant

from ..errors import GraphError
from .base import Unsupported, op_name

ValueOf = Callable[[Any], Any]


def value_lookup(func: relax.Function, extra: dict[Any, Any] | None = None) -> ValueOf:
    """e -> the value a var of `func` is bound to (looking in `extra` first), else e itself."""
    var2val = dict(relax.analysis.get_var2val(func))

    def value_of(e: Any) -> Any:
        if not isinstance(e, relax.Var):
            return e
        if extra is not None and e in extra:
            return extra[e]
        return var2val.get(e, e)
    return value_of


def extern_symbol(call: Any) -> str | None:
    """The packed function an offloaded region's call names (None: not such a call)."""
    if op_name(call) == "relax.call_dps_packed" and isinstance(call.args[0], relax.ExternFunc):
        return str(call.args[0].global_symbol)
    return None


def const(e: Any) -> np.ndarray:
    if not isinstance(e, Constant):
        raise GraphError(f"expected a constant, got {type(e).__name__}")
    return np.asarray(e.value.numpy())


def explicit_pad(pad_call: relax.Call) -> list[Any]:
    """[top, left, bottom, right] of an NCHW nn.pad that pads only H and W."""
    widths = [int(v) for v in pad_call.attrs.pad_width]
    if any(widths[:4]) or pad_call.attrs.pad_mode != "constant":
        raise Unsupported(f"pad {widths} ({pad_call.attrs.pad_mode}) touches N or C or is not constant")
    return [widths[4], widths[6], widths[5], widths[7]]


def int8_input(x: Any, what: str) -> None:
    if x.ty.dtype != "int8":
        raise Unsupported(f"a {x.ty.dtype} {what}: the accelerator takes int8")
