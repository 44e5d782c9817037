#!/usr/bin/env bash
# Device call 7 (twenty-first session): GPU tests on the regenerated tables, b9efb65's test
# binaries (kernels unchanged since): runtime_cuda_tests (MoeRunner on the shipped tables), then
# the compile-only test the twentieth session's budget cut (EveryDefaultAndSearchSpaceConfigCompiles
# ForS2) and the benchmark-shape test.
set -u
cd "$(dirname "$0")/../../.." || exit 2
export MOETUNE_CACHE_DIR=/tmp/moetune-cache
start=$(date +%s)
timeout -k 5 200 .devbin/runtime_cuda_tests > "$OUT/runtime_cuda_tests.log" 2>&1
echo "runtime_cuda_tests rc $? after $(( $(date +%s) - start )) s"
grep -hE "^\[  (PASSED|FAILED) |^\[       OK|Failure" "$OUT/runtime_cuda_tests.log" | head -10
left=$(( 540 - ($(date +%s) - start) ))
timeout -k 5 $left .devbin/cuda_kernel_tests \
  --gtest_filter='*EveryDefaultAndSearchSpaceConfigCompilesForS2*:*BenchmarkShapesMatchTheGpuReference*' \
  > "$OUT/cuda_kernel_tests.log" 2>&1
echo "cuda_kernel_tests rc $? after $(( $(date +%s) - start )) s"
grep -hE "^\[  (PASSED|FAILED) |^\[       OK|Failure" "$OUT/cuda_kernel_tests.log" | head -10
