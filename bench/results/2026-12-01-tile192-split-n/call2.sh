#!/usr/bin/env bash
# Device call 2 (eighteenth session): S3 at M = 2048..16384, the shipped recipe (A) against three
# variants of both GEMMs at block_m 192 on two warpgroups (GEMM1 192 x 96, 4 stages): GEMM2 192 x
# 192 s4 (recipe-192n.json, call 1's B again), 192 x 128 s5, 192 x 208 s4. A B A B each.
# Carry .devbin-s.
set -u
start=$(date +%s)
D=bench/results/2026-12-01-tile192-split-n
export MOETUNE_CACHE_DIR=/tmp/mc
for v in 192n 192n-g2n128s5 192n-g2n208; do
  BIN=.devbin-s RUN_S=100 OUT=$OUT/$v bash bench/run_h200_recipe_ab.sh recipes/h200.json \
    $D/recipe-$v.json --shapes S3 --m 2048,4096,8192,16384 > $OUT/$v.log 2>&1
  echo "== $v: exit $? after $(( $(date +%s) - start )) s"
  tail -5 $OUT/$v.log
done
