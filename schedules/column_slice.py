"""A dense's output stored as a slice of columns of a wider tensor, or its data loaded from
one: its program's STOREs or LOADs re-addressed, nothing else changed.

Attention's heads: each head's attn.V program writes its d columns of the merged rows
(tokens x heads d), the layout the output projection loads as its data, so the head merge
(a Transpose and a Reshape) needs no host copy. The slice's rows are `total` column blocks
apart instead of its own; a store of whole rows as one run becomes a store of rows. Every
program that writes a slice stores into the same tensor, kept between them
(`vta_sim.runtime.OutputView` at offset 0: the tensor enters each program's DRAM image whole
and leaves it whole, as device DRAM keeps it).
"""
from __future__ import annotations

import dataclasses
import time

import numpy as np

from intrinsics.build import CompiledKernel
from intrinsics.calls import Load2D, Store2D
from intrinsics.host import Recording
from intrinsics.recorded import KernelProgram
from vta_sim.errors import CompileError
from vta_sim.runtime import OutputView


def _rows(c, blocks: int):
    """A STORE (or LOAD) of the kernel's (rows, `blocks`) tensor as rows of entries `blocks` apart."""
    if c.y_size == 1 and c.offset % blocks == 0 and c.x_size % blocks == 0 and c.x_size > blocks:
        return dataclasses.replace(c, x_size=blocks, y_size=c.x_size // blocks, x_stride=blocks)
    if c.y_size > 1 and c.x_stride != blocks or c.offset % blocks + c.x_size > blocks:
        raise CompileError(f"a {type(c).__name__} of {c.y_size} rows of {c.x_size} entries {c.x_stride} apart from entry "
                           f"{c.offset}: not rows of the output's {blocks} column blocks")
    return c


def into_columns(kernel: CompiledKernel, total: int, first: int) -> CompiledKernel:
    """`kernel` (one output of packed rows, (rows, blocks, B, BO)) storing into column blocks
    [first, first + blocks) of a (rows, `total`, B, BO) tensor; call it with
    `views={output: OutputView(tensor, 0)}`."""
    start = time.perf_counter()
    (output,) = kernel.outputs
    name, shape, dtype = kernel.params[output]
    rows, blocks = shape[0], shape[1]
    if first < 0 or first + blocks > total:
        raise CompileError(f"column blocks [{first}, {first + blocks}) of a tensor of {total}")
    program = kernel.program
    calls = []
    for c in program.calls:
        if isinstance(c, Store2D) and c.param == output:
            c = _rows(c, blocks)
            row, block = divmod(c.offset, blocks)
            c = dataclasses.replace(c, offset=row * total + first + block, x_stride=total)
        calls.append(c)
    params = list(kernel.params)
    params[output] = (name, (rows, total, *shape[2:]), dtype)
    recording = Recording(program.config_text, program.kinds, tuple(calls))
    view = OutputView(np.zeros(params[output][1], dtype), 0)
    built = KernelProgram.build(recording, params, list(kernel.outputs), {output: view})
    sliced = CompiledKernel(None, params, list(kernel.outputs), kernel.compile_s + time.perf_counter() - start,
                            built)
    sliced.program_for({output: view})        # the layout every call uses, built once
    return sliced


def from_columns(kernel: CompiledKernel, param: int, total: int, first: int) -> CompiledKernel:
    """`kernel` loading its input `param` (packed rows, (rows, blocks, B, BI)) from column blocks
    [first, first + blocks) of a (rows, `total`, B, BI) tensor, which it then takes whole:
    attention's K for one head, read from the K projection's rows as that program stored them.
    Loads with padding are refused."""
    start = time.perf_counter()
    name, shape, dtype = kernel.params[param]
    rows, blocks = shape[0], shape[1]
    if first < 0 or first + blocks > total:
        raise CompileError(f"column blocks [{first}, {first + blocks}) of a tensor of {total}")
    program = kernel.program
    calls = []
    for c in program.calls:
        if isinstance(c, Load2D) and c.param == param:
            if c.y_pad_0 or c.y_pad_1 or c.x_pad_0 or c.x_pad_1:
                raise CompileError("a load with padding of the input to re-address")
            c = _rows(c, blocks)
            row, block = divmod(c.offset, blocks)
            c = dataclasses.replace(c, offset=row * total + first + block, x_stride=total)
        calls.append(c)
    params = list(kernel.params)
    params[param] = (name, (rows, total, *shape[2:]), dtype)
    recording = Recording(program.config_text, program.kinds, tuple(calls))
    built = KernelProgram.build(recording, params, list(kernel.outputs))
    return CompiledKernel(None, params, list(kernel.outputs), kernel.compile_s + time.perf_counter() - start, built)
