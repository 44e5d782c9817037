#!/usr/bin/env bash
# Device call 8 (twenty-first session): at the large-M points, where an expert's last 128-row tile
# is mostly padding (S1 M=8192: 384 +- 20 pairs per expert, about half the experts with a fourth
# tile of ~16 rows) and the clock sits at the power limit, the bitwise levers that skip work on
# padding, beside the dynamic walk they need (`moetune ab`, shipped tables, 3 rounds x 30 repeats,
# digests equal): off (baseline) against dynamic_tiles + tail_split, dynamic_tiles alone, and
# dynamic_tiles + half_tile_skip. The eleventh session measured them at M <= 4096 (tail split
# beside the dynamic walk: +-1% by shape). The A/B folder is packed into ab.tgz.
set -u
cd "$(dirname "$0")/../../.." || exit 2
T=tables:tables/NVIDIA_H200
OUT=$OUT/ab LEVER=dynamic_tiles+tail_split AB_M=4096,8192,16384 ROUNDS=3 REPEATS=30 AB_S=540 \
  EXTRA_ARMS="dyn=$T,levers:dynamic_tiles=on dynskip=$T,levers:dynamic_tiles=on+half_tile_skip=on" \
  bash bench/run_h200_lever_ab.sh > "$OUT/lever_ab.out" 2>&1
echo "lever ab rc $?"
tail -n 45 "$OUT/lever_ab.out"
tar czf "$OUT/ab.tgz" -C "$OUT" ab && rm -rf "${OUT:?}/ab"
