"""A model's inputs, in its own dtypes, one array per input name (`vta-sim model --input`).

A model's feeds are a dict {input name: array} in the order its graph lists its inputs (the
order of the imported Relax function's parameters, `onnx_import.model_inputs`), every array in
the dtype the model declares (float32 images, int64 token ids, ...) and with one batch size.

`read` takes what the command line gives: `--input FILE.npy` for a model with one input,
`--input NAME=FILE.npy` once per input, or `--input FILE.npz` holding one array per input name.
`synthetic` makes seeded inputs when none are given: floats in the range the model's input
quantiser covers, token ids in [0, rows of the table) where the input indexes a Gather, and 0/1
masks for any other integer input. `check` refuses a wrong name, dtype, shape, batch, a
non-finite float or an id outside its table, each in one line naming what is expected.
"""
from __future__ import annotations

from pathlib import Path

import numpy as np
import onnx
from onnx import numpy_helper

from .errors import GraphError
from .onnx_import import ModelInput

#: Ops that pass an integer input through to the index of a Gather unchanged in value.
_PASS_THROUGH = ("Cast", "Unsqueeze", "Reshape", "Squeeze", "Flatten", "Identity")


def feeds_of(x, names: list[str]) -> dict:
    """`x` (one array for a single-input model, or {name: array}) as feeds in the model's order
    (`names`, onnx_import.input_names)."""
    if not isinstance(x, dict):
        return {names[0]: x}
    unknown = [n for n in x if n not in names]
    if unknown:
        raise GraphError(f"inputs {unknown} are not inputs of the model; its inputs: {', '.join(names)}")
    missing = [n for n in names if n not in x]
    if missing:
        raise GraphError(f"no data for input(s) {', '.join(missing)}; the model takes {', '.join(names)}")
    return {n: x[n] for n in names}


def batch_of(feeds: dict) -> int:
    return len(next(iter(feeds.values())))


def _describe(inputs: list[ModelInput]) -> str:
    return ", ".join(f"{i.name} {i.dtype} {tuple(i.shape[1:])}" for i in inputs)


def read(values, inputs: list[ModelInput]) -> dict:
    """The feeds the command line names (see the module docstring), checked (`check`).
    `values`: one string or a list of them (repeated --input)."""
    if isinstance(values, str):
        values = [values]
    given: dict = {}
    names = [i.name for i in inputs]
    for value in values:
        name, sep, path = value.partition("=")
        if not sep or Path(value).is_file():
            name, path = "", value
        if path.endswith(".npz"):
            if name:
                raise GraphError(f"--input {value}: an .npz file holds every input by its name; give it "
                                 f"alone (--input {path}), or one .npy per input (NAME=FILE.npy)")
            for key, array in _load(path).items():
                _put(given, key, array, f"{path}[{key}]", names)
            continue
        if not name:
            if len(inputs) > 1:
                raise GraphError(f"--input {value}: the model has {len(inputs)} inputs ({_describe(inputs)}); "
                                 f"name each: --input {inputs[0].name}=FILE.npy ..., or give one .npz "
                                 "holding one array per input name")
            name = inputs[0].name
        _put(given, name, _load(path), path, names)
    missing = [n for n in names if n not in given]
    if missing:
        raise GraphError(f"no --input for {', '.join(missing)}; the model takes {_describe(inputs)} "
                         "(--input NAME=FILE.npy for each, or one .npz)")
    feeds = {i.name: _as_batch(given[i.name][0], i, given[i.name][1]) for i in inputs}
    check(feeds, inputs, {n: given[n][1] for n in names})
    return feeds


def _load(path: str):
    try:
        data = np.load(path)
    except (OSError, ValueError) as exc:
        raise GraphError(f"cannot read inputs {path!r}: {exc}") from exc
    if isinstance(data, np.lib.npyio.NpzFile):
        with data:
            return {key: data[key] for key in data.files}
    return data


def _put(given: dict, name: str, array, where: str, names: list) -> None:
    if isinstance(array, dict):
        raise GraphError(f"inputs {where!r}: an .npz file; give it alone as --input FILE.npz")
    if name not in names:
        raise GraphError(f"inputs {where!r} are for {name!r}, which the model does not take; its inputs: "
                         f"{', '.join(names)}")
    if name in given:
        raise GraphError(f"input {name!r} is given twice ({given[name][1]!r} and {where!r})")
    given[name] = (array, where)


def _as_batch(x: np.ndarray, inp: ModelInput, where: str) -> np.ndarray:
    """(N, *sample) from one sample, a batch, or a stack of single-sample batches."""
    shape = tuple(inp.shape[1:])
    if x.shape == shape:
        x = x[None]
    elif x.ndim == len(shape) + 2 and x.shape[1] == 1 and x.shape[2:] == shape:
        x = x[:, 0]
    if x.shape[1:] != shape:
        dims = ", ".join(map(str, shape))
        raise GraphError(f"inputs {where!r} have shape {x.shape}; the model takes {shape} for "
                         f"{inp.name!r}, a batch (N, {dims}) or a stack (N, 1, {dims})")
    return x


