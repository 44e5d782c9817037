#!/usr/bin/env bash
# Call 3: 5b55655 (.devbin-d, the committed combine and align): the GPU tests that run the one-CTA
# align's register path (edge M on odd shapes against fp64, split-K GEMM2 through the combine;
# all tokens on one expert; GEMM1 sub-blocks under GEMM2 256; the multi-CTA align against the
# one-CTA one), then the protocol run on the shipped recipe.
set -uo pipefail
cd "$(dirname "$0")/../../.."
OUT=${OUT:?}
export MOETUNE_CACHE_DIR=$(mktemp -d)
timeout 200 .devbin-d/cuda_kernel_tests \
  --gtest_filter='Sm90Gather.MatchesFp64ReferenceOnSmallAndOddShapesAtEveryEdgeM' \
  > $OUT/gpu-tests-1.log 2>&1
echo "gpu tests 1: exit $? $(grep -E '^\[  (PASSED|FAILED) ' $OUT/gpu-tests-1.log | tr '\n' ' ')"
timeout 120 .devbin-d/cuda_kernel_tests \
  --gtest_filter='Sm90Gather.HandlesAllTokensOnOneExpertAndTopK1:Sm90Gather.Tile256SkipsPaddingHalvesAndGivesTheBitsOfTile128:Sm90Gather.MultiCtaAlignAndPdlLeversGiveTheSameBitsAsTheirOffPaths' \
  > $OUT/gpu-tests-2.log 2>&1
echo "gpu tests 2: exit $? $(grep -E '^\[  (PASSED|FAILED) |^\[       OK|^\[  FAILED' $OUT/gpu-tests-2.log | tr '\n' ' ')"
OUT=$OUT/run BIN=.devbin-d timeout 270 bash bench/run_h200.sh --no-tests --recipe recipes/h200.json \
  --no-sweep > $OUT/run.log 2>&1
echo "protocol run exit $?"
tail -42 $OUT/run.log
