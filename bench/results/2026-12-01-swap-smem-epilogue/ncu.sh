#!/usr/bin/env bash
# ncu (clocks untouched) of the swap-AB GEMMs with the shared-memory epilogue (a05410d) against the
# shipped tma_ws GEMMs at S2 M=4096 (where swap-AB GEMM2 still loses: 273 vs 227 us in call1) and
# S2 M=2048 (where it wins: 140 vs 155): speed of light, warp states, scheduler, source counters.
#   OUT=$OUT BIN=.devbin bash bench/results/2026-12-01-swap-smem-epilogue/ncu.sh
set -u
cd "$(dirname "$0")/../../.." || exit 2
D=bench/results/2026-12-01-swap-smem-epilogue
BIN=${BIN:-.devbin}
SEC="--section SpeedOfLight --section ComputeWorkloadAnalysis --section MemoryWorkloadAnalysis --section WarpStateStats --section SchedulerStats --section SourceCounters --section LaunchStats"
run() {  # name kernel-regex recipe M count
  MOETUNE_CACHE_DIR=/tmp/ncu-$1 timeout 200 ncu --clock-control none --kernel-name "regex:$2" \
    --launch-count $5 $SEC "$BIN/moetune_sm90_bench" --out /tmp/ncu-out-$1 --recipe "$3" \
    --shapes S2 --m $4 --no-sweep > "$OUT/ncu-$1.txt" 2>&1
  echo "ncu $1 rc $?"
}
run swap-4096 moe_swap_gemm_kernel bench/results/2026-12-01-swap-wide-boxes/variant-256.json 4096 2
run tmaws-4096 moe_ws_gemm_kernel recipes/h200.json 4096 2
run swap-2048 moe_swap_gemm_kernel "$D/variant-v1.json" 2048 1
grep -E "moe_|Duration|SM Frequency|Compute \(SM\) Throughput|L2 Cache Throughput|DRAM Throughput|Stall|Issued Warp|No Eligible|Active Warps Per" "$OUT"/ncu-*.txt | cut -c1-150
