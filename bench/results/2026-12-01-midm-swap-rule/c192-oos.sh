#!/usr/bin/env bash
# Device call 9 (seventeenth session): as c192.sh, out of sample: OLMoE at M = 1024 (p = 128,
# I = 1024 = 8 p) and DeepSeek-V2-like (E 160, K 5120, I 1536, top-6) at M = 3413 (p = 128).
# Carry .devbin-s (BIN).
set -u
cd "$(dirname "$0")/../../.." || exit 2
export MOETUNE_CACHE_DIR=/tmp/mc
BIN=${BIN:-.devbin}
R=bench/results/2026-12-01-midm-swap-rule/c192-p128-oos.json
mkdir -p "$OUT/oos"
for r in 1 2; do
  timeout 60 "$BIN/moetune_sm90_bench" --recipe $R --shapes none --shape OL=64,2048,1024,8,silu \
    --m 1024 --no-sweep --out "$OUT/oos/a$r" > "$OUT/oos/a$r.log" 2>&1
  timeout 90 "$BIN/moetune_sm90_bench" --recipe $R --shapes none --shape DV2=160,5120,1536,6,silu \
    --m 3413 --no-sweep --out "$OUT/oos/b$r" > "$OUT/oos/b$r.log" 2>&1
  grep -hE "M=" "$OUT/oos/a$r.log" "$OUT/oos/b$r.log"
done
tar czf "$OUT/oos.tgz" -C "$OUT" oos && rm -rf "$OUT/oos"
