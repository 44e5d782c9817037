#!/usr/bin/env bash
# Call 2: the held-out M = 1 / 4 points again, on a machine that has run nothing before them. In
# call 1 they followed the previous shape's M = 16384 point and ran at 1395-1575 MHz with the power
# limit in every sample; H2 M=1 took 41.3 us there against 34.9 in the 2026-11-30 held-out run.
# Each shape twice (rounds A, B) with S2 beside them, default rule only.
set -uo pipefail
cd "$(dirname "$0")/../../.."
OUT=${OUT:?}
export MOETUNE_CACHE_DIR=$(mktemp -d)
for round in a b; do
  mkdir -p "$OUT/$round"
  OUT=$OUT/$round BIN=.devbin LIMIT_S=120 SHAPES=S2 bash bench/run_h200_heldout.sh --no-sweep \
    --m 1,2,4 > "$OUT/$round/heldout.log" 2>&1
  echo "round $round exit $?"
  grep -E "^(H[1-5]|S2) +[0-9]" "$OUT/$round/heldout.log"
done
