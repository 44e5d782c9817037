#!/usr/bin/env bash
# Call 1: the decode kernels' L2 bulk prefetches (dev macro MOETUNE_DECODE_PF, a bit mask: 1 GEMM1's
# w1 rows once the expert is known, 2 its x row, 4 GEMM2's w2 rows before its wait on GEMM1; 8:
# GEMM2's first step of w2 loads into registers before that wait),
# arms of one build (.devbin-e) through MOETUNE_DEV_NVRTC_DEFINES, at the decode points.
set -uo pipefail
cd "$(dirname "$0")/../../.."
OUT=${OUT:?}
nvidia-smi --query-gpu=name,clocks.sm,power.draw --format=csv
BIN=.devbin-e ROUNDS=3 SHAPES=S1,S2,S3 M=1,4 LIMIT_S=120 \
  EXTRA="--shape H1=128,4096,1536,8,silu --shape H2=64,2048,1408,6,silu" \
  ARMS="off=MOETUNE_DEV_NVRTC_DEFINES= pf1=MOETUNE_DEV_NVRTC_DEFINES=MOETUNE_DECODE_PF=1 pf3=MOETUNE_DEV_NVRTC_DEFINES=MOETUNE_DECODE_PF=3 pf4=MOETUNE_DEV_NVRTC_DEFINES=MOETUNE_DECODE_PF=4 pf8=MOETUNE_DEV_NVRTC_DEFINES=MOETUNE_DECODE_PF=8 pf11=MOETUNE_DEV_NVRTC_DEFINES=MOETUNE_DECODE_PF=11" \
  OUT=$OUT/ab bash bench/run_h200_env_ab.sh 2>&1 | tail -40
