#!/usr/bin/env bash
# Builds the CUDA binaries for the device machine here (nvcc + NVRTC, sm_90a, -DNDEBUG) and copies
# them into .devbin/ (git-ignored), which the device tool carries.
set -euo pipefail
cd "$(dirname "$0")/.."
cmake -S . -B build-cuda -G Ninja -DCMAKE_BUILD_TYPE=Release >/dev/null
ninja -C build-cuda -j2 cuda_kernel_tests moetune_sm90_bench moetune runtime_cuda_tests
mkdir -p .devbin
cp build-cuda/tests/cuda_kernel_tests build-cuda/moetune_sm90_bench .devbin/
# moetune (bench, ab, run, tune on the cuda backend) and the MoeRunner GPU tests:
# `bench/device.sh` (protocol, runtime, tuner, ...).
cp build-cuda/moetune build-cuda/tests/runtime_cuda_tests .devbin/
strip .devbin/* 2>/dev/null || true
du -sh .devbin
