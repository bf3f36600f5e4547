"""A whole model on VTA-8 and on the CPU: import, QDQ lowering, both builds, run, compare.

`run_model` is what `vta-sim model` calls: it returns a `ModelResult` whose `to_json()` has the
keys docs/graph.md lists (model, verified, accuracy_cpu, accuracy_vta, logits_identical,
total_cycles, layers, ...).
"""
from __future__ import annotations

import dataclasses
import time
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np

from vta_sim.config import Config, report_clock

from . import inputs as model_inputs
from . import layer_agreement, onnx_import
from .build import CpuModel, VtaModel
from .errors import GraphError, one_line, stage
from .kernels import KernelCache
from .qdq import lower_qdq
from .quantize import quantizer_named
from .report import back_to_back, layer_rows

#: Models shipped with the toolkit, by the name `vta-sim model` takes.
BUILTIN = ("digits", "resnet18", "encoder", "bert", "vit",
           "digits-vit")        # graph.models.digits_vit: a small ViT trained at first use on the digits


@dataclass
class ModelCase:
    """A model with the inputs to run it on (and labels when there are any). `x` is one array
    for a model with one input, or {input name: array} (graph.inputs) for any model."""
    name: str
    onnx: object
    x: np.ndarray | dict
    labels: np.ndarray | None = None
    notes: list = field(default_factory=list)

    @property
    def feeds(self) -> dict:
        """{input name: array} in the model's order (the Relax function's parameters)."""
        return model_inputs.feeds_of(self.x, onnx_import.input_names(self.onnx))


def _single(feeds: dict):
    """One array for a model with one input (what callers of `case.x` have always had)."""
    return next(iter(feeds.values())) if len(feeds) == 1 else feeds


def _read(inputs, proto) -> np.ndarray | dict:
    """The feeds `--input` names for `proto`, checked against its inputs and their dtypes."""
    specs = onnx_import.model_inputs(proto, batch=1)
    feeds = model_inputs.read(inputs, specs)
    model_inputs.check(feeds, specs, proto=proto)
    return _single(feeds)


def load_case(model: str, inputs=None, seed: int = 0, progress=None,
              quantizer: str | None = None) -> ModelCase:
    """`digits`, `resnet18`, `encoder`, `bert` or a path to an ONNX model, with its inputs
    (`inputs`: what `--input` gives, one string or a list of them, graph.inputs.read).

    `quantizer` (graph.quantize.QUANTIZERS) quantises the float network of a built-in model
    (default: pow2), or a float ONNX file on its inputs (default: take the file as it is)."""
    if model == "digits":
        from .models import digits

        d = digits.load(progress=progress, quantizer=quantizer or "pow2")
        notes = [f"trained the digits CNN (float held-out accuracy {d.float_accuracy:.3f}), cached "
                 f"under {digits.models_dir()}" if d.trained else f"digits CNN from {digits.models_dir()}"]
        x = d.x_test if inputs is None else _read(inputs, d.qdq)
        return ModelCase("digits", d.qdq, x, d.y_test if inputs is None else None, notes)
    if model == "digits-vit":
        from .models import digits_vit

        d = digits_vit.load(progress=progress, quantizer=quantizer or digits_vit.DEFAULT_QUANTIZER)
        notes = [f"trained the digits ViT (float held-out accuracy {d.float_accuracy:.3f}), cached under "
                 f"{digits_vit.models_dir()}" if d.trained else f"digits ViT from {digits_vit.models_dir()}"]
        x = d.x_test if inputs is None else _read(inputs, d.qdq)
        return ModelCase("digits-vit", d.qdq, x, d.y_test if inputs is None else None, notes)
    if model == "resnet18":
        from .models import resnet18

        proto = resnet18.load(quantizer=quantizer or "pow2")
        x = resnet18.images(1, seed) if inputs is None else _read(inputs, proto)
        return ModelCase("resnet18", proto, x)
    if model == "encoder":
        from .models import encoder

        with stage(f"quantising it with {quantizer or 'pow2'}"):
            qdq = quantizer_named(quantizer or "pow2")(encoder.float_model(), encoder.tokens(encoder.CALIBRATION_TOKENS))
        x = encoder.tokens(1, seed) if inputs is None else _read(inputs, qdq)
        return ModelCase("encoder", qdq, x)
    if model == "bert":
        from .models import bert

        return bert_case(bert.DEFAULT, inputs, seed, quantizer)
    if model == "vit":
        from .models import vit

        return vit_case(vit.DEFAULT, inputs, seed, quantizer)
    if not model.endswith(".onnx") and not Path(model).is_file():
        raise GraphError(f"unknown model {model!r}; accepted: {', '.join(BUILTIN)} or a path to an "
                         ".onnx file")
    proto, upgrade = onnx_import.prepared(model)
    if inputs is None:               # one sample, or one batch of the size the file fixes
        specs = onnx_import.model_inputs(proto, batch=onnx_import.fixed_batch(proto) or 1)
        x = _single(model_inputs.synthetic(proto, specs, seed))
    else:
        x = _read(inputs, proto)
    if quantizer is not None:
        quantize = quantizer_named(quantizer)
        with stage(f"quantising it with {quantizer}"):
            proto = quantize(proto, x)
    return ModelCase(Path(model).stem, proto, x, notes=[upgrade] if upgrade else [])


