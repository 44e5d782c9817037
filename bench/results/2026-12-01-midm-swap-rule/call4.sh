#!/usr/bin/env bash
# Device call 4 (seventeenth session): the committed rule (321ff0c, BIN_B=.devbin-s) against the
# rule before (the DEV build with no DEV_MIDM, BIN_A=.devbin-old), no recipe, out of sample: shapes
# the bands were not fitted on, at points where the new rule changes the config. The swap-AB and
# benchmark-shape GPU tests of build B first. Carry .devbin-s and .devbin-old.
set -u
start=$(date +%s)
export MOETUNE_CACHE_DIR=/tmp/mc
# DBRX-like; Qwen2-57B-A14B; Phi-3.5-MoE; OLMoE.
D1="--shape D1=16,6144,10752,4,silu" Q2="--shape Q2=64,3584,2560,8,silu"
P3="--shape P3=16,4096,6400,2,silu" OL="--shape OL=64,2048,1024,8,silu"
BIN_A=.devbin-old BIN_B=.devbin-s RECIPE=none DIGESTS=any ROUNDS=2 SHAPES=none EXTRA="$D1" \
  M=256,384,768 TEST_FILTER='*SwapAb*:*BenchmarkShapes*' LIMIT_S=120 OUT=$OUT/g1 \
  bash bench/run_h200_bin_ab.sh > $OUT/g1.log 2>&1
echo "g1 exit $? after $(( $(date +%s) - start )) s"
BIN_A=.devbin-old BIN_B=.devbin-s RECIPE=none DIGESTS=any ROUNDS=2 SHAPES=none \
  EXTRA="$Q2 $P3 $OL" M=512,768,1536 LIMIT_S=120 OUT=$OUT/g2 \
  bash bench/run_h200_bin_ab.sh > $OUT/g2.log 2>&1
echo "g2 exit $? after $(( $(date +%s) - start )) s"
grep -h "gpu tests" $OUT/g1.log
cat $OUT/g1/summary.txt $OUT/g2/summary.txt
