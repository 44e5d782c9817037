#!/usr/bin/env bash
# Device call 8 (twenty-fourth session): the weight stream beside L2-resident re-reads, no math
# (bench/l2_stream_mix.cu, built in .devbin-s): how many re-read bytes per DRAM byte can the SMs
# take before the stream slows, alone and in CTA pairs that share the re-read rows by multicast,
# with 4 stages of 16 KiB weights or 8 of 8 KiB? (Call 7: pairs at 4 stages half as fast even
# at r = 0.) It ran the file with a 64-bit modulo per stage, which call 9 removed.
set -u
cd "$(dirname "$0")/../../.." || exit 2
BIN=.devbin-s
mkdir -p "$OUT"
timeout -k 5 60 $BIN/l2_stream_mix > "$OUT/plain.txt" 2>&1
echo "plain rc $?"
cat "$OUT/plain.txt"
nvidia-smi --query-gpu=clocks.sm,clocks.mem,power.draw --format=csv >> "$OUT/plain.txt" 2>&1
