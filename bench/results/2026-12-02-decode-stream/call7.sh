#!/usr/bin/env bash
# Device call 7 (twenty-fifth session): one protocol run (run_h200.sh --no-tests, every point the
# row and the default interleaved) of bench/results/2026-12-02-swap-l2/recipe-s1-2048-g1.json: the
# shipped recipe with S1 M=2048's GEMM1 at group_m 1, the twenty-third session's candidate (0.987
# of the shipped layer in both rounds of its call 6; 723.2 vs the default's 745.9 us in its
# call 7). Binaries in .devbin-r (0cdcb21: src/ equal to 66ded27's, the shipped kernels).
set -u
cd "$(dirname "$0")/../../.." || exit 2
export MOETUNE_CACHE_DIR=/tmp/moetune-cache
start=$(date +%s)
mkdir -p "$OUT/run"
OUT=$OUT/run BIN=.devbin-r timeout -k 5 480 bash bench/run_h200.sh --no-tests \
  --recipe bench/results/2026-12-02-swap-l2/recipe-s1-2048-g1.json --no-sweep \
  > "$OUT/run/bench.log" 2>&1
echo "run rc $? after $(( $(date +%s) - start )) s"
grep -E "^ceilings|geomean|^S1 M=2048" "$OUT/run/bench.log"
tail -45 "$OUT/run/bench.log"
