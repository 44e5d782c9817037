#!/usr/bin/env bash
# Device call 4 (twentieth session): every GPU test of b9efb65's binaries (cuda_kernel_tests:
# the kernels with the tma_ws GEMM1 gather's zeros; runtime_cuda_tests: MoeRunner on the shipped
# tables), one log each under $OUT.
set -u
cd "$(dirname "$0")/../../.." || exit 2
export MOETUNE_CACHE_DIR=/tmp/moetune-cache
start=$(date +%s)
timeout -k 5 470 .devbin/cuda_kernel_tests > "$OUT/cuda_kernel_tests.log" 2>&1
echo "cuda_kernel_tests rc $? after $(( $(date +%s) - start )) s"
grep -hE "^\[  (PASSED|FAILED) |^\[       OK|Failure" "$OUT/cuda_kernel_tests.log" | head -30
left=$(( 580 - ($(date +%s) - start) ))
timeout -k 5 $left .devbin/runtime_cuda_tests > "$OUT/runtime_cuda_tests.log" 2>&1
echo "runtime_cuda_tests rc $? after $(( $(date +%s) - start )) s"
grep -hE "^\[  (PASSED|FAILED) |^\[       OK|Failure" "$OUT/runtime_cuda_tests.log" | head -10
