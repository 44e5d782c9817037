#!/usr/bin/env bash
# Device call 4 (twenty-first session): the protocol with the row and the default interleaved
# (moetune_sm90_bench of aae8b83 in .devbin-p; kernels as b9efb65's), twice, on recipe-c.json (the
# shipped recipe with S1 M=16384's row 128 x 232 s5 / 128 x 224 s4). run1's CSV is the one the
# recipe is regenerated from; run2 is the confirmation.
set -u
cd "$(dirname "$0")/../../.." || exit 2
export MOETUNE_CACHE_DIR=/tmp/moetune-cache
start=$(date +%s)
for r in run1 run2; do
  mkdir -p "$OUT/$r"
  OUT=$OUT/$r BIN=.devbin-p timeout 270 bash bench/run_h200.sh --no-tests \
    --recipe bench/results/2026-12-01-s1-rows/recipe-c.json --no-sweep > "$OUT/$r/bench.log" 2>&1
  echo "$r rc $? after $(( $(date +%s) - start )) s"
  grep -E "^ceilings|geomean|^S1 M=(8192|16384)" "$OUT/$r/bench.log"
done
