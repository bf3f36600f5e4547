"""ONNX in, Relax out: TVM 0.27's frontend, with the refusals it would otherwise give late or
obscurely.

The frontend imports QuantizeLinear/DequantizeLinear around float ops (QDQ format), which
graph.qdq turns into integer ops. It has no converter for the integer-op format
(QLinearConv, ConvInteger, QLinearMatMul, MatMulInteger); those models are refused here with
the op named and the QDQ alternative.
"""
from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

import numpy as np
import onnx

from .errors import GraphError

#: Integer-op formats the frontend cannot import, and what to use instead.
UNSUPPORTED = {
    "QLinearConv": "Conv between DequantizeLinear/QuantizeLinear (QDQ format)",
    "ConvInteger": "Conv between DequantizeLinear/QuantizeLinear (QDQ format)",
    "QLinearMatMul": "MatMul or Gemm between DequantizeLinear/QuantizeLinear (QDQ format)",
    "MatMulInteger": "MatMul or Gemm between DequantizeLinear/QuantizeLinear (QDQ format)",
}


@dataclass(frozen=True)
class ModelInput:
    name: str
    shape: tuple          # with the batch the module was imported for
    dtype: str


def load(model) -> onnx.ModelProto:
    """An onnx.ModelProto from a path or a ModelProto (not copied: the caller's is not modified)."""
    if isinstance(model, onnx.ModelProto):
        return model
    path = Path(model)
    if not path.is_file():
        raise GraphError(f"ONNX model {str(path)!r} does not exist")
    try:
        return onnx.load(str(path))
    except Exception as exc:      # onnx raises DecodeError and others; name the file either way
        raise GraphError(f"{str(path)!r} is not a readable ONNX model: {exc}") from exc


#: Models of an older opset (of the default domain) are upgraded to UPGRADE_TO before anything
#: else reads them: the quantisers, onnxruntime's calibration and TVM's frontend take 11 and later.
MIN_OPSET, UPGRADE_TO = 11, 17


def opset_of(model: onnx.ModelProto) -> int | None:
    """The version of the default ONNX domain the model imports (None: it imports none)."""
    return next((o.version for o in model.opset_import if o.domain in ("", "ai.onnx")), None)


def upgraded(model: onnx.ModelProto) -> tuple[onnx.ModelProto, str | None]:
    """(`model`, None) at opset MIN_OPSET or later; else (a copy upgraded to UPGRADE_TO with
    onnx.version_converter, a note saying so). A model the converter cannot upgrade is refused
    with the converter's reason."""
    opset = opset_of(model)
    if opset is None or opset >= MIN_OPSET:
        return model, None
    from onnx import version_converter

    from .errors import one_line

    unknown = next((n for n in model.graph.node if n.domain in ("", "ai.onnx") and not onnx.defs.has(n.op_type)), None)
    if unknown is not None:
        raise GraphError(f"the model uses opset {opset}, older than the {MIN_OPSET} the graph level takes, and "
                         f"onnx.version_converter cannot upgrade it: node {unknown.name or '(unnamed)'} is "
                         f"{unknown.op_type}, which is not an ONNX op; re-export it at opset {MIN_OPSET} or later")
    try:
        new = version_converter.convert_version(model, UPGRADE_TO)
        new.ir_version = max(new.ir_version, onnx.helper.find_min_ir_version_for(list(new.opset_import)))
        onnx.checker.check_model(new)
    except Exception as err:  # noqa: BLE001 - the converter's and checker's errors, named in one line
        raise GraphError(f"the model uses opset {opset}, older than the {MIN_OPSET} the graph level takes, and "
                         f"onnx.version_converter could not upgrade it to {UPGRADE_TO} "
                         f"({_readable(one_line(err))}); re-export it at opset {MIN_OPSET} or later") from err
    return new, f"upgraded the model from opset {opset} to {UPGRADE_TO} (onnx.version_converter)"


