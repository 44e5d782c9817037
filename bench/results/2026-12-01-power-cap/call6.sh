#!/usr/bin/env bash
# Device call 6 (nineteenth session; binaries of d0d3d96, where the benchmark reads NVML once per
# timed interval through NvmlTelemetry::Reading): the NVML test and a short --dense run (S2 M = 1
# and 2048, shipped recipe) to check that the CSVs keep their columns and readings.
set -u
cd "$(dirname "$0")/../../.." || exit 2
export MOETUNE_CACHE_DIR=/tmp/moetune-cache
BIN=${BIN:-.devbin}
"$BIN/cuda_kernel_tests" --gtest_filter='NvmlTelemetry*' > "$OUT/nvml_test.log" 2>&1
echo "nvml test rc $?"; grep -E "^nvml:|PASSED|FAILED" "$OUT/nvml_test.log"
timeout 200 "$BIN/moetune_sm90_bench" --recipe recipes/h200.json --no-sweep --dense --shapes S2 \
  --m 1,2048 --out "$OUT" > "$OUT/bench.log" 2>&1
echo "bench rc $?"
grep -E "^ceilings" "$OUT/bench.log"; cat "$OUT"/*.csv
