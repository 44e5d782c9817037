#!/usr/bin/env bash
# Device call 2 (twenty-fourth session): the side walk (tiles that share operands kept on the SMs
# of one L2 partition: sm90_ws_kernel.cuh side_walk_fetch) against the shipped walks. This
# machine's map first (bench/l2_sides.cu), then arms of the shipped recipe rotated over 2 rounds:
# A shipped; B the map given (the swap-AB GEMMs' walk takes sides; tma_ws keeps its static walk);
# C lever dynamic_tiles (tma_ws's dynamic walk, no sides); D both (every persistent GEMM's walk
# takes sides). The digests must be equal (the walk decides where a tile runs, not its bits).
# Then the GPU tests of the dynamic walks with the map given. Binaries in .devbin-s.
set -u
cd "$(dirname "$0")/../../.." || exit 2
export MOETUNE_CACHE_DIR=/tmp/moetune-cache
BIN=.devbin-s
work=$(mktemp -d)
mkdir -p "$work/runs" "$OUT"
start=$(date +%s)
timeout -k 5 60 $BIN/l2_sides "$OUT/map.txt" > "$OUT/l2_sides.txt" 2>&1
echo "l2_sides rc $?: $(grep -E '^(model|side 0)' "$OUT/l2_sides.txt" | tr '\n' ' ')"
MAP=$(cat "$OUT/map.txt")
arms=(A B C D)
envs() {
  case $1 in
    A) echo "";;
    B) echo "MOETUNE_DEV_L2_SIDE_MAP=$MAP";;
    C) echo "MOETUNE_LEVER_DYNAMIC_TILES=on";;
    D) echo "MOETUNE_DEV_L2_SIDE_MAP=$MAP MOETUNE_LEVER_DYNAMIC_TILES=on";;
  esac
}
for r in 1 2; do
  for j in 0 1 2 3; do
    a=${arms[$(( (j + 2 * (r - 1)) % 4 ))]}
    env $(envs $a) timeout -k 5 170 $BIN/moetune_sm90_bench \
      --recipe recipes/h200.json --shapes S1,S2,S3 --m 512,1024,2048,4096,8192 --no-sweep \
      --out "$work/runs/$a-$r" > "$work/runs/$a-$r.log" 2>&1
    echo "round $r arm $a rc $? after $(( $(date +%s) - start )) s"
  done
done
tar czf "$OUT/runs.tgz" -C "$work" runs
python3 bench/ab_summary.py "$work/runs" 2 equal A B C D > "$OUT/summary.txt"
echo "ab_summary rc $?"
MOETUNE_DEV_L2_SIDE_MAP=$MAP timeout -k 5 $(( 560 - ($(date +%s) - start) )) \
  $BIN/cuda_kernel_tests \
  --gtest_filter='Sm90Gather.SwapAb*:Sm90Gather.DynamicTiles*:Sm90Gather.CheckerCatches*' \
  > "$OUT/gpu_tests.log" 2>&1
echo "gpu tests rc $? after $(( $(date +%s) - start )) s: $(grep -E '^\[  (PASSED|FAILED) ' "$OUT/gpu_tests.log" | tr '\n' ' ')"
cat "$OUT/summary.txt"
