#!/usr/bin/env bash
# ncu (clocks untouched) of the swap-AB GEMMs at 256 pairs per tile against the shipped tma_ws
# GEMMs at S1 M=8192: speed of light, warp states, scheduler, source counters.
#   OUT=$OUT BIN=.devbin bash bench/results/2026-12-01-swap-wide-boxes/ncu.sh
set -u
cd "$(dirname "$0")/../../.." || exit 2
D=bench/results/2026-12-01-swap-wide-boxes
BIN=${BIN:-.devbin}
SEC="--section SpeedOfLight --section ComputeWorkloadAnalysis --section MemoryWorkloadAnalysis --section WarpStateStats --section SchedulerStats --section SourceCounters --section LaunchStats"
run() {  # name kernel-regex recipe
  MOETUNE_CACHE_DIR=/tmp/ncu-$1 timeout 200 ncu --clock-control none --kernel-name "regex:$2" \
    --launch-count 2 $SEC "$BIN/moetune_sm90_bench" --out /tmp/ncu-out-$1 --recipe "$3" \
    --shapes ${SHAPE:-S1} --m ${M:-8192} --no-sweep > "$OUT/ncu-$1.txt" 2>&1
  echo "ncu $1 rc $?"
}
run swap256 moe_swap_gemm_kernel "$D/variant-256.json"
run tmaws moe_ws_gemm_kernel recipes/h200.json
grep -E "moe_|Duration|SM Frequency|Compute \(SM\) Throughput|L2 Cache Throughput|DRAM Throughput|Stall|Issued Warp|No Eligible|Active Warps Per" "$OUT"/ncu-*.txt | cut -c1-150
