#!/usr/bin/env bash
# Device call 9 (twenty-first session): call 8's lever A/B again with two arms, off (baseline)
# against dynamic_tiles + tail_split, at M = 8192 / 16384 with 6 rounds x 30 repeats (call 8, 3
# rounds: S1 M=16384 on 3276.2 vs off 3495.4 us, CI of the difference [-1.0%, +7.3%]). The A/B
# folder is packed into ab.tgz.
set -u
cd "$(dirname "$0")/../../.." || exit 2
T=tables:tables/NVIDIA_H200
OUT=$OUT/ab LEVER=dynamic_tiles+tail_split AB_M=8192,16384 ROUNDS=6 REPEATS=30 AB_S=540 \
  EXTRA_ARMS= \
  bash bench/run_h200_lever_ab.sh > "$OUT/lever_ab.out" 2>&1
echo "lever ab rc $?"
tail -n 45 "$OUT/lever_ab.out"
tar czf "$OUT/ab.tgz" -C "$OUT" ab && rm -rf "${OUT:?}/ab"
