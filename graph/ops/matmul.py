"""matmul: a matmul of two int8 activations (attention's Q.K^T and weights.V), batched over
its leading dims, on the GEMM core.

QDQ block:  quantize(relu?(matmul(dq(a), dq(b))))  with a (..., M, K), b (..., K, N) ->
            requantised(matmul(a_q, b_q : int32)), the requantisation by s_a s_b / s_y: power of
            two where it is one and the zero points are 0, else the multiply-shift form
            (requantisation.multiply_shift.choose, one multiplier for every channel: REQ).
            uint8 operands and outputs are read as int8 - 128 (their zero points move with them).
Zero points: sum_k (a - z_a)(b - z_b) = a.b + rows + cols, with
            rows[i] = -z_b sum_k a[i, k]   and   cols[j] = -z_a sum_k b[k, j] + K z_a z_b.
            Neither is a constant to fold into a bias: both are sums of activations. The
            integer graph writes them as sums beside the matmul, inside the layer's pattern;
            the kernel computes them on the host as it packs b (O(MK + KN) adds beside the
            GEMM's O(MKN) MACs), adds cols to the bias and rows per output row in the epilogue
            (dense's row term). Symmetric operands (both zero points 0) have neither term.
Pattern:    matmul(a, b) of two non-constant operands (+ rows(a) + cols(b)) + a requantisation form
Spec:       MatmulSpec(batch, DenseShape, Requant, zeros); kernel: the dense kernel of one
            batch (graph.ops.dense.DenseSpec) run once per batch with b's batch as its weight
"""
from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import Any

import numpy as np
from tvm import relax
from tvm.relax.dpl import is_const, is_op, wildcard

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
from .base import Emitter, OpRule, QdqBlock, Read, Refusal, Unsupported, op_name
from . import dense
from .dense import DenseSpec
from .linear import common_pow2_shift
from .packed_form import to_int8
from .qdq_read import UINT8_OFFSET, QdqGraph, dq_input, known_shape, output_scale, single_use, static_shape
from .relax_read import ValueOf, const

