#!/usr/bin/env bash
# Call 3: the align policy of this change (align_chunks: as many chunks as a place CTA sums in one
# batch, 2..8 ids per thread; one CTA up to 2048 pairs) against the shipped one (8 ids per thread,
# one CTA up to 4096 pairs), arms of one dev build (.devbin-c, the shipped policy through the dev
# variables MOETUNE_DEV_ALIGN_IDS / MOETUNE_DEV_ALIGN_ONE_CTA). First the GPU tests that run align
# (the multi-CTA / PDL lever test, the odd-shape test at every edge M) under the new policy.
set -uo pipefail
cd "$(dirname "$0")/../../.."
OUT=${OUT:?}
nvidia-smi --query-gpu=name,clocks.sm,power.draw --format=csv
timeout 280 .devbin-c/cuda_kernel_tests \
  --gtest_filter='Sm90Gather.MultiCtaAlignAndPdlLeversGiveTheSameBitsAsTheirOffPaths:Sm90Gather.MatchesFp64ReferenceOnSmallAndOddShapesAtEveryEdgeM' \
  > $OUT/gpu-tests.log 2>&1
echo "gpu tests: exit $? $(grep -E '^\[  (PASSED|FAILED) ' $OUT/gpu-tests.log | tr '\n' ' ')"
BIN=.devbin-c ROUNDS=3 SHAPES=S1,S2,S3 M=256,512,1024,2048,4096,8192 LIMIT_S=150 \
  ARMS="ship=MOETUNE_DEV_ALIGN_IDS=8,MOETUNE_DEV_ALIGN_ONE_CTA=4096 new=MOETUNE_DEV_ALIGN_IDS=0" \
  OUT=$OUT/ab bash bench/run_h200_env_ab.sh 2>&1 | tail -40
