#!/usr/bin/env bash
# The GPU column of `vta-sim compare`, on a machine with an NVIDIA GPU, in one run:
#   1. TVM: imported as installed, else unpacked from .gpu/ (bench/gpu/pack_tvm.sh made it);
#      the CUDA runtime and NVRTC from the `gpu` extra's wheels (nvidia-cuda-runtime,
#      nvidia-cuda-nvrtc, cuda-bindings), found in the Python's site-packages;
#   2. the test suite's GPU tests (tests/baselines/test_gpu_schedules.py, tests/baselines/test_model_compare.py);
#   3. `vta-sim compare` for the operator workloads (GPU and reference rows) and for the models
#      digits, resnet18 and encoder (GPU rows; onnxruntime fp32 on that host's CPU is the
#      first row), each table and its JSON written under $OUT (default build/gpu).
# Usage: OUT=dir bash bench/gpu/run_gpu.sh [PYTHON]
set -uo pipefail
cd "$(dirname "$0")/../.."
PY="${1:-python3}"
OUT="${OUT:-build/gpu}"
mkdir -p "$OUT"
export PYTHONUNBUFFERED=1 VTA_CACHE="${VTA_CACHE:-/tmp/vta_cache}"
# models trained here and carried along (digits trains in numpy on first use otherwise)
[ -d .gpu/cache ] && mkdir -p "$VTA_CACHE" && cp -r --update=none .gpu/cache/. "$VTA_CACHE/"
STEPS="${STEPS:-tests operators models}"
MODELS="${MODELS:-digits:8:90 encoder:4:90 resnet18:2:170}"
SITE=/tmp/vta_site
if ! "$PY" -c "import tvm" 2>/dev/null; then
  echo "== unpacking TVM from .gpu/"
  mkdir -p "$SITE"
  tar -C "$SITE" -xJf .gpu/tvm-rest.tar.xz || exit 1
  xz -dc -T0 .gpu/libtvm_compiler.so.xz > "$SITE/tvm/lib/libtvm_compiler.so" || exit 1
fi
# The project without pip (its Python may be newer than pyproject's bound): the sources on the
# path, and a dist-info carrying pyproject's entry points so `vta-sim`'s plugins are found.
mkdir -p "$SITE/vta_toolkit-0.1.0.dist-info"
"$PY" - "$SITE/vta_toolkit-0.1.0.dist-info" <<'EOF'
import sys, tomllib, pathlib
d = pathlib.Path(sys.argv[1]); p = tomllib.loads(pathlib.Path("pyproject.toml").read_text())["project"]
(d / "METADATA").write_text(f"Metadata-Version: 2.1\nName: {p['name']}\nVersion: {p['version']}\n")
groups = {"console_scripts": p["scripts"], **p["entry-points"]}
(d / "entry_points.txt").write_text("".join(f"[{g}]\n" + "".join(f"{k} = {v}\n" for k, v in eps.items()) + "\n"
                                            for g, eps in groups.items()))
EOF
export PYTHONPATH="$SITE:$PWD${PYTHONPATH:+:$PYTHONPATH}"
NV=$("$PY" -c "import importlib.util as u; s=u.find_spec('nvidia'); print(list(s.submodule_search_locations)[0] if s else '')")
LIBS=$(find "$NV" \( -name 'libcudart.so.13*' -o -name 'libnvrtc.so.13*' \) -printf '%h\n' 2>/dev/null | sort -u | paste -sd:)
export LD_LIBRARY_PATH="${LIBS}${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"
VTA=("$PY" -m vta_sim)

{ echo "date: $(date -u)"; nvidia-smi --query-gpu=name,driver_version,memory.total --format=csv,noheader
  lscpu | grep -E 'Model name|^CPU\(s\)'; "$PY" --version
  "$PY" -c "import tvm, onnxruntime, numpy; print('tvm', tvm.__version__, '| onnxruntime', onnxruntime.__version__, '| numpy', numpy.__version__)"
  "$PY" -c "import torch; print('torch', torch.__version__)" 2>&1 | tail -1
  "$PY" -c "from baselines.gpu_schedules import gpu_status; print('gpu_status:', gpu_status())"
} 2>&1 | tee "$OUT/machine.txt"

if [[ $STEPS == *tests* ]]; then echo "== GPU tests"
timeout 120 "$PY" -m pytest -q -p no:cacheprovider tests/baselines/test_gpu_schedules.py tests/baselines/test_model_compare.py \
  -k "gpu or cuda" 2>&1 | tail -25 | tee "$OUT/tests.txt"; fi

if [[ $STEPS == *operators* ]]; then echo "== operators"
for args in "--workload gemm" "--workload conv2d --layer resnet18.C5"; do
  timeout 60 "${VTA[@]}" compare $args --targets gpu,reference --repeats 5 \
    2>&1 | grep -v '^\[compare\]' | tee -a "$OUT/operators.md"
done; fi

echo "== models"
# model:trials per tuning task:seconds allowed
[[ $STEPS == *models* ]] && for spec in $MODELS; do
  set -- ${spec//:/ }
  timeout "$3" "${VTA[@]}" compare --model "$1" --targets gpu --trials "$2" --repeats 5 \
    --json "$OUT/model_$1.json" 2>&1 | tee -a "$OUT/models.md"
done
ls -la "$OUT"
