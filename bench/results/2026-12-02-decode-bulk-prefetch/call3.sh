#!/usr/bin/env bash
# Call 3: 38041b5 (.devbin-f: decode GEMM2's first step of w2 loads before its wait on GEMM1)
# against 955512a's build (.devbin-d2, the kernels before): the GPU tests of the decode paths on
# .devbin-f, MoeRunner's tests, then a two-build A/B at the decode points (S1-S3 and four held-out
# shapes at M = 1, 4; 3 rounds, same digests required).
set -uo pipefail
cd "$(dirname "$0")/../../.."
OUT=${OUT:?}
export MOETUNE_CACHE_DIR=/tmp/mt-cache-f
nvidia-smi --query-gpu=name,clocks.sm,power.draw --format=csv
timeout 240 .devbin-f/cuda_kernel_tests --gtest_filter='*Decode*:*EveryEdgeM*:*BenchmarkShapes*' \
  > $OUT/gpu-tests.log 2>&1
echo "gpu tests exit $? $(grep -E '^\[  (PASSED|FAILED) ' $OUT/gpu-tests.log | tr '\n' ' ')"
timeout 120 .devbin-f/runtime_cuda_tests > $OUT/runtime-tests.log 2>&1
echo "runtime tests exit $? $(grep -E '^\[  (PASSED|FAILED) ' $OUT/runtime-tests.log | tr '\n' ' ')"
unset MOETUNE_CACHE_DIR
BIN_A=.devbin-d2 BIN_B=.devbin-f ROUNDS=3 SHAPES=S1,S2,S3 M=1,4 LIMIT_S=120 \
  EXTRA="--shape H1=128,4096,1536,8,silu --shape H2=64,2048,1408,6,silu --shape H3=128,2880,2880,4,silu --shape H5=40,1536,704,5,gelu_tanh" \
  OUT=$OUT/ab bash bench/run_h200_bin_ab.sh 2>&1 | tail -32
