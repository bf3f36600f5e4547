"""Transformers on VTA-8: cycles per sequence or frame, the share of them in attention, and the
GEMM utilisation of the attention matmuls (issue "Transformers as users export them";
docs/graph.md, "Transformers: cycles, attention share and utilisation").

    python bench/bench_transformers.py [--json-dir DIR] [--quantizer Q ...] [--small] [MODEL ...]

MODEL: encoder (the builtin: one post-norm layer, 16 tokens, width 64), encoder-prenorm (the
same layer pre-norm), bert (hidden 128, 2 heads, 2 layers, sequence 128), vit (hidden 192,
3 heads, 4 layers, 8x8 patches of a 64x64 image); default all four, each quantised by every
`--quantizer` (default onnxruntime-symmetric and onnxruntime, quantize_static's defaults).
`--small`: bert and vit at their test shapes (a quick check of the bench itself).

Where torch (and `transformers`) are installed, the bench also exports and runs the models as
users do: torch's own nn.TransformerEncoderLayer, post- and pre-norm (with a mean over the tokens
and a linear classifier, as the encoder builtin), and `transformers`' BertForSequenceClassification
and ViTForImageClassification of the same shapes with random weights (fastpath off, eager
attention), each by TorchScript (opset 17) and by torch.export (dynamo, opset 18; `--exporter`
picks one); where they are not, it says so in one line and runs the toolkit's own models.
torch is not a dependency: install it beside the project (`pip install --target DIR torch
transformers onnxscript`, then `PYTHONPATH=.:DIR`).

Per run: layers on VTA-8 of all layers, the share of MACs on VTA-8, VTA-8 cycles per sequence or
frame (layers on the CPU add none), the attention share (the cycles of the matmuls of two
activations, Q.K^T and attn.V, and of the softmax, over the model's cycles; the scale, the mask
add, the head split and merge are not counted, but where graph.fusion joined Q.K^T, the mask's
add and the softmax into one layer, that layer is), the attention matmuls' GEMM utilisation
(their MACs / (MACs per cycle x their cycles), of the matmuls that are layers of their own), verified (bit-exact against the CPU build) and the
logits against onnxruntime's run of the same QDQ model. `--json-dir`: each run's report as
DIR/MODEL_QUANTIZER.json and the table as DIR/summary.json.
"""
from __future__ import annotations

import argparse
import importlib.util
import inspect
import json
import re
import sys
import tempfile
import time
import warnings
from pathlib import Path

from graph.models import bert, encoder, vit
from graph.errors import one_line
from graph.quantize import quantizer_named
from graph.run import ModelCase, bert_case, run_model, vit_case
from vta_sim.progress import Progress

MODELS = ("encoder", "encoder-prenorm", "bert", "vit")
#: Not in the default run (about a minute): one layer of BERT-base's width (hidden 768, 12 heads,
#: FFN 3072, 128 tokens), whose LayerNorms stream their constants through ACC.
EXTRA = {"bert-base-layer": bert.Shape(vocab=1000, tokens=128, width=768, heads=12, layers=1, ffn=3072)}
QUANTIZERS = ("onnxruntime-symmetric", "onnxruntime", "onnxruntime-per-channel")
#: The quantisers a run takes by default (per-channel on request: --quantizer onnxruntime-per-channel).
DEFAULT_QUANTIZERS = QUANTIZERS[:2]
#: The ops counted as attention: the matmuls of two activations (Q.K^T, attn.V) and the softmax
#: (and a layer fused with one of them: Q.K^T with BERT's mask add and the softmax is one layer).
ATTENTION_OPS = ("matmul", "softmax")


def builtin_case(model: str, quantizer: str, small: bool) -> ModelCase:
    if model in ("encoder", "encoder-prenorm"):
        proto = encoder.float_model(norm_first=model == "encoder-prenorm")
        qdq = quantizer_named(quantizer)(proto, encoder.tokens(encoder.CALIBRATION_TOKENS, seed=encoder.SEED + 100))
        return ModelCase(model, qdq, encoder.tokens(1))
    if model == "bert":
        return bert_case(bert.SMALL if small else bert.DEFAULT, quantizer=quantizer)
    if model == "vit":
        return vit_case(vit.SMALL if small else vit.DEFAULT, quantizer=quantizer)
    if model in EXTRA:
        return bert_case(EXTRA[model], quantizer=quantizer)
    raise SystemExit(f"unknown model {model!r}; accepted: {', '.join((*MODELS, *EXTRA))}")


