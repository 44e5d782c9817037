#!/usr/bin/env bash
# Device call 6 (twenty-fourth session): the weight stream beside L2-resident re-reads, no math
# (bench/l2_stream_mix.cu, built in .devbin-s): how many re-read bytes per DRAM byte can the SMs
# take before the stream slows? (Call 6 ran the file before its pairs.)
set -u
cd "$(dirname "$0")/../../.." || exit 2
BIN=.devbin-s
mkdir -p "$OUT"
timeout -k 5 60 $BIN/l2_stream_mix > "$OUT/plain.txt" 2>&1
echo "plain rc $?"
cat "$OUT/plain.txt"
nvidia-smi --query-gpu=clocks.sm,clocks.mem,power.draw --format=csv >> "$OUT/plain.txt" 2>&1
