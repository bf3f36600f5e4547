"""concat: a channel Concat of int8 tensors, written in place.

QDQ block:  quantize(relu?(concat([dq(x_i)], axis=1)))  ->  concat(x_i or REQ(x_i - z_i, m_i)):
            inputs of another scale or zero point moved into the output's by one REQ
            (requantisation.add.choose_req_sum with one operand: the multiplier in 31 bits); a
            ReLU after the Concat raises the clip's floor
Pattern:    concat of a tuple of (rescale block | anything), one per arity in the model
Spec:       ConcatSpec(shapes, rescales): its output is one DRAM tensor whose channel-block slices
            the producers store (graph.inplace); its parts are RescaleSpec kernels
"""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import numpy as np
from tvm import relax
from tvm.ir.expr import Constant
from tvm.relax.dpl import is_op, is_tuple, wildcard

from vta_sim.errors import CompileError
from requantisation import add as rq_add
from requantisation import relax as rq_relax
from requantisation.add import ReqSumParams, RescaleParams, req_sum_ref, rescale_ref
from requantisation.bounds import INT8_MAX, INT8_MIN
from requantisation.relax import FormMismatch, read_rescale, rescale_pattern
from schedules import vta_eltwise
from schedules.op_kernel import OpKernel
from vta_sim.config import Config

from .. import inplace
from ..report import back_to_back
from .base import claims_op, Emitter, OpRule, QdqBlock, Read, Refusal, Unsupported, op_name
from .qdq_read import QdqGraph, bindings, dq_input, known_shape, output_scale, single_use, static_shape
from .relax_read import ValueOf


@dataclass(frozen=True)
class RescaleSpec:
    """One Concat input moved into the Concat's scale (requantisation.add.RescaleParams) on the
    ALU: a part of a ConcatSpec, compiled and cached as a kernel of its own."""
    shape: tuple[Any, ...]              # (n, c, h, w)
    params: ReqSumParams | RescaleParams
    op: str = field(default="rescale", init=False)
    macs = 0

    def describe(self) -> str:
        p, (_, c, h, w) = self.params, self.shape
        zero = p.zeros[0] if isinstance(p, ReqSumParams) else p.zero
        return f"(a{-zero:+d})M {c}x{h}x{w}"

    def input_shapes(self) -> list[Any]:
        return [self.shape]

    def misfit(self, cfg: Config, vthreads: int) -> str | None:
        return None      # cut into as many flat tiles as it needs, as the add

    def kernel(self, cfg: Config, vthreads: int) -> OpKernel:
        return vta_eltwise.eltwise_kernel(cfg, self.shape, self.params)

    def reference(self, a: np.ndarray) -> np.ndarray:
        return rescaled(a, self.params)


def rescaled(a: np.ndarray, p: ReqSumParams | RescaleParams) -> np.ndarray:
    """A Concat input moved into the output's scale, in numpy int64."""
    return req_sum_ref((a,), p) if isinstance(p, ReqSumParams) else rescale_ref(a, p)


@dataclass(frozen=True)
class ConcatSpec:
    """A Concat along the channels, written in place: its output is one DRAM tensor whose
    channel-block slices the producers store. An input already in the output's scale and zero
    point costs nothing (its producer's STORE goes to its slice); each other input is rescaled
    into them on the ALU (`RescaleSpec`), storing its slice, and its cycles are the Concat's.
    Every slice but the last must start on a channel block (`misfit`)."""
    shapes: tuple[Any, ...]             # (n, c_i, h, w) per input, in order
    rescales: tuple[Any, ...]           # ReqSumParams per input, or None: already in the output's scale
    op: str = field(default="concat", init=False)
    macs = 0

    def describe(self) -> str:
        _, _, h, w = self.shapes[0]
        moved = sum(r is not None for r in self.rescales)
        return f"{'+'.join(str(s[1]) for s in self.shapes)} {h}x{w}, {moved} rescaled"

    def input_shapes(self) -> list[Any]:
        return list(self.shapes)

    def misfit(self, cfg: Config, vthreads: int) -> str | None:
        offset = 0
        for i, (_, c, _, _) in enumerate(self.shapes):
            if offset % cfg.BLOCK_OUT:
                return (f"concat input {i} starts at channel {offset}, not a multiple of the "
                        f"{cfg.BLOCK_OUT}-channel block: its slice of the output is not whole "
                        "channel blocks, so it cannot be stored in place")
            offset += c
        return None

    @property
    def parts(self) -> tuple[Any, ...]:
        """The kernels it runs: one RescaleSpec per distinct rescaled input."""
        return tuple(dict.fromkeys(RescaleSpec(s, r) for s, r in zip(self.shapes, self.rescales)
                                   if r is not None))

    def assemble(self, cfg: Config, kernels: dict[Any, Any]) -> "ConcatKernel":
        """The Concat's kernel from its parts' compiled kernels {RescaleSpec: OpKernel}."""
        return ConcatKernel(self, kernels, cfg)

    def kernel(self, cfg: Config, vthreads: int) -> "ConcatKernel":
        return self.assemble(cfg, {part: part.kernel(cfg, vthreads) for part in self.parts})

    def reference(self, *arrays: np.ndarray) -> np.ndarray:
        return np.concatenate([x if r is None else rescaled(x, r) for x, r in zip(arrays, self.rescales)],
                              axis=1)


