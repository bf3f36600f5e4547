"""Random words and random valid programs: the simulator answers with a result or a VTAError."""
import numpy as np
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from programs import image_with
from vta_sim import Config, Simulator, VTAError, isa
from vta_sim.config import MEM_ACC, MEM_INP, MEM_UOP, MEM_WGT

CFG = Config.default()
SETTINGS = settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])


def _run(image, addr, count):
    try:
        res = Simulator(CFG).run(image, insn_addr=addr, insn_count=count)
    except VTAError as exc:
        assert str(exc)
        return None
    assert res.cycles > 0 and res.dram.dtype == np.uint8 and res.dram.size == image.size
    return res


@SETTINGS
@given(words=st.lists(st.integers(0, (1 << 128) - 1), min_size=1, max_size=12),
       finish_last=st.booleans())
def test_random_words(words, finish_last):
    if finish_last:
        words = words + [isa.OP_FINISH]
    code = b"".join(w.to_bytes(16, "little") for w in words)
    image = np.zeros(8192, dtype=np.uint8)
    image[4096:4096 + len(code)] = np.frombuffer(code, np.uint8)
    _run(image, 4096, len(words))


def _valid_insn(draw):
    kind = draw(st.sampled_from(["inp", "wgt", "acc", "uop", "gemm", "alu", "store"]))
    flags = {f: draw(st.integers(0, 1)) for f in isa.FLAGS}
    small = st.integers(0, 6)
    if kind in ("inp", "wgt", "acc", "uop"):
        mem = {"inp": MEM_INP, "wgt": MEM_WGT, "acc": MEM_ACC, "uop": MEM_UOP}[kind]
        pads = (0, 0, 0, 0) if kind == "uop" else tuple(draw(st.integers(0, 2)) for _ in range(4))
        module = "compute" if kind in ("acc", "uop") else "load"
        insn = isa.MemInsn(opcode=isa.OP_LOAD, memory_type=mem, sram_base=draw(small), dram_base=draw(small),
                           y_size=1 if kind == "uop" else draw(st.integers(0, 3)), x_size=draw(st.integers(0, 4)),
                           x_stride=draw(st.integers(0, 5)), y_pad_0=pads[0], y_pad_1=pads[1],
                           x_pad_0=pads[2], x_pad_1=pads[3])
    elif kind == "store":
        module = "store"
        insn = isa.MemInsn(opcode=isa.OP_STORE, memory_type=4, sram_base=draw(small), dram_base=draw(small),
                           y_size=draw(st.integers(0, 3)), x_size=draw(st.integers(0, 4)),
                           x_stride=draw(st.integers(0, 5)))
    else:
        module = "compute"
        common = dict(reset=draw(st.integers(0, 1)), uop_bgn=draw(st.integers(0, 3)), uop_end=draw(st.integers(3, 6)),
                      iter_out=draw(st.integers(1, 4)), iter_in=draw(st.integers(1, 4)),
                      dst_factor_out=draw(small), dst_factor_in=draw(small),
                      src_factor_out=draw(small), src_factor_in=draw(small))
        insn = (isa.GemmInsn(wgt_factor_out=draw(small), wgt_factor_in=draw(small), **common) if kind == "gemm" else
                isa.AluInsn(alu_opcode=draw(st.integers(0, 4)), use_imm=draw(st.integers(0, 1)),
                            imm=draw(st.integers(-40, 40)), **common))
    legal = {f: v for f, v in flags.items() if isa.DEP_QUEUES[module][f]}
    return insn.replace(**legal)


@SETTINGS
@given(data=st.data())
def test_random_valid_programs(data):
    insns = [_valid_insn(data.draw) for _ in range(data.draw(st.integers(1, 14)))]
    insns.append(isa.FinishInsn(**{f: data.draw(st.integers(0, 1)) for f in isa.FLAGS}))
    rng = np.random.default_rng(data.draw(st.integers(0, 2**32 - 1)))
    payload = rng.integers(0, 256, 4096, dtype=np.uint8).tobytes()
    image, addr, count = image_with(CFG, insns, payload)
    _run(image, addr, count)
