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
if [ "$cuda" = ON ] && ! command -v nvcc >/dev/null; then
  extra+=(-DCMAKE_CUDA_COMPILER=/usr/local/cuda/bin/nvcc)
fi
cmake -S . -B "$build_dir" -G Ninja -DCMAKE_BUILD_TYPE=Release -DMOETUNE_ENABLE_CUDA="$cuda" \
  "${extra[@]}" >/dev/null
targets=()
for t in "$@"; do targets+=(--target "$t"); done
cmake --build "$build_dir" -j "$jobs" "${targets[@]}"
