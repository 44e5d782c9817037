#!/usr/bin/env bash
# Device call 7 (seventeenth session): the per-GEMM sweep (every candidate of the search space,
# swap-AB included; the default rule as its incumbent) on the five held-out shapes at all twelve M,
# with the committed rule (38f7737) as each point's default: how far the default now sits from the
# best the sweep finds, and every candidate's stage time for bench/fit_defaults.py
# (sweep-log.csv.gz). Carry .devbin-s (BIN).
set -u
cd "$(dirname "$0")/../../.." || exit 2
export BIN=${BIN:-.devbin}
mkdir -p "$OUT/sweep"
OUT=$OUT/sweep LIMIT_S=${LIMIT_S:-500} bash bench/run_h200_heldout.sh --sweep-log "$OUT/sweep/sweep-log.csv" \
  > "$OUT/sweep/run.log" 2>&1
echo "heldout sweep rc $?"
gzip "$OUT/sweep/sweep-log.csv"
grep -E "geomean" "$OUT/sweep/run.log"
tar czf "$OUT/sweep.tgz" -C "$OUT" sweep && rm -rf "$OUT/sweep"
