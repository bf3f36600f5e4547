"""The recorded program of a compiled kernel: what a call loads into DRAM and runs.

`KernelProgram.build` takes the calls a compiled function made when it was recorded
(`intrinsics.host.record`) and builds the program once: the instruction stream (token flags
set, FINISH last), the micro-op words, the dependency tokens, and the DRAM layout — where each
parameter lives in the image. A call (`run`) starts from a zero image of that size, writes the
micro-ops and instructions and the input tensors at their places, runs the backend and reads
the outputs back: the same image, byte for byte, that building the program at every call
produced, without a callback into TVM or any state outside the kernel.
"""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from vta_sim import isa
from vta_sim.backends import get_backend
from vta_sim.config import Config
from vta_sim.result import RunResult
from vta_sim.runtime import DramBuffer, Program, _checked

from .calls import decode_calls, encode_calls
from .host import ProgramBuilder, Recording, internal

#: The token queues, (producer, consumer), by their bit in `KernelProgram.token_masks`.
_QUEUES = tuple(isa.QUEUE_BETWEEN)


@dataclass(frozen=True)
class Region:
    """A tensor's bytes in the DRAM image: `shape` elements of `dtype`, little-endian, from
    `byte_addr` (a `vta_sim.runtime.DramBuffer` at its place in the image)."""

    byte_addr: int
    shape: tuple
    dtype: str

    @classmethod
    def of(cls, buf: DramBuffer) -> Region:
        return cls(buf.byte_addr, tuple(buf.shape), buf.dtype.str)

    @property
    def nbytes(self) -> int:
        return int(np.prod(self.shape)) * np.dtype(self.dtype).itemsize

    def write(self, image: np.ndarray, array) -> None:
        """`array` into the image, as `DramBuffer.write` stores it (checked where its dtype is
        not the buffer's)."""
        dtype = np.dtype(self.dtype)
        array = np.asarray(array)
        if array.dtype != dtype or array.shape != self.shape:
            array = _checked(array, dtype, self.shape, "DRAM tensor")
        data = np.ascontiguousarray(array, dtype=dtype.newbyteorder("<"))
        image[self.byte_addr:self.byte_addr + self.nbytes] = data.view(np.uint8).reshape(-1)

    def read(self, image: np.ndarray) -> np.ndarray:
        """The tensor as it is in the image (a fresh array, native byte order)."""
        dtype = np.dtype(self.dtype)
        raw = image[self.byte_addr:self.byte_addr + self.nbytes]
        return raw.view(dtype.newbyteorder("<")).astype(dtype).reshape(self.shape)


