#!/usr/bin/env bash
# Call 1: lever gemm2_block_ready (GEMM2 waits per align block on GEMM1's stored tiles, not on the
# whole GEMM1 grid, and walks its tiles dynamically) against off, and lever dynamic_tiles alone (the
# dynamic walk of both GEMMs without the early start), on the shipped recipe at the mid- and
# large-M points where both shipped GEMMs are cooperative tma_ws kernels (and the others, where
# the lever does not act: a check that it changes nothing there). One build (.devbin-a).
set -uo pipefail
cd "$(dirname "$0")/../../.."
OUT=${OUT:?}
nvidia-smi --query-gpu=name,clocks.sm,power.draw --format=csv
BIN=.devbin-a ROUNDS=2 SHAPES=S1,S2,S3 M=1024,2048,4096,8192 LIMIT_S=240 \
  ARMS="off=MOETUNE_LEVER_GEMM2_BLOCK_READY=off on=MOETUNE_LEVER_GEMM2_BLOCK_READY=on dyn=MOETUNE_LEVER_DYNAMIC_TILES=on" \
  OUT=$OUT/ab bash bench/run_h200_env_ab.sh 2>&1 | tail -45
