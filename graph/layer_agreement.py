"""Each offloaded layer against onnxruntime in isolation (`--compare-onnxruntime`).

Compounding one-step differences over fifty layers can hide an op that rounds differently, so
onnxruntime runs the QDQ model once with every quantised tensor exposed as a graph output; each
accelerator layer then gets onnxruntime's own int8 input tensor and its output (the op's numpy
int64 reference, which the layer's kernel matched bit for bit in the run) is compared with
onnxruntime's int8 tensor for it.

Layers are matched to ONNX nodes by kind and order: the i-th conv2d of the report is the i-th
Conv node, and so on (TVM's frontend keeps the node order; an average pool lowered to a
depthwise conv of ones is still the i-th AveragePool/GlobalAveragePool/ReduceMean; a MatMul of two
activations is a matmul layer, one with a constant weight a dense layer). Where the counts
differ, or a node's tensors are not quantised, the layer's entry says so instead.

`chained` answers the other question, where the final outputs' differences come from: each layer
is fed the outputs the earlier layers computed here (as the accelerator's run chains them), so
the comparison shows where differences enter and how they grow.
"""
from __future__ import annotations

import numpy as np
import onnx

from .fusion import BIAS, JOIN, SCALE
from . import ops


#: ONNX op type -> the report's layer kind (each op's rule names its ONNX ops).
KINDS = ops.onnx_kinds()
#: Ops a layer's output passes through before its QuantizeLinear (folded into the clip).
ACTIVATIONS = ("Relu", "Clip")
#: Ops that only move elements: requantised into their input's own scale and zero point, their
#: int8 output is their int8 input rearranged (Flatten before a classifier).
REARRANGING = ("Flatten", "Reshape", "Squeeze", "Unsqueeze")
UINT8_OFFSET = 128
#: layer_tensors' key for the output of each dense's bias Add (None where it has none), in the
#: order of its "dense" entries.
BIASED = "dense:bias"
#: ... and the scale Mul by a constant behind it (attention's 1/sqrt(d) on Q), through the head
#: split's rearrangements: (the Mul's quantised output, [(op type, perm, output name)]) or None.
SCALED = "dense:scaled"


def _quantised_input(name: str, producers: dict, inits: set) -> str | None:
    """The int8 tensor a DequantizeLinear turns into `name`, if it is an activation's."""
    node = producers.get(name)
    if node is None or node.op_type != "DequantizeLinear" or node.input[0] in inits:
        return None
    return node.input[0]


def _axes(node: onnx.NodeProto, graph: onnx.GraphProto) -> list[int] | None:
    """A reduction's axes: its attribute (opset < 18) or its constant second input."""
    for a in node.attribute:
        if a.name == "axes":
            return list(a.ints)
    if len(node.input) > 1:
        init = next((i for i in graph.initializer if i.name == node.input[1]), None)
        if init is not None:
            return [int(v) for v in onnx.numpy_helper.to_array(init).reshape(-1)]
    return None


def _constant(name: str, producers: dict, inits: set) -> bool:
    """Is `name` an initializer, or one behind a DequantizeLinear (a quantised weight)?"""
    node = producers.get(name)
    return name in inits or (node is not None and node.op_type == "DequantizeLinear" and node.input[0] in inits)


def _quantised_output(name: str, consumers: dict) -> str | None:
    """The QuantizeLinear output `name` ends in (through a ReLU/Clip), if any."""
    for _ in range(len(ACTIVATIONS) + 1):
        users = consumers.get(name, [])
        if len(users) != 1:
            return None
        if users[0].op_type == "QuantizeLinear":
            return users[0].output[0]
        if users[0].op_type not in ACTIVATIONS:
            return None
        name = users[0].output[0]
    return None