def bert_case(shape, inputs=None, seed: int = 0, quantizer: str | None = None) -> ModelCase:
    """The BERT-style builtin (graph.models.bert) of `shape` on `bert.CALIBRATION_SEQUENCES`
    seeded padded sequences, run on one more (or on `inputs`); see `_generated_case`."""
    from .models import bert
    return _generated_case("bert", bert.float_model(shape), lambda count, s: bert.sequences(count, shape, seed=s),
                           bert.CALIBRATION_SEQUENCES, bert.SEED + 100, inputs, seed, quantizer)


def vit_case(shape, inputs=None, seed: int = 0, quantizer: str | None = None) -> ModelCase:
    """The ViT builtin (graph.models.vit) of `shape` on `vit.CALIBRATION_IMAGES` seeded images,
    run on one more (or on `inputs`); see `_generated_case`."""
    from .models import vit
    return _generated_case("vit", vit.float_model(shape), lambda count, s: vit.images(count, shape, seed=s),
                           vit.CALIBRATION_IMAGES, vit.SEED + 100, inputs, seed, quantizer)


def _generated_case(name: str, float_proto, samples, calibration: int, calibration_seed: int, inputs, seed: int,
                    quantizer: str | None) -> ModelCase:
    """A builtin with seeded random weights, quantised by `quantizer` (default onnxruntime:
    quantize_static's own defaults, as users quantise it) on `samples(calibration,
    calibration_seed)` and run on `samples(1, seed)` (or on `inputs`)."""
    qname = quantizer or "onnxruntime"
    with stage(f"quantising it with {qname}"):
        qdq = quantizer_named(qname)(float_proto, samples(calibration, calibration_seed))
    x = samples(1, seed) if inputs is None else _read(inputs, qdq)
    return ModelCase(name, qdq, x)


