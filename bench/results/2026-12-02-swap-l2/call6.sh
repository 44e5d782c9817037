#!/usr/bin/env bash
# Device call 6 (twenty-third session): does the raster (group_m) move what crosses the L2 fabric,
# and the time with it? Arms (config only): A = the shipped recipe; Gn = recipe-gN.json, both GEMMs
# at group_m N (1, 2, 4, 16, 32) at S1 / S2 M = 2048 / 4096 (shipped: tma_ws g8, swap-AB g1).
# 2 rounds, rotated, of moetune_sm90_bench at those 4 points; then ncu (fabric, DRAM, L2 sectors)
# of every arm at S2 M=2048. Binaries in .devbin-h (e2ffd40; kernels as shipped).
set -u
cd "$(dirname "$0")/../../.." || exit 2
export MOETUNE_CACHE_DIR=/tmp/moetune-cache
BIN=.devbin-h
R=bench/results/2026-12-02-swap-l2
work=$(mktemp -d)
mkdir -p "$work/runs" "$OUT"
start=$(date +%s)
arms=(A G1 G2 G4 G16 G32)
recipe() { case $1 in A) echo recipes/h200.json;; *) echo "$R/recipe-g${1#G}.json";; esac; }
for r in 1 2; do
  for j in 0 1 2 3 4 5; do
    a=${arms[$(( (j + 3 * (r - 1)) % 6 ))]}
    timeout -k 5 120 $BIN/moetune_sm90_bench --recipe "$(recipe $a)" --shapes S1,S2 \
      --m 2048,4096 --no-sweep --out "$work/runs/$a-$r" > "$work/runs/$a-$r.log" 2>&1
    echo "round $r arm $a rc $? after $(( $(date +%s) - start )) s"
  done
done
tar czf "$OUT/runs.tgz" -C "$work" runs
python3 bench/ab_summary.py "$work/runs" 2 any "${arms[@]}" > "$OUT/summary.txt"
for a in "${arms[@]}"; do
  timeout -k 5 60 ncu --clock-control none --target-processes all --kernel-name regex:gemm \
    --launch-count 2 --metrics gpu__time_duration.sum,dram__bytes_read.sum,lts__t_sectors_srcunit_ltcfabric.sum,lts__t_sectors_srcunit_tex.sum,lts__ltcfabric2ltc_cycles_active.avg.pct_of_peak_sustained_elapsed,dram__throughput.avg.pct_of_peak_sustained_elapsed \
    $BIN/moetune_sm90_bench --recipe "$(recipe $a)" --shapes S2 --m 2048 --no-sweep --out /tmp/bo \
    > "$work/ncu-$a.txt" 2> /dev/null
  echo "ncu $a rc $? after $(( $(date +%s) - start )) s"
  echo "== arm $a S2:2048" >> "$OUT/ncu-summary.txt"
  grep -E "^  void|^    (lts__|dram__|gpu__)" "$work/ncu-$a.txt" | sed 's/  */ /g' | cut -c1-90 \
    >> "$OUT/ncu-summary.txt"
done
cat "$OUT/summary.txt" "$OUT/ncu-summary.txt"
