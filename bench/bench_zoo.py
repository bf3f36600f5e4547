"""Every CNN family a user exports, on the accelerator: where each layer runs, the share of the
MACs on VTA-8, cycles per frame, and agreement with onnxruntime per layer and at the output.

    python bench/bench_zoo.py [--size 64|224] [--quantizers onnxruntime,onnxruntime-per-channel]
                              [--onnx-dir build/zoo] [--models resnet18,...] [--json-dir DIR] [--pre-process]
                              [--chain]
    python bench/bench_zoo.py --depthwise      # MobileNetV2's depthwise layers: GEMM vs ALU mapping
    python bench/bench_zoo.py --pool-rounding  # integer tie rules of an average pool vs onnxruntime

The torchvision families (ResNet-18, MobileNetV2, MnasNet, EfficientNet-B0, GoogLeNet,
DenseNet-121, ShuffleNetV2 x0.5, RegNetX-400MF) are exported with torch.onnx.export (opset 17,
random weights) by bench/export_torchvision.py, in a Python that has torch and torchvision
(they are not dependencies), to DIR/NAME-SIZE.onnx; `--onnx-dir DIR` reads those files and
quantises them here with quantize_static. Without it the bench runs the families it builds
itself (graph.models: MobileNetV2 and ResNet-18 in torchvision's layout, seeded random weights).
`--pre-process` first runs onnxruntime's quant_pre_process on each float model, as its quantiser
advises (it folds the Shape-computed Slice bounds of ShuffleNet's x.chunk into constants).
The last column counts the Concats' input slices by who stored them into the Concat's DRAM
tensor: their producers' STOREs / their rescale programs' / the host (graph.inplace).
`--chain` also prints, per offloaded layer, its agreement with onnxruntime fed its own input
(alone) and fed the earlier layers' outputs as the run chains them (graph.layer_agreement.chained):
where the final outputs' differences enter and how they grow.
"""
from __future__ import annotations

import argparse
import json
import pathlib
import tempfile
import time

import numpy as np
import onnx

from graph import layer_agreement
from graph.kernels import KernelCache
from graph.quantize import quantizer_named
from graph.run import ModelCase, onnxruntime_outputs, run_model


def own_models(size: int) -> dict:
    from graph.models import mobilenet_v2, resnet18

    models = {"mobilenet_v2 (graph.models)": mobilenet_v2.float_model(size)}
    if size == 224:
        models["resnet18 (graph.models)"] = resnet18.float_model()
    return models


def identical(fraction: float) -> str:
    """A share of identical values, rounded down so that "100.00 %" means every one."""
    return f"{np.floor(10000 * fraction + 1e-6) / 100:.2f} %"      # + 1e-6: 0.671 is 6709.99... in binary


def row(name: str, quantizer: str, result, seconds: float) -> str:
    j = result.to_json()
    o = j["onnxruntime"]
    vta = [r for r in j["layers"] if r["target"] == "vta"]
    per_layer = [r["onnxruntime"] for r in vta if "identical_fraction" in r.get("onnxruntime", {})]
    worst = min(per_layer, key=lambda a: a["identical_fraction"]) if per_layer else None
    cpu = sorted({r["reason"].split(";")[0][:50] for r in j["layers"] if r["target"] == "cpu"})
    return (f"| {name} | {quantizer} | {len(vta)}/{len(j['layers'])} | {100 * (j['mac_fraction_vta'] or 0):.1f} % | "
            f"{j['cycles_per_frame']:,.0f} | {j['frames_per_second'] or 0:.2f} | {'yes' if j['verified'] else 'NO'} | "
            f"{'' if worst is None else identical(worst['identical_fraction'])} | "
            f"{max((a['max_abs_lsb'] for a in per_layer), default='')} | "
            f"{identical(o['identical_fraction'])} / {o['max_abs_lsb']} / {'yes' if o['argmax_equal'] else 'NO'} | "
            f"{seconds:.0f} s | {'; '.join(cpu)} | {slices(j['layers'])} |")


