#!/usr/bin/env bash
# One device call: prewarm both arms' cubin caches, the swap-AB GPU test, then a recipe A/B of the
# shipped recipe (A) against variant-g1.json (B: swap-AB on both GEMMs at the mid-M points).
#   OUT=$OUT bash bench/results/2026-12-01-swap-ab/run.sh
set -u
cd "$(dirname "$0")/../../.." || exit 2
B=bench/results/2026-12-01-swap-ab
OUT=${OUT:-$B/out}
BIN=${BIN:-.devbin}
mkdir -p "$OUT"
nvidia-smi --query-gpu=name,clocks.sm,clocks.max.sm,power.draw,temperature.gpu --format=csv > "$OUT/gpu.csv" 2>&1
(MOETUNE_CACHE_DIR=/tmp/mc-A "$BIN/moetune" prewarm --tables tables/NVIDIA_H200 --quiet > "$OUT/prewarm-A.log" 2>&1; echo "prewarm A rc $?") &
(MOETUNE_CACHE_DIR=/tmp/mc-B "$BIN/moetune" prewarm --tables "$B/tables-B" --quiet > "$OUT/prewarm-B.log" 2>&1; echo "prewarm B rc $?") &
wait
MOETUNE_CACHE_DIR=/tmp/mc-T timeout "${TEST_S:-240}" "$BIN/cuda_kernel_tests" \
  --gtest_filter="${TEST_FILTER:-*SwapAb*}" > "$OUT/gpu_tests.log" 2>&1
echo "gpu tests rc $?"
grep -E "^\[ +(OK|FAILED|RUN) +\]|Failure|error" "$OUT/gpu_tests.log" | head -40
OUT=$OUT RUN_S=${RUN_S:-60} MOETUNE_CACHE_DIR=/tmp/mc bash bench/run_h200_recipe_ab.sh \
  recipes/h200.json "$B/variant-g1.json" --shapes S1,S2,S3 --m "${AB_M:-64,128,256,512,1024,2048,4096,8192}"
