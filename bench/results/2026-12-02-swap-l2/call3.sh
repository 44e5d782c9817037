#!/usr/bin/env bash
# Device call 3 (twenty-third session): which part of L2 is busy under the memory-bound GEMMs?
# ncu (clocks untouched) with ncu's breakdown of lts__throughput (each L2 sub-metric's share of its
# peak) and of dram__throughput, for the shipped GEMM1 and GEMM2 at S1 M=4096 (swap-AB) and S2
# M=2048 (tma_ws), and the 2x1 / 1x2 multicast arm of call 2 at S2 M=4096 beside the shipped one.
# Binaries in .devbin-z (b950db1).
set -u
cd "$(dirname "$0")/../../.." || exit 2
export MOETUNE_CACHE_DIR=/tmp/moetune-cache
BIN=.devbin-z
R=bench/results/2026-12-02-swap-l2
mkdir -p "$OUT"
start=$(date +%s)
run() {  # tag recipe shape m
  timeout -k 5 120 ncu --clock-control none --target-processes all --kernel-name regex:gemm \
    --launch-count 2 --metrics breakdown:lts__throughput.avg.pct_of_peak_sustained_elapsed,breakdown:dram__throughput.avg.pct_of_peak_sustained_elapsed,gpu__time_duration.sum,lts__t_sectors_srcunit_tex.sum,lts__t_sectors_srcunit_ltcfabric.sum,lts__t_sectors.sum,lts__t_requests_srcunit_tex.sum,dram__bytes_read.sum,sm__cycles_elapsed.avg.per_second \
    $BIN/moetune_sm90_bench --recipe "$2" --shapes "$3" --m "$4" --no-sweep --out /tmp/bo \
    > "$OUT/ncu-$1.txt" 2> "$OUT/bench-$1.log"
  echo "$1 rc $? after $(( $(date +%s) - start )) s"
}
run S1-4096 recipes/h200.json S1 4096
run S2-2048 recipes/h200.json S2 2048
run S2-4096-A recipes/h200.json S2 4096
run S2-4096-B $R/recipe-clusters.json S2 4096
for f in "$OUT"/ncu-*.txt; do
  echo "== $f"
  grep -E "^  void|^    (lts__|dram__|gpu__time|sm__cycles)" "$f" | sed 's/  */ /g' | cut -c1-110
done
