#!/usr/bin/env bash
# Call 4: 38041b5 (.devbin-f): the decode GPU tests call 3's budget cut, then the protocol run on
# the shipped recipe.
set -uo pipefail
cd "$(dirname "$0")/../../.."
OUT=${OUT:?}
timeout 200 .devbin-f/cuda_kernel_tests --gtest_filter='*Decode*' > $OUT/gpu-tests.log 2>&1
echo "gpu tests exit $? $(grep -E '^\[  (PASSED|FAILED) ' $OUT/gpu-tests.log | tr '\n' ' ')"
OUT=$OUT/run BIN=.devbin-f timeout 330 bash bench/run_h200.sh --no-tests --recipe recipes/h200.json \
  --no-sweep > $OUT/run.log 2>&1
echo "protocol run exit $?"
tail -45 $OUT/run.log
