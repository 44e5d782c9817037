#!/usr/bin/env bash
# Device call (eighteenth session): the decode kernels with the next step's weight loads issued
# before this step's dot products. A = b259a37 (.devbin-s), B2 = 62ae9ef (GEMM1 and GEMM2
# pipelined, .devbin-b2), B1 = 9ccba8a (GEMM1 only, .devbin-b1). The decode GPU tests of B2
# first, then A vs B2 and A vs B1 at M = 1, 4 on S1-S3 (shipped rows) and H1-H5 (default rule),
# digests required equal. Carry .devbin-x (a/, b1/, b2/: the bench binaries, and B2's tests).
set -u
start=$(date +%s)
H="--shape H1=128,4096,1536,8,silu --shape H2=64,2048,1408,6,silu --shape H3=128,2880,2880,4,silu --shape H4=8,6144,16384,2,silu --shape H5=40,1536,704,5,gelu_tanh"
BIN_A=.devbin-x/a BIN_B=.devbin-x/b2 ROUNDS=2 M=1,4 EXTRA="$H" LIMIT_S=90 \
  TEST_FILTER='*MatchesFp64ReferenceOnSmallAndOdd*:*Decode*:*BenchmarkShapes*:*HandlesAllTokens*' \
  OUT=$OUT/b2 bash bench/run_h200_bin_ab.sh > $OUT/b2.log 2>&1
echo "A vs B2 exit $? after $(( $(date +%s) - start )) s"
BIN_A=.devbin-x/a BIN_B=.devbin-x/b1 ROUNDS=2 M=1,4 EXTRA="$H" LIMIT_S=60 FIRST=B \
  OUT=$OUT/b1 bash bench/run_h200_bin_ab.sh > $OUT/b1.log 2>&1
echo "A vs B1 exit $? after $(( $(date +%s) - start )) s"
grep "gpu tests" $OUT/b2.log
cat $OUT/b2/summary.txt $OUT/b1/summary.txt 2>/dev/null
