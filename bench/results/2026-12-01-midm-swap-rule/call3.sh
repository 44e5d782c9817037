#!/usr/bin/env bash
# Device call 3 (seventeenth session): arms def / a / c of call 2 (DEV_MIDM, no recipe) at more
# points of p = 64, 96 and 192 pairs per expert, four groups of shapes with their own M lists:
# S3 + Mixtral-8x22B (H4) at M 256/384/768, the E = 40 gelu shape (H5) at 512/768/1536, S1 + S2 +
# Qwen3-235B (H1) at 1536/3072, gpt-oss-120b (H3) + DeepSeek-V2-Lite (H2) at 672/3072/6144.
# Carry .devbin-s.
set -u
start=$(date +%s)
export MOETUNE_CACHE_DIR=/tmp/mc
H1="--shape H1=128,4096,1536,8,silu" H2="--shape H2=64,2048,1408,6,silu"
H3="--shape H3=128,2880,2880,4,silu" H4="--shape H4=8,6144,16384,2,silu"
H5="--shape H5=40,1536,704,5,gelu_tanh"
run() {  # NAME SHAPES EXTRA M
  BIN=.devbin-s ARMS="def=DEV_NONE=1 a=DEV_MIDM=a c=DEV_MIDM=c" RECIPE=none DIGESTS=any \
    SHAPES=$2 EXTRA="$3" M=$4 ROUNDS=2 LIMIT_S=100 OUT=$OUT/$1 bash bench/run_h200_env_ab.sh \
    > $OUT/$1.log 2>&1
  echo "$1 exit $? after $(( $(date +%s) - start )) s"
}
run g1 S3 "$H4" 256,384,768
run g2 none "$H5" 512,768,1536
run g3 S1,S2 "$H1" 1536,3072
run g4 none "$H3 $H2" 672,3072,6144
for g in g1 g2 g3 g4; do cat $OUT/$g/summary.txt | grep -v "per round"; done
