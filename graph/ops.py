"""Typed descriptions of the integer ops the accelerator runs, read off Relax calls.

One `OpSpec` per layer: its shape and requantisation parameters (what a kernel is compiled for,
and its cache key) and its constants (weights, bias: inputs of the compiled kernel, not part of
the key). `check(root, value_of)` is the one place that says whether VTA-8 takes an op, so the pattern
check of the partitioner and the report's reason for a CPU layer always agree.
"""
from __future__ import annotations

import numpy as np
import tvm
from tvm import relax
from tvm.ir.expr import Constant

from intrinsics.errors import CompileError
from requantisation.add import check_params
from requantisation.relax import FormMismatch, read_add, read_linear, read_rescale
from schedules.vta_conv2d import ConvShape
from schedules.vta_dense import DenseShape
from schedules.vta_pool import PoolShape

from .errors import GraphError
from .qdq import static_shape
from .specs import AddSpec, ConcatSpec, ConvSpec, DenseSpec, PoolSpec



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


def extern_symbol(call) -> str | None:
    """The packed function an offloaded region's call names (None: not such a call)."""
    if op_name(call) == "relax.call_dps_packed" and isinstance(call.args[0], relax.ExternFunc):
        return str(call.args[0].global_symbol)
    return None


def _requantised(root, value_of):
    """(layer call, the rest) of an integer block ending at `root`: a residual add as
    ("add", (operands, params)) or a conv2d/matmul as ("linear", (acc call, vectors, requant)),
    read by requantisation.relax (the forms graph.qdq emits)."""
    try:
        operands, params, total = read_add(root, value_of)
        return total, ("add", (operands, params))
    except FormMismatch:
        acc, vectors, requant = read_linear(root, value_of)
        return acc, ("linear", (vectors, requant))


def read_spec(root, value_of=lambda e: e):
    """(OpSpec, constants) of the integer op whose final call is `root` (see graph.qdq's forms).

    Constants are the kernel's inputs after the activations: the weight and the per-channel
    vectors (bias, then a_min, a_max, m_hi, m_lo for a fixed-point requantisation). `value_of`
    maps a var to its bound value."""
    name = op_name(root)
    if name == "relax.concat":
        inputs = concat_inputs(root, value_of)
        shapes = [static_shape(x) for x, _ in inputs]
        if len({(s[0], *s[2:]) for s in shapes}) != 1 or len(shapes[0]) != 4:
            raise _Unsupported(f"a concat of shapes {shapes}: NCHW inputs alike but for the channels")
        return ConcatSpec(tuple(shapes), tuple(p for _, p in inputs)), ()
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
    acc, (form, read) = _requantised(root, value_of)
    if form == "add":
        operands, params = read
        check_params(params)
        return AddSpec(static_shape(operands[0]), params), ()
    vectors, requant = read
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
    raise GraphError(f"not an accelerator op: {name}({kind})")


def activations(root, value_of) -> list:
    """The activations of the op whose integer block ends at `root`, in its kernel's input order:
    a pool's input, an add's two operands, a conv's (before its explicit pad) or matmul's input."""
    if op_name(root) == "relax.nn.max_pool2d":
        return [root.args[0]]
    if op_name(root) == "relax.concat":
        return [x for x, _ in concat_inputs(root, value_of)]
    acc, (form, read) = _requantised(root, value_of)
    if form == "add":
        return list(read[0])
    x = value_of(acc.args[0])
    return [x.args[0] if op_name(x) == "relax.nn.pad" else acc.args[0]]


def concat_inputs(root, value_of) -> list:
    """[(input, RescaleParams or None)] of a channel concat of int8 tensors, each input either
    taken as it is or moved into the output's scale by a RESCALE block (graph.qdq)."""
    fields = value_of(root.args[0])
    if not isinstance(fields, relax.Tuple):
        raise _Unsupported("a concat of a tuple variable: its inputs are not known")
    if int(root.attrs.axis) not in (1, -3) or root.ty.dtype != "int8":
        raise _Unsupported(f"a {root.ty.dtype} concat along axis {int(root.attrs.axis)}: the accelerator "
                           "writes int8 channel slices (axis 1)")
    out = []
    for field in fields.fields:
        try:
            out.append(read_rescale(field, value_of))
        except FormMismatch:
            out.append((field, None))
    if any(isinstance(x, Constant) for x, _ in out):
        raise _Unsupported("a concat with a constant input: only activations have producers to store slices")
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
    if op_name(root) in ("relax.nn.max_pool2d", "relax.concat"):
        return root
    return _requantised(root, value_of)[0]


def check(root, value_of, misfit=lambda spec: None) -> str | None:
    """Why the op at `root` stays on the CPU (None: VTA-8 runs it), given its graph context;
    `misfit(spec)` says why a readable op's shape does not fit the accelerator's buffers."""
    try:
        spec, _ = read_spec(root, value_of)
    except CompileError as exc:      # an attribute or requantisation range VTA-8 does not take
        return str(exc)
    return misfit(spec)
