#!/usr/bin/env bash
# Device call 1 (twentieth session): padding rows' zeros stored into shared memory instead of a
# cp.async of src-size 0 to one fixed address (sm90_common.cuh cp_async_16_or_zero; the cp.async
# main loop's A and B rows, the tma_ws GEMM1 gather, the swap-AB block_m 64 gather). Same bits
# expected. Build A: .devbin-a (d0d3d96, kernels as c0199b0's); build B: .devbin (the change).
# GPU tests of build B (the odd-shape fp64 test at every edge M, all tokens on one expert, the
# benchmark shapes, swap-AB), then bench/run_h200_bin_ab.sh at the mid-M points of S1-S3 on the
# shipped recipe, 2 rounds, digests must be equal.
set -u
cd "$(dirname "$0")/../../.." || exit 2
start=$(date +%s)
TEST_FILTER='Sm90Gather.MatchesFp64*:Sm90Gather.HandlesAll*:Sm90Gather.BenchmarkShapes*:Sm90Gather.SwapAb*' \
  BIN_A=.devbin-a BIN_B=.devbin SHAPES=S1,S2,S3 M=${M:-64,256,512,1024,2048,4096} ROUNDS=2 \
  LIMIT_S=110 OUT=$OUT bash bench/run_h200_bin_ab.sh
echo "bin ab rc $? after $(( $(date +%s) - start )) s"
