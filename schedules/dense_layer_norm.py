"""A dense, the residual add after it and a post-norm LayerNorm in one program, the LayerNorm on
the accumulator the dense just wrote (BERT's attention output and feed-forward output).

The LayerNorm's ALU program (schedules.vta_layer_norm) wants a row per lane: 8 tokens side by
side, a token's D channels on D consecutive ACC entries. A dense writes the other way round
(a token's channels across the lanes of one entry), so this one is computed transposed, as the
attention's scores are (S^T = K.Q^T): Y^T = W . X^T, the constant weight W (D, K) the GEMM's
input rows and the tokens X (T, K) its weight blocks, each 8 x 8 block of X as it is. A tile
is every channel of c blocks of 8 tokens, so its D c accumulator entries are c row groups of
the LayerNorm, interleaved (group g's channel i at entry i c + g). The dense's bias (and its input's zero point, folded into it) is then one
value per row of Y^T: the kernel's row term. Its requantisation must be the same for every
channel (per-tensor weights), for a channel is now an entry, not a lane; its bias adds (an
Add of a constant torch exports beside the MatMul) add one constant per row.

Per tile, after the dense's REQ: the residual's tokens loaded (ACC_8BIT) into the LayerNorm's
scratch, the REQ sum of the two (requantisation.add), the LayerNorm, the store. Bit for bit the dense, the
add and the LayerNorm run one after another (tests/schedules/test_dense_layer_norm.py).
"""
from __future__ import annotations

import numpy as np

from requantisation import Requant
from requantisation.add import ReqSumParams
from requantisation.layer_norm import LayerNormParams
from vta_sim.config import Config
from vta_sim.errors import CompileError

from .fused_epilogue import ConstantAddStep, LayerNormStep, dense_epilogue_kernel
from .op_kernel import OpKernel


def misfit(cfg: Config) -> str | None:
    """Why no config of this shape runs the kernel, or None."""
    if cfg.BATCH != 1:
        return (f"a dense computed transposed for a layer norm puts 8 tokens in the lanes of one entry; "
                f"{cfg.name} has {cfg.BATCH} rows an entry (BATCH 1 is needed)")
    return None


def dense_add_layer_norm_kernel(cfg: Config, tokens: int, k: int, d: int, requant: Requant, add: ReqSumParams,
                                first: int, ln: LayerNormParams, bias_adds: tuple = (),
                                vthreads: int = 2) -> OpKernel:
    """LayerNorm(REQ sum of dense(x) and r): plain int8 x (tokens, k) and residual r (tokens, d),
    then the dense's constants as `graph.ops.dense` reads them, W (d, k) int8, bias (d,) int32
    and its requantisation's vectors, each one value for every channel -> int8 (tokens, d).
    `first`: the add's operand (0 or 1) the dense's output is; `bias_adds`: (ReqSumParams, C
    per channel) of each constant add fused into the dense before the residual add."""
    why = misfit(cfg)
    if why:
        raise CompileError(why)
    if ln.length != d:
        raise CompileError(f"a layer norm over {ln.length} after a dense of {d} channels: they must agree")
    steps = (*(ConstantAddStep(cfg, p, np.asarray(c, np.int64), d, per_row=True) for p, c in bias_adds),
             LayerNormStep(cfg, ln, residual=(add, first)))
    inner = dense_epilogue_kernel(cfg, d, k, tokens, requant, steps, vthreads, row_term=True)
    inner_pack, inner_unpack = inner.pack, inner.unpack

    def pack(x: np.ndarray, residual: np.ndarray, w: np.ndarray, bias: np.ndarray, *channels: np.ndarray) -> tuple:
        for v in channels:
            if np.unique(np.asarray(v)).size > 1:
                raise CompileError("a dense computed transposed takes one requantisation for every channel; "
                                   "this one has per-channel values")
        per_token = [np.full(tokens, np.asarray(v).reshape(-1)[0], np.asarray(v).dtype) for v in channels]
        return inner_pack(np.asarray(w), np.asarray(x).reshape(tokens, k), np.zeros(tokens, np.int32), *per_token,
                          np.asarray(bias, np.int32), np.asarray(residual).reshape(tokens, d))

    def unpack(out: np.ndarray) -> np.ndarray:
        return np.ascontiguousarray(inner_unpack(out).T)

    return OpKernel("dense+add+layer_norm", inner.kernel, pack, unpack, macs=inner.macs, tiles=inner.tiles,
                    tile_source=inner.tile_source)
