"""The ResNet-18 convolution layers C1-C11 (batch 1) and the benchmark table C2-C11.

One source of truth for the layer shapes: the CLI, the benches and the comparison column
all read this table. C1 (the 224x224, 3-channel 7x7 stem) is in RESNET18 for lookups by name;
TABLE_LAYERS, the layers `vta-sim resnet18` and the benches run, leaves it out (it takes
tens of seconds to simulate and its 3 channels make it a padding case rather than a tiling one).
"""
from typing import NamedTuple


class ConvLayer(NamedTuple):
    """A square conv2d layer: H = W input size, channels, square kernel, padding, stride."""

    H: int
    IC: int
    OC: int
    K: int
    pad: int
    stride: int


RESNET18 = {
    "C1": ConvLayer(224, 3, 64, 7, 3, 2),
    "C2": ConvLayer(56, 64, 64, 3, 1, 1),
    "C3": ConvLayer(56, 64, 128, 3, 1, 2),
    "C4": ConvLayer(56, 64, 128, 1, 0, 2),
    "C5": ConvLayer(28, 128, 128, 3, 1, 1),
    "C6": ConvLayer(28, 128, 256, 3, 1, 2),
    "C7": ConvLayer(28, 128, 256, 1, 0, 2),
    "C8": ConvLayer(14, 256, 256, 3, 1, 1),
    "C9": ConvLayer(14, 256, 512, 3, 1, 2),
    "C10": ConvLayer(14, 256, 512, 1, 0, 2),
    "C11": ConvLayer(7, 512, 512, 3, 1, 1),
}

#: The benchmark table: every layer but C1.
TABLE_LAYERS = tuple(name for name in RESNET18 if name != "C1")


def get_layer(name):
    """Look up 'resnet18.C5' or 'C5'; raises KeyError naming the accepted layer names."""
    key = name.split(".", 1)[1] if name.lower().startswith("resnet18.") else name
    key = key.upper()
    if key not in RESNET18:
        raise KeyError(
            f"unknown layer {name!r}; accepted: "
            + ", ".join(f"resnet18.{k}" for k in RESNET18)
        )
    return RESNET18[key]
