#!/usr/bin/env bash
# Device call 7 (twenty-third session): one protocol run (run_h200.sh --no-tests, every point the
# row and the default interleaved) of recipe-s1-2048-g1.json: the shipped recipe with S1 M=2048's
# GEMM1 at group_m 1 (call 6: 0.987 of the shipped layer in both rounds). Binaries in .devbin-h
# (e2ffd40: the shipped kernels' SASS, checked equal to b950db1's). The recipe is regenerated from
# this CSV alone (bench/csv_to_recipe.py).
set -u
cd "$(dirname "$0")/../../.." || exit 2
export MOETUNE_CACHE_DIR=/tmp/moetune-cache
start=$(date +%s)
mkdir -p "$OUT/run"
OUT=$OUT/run BIN=.devbin-h timeout -k 5 420 bash bench/run_h200.sh --no-tests \
  --recipe bench/results/2026-12-02-swap-l2/recipe-s1-2048-g1.json --no-sweep \
  > "$OUT/run/bench.log" 2>&1
echo "run rc $? after $(( $(date +%s) - start )) s"
grep -E "^ceilings|geomean|^S1 M=2048" "$OUT/run/bench.log"