@dataclass
class ModelResult:
    model: str
    config: Config
    backend: str
    vthreads: int
    batch: int
    logits_cpu: np.ndarray
    logits_vta: np.ndarray
    labels: np.ndarray | None
    layers: list                     # report rows (graph.report.layer_rows)
    compile_s: float
    cpu_compile_s: float
    run_s: float
    partitioned: object = None       # the partitioned Relax module, for docs and debugging
    notes: list = field(default_factory=list)
    runs: list = field(default_factory=list)
    onnxruntime: dict | None = None  # agreement with onnxruntime (compare_onnxruntime=True)
    logits_onnxruntime: np.ndarray | None = None
    host_s: float | None = None      # the host's share of the run (measure_host=True)
    unit: str = "frame"              # what one sample is: "sequence" for a model of token ids
    outputs: list = field(default_factory=list)   # every output: (name, on the CPU, on VTA-8)
    outputs_onnxruntime: dict = field(default_factory=dict)   # {name: agreement} (compare_onnxruntime)

    @property
    def logits_identical(self) -> bool:
        """The first output (the logits) of both builds identical."""
        return bool(np.array_equal(self.logits_cpu, self.logits_vta))

    @property
    def outputs_identical(self) -> bool:
        """Every output of both builds identical."""
        return self.logits_identical and all(np.array_equal(cpu, vta) for _, cpu, vta in self.outputs)

    @property
    def verified(self) -> bool:
        return self.outputs_identical and all(r["verified"] for r in self.layers if r["target"] == "vta")

    def outputs_json(self) -> list:
        """Each output's agreement: its name, shape, whether the builds are identical, the
        largest difference and the fraction of values that differ (and onnxruntime's
        agreement, where compared)."""
        rows = []
        for name, cpu, vta in self.outputs or [("output", self.logits_cpu, self.logits_vta)]:
            diff = np.abs(cpu.astype(np.float64) - vta.astype(np.float64)) if cpu.shape == vta.shape else None
            rows.append({"name": name, "shape": list(vta.shape), "identical": bool(np.array_equal(cpu, vta)),
                         "max_abs_diff": None if diff is None else float(diff.max(initial=0)),
                         "differing_fraction": None if diff is None else float((diff > 0).mean()) if diff.size
                         else 0.0,
                         **({"onnxruntime": self.outputs_onnxruntime[name]}
                            if name in self.outputs_onnxruntime else {})})
        return rows

    @property
    def total_cycles(self) -> int:
        return sum(r["cycles"] for r in self.layers if r["target"] == "vta")

    def accuracy(self, logits) -> float | None:
        if self.labels is None:
            return None
        return float((logits.argmax(-1) == self.labels).mean())

    @property
    def macs(self) -> int:
        return sum(r["macs"] for r in self.layers)

    @property
    def mac_fraction_vta(self) -> float | None:
        """The share of the model's MACs (conv2d and dense layers) that ran on the accelerator."""
        total = self.macs
        return sum(r["macs"] for r in self.layers if r["target"] == "vta") / total if total else None

    @property
    def clock(self):
        """The clock frames/s is computed at (vta_sim.config.report_clock)."""
        return report_clock(self.config)

    @property
    def frames_per_second(self) -> float | None:
        """None when no layer ran on the accelerator."""
        cycles_per_frame = self.total_cycles / self.batch
        return self.clock.mhz * 1e6 / cycles_per_frame if cycles_per_frame else None

    def to_json(self) -> dict:
        return {"model": self.model, "verified": self.verified,
                "accuracy_cpu": self.accuracy(self.logits_cpu), "accuracy_vta": self.accuracy(self.logits_vta),
                "logits_identical": self.logits_identical, "outputs_identical": self.outputs_identical,
                "outputs": self.outputs_json(), "total_cycles": self.total_cycles,
                "cycles_per_frame": self.total_cycles / self.batch, "macs": self.macs,
                "mac_fraction_vta": self.mac_fraction_vta,
                "frames_per_second": self.frames_per_second, "clock_mhz": self.clock.mhz,
                "clock_source": self.clock.source, "batch": self.batch, "sample": self.unit,
                "config": self.config.name, "backend": self.backend, "vthreads": self.vthreads,
                "compile_s": self.compile_s, "cpu_compile_s": self.cpu_compile_s, "run_s": self.run_s,
                **({} if self.onnxruntime is None else {
                    "onnxruntime": self.onnxruntime,
                    "accuracy_onnxruntime": self.accuracy(self.logits_onnxruntime)}),
                "notes": list(self.notes), "layers": self.layers}


def run_onnxruntime(proto, x) -> np.ndarray:
    """The model's outputs from onnxruntime (graph optimisations off)."""
    return onnxruntime_outputs(proto, x)[proto.graph.output[0].name]


