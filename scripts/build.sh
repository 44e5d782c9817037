#!/usr/bin/env bash
# Configures and builds moetune (Release, Ninja) into ${MOETUNE_BUILD_DIR:-build}. The CUDA backend
# is on when nvcc is found (PATH or /usr/local/cuda); MOETUNE_CUDA=OFF turns it off.
# Usage: scripts/build.sh [ninja targets...]   (default: everything)
set -euo pipefail
cd "$(dirname "$0")/.."

build_dir=${MOETUNE_BUILD_DIR:-build}
jobs=${MOETUNE_JOBS:-$(nproc)}
cuda=${MOETUNE_CUDA:-}
if [ -z "$cuda" ]; then
  if command -v nvcc >/dev/null || [ -x /usr/local/cuda/bin/nvcc ]; then cuda=ON; else cuda=OFF; fi
fi
extra=()
# The Python package's torch ops library is built where torch is importable (MOETUNE_PYTHON=OFF
# turns it off); tests/python then runs against build/python.
python_ops=${MOETUNE_PYTHON:-}
if [ -z "$python_ops" ]; then
  if python3 -c "import torch" >/dev/null 2>&1; then python_ops=ON; else python_ops=OFF; fi
fi
python=$(python3 -c 'import sys; print(sys.executable)')  # the interpreter, not a shim
extra+=(-DMOETUNE_BUILD_PYTHON="$python_ops" -DPython_EXECUTABLE="$python")
if [ "$cuda" = ON ] && ! command -v nvcc >/dev/null; then
  extra+=(-DCMAKE_CUDA_COMPILER=/usr/local/cuda/bin/nvcc)
fi
cmake -S . -B "$build_dir" -G Ninja -DCMAKE_BUILD_TYPE=Release -DMOETUNE_ENABLE_CUDA="$cuda" \
  "${extra[@]}" >/dev/null
targets=()
for t in "$@"; do targets+=(--target "$t"); done
cmake --build "$build_dir" -j "$jobs" "${targets[@]}"
