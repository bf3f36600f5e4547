"""What every op of the registry provides (`OpRule`), and the layer stamp that names a layer.

An `OpRule` is one op of the graph level, in one module of `graph/ops/`: how the QDQ pass
recognises and rewrites its block (`claims`, `plan`, `emit`), how the partitioner matches its
integer block (`patterns`) and reads it back into a typed description (`read`: an
`AcceleratorOp`), and what the report says when it stays on the CPU (`cpu_reason`, `macs`).

The QDQ pass stamps the call each layer ends in with the layer's id (`stamp`): a `Span` whose
source name is `vta.layer:<id>:<kind>`. Spans travel with calls through DeadCodeElimination,
FuseOpsByPattern (into the composite function) and RunCodegen, so the partitioner, the codegen
and the report find a layer by its stamp (`stamp_of`) instead of counting ops twice and joining
the counts, and an average pool is an average pool because the pass said so, not because its
weights are all ones.
"""
from __future__ import annotations

import dataclasses
from dataclasses import dataclass
from typing import Any, Callable, NamedTuple, Protocol

import numpy as np
import tvm
from tvm import relax

from vta_sim.config import Config

from ..errors import GraphError

#: The source name prefix of a layer stamp.
STAMP = "vta.layer:"


def op_name(e: Any) -> str | None:
    """The name of the Relax op `e` calls (None: not a call of an op)."""
    return e.op.name if isinstance(e, relax.Call) and isinstance(e.op, tvm.ir.Op) else None


class LayerStamp(NamedTuple):
    """Which layer a call ends: its id (graph order) and its rule's kind."""
    id: int
    kind: str


def stamp(call: relax.Call, layer: LayerStamp) -> relax.Call:
    """`call` carrying `layer`'s stamp."""
    span = tvm.ir.Span(tvm.ir.SourceName(f"{STAMP}{layer.id}:{layer.kind}"), 0, 0, 0, 0)
    return relax.Call(call.op, call.args, call.attrs, call.ty_args, span)


def stamp_of(expr: Any) -> LayerStamp | None:
    """The stamp `expr` carries (None: it carries none)."""
    span = getattr(expr, "span", None) if isinstance(expr, relax.Call) else None
    name = span.source_name.name if span is not None else ""
    if not name.startswith(STAMP):
        return None
    index, kind = name[len(STAMP):].split(":")
    return LayerStamp(int(index), kind)


@dataclass(frozen=True)
class Decision:
    """What the QDQ pass did with one layer, in graph order; `id` is its stamp."""
    id: int                  # its stamp's
    name: str                # the report's name: kind and its index among the kind's layers
    op: str                  # the rule's kind
    integer: bool            # rewritten into integer ops (the accelerator may take it)
    reason: str | None       # why it stays in float on the CPU
    macs: int = 0            # multiply-accumulates of its float call (conv2d and dense)


class Refusal(Exception):
    """Why a matched QDQ block stays in float (becomes `Decision.reason`)."""


class Unsupported(GraphError):
    """Why an integer block the partitioner matched stays on the CPU (an attribute or shape
    VTA-8 does not take): its message is the report's reason."""


@dataclass(frozen=True)
class QdqBlock:
    """One `quantize(relu?(body))` binding of the float graph, as the QDQ pass found it."""
    var: relax.Var              # the quantize binding's var
    q: relax.Call               # the quantize call
    body: relax.Expr            # what is quantised, ReLU stripped
    relu: relax.Var | None      # the ReLU's var, where one sits between body and quantize
    inner: relax.Expr           # the value body is bound to
    layer: relax.Expr           # the var of the layer's own call (a conv under its bias add)


class Emitter(Protocol):
    """What an op's `emit` writes its integer block with (graph.qdq's rewriter)."""

    def visit(self, expr: relax.Expr) -> relax.Expr: ...        # an input in the new graph
    def emit(self, expr: relax.Expr) -> relax.Var: ...          # bind an intermediate call
    def root(self, call: relax.Expr) -> relax.Var: ...          # bind the call the layer ends in, stamped


