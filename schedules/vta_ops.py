"""conv2d and dense of any shape as `OpKernel`s: what the graph level compiles a layer into.

The packed kernels (`vta_conv2d`, `vta_dense`) compute whole blocks and whole tiles. These
wrappers choose the tiles, compile, and give the kernel a plain-numpy interface: the inputs
are checked, zero-padded (batch, channels, reduction, remainder tiles; zero bias for padded
output channels) and packed into new arrays, and the output is cropped back to the plain
shape, so padded lanes never reach the caller.
"""
from __future__ import annotations

import math

import numpy as np

from vta_sim.errors import CompileError
from requantisation import MultiplyShift, PowerOfTwo, Requant, ScaledRequant
from requantisation.multiply_shift import from_power_of_two, power_of_two_vectors
from requantisation.stages import ROW, epilogue, vector_inputs
from vta_sim import packing as pk
from vta_sim.config import Config

from . import vta_conv2d as vc
from . import vta_dense as vd
from . import tuning_db
from . import vta_workloads as wl
from .op_kernel import OpKernel, TileSource
from .tiled_op import TiledOp


def _positive(op: str, **dims) -> None:
    bad = {k: v for k, v in dims.items() if not isinstance(v, (int, np.integer)) or v < 1}
    if bad:
        raise CompileError(f"{op}: {', '.join(f'{k} = {v!r}' for k, v in bad.items())}; "
                           "every dimension must be a positive integer")


def _inputs(op: str, inputs: tuple, expected: dict) -> list:
    """The call's arrays, checked against `expected` {name: (shape, dtype)}; refuses anything else."""
    if len(inputs) != len(expected):
        raise CompileError(f"{op}: expected {len(expected)} inputs ({', '.join(expected)}), "
                           f"got {len(inputs)}")
    arrays = []
    for array, (name, (shape, dtype)) in zip(inputs, expected.items()):
        array = np.asarray(array)
        if array.shape != tuple(shape) or array.dtype != np.dtype(dtype):
            raise CompileError(f"{op} input {name}: expected {dtype}{list(shape)}, got "
                               f"{array.dtype}{list(array.shape)}")
        arrays.append(array)
    return arrays


def _tiles(cfg: Config, op: TiledOp, s, vthreads: int, tiles, requant) -> tuple:
    """(tiles, where they came from): `tiles` if given, else the tuning database's record for the
    shape, else the cycle model's choice (`op.choose_tiles`). A record that no longer suits
    the shape is refused loudly. Records are measured with the power-of-two epilogue, so a
    ScaledRequant (more ACC, a longer epilogue) always takes the cycle model's choice."""
    if tiles is not None:
        return tiles, TileSource("given")
    if isinstance(requant, ScaledRequant):
        return op.choose_tiles(cfg, s, vthreads, requant), TileSource("cycle model")
    database = str(tuning_db.db_path())
    record = tuning_db.lookup(cfg, op.name, s, vthreads)
    if record is None:
        return op.choose_tiles(cfg, s, vthreads, requant), TileSource("cycle model", database)
    tuned = op.tiles_type(**record["tiles"])
    why = op.usable(cfg, s, tuned)
    if why:
        raise CompileError(f"tuning database {database}: tiles {tuned} for {op.name} {s} are "
                           f"unusable ({why}); re-tune or delete the record")
    return tuned, TileSource("tuning database", database)


def _compiled(cfg: Config, op: TiledOp, s, vthreads: int, tiles, requant) -> tuple:
    """(tiles, their source, compiled kernel, the padded shape it computes) of `op` on `s`."""
    t, source = _tiles(cfg, op, s, vthreads, tiles, requant)
    return t, source, op.build(cfg, s, t, requant), op.computed_shape(cfg, s, t)


def _channel_inputs(op: str, requant, channels: int) -> dict:
    """The per-channel int32 inputs after data and weight: the bias, and with a ScaledRequant
    a_min, a_max, m_hi, m_lo (requantisation.ChannelParams), with a MultiplyShift m, each of
    length `channels`."""
    if not isinstance(requant, (PowerOfTwo, ScaledRequant, MultiplyShift)):
        raise CompileError(f"{op}: requant {requant!r} is not a requantisation.Requant (PowerOfTwo, "
                           "ScaledRequant or MultiplyShift)")
    return {v: ((channels,), "int32") for v in vector_inputs(epilogue(requant))}


