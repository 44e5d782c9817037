#!/usr/bin/env bash
# Call 2: the multi-CTA align's chunk size (ids per thread of its 256-thread CTAs: 8 = 2048 pairs
# per CTA, shipped; 4; 2) and its one-CTA threshold (4096 pairs, shipped; 1024), arms of one dev
# build (.devbin-b, host policy from MOETUNE_DEV_ALIGN_IDS / MOETUNE_DEV_ALIGN_ONE_CTA). First the
# align GPU test under the smallest and an odd chunk (the test's own M list; its bits must hold).
set -uo pipefail
cd "$(dirname "$0")/../../.."
OUT=${OUT:?}
nvidia-smi --query-gpu=name,clocks.sm,power.draw --format=csv
for ids in 2 3; do
  MOETUNE_DEV_ALIGN_IDS=$ids MOETUNE_DEV_ALIGN_ONE_CTA=256 timeout 150 .devbin-b/cuda_kernel_tests \
    --gtest_filter='Sm90Gather.MultiCtaAlignAndPdlLeversGiveTheSameBitsAsTheirOffPaths' \
    > $OUT/align-test-ids$ids.log 2>&1
  echo "align test ids=$ids one-cta<=256: exit $? $(grep -E '^\[  (PASSED|FAILED) ' $OUT/align-test-ids$ids.log | tr '\n' ' ')"
done
BIN=.devbin-b ROUNDS=3 SHAPES=S1,S2,S3 M=256,512,1024,2048,4096,16384 LIMIT_S=150 \
  ARMS="i8=MOETUNE_DEV_ALIGN_IDS=8 i4=MOETUNE_DEV_ALIGN_IDS=4 i2=MOETUNE_DEV_ALIGN_IDS=2 i2t=MOETUNE_DEV_ALIGN_IDS=2,MOETUNE_DEV_ALIGN_ONE_CTA=1024" \
  OUT=$OUT/ab bash bench/run_h200_env_ab.sh 2>&1 | tail -45
