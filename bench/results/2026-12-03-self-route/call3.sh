#!/usr/bin/env bash
# Call 3: c99661d (.devbin-new): mma.sync tiles at a block sized to the experts' pairs (block_m
# 48 / 80 / 96 offered beside the powers of two). First the GPU tests that run the poisoned
# workspace over every kind of config (edge M on odd shapes, now with mma.sync block_m 48 and a
# top_k 8 shape; all tokens on one expert; the multi-CTA align lever), then the shipped rows of
# S1 / S2 M = 512, 1024 and S3 M = 128, 256 re-tuned with each shipped row as the incumbent
# (bench/run_h200_retune.sh retune-recipe.json), and A B A B of any changed row.
set -uo pipefail
cd "$(dirname "$0")/../../.."
OUT=${OUT:?}
export MOETUNE_CACHE_DIR=$(mktemp -d)
timeout -k 5 230 .devbin-new/cuda_kernel_tests \
  --gtest_filter='Sm90Gather.MatchesFp64ReferenceOnSmallAndOddShapesAtEveryEdgeM:Sm90Gather.HandlesAllTokensOnOneExpertAndTopK1:Sm90Gather.MultiCtaAlignAndPdlLeversGiveTheSameBitsAsTheirOffPaths' \
  > $OUT/gpu-tests.log 2>&1
echo "gpu tests: exit $? $(grep -E '^\[       OK|^\[  FAILED|^\[  PASSED' $OUT/gpu-tests.log | tr '\n' ' ')"
grep -E "Failure|Expected|Which is|differ" $OUT/gpu-tests.log | head -10
BIN=.devbin-new TUNE_S=250 OUT=$OUT/retune timeout 330 bash bench/run_h200_retune.sh \
  bench/results/2026-12-03-self-route/retune-recipe.json 2>&1 | tail -40
