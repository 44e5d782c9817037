#!/usr/bin/env bash
# Device call 2 (nineteenth session; binaries of 2dde256, whose kernels equal c0199b0's but for
# comments): the protocol run on the shipped recipe (bench/run_h200.sh: ceilings, every point of
# S1-S3, each pinned row and the default rule timed in one run), whose CSV now says per point how
# many NVML samples had the SM clock held at the power limit (power_capped_frac) or by heat; then
# the GPU tests in the time left (cuda_kernel_tests with the new NVML telemetry test first).
set -u
cd "$(dirname "$0")/../../.." || exit 2
export MOETUNE_CACHE_DIR=/tmp/moetune-cache
export BIN=${BIN:-.devbin}
start=$(date +%s)
mkdir -p "$OUT/gpu-tests" "$OUT/shipped"
OUT=$OUT/shipped timeout 300 bash bench/run_h200.sh --no-tests --recipe recipes/h200.json --no-sweep \
  > "$OUT/shipped/bench.log" 2>&1
echo "shipped rc $? after $(( $(date +%s) - start )) s"
grep -E "^ceilings|geomean" "$OUT/shipped/bench.log"
grep -E "^S[123] " "$OUT/shipped/bench.log" | awk '{print $1, $2, $5, $9, $10}'
left=$(( 570 - ($(date +%s) - start) ))
timeout -k 5 $left "$BIN/cuda_kernel_tests" --gtest_filter='NvmlTelemetry*:*MatchesFp64ReferenceOnSmallAndOddShapes*:*BenchmarkShapes*' \
  > "$OUT/gpu-tests/gpu_tests.log" 2>&1
echo "cuda_kernel_tests rc $? after $(( $(date +%s) - start )) s"
grep -hE "^\[  (PASSED|FAILED) |^\[       OK|Failure|^nvml:" "$OUT"/gpu-tests/*.log | head -20
