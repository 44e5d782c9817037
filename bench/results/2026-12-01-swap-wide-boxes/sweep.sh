#!/usr/bin/env bash
# The bench's sweep (each GEMM's candidates timed alone against its group's base partner, then the
# best pair timed as a layer) at the points whose experts hold 96-320 pairs, where the group of 256
# now offers swap-AB GEMM1s (e6f06ea), to see whether the search picks them.
#   OUT=$OUT BIN=.devbin bash bench/results/2026-12-01-swap-wide-boxes/sweep.sh
set -u
cd "$(dirname "$0")/../../.." || exit 2
BIN=${BIN:-.devbin}
export MOETUNE_CACHE_DIR=/tmp/moetune-cache
timeout -k 10 "${LIMIT_S:-400}" "$BIN/moetune_sm90_bench" --out "$OUT" --shapes S1,S2,S3 \
  --m "${M:-512,1024,2048,4096,8192}" > "$OUT/sweep-bench.log" 2>&1
echo "bench rc $?"
grep -E "^S[123] M=|ceilings" "$OUT/sweep-bench.log"