def figures(result) -> dict:
    """The bench's figures of one run (graph.run.ModelResult)."""
    rows = result.layers
    on_vta = [r for r in rows if r["target"] == "vta"]
    total = result.total_cycles
    kinds = {id(r): set(r["op"].split("+")) for r in rows}      # a fused layer (graph.fusion): its parts
    count = {id(r): r["op"].split("+").count("matmul") for r in rows}
    matmuls = [r for r in rows if "matmul" in kinds[id(r)]]
    mm_vta = [r for r in matmuls if r["target"] == "vta"]
    softmax_vta = [r for r in rows if "softmax" in kinds[id(r)] and r["target"] == "vta"]
    attention = sum(r["cycles"] for r in on_vta if kinds[id(r)] & set(ATTENTION_OPS))
    # a matmul alone, or a fused layer's program that is one (graph.attention: attn.V); a matmul
    # fused with its softmax has no cycles of its own
    alone = [r for r in mm_vta if r["op"] == "matmul"] + [p for r in mm_vta for p in r.get("pieces", ())
                                                          if p["op"] == "matmul"]
    mm_cycles, mm_macs = sum(r["cycles"] for r in alone), sum(r["macs"] for r in alone)
    by_op: dict = {}
    for r in on_vta:
        by_op[r["op"]] = by_op.get(r["op"], 0) + r["cycles"]
    o = result.onnxruntime or {}
    return {
        "layers": len(rows), "layers_vta": len(on_vta), "mac_fraction_vta": result.mac_fraction_vta,
        "sample": result.unit, "batch": result.batch, "cycles_per_sample": total / result.batch,
        "attention_cycles_per_sample": attention / result.batch,
        "attention_share": attention / total if total else None,
        "attention_counted": "matmuls of two activations (Q.K^T, attn.V) and softmax, on VTA-8",
        "attention_matmuls": sum(count[id(r)] for r in matmuls),
        "attention_matmuls_vta": sum(count[id(r)] for r in mm_vta),
        "attention_matmuls_cpu_reasons": sorted({_reason(r["reason"]) for r in matmuls if r["target"] == "cpu"}),
        "softmax_vta": len(softmax_vta),
        "attention_matmul_utilization": mm_macs / (result.config.macs_per_cycle * mm_cycles) if mm_cycles else None,
        "macs_per_cycle": result.config.macs_per_cycle,
        "cycles_by_op": dict(sorted(by_op.items(), key=lambda kv: -kv[1])),
        "verified": result.verified,
        "onnxruntime_max_abs_lsb": o.get("max_abs_lsb"), "onnxruntime_argmax_equal": o.get("argmax_equal"),
        "clock_mhz": result.clock.mhz,
    }


def _reason(text: str) -> str:
    """A CPU layer's reason without its operands' own zero points (one line for all of them)."""
    return re.sub(r"^its operands have zero points -?\d+ and -?\d+: ", "", text)


def row(model: str, quantizer: str, f: dict, wall_s: float) -> str:
    mm = f"{f['attention_matmuls_vta']} of {f['attention_matmuls']}"
    share = "—" if f["attention_share"] is None else f"{100 * f['attention_share']:.1f} %"
    if f["attention_matmuls"] and not f["attention_matmuls_vta"]:
        share += " (softmax only)"
    util = "—" if f["attention_matmul_utilization"] is None else f"{100 * f['attention_matmul_utilization']:.1f} %"
    ort = ("" if f["onnxruntime_max_abs_lsb"] is None else
           f"max {f['onnxruntime_max_abs_lsb']} LSB, argmax {'equal' if f['onnxruntime_argmax_equal'] else 'differs'}")
    frac = "—" if f["mac_fraction_vta"] is None else f"{100 * f['mac_fraction_vta']:.1f} %"
    return (f"| {model} | {quantizer} | {f['layers_vta']} of {f['layers']} | {frac} | "
            f"{f['cycles_per_sample']:,.0f} per {f['sample']} | {share} | {mm} | {util} | "
            f"{'yes' if f['verified'] else 'NO'} | {ort} | {wall_s:.0f} s |")


HEADER = ("| model | quantizer | layers on VTA-8 | MACs on VTA-8 | VTA-8 cycles | attention share | "
          "attention matmuls on VTA-8 | their GEMM utilisation | verified | logits vs onnxruntime | wall |\n"
          "|---|---|---|---|---|---|---|---|---|---|---|")


# ----------------------------------------------------------------------------- torch exports
def missing_exporters() -> list:
    return [name for name in ("torch", "transformers") if importlib.util.find_spec(name) is None]


#: The exporters users meet: TorchScript at opset 17 (most files in the wild) and torch.export
#: ("dynamo", the default since torch 2.9) at opset 18.
EXPORTERS = {"torchscript": (False, 17), "dynamo": (True, 18)}