def constants_as_initializers(model: onnx.ModelProto) -> onnx.ModelProto:
    """`model`, or a copy where every Constant node holding a tensor and every Identity of an
    initializer is an initializer of the same name (what onnxruntime's basic graph optimisations
    and `quant_pre_process` do). The TorchScript exporter writes GELU's 1, 1/2 and sqrt 2 as
    Constant nodes and shares equal initializers through Identity (nn.TransformerEncoderLayer's
    norm2.weight is Identity(norm1.weight)); `quantize_static` quantises neither as a weight, so
    the GELU chain and the second LayerNorm would lose their constants. The caller's model is
    not modified."""
    from onnx import numpy_helper

    values = {i.name: i for i in model.graph.initializer}
    outputs = {o.name for o in model.graph.output}
    folded = []
    for node in model.graph.node:
        if node.output[0] in outputs:
            continue
        if node.op_type == "Constant" and len(node.attribute) == 1 and node.attribute[0].name == "value":
            tensor = onnx.TensorProto()
            tensor.CopyFrom(node.attribute[0].t)
        elif node.op_type == "Identity" and node.input[0] in values:
            tensor = numpy_helper.from_array(numpy_helper.to_array(values[node.input[0]]))
        else:
            continue
        tensor.name = node.output[0]
        values[tensor.name] = tensor
        folded.append(node)
    if not folded:
        return model
    copy = onnx.ModelProto()
    copy.CopyFrom(model)
    gone = {n.output[0] for n in folded}
    keep = [n for n in copy.graph.node if not (n.op_type in ("Constant", "Identity") and n.output[0] in gone)]
    del copy.graph.node[:]
    copy.graph.node.extend(keep)
    copy.graph.initializer.extend(values[name] for name in gone)
    return copy


def prepared(model) -> tuple[onnx.ModelProto, str | None]:
    """A model file as the graph level takes it, and a note where it was changed: loaded,
    upgraded to MIN_OPSET or later (`upgraded`), constants as initializers
    (`constants_as_initializers`), checked importable. The caller's file is not modified."""
    proto, note = upgraded(load(model))
    proto = constants_as_initializers(proto)
    check_importable(proto)
    return proto, note


def _readable(message: str) -> str:
    """The converter's C++ assertion text without its source position and unfilled format."""
    message = message.split(" failed: ", 1)[-1]
    return message.replace("'%s'", "").replace("%lld", "N")


def check_importable(model: onnx.ModelProto) -> None:
    """Refuse integer-op formats, naming the first offending node and the QDQ alternative."""
    for node in model.graph.node:
        if node.op_type in UNSUPPORTED:
            raise GraphError(
                f"node {node.name or '(unnamed)'} is {node.op_type}, which TVM 0.27's ONNX frontend "
                f"does not import; export the model in QDQ format instead: "
                f"{UNSUPPORTED[node.op_type]} (e.g. onnxruntime.quantization.quantize_static with "
                "quant_format=QuantFormat.QDQ, or graph.quantize.quantize_model)")


def model_inputs(model: onnx.ModelProto, batch: int | None = None) -> list[ModelInput]:
    """The model's inputs (initializers listed as inputs left out), in the order its graph
    lists them (the order of the imported Relax function's parameters), each with its batch
    dimension set to `batch` when given."""
    inits = {i.name for i in model.graph.initializer}
    out = []
    for inp in model.graph.input:
        if inp.name in inits:
            continue
        tensor = inp.type.tensor_type
        dims = [d.dim_value if d.HasField("dim_value") else None for d in tensor.shape.dim]
        if batch is not None and dims:
            dims[0] = batch
        if any(d is None or d <= 0 for d in dims):
            raise GraphError(f"input {inp.name} has an unknown dimension {dims}; give the batch")
        dtype = onnx.helper.tensor_dtype_to_np_dtype(tensor.elem_type).name
        out.append(ModelInput(inp.name, tuple(dims), dtype))
    if not out:
        raise GraphError("the model has no input (every graph input is an initializer)")
    return out


def input_names(model: onnx.ModelProto) -> list[str]:
    """The names of the model's inputs (not initializers), in the graph's order."""
    inits = {i.name for i in model.graph.initializer}
    return [i.name for i in model.graph.input if i.name not in inits]


def model_input(model: onnx.ModelProto, batch: int | None = None) -> ModelInput:
    """The model's single input, its batch dimension set to `batch` when given."""
    inputs = model_inputs(model, batch)
    if len(inputs) != 1:
        raise GraphError(f"models with one input are supported here; this one has {len(inputs)}: "
                         f"{[i.name for i in inputs]}")
    return inputs[0]


def fixed_batch(model: onnx.ModelProto) -> int | None:
    """The batch the file fixes for its first input (a positive first dimension), else None."""
    inits = {i.name for i in model.graph.initializer}
    for inp in model.graph.input:
        if inp.name not in inits:
            dims = inp.type.tensor_type.shape.dim
            return dims[0].dim_value if dims and dims[0].HasField("dim_value") and dims[0].dim_value > 0 \
                else None
    return None


