#!/usr/bin/env bash
# Runs on the device machine in one call: moetune_sm90_bench on shapes that no table or default
# rule was fitted to (models outside S1-S3), so the default rule and the search space are judged
# where a user without a tuned table lands. Per point the CSV has the sweep's best (time_us,
# config) and the default rule's time (default_us, default_config); --no-sweep times the defaults
# alone. Binaries from scripts/build_device.sh, carried in .devbin/.
# Usage: bench/run_h200_heldout.sh [bench options, e.g. --m 1,64,1024 --no-sweep]
#   HELDOUT: space-separated NAME=E,K,I,TOPK,ACT (default: the five below)
#   SHAPES: the built-in shapes to run too (default none; e.g. S1,S2,S3)
#   LIMIT_S: seconds for the bench (default 540)
set -uo pipefail
BIN=${BIN:-.devbin}
OUT=${OUT:-build/results}
mkdir -p "$OUT"
export MOETUNE_CACHE_DIR=${MOETUNE_CACHE_DIR:-/tmp/moetune-cache}
# Qwen3-235B-A22B, DeepSeek-V2-Lite, gpt-oss-120b (K = I = 2880: multiples of 64, not 128),
# Mixtral-8x22B, and an odd one (E = 40, I = 704 = 11 x 64, non-gated gelu_tanh).
HELDOUT=${HELDOUT:-"H1=128,4096,1536,8,silu H2=64,2048,1408,6,silu H3=128,2880,2880,4,silu H4=8,6144,16384,2,silu H5=40,1536,704,5,gelu_tanh"}
args=()
for s in $HELDOUT; do args+=(--shape "$s"); done
nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.max.sm,power.draw,power.limit \
  --format=csv 2>&1 | tee "$OUT/nvidia-smi.txt"
timeout -k 10 "${LIMIT_S:-540}" "$BIN/moetune_sm90_bench" --out "$OUT" \
  --shapes "${SHAPES:-none}" "${args[@]}" "$@" 2>&1 | tee "$OUT/heldout-bench.log" | tail -80
