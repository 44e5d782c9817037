#!/usr/bin/env bash
# Two sets of tables measured on the H200 in one device call: GPU tests first (TEST_FILTER), then
# `moetune ab` of tables A (the shipped ones) against tables B (e.g. `moetune materialize` of a
# bench/recipe_variant.py recipe), every shape of recipes/h200.json at AB_M, ROUNDS interleaved
# rounds of fresh processes; then, when STAGE_M is set, the kernel bench of recipe A and recipe B
# at STAGE_M (per-stage times: align, GEMM1, GEMM2, combine). Everything lands under $OUT
# (tables_ab.log, gpu_tests.log, the A/B folder, stages.tgz); the summary prints last.
# Usage: TABLES_B=bench/results/DIR/variant-tables RECIPE_B=bench/results/DIR/variant-recipe.json \
#          AB_M=512,1024 STAGE_M=512 OUT=$OUT bench/run_h200_tables_ab.sh
# Knobs: BIN (.devbin), OUT, TABLES_A (tables/NVIDIA_H200), RECIPE_A (recipes/h200.json), AB_M,
# REPEATS (30), ROUNDS (4), TEST_FILTER (empty: no tests), DIGESTS (any: the arms may differ in
# bits, e.g. other tile widths; equal: a bitwise change), STAGE_M, STAGE_SHAPES (S1,S2,S3).
set -uo pipefail
BIN=${BIN:-.devbin}
TABLES_A=${TABLES_A:-tables/NVIDIA_H200}
TABLES_B=${TABLES_B:?name the variant tables, e.g. TABLES_B=bench/results/DIR/variant-tables}
RECIPE_A=${RECIPE_A:-recipes/h200.json}
RECIPE_B=${RECIPE_B-}
OUT=${OUT:-bench/results/$(date +%F)-tables-ab}
AB_M=${AB_M:-512,1024,2048,4096}
REPEATS=${REPEATS:-30}
ROUNDS=${ROUNDS:-4}
TEST_FILTER=${TEST_FILTER-}
DIGESTS=${DIGESTS:-any}
STAGE_M=${STAGE_M-}
STAGE_SHAPES=${STAGE_SHAPES:-S1,S2,S3}
export MOETUNE_CACHE_DIR=${MOETUNE_CACHE_DIR:-/tmp/moetune-cache}
mkdir -p "$OUT"
log="$OUT/tables_ab.log"
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
echo "== ab: $TABLES_A (A) vs $TABLES_B (B), M $AB_M, $ROUNDS rounds x $REPEATS repeats" | tee -a "$log"
timeout -k 10 300 "$BIN/moetune" ab --backend cuda --recipe "$RECIPE_A" --m "$AB_M" \
  --repeats "$REPEATS" --warmup 3 --rounds "$ROUNDS" --cooldown 0.3 --digests "$DIGESTS" \
  --timeout-s 120 --arm "A=tables:$TABLES_A" --arm "B=tables:$TABLES_B" --out "$OUT" >> "$log" 2>&1
ab_rc=$?
echo "ab exit $ab_rc after $(elapsed)" | tee -a "$log"
if [ -n "$STAGE_M" ] && [ -n "$RECIPE_B" ]; then
  mkdir -p "$OUT/stages"
  for arm in A B; do
    recipe=$RECIPE_A
    [ "$arm" = B ] && recipe=$RECIPE_B
    timeout -k 10 120 "$BIN/moetune_sm90_bench" --out "$OUT/stages/$arm" --recipe "$recipe" \
      --shapes "$STAGE_SHAPES" --m "$STAGE_M" > "$OUT/stages/$arm.log" 2>&1
    echo "stages $arm exit $? after $(elapsed)" | tee -a "$log"
  done
  tar czf "$OUT/stages.tgz" -C "$OUT" stages
  python3 - "$OUT/stages" <<'PY'
import csv, glob, os, sys
rows = {}
for arm in "AB":
    for f in glob.glob(os.path.join(sys.argv[1], arm, "*.csv")):
        for r in csv.DictReader(open(f)):
            if "gemm1_us" in r:
                rows.setdefault((r["shape"], int(r["M"])), {})[arm] = r
print("%-3s %6s %9s %9s %9s %9s %9s %9s" % ("sh", "M", "A tot", "B tot", "A g1", "B g1", "A g2",
                                           "B g2"))
for (s, m), arms in sorted(rows.items()):
    a, b = arms.get("A"), arms.get("B")
    if not a or not b:
        continue
    print("%-3s %6d %9s %9s %9s %9s %9s %9s" % (s, m, a["time_us"], b["time_us"], a["gemm1_us"],
                                               b["gemm1_us"], a["gemm2_us"], b["gemm2_us"]))
PY
  rm -rf "$OUT/stages"
fi
echo
echo "== summary ($(elapsed); gpu tests exit $test_rc, ab exit $ab_rc)"
[ -f "$OUT/gpu_tests.log" ] &&
  grep -E "^\[  (PASSED|FAILED|SKIPPED) |tests ran|Failure" "$OUT/gpu_tests.log" | head -20
echo "-- ab: B against A (positive delta: B is slower)"
grep -E " M=[0-9]+ " "$log" | head -40 || echo "(no A/B comparisons; see $log)"
grep -E "^moetune |error" "$log" | head -5
