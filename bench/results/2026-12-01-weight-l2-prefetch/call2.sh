#!/usr/bin/env bash
# Device call 2 (sixteenth session): lever gemm1_row_tma (swap-AB GEMM1 reads x's rows by TMA, no
# permute pass) on against off, on the shipped recipe (swap-AB GEMM1 at S1 M=4096, S3 M=512) and
# on variant-256 (both GEMMs swap-AB at 256 pairs, M 1024..8192); then the swap-AB GPU test.
# Carry .devbin-s (cuda_kernel_tests, moetune_sm90_bench).
set -u
start=$(date +%s)
export MOETUNE_CACHE_DIR=/tmp/mc
L=MOETUNE_LEVER_GEMM1_ROW_TMA
BIN=.devbin-s ARMS="off=$L=off on=$L=on" SHAPES=S1,S3 M=512,4096 ROUNDS=3 OUT=$OUT/shipped \
  bash bench/run_h200_env_ab.sh > $OUT/shipped.log 2>&1
echo "shipped ab exit $? after $(( $(date +%s) - start )) s"
BIN=.devbin-s ARMS="off=$L=off on=$L=on" M=1024,2048,4096,8192 ROUNDS=3 OUT=$OUT/v256 \
  RECIPE=bench/results/2026-12-01-swap-wide-boxes/variant-256.json \
  bash bench/run_h200_env_ab.sh > $OUT/v256.log 2>&1
echo "variant-256 ab exit $? after $(( $(date +%s) - start )) s"
left=$(( 570 - ($(date +%s) - start) ))
timeout -k 5 $left .devbin-s/cuda_kernel_tests --gtest_filter='*SwapAb*' > $OUT/gpu_tests.log 2>&1
echo "tests exit $? after $(( $(date +%s) - start )) s"
grep -E '^\[  (PASSED|FAILED) |^\[       OK|Failure' $OUT/gpu_tests.log | head
grep -B2 -A6 Failure $OUT/gpu_tests.log | head -30
cat $OUT/shipped/summary.txt $OUT/v256/summary.txt
