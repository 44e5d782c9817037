#!/usr/bin/env bash
# Device call 8 (twenty-fifth session): every GPU test at 914dd85 (the tables regenerated from call
# 7, S1 M=2048's GEMM1 at group_m 1; src/ equal to 66ded27's): cuda_kernel_tests (20) and
# runtime_cuda_tests (MoeRunner's 4). Binaries in .devbin-r (914dd85).
set -u
cd "$(dirname "$0")/../../.." || exit 2
export MOETUNE_CACHE_DIR=/tmp/moetune-cache
start=$(date +%s)
mkdir -p "$OUT"
timeout -k 5 420 .devbin-r/cuda_kernel_tests > "$OUT/cuda_kernel_tests.log" 2>&1
echo "cuda_kernel_tests rc $? after $(( $(date +%s) - start )) s"
timeout -k 5 120 .devbin-r/runtime_cuda_tests > "$OUT/runtime_cuda_tests.log" 2>&1
echo "runtime_cuda_tests rc $? after $(( $(date +%s) - start )) s"
grep -hE "^\[  (FAILED|PASSED) |^\[       OK|Failure" "$OUT"/*.log | cut -c1-150