def slices(layers: list) -> str:
    """The Concats' slices by who stored them: producers' STOREs / rescale programs' / the host."""
    writers = [s["writer"] for r in layers for s in r.get("slices", ())]
    return "/".join(str(writers.count(w)) for w in ("producer", "rescale", "host")) if writers else ""


def chain_table(result, qdq: onnx.ModelProto, x: np.ndarray) -> str:
    """Per offloaded layer: agreement with onnxruntime alone and chained (rows where either differs,
    and the last layer), and the count of layers differing at all."""
    tensors = layer_agreement.layer_tensors(qdq)
    values = onnxruntime_outputs(layer_agreement.with_outputs(qdq, layer_agreement.needed(tensors)), x)
    layer_agreement.chained(result.layers, result.runs, tensors, values, qdq)
    vta = [r for r in result.layers if r["target"] == "vta"]

    def cell(a: dict) -> str:
        return a["reason"] if "reason" in a else f"{identical(a['identical_fraction'])} / {a['max_abs_lsb']}"

    def differs(a: dict) -> bool:
        return "reason" in a or a["max_abs_lsb"] > 0

    out = ["| layer | op | shape | alone: identical / LSB | chained: identical / LSB | inputs from onnxruntime |",
           "|---|---|---|---:|---:|---:|"]
    out += [f"| {r['name']} | {r['op']} | {r['shape']} | {cell(r['onnxruntime'])} | {cell(r['onnxruntime_chained'])} | "
            f"{r['onnxruntime_chained'].get('from_onnxruntime', '')} |"
            for r in vta if r is vta[-1] or differs(r["onnxruntime"]) or differs(r["onnxruntime_chained"])]
    out.append(f"{sum(differs(r['onnxruntime']) for r in vta)} of {len(vta)} layers differ alone, "
               f"{sum(differs(r['onnxruntime_chained']) for r in vta)} chained")
    return "\n".join(out)


def exported_models(onnx_dir: pathlib.Path, size: int) -> dict:
    """The float ONNX files export_torchvision.py wrote for this size, by model name."""
    suffix = f"-{size}.onnx"
    paths = sorted(onnx_dir.glob(f"*{suffix}"))
    if not paths:
        raise SystemExit(f"no *{suffix} in {onnx_dir}: run bench/export_torchvision.py --out {onnx_dir} --size {size}")
    return {path.name[:-len(suffix)]: onnx.load(path) for path in paths}


def pre_processed(model: onnx.ModelProto) -> onnx.ModelProto:
    """onnxruntime's quant_pre_process (its optimiser and ONNX shape inference; the symbolic shape
    inference needs sympy, not a dependency, and a fixed input shape does not need it)."""
    from onnxruntime.quantization.shape_inference import quant_pre_process

    with tempfile.TemporaryDirectory() as tmp:
        path = pathlib.Path(tmp) / "pre.onnx"
        quant_pre_process(model, path, skip_symbolic_shape=True)
        return onnx.load(path)


def zoo(size: int, quantizers: list, onnx_dir: pathlib.Path | None, names: list | None,
        json_dir: pathlib.Path | None, pre_process: bool, chain: bool = False) -> None:
    models = exported_models(onnx_dir, size) if onnx_dir else own_models(size)
    if names:
        unknown = sorted(set(names) - set(models))
        if unknown:
            raise SystemExit(f"no model {', '.join(unknown)}; have: {', '.join(models)}")
        models = {name: models[name] for name in names}
    if pre_process:
        models = {name: pre_processed(model) for name, model in models.items()}
    cache = KernelCache()
    x = np.random.default_rng(0).random((1, 3, size, size), dtype=np.float32)
    calibration = np.random.default_rng(1).random((4, 3, size, size), dtype=np.float32)
    print("| model | quantiser | layers on VTA | MACs on VTA | cycles / frame | frames/s | verified | "
          "worst layer identical | worst layer LSB | output identical / LSB / argmax | wall | on the CPU | "
          "concat slices: producer / rescale / host |")
    print("|---|---|---|---:|---:|---:|---|---:|---:|---|---:|---|---|")
    for name, model in models.items():
        for quantizer in quantizers:
            t0 = time.perf_counter()
            qdq = quantizer_named(quantizer)(model, calibration)
            result = run_model(ModelCase(name, qdq, x), cache=cache, compare_onnxruntime=True)
            print(row(name, quantizer, result, time.perf_counter() - t0), flush=True)
            if chain:
                print(chain_table(result, qdq, x), flush=True)
            if json_dir:
                json_dir.mkdir(parents=True, exist_ok=True)
                (json_dir / f"{name}-{size}-{quantizer}{'-pre' if pre_process else ''}.json").write_text(json.dumps(result.to_json(), indent=1))


