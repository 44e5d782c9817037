#!/usr/bin/env bash
# Call 1 of the thirty-third session: the evidence the kernel issue closes on, at the head.
# 1. The protocol run of the shipped recipe (bench/run_h200.sh --no-sweep: every point the recipe
#    row and the default rule timed interleaved, L2 flushed, median), no tests: the kernels are
#    c99661d's, whose 21 GPU tests and MoeRunner's 4 passed at c2fbe14
#    (bench/results/2026-12-03-self-route/call5/).
# 2. The five held-out shapes on the default rule alone (bench/run_h200_heldout.sh --no-sweep):
#    what a user without a tuned table gets from the kernels as they close.
set -uo pipefail
cd "$(dirname "$0")/../../.."
OUT=${OUT:?}
export MOETUNE_CACHE_DIR=$(mktemp -d)
mkdir -p "$OUT/run" "$OUT/heldout"
OUT=$OUT/run BIN=.devbin timeout 300 bash bench/run_h200.sh --no-tests --recipe recipes/h200.json \
  --no-sweep > "$OUT/run/run.log" 2>&1
echo "protocol run exit $?"
OUT=$OUT/heldout BIN=.devbin LIMIT_S=230 bash bench/run_h200_heldout.sh --no-sweep \
  > "$OUT/heldout/heldout.log" 2>&1
echo "held-out run exit $?"
tail -6 "$OUT/run/run.log"
grep -iE "geomean|^H[1-5] " "$OUT/heldout/heldout.log" | tail -70
