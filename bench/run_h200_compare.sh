#!/usr/bin/env bash
# One device call: the GPU tests, then the recipe's pinned rows timed twice at the given points —
# as pinned, and with every wgmma GEMM switched to schedule $SCHED (same tiles) — and optionally
# a sweep restricted to $SCHED. Every step is bounded by `timeout` (a hung kernel costs its step).
# Usage: bench/run_h200_compare.sh [M list] ; env: SCHED (tma_ws), SHAPES (S1,S2,S3), SWEEP_M.
set -uo pipefail
BIN=${BIN:-.devbin}
OUT=${OUT:-build/results}
M=${1:-1024,2048,4096,8192,16384}
SCHED=${SCHED:-tma_ws}
SHAPES=${SHAPES:-S1,S2,S3}
export MOETUNE_CACHE_DIR=${MOETUNE_CACHE_DIR:-/tmp/moetune-cache}
mkdir -p "$OUT/pinned" "$OUT/$SCHED"
timeout "${TEST_S:-240}" "$BIN/cuda_kernel_tests" > "$OUT/gpu_tests.log" 2>&1
echo "gpu tests exit $?"
grep -E "^\[  (PASSED|FAILED|SKIPPED) |tests ran|Failure" "$OUT/gpu_tests.log" | head -20
grep -E -A4 "Failure" "$OUT/gpu_tests.log" | head -40
timeout "${BENCH_S:-150}" "$BIN/moetune_sm90_bench" --out "$OUT/pinned" --recipe recipes/h200.json \
  --shapes "$SHAPES" --m "$M" > "$OUT/pinned.log" 2>&1
echo "pinned exit $?"
timeout "${BENCH_S:-150}" "$BIN/moetune_sm90_bench" --out "$OUT/$SCHED" --recipe recipes/h200.json \
  --shapes "$SHAPES" --m "$M" --schedule-override "$SCHED" > "$OUT/$SCHED.log" 2>&1
echo "$SCHED exit $?"
if [ -n "${SWEEP_M:-}" ]; then
  mkdir -p "$OUT/sweep"
  timeout "${SWEEP_S:-150}" "$BIN/moetune_sm90_bench" --out "$OUT/sweep" --shapes "$SHAPES" \
    --m "$SWEEP_M" --sweep-schedule "$SCHED" > "$OUT/sweep.log" 2>&1
  echo "sweep exit $?"
fi
for f in pinned "$SCHED" sweep; do
  [ -f "$OUT/$f.log" ] || continue
  echo "== $f"; grep -E "^S[123] +[0-9]|geomean|FAIL|NONDET|error" "$OUT/$f.log" | head -40
done
