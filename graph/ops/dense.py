"""dense: a matmul with constant weights (Gemm, MatMul) and its requantisation on the GEMM core.

QDQ block:  quantize(relu?(matmul(dq(x), dq(W)) (+ bias)))  ->  graph.ops.linear's integer form
Pattern:    matmul(x, W) + a requantisation form (requantisation.relax.linear_pattern)
Spec:       DenseSpec(DenseShape, Requant, rows); kernel schedules.vta_ops.dense_kernel. An input
            with leading dims (a transformer's (B, T, D) tokens) is one dense over B*T rows:
            the rows are independent, so the kernel sees (B*T, D) and the host reshapes.
"""
from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import Any

import numpy as np
from tvm import relax
from tvm.relax.dpl import is_const, is_op, wildcard

from requantisation import Requant, rule
from requantisation.relax import linear_pattern, read_linear
from schedules import vta_ops
from schedules import vta_workloads as wl
from schedules.op_kernel import OpKernel
from schedules.vta_dense import DENSE, DenseShape
from vta_sim.config import Config

from . import linear
from .base import Pow2Quantised, Emitter, OpRule, QdqBlock, Read
from .host_padding import layout_refusal, viewed
from .qdq_read import QdqGraph, static_shape
from .relax_read import ValueOf, const


@dataclass(frozen=True)
class DenseSpec:
    shape: DenseShape           # m: every row of the input, its leading dims folded
    requant: Requant
    rows: tuple[int, ...] = ()  # the input's dims before K where it has more than one (tokens)
    op: str = field(default="dense", init=False)

    @property
    def macs(self) -> int:
        return self.shape.macs()

    def describe(self) -> str:
        s = self.shape
        return f"{'x'.join(map(str, self.rows or (s.m,)))}x{s.k} . {s.k}x{s.n}"

    def input_shapes(self) -> list[Any]:
        return [(*(self.rows or (self.shape.m,)), self.shape.k)]

    def misfit(self, cfg: Config, vthreads: int) -> str | None:
        return layout_refusal(lambda: DENSE.choose_tiles(cfg, self.shape, vthreads, self.requant))

    def kernel(self, cfg: Config, vthreads: int) -> OpKernel:
        s = self.shape
        kernel = vta_ops.dense_kernel(cfg, s.m, s.k, s.n, self.requant, vthreads=vthreads, row_term=s.row_term)
        return viewed(kernel, [(s.m, s.k)], (*self.rows, s.n)) if self.rows else kernel

    def reference(self, x: np.ndarray, w: np.ndarray, b: np.ndarray, *channel: np.ndarray) -> np.ndarray:
        return rule.reference(wl.dense_acc(x, w, b), self.requant, channel, axis=-1)


def accumulate(em: Emitter, x: relax.Expr, weight: relax.Expr, p: linear.LinearPlan) -> relax.Expr:
    return relax.op.matmul(x, weight, out_dtype="int32")


def plan(g: QdqGraph, block: QdqBlock) -> linear.LinearPlan:
    return linear.plan(g, block, -1, accumulate, (-1,))


def read(root: Any, value_of: ValueOf) -> Read:
    acc, vectors, requant = read_linear(root, value_of)
    x, wgt = acc.args
    weight = const(wgt)                       # (K, N)
    *rows, k = static_shape(x)
    shape = DenseShape(math.prod(rows), k, weight.shape[1])
    return Read(DenseSpec(shape, requant, tuple(rows) if len(rows) > 1 else ()),
                (np.ascontiguousarray(weight.T), *vectors))


def activations(root: Any, value_of: ValueOf) -> list[Any]:
    return [read_linear(root, value_of)[0].args[0]]


def macs(call: relax.Call) -> int:
    """Multiply-accumulates of a matmul call from its shapes (0 where TVM left them unknown)."""
    if call.ty.shape is None:
        return 0
    return int(np.prod([int(d) for d in call.ty.shape])) * int(call.args[0].ty.shape[-1])


RULE = OpRule(
    kind="dense", float_ops=("relax.matmul",), onnx_ops=("Gemm", "MatMul"),
    claims=linear.claims("relax.matmul"), plan=plan, emit=linear.emit, relu=True, uint8_out=True,
    patterns=lambda main: {"vta.dense": linear_pattern(is_op("relax.matmul")(wildcard(), is_const()))},
    read=read, activations=activations, macs=macs,
    pow2={"Gemm": Pow2Quantised(weight=1, bias=2), "MatMul": Pow2Quantised(weight=1, activation_weight=True)})