def onnxruntime_outputs(proto, x) -> dict:
    """{name: tensor} of every graph output from onnxruntime (graph optimisations off), in
    chunks of the model's own batch where the file fixes it (a batch-1 export takes one sample
    at a time), else 256. `x`: one array (a single-input model) or {input name: array}."""
    session = onnx_import.onnxruntime_session(proto)
    feeds = model_inputs.feeds_of(x, [i.name for i in session.get_inputs()])
    inp = session.get_inputs()[0]
    fixed = inp.shape[0] if inp.shape and isinstance(inp.shape[0], int) and inp.shape[0] > 0 else None
    chunk = fixed or 256
    size = model_inputs.batch_of(feeds)
    if fixed and size % fixed:
        raise GraphError(f"the model's input {inp.name!r} has a fixed batch of {fixed}; {size} "
                         f"samples are not a whole number of batches")
    names = [o.name for o in session.get_outputs()]
    parts = [session.run(names, {k: v[i:i + chunk] for k, v in feeds.items()}) for i in range(0, size, chunk)]
    # a tensor with no batch axis (a scalar the exporter computes from shapes) is the same in every chunk
    return {name: np.concatenate([p[j] for p in parts]) if np.ndim(parts[0][j]) else parts[0][j]
            for j, name in enumerate(names)}


def check_finite(x: np.ndarray, what: str) -> None:
    """Refuse inputs holding NaN or inf: quantising them has no defined result."""
    model_inputs.check_finite(x, what)


def output_step(proto, out: str | None = None) -> float:
    """The quantisation step of the model's output `out` (default: the first), the scale of the
    DequantizeLinear that writes it."""
    from onnx import numpy_helper

    inits = {i.name: numpy_helper.to_array(i) for i in proto.graph.initializer}
    out = proto.graph.output[0].name if out is None else out
    for node in proto.graph.node:
        if node.output[0] == out and node.op_type == "DequantizeLinear" and inits.get(node.input[1]) is not None:
            scale = inits[node.input[1]]
            if scale.size == 1:
                return float(scale)
    raise GraphError(f"output {out!r} is not written by a per-tensor DequantizeLinear, so there is no "
                     "quantisation step to measure agreement in")


def agreement(logits: np.ndarray, reference: np.ndarray, step: float) -> dict:
    """How close `logits` are to `reference`, in output quantisation steps (LSB)."""
    lsb = np.abs(logits.astype(np.float64) - reference.astype(np.float64)) / step
    return {"identical_fraction": float((lsb < 0.5).mean()), "max_abs_lsb": int(np.round(lsb.max())),
            "argmax_equal": bool(np.array_equal(logits.argmax(-1), reference.argmax(-1)))}