@dataclass
class ConcatKernel:
    """A ConcatSpec's run into its DRAM tensor (graph.inplace.ConcatPlacement): each rescaled
    input's program on the accelerator, back to back (their cycles, statistics and traces
    summed), storing its slice; slices their producers stored are not touched (their inputs
    are not even read); the host places the rest. The output is the tensor unpacked."""
    spec: ConcatSpec
    kernels: dict[Any, Any]             # RescaleSpec -> OpKernel
    cfg: Config
    tile_source = None

    @property
    def compile_s(self) -> float:
        return float(sum(k.compile_s for k in self.kernels.values()))

    def rescale(self, j: int) -> OpKernel | None:
        """The program that moves input j into the output's scale (None: it is in it)."""
        r = self.spec.rescales[j]
        return None if r is None else self.kernels[RescaleSpec(self.spec.shapes[j], r)]

    def placement(self) -> inplace.ConcatPlacement:
        """A placement with no producers known (graph.codegen.place_concats adds them)."""
        return inplace.ConcatPlacement.alone(self.cfg, self.spec.shapes,
                                            [self.rescale(j) for j in range(len(self.spec.shapes))])

    def __call__(self, *arrays: np.ndarray, backend: str = "sim", trace: bool = False,
                 placement: inplace.ConcatPlacement | None = None) -> tuple[Any, ...]:
        placement = placement or self.placement()
        results = []
        for j, (x, slot) in enumerate(zip(arrays, placement.slots)):
            kernel = self.rescale(j)
            if slot.writer == inplace.RESCALE and kernel is not None:
                results.append(kernel(x, backend=backend, trace=trace, out=placement.view(j))[1])
            elif slot.writer == inplace.HOST:
                if kernel is not None:
                    x, result = kernel(x, backend=backend, trace=trace)
                    results.append(result)
                placement.place(j, x)
        return placement.output(), back_to_back(results, self.cfg.name, backend, trace)


@dataclass(frozen=True)
class ConcatPlan:
    inputs: tuple[Any, ...]             # (int8 input, RescaleParams or None) per input
    axis: int


def plan(g: QdqGraph, block: QdqBlock) -> ConcatPlan:
    """Each input in the output's scale and zero point taken as it is, each other one moved
    into them by a rescale; an input a ReLU would clip is rescaled by 1."""
    single_use(g, block.body, block.relu)
    concat = block.inner
    fields = g.val(concat.args[0])
    if not isinstance(fields, relax.Tuple):
        raise Refusal("its inputs are a tuple variable, not a list of tensors")
    shapes = [known_shape(f) for f in fields.fields]
    if len(shapes[0]) != 4 or int(concat.attrs.axis) not in (1, -3):
        raise Refusal(f"a concat along axis {int(concat.attrs.axis)} of {len(shapes[0])}-d tensors: "
                      "the accelerator writes channel slices of NCHW tensors")
    sy, zy = output_scale(g, block.q)
    lo = max(INT8_MIN, zy) if block.relu is not None else INT8_MIN
    inputs: list[tuple[Any, ReqSumParams | None]] = []
    for f in fields.fields:
        x, sx, zx, _ = dq_input(g, f, "input", zero_point_ok=True)
        if (sx, zx, lo) == (sy, zy, INT8_MIN):
            inputs.append((x, None))
            continue
        try:
            params = rq_add.choose_req_sum([sx / sy], (zx,), zy, lo, INT8_MAX)
            rq_add.check_params(params)
        except CompileError as exc:
            raise Refusal(f"an input's scale does not fit the rescale: {exc}") from None
        inputs.append((x, params))
    return ConcatPlan(tuple(inputs), int(concat.attrs.axis))


