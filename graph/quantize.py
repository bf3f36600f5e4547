"""Post-training quantisation: a float ONNX model plus calibration data in, a QDQ model out.

The accelerator requantises with `(acc + bias) >> shift`, so every scale written here is a
power of two and every zero point is 0 (symmetric int8). A tensor's scale is the smallest
power of two that maps its calibrated absolute maximum into [-127, 127].

What gets a QuantizeLinear -> DequantizeLinear pair, in the style of onnxruntime's QDQ format:
the activations entering and leaving Conv, Gemm, MatMul, Add and MaxPool (the output of a
Relu that alone consumes one of them stands for it, so the Relu stays inside the quantised
block). Weights become int8 initializers behind a DequantizeLinear; biases become int32
initializers at scale s_x * s_w, also behind a DequantizeLinear. MaxPool's output keeps its
input's scale (a max does not change the range), so the pool runs on int8 unchanged.
"""
from __future__ import annotations

import math

import numpy as np
import onnx
from onnx import helper, numpy_helper

from requantisation.bounds import INT8_MAX

from . import ops
from .errors import GraphError
from .onnx_import import in_model_batches, onnxruntime_session

#: ONNX op -> how its activations, weight and bias are quantised (each op's rule, graph/ops/).
QUANTISED = ops.pow2_quantised()
#: Calibration samples run through onnxruntime at once.
CALIBRATION_CHUNK = 256


def pow2_scale(absmax: float) -> float:
    """The smallest power of two s with absmax / s <= 127 (2^-20 for an all-zero tensor)."""
    if not math.isfinite(absmax):
        raise GraphError(f"calibration produced a non-finite value ({absmax}); check the inputs")
    if absmax <= 0:
        return 2.0 ** -20
    return 2.0 ** math.ceil(math.log2(absmax / INT8_MAX))


def quantize_weight(w: np.ndarray) -> tuple[np.ndarray, float]:
    """Symmetric per-tensor int8 weights with a power-of-two scale."""
    scale = pow2_scale(float(np.abs(w).max()))
    return np.clip(np.round(w / scale), -INT8_MAX, INT8_MAX).astype(np.int8), scale


def calibration_feeds(model: onnx.ModelProto, calibration) -> dict:
    """{input name: batch} of `calibration` (one array for a single-input model, or {input name:
    array}): every input of the model, each in the dtype the model declares (float inputs as
    float32 where given in another float dtype; integer ids as given, refused if not integers)."""
    from .inputs import feeds_of

    graph_inputs = {i.name: i for i in model.graph.input}
    names = [n for n in graph_inputs if n not in {i.name for i in model.graph.initializer}]
    feeds = feeds_of(calibration if isinstance(calibration, dict) else np.asarray(calibration), names)
    out = {}
    for name, data in feeds.items():
        dtype = helper.tensor_dtype_to_np_dtype(graph_inputs[name].type.tensor_type.elem_type)
        data = np.asarray(data)
        if np.issubdtype(dtype, np.integer) and not np.issubdtype(data.dtype, np.integer):
            raise GraphError(f"calibration data for {name!r} are {data.dtype}; the model takes {dtype.name}")
        out[name] = data.astype(dtype, copy=False)
    if len({len(v) for v in out.values()}) > 1:
        raise GraphError(f"the calibration inputs have different batches {({k: len(v) for k, v in out.items()})}")
    return out


def calibrate(model: onnx.ModelProto, names: list, calibration) -> dict:
    """Absolute maximum of each named tensor over the calibration batch (onnxruntime, float);
    `calibration` as calibration_feeds takes it."""
    probe = onnx.ModelProto()
    probe.CopyFrom(model)
    outputs = {o.name for o in probe.graph.output}
    for name in names:
        if name not in outputs:
            probe.graph.output.append(helper.make_empty_tensor_value_info(name))
    session = onnxruntime_session(probe)
    absmax = dict.fromkeys(names, 0.0)
    for chunk in in_model_batches(model, calibration_feeds(model, calibration), CALIBRATION_CHUNK):
        values = session.run(names, chunk)
        for name, value in zip(names, values):
            absmax[name] = max(absmax[name], float(np.abs(value).max()))
    return absmax


