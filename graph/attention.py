"""Attention's matmuls fused with what runs between them (graph.fusion decides where).

- **Scores and softmax** (`MatmulSoftmaxSpec`): Q.K^T computed transposed, S^T = K.Q^T (K the
  data, Q's rows the weight), so that the accumulator holds the softmax's row groups as the
  GEMM writes them (a query a lane, a key an entry) and the softmax runs on it, with BERT's
  mask add between (schedules.fused_epilogue). On a config with square blocks and one batch row
  the program stores the probabilities transposed by the GEMM core (schedules.block_transpose):
  a query a row, 8 keys an entry, which is the data layout of the attn.V matmul. (Elsewhere the
  host transposes them as it unpacks.)
- **The whole core, softmax(Q.K^T + mask).V** (`AttentionSpec`): the two programs back to
  back, the second loading the probabilities the first stored, as stored: no host copy of them
  between the matmuls. (Where V has a zero point the host still reads them, for their row
  sums, as for every matmul of two activations: graph.ops.matmul.)
"""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import numpy as np

from schedules import block_transpose, column_slice
from schedules.fused_epilogue import RowAddStep, SoftmaxStep, dense_epilogue_kernel
from schedules.op_kernel import as_stored
from schedules.vta_dense import DenseShape
from vta_sim import packing as pk
from vta_sim.config import Config
from vta_sim.errors import CompileError
from vta_sim.runtime import OutputView

from .ops.add import AddSpec
from .ops.matmul import MatmulKernel, MatmulSpec, int32_vector
from .ops.softmax import SoftmaxSpec
from .report import PIECE, back_to_back

#: The op of a fused layer joins its parts' ops with this; its name joins their names.
JOIN = "+"


def stores_transposed(cfg: Config) -> bool:
    """Does the scores' program store the probabilities transposed (else the host does)?"""
    return block_transpose.misfit(cfg) is None


@dataclass(frozen=True)
class MatmulSoftmaxSpec:
    """Attention's scores Q.K^T and their softmax, one kernel per batch (the module docstring)."""
    matmul: MatmulSpec
    softmax: SoftmaxSpec
    mask: AddSpec | None = None        # an add of a mask (one value per key) between them (BERT's)
    op: str = field(init=False)

    def __post_init__(self):
        object.__setattr__(self, "op", JOIN.join(["matmul", *(["add"] if self.mask else []), "softmax"]))

    @property
    def macs(self) -> int:
        return self.matmul.macs

    def describe(self) -> str:
        return f"{self.matmul.describe()}, {'mask add, ' if self.mask else ''}softmax"

    def input_shapes(self) -> list[Any]:
        return self.matmul.input_shapes() + ([self.mask.input_shapes()[1]] if self.mask else [])

    def misfit(self, cfg: Config, vthreads: int) -> str | None:
        return None

    @property
    def part(self) -> "ScoresSoftmax":
        """The kernel of one batch, compiled and cached as a kernel of its own."""
        s = self.matmul.shape
        return ScoresSoftmax(DenseShape(s.n, s.k, s.m, self.matmul.zero_points), self.matmul.requant,
                             self.softmax.params, self.mask.params if self.mask else None)

    @property
    def parts(self) -> tuple:
        return (self.part,)

    def assemble(self, cfg: Config, kernels: dict) -> "MatmulSoftmaxKernel":
        return MatmulSoftmaxKernel(self, kernels[self.part], cfg)

    def kernel(self, cfg: Config, vthreads: int) -> "MatmulSoftmaxKernel":
        return self.assemble(cfg, {self.part: self.part.kernel(cfg, vthreads)})

    def reference(self, a: np.ndarray, b: np.ndarray, *rest: np.ndarray) -> np.ndarray:
        mask, (bias, *channel) = (rest[0], rest[1:]) if self.mask else (None, rest)
        scores = self.matmul.reference(a, b, bias, *channel)
        if self.mask is not None:
            scores = self.mask.reference(scores, mask.reshape(self.mask.input_shapes()[1]))
        return self.softmax.reference(scores)


@dataclass(frozen=True)
class ScoresSoftmax:
    """S^T = K.Q^T of one batch (DenseShape: keys x d . d x queries) with the softmax over each
    query's keys in its program, the probabilities stored transposed where the config allows."""
    shape: DenseShape
    requant: Any
    params: Any
    mask: Any = None              # the mask add's ReqSumParams, or None

    def kernel(self, cfg: Config, vthreads: int):
        s = self.shape
        steps = ((RowAddStep(cfg, self.mask, s.m),) if self.mask is not None else ()) + (SoftmaxStep(cfg, self.params),)
        return dense_epilogue_kernel(cfg, s.m, s.k, s.n, self.requant, steps, vthreads, s.row_term,
                                     transpose=stores_transposed(cfg))


