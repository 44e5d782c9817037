#!/usr/bin/env bash
# Call 2: loads issued early in the decode kernels (dev macro MOETUNE_DECODE_EARLY = 10 g1 + g2;
# g2: steps of w2 loads GEMM2's warps issue before their wait on GEMM1; g1 1: GEMM1's first step of
# w1 loads into registers once the expert is known, 2: that step's lines prefetched into L2), arms
# of one build (.devbin-e) through MOETUNE_DEV_NVRTC_DEFINES, at the decode points; the decode GPU
# tests first, with each arm's macro.
set -uo pipefail
cd "$(dirname "$0")/../../.."
OUT=${OUT:?}
nvidia-smi --query-gpu=name,clocks.sm,power.draw --format=csv
for v in 3 22; do
  MOETUNE_DEV_NVRTC_DEFINES=MOETUNE_DECODE_EARLY=$v timeout 150 .devbin-e/cuda_kernel_tests \
    --gtest_filter='*Decode*:*EdgeM*' > $OUT/tests-$v.log 2>&1
  echo "tests EARLY=$v: exit $? $(grep -E '^\[  (PASSED|FAILED) ' $OUT/tests-$v.log | tr '\n' ' ')"
done
a() { echo "$1=MOETUNE_DEV_NVRTC_DEFINES=MOETUNE_DECODE_EARLY=$2"; }
BIN=.devbin-e ROUNDS=3 SHAPES=S1,S2,S3 M=1,4 LIMIT_S=120 \
  EXTRA="--shape H1=128,4096,1536,8,silu --shape H2=64,2048,1408,6,silu --shape H3=128,2880,2880,4,silu --shape H5=40,1536,704,5,gelu_tanh" \
  ARMS="$(a off 0) $(a e1 1) $(a e2 2) $(a e3 3) $(a g1r 10) $(a g1p 20) $(a g1p_e2 22)" \
  OUT=$OUT/ab bash bench/run_h200_env_ab.sh 2>&1 | tail -70
