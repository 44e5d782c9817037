#!/usr/bin/env bash
# Device call 3 (twenty-first session), binaries of b9efb65 (.devbin): S1 M=8192 and 16384's two
# configs, interleaved A B A B three times (bench/run_h200_recipe_ab.sh, 6 runs per arm), since
# call 1 (B/A 0.954 at 16384 in both rounds) and call 2's protocol run (row 3535.6 vs default
# 3375.5 us at 16384, 1809.0 vs 1801.9 at 8192) disagree. A = the shipped recipe (8192: 232 / 224,
# 16384: 256 / 256), B = recipe-d.json (the two rows' configs exchanged).
set -u
cd "$(dirname "$0")/../../.." || exit 2
export MOETUNE_CACHE_DIR=/tmp/moetune-cache
start=$(date +%s)
for r in 1 2 3; do
  OUT=$OUT/r$r RUN_S=50 timeout 200 bash bench/run_h200_recipe_ab.sh recipes/h200.json \
    bench/results/2026-12-01-s1-rows/recipe-d.json --shapes S1 --m 8192,16384 > "$OUT/r$r.log" 2>&1
  echo "round $r rc $? after $(( $(date +%s) - start )) s"
  grep -E "^S1" "$OUT/r$r.log"
done