def layer_tensors(proto: onnx.ModelProto) -> dict:
    """{kind: [(input tensor names or None, output tensor name or None)]} in node order; adds
    only where both operands are activations (residual adds, as the report counts them)."""
    graph = proto.graph
    inits = {i.name for i in graph.initializer}
    producers = {o: n for n in graph.node for o in n.output}
    consumers: dict = {}
    for n in graph.node:
        for i in n.input:
            consumers.setdefault(i, []).append(n)
    out: dict = {}
    for node in graph.node:
        kind = KINDS.get(node.op_type)
        if kind is None:
            continue
        if node.op_type == "MatMul" and not _constant(node.input[1], producers, inits):
            kind = "matmul"          # two activations (attention's Q.K^T, weights.V): graph.ops.matmul
        if node.op_type == "ReduceMean" and _axes(node, graph) == [1]:
            kind = "mean"            # over the tokens of (N, T, D): graph.ops.token_mean
        if node.op_type == "Gelu":   # graph.ops.univariate: one function per `approximate`
            approximate = next((a.s for a in node.attribute if a.name == "approximate"), b"none")
            kind = "gelu_tanh" if approximate == b"tanh" else "gelu_erf"
        fused = ops.BY_KIND[kind].onnx_tensors
        if fused is not None:
            out.setdefault(kind, []).append(fused(node, producers, consumers))
            continue
        operands = node.input[:2] if kind in ("add", "matmul") else node.input if kind == "concat" else node.input[:1]
        inputs = [_quantised_input(i, producers, inits) for i in operands]
        if kind == "add" and not all(producers.get(i) is not None and producers[i].op_type == "DequantizeLinear"
                                     and producers[i].input[0] not in inits for i in operands):
            continue
        output = _quantised_output(node.output[0], consumers)
        out.setdefault(kind, []).append((None if None in inputs else inputs, output))
        if kind == "dense":
            biased = _biased(output, producers, consumers, inits)
            out.setdefault(BIASED, []).append(biased)
            out.setdefault(SCALED, []).append(_scaled(biased or output, producers, consumers, inits))
    return out


def _scaled(name: str | None, producers: dict, consumers: dict, inits: set) -> tuple | None:
    """(the quantised output of a Mul by a constant that `name` reaches through quantised
    rearrangements, those rearrangements in order), if it reaches one (graph.ops.scale)."""
    steps: list = []
    for _ in range(8):
        users = consumers.get(name, []) if name else []
        if len(users) != 1 or users[0].op_type != "DequantizeLinear":
            return None
        nxt = consumers.get(users[0].output[0], [])
        if len(nxt) != 1:
            return None
        node = nxt[0]
        if node.op_type == "Mul":
            other = [i for i in node.input if i != users[0].output[0]]
            if len(other) != 1 or not _constant(other[0], producers, inits):
                return None
            out = _quantised_output(node.output[0], consumers)
            return (out, steps) if out else None
        if node.op_type not in REARRANGING + ("Transpose",):
            return None
        name = _quantised_output(node.output[0], consumers)
        perm = next((list(a.ints) for a in node.attribute if a.name == "perm"), None)
        steps.append((node.op_type, perm, name))
    return None


def _rearranged(y: np.ndarray, steps: list, values: dict) -> np.ndarray:
    """`y` moved as the ONNX rearrangements `steps` move it (shapes from onnxruntime's tensors)."""
    for op, perm, out in steps:
        y = np.transpose(y, perm) if op == "Transpose" else y.reshape(values[out].shape)
    return y


def _biased(name: str | None, producers: dict, consumers: dict, inits: set) -> str | None:
    """The quantised output of the bias Add after a dense's quantised output `name` (Q, DQ, Add
    of a constant, Q: torch's MatMul and Add as quantize_static writes them), if there is one."""
    users = consumers.get(name, []) if name else []
    if len(users) != 1 or users[0].op_type != "DequantizeLinear":
        return None
    adds = consumers.get(users[0].output[0], [])
    if len(adds) != 1 or adds[0].op_type != "Add":
        return None
    other = [i for i in adds[0].input if i != users[0].output[0]]
    if len(other) != 1 or not _constant(other[0], producers, inits):
        return None
    return _quantised_output(adds[0].output[0], consumers)


def with_outputs(proto: onnx.ModelProto, names: list) -> onnx.ModelProto:
    """A copy of `proto` that also outputs the tensors `names` (typed by shape inference)."""
    model = onnx.ModelProto()
    model.CopyFrom(proto)
    inferred = {v.name: v for v in onnx.shape_inference.infer_shapes(model).graph.value_info}
    present = {o.name for o in model.graph.output}
    for name in names:
        if name not in present:
            model.graph.output.append(inferred.get(name) or onnx.ValueInfoProto(name=name))
            present.add(name)
    return model


def _as_int8(x: np.ndarray) -> np.ndarray:
    """onnxruntime's tensor as the accelerator holds it (uint8 is int8 + 128 here)."""
    return (x.astype(np.int16) - UINT8_OFFSET).astype(np.int8) if x.dtype == np.uint8 else x


def compare(rows: list, runs: list, tensors: dict, values: dict) -> None:
    """Add `onnxruntime` (identical_fraction, max_abs_lsb, or a reason) to every accelerator
    row, in place. `values`: onnxruntime's tensors by name; `runs`: the LayerRuns in order."""
    for row, run, inputs, output, steps in _matched(rows, runs, tensors, "onnxruntime"):
        got = _rearranged(_reference(run, [values[n] for n in inputs]), steps, values)
        row["onnxruntime"] = _agreement(got, values[output])