@dataclass(frozen=True)
class Read:
    """An integer block read back: its typed description and the kernel's trailing inputs
    (weights, per-channel vectors)."""
    spec: "AcceleratorOp"
    constants: tuple[Any, ...] = ()


class AcceleratorOp(Protocol):
    """The typed description every offloaded op provides: what its kernel is compiled for and
    its cache key (shape and requantisation, never the weights, which are kernel inputs)."""

    @property
    def op(self) -> str: ...                 # the report's name of the kind

    @property
    def macs(self) -> int: ...               # multiply-accumulates counted for the model's total

    def describe(self) -> str: ...           # the report's shape column

    def input_shapes(self) -> list[Any]: ...      # the activations' plain shapes, in the kernel's order

    def misfit(self, cfg: Config, vthreads: int) -> str | None: ...   # why it cannot be laid out

    @property
    def kernel(self) -> Callable[[Config, int], Any]: ...     # (cfg, vthreads) -> its compiled kernel, any shape

    @property
    def reference(self) -> Callable[..., np.ndarray]: ...     # numpy int64, activations first


def claims_op(name: str) -> Callable[[Any, Any], Any]:
    """A rule's `claims` for a QDQ block whose body is a call of the Relax op `name`."""
    def claim(g: Any, body: Any) -> Any:
        return body if g.call(body, name) is not None else None
    return claim


def no_macs(call: relax.Call) -> int:
    return 0


def always(g: Any, call: relax.Call) -> bool:
    return True


@dataclass(frozen=True)
class Pow2Quantised:
    """How graph.quantize's power-of-two quantiser wraps one ONNX op type: which inputs are the
    weight and the bias (initializers, quantised to int8/int32 behind a DequantizeLinear), whether
    its output keeps its input's scale (a max does not change the range), and whether a ReLU
    that alone consumes its output is quantised in its place (the ReLU joins the block).
    `activation_weight`: the weight input may be an activation instead (a MatMul of two
    activations), then quantised as one."""
    weight: int | None = None
    bias: int | None = None
    keeps_scale: bool = False
    relu: bool = True
    activation_weight: bool = False


@dataclass(frozen=True)
class OpRule:
    """One op of the graph level. Ops without an integer form here (`plan` None) are report
    layers that stay on the CPU with `cpu_reason`; ops with no report layer (`layer` False,
    the same-scale rearrangements) only have a QDQ rule."""
    kind: str                                       # the report's name
    float_ops: tuple[str, ...]                      # Relax ops of the imported graph that are its layer
    onnx_ops: tuple[str, ...] = ()                  # ONNX node types of the layer (graph.layer_agreement)
    onnx_tensors: Callable[..., Any] | None = None  # (node, producers, consumers) -> (int8 inputs, int8 output),
                                                    # where they are not the node's own (a fused chain)
    claims: Callable[..., Any] | None = None        # (QdqGraph, inner) -> the layer's var, or None
    plan: Callable[..., Any] | None = None          # (QdqGraph, QdqBlock) -> a typed plan, or Refusal
    emit: Callable[..., relax.Expr] | None = None   # (Emitter, plan) -> the block's last expr
    relu: bool = False                              # a ReLU may sit between the op and its quantize
    uint8_out: bool = False                         # the block may quantise to uint8
    patterns: Callable[..., dict[str, Any]] | None = None     # main -> {composite name: DFPattern}
    read: Callable[..., Read] | None = None         # (root, value_of) -> Read, or Unsupported
    activations: Callable[..., list[Any]] | None = None  # (root, value_of) -> the kernel's activations
    is_layer: Callable[..., bool] = always          # (QdqGraph, call): is this call a report layer
    macs: Callable[[relax.Call], int] = no_macs     # of its float call, for a layer on the CPU
    cpu_reason: str = "no accelerator pattern matched"
    layer: bool = True                              # a row of the report
    frontend_refusal: Callable[[relax.Call], str | None] | None = None   # what TVM imports but cannot compile
    pow2: dict[str, Pow2Quantised] = dataclasses.field(default_factory=dict)   # ONNX op -> how graph.quantize wraps it