@dataclass(frozen=True, eq=False)
class KernelProgram:
    """A compiled kernel's program, built once from its recorded calls. It is pickled with the
    kernel (the on-disk cache), so what has thousands of items is kept as one array or byte
    string each: the calls (`calls` decodes them), the tokens (`tokens`) and the instruction
    words, which are part of `code` (`instructions`)."""

    config_text: str
    kinds: tuple              # runtime memory kind of each parameter (`vta.begin`)
    call_words: np.ndarray    # the recorded ops, intrinsics.calls.encode_calls
    token_masks: np.ndarray   # per op: bit q of [0] set if it pops queue q first, of [1] if it pushes q after
    insn_addr: int            # byte address of the instruction words in the image
    insn_count: int
    size: int                 # bytes of the image
    code_addr: int            # the image from here on: micro-op and instruction words
    code: bytes
    inputs: tuple             # per input parameter, in call order: its Region
    outputs: tuple            # per output parameter, in order: its Region
    wholes: tuple = ()        # (parameter index, Region of its OutputView's whole tensor)

    @classmethod
    def build(cls, recording: Recording, params, outputs, views: dict | None = None) -> KernelProgram:
        """The program of `recording` for parameters `params` ((name, shape, dtype) each), of
        which `outputs` (indices) are written; `views` {index: vta_sim.runtime.OutputView}
        stores those outputs in slices of their tensors (the layout, not the data, is kept)."""
        builder = ProgramBuilder(Config.from_text(recording.config_text), params, recording.kinds, views)
        for call in recording.calls:
            builder.add(call)
        program = builder.build()
        buffers = builder.buffers
        wholes = tuple((i, Region.of(base)) for i, base in builder.placed)
        regions = [Region.of(b) for b in buffers] + [r for _, r in wholes]
        code_addr = max((r.byte_addr + r.nbytes for r in regions), default=0)
        if program.image[:code_addr].any() or code_addr > program.insn_addr:   # zero tensors, zero gaps
            raise AssertionError("the program's image holds data outside its parameters before its code")
        masks = np.array([[sum(1 << _QUEUES.index(pair) for pair in side) for side in op] for op in builder.tokens],
                         dtype=np.uint8).reshape(-1, 2)
        return cls(config_text=recording.config_text, kinds=recording.kinds,
                   call_words=encode_calls(recording.calls), token_masks=masks,
                   insn_addr=program.insn_addr, insn_count=program.insn_count, size=program.image.size,
                   code_addr=code_addr, code=program.image[code_addr:].tobytes(),
                   inputs=tuple(Region.of(b) for i, b in enumerate(buffers)
                                if i not in outputs and not internal(recording.kinds[i])),
                   outputs=tuple(Region.of(buffers[i]) for i in outputs), wholes=wholes)

    @property
    def calls(self) -> tuple:
        """The recorded ops (intrinsics.calls), in program order."""
        return decode_calls(self.call_words)

    @property
    def tokens(self) -> tuple:
        """Per op, in program order: the (producer, consumer) queues it pops before it runs and
        those it pushes when it completes (intrinsics.deps)."""
        return tuple(tuple(tuple(q for k, q in enumerate(_QUEUES) if int(mask) >> k & 1) for mask in op)
                     for op in self.token_masks)

    @property
    def instructions(self) -> list:
        """The instruction stream, token flags set, FINISH last."""
        start = self.insn_addr - self.code_addr
        return isa.decode_program(self.code[start:start + self.insn_count * isa.INSN_BYTES],
                                  Config.from_text(self.config_text))

    @property
    def recording(self) -> Recording:
        return Recording(self.config_text, self.kinds, self.calls)

    def image(self, inputs, views: dict | None = None) -> np.ndarray:
        """The DRAM image to run: code and micro-ops, `inputs` at their places, each view's
        whole tensor (`views` {index: OutputView}) at its place, zeros elsewhere."""
        image = np.zeros(self.size, dtype=np.uint8)
        image[self.code_addr:] = np.frombuffer(self.code, dtype=np.uint8)
        for region, array in zip(self.inputs, inputs, strict=True):
            region.write(image, array)
        for index, region in self.wholes:
            region.write(image, views[index].tensor)
        return image

    def program(self, inputs=None, views: dict | None = None) -> Program:
        """The runnable `vta_sim.runtime.Program` (zero inputs unless given)."""
        inputs = inputs if inputs is not None else [np.zeros(r.shape, r.dtype) for r in self.inputs]
        return Program(self.image(inputs, views), self.insn_addr, self.insn_count, self.instructions)

    def run(self, inputs, backend="sim", trace: bool = False, views: dict | None = None
            ) -> tuple[list, RunResult]:
        """Run on `backend` (a name or a backend object); returns (outputs, RunResult). Each
        view's whole tensor leaves the image after the run, as device DRAM keeps it."""
        image = self.image(inputs, views)
        runner = get_backend(backend, Config.from_text(self.config_text)) if isinstance(backend, str) else backend
        result = runner.run(image, insn_addr=self.insn_addr, insn_count=self.insn_count, trace=trace)
        for index, region in self.wholes:
            views[index].tensor[...] = region.read(result.dram)
        return [region.read(result.dram) for region in self.outputs], result