@dataclass
class MatmulSoftmaxKernel(MatmulKernel):
    """A MatmulSoftmaxSpec's run: per batch, the transposed dense with the softmax, on K (b's
    batch transposed) as the data and Q (a's) as the weight; the zero points' terms swap places
    (Q's row sums become the bias of each output channel, K's column sums the row term). The
    bias and multipliers of the matmul are one value for every channel (graph.ops.matmul.plan)."""
    spec: Any

    def batches(self, a: np.ndarray, b: np.ndarray, *rest: np.ndarray, stored: tuple = ()) -> list:
        """The packed inputs of each batch's program; `stored` holds 0 (Q, the weight) or 1 (K,
        the data) where the caller takes that operand from the tensor its projection stored:
        the host packs zeros in its place."""
        mm, add = self.spec.matmul, self.spec.mask
        mask, (bias, *channel) = (rest[0], rest[1:]) if add else (None, rest)
        s = mm.shape
        a3, b3 = a.reshape(-1, s.m, s.k), b.reshape(-1, s.k, s.n)
        rows, cols = mm.terms(a3, b3) if mm.zero_points else (None, None)
        per_key = None
        if add is not None:        # the mask broadcast to the scores, one row of keys per batch
            full = np.broadcast_to(mask.reshape(add.input_shapes()[1]), (*mm.batch, s.m, s.n))
            z, f = add.params.zeros[1], add.params.factors[1]
            per_key = (full.reshape(-1, s.m, s.n)[:, 0, :].astype(np.int64) - z) * f
        out = []
        for i in range(len(a3)):
            vectors = (np.full(s.m, bias[0], np.int64), *(np.full(s.m, c[0], c.dtype) for c in channel))
            if rows is not None and cols is not None:
                vectors = (vectors[0] + rows[i, :, 0], *vectors[1:], cols[i, 0])
            vectors = (*(int32_vector(v, "bias") for v in vectors),
                       *((int32_vector(per_key[i], "mask"),) if per_key is not None else ()))
            keys = np.zeros((s.n, s.k), np.int8) if 1 in stored else np.ascontiguousarray(b3[i].T)
            queries = np.zeros((s.m, s.k), np.int8) if 0 in stored else a3[i]
            out.append(self.dense.pack(keys, queries, *vectors))
        return out

    def __call__(self, a: np.ndarray, b: np.ndarray, *rest: np.ndarray,
                 backend: str = "sim", trace: bool = False) -> tuple[Any, ...]:
        s, transposed = self.spec.matmul.shape, stores_transposed(self.cfg)
        outs, results = [], []
        for inputs in self.batches(a, b, *rest):
            (packed,), result = self.dense.kernel(*inputs, backend=backend, trace=trace)
            y = self.dense.unpack(packed)
            outs.append(y if transposed else y.T)
            results.append(result)
        out = np.stack(outs).reshape(*self.spec.matmul.batch, s.m, s.n)
        return out, back_to_back(results, self.cfg.name, backend, trace)


@dataclass(frozen=True)
class AttentionSpec:
    """softmax(Q.K^T (+ mask)).V: a MatmulSoftmaxSpec and the matmul of its probabilities with V,
    two programs per batch, the second loading the first's stored probabilities as its data.
    Inputs: the scores' (a, b, the mask), V; then the scores' constants (`split` of them) and the
    second matmul's."""
    scores: MatmulSoftmaxSpec
    values: MatmulSpec
    split: int
    op: str = field(init=False)

    def __post_init__(self):
        object.__setattr__(self, "op", JOIN.join([self.scores.op, "matmul"]))

    @property
    def macs(self) -> int:
        return self.scores.macs + self.values.macs

    def describe(self) -> str:
        return f"{self.scores.describe()}, {self.values.describe()}"

    def input_shapes(self) -> list[Any]:
        return self.scores.input_shapes() + [self.values.input_shapes()[1]]

    def misfit(self, cfg: Config, vthreads: int) -> str | None:
        return None

    @property
    def parts(self) -> tuple:
        return (self.scores.part, self.values.part)

    @property
    def pieces(self) -> tuple:
        """(op, MACs) of each of its programs, for the report (graph.report: `pieces`)."""
        return ((self.scores.op, self.scores.macs), (self.values.op, self.values.macs))

    def assemble(self, cfg: Config, kernels: dict) -> "AttentionKernel":
        return AttentionKernel(self.scores.assemble(cfg, kernels), self.values.assemble(cfg, kernels), self, cfg)

    def kernel(self, cfg: Config, vthreads: int) -> "AttentionKernel":
        return self.assemble(cfg, {part: part.kernel(cfg, vthreads) for part in self.parts})

    def reference(self, *args: np.ndarray) -> np.ndarray:
        n = len(self.scores.input_shapes())
        inputs, v, constants = args[:n], args[n], args[n + 1:]
        p = self.scores.reference(*inputs, *constants[:self.split])
        return self.values.reference(p, v, *constants[self.split:])


