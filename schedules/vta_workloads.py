"""Packed int8 workloads in TE (dense, conv2d) with the requantisation epilogue, and their
numpy int64 references.

Epilogue of real int8 inference: accumulate int32, add an int32 bias, arithmetic shift right,
clip to [lo, hi] (default [-128, 127]; lo = 0 folds a ReLU), store int8. Each step is its own
TE stage so the schedule can tensorize it onto one ALU instruction; the ALU expressions come from intrinsics.tensor_intrin so the stages
match the intrinsic descriptions exactly.
"""
from __future__ import annotations

from typing import NamedTuple

import numpy as np
from tvm import te, tirx

from intrinsics.errors import CompileError
from intrinsics.tensor_intrin import ALU_EXPRS
from vta_sim.config import Config
from vta_sim.packing import check_blocks


INT8_MIN, INT8_MAX = -128, 127


class Workload(NamedTuple):
    """TE tensors in call order (inputs..., output); the schedules find stages by block name:
    pad (conv input), conv / gemm, bias_add, shr, clip_lo, clip_hi, out."""

    tensors: list


#: The epilogue stages in order: block name, ALU op, immediate (None: the bias tensor;
#: "shift": the workload's shift; a number: the default clip bound, which `epilogue` replaces by
#: the op's lo/hi). The schedules tensorize each onto one ALU instruction.
EPILOGUE = (("bias_add", "add", None), ("shr", "shr", "shift"), ("clip_lo", "max", INT8_MIN),
            ("clip_hi", "min", INT8_MAX))


def check_requant(shift: int, lo: int = INT8_MIN, hi: int = INT8_MAX) -> None:
    """Refuse epilogue parameters the ALU or the int8 store cannot honour."""
    if not 0 <= shift <= 31:
        raise CompileError(f"shift = {shift}: the ALU shifts by 0..31")
    if not INT8_MIN <= lo <= hi <= INT8_MAX:
        raise CompileError(f"clip bounds lo = {lo}, hi = {hi}: need {INT8_MIN} <= lo <= hi <= "
                           f"{INT8_MAX} (the result is stored as int8)")


def epilogue(shift: int, lo: int = INT8_MIN, hi: int = INT8_MAX) -> tuple:
    """EPILOGUE with each immediate resolved: (block name, ALU op, value or None for the bias)."""
    check_requant(shift, lo, hi)
    values = {"shr": shift, "clip_lo": lo, "clip_hi": hi}
    return tuple((name, op, None if imm is None else values[name]) for name, op, imm in EPILOGUE)


def requantize(acc, bias, shift: int, bias_index, lo: int = INT8_MIN, hi: int = INT8_MAX):
    """The epilogue after an int32 accumulator `acc`; returns the int8 output stage "out"."""
    x = acc
    for name, op, value in epilogue(shift, lo, hi):
        if value is None:
            x = _alu_stage(x, op, lambda i: bias(*bias_index(i)), name)
        else:
            x = _alu_stage(x, op, _constant(value), name)
    return te.compute(acc.shape, lambda *i: x(*i).astype("int8"), name="out")


def _alu_stage(x, op: str, operand, name: str):
    return te.compute(x.shape, lambda *i: ALU_EXPRS[op](x(*i), operand(i)), name=name)


def _constant(value: int):
    imm = tirx.const(int(value), "int32")
    return lambda i: imm


