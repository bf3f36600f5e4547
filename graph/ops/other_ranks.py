"""Layers of the exporters' common set that the accelerator's kernels do not take in their rank or
form: 1-d and 3-d convolutions and pools, an unfolded BatchNormalization, LeakyReLU. They stay
on the CPU (in float between their QDQ pairs, or integer where the QDQ pass leaves them so), as
report layers with their reason, instead of running there without a row."""
from __future__ import annotations

import numpy as np
from tvm import relax

from .base import OpRule


def conv_macs(call: relax.Call) -> int:
    """Multiply-accumulates of a 1-d or 3-d conv: output elements times the weight's per-output
    size (0 where TVM left a shape unknown)."""
    weight = getattr(call.args[1], "ty", None)
    if call.ty.shape is None or weight is None or weight.shape is None:
        return 0
    per = int(np.prod([int(d) for d in weight.shape][1:]))
    return int(np.prod([int(d) for d in call.ty.shape])) * per


RULES = (
    OpRule(kind="conv", float_ops=("relax.nn.conv1d", "relax.nn.conv3d"), macs=conv_macs,
           cpu_reason="a 1-d or 3-d convolution: the accelerator's conv kernel takes 2-d NCHW windows (a 1-d "
                      "conv exported as a 2-d one of height 1 runs there)"),
    OpRule(kind="pool", float_ops=("relax.nn.max_pool1d", "relax.nn.max_pool3d", "relax.nn.avg_pool1d",
                                   "relax.nn.avg_pool3d", "relax.nn.adaptive_avg_pool1d",
                                   "relax.nn.adaptive_avg_pool3d"),
           cpu_reason="a 1-d or 3-d pool: the accelerator's pools take 2-d NCHW windows"),
    OpRule(kind="batch_norm", float_ops=("relax.nn.batch_norm",),
           cpu_reason="BatchNormalization not folded into the conv before it: a per-channel scale and shift "
                      "in float (fold it before quantising: onnxruntime's quant_pre_process does)"),
    OpRule(kind="leaky_relu", float_ops=("relax.nn.leakyrelu",),
           cpu_reason="no integer form here: the negative values' slope is a multiply the requantisation of "
                      "its block cannot hold"),
)