@dataclass
class AttentionKernel:
    """An AttentionSpec's run. Per batch the scores' program stores P (a query a row, 8 keys an
    entry), and the values' program takes that tensor as its data as the first stored it (its
    first rows where the second's tiles take fewer; `padded` counts the batches where its
    tiles wanted more rows or key blocks than were stored, which the host then pads with
    zeros). Where the config makes the scores' program leave P^T, the host transposes it."""
    scores: MatmulSoftmaxKernel
    values: MatmulKernel
    spec: AttentionSpec
    cfg: Config
    padded: int = 0
    #: asked with `rows=True`, it stores the heads merged, (batch x tokens, heads x d) rows as a
    #: dense's data is packed (`last_packed`): each head's attn.V program writes its columns
    #: (schedules.column_slice); graph.codegen.chain_regions asks where the output projection
    #: takes them after the head merge's Transpose and Reshape.
    merges_heads: bool = True
    last_packed: np.ndarray | None = field(default=None, repr=False)
    stored_how: dict = field(default_factory=dict)   # the last call's {0 (Q), 1 (K), V's index: "as stored"
                                                     # or "padded"}
    _sliced: dict = field(default_factory=dict, repr=False)

    @property
    def compile_s(self) -> float:
        return self.scores.compile_s + self.values.compile_s

    @property
    def tile_source(self) -> Any:
        return self.values.tile_source

    def merge_misfit(self) -> str | None:
        """Why the heads cannot be stored merged (None: they can)."""
        mm = self.spec.values
        dense = self.values.dense
        blocks = dense.kernel.params[dense.kernel.outputs[0]][1][1]
        if len(mm.batch) < 1 or int(np.prod(mm.batch[:-1])) != 1:
            return f"batch dims {mm.batch}: the heads of one sequence only"
        if blocks * self.cfg.BLOCK_OUT != mm.shape.n:
            return f"attn.V's output of {mm.shape.n} columns is stored as {blocks} blocks of {self.cfg.BLOCK_OUT}"
        return None

    def _into_columns(self, head: int, heads: int):
        if head not in self._sliced:
            dense = self.values.dense
            blocks = dense.kernel.params[dense.kernel.outputs[0]][1][1]
            self._sliced[head] = column_slice.into_columns(dense.kernel, heads * blocks, head * blocks)
        return self._sliced[head]

    def keys_misfit(self) -> str | None:
        """Why the scores' programs cannot load K's rows from the K projection's stored tensor."""
        if not stores_transposed(self.cfg):
            return "the scores' program of this config leaves P^T"
        if len(self.spec.values.batch) < 1 or int(np.prod(self.spec.values.batch[:-1])) != 1:
            return f"batch dims {self.spec.values.batch}: the heads of one sequence only"
        return None

    def _keys_from_rows(self, head: int, total: int):
        key = ("keys", head, total)
        if key not in self._sliced:
            kernel = self.scores.dense.kernel
            blocks = kernel.params[0][1][1]
            self._sliced[key] = column_slice.from_columns(kernel, 0, total, head * blocks)
        return self._sliced[key]

    def __call__(self, *args: np.ndarray, backend: str = "sim", trace: bool = False, rows: bool = False,
                 stored: dict | None = None) -> tuple[Any, ...]:
        """`rows`: store the heads merged (`last_packed`); `stored` {0: Q's weight blocks, 1: K's
        rows, n: V's transposed weight blocks, as the projections stored them (n: V's input
        index)}: each head's programs load them from there."""
        n = len(self.spec.scores.input_shapes())
        inputs, v, constants = args[:n], args[n], args[n + 1:]
        split = self.spec.split
        mm = self.spec.values
        s = mm.shape                               # queries x keys . keys x d
        v3 = v.reshape(-1, s.k, s.n)
        bias, *channel = constants[split:]
        results, outs = [], []
        heads = mm.batch[-1] if mm.batch else 1
        merged = None
        if rows:
            why = self.merge_misfit()
            if why:
                raise CompileError(f"the heads cannot be stored merged: {why}")
            out_shape = self.values.dense.kernel.params[self.values.dense.kernel.outputs[0]][1]
            merged = np.zeros((out_shape[0], heads * out_shape[1], *out_shape[2:]), np.int8)
        stored = stored or {}
        keys, queries, values = stored.get(1), stored.get(0), stored.get(n)
        if stored and self.keys_misfit():
            raise CompileError(f"Q and K cannot be taken as stored: {self.keys_misfit()}")
        self.stored_how = {}
        for i, packed_inputs in enumerate(self.scores.batches(*inputs, *constants[:split],
                                                              stored=tuple(k for k in stored if k in (0, 1)))):
            packed_inputs = list(packed_inputs)
            program = self.scores.dense.kernel
            if queries is not None:        # head h's weight blocks, contiguous in Q's stored tensor
                packed_inputs[1] = self._stored(0, queries.reshape(heads, -1, *packed_inputs[1].shape[1:])[i % heads],
                                                packed_inputs[1].shape)
            if keys is not None:           # head h's columns of K's stored rows
                program = self._keys_from_rows(i % heads, keys.shape[1])
                packed_inputs[0] = self._stored(1, keys, program.params[0][1])
            (p_packed,), first = program(*packed_inputs, backend=backend, trace=trace)
            p = self.scores.dense.unpack(p_packed)
            if not stores_transposed(self.cfg):
                p, p_packed = np.ascontiguousarray(p.T), None
            vectors: tuple[np.ndarray, ...] = (bias, *channel)
            if mm.zero_points:       # the zero points' terms: the host sums P's rows and V's columns
                rows, cols = mm.terms(p[None], v3[i][None])
                vectors = (int32_vector(bias + cols[0, 0], "bias + cols"), *channel, int32_vector(rows[0, :, 0], "rows"))
            dense = self.values.dense
            data, *rest = dense.pack(np.zeros((s.m, s.k), np.int8) if p_packed is not None else p,
                                     np.zeros((s.n, s.k), np.int8) if values is not None else np.ascontiguousarray(v3[i].T),
                                     *vectors)
            if values is not None:         # head h's weight blocks of V^T, as the V projection stored them
                rest[0] = self._stored(n, values.reshape(heads, -1, *rest[0].shape[1:])[i % heads], rest[0].shape)
            if p_packed is not None:
                data = self._chained(p_packed, data.shape)
            if merged is None:
                (o_packed,), second = dense.kernel(data, *rest, backend=backend, trace=trace)
                outs.append(dense.unpack(o_packed))
            else:
                sliced = self._into_columns(i % heads, heads)
                _, second = sliced(data, *rest, backend=backend, trace=trace,
                                   views={sliced.outputs[0]: OutputView(merged, 0)})
            results += [first, second]
        if merged is not None:        # the plain output from the merged rows (the host's unpack)
            plain = pk.unpack_rows(merged)[:s.m].reshape(s.m, heads, s.n)
            outs = list(np.ascontiguousarray(plain.transpose(1, 0, 2)))
            self.last_packed = merged
        out = np.stack(outs).reshape(*mm.batch, s.m, s.n)
        result = back_to_back(results, self.cfg.name, backend, trace)
        for k in range(2):       # each program's cycles, summed over the batches
            result.stats[f"{PIECE}{k}"] = sum(int(r.cycles) for r in results[k::2])
        return out, result

    def _stored(self, index: int, tensor: np.ndarray, shape: tuple) -> np.ndarray:
        """Operand `index` as its projection stored it (schedules.op_kernel.as_stored; `stored_how`
        says how)."""
        data, how = as_stored(tensor, shape)
        if self.stored_how.get(index) != "padded":
            self.stored_how[index] = how
        return data

    def _chained(self, stored: np.ndarray, shape: tuple) -> np.ndarray:
        """The values' data: the scores' stored tensor as it is, or a zero-padded copy (`padded`
        counts those)."""
        data, how = as_stored(stored, shape)
        self.padded += how == "padded"
        return data
