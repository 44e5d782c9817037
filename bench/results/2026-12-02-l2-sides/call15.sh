#!/usr/bin/env bash
# Device call 15 (twenty-fourth session): the committed tools as CMake builds them (targets
# moetune_l2_sides and moetune_l2_stream_mix, after the refactor that folded their repeated load
# and timing code; built in .devbin-t), run once each; again after both moved onto the GEMMs'
# primitives (sm90_tma.cuh) and a shared header (bench/l2_probe.cuh).
set -u
cd "$(dirname "$0")/../../.." || exit 2
BIN=.devbin-t
mkdir -p "$OUT"
timeout -k 5 60 $BIN/moetune_l2_sides "$OUT/map.txt" > "$OUT/l2_sides.txt" 2>&1
echo "l2_sides rc $?"
grep -E "^(model|side 0|B |C )" "$OUT/l2_sides.txt"
timeout -k 5 60 $BIN/moetune_l2_stream_mix > "$OUT/l2_stream_mix.txt" 2>&1
echo "l2_stream_mix rc $?"
cat "$OUT/l2_stream_mix.txt"
