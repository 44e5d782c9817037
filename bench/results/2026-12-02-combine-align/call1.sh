#!/usr/bin/env bash
# Call 1: the combine with its token's rows in flight and the one-CTA align in three barriers
# (.devbin-b) against the committed kernels (.devbin-a, 952bed7), same recipe, same bits expected:
# bench/run_h200_bin_ab.sh at S1-S3, M = 4..512 (align and combine launches) and 4096 / 16384
# (the combine at large M), 3 rounds.
set -uo pipefail
cd "$(dirname "$0")/../../.."
OUT=${OUT:?}
nvidia-smi --query-gpu=name,driver_version,clocks.sm,power.draw --format=csv
BIN_A=.devbin-a BIN_B=.devbin-b ROUNDS=3 SHAPES=S1,S2,S3 M=4,16,64,256,512,4096,16384 LIMIT_S=150 \
  OUT=$OUT/ab bash bench/run_h200_bin_ab.sh 2>&1 | tail -60