@dataclass(frozen=True)
class MatmulSpec:
    batch: tuple[Any, ...]              # the leading dims, alike in both operands
    shape: DenseShape         # one batch: (M, K) . (K, N)
    requant: Requant
    zeros: tuple[int, int] = (0, 0)   # the operands' zero points (int8)
    op: str = field(default="matmul", init=False)

    @property
    def batches(self) -> int:
        return math.prod(self.batch)

    @property
    def macs(self) -> int:
        return self.batches * self.shape.macs()

    @property
    def zero_points(self) -> bool:
        return any(self.zeros)

    @property
    def part(self) -> DenseSpec:
        """The dense op of one batch (with the row term where there are zero points), compiled
        and cached as a kernel of its own."""
        s = self.shape
        return DenseSpec(DenseShape(s.m, s.k, s.n, self.zero_points), self.requant)

    @property
    def parts(self) -> tuple[Any, ...]:
        return (self.part,)

    def describe(self) -> str:
        s = self.shape
        return f"{'x'.join(map(str, self.batch))} x {s.m}x{s.k} . {s.k}x{s.n}"

    def input_shapes(self) -> list[Any]:
        s = self.shape
        return [(*self.batch, s.m, s.k), (*self.batch, s.k, s.n)]

    def terms(self, a: np.ndarray, b: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """(rows (..., M, 1), cols (..., 1, N)) in int64: the zero points' share of the product."""
        za, zb = self.zeros
        rows = -zb * a.astype(np.int64).sum(axis=-1, keepdims=True)
        cols = -za * b.astype(np.int64).sum(axis=-2, keepdims=True) + self.shape.k * za * zb
        return rows, cols

    def misfit(self, cfg: Config, vthreads: int) -> str | None:
        return self.part.misfit(cfg, vthreads)

    def assemble(self, cfg: Config, kernels: dict[Any, Any]) -> "MatmulKernel":
        return MatmulKernel(self, kernels[self.part], cfg)

    def kernel(self, cfg: Config, vthreads: int) -> "MatmulKernel":
        return self.assemble(cfg, {self.part: self.part.kernel(cfg, vthreads)})

    def reference(self, a: np.ndarray, b: np.ndarray, bias: np.ndarray, *channel: np.ndarray) -> np.ndarray:
        za, zb = self.zeros
        acc = np.matmul(a.astype(np.int64) - za, b.astype(np.int64) - zb) + bias.astype(np.int64)
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

    def __call__(self, a: np.ndarray, b: np.ndarray, bias: np.ndarray, *channel: np.ndarray,
                 backend: str = "sim", trace: bool = False) -> tuple[Any, ...]:
        s = self.spec.shape
        a3, b3 = a.reshape(-1, s.m, s.k), b.reshape(-1, s.k, s.n)
        rows, cols = self.spec.terms(a3, b3) if self.spec.zero_points else (None, None)
        outs, results = [], []
        for i in range(len(a3)):
            vectors: tuple[np.ndarray, ...] = (bias, *channel)
            if rows is not None and cols is not None:
                vectors = (int32_vector(bias + cols[i, 0], "bias + cols"), *channel, int32_vector(rows[i, :, 0], "rows"))
            y, result = self.dense(a3[i], np.ascontiguousarray(b3[i].T), *vectors, backend=backend, trace=trace)
            outs.append(y)
            results.append(result)
        out = np.stack(outs).reshape(*self.spec.batch, s.m, s.n)
        return out, back_to_back(results, self.cfg.name, backend, trace)


def int32_vector(x: np.ndarray, what: str) -> np.ndarray:
    """`x` as int32, refused where a value leaves int32 (a zero point's sum of a long row)."""
    if np.abs(x).max(initial=0) >= 2 ** 31:
        raise CompileError(f"matmul: {what} leaves int32 (|max| {int(np.abs(x).max())})")
    return x.astype(np.int32)


@dataclass(frozen=True)
class MatmulPlan:
    a: relax.Expr
    b: relax.Expr
    bias: np.ndarray              # int32 per output column: the rounding constant or 0
    requant: Requant
    channel: tuple[np.ndarray, ...]   # the requantisation's per-channel vectors after the bias
    zeros: tuple[int, int] = (0, 0)   # the operands' zero points (as int8)
    uint8: tuple[bool, bool, bool] = (False, False, False)   # a, b and the output are uint8


def _matmul_of_activations(g: QdqGraph, call: Any) -> bool:
    return call is not None and g.const(call.args[1]) is None


def claims(g: QdqGraph, body: Any) -> Any:
    return body if _matmul_of_activations(g, g.call(body, "relax.matmul")) else None


def is_layer(g: QdqGraph, call: relax.Call) -> bool:
    return _matmul_of_activations(g, call)


def plan(g: QdqGraph, block: QdqBlock) -> MatmulPlan:
    mm = block.inner
    single_use(g, block.body, block.relu)
    a, sa, za, a_uint8 = dq_input(g, mm.args[0], "first operand", zero_point_ok=True, uint8_ok=True)
    b, sb, zb, b_uint8 = dq_input(g, mm.args[1], "second operand", zero_point_ok=True, uint8_ok=True)
    (*lead_a, _, _), (*lead_b, _, n) = known_shape(a), known_shape(b)
    if lead_a != lead_b:
        raise Refusal(f"leading dims {tuple(lead_a)} and {tuple(lead_b)} differ: broadcasting matmuls stay "
                      "on the CPU")
    sy, zy = output_scale(g, block.q)
    y_uint8 = block.q.attrs.out_dtype == "uint8"
    zy -= UINT8_OFFSET if y_uint8 else 0
    lo = max(INT8_MIN, zy) if block.relu is not None else INT8_MIN
    multiplier = sa * sb / sy
    zeros, uint8 = (za, zb), (a_uint8, b_uint8, y_uint8)
    shift = common_pow2_shift(np.array([multiplier])) if zy == 0 else None
    if shift is not None:
        return MatmulPlan(a, b, np.full(n, rounding_constant(shift), np.int32), PowerOfTwo(shift, lo, INT8_MAX), (),
                          zeros, uint8)
    try:
        requant, m = multiply_shift.choose(np.full(n, multiplier), zy, lo, INT8_MAX)
    except CompileError as exc:
        raise Refusal(f"its requantisation multiplier cannot be encoded: {exc}") from None
    return MatmulPlan(a, b, np.zeros(n, np.int32), requant, (m,), zeros, uint8)


def emit(em: Emitter, p: MatmulPlan) -> relax.Expr:
    a, b = (to_int8(em, em.visit(x)) for x in (p.a, p.b))
    acc = em.emit(relax.op.matmul(a, b, out_dtype="int32"))
    za, zb = p.zeros
    if za or zb:
        k = int(a.ty.shape[-1])
        rows = em.emit(relax.op.multiply(em.emit(_sum(a, -1)), relax.const(-zb, "int32")))
        cols = em.emit(relax.op.add(em.emit(relax.op.multiply(em.emit(_sum(b, -2)), relax.const(-za, "int32"))),
                                    relax.const(k * za * zb, "int32")))
        acc = em.emit(relax.op.add(em.emit(relax.op.add(acc, rows)), cols))
    vectors = (p.bias,) + p.channel
    form, values = rq_relax.linear_values(p.requant, vectors)
    out = em.root(rq_relax.emit(form, {"acc": acc}, values, em.emit, (-1,)))
    if not p.uint8[2]:
        return out
    return relax.op.astype(relax.op.add(relax.op.astype(out, "int16"), relax.const(UINT8_OFFSET, "int16")), "uint8")


def _sum(x: relax.Expr, axis: int) -> relax.Expr:
    return relax.op.sum(relax.op.astype(x, "int32"), axis=[axis], keepdims=True)


def _zeros(acc: Any, value_of: ValueOf) -> tuple[Any, tuple[int, int]]:
    """(the matmul call, (z_a, z_b)) of an accumulator, read back from the terms `emit` writes."""
    if op_name(acc) != "relax.add":
        return acc, (0, 0)
    inner = value_of(acc.args[0])
    rows, cols = value_of(inner.args[1]), value_of(acc.args[1])
    cols_scaled = value_of(cols.args[0])
    zb, za = -_scalar(rows.args[1]), -_scalar(cols_scaled.args[1])
    mm = value_of(inner.args[0])
    k = static_shape(mm.args[0])[-1]
    if _scalar(cols.args[1]) != k * za * zb:
        raise Unsupported(f"zero-point terms with constant {_scalar(cols.args[1])}, not K z_a z_b = {k * za * zb}")
    return mm, (za, zb)


def _scalar(e: Any) -> int:
    return int(const(e))


def read(root: Any, value_of: ValueOf) -> Read:
    acc, vectors, requant = read_linear(root, value_of)
    mm, zeros = _zeros(acc, value_of)
    (*lead_a, m, k), (*lead_b, _, n) = static_shape(mm.args[0]), static_shape(mm.args[1])
    if lead_a != lead_b:
        raise Unsupported(f"leading dims {tuple(lead_a)} and {tuple(lead_b)} differ")
    for x in mm.args:
        if x.ty.dtype != "int8":
            raise Unsupported(f"a {x.ty.dtype} operand: the accelerator multiplies int8")
    return Read(MatmulSpec(tuple(lead_a), DenseShape(m, k, n), requant, zeros), tuple(vectors))


def activations(root: Any, value_of: ValueOf) -> list[Any]:
    return list(_zeros(read_linear(root, value_of)[0], value_of)[0].args)


def _pattern() -> Any:
    a, b = wildcard(), wildcard()
    mm = is_op("relax.matmul")(a, b)

    def total(x: Any) -> Any:
        return is_op("relax.sum")(is_op("relax.astype")(x))
    rows = is_op("relax.multiply")(total(a), is_const())
    cols = is_op("relax.add")(is_op("relax.multiply")(total(b), is_const()), is_const())
    return linear_pattern(mm) | linear_pattern(is_op("relax.add")(is_op("relax.add")(mm, rows), cols))


RULE = OpRule(
    kind="matmul", float_ops=("relax.matmul",), claims=claims, plan=plan, emit=emit,
    relu=True, uint8_out=True, patterns=lambda main: {"vta.matmul": _pattern()},
    read=read, activations=activations, is_layer=is_layer, macs=dense.macs)
