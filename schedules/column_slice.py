"""A dense's output stored as a slice of columns of a wider tensor, or as the 8 x 8 weight
blocks of the matmul after it, or its data loaded from columns of a wider tensor: its
program's STOREs or LOADs re-addressed, nothing else changed.

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

from .op_kernel import OpKernel


def _rows(c, blocks: int):
    """A STORE (or LOAD) of the kernel's (rows, `blocks`) tensor as rows of entries `blocks` apart."""
    if c.y_size == 1 and c.offset % blocks == 0 and c.x_size % blocks == 0 and c.x_size > blocks:
        return dataclasses.replace(c, x_size=blocks, y_size=c.x_size // blocks, x_stride=blocks)
    if c.y_size > 1 and c.x_stride != blocks or c.offset % blocks + c.x_size > blocks:
        raise CompileError(f"a {type(c).__name__} of {c.y_size} rows of {c.x_size} entries {c.x_stride} apart from entry "
                           f"{c.offset}: not rows of the output's {blocks} column blocks")
    return c


def _readdressed(kernel: CompiledKernel, param: int, kind: type, total: int, first: int) -> tuple:
    """(params, recording) of `kernel` with its calls of `kind` (Store2D or Load2D) on parameter
    `param` (packed rows, (rows, blocks, B, lanes)) moved to column blocks [first, first +
    blocks) of a (rows, `total`, B, lanes) tensor, which becomes the parameter."""
    name, shape, dtype = kernel.params[param]
    rows, blocks = shape[0], shape[1]
    if first < 0 or first + blocks > total:
        raise CompileError(f"column blocks [{first}, {first + blocks}) of a tensor of {total}")
    calls = []
    for c in kernel.program.calls:
        if isinstance(c, kind) and c.param == param:
            if isinstance(c, Load2D) and (c.y_pad_0 or c.y_pad_1 or c.x_pad_0 or c.x_pad_1):
                raise CompileError("a load with padding of the input to re-address")
            c = _rows(c, blocks)
            row, block = divmod(c.offset, blocks)
            c = dataclasses.replace(c, offset=row * total + first + block, x_stride=total)
        calls.append(c)
    params = list(kernel.params)
    params[param] = (name, (rows, total, *shape[2:]), dtype)
    return params, Recording(kernel.program.config_text, kernel.program.kinds, tuple(calls))


def into_columns(kernel: CompiledKernel, total: int, first: int) -> CompiledKernel:
    """`kernel` (one output of packed rows, (rows, blocks, B, BO)) storing into column blocks
    [first, first + blocks) of a (rows, `total`, B, BO) tensor; call it with
    `views={output: OutputView(tensor, 0)}`."""
    start = time.perf_counter()
    (output,) = kernel.outputs
    params, recording = _readdressed(kernel, output, Store2D, total, first)
    view = OutputView(np.zeros(params[output][1], params[output][2]), 0)
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
    params, recording = _readdressed(kernel, param, Load2D, total, first)
    built = KernelProgram.build(recording, params, list(kernel.outputs))
    return CompiledKernel(None, params, list(kernel.outputs), kernel.compile_s + time.perf_counter() - start, built)


def into_weight_blocks(op: OpKernel, heads: int, m: int, n: int) -> OpKernel:
    """`op` (a dense of plain (m, n) output whose tiles are one column block wide, BATCH 1)
    storing its output as `heads` matmul weights: head h's columns [h n/heads, (h+1) n/heads) as
    8 x 8 blocks [8 rows][8 columns], (row group, column block) in row-major order, which is
    how a matmul loads its weight (attention's Q for S^T = K.Q^T). Each tile's rows are stored
    one group of 8 at a time; rows past m, in the last group, read as zeros (never written)."""
    kernel = op.kernel
    (output,) = kernel.outputs
    name, shape, dtype = kernel.params[output]
    rows, blocks, batch, lanes = shape
    if batch != 1 or blocks % heads:
        raise CompileError(f"{blocks} column blocks of batch {batch} as the weights of {heads} heads")
    per_head, groups = blocks // heads, -(-rows // lanes)
    calls = []
    for c in kernel.program.calls:
        if not (isinstance(c, Store2D) and c.param == output):
            calls.append(c)
            continue
        c = _rows(c, blocks)
        if c.x_size != 1:
            raise CompileError(f"a STORE of rows of {c.x_size} entries: tiles of one column block are needed")
        row0, block = divmod(c.offset, blocks)
        head, within = divmod(block, per_head)
        q = row0
        while q < row0 + c.y_size:
            run = min(lanes - q % lanes, row0 + c.y_size - q)
            at = ((head * groups + q // lanes) * per_head + within) * lanes + q % lanes
            calls.append(Store2D(output, at, run, 1, run, c.sram + q - row0))
            q += run
    params = list(kernel.params)
    params[output] = (name, (heads * groups * per_head * lanes, 1, lanes), dtype)
    program = kernel.program
    built = KernelProgram.build(Recording(program.config_text, program.kinds, tuple(calls)), params,
                                list(kernel.outputs))
    compiled = CompiledKernel(None, params, list(kernel.outputs), kernel.compile_s, built)

    def unpack(out):
        b = out.reshape(heads, groups, per_head, lanes, lanes)     # [head][group][block][row][lane]
        return np.ascontiguousarray(b.transpose(1, 3, 0, 2, 4).reshape(groups * lanes, blocks * lanes)[:m, :n])
    return dataclasses.replace(op, kernel=compiled, unpack=unpack, rows_out=False, weight_heads=heads)
