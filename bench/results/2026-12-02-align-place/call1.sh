#!/usr/bin/env bash
# Device call 1 (twenty-sixth session): the multi-CTA align in two launches (count, place) against
# the three of before (count, scan, scatter). Build A: .devbin-a (3c4eba7); build B: .devbin-b
# (the place kernel). GPU tests of B first (the align/PDL lever test with its new E = 8 / 300
# shapes, odd shapes at every edge M, all tokens on one expert, 256-row tiles over GEMM1
# sub-blocks), then bench/run_h200_bin_ab.sh at M = 1024..16384 (S3 M = 1024 / 2048 run the
# one-CTA align in both builds: a null control), 3 rounds, digests must be equal.
set -u
cd "$(dirname "$0")/../../.." || exit 2
start=$(date +%s)
mkdir -p "$OUT"
MOETUNE_CACHE_DIR=/tmp/cache-tests timeout -k 5 200 .devbin-b/cuda_kernel_tests \
  --gtest_filter='Sm90Gather.MultiCtaAlign*:Sm90Gather.MatchesFp64ReferenceOnSmallAndOddShapesAtEveryEdgeM:Sm90Gather.HandlesAllTokens*:Sm90Gather.Tile256*' \
  > "$OUT/gpu_tests.log" 2>&1
echo "tests rc $? after $(( $(date +%s) - start )) s"
grep -E '^\[  (PASSED|FAILED) |^\[       OK|^\[  FAILED' "$OUT/gpu_tests.log" | head -20
BIN_A=.devbin-a BIN_B=.devbin-b SHAPES=S1,S2,S3 M=1024,2048,4096,8192,16384 \
  ROUNDS=3 LIMIT_S=90 OUT=$OUT/ab bash bench/run_h200_bin_ab.sh
echo "bin ab rc $? after $(( $(date +%s) - start )) s"
