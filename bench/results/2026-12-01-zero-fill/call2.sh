#!/usr/bin/env bash
# Device call 2 (twentieth session): call 1's change kept in the tma_ws GEMM1 gather only (the
# cp.async main loop and the swap-AB gather back as they were). Build A: .devbin-a (d0d3d96);
# build B: .devbin. No GPU tests (call 1 ran them on the same tma_ws code); bench/run_h200_bin_ab.sh
# at the points whose shipped GEMM1 is a gathering tma_ws kernel, 3 rounds, digests must be equal.
set -u
cd "$(dirname "$0")/../../.." || exit 2
start=$(date +%s)
BIN_A=.devbin-a BIN_B=.devbin SHAPES=${SHAPES:-S1,S2,S3} M=${M:-256,512,1024,2048,4096,8192} \
  ROUNDS=3 LIMIT_S=100 OUT=$OUT bash bench/run_h200_bin_ab.sh
echo "bin ab rc $? after $(( $(date +%s) - start )) s"
