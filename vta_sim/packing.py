"""Packing between plain numpy layouts and the blocked layouts the accelerator reads.

Shared by the hand-written examples and the compiler path.

Data NCHW -> NCHW{B}n{BI}c, kernel OIHW -> OIHW{BO}o{BI}i, GEMM operands (M, K) -> (M/B, K/BI, B, BI)
and (N, K) -> (N/BO, K/BI, BO, BI), bias (C,) -> (C/BO, B, BO) replicated over the batch lanes
(an ALU tensor operand is a whole ACC entry). The pack functions refuse shapes that are not
whole blocks; a caller that wants padding says so with `zero_pad` first (the compiler's ops
pad channels, batch and remainder tiles that way). The caller's arrays are never modified.
"""
from __future__ import annotations

import numpy as np

from .errors import MappingError


def check_blocks(what: str, n: int, block: int, error: type = MappingError) -> int:
    """n // block, refusing (with `error`) a dimension that is not a whole number of blocks."""
    if n <= 0 or n % block:
        lo = n // block * block
        hint = f"{lo} or {lo + block}" if lo > 0 else f"{block}"
        raise error(f"{what} = {n} is not a multiple of the block size {block}; "
                           f"use a multiple such as {hint}")
    return n // block


def zero_pad(array: np.ndarray, shape: tuple[int, ...]) -> np.ndarray:
    """A new array of `shape` holding `array` at the start of every axis and zeros elsewhere."""
    if array.ndim != len(shape) or any(a > s for a, s in zip(array.shape, shape)):
        raise MappingError(f"cannot zero-pad an array of shape {array.shape} to {tuple(shape)}")
    out = np.zeros(shape, array.dtype)
    out[tuple(slice(0, a) for a in array.shape)] = array
    return out


def pack_nchw(data: np.ndarray, B: int, BI: int) -> np.ndarray:
    n, c, h, w = data.shape
    nb, cb = check_blocks("batch", n, B), check_blocks("input channels", c, BI)
    return np.ascontiguousarray(data.reshape(nb, B, cb, BI, h, w).transpose(0, 2, 4, 5, 1, 3))


def unpack_nchw(packed: np.ndarray) -> np.ndarray:
    nb, cb, h, w, b, bi = packed.shape
    return np.ascontiguousarray(packed.transpose(0, 4, 1, 5, 2, 3).reshape(nb * b, cb * bi, h, w))


def pack_oihw(kernel: np.ndarray, BO: int, BI: int) -> np.ndarray:
    o, i, kh, kw = kernel.shape
    ob, ib = check_blocks("output channels", o, BO), check_blocks("input channels", i, BI)
    return np.ascontiguousarray(kernel.reshape(ob, BO, ib, BI, kh, kw).transpose(0, 2, 4, 5, 1, 3))


def pack_rows(matrix: np.ndarray, rows: int, cols: int, what: str) -> np.ndarray:
    """(R, C) -> (R/rows, C/cols, rows, cols): GEMM inputs (rows=B) and weights (rows=BO)."""
    r, c = matrix.shape
    rb, cb = check_blocks(f"{what} rows", r, rows), check_blocks(f"{what} columns", c, cols)
    return np.ascontiguousarray(matrix.reshape(rb, rows, cb, cols).transpose(0, 2, 1, 3))


def unpack_rows(packed: np.ndarray) -> np.ndarray:
    rb, cb, rows, cols = packed.shape
    return np.ascontiguousarray(packed.transpose(0, 2, 1, 3).reshape(rb * rows, cb * cols))


def pack_bias(bias: np.ndarray, B: int, BO: int) -> np.ndarray:
    (c,) = bias.shape
    cb = check_blocks("bias channels", c, BO)
    return np.ascontiguousarray(np.broadcast_to(bias.reshape(cb, 1, BO), (cb, B, BO)))
