#!/usr/bin/env bash
# Device call 4 (twenty-second session): the closing checks of b950db1 (src as 7382dc2 but for
# comments and a compile-time assert; binaries in .devbin-z): the benchmark-shape and swap-AB GPU
# tests, then one protocol run of the shipped recipe (run_h200.sh --no-tests).
set -u
cd "$(dirname "$0")/../../.." || exit 2
export MOETUNE_CACHE_DIR=/tmp/moetune-cache
BIN=.devbin-z
mkdir -p "$OUT/run"
start=$(date +%s)
timeout -k 5 200 $BIN/cuda_kernel_tests \
  --gtest_filter='Sm90Gather.BenchmarkShapesMatchTheGpuReferenceAndAreDeterministic:Sm90Gather.SwapAbMatchesFp64OnOddShapesAndTheGpuReferenceOnBenchmarkShapes' \
  > "$OUT/gpu_tests.log" 2>&1
echo "gpu tests rc $? after $(( $(date +%s) - start )) s: $(grep -E '^\[  (PASSED|FAILED) ' "$OUT/gpu_tests.log" | tr '\n' ' ')"
OUT=$OUT/run BIN=$BIN timeout -k 5 150 bash bench/run_h200.sh --no-tests --recipe recipes/h200.json \
  --no-sweep > "$OUT/run/bench.log" 2>&1
echo "protocol run rc $? after $(( $(date +%s) - start )) s"
tar czf "$OUT/run.tgz" -C "$OUT" run && rm -rf "${OUT:?}/run"
tar xzf "$OUT/run.tgz" -O run/bench.log | grep -E "^ceilings|geomean"
