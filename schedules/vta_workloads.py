"""Packed int8 workloads in TE (dense, conv2d) with the requantisation epilogue, and their
numpy int64 references.

Epilogue of real int8 inference: accumulate int32, add an int32 bias, arithmetic shift right,
clip to [lo, hi] (default [-128, 127]; lo = 0 folds a ReLU), store int8; or the fixed-point
sequence of a real per-channel multiplier (requantisation.fixed_point). Each step is its own
TE stage so the schedule can tensorize it onto one ALU instruction; the ALU expressions come from intrinsics.tensor_intrin so the stages
match the intrinsic descriptions exactly.
"""
from __future__ import annotations

from typing import NamedTuple

import numpy as np
from tvm import te, tirx

from vta_sim.errors import CompileError
from intrinsics.tensor_intrin import ALU_EXPRS, req_expr
from requantisation.bounds import INT8_MAX, INT8_MIN
from requantisation.rule import PowerOfTwo, as_requant, reference
from requantisation.stages import ROW, epilogue, vector_inputs
from vta_sim.config import Config
from vta_sim.packing import check_blocks




class PackedGraph(NamedTuple):
    """TE tensors in call order (inputs..., output); the schedules find stages by block name:
    pad (conv input), conv / gemm, the `epilogue` stages, out."""

    tensors: list


def requantize(acc, vectors: dict, vector_index, stages, row_index=None):
    """The epilogue `stages` after an int32 accumulator `acc`; returns the int8 output stage "out".

    `vectors`: {name: placeholder} of the per-channel inputs (and the per-row one, `ROW`);
    `vector_index` maps an acc index to a per-channel input's, `row_index` to the per-row one's."""
    done = {"acc": acc}
    for st in stages:
        if st.op == "copy":     # a sum over one term: its init is the reset, its update the ADD
            src, r = done[st.y], te.reduce_axis((0, 1), name=f"{st.name}_r")
            done[st.name] = te.compute(acc.shape, lambda *i: te.sum(src(*i[:-1], i[-1] + r), axis=r),  # noqa: B023
                                       name=st.name)
            continue
        if isinstance(st.y, int):
            operand = _constant(st.y)
        elif st.y in vectors:
            index = row_index if st.y == ROW else vector_index
            operand = (lambda v, at: lambda i: v(*at(i)))(vectors[st.y], index)
        else:
            operand = (lambda t: lambda i: t(*i))(done[st.y])
        if st.op == "req":
            done[st.name] = _req_stage(done[st.x], operand, st.imm, st.name)
        else:
            done[st.name] = _alu_stage(done[st.x], st.op, operand, st.name)
    last = done[stages[-1].name]
    return te.compute(acc.shape, lambda *i: last(*i).astype("int8"), name="out")


def _alu_stage(x, op: str, operand, name: str):
    return te.compute(x.shape, lambda *i: ALU_EXPRS[op](x(*i), operand(i)), name=name)


def _req_stage(x, operand, imm: tuple, name: str):
    shift, zero_point = imm
    return te.compute(x.shape, lambda *i: req_expr(x(*i), operand(i), shift, zero_point), name=name)


def _constant(value: int):
    imm = tirx.const(int(value), "int32")
    return lambda i: imm


def _vectors(stages, shape) -> dict:
    """The per-channel int32 inputs the epilogue reads, packed like the bias."""
    return {v: te.placeholder(shape, "int32", name=v) for v in vector_inputs(stages)}


