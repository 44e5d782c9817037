#!/usr/bin/env bash
# Call 5: 38041b5 (.devbin-f): a decode-only sweep at M = 1 (S1-S3) and 4 (S2), to see whether the
# early w2 step moved which decode configs win; the shipped rows re-timed beside it
# (bench/run_h200_round.sh; one quick GPU test first).
set -uo pipefail
cd "$(dirname "$0")/../../.."
OUT=${OUT:?}
BIN=.devbin-f TEST_FILTER='Sm90Gather.DecodeW2Stage*' TESTS_S=45 SWEEP_S=240 RECIPE_S=80 \
  SWEEP_ARGS="--shapes S1,S2,S3 --m 1,4 --sweep-decode-only" RECIPE_ARGS="--shapes S1,S2,S3 --m 1,4" \
  OUT=$OUT bash bench/run_h200_round.sh 2>&1 | tail -20
