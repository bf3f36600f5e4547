"""Baselines measured next to the TVM builds: numpy (fp32), onnxruntime, PyTorch if installed.

Each baseline is a `Baseline`: a zero-argument callable over pre-converted inputs (conversion
is not timed) and a `result()` that converts its output back to the workload's output dtype,
so it is verified exactly like a TVM build.

onnxruntime runs the int8 workloads through MatMulInteger / ConvInteger in their exact u8u8
form: every int8 tensor is shifted by +128 to uint8 and given zero point 128. The u8s8 form
is faster on AVX2 but its VPMADDUBSW saturates int16 pair sums (onnxruntime documents this), so
it does not verify on full-range data; s8s8 is exact but has no fast kernel on AVX2.
"""
from dataclasses import dataclass
from typing import Callable

import numpy as np

from baselines.workloads import DWSEP_SHIFT


@dataclass
class Baseline:
    variant: str
    run: Callable[[], object]
    result: Callable[[object], np.ndarray]
    note: str = ""


class Unavailable(Exception):
    """A baseline that cannot run here; the message is the `skipped` reason."""


def numpy_fp32(wl, arrays):
    """The workload's own numpy formula (matmul / im2col + matmul / einsum) in float32."""
    xs = [a.astype(np.float32) for a in arrays]

    def result(out):
        return np.rint(out).astype(wl.out_dtype) if wl.dtype == "int8" else out.astype(np.float32)

    return Baseline("numpy", lambda: wl.evaluate(xs), result,
                    "fp32 (int8 inputs converted; sums are exact below 2^24)")


# ---------------------------------------------------------------- onnxruntime
def _u8(a):
    return (a.astype(np.int16) + 128).astype(np.uint8)


def _onnx_graph(wl):
    """(nodes, initializers, input names): the workload as one ONNX graph."""
    from onnx import TensorProto, helper

    int8 = wl.dtype == "int8"
    inits = [helper.make_tensor("zp", TensorProto.UINT8, [], [128])] if int8 else []
    names = [n for n, _ in wl.inputs]
    if wl.kind == "gemm":
        op = helper.make_node("MatMulInteger", ["A", "B", "zp", "zp"], ["out"]) if int8 else \
            helper.make_node("MatMul", ["A", "B"], ["out"])
        return [op], inits, names
    if wl.kind in ("conv2d", "conv1d"):
        p = wl.params
        attrs = dict(strides=[p["stride"]] * p["nd"], pads=[p["pad"]] * 2 * p["nd"])
        op = helper.make_node("ConvInteger", ["X", "W", "zp", "zp"], ["out"], **attrs) if int8 \
            else helper.make_node("Conv", ["X", "W"], ["out"], **attrs)
        return [op], inits, names
    # dwsep: grouped 3x3, (int8: requantise and re-shift to u8), 1x1
    C, K = wl.params["C"], wl.params["K"]
    inits += [helper.make_tensor("dw_shape", TensorProto.INT64, [4], [C, 1, 3, 3]),
              helper.make_tensor("pw_shape", TensorProto.INT64, [4], [K, C, 1, 1])]
    nodes = [helper.make_node("Reshape", ["DW", "dw_shape"], ["dw4"]),
             helper.make_node("Reshape", ["PW", "pw_shape"], ["pw4"])]
    conv = dict(group=C, pads=[1, 1, 1, 1])
    if not int8:
        return nodes + [helper.make_node("Conv", ["X", "dw4"], ["d"], **conv),
                        helper.make_node("Conv", ["d", "pw4"], ["out"])], inits, names
    inits += [helper.make_tensor(n, TensorProto.FLOAT, [], [v]) for n, v in
              (("scale", 1.0 / (1 << DWSEP_SHIFT)), ("lo", -128.0), ("hi", 127.0), ("off", 128.0))]
    nodes += [
        helper.make_node("ConvInteger", ["X", "dw4", "zp", "zp"], ["d32"], **conv),
        helper.make_node("Cast", ["d32"], ["df"], to=TensorProto.FLOAT),
        helper.make_node("Mul", ["df", "scale"], ["ds"]),
        helper.make_node("Floor", ["ds"], ["dfl"]),  # == arithmetic >> (exact in fp32 here)
        helper.make_node("Clip", ["dfl", "lo", "hi"], ["dc"]),
        helper.make_node("Add", ["dc", "off"], ["du"]),
        helper.make_node("Cast", ["du"], ["d8"], to=TensorProto.UINT8),
        helper.make_node("ConvInteger", ["d8", "pw4", "zp", "zp"], ["out"]),
    ]
    return nodes, inits, names


