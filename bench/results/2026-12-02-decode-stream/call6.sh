#!/usr/bin/env bash
# Device call 6 (twenty-fifth session): ncu of lever decode_fused's kernel at 09211a8 (call 5: S2
# M=1 39.8 vs 28.6 us; GEMM1 ~3.2 TB/s; warp 0's GEMM2 items 15 us after the barrier with their
# rows already landed). The phase test's first launch (S2 M=1, traced) under ncu, clocks
# untouched: speed of light, memory, warp states, scheduler, source counters (stall sites).
# Binaries in .devbin-d (09211a8).
set -u
cd "$(dirname "$0")/../../.." || exit 2
export MOETUNE_CACHE_DIR=/tmp/moetune-cache
BIN=.devbin-d
mkdir -p "$OUT"
timeout -k 5 300 ncu --clock-control none --kernel-name regex:decode_fused --launch-count 1 \
  --section SpeedOfLight --section MemoryWorkloadAnalysis --section WarpStateStats \
  --section SchedulerStats --section SourceCounters --section LaunchStats --section Occupancy \
  $BIN/cuda_kernel_tests --gtest_filter='Sm90Gather.DecodeFusedPhases*' > "$OUT/ncu.txt" 2>&1
echo "ncu rc $?"
grep -E "Duration|DRAM Throughput|Memory Throughput|Stall|stall|Issued Warp|No Eligible|Active Warps|Eligible Warps|Warp Cycles|Registers|Block Size" "$OUT/ncu.txt" | head -60
