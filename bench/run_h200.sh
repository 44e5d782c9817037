#!/usr/bin/env bash
# Runs on the device machine in one call: the GPU tests, then the kernel benchmark
# (moetune_sm90_bench: ceilings, per-point sweep, check, timing, CSV under $OUT).
# Binaries are built on the dev machine (scripts/build_device.sh) and carried in .devbin/.
# Usage: bench/run_h200.sh [--tests-only] [bench options...]
set -uo pipefail
BIN=${BIN:-.devbin}
OUT=${OUT:-build/results}
mkdir -p "$OUT"
export MOETUNE_CACHE_DIR=${MOETUNE_CACHE_DIR:-/tmp/moetune-cache}
nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.max.sm,power.draw,power.limit \
  --format=csv 2>&1 | tee "$OUT/nvidia-smi.txt"
if [ "${1:-}" != "--no-tests" ]; then
  "$BIN/cuda_kernel_tests" > "$OUT/gpu_tests.log" 2>&1
  rc=$?
  echo "gpu tests exit $rc"; grep -E "^\[  (PASSED|FAILED|SKIPPED) |tests ran|Failure|lever" "$OUT/gpu_tests.log" | head -30
  if [ $rc -ne 0 ]; then echo "GPU tests failed: no benchmark on a wrong kernel"; exit $rc; fi
else
  shift
fi
[ "${1:-}" = "--tests-only" ] && exit 0
"$BIN/moetune_sm90_bench" --out "$OUT" "$@"
# Bring the recipe-mode CSV home: bench/csv_to_recipe.py turns it into recipes/h200.json.
