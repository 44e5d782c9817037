#!/usr/bin/env bash
# Fourth device call: the swap-AB kernel's dynamic tile walk (build B) against its static walk
# (build A = a05410d's kernels), same configs, so the digests must be equal:
#   1. the swap-AB GPU test of build B;
#   2. bench/run_h200_bin_ab.sh on ../2026-12-01-swap-wide-boxes/variant-256.json (both GEMMs
#      swap-AB at the mid-M points), 2 rounds, M 512..8192;
#   3. the same on recipe-candidate.json (the shipped rows with call2's swap-AB GEMMs), M
#      1024..4096.
#   BIN_A=.devbin-A2 BIN_B=.devbin OUT=$OUT bash bench/results/2026-12-01-swap-smem-epilogue/call4.sh
set -u
cd "$(dirname "$0")/../../.." || exit 2
D=bench/results/2026-12-01-swap-smem-epilogue
OUT=${OUT:-$D/out}
BIN_A=${BIN_A:-.devbin-A2}
BIN_B=${BIN_B:-.devbin}
mkdir -p "$OUT"
MOETUNE_CACHE_DIR=/tmp/t-B timeout 300 "$BIN_B/cuda_kernel_tests" \
  --gtest_filter="${TEST_FILTER:-*SwapAb*}" > "$OUT/gpu_tests.log" 2>&1
rc=$?
echo "gpu tests rc $rc"
grep -E "^\[ +(OK|FAILED) +\]|Failure" "$OUT/gpu_tests.log" | head -20
[ $rc -eq 0 ] || { echo "GPU tests failed: no timing"; exit $rc; }
BIN_A=$BIN_A BIN_B=$BIN_B SHAPES=S1,S2,S3 M=512,1024,2048,4096,8192 ROUNDS=2 LIMIT_S=150 \
  RECIPE=bench/results/2026-12-01-swap-wide-boxes/variant-256.json OUT=$OUT/bin-ab-256 \
  bash bench/run_h200_bin_ab.sh > "$OUT/bin-ab-256.log" 2>&1
echo "bin-ab-256 exit $?"
BIN_A=$BIN_A BIN_B=$BIN_B SHAPES=S1,S2,S3 M=1024,2048,4096 ROUNDS=2 LIMIT_S=150 \
  RECIPE=$D/recipe-candidate.json OUT=$OUT/bin-ab-candidate \
  bash bench/run_h200_bin_ab.sh > "$OUT/bin-ab-candidate.log" 2>&1
echo "bin-ab-candidate exit $?"
cat "$OUT/bin-ab-256/summary.txt" "$OUT/bin-ab-candidate/summary.txt"