def _export(module, args: tuple, path: Path, input_names: list, exporter: str) -> None:
    import torch

    dynamo, opset = EXPORTERS[exporter]
    kwargs = {"opset_version": opset, "input_names": input_names, "output_names": ["logits"]}
    if "dynamo" in inspect.signature(torch.onnx.export).parameters:
        kwargs["dynamo"] = dynamo
    elif dynamo:
        raise RuntimeError(f"torch {torch.__version__} has no dynamo exporter")
    with torch.no_grad(), warnings.catch_warnings():
        warnings.simplefilter("ignore")      # the TorchScript exporter's deprecation and tracer notes
        torch.onnx.export(module, args, str(path), **kwargs)


def torch_models(directory: Path, small: bool, exporters: list) -> list:
    """[(name, path, calibration feeds, feeds)] of the torch exports made here, each model by each
    of `exporters`; an export that fails is said in one line and left out."""
    import torch

    class Logits(torch.nn.Module):
        """A `transformers` classifier as users export it: the logits of its output object."""

        def __init__(self, model):
            super().__init__()
            self.model = model

        def forward(self, *args):
            return self.model(*args).logits

    torch.manual_seed(0)
    if hasattr(torch.backends, "mha"):
        torch.backends.mha.set_fastpath_enabled(False)       # the exported graph is the module's own code

    class EncoderClassifier(torch.nn.Module):
        """nn.TransformerEncoderLayer over already-embedded tokens, a mean, a linear (the encoder builtin)."""

        def __init__(self, norm_first: bool):
            super().__init__()
            self.layer = torch.nn.TransformerEncoderLayer(encoder.WIDTH, encoder.HEADS, encoder.FFN, dropout=0.0,
                                                          activation="gelu", batch_first=True, norm_first=norm_first)
            self.fc = torch.nn.Linear(encoder.WIDTH, encoder.CLASSES)

        def forward(self, x):
            return self.fc(self.layer(x).mean(1))

    def encoder_layer(norm_first: bool):
        x = encoder.tokens(1)
        return (EncoderClassifier(norm_first).eval(), (torch.from_numpy(x),), ["input"],
                encoder.tokens(encoder.CALIBRATION_TOKENS, seed=encoder.SEED + 100), x)

    def bert_model():
        from transformers import BertConfig, BertForSequenceClassification

        b = bert.SMALL if small else bert.DEFAULT
        config = BertConfig(vocab_size=b.vocab, hidden_size=b.width, num_hidden_layers=b.layers,
                            num_attention_heads=b.heads, intermediate_size=b.ffn, max_position_embeddings=b.tokens,
                            num_labels=b.classes, hidden_dropout_prob=0.0, attention_probs_dropout_prob=0.0)
        config._attn_implementation = "eager"     # the matmuls and softmax written out, not SDPA
        feeds = bert.sequences(1, b)
        return (Logits(BertForSequenceClassification(config)).eval(),
                (torch.from_numpy(feeds["input_ids"]), torch.from_numpy(feeds["attention_mask"])),
                ["input_ids", "attention_mask"], bert.sequences(bert.CALIBRATION_SEQUENCES, b, seed=bert.SEED + 100),
                feeds)

    def vit_model():
        from transformers import ViTConfig, ViTForImageClassification

        v = vit.SMALL if small else vit.DEFAULT
        config = ViTConfig(image_size=v.image, patch_size=v.patch, hidden_size=v.width, num_hidden_layers=v.layers,
                           num_attention_heads=v.heads, intermediate_size=v.ffn, num_labels=v.classes,
                           hidden_dropout_prob=0.0, attention_probs_dropout_prob=0.0)
        config._attn_implementation = "eager"
        x = vit.images(1, v)
        return (Logits(ViTForImageClassification(config)).eval(), (torch.from_numpy(x),), ["pixel_values"],
                vit.images(vit.CALIBRATION_IMAGES, v, seed=vit.SEED + 100), x)

    makers = [("torch-encoder-postnorm", lambda: encoder_layer(False)),
              ("torch-encoder-prenorm", lambda: encoder_layer(True))]
    if importlib.util.find_spec("transformers") is not None:
        makers += [("transformers-bert", bert_model), ("transformers-vit", vit_model)]
    made = []
    for base, make in makers:
        for exporter in exporters:
            name = f"{base}-{exporter}"
            path = directory / f"{name}.onnx"
            try:
                torch.manual_seed(0)                 # the same weights for both exporters
                module, args, input_names, calib, x = make()
                _export(module, args, path, input_names, exporter)
            except Exception as err:  # noqa: BLE001 - the other models still run
                print(f"{name}: the export failed ({one_line(err)})")
                continue
            made.append((name, path, calib, x))
    return made