def _activation_tensors(graph: onnx.GraphProto, inits: dict) -> list:
    """Activation tensors to quantise, in graph order (see the module docstring)."""
    consumers: dict = {}
    for node in graph.node:
        for name in node.input:
            consumers.setdefault(name, []).append(node)
    chosen = []

    def add(name):
        if name and name not in inits and name not in chosen:
            chosen.append(name)

    for node in graph.node:
        how = QUANTISED.get(node.op_type)
        if how is None:
            continue
        for i, name in enumerate(node.input):
            if i not in (how.weight, how.bias) or (how.activation_weight and name not in inits):
                add(name)
        out = node.output[0]
        users = consumers.get(out, [])
        if how.relu and len(users) == 1 and users[0].op_type == "Relu":
            out = users[0].output[0]
        add(out)
    return chosen


def quantize_model(model: onnx.ModelProto, calibration) -> onnx.ModelProto:
    """The QDQ model of a float `model`, calibrated on `calibration`, a batch of samples in the
    model's input layout (batch first): one array, or {input name: array} for every input."""
    model = onnx.shape_inference.infer_shapes(model)
    graph = model.graph
    inits = {i.name: numpy_helper.to_array(i) for i in graph.initializer}
    for node in graph.node:
        if node.op_type in ("QuantizeLinear", "DequantizeLinear", "QLinearConv", "ConvInteger"):
            raise GraphError(f"node {node.name or node.op_type} ({node.op_type}): the model is already "
                             "quantised; pass the float model")
    tensors = _activation_tensors(graph, inits)
    absmax = calibrate(model, tensors, calibration)
    scales = {name: pow2_scale(absmax[name]) for name in tensors}
    for node in graph.node:              # a max-pool keeps its input's scale
        how = QUANTISED.get(node.op_type)
        if how is not None and how.keeps_scale and node.input[0] in scales:
            scales[node.output[0]] = scales[node.input[0]]

    new_inits, nodes = [], []
    zero = numpy_helper.from_array(np.array(0, np.int8), "qdq_zero_int8")
    zero32 = numpy_helper.from_array(np.array(0, np.int32), "qdq_zero_int32")
    new_inits += [zero, zero32]
    renamed = {}

    def scale_init(name: str, value: float) -> str:
        new_inits.append(numpy_helper.from_array(np.array(value, np.float32), name))
        return name

    final = {o.name for o in graph.output}

    def qdq(name: str, producer=None) -> list:
        """Q -> DQ after `name`; consumers read the DQ. A graph output keeps its name on the DQ."""
        s = scale_init(f"{name}_scale", scales[name])
        src, dq = name, f"{name}_dq"
        if name in final:
            src, dq = f"{name}_float", name
            producer.output[list(producer.output).index(name)] = src
        else:
            renamed[name] = dq
        return [helper.make_node("QuantizeLinear", [src, s, zero.name], [f"{name}_q"], name=f"{name}_Q"),
                helper.make_node("DequantizeLinear", [f"{name}_q", s, zero.name], [dq], name=f"{name}_DQ")]

    for inp in graph.input:
        if inp.name in scales:
            nodes += qdq(inp.name)
    for node in graph.node:
        node, src = _copy_node(node), (node.input[0] if node.input else None)
        for i, name in enumerate(node.input):
            node.input[i] = renamed.get(name, name)
        how = QUANTISED.get(node.op_type, ops.Pow2Quantised())
        if how.weight is not None and (not how.activation_weight or node.input[how.weight] in inits):
            nodes += _quantise_params(node, src, inits, scales, new_inits, scale_init, zero32.name)
        nodes.append(node)
        for out in list(node.output):
            if out in scales:
                nodes += qdq(out, node)
    used = {name for n in nodes for name in n.input}
    kept = [i for i in graph.initializer if i.name in used]
    qgraph = helper.make_graph(nodes, graph.name + "_qdq", list(graph.input), list(graph.output),
                               kept + new_inits)
    qmodel = helper.make_model(qgraph, opset_imports=list(model.opset_import),
                               producer_name="vta-toolkit quantiser")
    qmodel.ir_version = model.ir_version
    onnx.checker.check_model(qmodel)
    return qmodel


def _copy_node(node: onnx.NodeProto) -> onnx.NodeProto:
    copy = onnx.NodeProto()
    copy.CopyFrom(node)
    return copy


