#!/usr/bin/env bash
# Device call 2 (twenty-sixth session): where the one-CTA align should hand over to the two
# launches. Build B (.devbin-b) with MOETUNE_DEV_ALIGN_SINGLE_CTA_PAIRS at 4096 (the shipped
# threshold), 2048 and 1024, at S1-S3 M = 128..2048 (768 .. 4096 pairs at S1 / S2 M <= 512, S3's
# 256 .. 4096), bench/run_h200_env_ab.sh, 2 rounds, digests must be equal.
set -u
cd "$(dirname "$0")/../../.." || exit 2
start=$(date +%s)
BIN=.devbin-b ARMS="t4096=MOETUNE_DEV_ALIGN_SINGLE_CTA_PAIRS=4096 t2048=MOETUNE_DEV_ALIGN_SINGLE_CTA_PAIRS=2048 t1024=MOETUNE_DEV_ALIGN_SINGLE_CTA_PAIRS=1024" \
  SHAPES=S1,S2,S3 M=128,256,512,1024,2048 ROUNDS=2 LIMIT_S=90 OUT=$OUT bash bench/run_h200_env_ab.sh
echo "env ab rc $? after $(( $(date +%s) - start )) s"
