#!/usr/bin/env bash
# Device call 4 (twenty-sixth session): binaries of 4049eb8 (.devbin-c: the two-launch align, its
# threshold knob taken out again; kernels equal to 98cbe3a's). One protocol run of the shipped
# recipe (run_h200.sh --no-tests: every point the row and the default interleaved), then every GPU
# test: cuda_kernel_tests and runtime_cuda_tests (MoeRunner's 4).
set -u
cd "$(dirname "$0")/../../.." || exit 2
export MOETUNE_CACHE_DIR=/tmp/moetune-cache
start=$(date +%s)
mkdir -p "$OUT/run"
OUT=$OUT/run BIN=.devbin-c timeout -k 5 200 bash bench/run_h200.sh --no-tests \
  --recipe recipes/h200.json --no-sweep > "$OUT/run/bench.log" 2>&1
echo "run rc $? after $(( $(date +%s) - start )) s"
grep -E "^ceilings|geomean" "$OUT/run/bench.log"
timeout -k 5 330 .devbin-c/cuda_kernel_tests > "$OUT/cuda_kernel_tests.log" 2>&1
echo "cuda_kernel_tests rc $? after $(( $(date +%s) - start )) s"
timeout -k 5 60 .devbin-c/runtime_cuda_tests > "$OUT/runtime_cuda_tests.log" 2>&1
echo "runtime_cuda_tests rc $? after $(( $(date +%s) - start )) s"
grep -hE "^\[  (FAILED|PASSED) |^\[       OK|Failure" "$OUT"/*.log | cut -c1-150
tail -45 "$OUT/run/bench.log"
