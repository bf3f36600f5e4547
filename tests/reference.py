"""An independent, deliberately naive reference of spec section 5, for checking the simulator.

It decodes with the spec's bit table written out by hand (the layout both shipped configs
share: LU=13, LI=11, LW=10, LA=11) instead of `vta_sim.isa`, and executes instructions one by
one, element by element, in program order with Python ints. Correctly synchronised programs
give the same result in program order as on the concurrent machine.
"""
from __future__ import annotations

import numpy as np

# (name, lo, hi) straight from the spec's tables.
COMMON = [("opcode", 0, 2), ("pop_prev", 3, 3), ("pop_next", 4, 4), ("push_prev", 5, 5), ("push_next", 6, 6)]
MEM = COMMON + [("memory_type", 7, 9), ("sram_base", 10, 25), ("dram_base", 26, 57), ("y_size", 64, 79),
                ("x_size", 80, 95), ("x_stride", 96, 111), ("y_pad_0", 112, 115), ("y_pad_1", 116, 119),
                ("x_pad_0", 120, 123), ("x_pad_1", 124, 127)]
LOOP = COMMON + [("reset", 7, 7), ("uop_bgn", 8, 20), ("uop_end", 21, 34), ("iter_out", 35, 48),
                 ("iter_in", 49, 62), ("dst_factor_out", 64, 74), ("dst_factor_in", 75, 85),
                 ("src_factor_out", 86, 96), ("src_factor_in", 97, 107)]
GEMM = LOOP + [("wgt_factor_out", 108, 117), ("wgt_factor_in", 118, 127)]
ALU = LOOP + [("alu_opcode", 108, 110), ("use_imm", 111, 111), ("imm", 112, 127)]
UOP = [("dst_idx", 0, 10), ("src_idx", 11, 21), ("wgt_idx", 22, 31)]


def fields(word: int, table) -> dict:
    return {name: (word >> lo) & ((1 << (hi - lo + 1)) - 1) for name, lo, hi in table}


def wrap32(v: int) -> int:
    return (v + (1 << 31)) % (1 << 32) - (1 << 31)


def low8(v: int) -> int:
    return (v + 128) % 256 - 128