def check(feeds: dict, inputs: list[ModelInput], where: dict | None = None, proto=None) -> None:
    """Refuse feeds the model cannot take: a dtype other than its own, a batch that differs
    between inputs, NaN or inf in a float input, an id outside the table its Gather indexes."""
    where = where or {name: f"input {name}" for name in feeds}
    for inp in inputs:
        x = feeds[inp.name]
        if x.dtype != np.dtype(inp.dtype):
            raise GraphError(f"inputs {where[inp.name]!r} are {x.dtype}; the model takes {inp.dtype} for "
                             f"{inp.name!r}")
        if np.issubdtype(x.dtype, np.floating):
            check_finite(x, f"inputs {where[inp.name]!r}")
    sizes = {name: len(x) for name, x in feeds.items()}
    if len(set(sizes.values())) > 1:
        raise GraphError(f"the inputs have different batches {sizes}; give each input the same number of "
                         "samples")
    if proto is not None:
        for inp in inputs:
            bound = gather_bound(proto, inp.name)
            x = feeds[inp.name]
            if bound is not None and x.size and (x.min() < 0 or x.max() >= bound):
                bad = tuple(int(i) for i in np.argwhere((x < 0) | (x >= bound))[0])
                raise GraphError(f"inputs {where[inp.name]!r} hold {x[bad]} at index {bad}; {inp.name!r} "
                                 f"indexes a Gather of a table of {bound} rows: ids in [0, {bound})")


def check_finite(x: np.ndarray, what: str) -> None:
    """Refuse inputs holding NaN or inf: quantising them has no defined result."""
    bad = ~np.isfinite(x)
    if bad.any():
        first = tuple(int(i) for i in np.argwhere(bad)[0])
        raise GraphError(f"{what} hold {int(bad.sum())} non-finite value(s) (NaN or inf), the first "
                         f"{x[first]} at index {first}; give finite float32 inputs")


def _initializer(proto, name: str, producers: dict, inits: dict):
    """The constant behind `name`: an initializer, or one behind a DequantizeLinear (a quantised
    embedding table)."""
    if name in inits:
        return inits[name]
    node = producers.get(name)
    if node is not None and node.op_type == "DequantizeLinear" and node.input[0] in inits:
        return inits[node.input[0]]
    return None


def gather_bound(proto: onnx.ModelProto, name: str) -> int | None:
    """The rows of the table a Gather indexes with input `name` (through Cast, Unsqueeze, ...),
    or None where it indexes none."""
    graph = proto.graph
    inits = {i.name: i for i in graph.initializer}
    producers = {o: n for n in graph.node for o in n.output}
    seen, todo = set(), [name]
    while todo:
        tensor = todo.pop()
        seen.add(tensor)
        for node in graph.node:
            if node.op_type == "Gather" and len(node.input) > 1 and node.input[1] == tensor:
                table = _initializer(proto, node.input[0], producers, inits)
                if table is not None:
                    axis = next((a.i for a in node.attribute if a.name == "axis"), 0)
                    dims = list(table.dims)
                    return int(dims[axis % len(dims)])
            if node.op_type in _PASS_THROUGH and node.input and node.input[0] == tensor:
                todo += [o for o in node.output if o not in seen]
    return None


def input_range(proto: onnx.ModelProto, name: str) -> tuple[float, float]:
    """The real range the quantizer of float input `name` covers ([0, 1) where it has none)."""
    inits = {i.name: numpy_helper.to_array(i) for i in proto.graph.initializer}
    for node in proto.graph.node:
        if node.op_type == "QuantizeLinear" and node.input[0] == name:
            scale = float(inits[node.input[1]])
            zero = int(inits[node.input[2]]) if len(node.input) > 2 else 0
            info = np.iinfo(inits[node.input[2]].dtype if len(node.input) > 2 else np.uint8)
            return (info.min - zero) * scale, (info.max - zero) * scale
    return 0.0, 1.0


def synthetic(proto: onnx.ModelProto, inputs: list[ModelInput], seed: int = 0) -> dict:
    """Seeded feeds of the shapes in `inputs` (their batch included): floats in the range the
    input's quantizer covers; ids in [0, rows) where the input indexes a Gather's table; 0/1
    otherwise (a padding mask along the last axis: ones, then zeros after at least half)."""
    rng = np.random.default_rng(seed)
    feeds = {}
    for inp in inputs:
        dtype = np.dtype(inp.dtype)
        if np.issubdtype(dtype, np.floating):
            lo, hi = input_range(proto, inp.name)
            uniform = rng.random(inp.shape, dtype=np.float32 if dtype == np.float32 else np.float64)
            feeds[inp.name] = (lo + (hi - lo) * uniform).astype(dtype)
            continue
        bound = gather_bound(proto, inp.name)
        if bound is not None:
            feeds[inp.name] = rng.integers(0, bound, inp.shape).astype(dtype)
        elif len(inp.shape) >= 2:
            length = inp.shape[-1]
            kept = rng.integers((length + 1) // 2, length + 1, inp.shape[:-1])
            feeds[inp.name] = (np.arange(length) < kept[..., None]).astype(dtype)
        else:
            feeds[inp.name] = rng.integers(0, 2, inp.shape).astype(dtype)
    return feeds