def emit(em: Emitter, p: ConcatPlan) -> relax.Expr:
    """The inputs, each through its rescale where it has one, concatenated."""
    items = []
    for x, params in p.inputs:
        x = em.visit(x)
        if params is not None:
            form, values = rq_relax.rescale_values(params)
            x = em.emit(rq_relax.emit(form, {"a": x}, values, em.emit))
        items.append(x)
    return em.root(relax.op.concat(items, axis=p.axis))


def concat_inputs(root: Any, value_of: ValueOf) -> list[Any]:
    """[(input, RescaleParams or None)] of a channel concat of int8 tensors, each input either
    taken as it is or moved into the output's scale by a RESCALE block."""
    fields = value_of(root.args[0])
    if not isinstance(fields, relax.Tuple):
        raise Unsupported("a concat of a tuple variable: its inputs are not known")
    if int(root.attrs.axis) not in (1, -3) or root.ty.dtype != "int8":
        raise Unsupported(f"a {root.ty.dtype} concat along axis {int(root.attrs.axis)}: the accelerator "
                          "writes int8 channel slices (axis 1)")
    out = []
    for f in fields.fields:
        try:
            out.append(read_rescale(f, value_of))
        except FormMismatch:
            out.append((f, None))
    if any(isinstance(x, Constant) for x, _ in out):
        raise Unsupported("a concat with a constant input: only activations have producers to store slices")
    return out


def read(root: Any, value_of: ValueOf) -> Read:
    inputs = concat_inputs(root, value_of)
    shapes = [static_shape(x) for x, _ in inputs]
    if len({(s[0], *s[2:]) for s in shapes}) != 1 or len(shapes[0]) != 4:
        raise Unsupported(f"a concat of shapes {shapes}: NCHW inputs alike but for the channels")
    return Read(ConcatSpec(tuple(shapes), tuple(p for _, p in inputs)))


def patterns(main: relax.Function) -> dict[str, Any]:
    """A `vta.concat<k>` per concat arity k in `main`: a channel concat whose inputs are taken as
    they are or through their RESCALE block, which joins the region."""
    arities = sorted({len(b.value.args[0].fields) for b in bindings(main)
                      if op_name(b.value) == "relax.concat" and isinstance(b.value.args[0], relax.Tuple)})

    def fields(k: int) -> Any:       # a pattern object per field: a DPL pattern matches one expression
        return is_tuple([rescale_pattern() | wildcard() for _ in range(k)])
    return {f"vta.concat{k}": is_op("relax.concat")(fields(k)) for k in arities}


def unknown_shape(call: relax.Call) -> str | None:
    """TVM 0.27 cannot compile a Concat whose shape its frontend left unknown (its VM codegen
    fails on the un-legalised op), neither for the CPU nor around the accelerator."""
    if call.ty.shape is not None:
        return None
    return (f"a Concat of tensors whose shapes are computed from Shape ops ({call.ty}; torch writes "
            "x.chunk so): TVM cannot compile it; run onnxruntime.quantization.quant_pre_process on the "
            "float model first, which folds them into constants")


RULE = OpRule(
    kind="concat", float_ops=("relax.concat",), onnx_ops=("Concat",), claims=claims_op("relax.concat"),
    plan=plan, emit=emit, relu=True, patterns=patterns, read=read,
    activations=lambda root, value_of: [x for x, _ in concat_inputs(root, value_of)],
    cpu_reason="no accelerator pattern matched (an integer channel concat of int8 NCHW tensors is one)",
    frontend_refusal=unknown_shape)