class Reference:
    def __init__(self, cfg, image: np.ndarray):
        self.cfg = cfg
        self.dram = bytearray(image.tobytes())
        b, bi, bo = cfg.BATCH, cfg.BLOCK_IN, cfg.BLOCK_OUT
        bufs = cfg.buffers
        self.inp = np.zeros((bufs["inp"].depth, b, bi), dtype=object)
        self.wgt = np.zeros((bufs["wgt"].depth, bo, bi), dtype=object)
        self.acc = np.zeros((bufs["acc"].depth, b, bo), dtype=object)
        self.out = np.zeros((bufs["out"].depth, b, bo), dtype=object)
        self.uop = [0] * bufs["uop"].depth

    def read_int(self, addr, nbytes, signed=True):
        return int.from_bytes(self.dram[addr:addr + nbytes], "little", signed=signed)

    def run(self, insn_addr: int, insn_count: int) -> np.ndarray:
        for k in range(insn_count):
            word = int.from_bytes(self.dram[insn_addr + 16 * k:insn_addr + 16 * (k + 1)], "little")
            op = word & 7
            if op in (0, 1):
                self.mem(fields(word, MEM), op)
            elif op == 2:
                self.loop(fields(word, GEMM), gemm=True)
            elif op == 4:
                self.loop(fields(word, ALU), gemm=False)
        return np.frombuffer(bytes(self.dram), dtype=np.uint8)

    def mem(self, f, op):
        cfg = self.cfg
        b, bi, bo = cfg.BATCH, cfg.BLOCK_IN, cfg.BLOCK_OUT
        if f["x_size"] == 0:
            return
        mt = f["memory_type"]
        if op == 1:  # STORE OUT
            for r in range(f["y_size"]):
                for c in range(f["x_size"]):
                    entry = self.out[f["sram_base"] + r * f["x_size"] + c]
                    addr = (f["dram_base"] + r * f["x_stride"] + c) * b * bo
                    for n, v in enumerate(entry.ravel()):
                        self.dram[addr + n] = v & 0xFF
            return
        width = f["x_pad_0"] + f["x_size"] + f["x_pad_1"]
        for r in range(f["y_pad_0"] + f["y_size"] + f["y_pad_1"]):
            for c in range(width):
                idx = f["sram_base"] + r * width + c
                dr, dc = r - f["y_pad_0"], c - f["x_pad_0"]
                inside = 0 <= dr < f["y_size"] and 0 <= dc < f["x_size"]
                elem = f["dram_base"] + dr * f["x_stride"] + dc
                if mt == 0:
                    self.uop[idx] = self.read_int(elem * 4, 4, signed=False)
                    continue
                shape, nbytes, target = {1: ((bo, bi), 1, self.wgt), 2: ((b, bi), 1, self.inp),
                                         3: ((b, bo), 4, self.acc), 5: ((b, bo), 1, self.acc)}[mt]
                count = shape[0] * shape[1]
                vals = [self.read_int((elem * count + n) * nbytes, nbytes) if inside else 0 for n in range(count)]
                target[idx] = np.array(vals, dtype=object).reshape(shape)

    def loop(self, f, gemm: bool):
        imm = f.get("imm", 0)
        imm = imm - (1 << 16) if imm >= 1 << 15 else imm
        for i in range(f["iter_out"]):
            for j in range(f["iter_in"]):
                for u in range(f["uop_bgn"], f["uop_end"]):
                    uf = fields(self.uop[u], UOP)
                    a = uf["dst_idx"] + i * f["dst_factor_out"] + j * f["dst_factor_in"]
                    s = uf["src_idx"] + i * f["src_factor_out"] + j * f["src_factor_in"]
                    if f["reset"]:
                        self.acc[a] = 0
                    elif gemm:
                        w = uf["wgt_idx"] + i * f["wgt_factor_out"] + j * f["wgt_factor_in"]
                        x, wt = self.inp[s], self.wgt[w]
                        for bb in range(x.shape[0]):
                            for o in range(wt.shape[0]):
                                total = sum(int(x[bb, k]) * int(wt[o, k]) for k in range(x.shape[1]))
                                self.acc[a][bb, o] = wrap32(int(self.acc[a][bb, o]) + total)
                    elif f["alu_opcode"] == 5:   # REQ (docs/isa-extensions.md), imm = shift | zp << 6
                        x, m = self.acc[a].copy(), self.acc[s].copy()
                        shift, zp = f["imm"] & 63, low8(f["imm"] >> 6)
                        for idx in np.ndindex(x.shape):
                            self.acc[a][idx] = req(int(x[idx]), int(m[idx]), shift, zp)
                    else:
                        x, y = self.acc[a].copy(), (None if f["use_imm"] else self.acc[s].copy())
                        for idx in np.ndindex(x.shape):
                            self.acc[a][idx] = alu(f["alu_opcode"], int(x[idx]), imm if y is None else int(y[idx]))
                    self.out[a] = np.array([low8(int(v)) for v in self.acc[a].ravel()],
                                           dtype=object).reshape(self.acc[a].shape)


def alu(op: int, x: int, y: int) -> int:
    if op == 0:
        return min(x, y)
    if op == 1:
        return max(x, y)
    if op == 2:
        return wrap32(x + y)
    if op == 3:
        n = min(abs(y), 31)
        return x >> n if y >= 0 else wrap32(x << n)
    return wrap32(x * y)


def req(x: int, m: int, shift: int, zp: int) -> int:
    """REQ's lane, as the contract writes it: floor((x*m + 2^(n-1)) / 2^n) (n >= 1; x*m for n = 0)
    plus zp, clamped to int8."""
    p = x * m
    v = p if shift == 0 else (p + 2 ** (shift - 1)) // 2 ** shift
    return min(max(v + zp, -128), 127)


def run_reference(cfg, image, insn_addr, insn_count) -> np.ndarray:
    return Reference(cfg, np.asarray(image, dtype=np.uint8)).run(insn_addr, insn_count)
