#!/usr/bin/env bash
# Two sets of tables measured on the H200 in one device call: GPU tests first (TEST_FILTER), then
# `moetune ab` of tables A (the shipped ones) against tables B (e.g. `moetune materialize` of a
# bench/recipe_variant.py recipe), every shape of recipes/h200.json at AB_M, ROUNDS interleaved
# rounds of fresh processes; then, when STAGE_M is set, the kernel bench of recipe A and recipe B
# at STAGE_M (per-stage times: align, GEMM1, GEMM2, combine). Everything lands under $OUT
# (tables_ab.log, gpu_tests.log, the A/B folder, stages.tgz); the summary prints last.
# Usage: TABLES_B=build/results/DIR/variant-tables RECIPE_B=build/results/DIR/variant-recipe.json \
#          AB_M=512,1024 STAGE_M=512 OUT=$OUT bench/run_h200_tables_ab.sh
# Knobs: BIN (.devbin), OUT, TABLES_A (tables/NVIDIA_H200), RECIPE_A (recipes/h200.json), AB_M,
# REPEATS (30), ROUNDS (4), TEST_FILTER (empty: no tests), DIGESTS (any: the arms may differ in
# bits, e.g. other tile widths; equal: a bitwise change), STAGE_M, STAGE_SHAPES (S1,S2,S3).
set -uo pipefail
BIN=${BIN:-.devbin}
TABLES_A=${TABLES_A:-tables/NVIDIA_H200}
TABLES_B=${TABLES_B:?name the variant tables, e.g. TABLES_B=build/results/DIR/variant-tables}
RECIPE_A=${RECIPE_A:-recipes/h200.json}
RECIPE_B=${RECIPE_B-}
OUT=${OUT:-build/results/$(date +%F)-tables-ab}
AB_M=${AB_M:-512,1024,2048,4096}
REPEATS=${REPEATS:-30}
ROUNDS=${ROUNDS:-4}
TEST_FILTER=${TEST_FILTER-}
DIGESTS=${DIGESTS:-any}
STAGE_M=${STAGE_M-}
STAGE_SHAPES=${STAGE_SHAPES:-S1,S2,S3}
. "$(dirname "$0")/h200_ab_lib.sh"
ab_begin tables_ab.log
AB_S=${AB_S:-300} ab_run "$TABLES_A (A) vs $TABLES_B (B)" "$RECIPE_A" "A=tables:$TABLES_A" \
  "B=tables:$TABLES_B"
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
ab_summary "B against A (positive delta: B is slower)"