def chosen_requant(cfg: Config, op: TiledOp, s, vthreads: int, tiles, requant: Requant) -> Requant:
    """What the kernel's epilogue computes. A PowerOfTwo runs as one REQ instruction
    (multiply_shift.from_power_of_two: its shift, MAX and MIN become one pass, its vectors made
    from the caller's bias by `_kernel_vectors`) where the cycle model says that is cheaper; on
    small tiles REQ's deeper pipeline and its multiplier entries can cost more than they save (a
    dense of one row). The other forms as they are."""
    if not isinstance(requant, PowerOfTwo):
        return requant
    req = from_power_of_two(requant.shift, requant.lo, requant.hi)

    def cycles(r: Requant) -> float:
        try:
            t = tiles if tiles is not None else op.choose_tiles(cfg, s, vthreads, r)
            return float(op.estimate_cycles(cfg, s, t, r))
        except CompileError:
            return math.inf
    return req if cycles(req) < cycles(requant) else requant


def _kernel_vectors(requant: Requant, kernel_requant: Requant, vectors: list) -> list:
    """The caller's per-channel vectors as the kernel of `kernel_requant` reads them."""
    if isinstance(requant, PowerOfTwo) and isinstance(kernel_requant, MultiplyShift):
        return list(power_of_two_vectors(vectors[0], requant.shift))
    return vectors


def _pack_channels(arrays, padded: int, cfg: Config) -> tuple:
    """Per-channel vectors as the bias is packed: one ACC entry per channel block, replicated
    over the batch lanes, zero for padded channels."""
    return tuple(pk.pack_bias(pk.zero_pad(v, (padded,)), cfg.BATCH, cfg.BLOCK_OUT) for v in arrays)


def _pack_rows_term(row: np.ndarray, padded: int, cfg: Config) -> np.ndarray:
    """A per-row vector as dense's row term reads it: (padded/BATCH, BATCH, BLOCK_OUT), each row's
    value in every lane, zero for padded rows."""
    column = pk.zero_pad(row.astype(np.int32), (padded,)).reshape(-1, cfg.BATCH, 1)
    return np.ascontiguousarray(np.broadcast_to(column, (*column.shape[:2], cfg.BLOCK_OUT)))


