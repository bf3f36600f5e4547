"""Elementwise ALU steps run inside a dense's program, on the entries it has just requantised
in ACC: the bias add torch exports as an Add of its own (`ConstantAddStep`) and the GELU of a
feed-forward block (`GeluStep`), one program and one accelerator region instead of a store, a
host round trip and a load between each (graph.fusion decides where).

Every STORE of the dense's output is preceded by the steps on the entries it stores (the
tile's requantised int8 values, sign-extended in ACC: what a step's own kernel would load with
ACC_8BIT) and then stores the last step's result instead. The steps' scratch buffers and
constants sit in ACC above every entry the dense touches; the program is rebuilt from the
calls (`intrinsics.recorded.KernelProgram.build`), so the dependency tokens between the steps,
the next tile's loads and the stores are derived from the SRAM ranges as for any program.

`dense_epilogue_kernel` chooses the dense's tiles with that scratch reserved (three buffers of
one tile's entries for the GELU, shared by the virtual threads: the compute module runs the
steps one tile after another).
"""
from __future__ import annotations

import dataclasses
import time
from dataclasses import dataclass

import numpy as np

from intrinsics.alu_program import AluProgram, Level
from intrinsics.build import CompiledKernel
from intrinsics.calls import Alu, Gemm, Load2D, Store2D
from intrinsics.host import Recording, _span
from intrinsics.recorded import KernelProgram
from requantisation.add import ReqSumParams
from requantisation.gelu import GeluParams
from requantisation.layer_norm import LayerNormParams
from requantisation.rule import Requant
from requantisation.softmax import SoftmaxParams
from vta_sim import packing as pk
from vta_sim.config import Config
from vta_sim.errors import CompileError

from . import vta_dense as vd
from . import alu_rows, vta_gelu, vta_layer_norm, vta_ops, vta_softmax
from .block_transpose import TransposedStores, acc_entries
from .op_kernel import OpKernel, TileSource
from .vta_common import best_tiles

#: Instructions of the GELU chain, of the softmax (its division about 10 per quotient bit) and
#: of the LayerNorm (its square root and division) per tile, for ranking tiles: each costs its
#: pipeline once per tile whatever the tile's size.
GELU_INSTRUCTIONS, SOFTMAX_INSTRUCTIONS, LAYER_NORM_INSTRUCTIONS = 40, 200, 640


@dataclass(frozen=True)
class Store:
    """What one STORE of the kernel's output holds: `entries` ACC entries from `sram`, rows of
    `cols` entries, the first row `first_row` and the first column block `first_block` of the
    output."""
    sram: int
    rows: int
    cols: int
    first_block: int
    first_row: int = 0

    @property
    def entries(self) -> int:
        return self.rows * self.cols


class GeluStep:
    """The GELU chain (schedules.vta_gelu.emit): three scratch buffers, its four lane constants."""
    buffers, vectors = 3, 0

    def __init__(self, cfg: Config, p: GeluParams):
        self.p = p
        self.constants = vta_gelu.constants(cfg, p)

    def emit(self, prog: AluProgram, x: int, scratch: tuple, consts: int, store: Store) -> int:
        vta_gelu.emit(prog, self.p, x, scratch, consts, store.entries)
        return scratch[-1]


