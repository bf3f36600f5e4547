"""matmul: a matmul of two int8 activations (attention's Q.K^T and weights.V), batched over
its leading dims, on the GEMM core.

QDQ block:  quantize(relu?(matmul(dq(a), dq(b))))  with a (..., M, K), b (..., K, N) ->
            requantised(matmul(a_q, b_q : int32)), the requantisation by s_a s_b / s_y: power of
            two where it is one and the zero points are 0, else the multiply-shift form
            (requantisation.multiply_shift.choose, one multiplier for every channel: REQ)
            Both operands take zero point 0: with zero points the product needs each row's and
            column's sum of activations (neither is a constant to fold into a bias).
Pattern:    matmul(a, b) of two non-constant operands + a requantisation form
Spec:       MatmulSpec(batch, DenseShape, Requant); kernel: the dense kernel of one batch
            (graph.ops.dense.DenseSpec) run once per batch with b's batch as its weight
"""
from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import Any

import numpy as np
from tvm import relax
from tvm.relax.dpl import is_op, wildcard

from vta_sim.errors import CompileError
from requantisation import Requant, multiply_shift, rule
from requantisation import relax as rq_relax
from requantisation.bounds import INT8_MAX, INT8_MIN
from requantisation.relax import linear_pattern, read_linear
from requantisation.rule import PowerOfTwo, rounding_constant
from schedules.op_kernel import OpKernel
from schedules.vta_dense import DenseShape
from vta_sim.config import Config

from ..report import back_to_back
from .base import Emitter, OpRule, QdqBlock, Read, Refusal, Unsupported
from . import dense
from .dense import DenseSpec
from .linear import common_pow2_shift
from .qdq_read import QdqGraph, dq_input, known_shape, output_scale, single_use, static_shape
from .relax_read import ValueOf

@dataclass(frozen=True)
class MatmulSpec:
    batch: tuple[Any, ...]              # the leading dims, alike in both operands
    shape: DenseShape         # one batch: (M, K) . (K, N)
    requant: Requant
    op: str = field(default="matmul", init=False)

    @property
    def batches(self) -> int:
        return math.prod(self.batch)

    @property
    def macs(self) -> int:
        return self.batches * self.shape.macs()

    @property
    def part(self) -> DenseSpec:
        """The dense op of one batch, compiled and cached as a kernel of its own."""
        return DenseSpec(self.shape, self.requant)

    @property
    def parts(self) -> tuple[Any, ...]:
        return (self.part,)

    def describe(self) -> str:
        s = self.shape
        return f"{'x'.join(map(str, self.batch))} x {s.m}x{s.k} . {s.k}x{s.n}"

    def input_shapes(self) -> list[Any]:
        s = self.shape
        return [(*self.batch, s.m, s.k), (*self.batch, s.k, s.n)]

    def misfit(self, cfg: Config, vthreads: int) -> str | None:
        return self.part.misfit(cfg, vthreads)

    def assemble(self, cfg: Config, kernels: dict[Any, Any]) -> "MatmulKernel":
        return MatmulKernel(self, kernels[self.part], cfg)

    def kernel(self, cfg: Config, vthreads: int) -> "MatmulKernel":
        return self.assemble(cfg, {self.part: self.part.kernel(cfg, vthreads)})

    def reference(self, a: np.ndarray, b: np.ndarray, bias: np.ndarray, *channel: np.ndarray) -> np.ndarray:
        acc = np.matmul(a.astype(np.int64), b.astype(np.int64)) + bias.astype(np.int64)
        return rule.reference(acc, self.requant, channel, axis=-1)


@dataclass
class MatmulKernel:
    """A MatmulSpec's run: the dense kernel once per batch (b's batch transposed is its
    weight), back to back; the output is the batches stacked in the operands' leading dims."""
    spec: MatmulSpec
    dense: OpKernel
    cfg: Config

    @property
    def compile_s(self) -> float:
        return self.dense.compile_s

    @property
    def tile_source(self) -> Any:
        return self.dense.tile_source

    def __call__(self, a: np.ndarray, b: np.ndarray, *vectors: np.ndarray, backend: str = "sim",
                 trace: bool = False) -> tuple[Any, ...]:
        s = self.spec.shape
        a3, b3 = a.reshape(-1, s.m, s.k), b.reshape(-1, s.k, s.n)
        outs, results = [], []
        for i in range(len(a3)):
            y, result = self.dense(a3[i], np.ascontiguousarray(b3[i].T), *vectors, backend=backend, trace=trace)
            outs.append(y)
            results.append(result)
        out = np.stack(outs).reshape(*self.spec.batch, s.m, s.n)
        return out, back_to_back(results, self.cfg.name, backend, trace)