def onnxruntime_baseline(wl, arrays, threads):
    """onnxruntime on the CPU execution provider with `threads` intra-op threads."""
    try:
        import onnxruntime as ort
        from onnx import TensorProto, helper
    except ImportError as err:
        raise Unavailable(f"onnxruntime/onnx not installed ({err.name})") from None
    int8 = wl.dtype == "int8"
    elem = TensorProto.UINT8 if int8 else TensorProto.FLOAT
    nodes, inits, names = _onnx_graph(wl)
    ins = [helper.make_tensor_value_info(n, elem, list(s)) for n, s in wl.inputs]
    out = helper.make_tensor_value_info("out", TensorProto.INT32 if int8 else TensorProto.FLOAT,
                                        list(wl.output_shape))
    model = helper.make_model(helper.make_graph(nodes, wl.name, ins, [out], inits),
                              opset_imports=[helper.make_opsetid("", 17)], ir_version=9)
    opts = ort.SessionOptions()
    opts.intra_op_num_threads = threads
    sess = ort.InferenceSession(model.SerializeToString(), opts, providers=["CPUExecutionProvider"])
    feed = dict(zip(names, [_u8(a) if int8 else a for a in arrays]))
    note = "MatMulInteger/ConvInteger u8u8, zero point 128" if int8 else "fp32 MatMul/Conv"
    return Baseline("onnxruntime", lambda: sess.run(None, feed)[0],
                    lambda o: o.reshape(wl.output_shape).astype(wl.out_dtype), note)


# ---------------------------------------------------------------- PyTorch
def torch_baseline(wl, arrays, device="cpu"):
    """PyTorch fp32 (it has no general int8 GEMM/conv on CPU or CUDA)."""
    try:
        import torch
        import torch.nn.functional as F
    except ImportError:
        raise Unavailable("torch not installed (pip install the CPU wheel to enable)") from None
    if device == "cuda" and not torch.cuda.is_available():
        raise Unavailable("torch has no CUDA device here")
    xs = [torch.from_numpy(a.astype(np.float32)).to(device) for a in arrays]
    p = getattr(wl, "params", {})
    sync = torch.cuda.synchronize if device == "cuda" else (lambda: None)

    def fn():
        with torch.no_grad():
            if wl.kind == "gemm":
                r = xs[0] @ xs[1]
            elif wl.kind == "conv2d":
                r = F.conv2d(xs[0], xs[1], stride=p["stride"], padding=p["pad"])
            elif wl.kind == "conv1d":
                r = F.conv1d(xs[0], xs[1], stride=p["stride"], padding=p["pad"])
            else:
                d = F.conv2d(xs[0], xs[1][:, None], padding=1, groups=p["C"])
                if wl.dtype == "int8":
                    d = torch.clamp(torch.floor(d / (1 << DWSEP_SHIFT)), -128, 127)
                r = F.conv2d(d, xs[2][:, :, None, None])
            sync()
            return r

    def result(r):
        r = r.cpu().numpy()
        return np.rint(r).astype(wl.out_dtype) if wl.dtype == "int8" else r

    return Baseline(f"torch_{device}", fn, result, "fp32")
