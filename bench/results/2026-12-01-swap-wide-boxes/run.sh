#!/usr/bin/env bash
# One device call: swap-AB with the token rows in 64-row TMA boxes (16-row ones for the rest).
# Prewarm three arms' cubin caches, the swap-AB and edge-M GPU tests, then the arms in turn, two
# rounds (A B C A B C), each a moetune_sm90_bench run of its recipe's pinned rows:
#   A = recipes/h200.json (shipped), B = variant-256.json (both GEMMs swap-AB at the mid-M points,
#   256 pairs per tile with 8 warps above 192), C = variant-192.json (at most 192 pairs per tile).
# The variants come from bench/results/2026-12-01-swap-ab/make_variant.py (both 1 256 / both 1 192);
# VB / VC name others (variant-$VB.json with tables-$VB/): 256-g8 / 192-g8 are group_m 8.
# TEST_FILTER=- skips the GPU tests (a call after one that ran them on the same binaries).
#   OUT=$OUT bash bench/results/2026-12-01-swap-wide-boxes/run.sh
set -u
cd "$(dirname "$0")/../../.." || exit 2
D=bench/results/2026-12-01-swap-wide-boxes
OUT=${OUT:-$D/out}
BIN=${BIN:-.devbin}
M=${AB_M:-512,1024,2048,4096,8192}
mkdir -p "$OUT/ab"
nvidia-smi --query-gpu=name,clocks.sm,clocks.max.sm,power.draw,temperature.gpu --format=csv > "$OUT/gpu.csv" 2>&1
pw() { MOETUNE_CACHE_DIR=/tmp/mw-$1 "$BIN/moetune" prewarm --tables "$2" --quiet > "$OUT/prewarm-$1.log" 2>&1; echo "prewarm $1 rc $?"; }
pw A tables/NVIDIA_H200 &
VB=${VB:-256}
VC=${VC:-192}
pw B "$D/tables-$VB" &
pw C "$D/tables-$VC" &
wait
[ "${TEST_FILTER:-}" = - ] || MOETUNE_CACHE_DIR=/tmp/mw-T timeout "${TEST_S:-240}" "$BIN/cuda_kernel_tests" \
  --gtest_filter="${TEST_FILTER:-*SwapAb*:*EveryEdgeM*}" > "$OUT/gpu_tests.log" 2>&1
rc=$?
echo "gpu tests rc $rc"
grep -E "^\[ +(OK|FAILED) +\]|Failure" "$OUT/gpu_tests.log" | head -20
[ $rc -eq 0 ] || { echo "GPU tests failed: no timing"; exit $rc; }
for i in 1 2; do
  for arm in A B C; do
    recipe=recipes/h200.json
    [ $arm = B ] && recipe=$D/variant-$VB.json
    [ $arm = C ] && recipe=$D/variant-$VC.json
    MOETUNE_CACHE_DIR=/tmp/mw-$arm timeout "${RUN_S:-90}" "$BIN/moetune_sm90_bench" \
      --out "$OUT/ab/$arm$i" --recipe "$recipe" --shapes S1,S2,S3 --m "$M" > "$OUT/ab/$arm$i.log" 2>&1
    echo "$arm$i exit $?"
  done
done
tar czf "$OUT/ab.tgz" -C "$OUT" ab && rm -rf "$OUT/ab"
python3 "$D/summary.py" "$OUT/ab.tgz" | tee "$OUT/summary.txt"
