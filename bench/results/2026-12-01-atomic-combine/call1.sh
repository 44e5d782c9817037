#!/usr/bin/env bash
# Device call 1 (nineteenth session): lever atomic_combine. The GPU tests of the kernels whose
# source it touches (every GEMM2 epilogue, align, combine: the odd-shape fp64 test at every edge
# M, the benchmark shapes, swap-AB) and the lever's own test; then the lever on against off in
# one build (bench/run_h200_env_ab.sh, shipped recipe, 2 rounds, digests reported only: the lever
# is nondeterministic). BIN: the binaries of scripts/build_device.sh, carried.
set -u
cd "$(dirname "$0")/../../.." || exit 2
export MOETUNE_CACHE_DIR=/tmp/moetune-cache
export BIN=${BIN:-.devbin}
start=$(date +%s)
mkdir -p "$OUT/gpu-tests"
timeout -k 5 280 "$BIN/cuda_kernel_tests" \
  --gtest_filter='*AtomicCombine*:*MatchesFp64ReferenceOnSmallAndOddShapes*:*BenchmarkShapes*:*SwapAb*' \
  > "$OUT/gpu-tests/gpu_tests.log" 2>&1
echo "cuda_kernel_tests rc $? after $(( $(date +%s) - start )) s"
grep -hE "^\[  (PASSED|FAILED) |Failure|lever atomic_combine|^\[       OK|FAILED  \]" "$OUT/gpu-tests/gpu_tests.log" | head -20
left=$(( 570 - ($(date +%s) - start) ))
ARMS="off=MOETUNE_LEVER_ATOMIC_COMBINE=off on=MOETUNE_LEVER_ATOMIC_COMBINE=on" M=${M:-256,1024,2048,4096} \
  ROUNDS=2 DIGESTS=any LIMIT_S=$(( left / 4 )) OUT=$OUT/ab timeout $left bash bench/run_h200_env_ab.sh
echo "env ab rc $? after $(( $(date +%s) - start )) s"
