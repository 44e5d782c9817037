#!/usr/bin/env bash
# Device call 3 (twenty-sixth session): where the align kernels' warps wait. bench/run_h200_ncu.sh
# SOURCE=1 (warp stall samples per SASS instruction, bench/ncu_stalls.py) on the align launches of
# build B (.devbin-b, 98cbe3a's kernels) at S2 M=512 (4096 pairs: the one-CTA kernel), S2 M=2048
# and S1 M=4096 (count, place); then the plain sections (durations, SM throughput) at the same.
set -u
cd "$(dirname "$0")/../../.." || exit 2
start=$(date +%s)
SOURCE=1 BIN=.devbin-b KERNELS=align POINTS=S2:512,S2:2048,S1:4096 LIMIT_S=100 OUT=$OUT/src \
  bash bench/run_h200_ncu.sh
echo "source rc $? after $(( $(date +%s) - start )) s"
BIN=.devbin-b KERNELS=align POINTS=S2:512,S2:2048,S1:4096 LIMIT_S=100 OUT=$OUT/sections \
  bash bench/run_h200_ncu.sh > /dev/null 2>&1
echo "sections rc $? after $(( $(date +%s) - start )) s"
cat "$OUT/sections/summary.txt"
for f in "$OUT"/sections/ncu-*.txt; do
  echo "== $f"
  grep -E "^  [a-zA-Z_ ]+.*\(|Duration|Elapsed Cycles|SM Active Cycles|Registers Per|Achieved Occ" "$f" | head -30
done