def dense(cfg: Config, m: int, k: int, n: int, shift: int, lo: int = INT8_MIN,
          hi: int = INT8_MAX) -> Workload:
    """out[M, N] = requant(A[M, K] . W[N, K]^T + bias[N]) in packed layout (whole blocks only:
    vta_dense pads other shapes before they get here)."""
    B, BI, BO = cfg.BATCH, cfg.BLOCK_IN, cfg.BLOCK_OUT
    dims = {"m (rows)": (m, B), "k (reduction)": (k, BI), "n (columns)": (n, BO)}
    for name, (v, block) in dims.items():
        check_blocks(name, v, block, CompileError)
    a = te.placeholder((m // B, k // BI, B, BI), "int8", name="data")
    w = te.placeholder((n // BO, k // BI, BO, BI), "int8", name="weight")
    bias = te.placeholder((n // BO, B, BO), "int32", name="bias")
    ko = te.reduce_axis((0, k // BI), name="ko")
    ki = te.reduce_axis((0, BI), name="ki")
    gemm = te.compute(
        (m // B, n // BO, B, BO),
        lambda i, j, b, o: te.sum(a[i, ko, b, ki].astype("int32") * w[j, ko, o, ki].astype("int32"),
                                  axis=[ko, ki]),
        name="gemm")
    out = requantize(gemm, bias, shift, lambda i: (i[1], i[2], i[3]), lo, hi)
    return Workload([a, w, bias, out])


def conv2d(cfg: Config, n: int, h: int, w: int, ic: int, oc: int, k: int, pad: int, stride: int,
           shift: int, lo: int = INT8_MIN, hi: int = INT8_MAX) -> Workload:
    """Blocked NCHW{B}n{BI}c x OIHW{BO}o{BI}i conv2d with requantisation (whole blocks only:
    vta_conv2d pads other shapes before they get here).

    Stage "pad" is the input as the GEMM reads it (zero-padded, or row-subsampled for a
    strided 1x1 conv); it becomes the input DMA."""
    B, BI, BO = cfg.BATCH, cfg.BLOCK_IN, cfg.BLOCK_OUT
    check_blocks("batch", n, B, CompileError)
    check_blocks("input channels", ic, BI, CompileError)
    check_blocks("output channels", oc, BO, CompileError)
    oh, ow = out_size(h, k, pad, stride), out_size(w, k, pad, stride)
    data = te.placeholder((n // B, ic // BI, h, w, B, BI), "int8", name="data")
    kernel = te.placeholder((oc // BO, ic // BI, k, k, BO, BI), "int8", name="weight")
    bias = te.placeholder((oc // BO, B, BO), "int32", name="bias")
    if subsamples_rows(k, pad, stride):
        # A strided 1x1 conv reads every stride-th row only: stage just those (a DMA with a
        # row stride), so the skipped rows are neither moved nor held on chip.
        row_step = 1
        staged = te.compute((n // B, ic // BI, oh, w, B, BI),
                            lambda i, c, y, x, b, e: data[i, c, y * stride, x, b, e], name="pad")
    else:
        row_step = stride
        staged = te.compute(
            (n // B, ic // BI, h + 2 * pad, w + 2 * pad, B, BI),
            lambda i, c, y, x, b, e: tirx.if_then_else(
                tirx.all(y >= pad, y < h + pad, x >= pad, x < w + pad),
                data[i, c, y - pad, x - pad, b, e], tirx.const(0, "int8")),
            name="pad")
    ric = te.reduce_axis((0, ic // BI), name="ric")
    rkh = te.reduce_axis((0, k), name="rkh")
    rkw = te.reduce_axis((0, k), name="rkw")
    rii = te.reduce_axis((0, BI), name="rii")
    conv = te.compute(
        (n // B, oc // BO, oh, ow, B, BO),
        lambda i, c, y, x, b, o: te.sum(
            staged[i, ric, y * row_step + rkh, x * stride + rkw, b, rii].astype("int32")
            * kernel[c, ric, rkh, rkw, o, rii].astype("int32"),
            axis=[ric, rkh, rkw, rii]),
        name="conv")
    out = requantize(conv, bias, shift, lambda i: (i[1], i[4], i[5]), lo, hi)
    return Workload([data, kernel, bias, out])


def subsamples_rows(k: int, pad: int, stride: int) -> bool:
    """Whether the conv's input stage keeps only every stride-th row (strided 1x1, no padding)."""
    return k == 1 and pad == 0 and stride > 1


def out_size(size: int, k: int, pad: int, stride: int) -> int:
    if stride < 1 or k < 1 or pad < 0:
        raise CompileError(f"kernel {k}, pad {pad}, stride {stride}: need k >= 1, pad >= 0, "
                           "stride >= 1")
    if size + 2 * pad < k:
        raise CompileError(f"input size {size} with pad {pad} is smaller than the kernel {k}")
    return (size + 2 * pad - k) // stride + 1


# ----------------------------------------------------------------------------- references
def requantize_ref(acc: np.ndarray, shift: int, lo: int = INT8_MIN, hi: int = INT8_MAX) -> np.ndarray:
    return np.clip(acc >> shift, lo, hi).astype(np.int8)


def dense_ref(a: np.ndarray, w: np.ndarray, bias: np.ndarray, shift: int, lo: int = INT8_MIN,
              hi: int = INT8_MAX) -> np.ndarray:
    """a (M, K) int8, w (N, K) int8, bias (N,) int32 -> (M, N) int8, computed in int64."""
    acc = a.astype(np.int64) @ w.astype(np.int64).T + bias.astype(np.int64)
    return requantize_ref(acc, shift, lo, hi)


def conv2d_ref(data: np.ndarray, kernel: np.ndarray, bias: np.ndarray, pad: int, stride: int,
               shift: int, lo: int = INT8_MIN, hi: int = INT8_MAX) -> np.ndarray:
    """NCHW int8 x OIHW int8 + bias (O,) -> NCHW int8, computed in int64."""
    n, c, h, w = data.shape
    o, _, k, _ = kernel.shape
    oh, ow = out_size(h, k, pad, stride), out_size(w, k, pad, stride)
    x = np.zeros((n, c, h + 2 * pad, w + 2 * pad), np.int64)
    x[:, :, pad:pad + h, pad:pad + w] = data
    acc = np.zeros((n, o, oh, ow), np.int64)
    wk = kernel.astype(np.int64)
    for dy in range(k):
        for dx in range(k):
            patch = x[:, :, dy:dy + stride * oh:stride, dx:dx + stride * ow:stride]
            acc += np.einsum("nchw,oc->nohw", patch, wk[:, :, dy, dx], optimize=True)
    return requantize_ref(acc + bias.astype(np.int64)[None, :, None, None], shift, lo, hi)
