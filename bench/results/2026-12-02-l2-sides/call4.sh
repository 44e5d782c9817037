#!/usr/bin/env bash
# Device call 4 (twenty-fourth session): call 1 again with cp.async and bulk-copy (TMA) readers: does a far
# line read by those also stay beside the reading side? (bench/l2_sides.cu, built in
# .devbin-s). Part B's kernels under ncu (clocks untouched).
set -u
cd "$(dirname "$0")/../../.." || exit 2
BIN=.devbin-s
mkdir -p "$OUT"
start=$(date +%s)
timeout -k 5 120 $BIN/l2_sides "$OUT/map.txt" > "$OUT/plain.txt" 2>&1
echo "plain rc $? after $(( $(date +%s) - start )) s"
timeout -k 5 240 ncu --clock-control none --kernel-name regex:read_kernel --metrics \
  lts__t_sectors_srcunit_ltcfabric.sum,lts__t_sectors_srcunit_tex.sum,dram__bytes_read.sum,gpu__time_duration.sum,lts__t_sectors_srcunit_ltcfabric_op_read.sum,lts__t_sector_hit_rate.pct \
  $BIN/l2_sides "$OUT/map2.txt" > "$OUT/ncu.txt" 2>&1
echo "ncu rc $? after $(( $(date +%s) - start )) s"
grep -E "^model|^map|^side|^latency|^threshold|^first|^B " "$OUT/plain.txt"
head -40 "$OUT/plain.txt" | tail -34
cmp -s "$OUT/map.txt" "$OUT/map2.txt" && echo "map stable across the two runs" || { echo "maps differ:"; cat "$OUT/map.txt" "$OUT/map2.txt"; }
grep -E "read_kernel|ltcfabric|srcunit_tex|dram__bytes|gpu__time|hit_rate" "$OUT/ncu.txt" | sed 's/  */ /g'
