#!/usr/bin/env bash
# The closing device call of this session: all GPU tests (cuda_kernel_tests, runtime_cuda_tests),
# a two-build A/B of the swap-AB dynamic walk's counter read (BIN_A: read at once, 47e6c20; BIN:
# read after the tile's loads) on recipe-candidate.json at S1 M=4096 and S2 M=1024/2048, then
# two protocol runs (bench/run_h200.sh: ceilings, every point of S1-S3, the pinned row and
# the default timed in one run): recipe-candidate.json (the shipped rows with the swap-AB GEMMs that won call2
# at S1 M=2048/4096, S2 M=1024/2048, S3 M=2048) and recipes/h200.json. Everything into $OUT/final.tgz.
#   OUT=$OUT BIN=.devbin BIN_A=.devbin-A3 bash bench/results/2026-12-01-swap-smem-epilogue/final.sh
set -u
cd "$(dirname "$0")/../../.." || exit 2
D=bench/results/2026-12-01-swap-smem-epilogue
BIN=${BIN:-.devbin}
export MOETUNE_CACHE_DIR=/tmp/moetune-cache
mkdir -p "$OUT/gpu-tests" "$OUT/candidate" "$OUT/shipped"
"$BIN/cuda_kernel_tests" > "$OUT/gpu-tests/gpu_tests.log" 2>&1
echo "cuda_kernel_tests rc $?"
"$BIN/runtime_cuda_tests" > "$OUT/gpu-tests/runtime_tests.log" 2>&1
echo "runtime_cuda_tests rc $?"
grep -hE "^\[  (PASSED|FAILED) |tests ran|Failure" "$OUT"/gpu-tests/*.log | head -20
BIN_A=${BIN_A:-.devbin-A3} BIN_B=$BIN SHAPES=S1,S2 M=1024,2048,4096 ROUNDS=2 LIMIT_S=100 \
  RECIPE=$D/recipe-candidate.json OUT=$OUT/bin-ab bash bench/run_h200_bin_ab.sh > "$OUT/bin-ab.log" 2>&1
echo "bin-ab exit $?"
cat "$OUT/bin-ab/summary.txt"
for arm in candidate shipped; do
  recipe=recipes/h200.json
  [ $arm = candidate ] && recipe=$D/recipe-candidate.json
  OUT=$OUT/$arm BIN=$BIN timeout 150 bash bench/run_h200.sh --no-tests --recipe "$recipe" --no-sweep \
    > "$OUT/$arm/bench.log" 2>&1
  echo "$arm rc $?"
  grep -E "geomean" "$OUT/$arm/bench.log"
done
tar czf "$OUT/final.tgz" -C "$OUT" gpu-tests bin-ab candidate shipped && rm -rf "$OUT/gpu-tests" "$OUT/bin-ab" "$OUT/candidate" "$OUT/shipped"
