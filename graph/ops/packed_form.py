"""The integer form of an op that is one call of a numpy reference (the ALU row ops: softmax,
layer_norm): `call_pure_packed(symbol, x_q, params)`, params one int64 constant.

The CPU build of the integer graph calls the registered packed function, which runs the op's
numpy int64 reference; the partitioner matches the call and reads the constant back into the
op's typed parameters; the accelerator runs the op's ALU program. The reference and the ALU
program compute the same bits by different routes, which every run checks.
"""
from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any, Callable

import numpy as np
import tvm
from tvm import relax
from tvm.relax.dpl import ExternFuncPattern, is_const, is_op, wildcard

from .base import Emitter, Unsupported, op_name
from .relax_read import ValueOf, const


@dataclass(frozen=True)
class PackedPlan:
    """A planned block of a packed form: its int8 input (uint8 moved at emit), its typed
    parameters (with `packed()`), the input's shape."""
    x: relax.Expr
    params: Any
    shape: tuple[int, ...]


@dataclass(frozen=True)
class RowSpec:
    """The spec of an op over the rows of its input's last axis (softmax, layer_norm): its
    report line and shapes; the op's module adds `op`, `misfit`, `kernel` and `reference`."""
    shape: tuple[int, ...]
    params: Any
    macs = 0

    @property
    def rows(self) -> int:
        return math.prod(self.shape[:-1])

    def describe(self) -> str:
        return f"{'x'.join(map(str, self.shape[:-1]))} rows of {self.shape[-1]}"

    def input_shapes(self) -> list[Any]:
        return [self.shape]


@dataclass(frozen=True)
class PackedForm:
    symbol: str                                        # the packed function's name
    reference: Callable[[np.ndarray, np.ndarray], np.ndarray]   # (int8 x, int64 params) -> int8

    def register(self) -> None:
        """The packed function the CPU build calls (registered at import of the op's module)."""
        FORMS[self.symbol] = self

        def call(x: Any, params: Any) -> Any:
            return tvm.runtime.tensor(self.reference(x.numpy(), params.numpy()))
        tvm.register_global_func(self.symbol, call, override=True)

    def emit(self, x: relax.Expr, params: np.ndarray, shape: tuple[int, ...]) -> relax.Call:
        # "int64" named: relax.const keeps an int64 array as int32 otherwise (a softmax's dividend needs 46 bits)
        return relax.call_pure_packed(self.symbol, x, relax.const(np.asarray(params, np.int64), "int64"),
                                      ty_args=relax.TensorType(shape, "int8"))

    def emit_plan(self, em: Emitter, p: PackedPlan) -> relax.Expr:
        """The block's call on the int8 input, bound and stamped."""
        return em.root(self.emit(to_int8(em, em.visit(p.x)), p.params.packed(), p.shape))

    def activations(self, root: Any, value_of: ValueOf) -> list[Any]:
        return [self.read(root, value_of)[0]]

    def pattern(self) -> Any:
        return is_op("relax.call_pure_packed")(ExternFuncPattern(self.symbol), wildcard(), is_const())

    def read(self, root: Any, value_of: ValueOf) -> tuple[Any, np.ndarray]:
        """(x, params) of the call `root` is bound to; Unsupported where it is not one."""
        call = value_of(root)
        func = call.args[0] if op_name(call) == "relax.call_pure_packed" else None
        # FuseOpsByPattern makes the ExternFunc a parameter of the composite (the pattern named it)
        if func is None or (isinstance(func, relax.ExternFunc) and str(func.global_symbol) != self.symbol):
            raise Unsupported(f"not a call of {self.symbol}")
        x = call.args[1]
        if x.ty.dtype != "int8":
            raise Unsupported(f"a {x.ty.dtype} input: the accelerator's {self.symbol} takes int8")
        return x, const(call.args[2])


def to_int8(em: Any, x: relax.Expr) -> relax.Expr:
    """x as int8: a uint8 input moved by -128 (its zero point moves with it)."""
    if x.ty.dtype != "uint8":
        return x
    return em.emit(relax.op.astype(relax.op.subtract(relax.op.astype(x, "int32"), relax.const(128, "int32")), "int8"))


#: The packed forms registered (symbol -> PackedForm), for `packed_calls`.
FORMS: dict[str, PackedForm] = {}


def packed_calls(mod: Any) -> list[str]:
    """The symbols of the packed forms `mod`'s main calls (their CPU side is a numpy callback,
    not TVM code: a build of the integer graph runs them in Python, on the CPU)."""
    found: set[str] = set()

    def visit(e: Any) -> None:
        if op_name(e) == "relax.call_pure_packed" and isinstance(e.args[0], relax.ExternFunc):
            name = str(e.args[0].global_symbol)
            if name in FORMS:
                found.add(name)
    relax.analysis.post_order_visit(mod["main"], visit)
    return sorted(found)
