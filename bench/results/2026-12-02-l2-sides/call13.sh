#!/usr/bin/env bash
# Device call 13 (twenty-fourth session): does holding each stage until the next one lands (as the
# GEMMs' consumers do: k-tile kt - 1 is released after kt's wgmma is issued) cost the stream a
# stage in flight? bench/l2_stream_mix.cu (built in .devbin-s): the weights walked as the GEMMs
# walk them at K = 2688, stored (TMA boxes) with stages released at once or held, and packed, at
# r = 0 / 0.75 / 1.33; then call 10's table again.
set -u
cd "$(dirname "$0")/../../.." || exit 2
BIN=.devbin-s
mkdir -p "$OUT"
timeout -k 5 60 $BIN/l2_stream_mix > "$OUT/plain.txt" 2>&1
echo "plain rc $?"
head -20 "$OUT/plain.txt"
