"""A pytest plugin that keeps every program the suite hands the simulator, for
bench/replay_engines.py (the compiled engine against the reference on all of them):

    VTA_RECORD_PROGRAMS=build/programs PYTHONPATH=tests pytest -p record_programs tests/

Each distinct (configuration, image, insn_addr, insn_count) is written once, as a compressed
.npz named by its hash."""
import hashlib
import os
from pathlib import Path

import numpy as np

from vta_sim import simulator


def pytest_configure(config):
    where = os.environ.get("VTA_RECORD_PROGRAMS")
    if not where:
        raise RuntimeError("record_programs: set VTA_RECORD_PROGRAMS to the folder the programs go to")
    folder = Path(where)
    folder.mkdir(parents=True, exist_ok=True)
    run = simulator.Simulator.run

    def recording_run(self, dram, insn_addr, insn_count, *args, **kwargs):
        if isinstance(dram, np.ndarray) and dram.dtype == np.uint8 and dram.ndim == 1 \
                and isinstance(insn_addr, int) and isinstance(insn_count, int):
            text = self.cfg.to_text()
            digest = hashlib.sha256(text.encode() + dram.tobytes() + repr((insn_addr, insn_count)).encode())
            path = folder / f"{digest.hexdigest()[:20]}.npz"
            if not path.exists():
                np.savez_compressed(path, image=dram, insn_addr=insn_addr, insn_count=insn_count, config=text)
        return run(self, dram, insn_addr, insn_count, *args, **kwargs)

    simulator.Simulator.run = recording_run
