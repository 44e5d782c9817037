#!/usr/bin/env bash
# Re-tunes chosen buckets of the shipped H200 tables in one device call, then checks what changed
# in the bench protocol:
#   1. `moetune tune --merge` of TUNE_RECIPE (buckets to tune, nothing pinned, e.g.
#      recipes/h200-s2s3-retune.json) into a copy of tables/NVIDIA_H200, so each shipped row is the
#      incumbent: a row changes only where a challenger beat it beyond the CI and the margin;
#   2. bench/recipe_variant.py --from-tables: recipes/h200.json with the tuned rows, and which rows
#      differ from the pinned ones;
#   3. bench/run_h200_recipe_ab.sh: the pinned recipe (A) against that variant (B), A B A B, at the
#      changed points (the other rows of the same shapes and M run as controls).
# A tuned row is worth shipping where B beats A in every run; then re-time the recipe with it
# (bench/run_h200.sh --no-tests --recipe ...) and turn that CSV alone into recipes/h200.json
# (bench/csv_to_recipe.py). Everything lands under $OUT (tables and store in retune.tgz).
# Usage: OUT=$OUT bash bench/run_h200_retune.sh TUNE_RECIPE   (knobs: BIN, TUNE_S = 240)
set -uo pipefail
cd "$(dirname "$0")/.." || exit 2
RECIPE=${1:?usage: bench/run_h200_retune.sh TUNE_RECIPE}
BIN=${BIN:-.devbin}
OUT=${OUT:-build/results/$(date +%F)-retune}
TUNE_S=${TUNE_S:-240}
export MOETUNE_CACHE_DIR=${MOETUNE_CACHE_DIR:-/tmp/moetune-cache}
mkdir -p "$OUT"
rm -rf "$OUT/tuned"
cp -r tables/NVIDIA_H200 "$OUT/tuned"
budget=$(awk -v s="$TUNE_S" 'BEGIN { printf "%.2f", (s - 30) / 60 }')  # its finals run past it
timeout -k 10 "$TUNE_S" "$BIN/moetune" tune --recipe "$RECIPE" --out "$OUT/tuned" --merge \
  --budget-min "$budget" --store "$OUT/retune.db" --json > "$OUT/retune.json" 2> "$OUT/retune.err"
echo "tune exit $?"
python3 - "$OUT/retune.json" <<'PY'
import json, sys
try:
    shapes = json.load(open(sys.argv[1]))["shapes"]
except (OSError, ValueError, KeyError) as e:
    shapes = []
    print("no tune JSON (%s)" % e)
for s in shapes:
    for b in s["buckets"]:
        print("%-18s M=%-6s %-17s %s" % (s["name"], b["bucket"], b.get("verdict", b.get("outcome")),
                                         "%.1f us" % b["time_us"] if "time_us" in b else ""))
PY
python3 bench/recipe_variant.py recipes/h200.json --from-tables "$OUT/tuned" \
  > "$OUT/variant.json" || exit 1
read -r shapes ms < <(python3 bench/recipe_variant.py recipes/h200.json --from-tables \
  "$OUT/tuned" --list-changed)
(cd "$OUT" && tar czf retune.tgz tuned retune.db* && rm -rf tuned retune.db*)
if [ "$shapes" = none ]; then
  echo "no shipped row changed: every incumbent held"
  exit 0
fi
echo "changed rows: shapes $shapes, M $ms"
OUT=$OUT bash bench/run_h200_recipe_ab.sh recipes/h200.json "$OUT/variant.json" --shapes "$shapes" \
  --m "$ms"