@dataclass(frozen=True)
class MatmulPlan:
    a: relax.Expr
    b: relax.Expr
    bias: np.ndarray              # int32 per output column: the rounding constant or 0
    requant: Requant
    channel: tuple[np.ndarray, ...]   # the requantisation's per-channel vectors after the bias


def _matmul_of_activations(g: QdqGraph, call: Any) -> bool:
    return call is not None and g.const(call.args[1]) is None


def claims(g: QdqGraph, body: Any) -> Any:
    return body if _matmul_of_activations(g, g.call(body, "relax.matmul")) else None


def is_layer(g: QdqGraph, call: relax.Call) -> bool:
    return _matmul_of_activations(g, call)


def plan(g: QdqGraph, block: QdqBlock) -> MatmulPlan:
    mm = block.inner
    single_use(g, block.body, block.relu)
    a, sa, za, _ = dq_input(g, mm.args[0], "first operand", zero_point_ok=True)
    b, sb, zb, _ = dq_input(g, mm.args[1], "second operand", zero_point_ok=True)
    if za or zb:
        raise Refusal(f"its operands have zero points {za} and {zb}: a matmul of two activations takes "
                      "symmetric operands on the accelerator (quantise with --quantizer pow2 or "
                      "onnxruntime-symmetric)")
    (*lead_a, _, _), (*lead_b, _, n) = known_shape(a), known_shape(b)
    if lead_a != lead_b:
        raise Refusal(f"leading dims {tuple(lead_a)} and {tuple(lead_b)} differ: broadcasting matmuls stay "
                      "on the CPU")
    sy, zy = output_scale(g, block.q)
    lo = max(INT8_MIN, zy) if block.relu is not None else INT8_MIN
    multiplier = sa * sb / sy
    shift = common_pow2_shift(np.array([multiplier])) if zy == 0 else None
    if shift is not None:
        return MatmulPlan(a, b, np.full(n, rounding_constant(shift), np.int32), PowerOfTwo(shift, lo, INT8_MAX), ())
    try:
        requant, m = multiply_shift.choose(np.full(n, multiplier), zy, lo, INT8_MAX)
    except CompileError as exc:
        raise Refusal(f"its requantisation multiplier cannot be encoded: {exc}") from None
    return MatmulPlan(a, b, np.zeros(n, np.int32), requant, (m,))


def emit(em: Emitter, p: MatmulPlan) -> relax.Expr:
    acc = em.emit(relax.op.matmul(em.visit(p.a), em.visit(p.b), out_dtype="int32"))
    vectors = (p.bias,) + p.channel
    form, values = rq_relax.linear_values(p.requant, vectors)
    return em.root(rq_relax.emit(form, {"acc": acc}, values, em.emit, (-1,)))


def read(root: Any, value_of: ValueOf) -> Read:
    acc, vectors, requant = read_linear(root, value_of)
    (*lead_a, m, k), (*lead_b, _, n) = static_shape(acc.args[0]), static_shape(acc.args[1])
    if lead_a != lead_b:
        raise Unsupported(f"leading dims {tuple(lead_a)} and {tuple(lead_b)} differ")
    for x in acc.args:
        if x.ty.dtype != "int8":
            raise Unsupported(f"a {x.ty.dtype} operand: the accelerator multiplies int8")
    return Read(MatmulSpec(tuple(lead_a), DenseShape(m, k, n), requant), tuple(vectors))


def activations(root: Any, value_of: ValueOf) -> list[Any]:
    return list(read_linear(root, value_of)[0].args)


RULE = OpRule(
    kind="matmul", float_ops=("relax.matmul",), claims=claims, plan=plan, emit=emit,
    relu=True, patterns=lambda main: {"vta.matmul": linear_pattern(is_op("relax.matmul")(wildcard(), wildcard()))},
    read=read, activations=activations, is_layer=is_layer, macs=dense.macs)
