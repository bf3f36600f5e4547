"""The models `vta-sim compare --model` takes: the built-in ones by name, or any ONNX file.

Each becomes a `ModelCase`: its float form (the fp32 rows), its QDQ form (the int8 rows and
VTA-8) and one frame of input (batch 1). A float file is quantised on that frame by the
quantiser asked for (default `onnxruntime`, its quantize_static defaults); a QDQ file is taken
as it is, and its fp32 rows are skipped.
"""
from __future__ import annotations

import numpy as np
import onnx

from baselines.model_compare import ModelCase

#: Built-in models and the quantiser each uses unless told otherwise (the one `vta-sim model`
#: defaults to for the two CNNs it ships; onnxruntime's for the others).
BUILTIN = {"digits": "pow2", "resnet18": "pow2", "mobilenet_v2": "onnxruntime", "encoder": "onnxruntime-symmetric",
           "vit": "onnxruntime-symmetric", "digits-vit": "onnxruntime-symmetric"}


def _is_quantised(proto) -> bool:
    return any(n.op_type in ("QuantizeLinear", "DequantizeLinear") for n in proto.graph.node)


def load_case(model: str, quantizer: str | None = None, seed: int = 0) -> ModelCase:
    """`model`: a name of BUILTIN or the path of an ONNX file."""
    from graph.quantize import quantizer_named

    if model == "digits":
        from graph.models import digits

        d = digits.load(quantizer=quantizer or BUILTIN[model])
        float_proto = onnx.load(str(digits.models_dir() / f"digits_v{digits.VERSION}_float.onnx"))
        return ModelCase(model, float_proto, d.qdq, d.x_test[:1])
    if model == "digits-vit":
        from graph.models import digits_vit

        d = digits_vit.load(quantizer=quantizer or BUILTIN[model])
        float_proto = onnx.load(str(digits_vit.paths(digits_vit.models_dir(), BUILTIN[model])[0]))
        return ModelCase(model, float_proto, d.qdq, d.x_test[:1])
    if model == "resnet18":
        from graph.models import resnet18

        return ModelCase(model, resnet18.float_model(), resnet18.load(quantizer=quantizer or BUILTIN[model]),
                         resnet18.images(1, seed))
    if model == "mobilenet_v2":
        from graph.models import mobilenet_v2

        float_proto = mobilenet_v2.float_model()
        qdq = quantizer_named(quantizer or BUILTIN[model])(float_proto, mobilenet_v2.images(2, seed=100))
        return ModelCase(model, float_proto, qdq, mobilenet_v2.images(1, seed=seed))
    if model == "encoder":
        from graph.models import encoder

        return ModelCase(model, encoder.float_model(), encoder.load(quantizer=quantizer or BUILTIN[model]),
                         encoder.tokens(1, seed))
    if model == "vit":
        from graph.models import vit

        float_proto = vit.float_model()
        qdq = quantizer_named(quantizer or BUILTIN[model])(float_proto,
                                                           vit.images(vit.CALIBRATION_IMAGES, seed=vit.SEED + 100))
        return ModelCase(model, float_proto, qdq, vit.images(1, seed=seed))
    from graph.run import load_case as graph_case

    case = graph_case(model, seed=seed)          # refuses unknown names and unreadable files
    if isinstance(case.x, dict):
        from graph.errors import GraphError

        raise GraphError(f"{model}: the comparison takes models with one input; this one has "
                         f"{', '.join(case.x)} (vta-sim model runs it on VTA-8 and its CPU build)")
    x = np.ascontiguousarray(case.x[:1])
    if _is_quantised(case.onnx):
        return ModelCase(case.name, None, case.onnx, x,
                         ["the file is quantised (QDQ): its fp32 rows are skipped"])
    name = quantizer or "onnxruntime"
    return ModelCase(case.name, case.onnx, quantizer_named(name)(case.onnx, x), x,
                     [f"quantised by {name} on the comparison's input"])