def block_group_weights(weight: np.ndarray, groups: int, channels: int, group_width: int) -> np.ndarray:
    """Grouped OIHW weights (O, O/groups, K, K) -> (channels, group_width, K, K): per output
    channel, its block group's input channels, zero outside its own group (block diagonal)."""
    o, per, kh, kw = weight.shape
    out = np.zeros((channels, group_width, kh, kw), weight.dtype)
    for c in range(o):
        first = (c // per) * per - (c // group_width) * group_width    # its group's first input
        out[c, first:first + per] = weight[c]
    return out


def conv2d_kernel(cfg: Config, n, h, w, ic, oc, k, pad, stride, requant: Requant,
                  vthreads=2, tiles=None, groups: int = 1) -> OpKernel:
    """`conv2d_kernel_for` of the shape given dimension by dimension."""
    return conv2d_kernel_for(cfg, vc.ConvShape(n, h, w, ic, oc, k, pad, stride, groups), requant, vthreads, tiles)


def conv2d_kernel_for(cfg: Config, s: vc.ConvShape, requant: Requant, vthreads=2, tiles=None) -> OpKernel:
    """A compiled conv2d of shape `s`: (N,IC,H,W) int8 data, (OC,IC,K,K) int8 weight, (OC,) int32
    bias -> (N,OC,OH,OW) int8. A ScaledRequant adds the (OC,) int32 inputs a_min, a_max, m_hi,
    m_lo (requantisation.ChannelParams) after the bias. `tiles` (a vta_conv2d.ConvTiles)
    overrides the automatic choice and carries its own thread count; otherwise the tuning
    database's tiles, else choose_tiles' (two threads fall back to one where they cannot help)."""
    n, h, w, ic, oc, k, pad, stride, groups = s.n, s.h, s.w, s.ic, s.oc, s.k, s.pad, s.stride, s.groups
    _positive("conv2d", n=n, h=h, w=w, ic=ic, oc=oc, k=k, stride=stride, groups=groups)
    for size in (h, w):
        wl.out_size(size, k, pad, stride)      # refuses impossible kernel/pad/stride early
    if ic % groups or oc % groups:
        raise CompileError(f"conv2d: {ic} input / {oc} output channels are not divisible by groups {groups}")
    channels = _channel_inputs("conv2d", requant, oc)
    gb = vc.group_blocks(cfg, s)
    kernel_requant = chosen_requant(cfg, vc.CONV2D, s, vthreads, tiles, requant)
    t, source, kernel, c = _compiled(cfg, vc.CONV2D, s, vthreads, tiles, kernel_requant)
    B, BI, BO = cfg.BATCH, cfg.BLOCK_IN, cfg.BLOCK_OUT

    def pack(*inputs):
        data, weight, *vectors = _inputs("conv2d", inputs, {
            "data": ((n, ic, h, w), "int8"), "weight": ((oc, ic // groups, k, k), "int8"), **channels})
        vectors = _kernel_vectors(requant, kernel_requant, vectors)
        if gb is not None:
            weight = block_group_weights(weight, groups, oc, gb * BI)
        return (pk.pack_nchw(pk.zero_pad(data, (c.n, c.ic, c.h, c.w)), B, BI),
                pk.pack_oihw(pk.zero_pad(weight, (c.oc, weight.shape[1] if gb else c.ic, k, k)), BO, BI),
                *_pack_channels(vectors, c.oc, cfg))

    def unpack(out):
        return np.ascontiguousarray(pk.unpack_nchw(out)[:n, :oc, :s.oh, :s.ow])

    return OpKernel("conv2d", kernel, pack, unpack, macs=s.macs(), tiles=t, tile_source=source)


def dense_kernel(cfg: Config, m, k, n, requant: Requant, vthreads=2,
                 tiles=None, row_term: bool = False) -> OpKernel:
    """A compiled dense: (M,K) int8 data, (N,K) int8 weight, (N,) int32 bias -> (M,N) int8.
    A ScaledRequant adds the (N,) int32 inputs a_min, a_max, m_hi, m_lo after the bias.
    `row_term`: a last (M,) int32 input added to every column of its row before the bias.
    `tiles` (a vta_dense.DenseTiles) overrides the tuning database and the automatic choice."""
    _positive("dense", m=m, k=k, n=n)
    channels = _channel_inputs("dense", requant, n)
    if row_term:
        channels[ROW] = ((m,), "int32")
    s = vd.DenseShape(m, k, n, row_term)
    kernel_requant = chosen_requant(cfg, vd.DENSE, s, vthreads, tiles, requant)
    t, source, kernel, c = _compiled(cfg, vd.DENSE, s, vthreads, tiles, kernel_requant)
    B, BI, BO = cfg.BATCH, cfg.BLOCK_IN, cfg.BLOCK_OUT

    def pack(*inputs):
        data, weight, *vectors = _inputs("dense", inputs, {
            "data": ((m, k), "int8"), "weight": ((n, k), "int8"), **channels})
        rows = (_pack_rows_term(vectors.pop(), c.m, cfg),) if row_term else ()
        vectors = _kernel_vectors(requant, kernel_requant, vectors)
        return (pk.pack_rows(pk.zero_pad(data, (c.m, c.k)), B, BI, "data"),
                pk.pack_rows(pk.zero_pad(weight, (c.n, c.k)), BO, BI, "weight"),
                *_pack_channels(vectors, c.n, cfg), *rows)

    def unpack(out):
        return np.ascontiguousarray(pk.unpack_rows(out)[:m, :n])

    return OpKernel("dense", kernel, pack, unpack, macs=s.macs(), tiles=t, tile_source=source, rows_out=True,
                    rows_in=True)
