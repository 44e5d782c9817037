#!/usr/bin/env bash
# Second device call: which GEMMs gain from the shared-memory swap-AB epilogue in the layer.
# Arms, each a moetune_sm90_bench run of a recipe's pinned rows (build a05410d, BIN):
#   A = recipes/h200.json (shipped), B = variant-v1.json, C = variant-v2.json (make_mixed.py;
#   the rows they change are listed in README.md), rounds A B C then C B A; prewarmed caches.
#   OUT=$OUT bash bench/results/2026-12-01-swap-smem-epilogue/call2.sh
set -u
cd "$(dirname "$0")/../../.." || exit 2
D=bench/results/2026-12-01-swap-smem-epilogue
OUT=${OUT:-$D/out}
BIN=${BIN:-.devbin}
M=${AB_M:-1024,2048,4096}
mkdir -p "$OUT/ab"
nvidia-smi --query-gpu=name,clocks.sm,clocks.max.sm,power.draw,temperature.gpu --format=csv > "$OUT/gpu.csv" 2>&1
pw() { MOETUNE_CACHE_DIR=/tmp/mw-$1 "$BIN/moetune" prewarm --tables "$2" --quiet > "$OUT/prewarm-$1.log" 2>&1; echo "prewarm $1 rc $?"; }
pw A tables/NVIDIA_H200 &
pw B "$D/tables-v1" &
pw C "$D/tables-v2" &
wait
for arm in A B C C B A; do
  i=1
  [ -d "$OUT/ab/${arm}1" ] && i=2
  recipe=recipes/h200.json
  [ $arm = B ] && recipe=$D/variant-v1.json
  [ $arm = C ] && recipe=$D/variant-v2.json
  MOETUNE_CACHE_DIR=/tmp/mw-$arm timeout "${RUN_S:-120}" "$BIN/moetune_sm90_bench" --no-sweep \
    --out "$OUT/ab/$arm$i" --recipe "$recipe" --shapes S1,S2,S3 --m "$M" > "$OUT/ab/$arm$i.log" 2>&1
  echo "$arm$i exit $?"
done
tar czf "$OUT/ab.tgz" -C "$OUT" ab && rm -rf "$OUT/ab"
python3 bench/results/2026-12-01-swap-wide-boxes/summary.py "$OUT/ab.tgz" | tee "$OUT/summary.txt"