def dense(cfg: Config, m: int, k: int, n: int, shift, lo: int = INT8_MIN, hi: int = INT8_MAX,
          row_term: bool = False) -> PackedGraph:
    """out[M, N] = requant(A[M, K] . W[N, K]^T (+ row[M]) + bias[N]) in packed layout (whole
    blocks only: vta_dense pads other shapes before they get here). `shift`, `lo`, `hi`: see
    `epilogue` (a requantisation object in place of the shift carries its own bounds).
    `row_term`: a last int32 input `row`, one value per row (packed (M/B, B, BO), the value in
    every lane), added before the bias."""
    B, BI, BO = cfg.BATCH, cfg.BLOCK_IN, cfg.BLOCK_OUT
    dims = {"m (rows)": (m, B), "k (reduction)": (k, BI), "n (columns)": (n, BO)}
    for name, (v, block) in dims.items():
        check_blocks(name, v, block, CompileError)
    a = te.placeholder((m // B, k // BI, B, BI), "int8", name="data")
    w = te.placeholder((n // BO, k // BI, BO, BI), "int8", name="weight")
    stages = epilogue(as_requant(shift, lo, hi), row_term)
    vectors = _vectors(stages, (n // BO, B, BO))
    if row_term:
        vectors[ROW] = te.placeholder((m // B, B, BO), "int32", name=ROW)
    ko = te.reduce_axis((0, k // BI), name="ko")
    ki = te.reduce_axis((0, BI), name="ki")
    gemm = te.compute(
        (m // B, n // BO, B, BO),
        lambda i, j, b, o: te.sum(a[i, ko, b, ki].astype("int32") * w[j, ko, o, ki].astype("int32"),
                                  axis=[ko, ki]),
        name="gemm")
    out = requantize(gemm, vectors, lambda i: (i[1], i[2], i[3]), stages, lambda i: (i[0], i[2], i[3]))
    return PackedGraph([a, w, *vectors.values(), out])


def conv2d(cfg: Config, n: int, h: int, w: int, ic: int, oc: int, k: int, pad: int, stride: int,
           shift, lo: int = INT8_MIN, hi: int = INT8_MAX, group_blocks: int | None = None) -> PackedGraph:
    """Blocked NCHW{B}n{BI}c x OIHW{BO}o{BI}i conv2d with requantisation (`epilogue`, as for
    `dense`; whole blocks only: vta_conv2d pads other shapes before they get here).

    `group_blocks` = g: a block-diagonal (grouped) conv, ic == oc, in groups of g channel
    blocks: output block c reads only the g input blocks of its group, and the weight holds
    just those (oc/BO, g, k, k, BO, BI) tiles (block diagonal inside for depthwise convs).

    Stage "pad" is the input as the GEMM reads it (zero-padded, or row-subsampled for a
    strided 1x1 conv); it becomes the input DMA."""
    B, BI, BO = cfg.BATCH, cfg.BLOCK_IN, cfg.BLOCK_OUT
    check_blocks("batch", n, B, CompileError)
    check_blocks("input channels", ic, BI, CompileError)
    check_blocks("output channels", oc, BO, CompileError)
    oh, ow = out_size(h, k, pad, stride), out_size(w, k, pad, stride)
    if group_blocks is not None and (ic != oc or (ic // BI) % group_blocks):
        raise CompileError(f"grouped conv: {ic} input / {oc} output channels are not whole groups of "
                           f"{group_blocks} blocks")
    reduce_blocks = ic // BI if group_blocks is None else group_blocks
    data = te.placeholder((n // B, ic // BI, h, w, B, BI), "int8", name="data")
    kernel = te.placeholder((oc // BO, reduce_blocks, k, k, BO, BI), "int8", name="weight")
    stages = epilogue(as_requant(shift, lo, hi))
    vectors = _vectors(stages, (oc // BO, B, BO))
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
    ric = te.reduce_axis((0, reduce_blocks), name="ric")

    def in_block(c, r):
        return r if group_blocks is None else c // group_blocks * group_blocks + r
    rkh = te.reduce_axis((0, k), name="rkh")
    rkw = te.reduce_axis((0, k), name="rkw")
    rii = te.reduce_axis((0, BI), name="rii")
    conv = te.compute(
        (n // B, oc // BO, oh, ow, B, BO),
        lambda i, c, y, x, b, o: te.sum(
            staged[i, in_block(c, ric), y * row_step + rkh, x * stride + rkw, b, rii].astype("int32")
            * kernel[c, ric, rkh, rkw, o, rii].astype("int32"),
            axis=[ric, rkh, rkw, rii]),
        name="conv")
    out = requantize(conv, vectors, lambda i: (i[1], i[4], i[5]), stages)
    return PackedGraph([data, kernel, *vectors.values(), out])


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
def dense_acc(a: np.ndarray, w: np.ndarray, bias: np.ndarray) -> np.ndarray:
    """a (M, K) int8, w (N, K) int8, bias (N,) int32 -> the int64 accumulator + bias (M, N)."""
    return a.astype(np.int64) @ w.astype(np.int64).T + bias.astype(np.int64)


def dense_ref(a: np.ndarray, w: np.ndarray, bias: np.ndarray, shift: int, lo: int = INT8_MIN,
              hi: int = INT8_MAX) -> np.ndarray:
    """a (M, K) int8, w (N, K) int8, bias (N,) int32 -> (M, N) int8, computed in int64."""
    return reference(dense_acc(a, w, bias), PowerOfTwo(shift, lo, hi))


def conv2d_acc(data: np.ndarray, kernel: np.ndarray, bias: np.ndarray, pad: int, stride: int,
               groups: int = 1) -> np.ndarray:
    """NCHW int8 x OIHW int8 + bias (O,) -> the int64 accumulator + bias, NCHW; with `groups`,
    output channel o sees input channels of its group only (kernel (O, C/groups, K, K))."""
    if groups > 1:
        o, per = kernel.shape[0], data.shape[1] // groups
        outs = o // groups
        return np.concatenate([conv2d_acc(data[:, g * per:(g + 1) * per], kernel[g * outs:(g + 1) * outs],
                                          bias[g * outs:(g + 1) * outs], pad, stride)
                               for g in range(groups)], axis=1)
    n, c, h, w = data.shape
    o, _, k, _ = kernel.shape
    oh, ow = out_size(h, k, pad, stride), out_size(w, k, pad, stride)
    # One float64 matrix product over (channel, tap) patches (BLAS, not numpy's int64 loops):
    # int8 products sum exactly in float64's 53-bit mantissa up to 2^38 terms.
    x = np.zeros((n, c, h + 2 * pad, w + 2 * pad), np.float64)
    x[:, :, pad:pad + h, pad:pad + w] = data
    win = np.lib.stride_tricks.sliding_window_view(x, (k, k), axis=(2, 3))[:, :, ::stride, ::stride][:, :, :oh, :ow]
    cols = win.transpose(0, 1, 4, 5, 2, 3).reshape(n, c * k * k, oh * ow)      # (n, c*k*k, oh*ow)
    acc = np.matmul(kernel.reshape(o, c * k * k).astype(np.float64), cols).astype(np.int64).reshape(n, o, oh, ow)
    return acc + bias.astype(np.int64)[None, :, None, None]


def conv2d_ref(data: np.ndarray, kernel: np.ndarray, bias: np.ndarray, pad: int, stride: int,
               shift: int, lo: int = INT8_MIN, hi: int = INT8_MAX) -> np.ndarray:
    """NCHW int8 x OIHW int8 + bias (O,) -> NCHW int8, computed in int64."""
    return reference(conv2d_acc(data, kernel, bias, pad, stride), PowerOfTwo(shift, lo, hi))
