#!/usr/bin/env bash
# One lever measured on the H200 in one device call: its GPU tests, then `moetune ab` of the
# shipped tables with the lever forced on against the same tables with it forced off, every
# shape of recipes/h200.json at AB_M, ROUNDS interleaved rounds of fresh processes. A bitwise lever
# must give equal digests (--digests equal: a mismatch fails the A/B). Everything lands under $OUT
# (lever_ab.log, gpu_tests.log and the A/B folder); the summary is printed last.
# Usage: LEVER=decode_l2_prefetch AB_M=1,4 bench/run_h200_lever_ab.sh
# Knobs: BIN (.devbin), OUT, LEVER, AB_M, REPEATS (50), ROUNDS (4), TEST_FILTER (the GPU tests to
# run first; empty: none), DIGESTS (equal; any: a numeric lever, digests reported only).
set -uo pipefail
BIN=${BIN:-.devbin}
LEVER=${LEVER:?name the lever, e.g. LEVER=decode_l2_prefetch}
OUT=${OUT:-bench/results/$(date +%F)-lever-$LEVER}
AB_M=${AB_M:-1,4}
REPEATS=${REPEATS:-50}
ROUNDS=${ROUNDS:-4}
TEST_FILTER=${TEST_FILTER-}
DIGESTS=${DIGESTS:-equal}
export MOETUNE_CACHE_DIR=${MOETUNE_CACHE_DIR:-/tmp/moetune-cache}
mkdir -p "$OUT"
log="$OUT/lever_ab.log"
: > "$log"
start=$(date +%s)
elapsed() { echo "$(( $(date +%s) - start )) s"; }
git rev-parse HEAD >> "$log" 2>/dev/null
nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.max.sm,power.draw,power.limit \
  --format=csv 2>&1 | tee -a "$log"
test_rc=skipped
if [ -n "$TEST_FILTER" ]; then
  timeout -k 10 300 "$BIN/cuda_kernel_tests" --gtest_filter="$TEST_FILTER" > "$OUT/gpu_tests.log" 2>&1
  test_rc=$?
  echo "gpu tests ($TEST_FILTER) exit $test_rc after $(elapsed)" | tee -a "$log"
fi
echo "== ab: $LEVER on vs off, M $AB_M, $ROUNDS rounds x $REPEATS repeats" | tee -a "$log"
timeout -k 10 400 "$BIN/moetune" ab --backend cuda --recipe recipes/h200.json --m "$AB_M" \
  --repeats "$REPEATS" --warmup 3 --rounds "$ROUNDS" --cooldown 0.3 --digests "$DIGESTS" \
  --timeout-s 120 --arm on=tables:tables/NVIDIA_H200,levers:$LEVER=on \
  --arm off=tables:tables/NVIDIA_H200,levers:$LEVER=off --out "$OUT" >> "$log" 2>&1
ab_rc=$?
echo
echo "== summary ($(elapsed); gpu tests exit $test_rc, ab exit $ab_rc)"
[ -f "$OUT/gpu_tests.log" ] &&
  grep -E "^\[  (PASSED|FAILED|SKIPPED) |tests ran|Failure" "$OUT/gpu_tests.log" | head -20
echo "-- ab: the off arm against the on arm (positive delta: off is slower)"
grep -E " M=[0-9]+ " "$log" | head -40 || echo "(no A/B comparisons; see $log)"
grep -E "DIGEST|^moetune |error" "$log" | head -5
