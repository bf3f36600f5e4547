"""What the host does around a kernel: padding where the DMA cannot (convs and max-pools),
viewing tensors of another rank as the kernel's shape (`viewed`), and the check every spec's
`misfit` shares."""
from __future__ import annotations

import dataclasses
from typing import Any, Callable

import numpy as np

from vta_sim.errors import CompileError
from schedules.op_kernel import OpKernel


def layout_refusal(choose: Callable[[], object]) -> str | None:
    """The schedules' own reason a layout is refused (None: it fits), without compiling."""
    try:
        choose()
    except CompileError as exc:      # the reason the report gives for keeping the op on the CPU
        return str(exc)
    return None


def viewed(kernel: OpKernel, inputs: list[tuple[int, ...]], out: tuple[int, ...]) -> OpKernel:
    """`kernel` on tensors of other shapes with the same elements in the same order: its first
    len(inputs) arguments (the activations) reshaped to `inputs` before packing, its output
    reshaped to `out` (a dense layer over (B, T, K) tokens as (B*T, K); an add of any rank as
    NCHW)."""
    pack, unpack, count = kernel.pack, kernel.unpack, len(inputs)

    def pack_viewed(*xs: np.ndarray) -> tuple[Any, ...]:
        return pack(*(x.reshape(s) for x, s in zip(xs[:count], inputs)), *xs[count:])
    return dataclasses.replace(kernel, pack=pack_viewed, unpack=lambda y: unpack(y).reshape(out))


class HostPadded:
    """Convs and max-pools whose padding the host may do instead of the DMA.

    The DMA pads with 0, at most isa.MAX_PAD per side. Where padding must hold something else
    (a conv input's zero point; a max-pool's -128, the int8 minimum, so that padding never wins
    a max) or is wider, the host pads the input in DRAM and the kernel runs unpadded."""

    shape: Any
    extra = 0          # rows and columns the host adds at the bottom and right (ceil_mode pools)

    def host_value(self) -> int | None:
        raise NotImplementedError

    def kernel_shape(self) -> Any:
        """The shape the kernel computes: the spec's, or its host-padded input with no padding."""
        s = self.shape
        if self.host_value() is None:
            return s
        grow = 2 * s.pad + self.extra
        return dataclasses.replace(s, h=s.h + grow, w=s.w + grow, pad=0)

    def padded(self, x: np.ndarray) -> np.ndarray:
        """The input as the kernel reads it (host-padded where the DMA cannot pad)."""
        value = self.host_value()
        if value is None:
            return x
        pad, extra = self.shape.pad, self.extra
        return np.pad(x, ((0, 0), (0, 0), (pad, pad + extra), (pad, pad + extra)), constant_values=value)

    def host_padded(self, kernel: OpKernel) -> OpKernel:
        if self.host_value() is None:
            return kernel
        pack = kernel.pack
        return dataclasses.replace(kernel, pack=lambda x, *rest: pack(self.padded(x), *rest))
