#!/usr/bin/env bash
# Call 4: 5b55655 (.devbin-d): the shipped rows at the bandwidth-bound points that miss their
# point targets (S2 M=4, 16, 256, 512; S3 M=128, 256) re-tuned with each shipped row as the
# incumbent (bench/run_h200_retune.sh, retune-recipe.json), then A B A B of any changed row.
set -uo pipefail
cd "$(dirname "$0")/../../.."
OUT=${OUT:?}
BIN=.devbin-d TUNE_S=300 OUT=$OUT/retune bash bench/run_h200_retune.sh \
  bench/results/2026-12-02-combine-align/retune-recipe.json 2>&1 | tail -40
