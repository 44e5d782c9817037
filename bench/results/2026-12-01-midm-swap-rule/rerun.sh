#!/usr/bin/env bash
# Device call 6 (seventeenth session): the protocol run on the shipped recipe twice more, back to
# back on one machine (final/'s run was 2-4% slower than the fifteenth session's closing run at
# points whose configs and kernels did not change: machine or clock state, or this code?).
# Carry .devbin-s (BIN).
set -u
cd "$(dirname "$0")/../../.." || exit 2
export MOETUNE_CACHE_DIR=/tmp/moetune-cache
export BIN=${BIN:-.devbin}
for r in 1 2; do
  mkdir -p "$OUT/rerun$r"
  OUT=$OUT/rerun$r timeout 170 bash bench/run_h200.sh --no-tests --recipe recipes/h200.json --no-sweep \
    > "$OUT/rerun$r/bench.log" 2>&1
  echo "rerun $r rc $?"
  grep -E "geomean" "$OUT/rerun$r/bench.log"
done
tar czf "$OUT/rerun.tgz" -C "$OUT" rerun1 rerun2 && rm -rf "$OUT/rerun1" "$OUT/rerun2"
