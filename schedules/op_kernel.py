"""One compiled accelerator op on plain numpy layouts: what the graph level calls.

The compiled kernel (`intrinsics.CompiledKernel`, its program recorded at compile time) takes
the packed, block-padded layouts the accelerator reads. `OpKernel` wraps it with the op's packing (plain NCHW / (rows, cols) int8,
int32 bias per channel, any shape) and unpacking (crop back to the plain shape), so a caller
never sees blocks. The caller's arrays are never modified.
"""
from __future__ import annotations

from dataclasses import dataclass, field
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


def as_stored(stored: np.ndarray, shape: tuple) -> tuple[np.ndarray, str]:
    """A program's packed input of `shape` taken from the tensor `stored` by the program before:
    (its first rows, "as stored") where their blocks agree, else (a zero-padded copy of what
    both hold, "padded": the taker's tiles want more rows or other blocks than were stored)."""
    rows, blocks = shape[0], shape[1]
    if rows <= stored.shape[0] and stored.shape[1:] == tuple(shape[1:]):
        return stored[:rows], "as stored"
    r, b = min(rows, stored.shape[0]), min(blocks, stored.shape[1])
    data = np.zeros(shape, stored.dtype)
    data[:r, :b] = stored[:r, :b]
    return data, "padded"


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
    rows_out: bool = False                    # its packed output is its plain output's rows packed
                                              # as a dense packs its data (rows/B, cols/BO, B, BO)
    rows_in: bool = False                     # its first packed input is its first plain input so
    weight_heads: int = 0                     # >0: its packed output is that many heads' matmul
                                              # weights (schedules.column_slice.into_weight_blocks)
    last_packed: np.ndarray | None = field(default=None, repr=False, compare=False)  # the last call's

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
        self.last_packed = result_array
        return self.unpack(result_array), result

    def run_stored(self, stored: np.ndarray, *inputs: np.ndarray, backend="sim", trace: bool = False
                   ) -> tuple[np.ndarray, RunResult, str]:
        """Like a call, with the first input taken from `stored`, the packed output of the kernel
        before (`rows_out`) as its program stored it, instead of packed by the host from
        inputs[0] (which only gives its shape): (output, result, "as stored", or "padded" where
        this kernel's tiles take more rows or blocks than were stored and the host copied them
        into a zero-padded tensor). The caller checks `rows_in` and the blocks' sizes."""
        placeholder = np.zeros(inputs[0].shape, inputs[0].dtype)
        data, *rest = self.pack(placeholder, *inputs[1:])
        data, how = as_stored(stored, data.shape)
        (result_array,), result = self.kernel(data, *rest, backend=backend, trace=trace)
        self.last_packed = result_array
        return self.unpack(result_array), result, how