def depthwise() -> None:
    """MobileNetV2 (224x224)'s 17 depthwise layers on 1x8x8: the GEMM mapping simulated, the ALU
    mapping's cycles estimated (docs/ops.md)."""
    from graph.models.mobilenet_v2 import SETTINGS
    from requantisation import fixed_point as fp
    from schedules import vta_ops
    from schedules import vta_workloads as wl
    from vta_sim.config import Config

    cfg = Config.load("1x8x8")
    rng = np.random.default_rng(0)
    layers, channels, size = [(32, 112, 1)], 16, 112
    for t, c, n, s in SETTINGS[1:]:
        for i in range(n):
            layers.append((channels * t, size, s if i == 0 else 1))
            size //= s if i == 0 else 1
            channels = c
    print("| C | H | stride | MACs | GEMM cycles | GEMM MACs/cycle | ALU estimate | verified |")
    print("|---:|---:|---:|---:|---:|---:|---:|---|")
    total = [0, 0]
    for c, h, stride in layers:
        r, params = fp.choose(rng.uniform(2e-3, 8e-3, c), -128, -128, 127)
        kernel = vta_ops.conv2d_kernel(cfg, 1, h, h, c, c, 3, 1, stride, r, groups=c)
        x = rng.integers(-128, 128, (1, c, h, h), dtype=np.int8)
        w = rng.integers(-128, 128, (c, 1, 3, 3), dtype=np.int8)
        b = rng.integers(-2000, 2000, c).astype(np.int32)
        y, result = kernel(x, w, b, *params.arrays())
        ok = np.array_equal(y, fp.requantize_ref(wl.conv2d_acc(x, w, b, 1, stride, c), r, params))
        oh = wl.out_size(h, 3, 1, stride)
        entries = oh * oh * c // cfg.BLOCK_OUT
        # ALU mapping per output entry: per tap a copy of the input tap (reset + ADD), a MUL by
        # the channel weights and an ADD into the sum (1 + 2 + 2 + 2 cycles), plus the same
        # fixed-point epilogue (23); the ACC_8BIT loads of the input are not counted.
        alu = entries * (9 * 7 + 23)
        macs = oh * oh * c * 9
        total[0] += result.cycles
        total[1] += alu
        print(f"| {c} | {h} | {stride} | {macs:,} | {result.cycles:,} | {macs / result.cycles:.2f} | {alu:,} | "
              f"{'yes' if ok else 'NO'} |", flush=True)
    print(f"| all | | | | {total[0]:,} | | {total[1]:,} | |")


def _pool_session(k: int, scale: float, zero: int, global_pool: bool):
    """onnxruntime on DequantizeLinear -> AveragePool kxk/k (or GlobalAveragePool) -> QuantizeLinear,
    one scale and zero point in and out as quantize_static writes them."""
    from onnx import TensorProto, helper, numpy_helper

    from graph.onnx_import import onnxruntime_session

    pool = (helper.make_node("GlobalAveragePool", ["d"], ["p"]) if global_pool else
            helper.make_node("AveragePool", ["d"], ["p"], kernel_shape=[k, k], strides=[k, k]))
    graph = helper.make_graph(
        [helper.make_node("DequantizeLinear", ["x", "s", "z"], ["d"]), pool,
         helper.make_node("QuantizeLinear", ["p", "s", "z"], ["y"])], "pool",
        [helper.make_tensor_value_info("x", TensorProto.INT8, None)],
        [helper.make_tensor_value_info("y", TensorProto.INT8, None)],
        [numpy_helper.from_array(np.array(scale, np.float32), "s"), numpy_helper.from_array(np.array(zero, np.int8), "z")])
    return onnxruntime_session(helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)], ir_version=8))