def torch_case(path: Path, name: str, calib, x, quantizer: str) -> ModelCase:
    from graph import onnx_import

    proto, _ = onnx_import.prepared(str(path))
    return ModelCase(name, quantizer_named(quantizer)(proto, calib), x)


# ----------------------------------------------------------------------------- the bench
def main(argv=None) -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("models", nargs="*", default=list(MODELS),
                   help=f"default: {' '.join(MODELS)}; also: {' '.join(EXTRA)}")
    p.add_argument("--quantizer", action="append", choices=sorted(QUANTIZERS),
                   help=f"repeatable; default: {' and '.join(DEFAULT_QUANTIZERS)}")
    p.add_argument("--json-dir", type=Path, help="write each run's report and summary.json here")
    p.add_argument("--small", action="store_true", help="bert and vit at their test shapes")
    p.add_argument("--no-torch", action="store_true", help="skip the torch exports even where torch is installed")
    p.add_argument("--exporter", action="append", choices=sorted(EXPORTERS),
                   help=f"repeatable; default: {' and '.join(EXPORTERS)}")
    p.add_argument("--quiet", action="store_true", help="no progress lines")
    args = p.parse_args(argv)
    quantizers = args.quantizer or list(DEFAULT_QUANTIZERS)
    progress = Progress(sys.stderr, "quiet" if args.quiet else "auto")   # lines, not a bar, into a log

    def log(text: str) -> None:
        if not args.quiet:
            print(text, file=sys.stderr, flush=True)

    jobs = [(m, q, (lambda m=m, q=q: builtin_case(m, q, args.small))) for m in args.models for q in quantizers]
    missing = missing_exporters()
    tmp = tempfile.TemporaryDirectory()
    if args.no_torch:
        print("torch exports skipped (--no-torch)")
    elif "torch" in missing:
        print(f"torch is not installed ({' and '.join(missing)} missing): nn.TransformerEncoderLayer and "
              "transformers' BERT and ViT are not exported here; running the toolkit's own models only")
    else:
        if missing:
            print("transformers is not installed: exporting torch's nn.TransformerEncoderLayer only, "
                  "not transformers' BERT and ViT")
        try:
            exports = torch_models(Path(tmp.name), args.small, args.exporter or list(EXPORTERS))
        except Exception as err:  # noqa: BLE001 - the toolkit's own models still run
            print(f"the torch export failed ({one_line(err)}); running the toolkit's own models only")
            exports = []
        jobs += [(name, q, (lambda a=(path, name, calib, x, q): torch_case(*a)))
                 for name, path, calib, x in exports for q in quantizers]

    table, summary = [HEADER], []
    print(HEADER, flush=True)
    for model, quantizer, make in jobs:
        log(f"{model} ({quantizer}): quantising, compiling and running")
        t0 = time.perf_counter()
        try:
            result = run_model(make(), "1x8x8", progress=progress, compare_onnxruntime=True)
        except Exception as err:  # noqa: BLE001 - one model's failure is a row, not the end of the bench
            line = f"| {model} | {quantizer} | failed: {one_line(err)} |"
            print(line, flush=True)
            table.append(line)
            summary.append({"model": model, "quantizer": quantizer, "error": f"{type(err).__name__}: {err}"})
            continue
        wall = time.perf_counter() - t0
        f = figures(result)
        line = row(model, quantizer, f, wall)
        print(line, flush=True)
        table.append(line)
        summary.append({"model": model, "quantizer": quantizer, "wall_s": wall, **f})
        if args.json_dir:
            args.json_dir.mkdir(parents=True, exist_ok=True)
            (args.json_dir / f"{model}_{quantizer}.json").write_text(
                json.dumps({"figures": f, **result.to_json()}, default=str, indent=1))
    print()
    print("attention share: the VTA-8 cycles of the matmuls of two activations (Q.K^T, attn.V) and the softmax "
          "over the model's VTA-8 cycles (layers on the CPU add none to either); utilisation: those matmuls' MACs "
          "/ (64 MACs per cycle x their cycles)")
    for s in summary:
        if s.get("attention_matmuls_cpu_reasons"):
            print(f"{s['model']} ({s['quantizer']}): {s['attention_matmuls'] - s['attention_matmuls_vta']} attention "
                  f"matmuls on the CPU: {'; '.join(s['attention_matmuls_cpu_reasons'])}")
    if args.json_dir:
        (args.json_dir / "summary.json").write_text(json.dumps(
            {"command": "python bench/bench_transformers.py " + " ".join(sys.argv[1:] if argv is None else argv),
             "exporters_missing": missing, "rows": summary, "table": table}, indent=1, default=str))
    tmp.cleanup()
    return 0 if all(s.get("verified") for s in summary) else 1


if __name__ == "__main__":
    sys.exit(main())
