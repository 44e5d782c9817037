#!/usr/bin/env bash
# Device call 3 (twenty-fourth session): did the side walk cut what crosses the L2 fabric? ncu
# (clocks untouched) of the GEMMs of arms A (shipped) and D (side walk on every persistent GEMM:
# the map plus lever dynamic_tiles) of call 2 at S2 M=2048 and S1 M=4096, and of C (dynamic_tiles
# alone) at S2 M=2048. Binaries in .devbin-s.
set -u
cd "$(dirname "$0")/../../.." || exit 2
export MOETUNE_CACHE_DIR=/tmp/moetune-cache
BIN=.devbin-s
mkdir -p "$OUT"
start=$(date +%s)
timeout -k 5 60 $BIN/l2_sides "$OUT/map.txt" > "$OUT/l2_sides.txt" 2>&1
MAP=$(cat "$OUT/map.txt")
envs() {
  case $1 in
    A) echo "MOETUNE_CACHE_DIR=/tmp/moetune-cache";;
    C) echo "MOETUNE_LEVER_DYNAMIC_TILES=on";;
    D) echo "MOETUNE_DEV_L2_SIDE_MAP=$MAP MOETUNE_LEVER_DYNAMIC_TILES=on";;
  esac
}
for spec in A:S2:2048 D:S2:2048 C:S2:2048 A:S1:4096 D:S1:4096; do
  IFS=: read -r a sh m <<< "$spec"
  env $(envs $a) timeout -k 5 120 ncu --clock-control none --target-processes all \
    --kernel-name regex:gemm --launch-count 2 --metrics \
    gpu__time_duration.sum,dram__bytes_read.sum,lts__t_sectors_srcunit_ltcfabric.sum,lts__t_sectors_srcunit_tex.sum,lts__ltcfabric2ltc_cycles_active.avg.pct_of_peak_sustained_elapsed,dram__throughput.avg.pct_of_peak_sustained_elapsed,lts__t_sectors_srcunit_tex_lookup_hit.sum \
    $BIN/moetune_sm90_bench --recipe recipes/h200.json --shapes $sh --m $m --no-sweep \
    --out /tmp/bo > "$OUT/ncu-$a-$sh-$m.txt" 2> /dev/null
  echo "ncu $spec rc $? after $(( $(date +%s) - start )) s"
  echo "== arm $a $sh $m" >> "$OUT/ncu-summary.txt"
  grep -E "^  void|^    (lts__|dram__|gpu__)" "$OUT/ncu-$a-$sh-$m.txt" | sed 's/  */ /g' \
    | cut -c1-90 >> "$OUT/ncu-summary.txt"
done
cat "$OUT/ncu-summary.txt"
