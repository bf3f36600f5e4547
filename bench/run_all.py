"""Run every bench/bench_*.py in turn (`make bench`); each prints its own table."""
import subprocess
import sys
from pathlib import Path

here = Path(__file__).resolve().parent
failed = []
for script in sorted(here.glob("bench_*.py")):
    print(f"== {script.name}", flush=True)
    if subprocess.run([sys.executable, str(script)], cwd=here.parent).returncode:
        failed.append(script.name)
if failed:
    sys.exit(f"failed: {', '.join(failed)}")