def run_model(case: ModelCase, config="1x8x8", vthreads: int = 2, backend: str = "sim",
              trace: bool = False, cache: KernelCache | None = None, progress=None,
              compare_onnxruntime: bool = False, measure_host: bool = False, fuse: bool = True) -> ModelResult:
    """Build `case` for the CPU and for VTA-8 and run its inputs on both (and on onnxruntime
    when `compare_onnxruntime`; `measure_host` times the host's share, VtaModel.host_seconds;
    `fuse`: graph.fusion's epilogues, else every dense's bias add and GELU as the graph has them)."""
    feeds = case.feeds
    for name, x in feeds.items():
        if np.issubdtype(x.dtype, np.floating):
            check_finite(x, f"the inputs of {case.name}" + (f" ({name})" if len(feeds) > 1 else ""))
    step = output_step(case.onnx) if compare_onnxruntime else None
    cfg = Config.load(config)
    batch = model_inputs.batch_of(feeds)
    with stage("importing the model into Relax"):
        mod, chunk = _import(case.onnx, batch)
    parts = [feeds] if chunk is None else [{k: v[i:i + chunk] for k, v in feeds.items()}
                                           for i in range(0, batch, chunk)]
    with stage("lowering its QDQ blocks to integer ops"):
        integer, decisions = lower_qdq(mod)
    with stage("partitioning and compiling it for VTA-8"):
        vta = VtaModel(integer, cfg, vthreads=vthreads, backend=backend, trace=trace, cache=cache,
                       progress=progress and progress.stage("compile"), qdq_decisions=decisions,
                       also=CpuModel.cold_jobs(integer), fuse=fuse)   # a cold CPU build compiles beside the kernels
    with stage("building and running its CPU reference"):
        cpu = CpuModel(integer)
        outputs_cpu = _joined([cpu.run_all(part) for part in parts])
    if progress:
        vta.build.progress = progress.stage("run")
    t0 = time.perf_counter()
    with stage("running it on VTA-8"):
        outs, part_runs = zip(*(vta.run_all(part) for part in parts))
        outputs_vta = _joined(outs)
        runs = _merged(part_runs, cfg.name, backend, trace)
    run_s = time.perf_counter() - t0
    rows = layer_rows(vta.layers, runs, cfg)
    if len(parts) > 1:               # the layers' MACs are one batch's, their cycles all batches'
        for row in rows:
            row["macs"] *= len(parts)
            if row["utilization"] is not None:
                row["utilization"] *= len(parts)
    names = [o.name for o in case.onnx.graph.output]
    if len(names) != len(outputs_vta):
        raise GraphError(f"the model lists {len(names)} outputs and its build returns {len(outputs_vta)}")
    result = ModelResult(case.name, cfg, backend, vthreads, batch, outputs_cpu[0], outputs_vta[0], case.labels,
                         rows, vta.compile_s, cpu.compile_s, run_s, vta.partitioned,
                         [*case.notes, *vta.fusions_declined], runs, outputs=list(zip(names, outputs_cpu, outputs_vta)))
    if chunk is not None:
        result.notes = [*result.notes, f"the model fixes its batch at {chunk}: its {batch} samples ran as "
                        f"{len(parts)} batches of {chunk}, their cycles added"]
    if any(not np.issubdtype(x.dtype, np.floating) for x in feeds.values()):
        result.unit = "sequence"     # token ids in: cycles and rates per sequence
    if measure_host:
        result.host_s = sum(vta.host_seconds(part, r) for part, r in zip(parts, part_runs))
    if compare_onnxruntime:
        tensors = layer_agreement.layer_tensors(case.onnx)
        values = onnxruntime_outputs(layer_agreement.with_outputs(case.onnx, layer_agreement.needed(tensors)),
                                     feeds)
        result.logits_onnxruntime = values[names[0]]
        result.onnxruntime = agreement(result.logits_vta, result.logits_onnxruntime, step)
        if len(names) > 1:
            result.outputs_onnxruntime = {name: _agreement_of(case.onnx, name, vta, values[name])
                                          for name, _, vta in result.outputs}
        if chunk is not None:        # each layer alone on the first batch's tensors
            values = {name: value[:chunk] for name, value in values.items()}
        layer_agreement.compare(result.layers, list(part_runs[0]), tensors, values)
    return result


def _agreement_of(proto, name: str, logits: np.ndarray, reference: np.ndarray) -> dict:
    """`agreement` in the output's quantisation steps; for a float output (no DequantizeLinear
    writes it), the largest difference in its own units."""
    try:
        return agreement(logits, reference, output_step(proto, name))
    except GraphError:
        diff = np.abs(logits.astype(np.float64) - reference.astype(np.float64))
        return {"max_abs_diff": float(diff.max(initial=0))}


def _joined(parts: list) -> list:
    """Each output's batches of `parts` (a list of outputs per batch) joined along the batch."""
    return [np.concatenate(same) for same in zip(*parts)]


def _import(proto, batch: int) -> tuple:
    """(Relax module, None) at `batch`; where that fails and the file fixes a batch that divides
    it (Reshape constants written for it, as exporters write them), (module at that batch, it):
    the samples then run in batches of it."""
    try:
        return onnx_import.import_onnx(proto, batch=batch)[0], None
    except Exception as err:  # noqa: BLE001 - retried at the file's batch, else named below
        fixed = onnx_import.fixed_batch(proto)
        if fixed is None or fixed == batch:
            raise
        if batch % fixed:
            raise GraphError(f"the model fixes its batch at {fixed} and does not import at a batch of {batch} "
                             f"({one_line(err)}); give a multiple of {fixed} samples") from err
        return onnx_import.import_onnx(proto, batch=fixed)[0], fixed


def _merged(part_runs: tuple, config_name: str, backend: str, trace: bool) -> list:
    """One LayerRun per layer from the runs of each batch: cycles and statistics added, traces
    chained, verified where every batch was."""
    if len(part_runs) == 1:
        return list(part_runs[0])
    return [dataclasses.replace(same[0], result=back_to_back([r.result for r in same], config_name, backend, trace),
                                verified=all(r.verified for r in same), seconds=sum(r.seconds for r in same),
                                output=None)
            for same in zip(*part_runs)]
