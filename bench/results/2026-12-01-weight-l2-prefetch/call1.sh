#!/usr/bin/env bash
# Device call 1 (sixteenth session): lever weight_l2_prefetch at three depths against off, then its
# GPU tests with what time is left. Carry .devbin-s (cuda_kernel_tests, moetune_sm90_bench).
set -u
start=$(date +%s)
export MOETUNE_CACHE_DIR=/tmp/mc
L=MOETUNE_LEVER_WEIGHT_L2_PREFETCH
BIN=.devbin-s ARMS="off=$L=off on4=$L=on,DEV_L2_AHEAD=4 on8=$L=on,DEV_L2_AHEAD=8 on16=$L=on,DEV_L2_AHEAD=16" \
  M=256,1024,2048,4096,8192 ROUNDS=2 OUT=$OUT/ab bash bench/run_h200_env_ab.sh > $OUT/ab.log 2>&1
echo "ab exit $? after $(( $(date +%s) - start )) s"
left=$(( 570 - ($(date +%s) - start) ))
timeout -k 5 $left .devbin-s/cuda_kernel_tests --gtest_filter='*TmaWsLevers*:*SwapAb*' > $OUT/gpu_tests.log 2>&1
echo "tests exit $? after $(( $(date +%s) - start )) s"
grep -E '^\[  (PASSED|FAILED) |^\[       OK|Failure' $OUT/gpu_tests.log | head
cat $OUT/ab/summary.txt
