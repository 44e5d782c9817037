#!/usr/bin/env bash
# Device call 8 (seventeenth session): the 192-row band's pair (GEMM1 swap-AB 192, GEMM2 tma_ws
# 192) at p = 128 where the rule's I >= 16 p refuses it (S2 and Qwen3-235B at M = 2048,
# DeepSeek-V2-Lite at M = 1365), pinned by c192-p128.json, against the default rule timed in the
# same run (the CSV's default_us); the held-out sweep (sweep/) picked it at Qwen3-235B M = 2048.
# Two runs each. Carry .devbin-s (BIN).
set -u
cd "$(dirname "$0")/../../.." || exit 2
export MOETUNE_CACHE_DIR=/tmp/mc
BIN=${BIN:-.devbin}
R=bench/results/2026-12-01-midm-swap-rule/c192-p128.json
mkdir -p "$OUT/c192"
for r in 1 2; do
  timeout 90 "$BIN/moetune_sm90_bench" --recipe $R --shapes S2 --shape H1=128,4096,1536,8,silu \
    --m 2048 --no-sweep --out "$OUT/c192/a$r" > "$OUT/c192/a$r.log" 2>&1
  timeout 60 "$BIN/moetune_sm90_bench" --recipe $R --shapes none --shape H2=64,2048,1408,6,silu \
    --m 1365 --no-sweep --out "$OUT/c192/b$r" > "$OUT/c192/b$r.log" 2>&1
  grep -hE "M=" "$OUT/c192/a$r.log" "$OUT/c192/b$r.log"
done
tar czf "$OUT/c192.tgz" -C "$OUT" c192 && rm -rf "$OUT/c192"
