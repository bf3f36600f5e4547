"""Export torchvision's classifiers to float ONNX the way a user does, for bench_zoo.py.

Runs in a Python that has torch and torchvision (they are not dependencies of the project):

    /work/torchvenv/bin/python bench/export_torchvision.py --out build/zoo --size 64 [--models resnet18,...]
    python bench/bench_zoo.py --onnx-dir build/zoo --size 64

Each model gets random weights (torchvision's own initialisation, seeded), is put in eval mode
and exported with torch.onnx.export (opset 17, batch 1, input "input", output "output") to
OUT/NAME-SIZE.onnx. Quantisation happens in bench_zoo, in the project's environment.
"""
from __future__ import annotations

import argparse
import pathlib

#: The families of issue 19, by torchvision constructor name.
TORCHVISION = ("resnet18", "mobilenet_v2", "mnasnet0_5", "efficientnet_b0", "googlenet", "densenet121",
               "shufflenet_v2_x0_5", "regnet_x_400mf")


def export(name: str, size: int, path: pathlib.Path, dynamo: bool) -> None:
    import torch
    import torchvision

    torch.manual_seed(0)
    kwargs = {"aux_logits": False, "init_weights": True} if name == "googlenet" else {}
    model = getattr(torchvision.models, name)(weights=None, **kwargs).eval()
    x = torch.rand(1, 3, size, size)
    torch.onnx.export(model, (x,), str(path), opset_version=17, input_names=["input"],
                      output_names=["output"], dynamo=dynamo)


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--out", type=pathlib.Path, required=True)
    p.add_argument("--size", type=int, default=64)
    p.add_argument("--models", default=",".join(TORCHVISION))
    p.add_argument("--dynamo", action="store_true",
                   help="torch's dynamo exporter instead of the TorchScript one")
    args = p.parse_args()
    args.out.mkdir(parents=True, exist_ok=True)
    for name in args.models.split(","):
        if name not in TORCHVISION:
            raise SystemExit(f"unknown model {name!r}; accepted: {', '.join(TORCHVISION)}")
        path = args.out / f"{name}-{args.size}.onnx"
        export(name, args.size, path, args.dynamo)
        print(path)


if __name__ == "__main__":
    main()
