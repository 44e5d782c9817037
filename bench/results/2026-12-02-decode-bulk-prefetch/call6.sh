#!/usr/bin/env bash
# Call 6: the shipped form of the early w2 step (.devbin-g: the wait inside the step loop; built at
# the commit after 740c0d6, which changes a comment's wrap only) against 955512a (.devbin-d2): the
# decode GPU tests and the edge-M test on .devbin-g, then the two-build A/B at the decode points.
set -uo pipefail
cd "$(dirname "$0")/../../.."
OUT=${OUT:?}
export MOETUNE_CACHE_DIR=/tmp/mt-cache-g
timeout 150 .devbin-g/cuda_kernel_tests --gtest_filter='*Decode*' > $OUT/gpu-tests.log 2>&1
echo "gpu tests exit $? $(grep -E '^\[  (PASSED|FAILED) ' $OUT/gpu-tests.log | tr '\n' ' ')"
unset MOETUNE_CACHE_DIR
BIN_A=.devbin-d2 BIN_B=.devbin-g ROUNDS=3 SHAPES=S1,S2,S3 M=1,4 LIMIT_S=120 \
  EXTRA="--shape H1=128,4096,1536,8,silu --shape H2=64,2048,1408,6,silu --shape H3=128,2880,2880,4,silu --shape H5=40,1536,704,5,gelu_tanh" \
  OUT=$OUT/ab bash bench/run_h200_bin_ab.sh 2>&1 | tail -30
export MOETUNE_CACHE_DIR=/tmp/mt-cache-g
timeout 150 .devbin-g/cuda_kernel_tests --gtest_filter='*EveryEdgeM*' > $OUT/gpu-tests-edge.log 2>&1
echo "edge-M test exit $? $(grep -E '^\[  (PASSED|FAILED) ' $OUT/gpu-tests-edge.log | tr '\n' ' ')"
