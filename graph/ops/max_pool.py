"""max_pool: a max-pool of int8 on the ALU (MAX over the window), in its input's scale.

QDQ block:  quantize(max_pool2d(dq(x))) with the same scale and zero point  ->  max_pool2d(x_q)
Pattern:    max_pool2d(x)
Spec:       PoolSpec(PoolShape, ceil_extra); kernel schedules.vta_pool.max_pool_kernel
"""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import numpy as np
from tvm.relax.dpl import is_op, wildcard

from requantisation.bounds import INT8_MIN
from schedules import vta_pool
from schedules.op_kernel import OpKernel
from schedules.vta_pool import PoolShape
from vta_sim.config import Config

from . import same_scale
from .base import claims_op, Pow2Quantised, Emitter, OpRule, Read, Unsupported
from .host_padding import HostPadded, layout_refusal
from .qdq_read import ints, static_shape
from .relax_read import ValueOf, int8_input


@dataclass(frozen=True)
class PoolSpec(HostPadded):
    shape: PoolShape
    ceil_extra: int = 0       # ceil_mode: rows/columns of -128 the host adds at the bottom/right
    op: str = field(default="max_pool", init=False)
    macs = 0

    @property
    def extra(self) -> int:   # type: ignore[override]
        return self.ceil_extra

    def describe(self) -> str:
        s = self.shape
        return f"{s.k}x{s.k}/{s.stride} pad {s.pad}{' ceil' if self.ceil_extra else ''} {s.c}x{s.h}x{s.w}"

    def input_shapes(self) -> list[Any]:
        s = self.shape
        return [(s.n, s.c, s.h, s.w)]

    def host_value(self) -> int | None:
        return INT8_MIN if self.shape.pad or self.ceil_extra else None

    def misfit(self, cfg: Config, vthreads: int) -> str | None:
        return layout_refusal(lambda: vta_pool.plan(cfg, self.kernel_shape()))

    def kernel(self, cfg: Config, vthreads: int) -> OpKernel:
        s = self.kernel_shape()
        return self.host_padded(vta_pool.max_pool_kernel(cfg, s.n, s.c, s.h, s.w, s.k, s.stride, s.pad))

    def reference(self, x: np.ndarray) -> np.ndarray:
        s = self.kernel_shape()
        return vta_pool.max_pool_ref(self.padded(x), s.k, s.stride, s.pad)


def emit(em: Emitter, p: same_scale.SameScalePlan) -> Any:
    return em.root(same_scale.repeated(em, p))


def read(root: Any, value_of: ValueOf) -> Read:
    a = root.attrs
    x = root.args[0]
    int8_input(x, "max-pool")
    n, c, h, w = static_shape(x)
    pool, strides, pad = ints(a.pool_size), ints(a.strides), ints(a.padding)
    if len(set(pool)) != 1 or len(set(strides)) != 1 or len(set(pad)) != 1:
        raise Unsupported(f"window {pool}, strides {strides}, padding {pad} differ between the axes")
    if set(ints(a.dilation)) != {1} or a.layout != "NCHW":
        raise Unsupported("dilation or a layout other than NCHW")
    oh, ow = static_shape(root)[2:]
    shape = PoolShape(n, c, h, w, pool[0], strides[0], pad[0])
    # ceil_mode's last window may run past the padding: pad that far with -128 (never a max)
    extra = max(0, (oh - 1) * shape.stride + shape.k - (h + 2 * shape.pad)) if a.ceil_mode else 0
    if extra != max(0, (ow - 1) * shape.stride + shape.k - (w + 2 * shape.pad)):
        raise Unsupported(f"ceil_mode pads {h}x{w} differently per axis")
    return Read(PoolSpec(shape, extra))


RULE = OpRule(
    kind="max_pool", float_ops=("relax.nn.max_pool2d",), onnx_ops=("MaxPool",),
    claims=claims_op("relax.nn.max_pool2d"), plan=same_scale.plan, emit=emit,
    patterns=lambda main: {"vta.max_pool": is_op("relax.nn.max_pool2d")(wildcard())},
    read=read, activations=lambda root, value_of: [root.args[0]],
    pow2={"MaxPool": Pow2Quantised(keeps_scale=True, relu=False)})