def in_model_batches(model: onnx.ModelProto, data, default: int) -> list:
    """`data` cut into the batches the model takes: its fixed batch where the file fixes one
    (samples repeated up to one whole batch where there are fewer, a remainder left out), else
    chunks of `default`. For calibration, which must feed the model the shape it declares.
    `data` is one array, or {input name: array} with one batch size (cut alike, into dicts)."""
    if isinstance(data, dict):
        names = list(data)
        cut = [in_model_batches(model, data[name], default) for name in names]
        return [dict(zip(names, parts)) for parts in zip(*cut)]
    import numpy as np

    size = fixed_batch(model)
    if size is None:
        return [data[i:i + default] for i in range(0, len(data), default)]
    if len(data) < size:
        data = np.resize(data, (size, *data.shape[1:]))
    return [data[i:i + size] for i in range(0, len(data) - size + 1, size)]


def import_onnx(model, batch: int | None = None):
    """(Relax IRModule, its first ModelInput) of an ONNX model, weights bound as constants; every
    input of the model is a parameter of `main`, in the graph's order (model_inputs)."""
    from tvm.relax.frontend.onnx import from_onnx

    proto = _constant_pad_values(load(model))
    check_importable(proto)
    inputs = model_inputs(proto, batch)
    mod = from_onnx(proto, shape_dict={i.name: list(i.shape) for i in inputs},
                    dtype_dict={i.name: i.dtype for i in inputs}, keep_params_in_input=False)
    _check_compilable(mod)
    return mod, inputs[0]


def _constant_pad_values(proto: onnx.ModelProto) -> onnx.ModelProto:
    """`proto`, or a copy where a Pad's constant value, a QuantizeLinear/DequantizeLinear of a
    constant or a Constant node (onnxruntime's quantiser and the version converter write it so), is that value as a float initializer: TVM's
    frontend reads the value only from a constant. The caller's model is not modified."""
    from onnx import numpy_helper

    inits = {i.name: numpy_helper.to_array(i) for i in proto.graph.initializer}
    producers = {o: n for n in proto.graph.node for o in n.output}

    def constant(name: str, depth: int = 0):
        """The value of `name` where it is an initializer, or Q/DQ of one (else None)."""
        if name in inits:
            return inits[name]
        node = producers.get(name)
        if node is not None and node.op_type == "Constant" and node.attribute and node.attribute[0].name == "value":
            return numpy_helper.to_array(node.attribute[0].t)
        if node is None or depth > 2 or node.op_type not in ("QuantizeLinear", "DequantizeLinear"):
            return None
        args = [constant(i, depth + 1) if i else None for i in node.input]
        if args[0] is None or args[1] is None or (len(args) > 2 and node.input[2] and args[2] is None):
            return None
        x, scale = args[0].astype(np.float64), args[1].astype(np.float64)
        zero = args[2] if len(args) > 2 and args[2] is not None else np.zeros((), np.uint8)
        if node.op_type == "DequantizeLinear":
            return np.asarray((x - zero.astype(np.float64)) * scale, np.float32)
        info = np.iinfo(zero.dtype)
        return np.clip(np.round(x / scale) + zero.astype(np.float64), info.min, info.max).astype(zero.dtype)

    values = {}
    for node in proto.graph.node:
        if node.op_type == "Pad" and len(node.input) > 2 and node.input[2] and node.input[2] not in inits:
            value = constant(node.input[2])
            if value is not None:
                values[node.input[2]] = np.asarray(value, np.float32)
    if not values:
        return proto
    copy = onnx.ModelProto()
    copy.CopyFrom(proto)
    for node in copy.graph.node:
        if node.op_type == "Pad" and len(node.input) > 2 and node.input[2] in values:
            name = node.input[2] + "_float"
            if name not in {i.name for i in copy.graph.initializer}:
                copy.graph.initializer.append(numpy_helper.from_array(values[node.input[2]], name))
            node.input[2] = name
    return copy


def _check_compilable(mod) -> None:
    """Refuse what TVM's frontend imported but cannot compile (each op's rule says what:
    graph.ops.frontend_refusal)."""
    from . import ops

    reason = ops.frontend_refusal(mod["main"])
    if reason is not None:
        raise GraphError(reason)


def onnxruntime_session(model: onnx.ModelProto):
    """An onnxruntime CPU session of `model` with every graph optimisation off: its optimised
    int8 kernels are not a bit-exact oracle on AVX2 hosts, its reference kernels are."""
    import onnxruntime as ort

    options = ort.SessionOptions()
    options.graph_optimization_level = ort.GraphOptimizationLevel.ORT_DISABLE_ALL
    return ort.InferenceSession(model.SerializeToString(), options, providers=["CPUExecutionProvider"])
