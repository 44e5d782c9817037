#!/usr/bin/env bash
# The bench's unrestricted sweep at M=4096 on S1-S3, the first run of 7d4cde8's rule (the default
# config's layer is the incumbent: a space's winning pair must beat it, timed the same way).
#   OUT=$OUT BIN=.devbin-s bash bench/results/2026-12-01-sweep-incumbent/run.sh
set -u
cd "$(dirname "$0")/../../.." || exit 2
BIN=${BIN:-.devbin}
export MOETUNE_CACHE_DIR=/tmp/moetune-cache
timeout -k 10 "${LIMIT_S:-420}" "$BIN/moetune_sm90_bench" --out "$OUT" --shapes S1,S2,S3 \
  --m "${M:-4096}" > "$OUT/sweep-bench.log" 2>&1
echo "bench rc $?"
grep -E "^S[123] M=|^S[123] +[0-9]|ceilings|incumbent|default" "$OUT/sweep-bench.log" | head -30
