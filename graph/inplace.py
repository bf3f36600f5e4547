"""Concats stored in place: which program's STORE writes each slice of a Concat's DRAM tensor.

A Concat's output is one packed tensor (N/B, C/BLOCK_OUT, H, W, B, BLOCK_OUT); input i owns the
channel blocks from its offset on (graph.ops.concat.ConcatSpec.misfit: every slice but the last starts
on a block). At batch 1 (N/B = 1) a slice is one contiguous run, so the program that makes an
input can store its packed output straight into it (vta_sim.runtime.OutputView): the producer
region's kernel when the input is taken as it is, the Concat's own rescale program when the
input is moved into the output's scale. Where neither can, the host places the slice in the
Concat's run, for a reason the report gives (`Slot.reason`). graph.codegen.place_concats
decides, per model build, which producers store in place.
"""
from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

from vta_sim import packing as pk
from vta_sim.config import Config
from vta_sim.runtime import OutputView

from .errors import GraphError

#: Who writes a slice: the producer region's STORE, the Concat's rescale program's STORE, the host.
PRODUCER, RESCALE, HOST = "producer", "rescale", "host"


@dataclass
class Slot:
    """One input's slice of the Concat's tensor and who writes it."""
    offset: int               # elements of the tensor before the slice (valid at batch 1)
    shape: tuple              # the slice's packed shape (N/B, its channel blocks, H, W, B, BLOCK_OUT)
    writer: str = HOST
    reason: str | None = None  # why the host writes it (writer HOST)

    def fits(self, kernel) -> str | None:
        """Why `kernel` (an OpKernel) cannot store its output into this slice (None: it can).
        Every kernel's packed output but a host-laid-out one's (OpKernel.layout: a conv as
        im2col rows) is the packed NCHW layout, padded only by adding entries
        (remainder tiles, rows, blocks), so it is the slice exactly when the sizes agree."""
        if getattr(kernel, "layout", ""):
            return (f"its kernel stores {kernel.layout} rows (a row per output pixel), not the packed "
                    "NCHW layout")
        if self.shape[0] > 1:
            return (f"batch of {self.shape[0]} blocks: the slice is {self.shape[0]} runs of the tensor and a "
                    "program stores one contiguous output")
        have, want = int(np.prod(kernel.packed_output)), int(np.prod(self.shape))
        if have != want:
            return (f"its kernel stores a packed output of {have:,} bytes (shape {tuple(kernel.packed_output)}: "
                    f"remainder tiles) where the slice holds {want:,}; it would overwrite the next slice")
        return None


@dataclass
class ConcatPlacement:
    """A Concat's tensor, kept between the programs that store into it, and its slots."""
    tensor: np.ndarray        # packed int8 (N/B, C/BLOCK_OUT, H, W, B, BLOCK_OUT)
    slots: list
    channels: tuple           # (n, c): the plain output's batch and channels
    stored: set = field(default_factory=set)   # slots their producers stored since the last run

    @classmethod
    def alone(cls, cfg: Config, shapes, rescale_kernels) -> "ConcatPlacement":
        """The placement of a Concat with no producers known: each rescale program stores its
        slice where it can, the host places the rest."""
        B, BO = cfg.BATCH, cfg.BLOCK_OUT
        n, _, h, w = shapes[0]
        nb, blocks = -(-n // B), -(-sum(s[1] for s in shapes) // BO)
        slots, start = [], 0
        for (_, c, _, _), kernel in zip(shapes, rescale_kernels):
            slot = Slot(start * h * w * B * BO, (nb, -(-c // BO), h, w, B, BO))
            if kernel is None:
                slot.reason = "no producer on the accelerator stores it"
            else:
                slot.reason = slot.fits(kernel)
                slot.writer = HOST if slot.reason else RESCALE
            slots.append(slot)
            start += c // BO
        tensor = np.zeros((nb, blocks, h, w, B, BO), np.int8)
        return cls(tensor, slots, (n, sum(s[1] for s in shapes)))

    def view(self, j: int) -> OutputView:
        return OutputView(self.tensor, self.slots[j].offset)

    def block_range(self, j: int) -> slice:
        first = self.slots[j].offset // int(np.prod(self.tensor.shape[2:]))
        return slice(first, first + self.slots[j].shape[1])

    def place(self, j: int, x: np.ndarray) -> None:
        """The host's way: slice j packed from the plain input `x` (padding lanes zero)."""
        _, _, _, _, B, BO = self.tensor.shape
        s = self.slots[j].shape
        self.tensor[:, self.block_range(j)] = pk.pack_nchw(pk.zero_pad(x, (s[0] * B, s[1] * BO, *x.shape[2:])), B, BO)

    def output(self) -> np.ndarray:
        """The plain NCHW output, read from the tensor once every producer has stored its slice
        in this run."""
        missing = [j for j, s in enumerate(self.slots) if s.writer == PRODUCER and j not in self.stored]
        if missing:
            raise GraphError(f"concat inputs {missing}: their producers did not store their slices before "
                             "the concat ran")
        self.stored.clear()
        n, c = self.channels
        return np.ascontiguousarray(pk.unpack_nchw(self.tensor)[:n, :c])

    def summary(self) -> list:
        """Per input: who wrote its slice, and why the host did."""
        return [{"writer": s.writer, **({"reason": s.reason} if s.writer == HOST else {})} for s in self.slots]

