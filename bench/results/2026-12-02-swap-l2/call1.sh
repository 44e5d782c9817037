#!/usr/bin/env bash
# Device call 1 (twenty-third session): is the shipped swap-AB GEMM bound by L2-to-SM traffic?
# ncu (clocks untouched) of the shipped GEMM1 and GEMM2 at S1 M=4096 (both swap-AB, 256 pairs x 128
# weight rows), S1 M=2048 and S2 M=2048 (GEMM2 swap-AB, 128 pairs x 192 weight rows), through
# bench/run_h200_ncu.sh. Binaries in .devbin-z (b950db1; src as HEAD but for comments).
set -u
cd "$(dirname "$0")/../../.." || exit 2
mkdir -p "$OUT/ncu"
BIN=.devbin-z OUT=$OUT/ncu POINTS=S1:4096,S1:2048,S2:2048 LIMIT_S=170 \
  timeout -k 5 560 bash bench/run_h200_ncu.sh > "$OUT/ncu.log" 2>&1
echo "ncu rc $?"
tar czf "$OUT/ncu.tgz" -C "$OUT" ncu && rm -rf "${OUT:?}/ncu"
cat "$OUT/ncu.log"
