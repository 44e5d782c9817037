#!/usr/bin/env bash
# One device call: prewarm the arms' cubin caches, GPU tests (TEST_FILTER), then two recipe A/Bs
# of the shipped recipe (A) against variant-both.json (both GEMMs swap-AB at the mid-M points) and
# variant-gemm1.json (GEMM1 swap-AB under the pinned GEMM2), each A B A B.
#   OUT=$OUT bash bench/results/2026-12-01-swap-ab/run.sh
# call1/: 772a7c6 (GEMM1 reading x's sorted copy) against variant-g1.json; call2/: cf769a2 (GEMM1
# gathering x's rows at every block_m) with the first version of this script (variant-g1.json).
set -u
cd "$(dirname "$0")/../../.." || exit 2
B=bench/results/2026-12-01-swap-ab
OUT=${OUT:-$B/out}
BIN=${BIN:-.devbin}
mkdir -p "$OUT"
nvidia-smi --query-gpu=name,clocks.sm,clocks.max.sm,power.draw,temperature.gpu --format=csv > "$OUT/gpu.csv" 2>&1
pw() { MOETUNE_CACHE_DIR=$1 "$BIN/moetune" prewarm --tables "$2" --quiet > "$OUT/prewarm-$3.log" 2>&1; echo "prewarm $3 rc $?"; }
pw /tmp/mc1-A tables/NVIDIA_H200 A &
pw /tmp/mc1-B "$B/tables-both" both &
pw /tmp/mc2-B "$B/tables-gemm1" gemm1 &
wait
cp -r /tmp/mc1-A /tmp/mc2-A
MOETUNE_CACHE_DIR=/tmp/mc-T timeout "${TEST_S:-300}" "$BIN/cuda_kernel_tests" \
  --gtest_filter="${TEST_FILTER:-*SwapAb*:*MatchesFp64ReferenceOnSmallAndOddShapes*}" > "$OUT/gpu_tests.log" 2>&1
echo "gpu tests rc $?"
grep -E "^\[ +(OK|FAILED) +\]|Failure" "$OUT/gpu_tests.log" | head -40
M=${AB_M:-64,128,256,512,1024,2048,4096,8192}
for v in ${VARIANTS:-both gemm1}; do
  n=1; [ $v = gemm1 ] && n=2
  mkdir -p "$OUT/$v"
  echo "== A: shipped, B: variant-$v"
  OUT=$OUT/$v RUN_S=${RUN_S:-60} MOETUNE_CACHE_DIR=/tmp/mc$n bash bench/run_h200_recipe_ab.sh \
    recipes/h200.json "$B/variant-$v.json" --shapes S1,S2,S3 --m "$M"
done
