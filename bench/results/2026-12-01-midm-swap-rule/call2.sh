#!/usr/bin/env bash
# Device call 2 (seventeenth session): the default rule with swap-AB GEMMs at 48 < p <= 512 (DEV_MIDM
# a: GEMM2 swap-AB 128 rows x 192, 12 warps, 5 stages; b: GEMM2 swap-AB 256 x 128, 8 warps, 4
# stages; c: both GEMMs swap-AB 256 rows, 8 warps, 4 stages) against the rule as it is, no recipe
# (every point on the default rule), on S1, S2 and four held-out shapes at M = 1024, 2048, 4096.
# Carry .devbin-s.
set -u
start=$(date +%s)
export MOETUNE_CACHE_DIR=/tmp/mc
BIN=.devbin-s ARMS="def=DEV_NONE=1 a=DEV_MIDM=a b=DEV_MIDM=b c=DEV_MIDM=c" RECIPE=none DIGESTS=any \
  SHAPES=S1,S2 EXTRA="--shape H1=128,4096,1536,8,silu --shape H2=64,2048,1408,6,silu --shape H3=128,2880,2880,4,silu --shape H5=40,1536,704,5,gelu_tanh" \
  M=1024,2048,4096 ROUNDS=2 LIMIT_S=150 OUT=$OUT/ab bash bench/run_h200_env_ab.sh > $OUT/ab.log 2>&1
echo "ab exit $? after $(( $(date +%s) - start )) s"
cat $OUT/ab.log | grep -v "^shp\|^S\|^H\|per round" | head -20
cat $OUT/ab/summary.txt
