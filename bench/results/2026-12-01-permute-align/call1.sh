#!/usr/bin/env bash
# Device call 1 (seventeenth session): the permute pass's variants (DEV_PERMUTE_MODE 1-4) and the
# one-launch align (DEV_ALIGN_FUSED=1) against the shipped path, by layer time at S1 / S2
# M = 2048..8192 (shipped recipe, 2 rounds), then with the time left the GPU tests of the moved
# grid barrier and the one-launch align. Carry .devbin-s (cuda_kernel_tests, moetune_sm90_bench).
set -u
start=$(date +%s)
export MOETUNE_CACHE_DIR=/tmp/mc
BIN=.devbin-s ARMS="base=DEV_NONE=1 p1=DEV_PERMUTE_MODE=1 p2=DEV_PERMUTE_MODE=2 p3=DEV_PERMUTE_MODE=3 p4=DEV_PERMUTE_MODE=4 af=DEV_ALIGN_FUSED=1" \
  SHAPES=S1,S2 M=2048,4096,8192 ROUNDS=2 LIMIT_S=80 OUT=$OUT/ab bash bench/run_h200_env_ab.sh > $OUT/ab.log 2>&1
echo "ab exit $? after $(( $(date +%s) - start )) s"
left=$(( 560 - ($(date +%s) - start) ))
DEV_ALIGN_FUSED=1 timeout -k 5 $left .devbin-s/cuda_kernel_tests \
  --gtest_filter='*MultiCtaAlign*:*DecodeFused*:*BenchmarkShapes*' > $OUT/gpu_tests.log 2>&1
echo "tests exit $? after $(( $(date +%s) - start )) s"
grep -E '^\[  (PASSED|FAILED) |^\[       OK|Failure' $OUT/gpu_tests.log | head
cat $OUT/ab/summary.txt
