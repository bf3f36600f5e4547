"""One compiled accelerator op on plain numpy layouts: what the graph level calls.

The compiled kernel (`intrinsics.CompiledKernel`, its program recorded at compile time) takes
the packed, block-padded layouts the accelerator reads. `OpKernel` wraps it with the op's packing (plain NCHW / (rows, cols) int8,
int32 bias per channel, any shape) and unpacking (crop back to the plain shape), so a caller
never sees blocks. The caller's arrays are never modified.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Callable

import numpy as np

from intrinsics.build import CompiledKernel
from vta_sim.result import RunResult


@dataclass(frozen=True)
class TileSource:
    """Where an op's tiles came from, for reports: "given" (the caller), "tuning database" (a
    record of `database`), or "cycle model" (`database`, when one was consulted, had none)."""
    how: str
    database: str | None = None

    def describe(self) -> str:
        if self.how == "tuning database":
            return f"tuned record of {self.database}"
        if self.database:
            return f"{self.how} (no record in {self.database})"
        return self.how


@dataclass
class OpKernel:
    op: str                                   # "conv2d", "dense", "max_pool", "add", ...
    kernel: CompiledKernel                    # the packed-layout kernel and its program
    pack: Callable[..., tuple]                # plain numpy inputs -> the kernel's packed inputs
    unpack: Callable[[np.ndarray], np.ndarray]  # packed output -> plain numpy output
    macs: int = 0                             # multiply-accumulates of the plain op (0: none)
    tiles: object = None                      # the tiling chosen, for reports
    tile_source: TileSource | None = None     # where the tiles came from, for reports
    layout: str = ""                          # how the host lays the op out for another kernel,
                                              # for reports ("im2col": a conv as a dense)

    @property
    def compile_s(self) -> float:
        return self.kernel.compile_s

    @property
    def packed_output(self) -> tuple:
        """The shape of the packed output the program stores (blocks, padding and all)."""
        (index,) = self.kernel.outputs
        return self.kernel.params[index][1]

    def __call__(self, *inputs: np.ndarray, backend="sim", trace: bool = False, out=None
                 ) -> tuple[np.ndarray, RunResult]:
        """`out` (a vta_sim.runtime.OutputView): the program stores its packed output there,
        in a slice of a larger tensor, instead of a buffer of its own."""
        views = None if out is None else {self.kernel.outputs[0]: out}
        (result_array,), result = self.kernel(*self.pack(*inputs), backend=backend, trace=trace, views=views)
        return self.unpack(result_array), result
