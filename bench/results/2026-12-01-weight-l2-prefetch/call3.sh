#!/usr/bin/env bash
# Device call 3 (sixteenth session): call 2 again after the setmaxnreg fix (7895e63), with a
# bounded sanity run first. Carry .devbin-s (cuda_kernel_tests, moetune_sm90_bench).
set -u
start=$(date +%s)
export MOETUNE_CACHE_DIR=/tmp/mc
L=MOETUNE_LEVER_GEMM1_ROW_TMA
for v in off on; do
  env $L=$v timeout -k 5 90 .devbin-s/moetune_sm90_bench --recipe recipes/h200.json --shapes S1 \
    --m 4096 --no-sweep --out $OUT/sanity-$v > $OUT/sanity-$v.log 2>&1
  rc=$?
  echo "sanity $v exit $rc after $(( $(date +%s) - start )) s"; grep -E '^S1' $OUT/sanity-$v.log | tail -2
  [ $rc -ne 0 ] && exit 1
done
BIN=.devbin-s ARMS="off=$L=off on=$L=on" SHAPES=S1,S3 M=512,4096 ROUNDS=2 LIMIT_S=60 \
  OUT=$OUT/shipped bash bench/run_h200_env_ab.sh > $OUT/shipped.log 2>&1
echo "shipped ab exit $? after $(( $(date +%s) - start )) s"
BIN=.devbin-s ARMS="off=$L=off on=$L=on" SHAPES=S1,S2 M=2048,4096,8192 ROUNDS=2 LIMIT_S=60 \
  OUT=$OUT/v256 RECIPE=bench/results/2026-12-01-swap-wide-boxes/variant-256.json \
  bash bench/run_h200_env_ab.sh > $OUT/v256.log 2>&1
echo "variant-256 ab exit $? after $(( $(date +%s) - start )) s"
left=$(( 500 - ($(date +%s) - start) ))
timeout -k 5 $left .devbin-s/cuda_kernel_tests --gtest_filter='*SwapAb*' > $OUT/gpu_tests.log 2>&1
echo "tests exit $? after $(( $(date +%s) - start )) s"
grep -E '^\[  (PASSED|FAILED) |^\[       OK|Failure' $OUT/gpu_tests.log | head
grep -A6 Failure $OUT/gpu_tests.log | head -20
cat $OUT/shipped/summary.txt $OUT/v256/summary.txt
