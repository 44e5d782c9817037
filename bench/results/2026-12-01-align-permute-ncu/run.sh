#!/usr/bin/env bash
# ncu durations of the layer's small launches at two mid-M points: align (count, scan, scatter)
# and the permute pass (x in sorted-row order, for S1 M=4096's swap-AB GEMM1), the first launches
# of moetune_sm90_bench on the shipped recipe (its check runs the layer first); clocks as they are.
#   OUT=$OUT BIN=.devbin-s bash bench/results/2026-12-01-align-permute-ncu/run.sh
set -u
cd "$(dirname "$0")/../../.." || exit 2
BIN=${BIN:-.devbin}
export MOETUNE_CACHE_DIR=/tmp/moetune-ncu-cache
for point in S1:4096:4 S2:2048:3; do
  IFS=: read -r shape m n <<< "$point"
  timeout -k 10 "${LIMIT_S:-110}" ncu --clock-control none --kernel-name "regex:align|permute" \
    --launch-count "$n" --section SpeedOfLight "$BIN/moetune_sm90_bench" --recipe recipes/h200.json \
    --shapes "$shape" --m "$m" --no-sweep --out "$OUT/bench-$shape-$m" > "$OUT/ncu-$shape-$m.txt" 2>&1
  echo "$shape M=$m exit $?"
  grep -E "^  [a-z_]+.*\(|Duration|DRAM Throughput|SM Frequency" "$OUT/ncu-$shape-$m.txt" | head -24
done