class ConstantAddStep:
    """y = REQ((x - z_x) f_x + C[channel], m): the requantised add of a per-channel constant
    (requantisation.add.ReqSumParams with the constant operand's term (b - z_b) f_b folded into
    C, one int32 per output channel), in place; with no C (`per_channel` None) the rescale by a
    constant, REQ((x - z_x), m) (graph.ops.scale). Its constants: C, one ACC entry per column
    block of the output, then m in every lane. `per_row`: the channels are the output's rows
    (a dense computed transposed, a store of one column block): C one entry per row, its value
    in every lane."""
    buffers, vectors = 0, 0

    def __init__(self, cfg: Config, p: ReqSumParams, per_channel: np.ndarray | None, blocks: int,
                 per_row: bool = False):
        self.p, self.per_row = p, per_row
        self.blocks = 0 if per_channel is None else blocks
        if per_channel is None:
            entries = np.zeros((0, cfg.BATCH, cfg.BLOCK_OUT), np.int64)
        elif per_row:         # `blocks`: the rows
            padded = np.zeros(blocks, np.int64)
            padded[:len(per_channel)] = per_channel
            entries = np.repeat(padded, cfg.BATCH * cfg.BLOCK_OUT).reshape(blocks, cfg.BATCH, cfg.BLOCK_OUT)
        else:
            padded = np.zeros(blocks * cfg.BLOCK_OUT, np.int64)
            padded[:len(per_channel)] = per_channel
            entries = np.broadcast_to(padded.reshape(blocks, 1, cfg.BLOCK_OUT), (blocks, cfg.BATCH, cfg.BLOCK_OUT))
        self.constants = np.concatenate([entries.astype(np.int32),
                                         np.full((1, cfg.BATCH, cfg.BLOCK_OUT), p.m, np.int32)])

    def emit(self, prog: AluProgram, x: int, scratch: tuple, consts: int, store: Store) -> int:
        alu_rows.sum_term(prog, x, self.p.zeros[0], self.p.factors[0], store.entries)
        if self.blocks and self.per_row:
            prog.alu("add", x, consts + store.first_row, outer=Level(store.rows, store.cols, 1),
                     inner=Level(store.cols, 1, 0))
        elif self.blocks:
            prog.alu("add", x, consts + store.first_block, outer=Level(store.rows, store.cols, 0),
                     inner=Level(store.cols, 1, 1))
        alu_rows.requantise(prog, x, consts + self.blocks, self.p.requant, store.entries)
        return x


class RowAddStep:
    """y = REQ((x - z_x) f_x + R[row], m): the requantised add of a vector with one value per
    row of the output (attention's mask, one per key, added to S^T's rows), in place. R is an
    input of the kernel (`runtime`: one ACC entry per row, the value in every lane, loaded once
    at the start); m in every lane is its constant."""
    buffers, vectors = 0, 0

    def __init__(self, cfg: Config, p: ReqSumParams, rows: int):
        self.p, self.rows = p, rows
        self.constants = np.full((1, cfg.BATCH, cfg.BLOCK_OUT), p.m, np.int32)
        self.runtime = (rows, cfg.BATCH, cfg.BLOCK_OUT)

    def emit(self, prog: AluProgram, x: int, scratch: tuple, consts: int, store: Store, runtime: int = 0) -> int:
        alu_rows.sum_term(prog, x, self.p.zeros[0], self.p.factors[0], store.entries)
        prog.alu("add", x, runtime + store.first_row, outer=Level(store.rows, store.cols, 1),
                 inner=Level(store.cols, 1, 0))
        alu_rows.requantise(prog, x, consts, self.p.requant, store.entries)
        return x

    def pack(self, vector: np.ndarray) -> np.ndarray:
        """R as the kernel's input: each row's value in every lane of its entry."""
        v = np.asarray(vector).reshape(-1)
        if v.size != self.rows:
            raise CompileError(f"a row vector of {v.size} values for {self.rows} rows")
        return np.repeat(v.astype(np.int32), self.runtime[1] * self.runtime[2]).reshape(self.runtime)


class SoftmaxStep:
    """The integer softmax (schedules.vta_softmax.emit) over the rows of a matmul computed
    transposed: a store of every row (`p.length` of them, one a key) and c column blocks holds,
    in each column block, the scores of 8 queries (one a lane) for every key: c row groups of
    the softmax, interleaved (group g's key t at entry t c + g). Two scratch buffers (Y, W) and
    five vectors of c entries, at most `groups` of them; no constants. `compact`: the result
    group by group (group g's key t at entry g length + t), in the tile's own entries."""
    buffers = 2

    def __init__(self, cfg: Config, p: SoftmaxParams, groups: int = 1, compact: bool = False):
        self.p, self.groups, self.compact = p, groups, compact
        self.vectors = vta_softmax.GROUP_VECTORS * groups
        self.constants = np.zeros((0, cfg.BATCH, cfg.BLOCK_OUT), np.int32)

    def emit(self, prog: AluProgram, x: int, scratch: tuple, consts: int, store: Store) -> int:
        if store.rows != self.p.length or store.cols > self.groups:
            raise CompileError(f"a softmax over rows of {self.p.length} on a store of {store.rows} rows of "
                               f"{store.cols} column blocks: it takes every row, at most {self.groups} blocks")
        *buffers, vectors = scratch
        c = store.cols
        return vta_softmax.emit(prog, self.p, x, tuple(buffers),
                                tuple(vectors + k * c for k in range(vta_softmax.GROUP_VECTORS)), c,
                                strides=(1, c), compact=self.compact)


