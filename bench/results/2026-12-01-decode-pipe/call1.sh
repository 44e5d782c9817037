#!/usr/bin/env bash
# Device call 1 (eighteenth session): the decode kernels with the next step's weight loads issued
# before this step's dot products. A = b259a37, B = 62ae9ef (GEMM1 and GEMM2 pipelined), at M = 1,
# 4 on S1-S3 (shipped rows) and H1-H5 (default rule), 3 rounds, digests required equal. Carry
# .devbin-x (a/, b2/: the two bench binaries; the tree's 64 MiB carry limit leaves no room for
# more: B's GPU tests run in call 2, call2.sh).
set -u
start=$(date +%s)
H="--shape H1=128,4096,1536,8,silu --shape H2=64,2048,1408,6,silu --shape H3=128,2880,2880,4,silu --shape H4=8,6144,16384,2,silu --shape H5=40,1536,704,5,gelu_tanh"
BIN_A=.devbin-x/a BIN_B=.devbin-x/b2 ROUNDS=3 M=1,4 EXTRA="$H" LIMIT_S=90 \
  OUT=$OUT/b2 bash bench/run_h200_bin_ab.sh > $OUT/b2.log 2>&1
echo "A vs B exit $? after $(( $(date +%s) - start )) s"
cat $OUT/b2/summary.txt