def pool_rounding(trials: int = 20) -> None:
    """Share of a 2x2 average pool's outputs identical to onnxruntime under each tie rule, and
    the ceiling of any rule that sees only the window sum (docs/ops.md)."""
    rng = np.random.default_rng(0)
    print("| rule at a tie | 2x2/2 window | global pool over 2x2 |")
    print("|---|---:|---:|")
    shares, best, ties, mixed, tying = {}, 0, 0, 0, 0
    for global_pool in (False, True):
        agree = dict.fromkeys(("half up", "half down", "half away from zero", "half to even"), 0)
        n = 0
        for _ in range(trials):
            scale, zero = float(np.float32(rng.uniform(0.005, 0.05))), int(rng.integers(-128, 0))
            side = 2 if global_pool else 64
            x = rng.integers(-128, 128, (64, 64, side, side), dtype=np.int8)
            y = _pool_session(2, scale, zero, global_pool).run(None, {"x": x})[0].astype(np.int64).ravel() - zero
            sums = (x.astype(np.int64) - zero).reshape(64, 64, side // 2, 2, side // 2, 2).sum((3, 5)).ravel()
            q, r = np.divmod(sums, 4)
            tie, base = r == 2, q + (r == 3)
            rules = {"half up": base + tie, "half down": base, "half away from zero": base + (tie & (q >= 0)),
                     "half to even": base + (tie & (q % 2 == 1))}
            for name, v in rules.items():
                agree[name] += int((np.clip(v + zero, -128, 127) - zero == y).sum())
            n += y.size
            if not global_pool:
                ties += int(tie.sum())
                for total in np.unique(sums):
                    values = y[sums == total]
                    best += int(np.unique(values, return_counts=True)[1].max())
                    tying += int(total % 4 == 2)
                    mixed += int(total % 4 == 2 and len(np.unique(values)) > 1)
        for name, v in agree.items():
            shares.setdefault(name, []).append(f"{100 * v / n:.1f} %")
        if not global_pool:
            shares["best possible function of the window sum (per scale)"] = [f"{100 * best / n:.1f} %", ""]
            print(f"(windows at an exact tie: {100 * ties / n:.1f} %; tying sums rounded both ways by "
                  f"onnxruntime: {mixed} of {tying})")
    for name, cells in shares.items():
        print(f"| {name} | {' | '.join(cells)} |")


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--size", type=int, default=64)
    p.add_argument("--quantizers", default="onnxruntime,onnxruntime-per-channel")
    p.add_argument("--onnx-dir", type=pathlib.Path, help="float models from bench/export_torchvision.py")
    p.add_argument("--models", help="comma-separated names among those found")
    p.add_argument("--json-dir", type=pathlib.Path, help="write each run's JSON report here")
    p.add_argument("--pre-process", action="store_true", help="onnxruntime's quant_pre_process first")
    p.add_argument("--chain", action="store_true", help="per layer: agreement alone and chained")
    p.add_argument("--depthwise", action="store_true")
    p.add_argument("--pool-rounding", action="store_true")
    args = p.parse_args()
    if args.depthwise:
        depthwise()
    elif args.pool_rounding:
        pool_rounding()
    else:
        zoo(args.size, args.quantizers.split(","), args.onnx_dir, args.models and args.models.split(","),
            args.json_dir, args.pre_process, args.chain)


if __name__ == "__main__":
    main()