def chained(rows: list, runs: list, tensors: dict, values: dict, proto: onnx.ModelProto) -> None:
    """Add `onnxruntime_chained` to every accelerator row, in place: as `compare`, but each layer
    is fed the output an earlier layer computed here wherever one produced its input (through
    REARRANGING ops), onnxruntime's tensor elsewhere; `from_onnxruntime` counts those inputs."""
    producers = {o: n for n in proto.graph.node for o in n.output}
    computed: dict = {}
    for row, run, inputs, output, steps in _matched(rows, runs, tensors, "onnxruntime_chained"):
        sources = [_rearranged_source(name, producers, computed) for name in inputs]
        got = _reference(run, [values[n] if s is None else computed[s] for n, s in zip(inputs, sources)])
        got = _rearranged(got, steps, values)
        computed[output] = got
        row["onnxruntime_chained"] = {**_agreement(got, values[output]),
                                      "from_onnxruntime": sum(s is None for s in sources)}


def _matched(rows: list, runs: list, tensors: dict, key: str):
    """(row, run, input names, output name) of each accelerator layer whose ONNX node is found
    with quantised tensors; the others get `key` with the reason. A fused layer (graph.fusion:
    `dense3+gelu1`) takes its first part's inputs and its last part's output."""
    counts: dict = {}
    for r in rows:
        for kind in r["op"].split(JOIN):
            counts[kind] = counts.get(kind, 0) + 1
    for row, run in zip([r for r in rows if r["target"] == "vta"], runs):
        parts = list(zip(row["op"].split(JOIN), row["name"].split(JOIN)))
        unmatched = next((kind for kind, _ in parts if len(tensors.get(kind, [])) != counts[kind]), None)
        if unmatched is not None:
            row[key] = {"reason": f"{counts[unmatched]} {unmatched} layers here, {len(tensors.get(unmatched, []))} in "
                                  "the ONNX graph: not matched"}
            continue
        found = [tensors[kind][int(name[len(kind):]) - 1] for kind, name in parts]
        inputs, output, steps = found[0][0], found[-1][1], []
        links = getattr(run.region.spec, "links", None) or (0,) * (len(found) - 1)
        for later, link in zip(found[1:], links):   # a fused layer's later parts: their inputs but
            inputs = (None if inputs is None or later[0] is None else    # the one the part before made
                      [*inputs, *(x for j, x in enumerate(later[0]) if j != link)])
        epilogue = row.get("epilogue", ()) if len(parts) == 1 else ()
        index = int(row["name"][len("dense"):]) - 1 if epilogue else 0
        if SCALE in epilogue:             # its output is after its bias add and scale (graph.fusion)
            scaled = tensors[SCALED][index]
            if scaled is None:
                row[key] = {"reason": "its scale's ONNX Mul is not found behind it"}
                continue
            output, steps = scaled
        elif BIAS in epilogue:            # its output is after its bias add
            output = tensors[BIASED][index]
        if inputs is None or output is None:
            row[key] = {"reason": "its ONNX node's tensors are not all quantised"}
            continue
        yield row, run, inputs, output, steps


def _reference(run, arrays: list) -> np.ndarray:
    """The layer's numpy reference (which its kernel matched bit for bit) on these int8 inputs."""
    spec = run.region.spec
    return spec.reference(*[_as_int8(a).reshape(shape) for a, shape in zip(arrays, spec.input_shapes())],
                          *run.region.constants)


def _agreement(got: np.ndarray, onnxruntime_tensor: np.ndarray) -> dict:
    lsb = np.abs(got.astype(np.int16) - _as_int8(onnxruntime_tensor).reshape(got.shape).astype(np.int16))
    return {"identical_fraction": float((lsb == 0).mean()), "max_abs_lsb": int(lsb.max())}


def _rearranged_source(name: str, producers: dict, computed: dict) -> str | None:
    """The computed tensor `name` is, directly or as Q(op(DQ(x))) with op in REARRANGING and one
    scale and zero point on both sides; None where it is not one."""
    while name not in computed:
        q = producers.get(name)
        op = q is not None and q.op_type == "QuantizeLinear" and producers.get(q.input[0])
        dq = op and op.op_type in REARRANGING and producers.get(op.input[0])
        if not (dq and dq.op_type == "DequantizeLinear" and list(dq.input[1:]) == list(q.input[1:])):
            return None
        name = dq.input[0]
    return name


def needed(tensors: dict) -> list:
    """Every tensor name the comparison reads."""
    names = [name for name in tensors.get(BIASED, []) if name]
    for scaled in tensors.get(SCALED, []):
        if scaled:
            names += [scaled[0]] + [out for _, _, out in scaled[1] if out]
    for kind, entries in tensors.items():
        for inputs, output in entries if kind not in (BIASED, SCALED) else ():
            names += (inputs or []) + ([output] if output else [])
    return names
