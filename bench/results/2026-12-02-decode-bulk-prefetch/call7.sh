#!/usr/bin/env bash
# Call 7: d0eaa33 (.devbin-h: 38041b5's early w2 step, taken where a step holds at most two vectors
# per lane) against 955512a (.devbin-d2) at the decode points, then the decode GPU tests on it.
set -uo pipefail
cd "$(dirname "$0")/../../.."
OUT=${OUT:?}
BIN_A=.devbin-d2 BIN_B=.devbin-h ROUNDS=3 SHAPES=S1,S2,S3 M=1,4 LIMIT_S=100 \
  EXTRA="--shape H1=128,4096,1536,8,silu --shape H2=64,2048,1408,6,silu --shape H3=128,2880,2880,4,silu --shape H5=40,1536,704,5,gelu_tanh" \
  OUT=$OUT/ab bash bench/run_h200_bin_ab.sh 2>&1 | tail -30
export MOETUNE_CACHE_DIR=/tmp/mt-cache-h
timeout 90 .devbin-h/cuda_kernel_tests --gtest_filter='*Decode*' > $OUT/gpu-tests.log 2>&1
echo "gpu tests exit $? $(grep -E '^\[  (PASSED|FAILED) ' $OUT/gpu-tests.log | tr '\n' ' ')"
