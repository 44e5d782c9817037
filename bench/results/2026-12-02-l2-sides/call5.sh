#!/usr/bin/env bash
# Device call 5 (twenty-fourth session): how long does the reading side's copy of a far line last
# against other traffic? bench/l2_sides.cu part C under ncu: 16 side-0 readers read 8 MiB, 0-48
# MiB stream through L2 (every SM, or side 1 only), then the readers read the 8 MiB again; the
# second read's fabric sectors and DRAM bytes. Binaries in .devbin-s.
set -u
cd "$(dirname "$0")/../../.." || exit 2
BIN=.devbin-s
mkdir -p "$OUT"
start=$(date +%s)
timeout -k 5 240 ncu --clock-control none --kernel-name regex:reread_kernel --metrics \
  lts__t_sectors_srcunit_ltcfabric.sum,lts__t_sectors_srcunit_tex.sum,dram__bytes_read.sum,gpu__time_duration.sum,lts__t_sector_hit_rate.pct \
  --cache-control none --replay-mode application $BIN/l2_sides "$OUT/map.txt" > "$OUT/ncu.txt" 2>&1
echo "ncu rc $? after $(( $(date +%s) - start )) s"
grep -E "^C |^map|^side" "$OUT/ncu.txt"
grep -E "reread_kernel|ltcfabric|srcunit_tex|dram__bytes|gpu__time|hit_rate" "$OUT/ncu.txt" | sed 's/  */ /g'
