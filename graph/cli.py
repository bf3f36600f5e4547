"""`vta-sim model NAME|PATH.onnx` (NAME one of graph.run.BUILTIN): a whole model on VTA-8 against
its CPU build."""
from __future__ import annotations

import json
import traceback
from pathlib import Path

from vta_sim import backends

from .errors import GraphError, one_line
from vta_sim.errors import VTAError
from vta_sim.progress import Progress

from .report import merged_trace, summary, table
from .quantize import QUANTIZERS
from .run import BUILTIN, load_case, run_model


def cmd_model(args) -> int:
    """Exit status 0 verified, 1 not verified; a refusal leaves as a VTAError (exit 2), and so does
    anything else that escapes the stages' own error boundaries (graph.errors.stage)."""
    try:
        try:
            return _model(args)
        except VTAError:
            raise
        except Exception as err:  # noqa: BLE001 - the last boundary: one line, never a traceback
            raise GraphError(f"vta-sim model failed: {one_line(err)} (a bug of the graph level outside its "
                             "stages; --debug shows the traceback)") from err
    except VTAError as err:
        if args.debug:
            traceback.print_exception(err)
        raise


def _model(args) -> int:
    if args.trace and args.backend != "sim":
        raise GraphError(f"--trace needs --backend sim: the {args.backend} backend records no trace")
    progress = Progress(mode="quiet" if args.quiet else "auto")
    case = load_case(args.model, args.input, args.seed,
                     progress=lambda e, n: progress.stage("train")(e, n, f"epoch {e}"), quantizer=args.quantizer)
    result = run_model(case, args.config, args.vthreads, args.backend, trace=bool(args.trace),
                       progress=progress, compare_onnxruntime=args.compare_onnxruntime, fuse=not getattr(args, "no_fuse", False))
    for note in result.notes:
        print(note)
    print(table(result.layers))
    print(summary(result))
    if args.json:
        Path(args.json).parent.mkdir(parents=True, exist_ok=True)
        Path(args.json).write_text(json.dumps(result.to_json(), indent=2))
        print(f"  figures written to {args.json}")
    if args.trace:
        trace = merged_trace(result.runs, result.config)
        (trace.save_png if str(args.trace).endswith(".png") else trace.save_json)(args.trace)
        print(f"  trace of the accelerator layers written to {args.trace}")
    return 0 if result.verified else 1


def demo(out_dir: str, config: str = "1x8x8") -> bool:
    """The digits CNN end to end (trained on first use), for `vta-sim demo`."""
    print(f"\n$ vta-sim model digits --config {config}")
    code = cmd_model(_Args(model="digits", config=config, json=str(Path(out_dir) / "demo_digits.json")))
    return code == 0


class _Args:
    """The defaults of `vta-sim model`, for callers that do not go through argparse."""

    def __init__(self, **given):
        self.__dict__.update(dict(input=None, seed=0, vthreads=2, backend="sim", trace=None, json=None,
                                  config="1x8x8", quantizer=None, compare_onnxruntime=False, quiet=False,
                                  debug=False), **given)


def register(subparsers) -> None:
    p = subparsers.add_parser(
        "model", help="a whole model through TVM's graph level onto the accelerator, verified against "
                      "the CPU build",
        description="Import an ONNX model (QDQ-quantised, or float: float ops stay on the CPU), lower "
                    "its QDQ blocks to integer ops, offload the convolutions (grouped and depthwise too), dense "
                    "layers, matmuls, max- and average pools and residual adds to VTA-8 through Relax BYOC, run the rest "
                    "(Gather, Softmax, LayerNorm, GELU, mask arithmetic, ...) on the CPU with its reason, and "
                    "compare with the all-CPU build of the same integer graph. Exit status: 0 verified, 1 "
                    "not verified, 2 refused (one line naming the stage and the reason; --debug adds the "
                    "traceback).")
    p.add_argument("model", help=f"{' | '.join(BUILTIN)} | PATH.onnx")
    p.add_argument("--config", default="1x8x8", help="1x8x8 (default), 8x8x8 or a JSON file")
    p.add_argument("--backend", default="sim", choices=backends.names(), help="sim (default) or rtl")
    p.add_argument("--vthreads", type=int, default=2, choices=(1, 2), help="virtual threads (default 2)")
    p.add_argument("--no-fuse", action="store_true",
                   help="run each dense's bias add (where the graph has one of its own) and a GELU after it as "
                        "the graph has them, not in the dense's program (graph.fusion): for comparison")
    p.add_argument("--input", action="append", metavar="[NAME=]FILE",
                   help="the model's inputs, each in the model's own dtype (float32 images, int64 token "
                        "ids, ...) as one sample, a batch, or a stack of single-sample batches: FILE.npy for "
                        "a model with one input; NAME=FILE.npy repeated, once per input, for a model with "
                        "several (--input input_ids=ids.npy --input attention_mask=mask.npy); or one "
                        "FILE.npz holding an array per input name. A wrong name, dtype or shape is refused "
                        "naming what the model takes. Default: the held-out digits, or one seeded random "
                        "sample (a batch where the file fixes one) in each input's dtype (floats in the range its quantiser covers, ids in "
                        "[0, rows of the table) where an input indexes a Gather, 0/1 padding masks for "
                        "other integer inputs)")
    p.add_argument("--seed", type=int, default=0, help="seed of the random input (default 0)")
    p.add_argument("--quantizer", choices=sorted(QUANTIZERS),
                   help="quantise the float network: pow2 (the toolkit's power-of-two scales; default for "
                        "digits, resnet18 and encoder) or onnxruntime's quantize_static (defaults, per-channel, "
                        "symmetric; its defaults are bert's and vit's default, symmetric digits-vit's); for an "
                        ".onnx file, quantise it on its inputs (all of them, in their dtypes)")
    p.add_argument("--compare-onnxruntime", action="store_true",
                   help="also run the QDQ model in onnxruntime (ORT_DISABLE_ALL) and report the agreement "
                        "of the outputs and of every offloaded layer alone on onnxruntime's own tensors")
    p.add_argument("--json", help="write the figures (model, verified, accuracy, layers, ...) here")
    p.add_argument("--debug", action="store_true",
                   help="on a refusal or failure, also print the traceback (of the original error)")
    p.add_argument("--quiet", action="store_true",
                   help="no progress (by default a bar on a terminal, one line per finished stage otherwise)")
    p.add_argument("--trace", help="timeline of all accelerator layers: Chrome JSON, or PNG if it ends in .png")
    p.set_defaults(func=cmd_model)