class LayerNormStep:
    """The integer LayerNorm (schedules.vta_layer_norm.normalise) of a store of every row, the
    channels, and `groups` column blocks at most (a dense computed transposed): a row group per
    column block, 8 tokens one a lane, interleaved. Y as scratch, nine vectors a group, its
    constants E, G_i, B_i resident.

    With `residual` (ReqSumParams, the add's operand the dense's output is: 0 or 1), the
    residual add of a post-norm block first, x = REQ((x - z_x) f_x + (r - z_r) f_r, m): r is an
    input of the kernel (`per_tile`) packed as the dense's output is, (rows, blocks of tokens),
    each tile's columns loaded into Y, which the LayerNorm needs only after the add; m in every
    lane is one more constant."""
    buffers = 1

    def __init__(self, cfg: Config, p: LayerNormParams, groups: int = 1, residual: tuple | None = None):
        if residual is not None and (len(residual[0].zeros) != 2 or residual[1] not in (0, 1)):
            raise CompileError(f"a residual add of {len(residual[0].zeros)} operands, the dense's operand "
                               f"{residual[1]}: it takes two")
        self.cfg, self.p, self.groups, self.residual = cfg, p, groups, residual
        self.per_tile = residual is not None
        self.vectors = vta_layer_norm.GROUP_VECTORS * groups
        self.constants = vta_layer_norm.constants(cfg, p)
        if residual is not None:
            m = np.full((1, cfg.BATCH, cfg.BLOCK_OUT), residual[0].m, np.int32)
            self.constants = np.concatenate([self.constants, m])

    def shape(self, blocks: int) -> tuple:
        """The residual input's packed shape, `blocks` column blocks of tokens."""
        return (self.p.length // self.cfg.BATCH, blocks, self.cfg.BATCH, self.cfg.BLOCK_OUT)

    def emit(self, prog: AluProgram, x: int, scratch: tuple, consts: int, store: Store, runtime: tuple = (0, 0)) -> int:
        if store.rows != self.p.length or store.first_row or store.cols > self.groups:
            raise CompileError(f"a layer norm over {self.p.length} on a store of {store.rows} rows of {store.cols} "
                               f"column blocks: it takes all rows of at most {self.groups} blocks")
        y, vectors = scratch
        if self.residual is not None:
            (add, first), (param, blocks) = self.residual, runtime
            prog.calls.append(Load2D(param, store.first_block, store.cols, store.rows, blocks, y, 0, 0, 0, 0))
            alu_rows.sum_term(prog, x, add.zeros[first], add.factors[first], store.entries)
            alu_rows.sum_term(prog, y, add.zeros[1 - first], add.factors[1 - first], store.entries)
            prog.alu("add", x, y, outer=Level(store.entries, 1, 1))
            alu_rows.requantise(prog, x, consts + len(self.constants) - 1, add.requant, store.entries)
        vta_layer_norm.normalise(prog, self.p, x, y, consts, vectors, store.cols, interleaved=True)
        return x

    def pack(self, residual: np.ndarray, blocks: int) -> np.ndarray:
        """The residual, (tokens, rows) int8, as the kernel's input: transposed and packed as the
        dense's output, `blocks` column blocks of tokens."""
        cfg = self.cfg
        return pk.pack_rows(pk.zero_pad(np.asarray(residual, np.int8).T, (self.p.length, blocks * cfg.BLOCK_OUT)),
                            cfg.BATCH, cfg.BLOCK_OUT, "residual")


def extent(calls, kinds: tuple, sram: str = "acc") -> int:
    """One past the highest entry of SRAM `sram` ("acc", "inp" or "wgt") the calls touch: loads
    into it, and the GEMM and ALU operands in it (ACC: the stores' sources too)."""
    loaded = {"acc": ("acc", "acc8"), "inp": ("inp",), "wgt": ("wgt",)}[sram]
    top = 0
    for c in calls:
        if isinstance(c, Load2D) and kinds[c.param].split("@")[0] in loaded:
            rows, cols = c.y_pad_0 + c.y_size + c.y_pad_1, c.x_pad_0 + c.x_size + c.x_pad_1
            top = max(top, c.sram + rows * cols)
        elif isinstance(c, Store2D) and sram == "acc":
            top = max(top, c.sram + c.x_size * c.y_size)
        elif isinstance(c, Gemm | Alu):
            iters = (c.iter_out, c.iter_in)
            operands = {"acc": [(c.dst_base, 0, (c.dst_factor_out, c.dst_factor_in))],
                        "inp": [(c.src_base, 1, (c.src_factor_out, c.src_factor_in))],
                        "wgt": [(c.wgt_base, 2, (c.wgt_factor_out, c.wgt_factor_in))]}[sram]
            if isinstance(c, Alu):
                operands = ([] if sram != "acc" else operands + ([] if c.use_imm else
                            [(c.src_base, 1, (c.src_factor_out, c.src_factor_in))]))
            elif c.reset and sram != "acc":
                operands = []
            for base, k, factors in operands:
                top = max(top, _span(base, [u[k] for u in c.uops], iters, factors)[1])
    return top


def _store(c: Store2D, blocks: int) -> Store:
    """The rows of an output STORE of a packed (rows, `blocks` column blocks) tensor: rows of
    x_size entries x_stride apart, or (y_size 1) one run of whole rows."""
    row, first = divmod(c.offset, blocks)
    if c.y_size == 1 and first == 0 and c.x_size % blocks == 0:
        return Store(c.sram, c.x_size // blocks, blocks, 0, row)
    if c.y_size > 1 and c.x_stride != blocks or first + c.x_size > blocks:
        raise CompileError(f"a STORE of {c.y_size} rows of {c.x_size} entries {c.x_stride} apart from entry "
                           f"{c.offset}: not rows of the output's {blocks} column blocks")
    return Store(c.sram, c.y_size, c.x_size, first, row)


def with_epilogue(cfg: Config, kernel: CompiledKernel, steps: tuple, transpose: bool = False,
                  weight_blocks: bool = False) -> tuple[CompiledKernel, np.ndarray, TransposedStores | None]:
    """(`kernel` with `steps` run in order before every store of its output, the constants it
    takes as its new input after the kernel's, the transposition or None). `kernel`'s output is
    packed rows of column blocks (a dense's); each step runs on the ACC entries a store would
    read, and the store then reads the last step's result. Each step's scratch (`buffers`
    buffers of the largest store's entries) and constants (int32 ACC entries, loaded once
    first) sit above every entry the kernel touches. `transpose`: every store (a tile of every
    row and one column block) stores its tile transposed instead (schedules.block_transpose;
    the unit vectors are the last input)."""
    start = time.perf_counter()
    (output,) = kernel.outputs
    program = kernel.program
    calls = program.calls
    blocks = kernel.params[output][1][1]
    stores = [c for c in calls if isinstance(c, Store2D) and c.param == output]
    if not stores:
        raise CompileError("the kernel stores no output to run an epilogue on")
    tile = max(c.x_size * c.y_size for c in stores)
    constants = np.concatenate([step.constants for step in steps] or [np.zeros((0, cfg.BATCH, cfg.BLOCK_OUT), np.int32)])
    base = extent(calls, program.kinds)
    scratch_entries = sum(step.buffers * tile + step.vectors for step in steps)
    consts = base + scratch_entries
    depth = cfg.buffers["acc"].depth
    if consts + len(constants) > depth:
        raise CompileError(f"the epilogue needs {scratch_entries} + {len(constants)} ACC entries above the kernel's "
                           f"{base}; ACC holds {depth}")
    places, at, c_at = [], base, consts
    for step in steps:       # a step's buffers, then its vectors' first entry where it has any
        bases = tuple(at + k * tile for k in range(step.buffers)) + ((at + step.buffers * tile,) if step.vectors else ())
        places.append((bases, c_at))
        at += step.buffers * tile + step.vectors
        c_at += len(step.constants)
    params = [*kernel.params, ("consts", tuple(constants.shape), "int32")]
    kinds = (*program.kinds, "acc")
    new_calls: list = ([Load2D(len(params) - 1, 0, len(constants), 1, len(constants), consts, 0, 0, 0, 0)]
                       if len(constants) else [])
    # each step's runtime input, passed to its emit: a vector's ACC base (a parameter loaded once
    # here), or a per-tile input's (parameter index, column blocks) (the step loads its tiles)
    runtime, at = {}, consts + len(constants)
    for k, step in enumerate(steps):
        if getattr(step, "per_tile", False):        # a parameter the step loads a tile at a time
            params.append((f"tiles{k}", step.shape(blocks), "int8"))
            kinds = (*kinds, "acc8")
            runtime[k] = (len(params) - 1, blocks)
            continue
        shape = getattr(step, "runtime", None)
        if shape is None:
            continue
        if at + shape[0] > depth:
            raise CompileError(f"a row vector of {shape[0]} entries does not fit ACC ({depth}) beside the epilogue")
        params.append((f"rows{k}", tuple(shape), "int32"))
        kinds = (*kinds, "acc")
        new_calls.append(Load2D(len(params) - 1, 0, shape[0], 1, shape[0], at, 0, 0, 0, 0))
        runtime[k], at = at, at + shape[0]
    transposer = None
    if transpose:
        rows = int(np.prod(kernel.params[output][1])) // (blocks * cfg.BLOCK_OUT * cfg.BATCH)
        tops = {"inp": extent(calls, kinds, "inp"), "wgt": extent(calls, kinds, "wgt"), "acc": at}
        last, (scratch, _) = (steps[-1], places[-1]) if steps else (None, ((), 0))
        free = (scratch[0], 2 * tile) if getattr(last, "compact", False) else (0, 0)   # Y and W after it
        shapes = [_store(c, blocks) for c in stores]
        transposer = TransposedStores(cfg, rows, blocks, max(st.cols for st in shapes), params, kinds, output, tops,
                                      free, weight_blocks, tile_rows=max(st.rows for st in shapes))
        params, kinds = transposer.params, transposer.kinds
        new_calls += transposer.start()
    pending: list = []      # a transposition in its own ACC waits behind the next tile's GEMM (below)
    for c in calls:
        if isinstance(c, Store2D) and c.param == output:
            new_calls += pending
            pending = []
            chain, where, store = AluProgram(cfg, []), c.sram, _store(c, blocks)
            for k, (step, (scratch, step_consts)) in enumerate(zip(steps, places)):
                here = dataclasses.replace(store, sram=where)
                where = (step.emit(chain, where, scratch, step_consts, here, runtime[k]) if k in runtime else
                         step.emit(chain, where, scratch, step_consts, here))
            new_calls += chain.calls
            if transposer is not None:
                compact = store.cols == 1 or bool(steps) and getattr(steps[-1], "compact", False)
                if not compact:
                    raise CompileError(f"a transposed store takes tiles of one column block or a softmax's groups "
                                       f"compact, not {store.rows} rows of {store.cols}")
                moved = transposer.store(where, store.first_block, store.cols, store.rows, store.first_row)
                if transposer.own_acc:      # its round trip through DRAM overlaps the next tile's GEMM
                    new_calls.append(moved[0])
                    pending = moved[1:]
                else:                       # in the softmax's scratch, which the next tile's softmax needs
                    new_calls += moved
                continue
            c = dataclasses.replace(c, sram=where)
        new_calls.append(c)
    new_calls += pending
    recording = Recording(program.config_text, kinds, tuple(new_calls))
    built = KernelProgram.build(recording, params, list(kernel.outputs))
    return (CompiledKernel(None, params, list(kernel.outputs), kernel.compile_s + time.perf_counter() - start, built),
            constants, transposer)


def _dense_tiles(cfg: Config, s: vd.DenseShape, vthreads: int, requant: Requant, gelu: bool,
                 all_rows: bool = False, transpose: bool = False, one_block: bool = False,
                 weight_blocks: bool = False, norm: int = 0) -> vd.DenseTiles:
    """The dense's tiling with the epilogue's scratch (a GELU's three tiles' entries, shared) and
    constants reserved in ACC, ranked by the dense's cycle model plus the GELU's per-tile
    pipelines, one or two threads; `all_rows`: tiles of every row (a softmax over the rows);
    `transpose`: of one column block too, with the transposition's entries reserved; `norm`:
    a residual add and a LayerNorm over rows of that many entries (tiles of every row: Y, the
    nine vectors a column block and the constants reserved)."""
    depth = cfg.buffers["acc"].depth
    row_blocks = -(-s.m // cfg.BATCH)

    def why_not(t: vd.DenseTiles) -> str | None:
        if norm and (t.rows < row_blocks or t.threads_on("m") > 1):
            return "a layer norm over the rows takes tiles of every row"
        if (all_rows or transpose and not weight_blocks) and (t.rows < row_blocks or t.threads_on("m") > 1):
            return "a softmax over the rows, or a store transposed as rows, takes tiles of every row"
        if transpose and weight_blocks and t.rows * cfg.BATCH % cfg.BLOCK_OUT and t.rows < row_blocks:
            return "a store transposed into weight blocks takes tiles of whole blocks of rows"
        if one_block and t.cols != 1:
            return "tiles of one column block (a store into 8 x 8 weight blocks)"
        if transpose and t.cols > 1 and not all_rows:
            return "a transposed store takes tiles of one column block, or a softmax's rows group by group"
        why = vd.usable(cfg, s, t, requant)
        if why:
            return why
        need = vd.footprint(cfg, s, t, requant)["acc"] * t.vthreads
        reserved = (3 * t.rows * t.cols + vta_gelu.CONSTANTS if gelu else 0) + -(-s.n // cfg.BLOCK_OUT) + 1
        if all_rows:          # the softmax's buffers and vectors, a mask's vector (one entry a row)
            reserved += 2 * t.rows * t.cols + vta_softmax.GROUP_VECTORS * t.cols + s.m
        if norm:              # Y (the residual's tile first), the vectors, E G_i B_i, m; a bias per row
            reserved += t.rows * t.cols + vta_layer_norm.GROUP_VECTORS * t.cols + 1 + 2 * norm + 1 + s.m + 1
        if transpose:
            reserved += acc_entries(t.rows * cfg.BATCH, t.cols, cfg, 2 * t.rows * t.cols if all_rows else 0)
            room = vd.footprint(cfg, s, t, requant)
            for sram, extra in (("inp", cfg.BLOCK_OUT), ("wgt", t.cols * -(-t.rows * cfg.BATCH // cfg.BLOCK_OUT))):
                if room[sram] * t.vthreads + extra > cfg.buffers[sram].depth:
                    return f"{sram.upper()}: the dense's entries and the transposition's {extra} exceed it"
        if need + reserved > depth:
            return f"ACC: the dense's {need} entries and the epilogue's {reserved} exceed its {depth}"
        return None

    def estimate(t: vd.DenseTiles) -> float:
        c = vd.computed_shape(cfg, s, t)
        tiles = (c.m // cfg.BATCH // t.rows) * (c.n // cfg.BLOCK_OUT // t.cols)
        per_tile = GELU_INSTRUCTIONS * gelu + SOFTMAX_INSTRUCTIONS * all_rows + LAYER_NORM_INSTRUCTIONS * bool(norm)
        return vd.estimate_cycles(cfg, s, t, requant) + tiles * per_tile * cfg.ALU_PIPELINE

    candidates = [t for v in dict.fromkeys((vthreads, 1)) for t in vd.candidates(cfg, s, v)]
    return best_tiles(candidates, why_not, estimate, f"dense with an epilogue {s} on {cfg.name}")


def dense_epilogue_kernel(cfg: Config, m: int, k: int, n: int, requant: Requant, steps: tuple, vthreads: int = 2,
                          row_term: bool = False, transpose: bool = False, one_block: bool = False,
                          weight_blocks: bool = False) -> OpKernel:
    """The dense of `vta_ops.dense_kernel` (same inputs, then an input per RowAddStep and
    LayerNormStep with a residual) with `steps` (ConstantAddStep, RowAddStep, GeluStep,
    SoftmaxStep, LayerNormStep) run on its output in the same program: (M, N) int8 out, bit for
    bit the steps applied to the dense's output in order (a LayerNormStep: over each column, the
    dense computed transposed, tiles of every row);
    `transpose`: (N, M) out, the result transposed by the program (schedules.block_transpose);
    `one_block`: tiles of one column block (schedules.column_slice.into_weight_blocks);
    `weight_blocks` with `transpose`: the transposed result as the 8 x 8 weight blocks of a
    matmul taking it as (N, M) weight (attention's V for attn.V)."""
    s = vd.DenseShape(m, k, n, row_term)
    kernel_requant = vta_ops.chosen_requant(cfg, vd.DENSE, s, vthreads, None, requant)
    gelu = any(isinstance(step, GeluStep) for step in steps)
    softmax = [step for step in steps if isinstance(step, SoftmaxStep)]
    norm = next((step.p.length for step in steps if isinstance(step, LayerNormStep)), 0)
    tiles = _dense_tiles(cfg, s, vthreads, kernel_requant, gelu, all_rows=bool(softmax), transpose=transpose,
                         one_block=one_block, weight_blocks=weight_blocks, norm=norm)
    steps = tuple(SoftmaxStep(cfg, step.p, tiles.cols, compact=transpose) if isinstance(step, SoftmaxStep) else
                  LayerNormStep(cfg, step.p, tiles.cols, step.residual) if isinstance(step, LayerNormStep) else step
                  for step in steps)      # their vectors: per column block of a tile
    dense = vta_ops.dense_kernel(cfg, m, k, n, requant, vthreads, tiles=tiles, row_term=row_term)
    fused, constants, transposer = with_epilogue(cfg, dense.kernel, steps, transpose, weight_blocks)
    pack = dense.pack                  # not `dense`: its TVM module does not pickle (graph.cache)
    rows = [step for step in steps if getattr(step, "runtime", None) is not None or getattr(step, "per_tile", False)]
    units = () if transposer is None else (transposer.constants(),)
    (output,) = dense.kernel.outputs
    blocks = dense.kernel.params[output][1][1]

    def pack_all(*inputs):
        """The dense's inputs, then each runtime step's input in step order (RowAddStep: one
        value per row; LayerNormStep: its residual, packed as the output is)."""
        cut = len(inputs) - len(rows)
        return (*pack(*inputs[:cut]), constants,
                *(step.pack(v, blocks) if getattr(step, "per_tile", False) else step.pack(v)
                  for step, v in zip(rows, inputs[cut:])), *units)

    def unpack_transposed(out):
        if weight_blocks:          # [column block][row block][column][row]: the (M, N) result
            b = out.reshape(-1, out.shape[1], cfg.BLOCK_OUT, cfg.BLOCK_OUT)
            return np.ascontiguousarray(b.transpose(1, 3, 0, 2).reshape(b.shape[1] * cfg.BLOCK_OUT, -1)[:m, :n])
        return np.ascontiguousarray(pk.unpack_rows(out)[:n, :m])
    return OpKernel("dense", fused, pack=pack_all, unpack=dense.unpack if transposer is None else unpack_transposed,
                    macs=dense.macs, tiles=tiles, tile_source=TileSource("cycle model"),
                    rows_out=transposer is None, rows_in=True)