def _quantise_params(node, src, inits, scales, new_inits, scale_init, zero32) -> list:
    """Replace the node's float weight (and bias) initializers by int8/int32 ones behind DQ;
    `src` is the node's (float) activation input, whose scale sets the bias scale."""
    how = QUANTISED[node.op_type]
    widx = how.weight
    wname = node.input[widx]
    if wname not in inits:
        raise GraphError(f"node {node.name or node.op_type}: its weight {wname!r} is not an initializer; "
                         "the quantiser needs constant weights")
    if src not in scales:
        raise GraphError(f"node {node.name or node.op_type}: input {src!r} has no calibrated scale")
    wq, sw = quantize_weight(inits[wname])
    out = []
    new_inits.append(numpy_helper.from_array(wq, f"{wname}_int8"))
    s = scale_init(f"{wname}_scale", sw)
    out.append(helper.make_node("DequantizeLinear", [f"{wname}_int8", s, "qdq_zero_int8"],
                                [f"{wname}_dq"], name=f"{wname}_DQ"))
    node.input[widx] = f"{wname}_dq"
    bidx = how.bias
    if bidx is not None and len(node.input) > bidx and node.input[bidx]:
        bname = node.input[bidx]
        sb = scales[src] * sw
        bq = np.round(inits[bname] / sb)
        if np.abs(bq).max(initial=0) >= 2 ** 31:
            raise GraphError(f"bias {bname!r} does not fit int32 at scale {sb:g}")
        new_inits.append(numpy_helper.from_array(bq.astype(np.int32), f"{bname}_int32"))
        s = scale_init(f"{bname}_scale", sb)
        out.append(helper.make_node("DequantizeLinear", [f"{bname}_int32", s, zero32],
                                    [f"{bname}_dq"], name=f"{bname}_DQ"))
        node.input[bidx] = f"{bname}_dq"
    return out



def quantize_with_onnxruntime(model: onnx.ModelProto, calibration, per_channel: bool = False,
                              symmetric: bool = False, activation_type=None) -> onnx.ModelProto:
    """The QDQ model onnxruntime's `quantize_static` writes (its defaults: float scales, int8
    activations with zero points, int8 symmetric weights), calibrated on `calibration`.

    `calibration`: one array, or {input name: array} for every input (each fed in the model's
    dtype, in the batch the file fixes, else in chunks of CALIBRATION_CHUNK samples: a model
    whose Reshape constants hold the batch of the data it is given calibrates on that batch). `per_channel` gives one
    weight scale per output channel; `symmetric` also makes the
    activations symmetric (ActivationSymmetric/WeightSymmetric); `activation_type` is
    onnxruntime's QuantType (default QInt8)."""
    import tempfile
    from pathlib import Path

    from onnxruntime.quantization import CalibrationDataReader, QuantFormat, QuantType, quantize_static

    data = calibration_feeds(model, calibration)

    class Reader(CalibrationDataReader):
        def __init__(self):   # the batch the file fixes, else the samples as given, in chunks
            self.samples = iter(in_model_batches(model, data, CALIBRATION_CHUNK))

        def get_next(self):
            return next(self.samples, None)

    extra = {"ActivationSymmetric": True, "WeightSymmetric": True} if symmetric else {}
    with tempfile.TemporaryDirectory() as tmp:
        src, dst = Path(tmp) / "float.onnx", Path(tmp) / "qdq.onnx"
        onnx.save(model, str(src))
        quantize_static(str(src), str(dst), Reader(), quant_format=QuantFormat.QDQ, per_channel=per_channel,
                        extra_options=extra, activation_type=activation_type or QuantType.QInt8)
        return onnx.load(str(dst))


#: Quantisers by the name `vta-sim model --quantizer` takes: the toolkit's power-of-two one, and
#: onnxruntime's quantize_static (defaults, per-channel weights, symmetric activations).
QUANTIZERS = {
    "pow2": quantize_model,
    "onnxruntime": quantize_with_onnxruntime,
    "onnxruntime-per-channel": lambda m, x: quantize_with_onnxruntime(m, x, per_channel=True),
    "onnxruntime-symmetric": lambda m, x: quantize_with_onnxruntime(m, x, symmetric=True),
}


def quantizer_named(name: str):
    """(float model, calibration batch) -> QDQ model, by name."""
    if name not in QUANTIZERS:
        raise GraphError(f"unknown quantizer {name!r}; accepted: {', '.join(QUANTIZERS)}")
    return QUANTIZERS[name]
