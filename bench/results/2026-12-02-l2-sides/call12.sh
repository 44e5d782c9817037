#!/usr/bin/env bash
# Device call 12 (twenty-fourth session): does the weights' layout cost the stream? The no-math
# stream of bench/l2_stream_mix.cu (built in .devbin-s) walking a [rows, K] bf16 matrix as the
# GEMMs do (CTA c: row blocks of 128 rows c, c + grid, ..., each block's k-tiles in order): as
# stored (TMA boxes of 128 rows x 128 bytes, 128-byte swizzle) or packed per k-tile (contiguous
# 16 KiB bulk copies), at K = 2688 / 2048 and r = 0 / 0.75 / 1.33; then call 10's table again.
# (It ran the file before call 13's hold variants.)
set -u
cd "$(dirname "$0")/../../.." || exit 2
BIN=.devbin-s
mkdir -p "$OUT"
timeout -k 5 60 $BIN/l2_stream_mix > "$OUT/plain.txt" 2>&1
echo "plain rc $?"
head -16 "$OUT/plain.txt"
