#!/usr/bin/env bash
# Call 2: the combine with 8 rows in flight (.devbin-new, lever route_in_gemm1 off as by default)
# against 34bfc66 (.devbin-base): bench/run_h200_bin_ab.sh at S1, S2 (top_k 6, 8), M = 4, 16, 64,
# 256, 1024, 3 rounds, same digests expected.
set -uo pipefail
cd "$(dirname "$0")/../../.."
OUT=${OUT:?}
BIN_A=.devbin-base BIN_B=.devbin-new ROUNDS=3 SHAPES=S1,S2 M=4,16,64,256,1024 LIMIT_S=100 \
  OUT=$OUT/ab bash bench/run_h200_bin_ab.sh 2>&1 | tail -40
