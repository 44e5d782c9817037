#!/usr/bin/env bash
# Device call 3 (twenty-second session): the tma_ws GEMM1 of 128 (or 64) rows loading its A tile
# by TMA from x's sorted copy (the permute pass) instead of the producer's cp.async gather
# (MOETUNE_DEV_WS_TMA_A=1, a measurement knob of the working tree). Binaries in .devbin-t. First
# the edge-M and one-expert GPU tests with the knob on; then 3 rounds of two arms, rotated, on the
# shipped recipe: A = as shipped, B = the knob on.
set -u
cd "$(dirname "$0")/../../.." || exit 2
export MOETUNE_CACHE_DIR=/tmp/moetune-cache
BIN=.devbin-t
work=$(mktemp -d)
mkdir -p "$work/runs" "$OUT"
start=$(date +%s)
MOETUNE_DEV_WS_TMA_A=1 timeout -k 5 240 $BIN/cuda_kernel_tests \
  --gtest_filter='Sm90Gather.MatchesFp64ReferenceOnSmallAndOddShapesAtEveryEdgeM:Sm90Gather.HandlesAllTokensOnOneExpertAndTopK1' \
  > "$OUT/gpu_tests.log" 2>&1
echo "gpu tests rc $? after $(( $(date +%s) - start )) s: $(grep -E '^\[  (PASSED|FAILED) ' "$OUT/gpu_tests.log" | tr '\n' ' ')"
arms=(A B)
for r in 1 2 3; do
  for j in 0 1; do
    a=${arms[$(( (j + r - 1) % 2 ))]}
    knob=0
    [ "$a" = B ] && knob=1
    MOETUNE_DEV_WS_TMA_A=$knob timeout -k 5 120 $BIN/moetune_sm90_bench \
      --recipe recipes/h200.json --shapes S1,S2,S3 --m 512,1024,2048,4096,8192,16384 --no-sweep \
      --out "$work/runs/$a-$r" > "$work/runs/$a-$r.log" 2>&1
    echo "round $r arm $a rc $? after $(( $(date +%s) - start )) s"
  done
done
tar czf "$OUT/runs.tgz" -C "$work" runs
python3 bench/ab_summary.py "$work/runs" 3 equal A B > "$OUT/summary.txt"
echo "summary rc $?"
cat "$OUT/summary.txt"
