#!/usr/bin/env bash
# Device call 3 (eighteenth session): swap-AB at 256 pairs per tile beyond the p <= 224 band it is
# shipped in (an expert's pairs in ceil(p / 256) tiles, the wgmma N per tile: less padding and
# fewer weight reloads than 128-row tiles). The shipped recipe (A) against both GEMMs swap-AB 256
# (recipe-swap256.json) and against GEMM2 swap-AB 256 under the shipped tma_ws GEMM1 of 128 rows
# (recipe-g2swap256.json), at S1 M >= 8192, S2 M >= 4096, S3 M >= 2048. A B A B each.
# Carry .devbin-s.
set -u
start=$(date +%s)
D=bench/results/2026-12-01-tile192-split-n
export MOETUNE_CACHE_DIR=/tmp/mc
for v in swap256 g2swap256; do
  BIN=.devbin-s RUN_S=120 OUT=$OUT/$v bash bench/run_h200_recipe_ab.sh recipes/h200.json \
    $D/recipe-$v.json --shapes S1,S2,S3 --m 2048,4096,8192,16384 > $OUT/$v.log 2>&1
  echo "== $v: exit $? after $(( $(date +%s) - start )) s"
  tail -13 $OUT/$v.log
done
