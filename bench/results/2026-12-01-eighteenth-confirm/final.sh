#!/usr/bin/env bash
# Device call 4 (eighteenth session, the closing call; binaries of 354a47a, whose src/ equals
# c0199b0's, the default rule with the 192-row band's I >= 10 p bound): the GPU tests the default rule reaches
# (benchmark shapes, every default and search-space config compiling for S2, the align/PDL and
# wgmma levers on defaults) and the MoeRunner tests; then the protocol run on the shipped recipe
# (bench/run_h200.sh: ceilings, every point of S1-S3, each pinned row and the default rule timed
# in one run) and the held-out shapes on the default rule alone (bench/run_h200_heldout.sh
# --no-sweep). BIN: the binaries (cuda_kernel_tests, runtime_cuda_tests, moetune_sm90_bench of
# scripts/build_device.sh), carried.
set -u
cd "$(dirname "$0")/../../.." || exit 2
export MOETUNE_CACHE_DIR=/tmp/moetune-cache
export BIN=${BIN:-.devbin}
start=$(date +%s)
mkdir -p "$OUT/gpu-tests" "$OUT/shipped" "$OUT/heldout"
timeout -k 5 200 "$BIN/cuda_kernel_tests" \
  --gtest_filter='*BenchmarkShapes*:*EveryDefault*:*MultiCta*:*Wgmma*' > "$OUT/gpu-tests/gpu_tests.log" 2>&1
echo "cuda_kernel_tests rc $? after $(( $(date +%s) - start )) s"
timeout -k 5 100 "$BIN/runtime_cuda_tests" > "$OUT/gpu-tests/runtime_tests.log" 2>&1
echo "runtime_cuda_tests rc $? after $(( $(date +%s) - start )) s"
grep -hE "^\[  (PASSED|FAILED) |Failure" "$OUT"/gpu-tests/*.log | head -20
OUT=$OUT/shipped timeout 170 bash bench/run_h200.sh --no-tests --recipe recipes/h200.json --no-sweep \
  > "$OUT/shipped/bench.log" 2>&1
echo "shipped rc $? after $(( $(date +%s) - start )) s"
grep -E "geomean" "$OUT/shipped/bench.log"
left=$(( 560 - ($(date +%s) - start) ))
OUT=$OUT/heldout LIMIT_S=$left bash bench/run_h200_heldout.sh --no-sweep > "$OUT/heldout/run.log" 2>&1
echo "heldout rc $? after $(( $(date +%s) - start )) s"
tar czf "$OUT/final.tgz" -C "$OUT" gpu-tests shipped heldout && rm -rf "$OUT/gpu-tests" "$OUT/shipped" "$OUT/heldout"
