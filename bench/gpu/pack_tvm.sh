#!/usr/bin/env bash
# Pack apache-tvm + apache-tvm-ffi for a GPU machine that has no package index (the `device`
# machines of this workplace: Python 3.12, PyTorch, onnxruntime and the `gpu` extra's CUDA
# wheels installed, TVM not). The TVM wheel is 100 MB; its one big library, libtvm_compiler.so
# (259 MB, LLVM inside), is compressed with xz's x86 branch filter to 58 MB so that it and the
# working tree fit the 64 MiB the machine takes. Output: .gpu/tvm-rest.tar.xz, .gpu/libtvm_compiler.so.xz.
#   bash bench/gpu/pack_tvm.sh [PYTHON_VERSION=3.12]
set -euo pipefail
cd "$(dirname "$0")/../.."
PYV="${1:-3.12}"
OUT=.gpu; WORK=$(mktemp -d)
mkdir -p "$OUT"
grep -qx '/.gpu/' .git/info/exclude 2>/dev/null || echo '/.gpu/' >> .git/info/exclude
python3 -m pip download --quiet --no-deps --only-binary=:all: --python-version "$PYV" --implementation cp \
  --platform manylinux_2_28_x86_64 --platform manylinux_2_27_x86_64 --platform manylinux_2_24_x86_64 \
  --platform manylinux_2_17_x86_64 -d "$WORK/whl" apache-tvm==0.27.0.post1 apache-tvm-ffi==0.1.14.post1
mkdir -p "$WORK/site"
for w in "$WORK"/whl/*.whl; do (cd "$WORK/site" && unzip -q -o "$w"); done
# Not needed to compile or run Relax models on CUDA: CUTLASS headers, C++ sources, the web runtime.
rm -rf "$WORK/site/tvm/3rdparty" "$WORK/site/tvm/src" "$WORK/site/tvm/web"
mv "$WORK/site/tvm/lib/libtvm_compiler.so" "$WORK/libtvm_compiler.so"
tar -C "$WORK/site" -cf - . | xz -9 -T2 > "$OUT/tvm-rest.tar.xz"
xz -T1 -c --x86 --lzma2=preset=9e,dict=192MiB "$WORK/libtvm_compiler.so" > "$OUT/libtvm_compiler.so.xz"
rm -rf "$WORK"
ls -la "$OUT"
