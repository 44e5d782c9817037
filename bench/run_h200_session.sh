#!/usr/bin/env bash
# The end-of-session device call (one call, every step bounded by `timeout`, ~9 min at most):
#   1. GPU kernel tests (cuda_kernel_tests)            -> $OUT/gpu_tests.log
#   2. kernel benchmark of recipes/h200.json's rows    -> $OUT/final/<date>-<commit>.csv
#   3. runtime on the GPU (bench/run_h200_runtime.sh)  -> $OUT/runtime.tgz
#   4. bench + A/B protocol (bench/run_h200_ab.sh)     -> $OUT/ab.tgz
# (folders are packed: the device tool returns at most 8 files per call).
# Binaries from scripts/build_device.sh (.devbin/). Knobs: TEST_S, BENCH_S, RUNTIME_S, AB_S.
set -uo pipefail
BIN=${BIN:-.devbin}
OUT=${OUT:-build/results}
export MOETUNE_CACHE_DIR=${MOETUNE_CACHE_DIR:-/tmp/moetune-cache}
mkdir -p "$OUT/final" "$OUT/runtime" "$OUT/ab"
timeout "${TEST_S:-150}" "$BIN/cuda_kernel_tests" > "$OUT/gpu_tests.log" 2>&1
echo "gpu tests exit $?"
timeout "${BENCH_S:-180}" "$BIN/moetune_sm90_bench" --out "$OUT/final" --recipe recipes/h200.json \
  > "$OUT/final.log" 2>&1
echo "kernel bench exit $?"
OUT="$OUT/runtime" timeout "${RUNTIME_S:-90}" bash bench/run_h200_runtime.sh > "$OUT/runtime.log" 2>&1
echo "runtime exit $?"
if [ "${AB_S:-110}" -gt 0 ]; then  # AB_S=0 skips the A/B step
  OUT="$OUT/ab" BENCH_M=${BENCH_M:-16,2048} AB_M=${AB_M:-256} ROUNDS=${ROUNDS:-2} \
    REPEATS=${REPEATS:-10} timeout "${AB_S:-110}" bash bench/run_h200_ab.sh > "$OUT/ab.log" 2>&1
  echo "ab exit $?"
fi
# The device tool brings back at most 8 files: pack the runtime and A/B folders.
for d in runtime ab; do
  tar -czf "$OUT/$d.tgz" -C "$OUT" "$d" && rm -rf "${OUT:?}/$d"
done
echo "== gpu tests"; grep -E "^\[  (PASSED|FAILED) |Failure" -A2 "$OUT/gpu_tests.log" | head -12
echo "== runtime"; sed -n '/== summary/,$p' "$OUT/runtime.log" | head -30
echo "== ab"; sed -n '/== summary/,$p' "$OUT/ab.log" | head -25
echo "== kernel bench"; grep -E "^S[123] +[0-9]|geomean|FAIL|NONDET" "$OUT/final.log" | head -45
