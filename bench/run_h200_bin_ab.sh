#!/usr/bin/env bash
# Two builds of the kernels measured against each other on the H200 in one device call, for a code
# change that keeps every config and its bits (no lever to switch): GPU tests of build B first
# (TEST_FILTER; empty: none), then ROUNDS rounds of `moetune_sm90_bench --no-sweep` on the shipped
# recipe at POINTS, arms alternating A B, B A, A B, ... (fresh processes, fresh cubin caches per
# build), then one summary: per point the median over rounds of each arm's layer time and GEMM
# stage times, B / A, and whether every run of both arms gave the same output digest (a bitwise
# change must; DIGESTS=any allows otherwise; bench/ab_summary.py). Everything else lands in
# $OUT/runs.tgz.
# Usage: BIN_A=.devbin-old BIN_B=.devbin SHAPES=S1,S2,S3 M=1,4 OUT=$OUT bench/run_h200_bin_ab.sh
# (carry both folders; scripts/build_device.sh builds one, copy it aside before rebuilding).
# Knobs: BIN_A, BIN_B, SHAPES, M, ROUNDS (3), TEST_FILTER, DIGESTS (equal|any), RECIPE
# (recipes/h200.json; none: no recipe, so every point runs the build's default rule), EXTRA (more
# bench options, e.g. EXTRA="--shape H1=128,4096,1536,8,silu"), FIRST (A|B: the arm that opens
# round 1, default A; a second call with FIRST=B balances one with A), LIMIT_S (per bench run,
# 120). Exit 1 when a run or the tests failed, or
# DIGESTS=equal and the digests differ.
set -uo pipefail
cd "$(dirname "$0")/.."
BIN_A=${BIN_A:?name build A, e.g. BIN_A=.devbin-old}
BIN_B=${BIN_B:-.devbin}
SHAPES=${SHAPES:-S1,S2,S3}
M=${M:-1,4}
ROUNDS=${ROUNDS:-3}
TEST_FILTER=${TEST_FILTER-}
DIGESTS=${DIGESTS:-equal}
RECIPE=${RECIPE:-recipes/h200.json}
LIMIT_S=${LIMIT_S:-120}
EXTRA=${EXTRA-}
FIRST=${FIRST:-A}
flip=0
[ "$FIRST" = B ] && flip=1
recipe_args=(--recipe "$RECIPE")
[ "$RECIPE" = none ] && recipe_args=()
OUT=${OUT:-build/results/$(date +%F)-bin-ab}
work=$(mktemp -d)
mkdir -p "$OUT" "$work/runs"
status=0
nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.max.sm,power.draw,power.limit \
  --format=csv > "$work/runs/gpu.csv" 2>&1
if [ -n "$TEST_FILTER" ]; then
  MOETUNE_CACHE_DIR=$work/cache-B timeout -k 10 300 "$BIN_B/cuda_kernel_tests" \
    --gtest_filter="$TEST_FILTER" > "$work/runs/gpu_tests.log" 2>&1 || status=1
  echo "gpu tests ($TEST_FILTER): $(grep -E '^\[  (PASSED|FAILED) ' "$work/runs/gpu_tests.log" |
    tr '\n' ' ')"
fi
for ((r = 1; r <= ROUNDS; ++r)); do
  order="A B"
  (((r + flip) % 2 == 0)) && order="B A"
  for arm in $order; do
    bin=$BIN_A
    [ "$arm" = B ] && bin=$BIN_B
    MOETUNE_CACHE_DIR=$work/cache-$arm timeout -k 10 "$LIMIT_S" "$bin/moetune_sm90_bench" \
      "${recipe_args[@]}" --shapes "$SHAPES" $EXTRA --m "$M" --no-sweep --out "$work/runs/$arm-$r" \
      > "$work/runs/$arm-$r.log" 2>&1
    rc=$?
    ((rc != 0)) && status=1
    echo "round $r arm $arm exit $rc"
  done
done
tar czf "$OUT/runs.tgz" -C "$work" runs
python3 bench/ab_summary.py "$work/runs" "$ROUNDS" "$DIGESTS" A B > "$OUT/summary.txt" || status=1
echo "exit status $status" >> "$OUT/summary.txt"
cat "$OUT/summary.txt"
rm -rf "$work"
exit $status
