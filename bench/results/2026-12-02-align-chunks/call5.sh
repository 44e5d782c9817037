#!/usr/bin/env bash
# Call 5: fe8f5cb (.devbin-e, the final align policy: the smaller chunks only up to 32768 pairs):
# the two GPU tests that run the multi-CTA align, then the protocol run on the shipped recipe.
set -uo pipefail
cd "$(dirname "$0")/../../.."
OUT=${OUT:?}
timeout 150 .devbin-e/cuda_kernel_tests \
  --gtest_filter='Sm90Gather.MultiCtaAlignAndPdlLeversGiveTheSameBitsAsTheirOffPaths:Sm90Gather.MatchesFp64ReferenceOnSmallAndOddShapesAtEveryEdgeM' \
  > $OUT/gpu-tests.log 2>&1
echo "gpu tests: exit $? $(grep -E '^\[  (PASSED|FAILED) ' $OUT/gpu-tests.log | tr '\n' ' ')"
OUT=$OUT/run BIN=.devbin-e timeout 330 bash bench/run_h200.sh --no-tests --recipe recipes/h200.json \
  --no-sweep > $OUT/run.log 2>&1
echo "protocol run exit $?"
tail -42 $OUT/run.log
