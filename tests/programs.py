"""Builders of small raw programs for instruction-level tests."""
import numpy as np

from vta_sim import isa


def image_with(cfg, insns, data: bytes = b"", size: int | None = None):
    """A DRAM image: `data` from address 0, then the program (16-byte aligned).

    Returns (image, insn_addr, insn_count).
    """
    code = isa.encode_program(insns, cfg)
    insn_addr = -(-len(data) // 16) * 16
    total = max(size or 0, insn_addr + len(code))
    image = np.zeros(total, dtype=np.uint8)
    image[:len(data)] = np.frombuffer(data, dtype=np.uint8)
    image[insn_addr:insn_addr + len(code)] = np.frombuffer(code, dtype=np.uint8)
    return image, insn_addr, len(insns)


def load(mem, sram=0, dram=0, y=1, x=1, stride=None, pads=(0, 0, 0, 0), **flags):
    return isa.MemInsn(opcode=isa.OP_LOAD, memory_type=mem, sram_base=sram, dram_base=dram, y_size=y,
                       x_size=x, x_stride=x if stride is None else stride, y_pad_0=pads[0], y_pad_1=pads[1],
                       x_pad_0=pads[2], x_pad_1=pads[3], **flags)


def store(sram=0, dram=0, y=1, x=1, stride=None, **flags):
    return isa.MemInsn(opcode=isa.OP_STORE, memory_type=4, sram_base=sram, dram_base=dram, y_size=y,
                       x_size=x, x_stride=x if stride is None else stride, **flags)


def uop_words(cfg, uops) -> bytes:
    """Encoded micro-ops (dst, src, wgt) as DRAM bytes."""
    return b"".join(isa.encode_uop(isa.Uop(*u), cfg).to_bytes(4, "little") for u in uops)


def chain(load_part=(), compute_part=(), store_part=()):
    """Order three module streams with tokens: load -> compute -> store -> FINISH.

    The last load instruction pushes l2c and the first compute one pops it; likewise c2s
    between compute and store, and s2c from store to FINISH. Returns the instruction list.
    """
    load_part, compute_part, store_part = ([i.replace() for i in p] for p in (load_part, compute_part, store_part))
    finish = isa.FinishInsn()
    if load_part:
        load_part[-1].push_next = 1
        (compute_part[0] if compute_part else finish).pop_prev = 1
    if store_part:
        if compute_part:
            compute_part[-1].push_next = 1
            store_part[0].pop_prev = 1
        store_part[-1].push_prev = 1
        finish.pop_next = 1
    return load_part + compute_part + store_part + [finish]


class Layout:
    """Bump allocator of DRAM regions aligned to 64 bytes, collecting their bytes."""

    def __init__(self):
        self.data = bytearray()

    def put(self, payload: bytes, elem_bytes: int) -> int:
        """Place `payload`; returns its element index for elements of `elem_bytes`."""
        align = max(64, elem_bytes)
        start = -(-len(self.data) // align) * align
        self.data.extend(b"\0" * (start - len(self.data)))
        self.data.extend(payload)
        return start // elem_bytes

    def reserve(self, nbytes: int, elem_bytes: int) -> int:
        return self.put(b"\0" * nbytes, elem_bytes)
