#!/usr/bin/env bash
# Device call 2 (twenty-first session), binaries of b9efb65 (.devbin): the protocol run
# (bench/run_h200.sh: ceilings, every point of S1-S3, each pinned row and the default rule) of
# recipe-c.json = the shipped recipe with S1 M=16384's row from call 1's B arm (GEMM1 tma_ws
# 128 x 232 s5, GEMM2 tma_ws 128 x 224 s4: the M=8192 row's GEMMs).
set -u
cd "$(dirname "$0")/../../.." || exit 2
export MOETUNE_CACHE_DIR=/tmp/moetune-cache
start=$(date +%s)
mkdir -p "$OUT/candidate"
OUT=$OUT/candidate BIN=.devbin timeout 400 bash bench/run_h200.sh --no-tests \
  --recipe bench/results/2026-12-01-s1-rows/recipe-c.json --no-sweep > "$OUT/candidate/bench.log" 2>&1
echo "candidate rc $? after $(( $(date +%s) - start )) s"
grep -E "^ceilings|geomean|S1 M=16384|S1 M=8192" "$OUT/candidate/bench.log"
