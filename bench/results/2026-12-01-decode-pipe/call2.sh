#!/usr/bin/env bash
# Device call 2 (eighteenth session): the GPU tests that run the decode kernels, on build B
# (62ae9ef: GEMM1 and GEMM2 pipelined): odd shapes against fp64 at every edge M, the decode
# levers' bits against their off paths, the benchmark shapes, all tokens on one expert / top-1.
# Carry .devbin-x (b2/cuda_kernel_tests).
set -u
start=$(date +%s)
MOETUNE_CACHE_DIR=/tmp/mc timeout -k 5 300 .devbin-x/b2/cuda_kernel_tests \
  --gtest_filter='*MatchesFp64ReferenceOnSmallAndOdd*:*Decode*:*BenchmarkShapes*:*HandlesAllTokens*' \
  > $OUT/gpu-tests.log 2>&1
echo "gpu tests exit $? after $(( $(date +%s) - start )) s"
grep -E "^\[       OK|^\[  FAILED|^\[  PASSED" $OUT/gpu-tests.log
