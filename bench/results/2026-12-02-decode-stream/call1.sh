#!/usr/bin/env bash
# Device call 1 (twenty-fifth session): lever decode_fused rewritten (3fd781e): its GPU tests (the
# bits of the two decode launches, the grid barrier, phase stamps) and the other decode tests, then
# moetune ab at M = 1, 4, 16 of the shipped recipe: A = the default rule's configs (ab's `default`: no tables; first written here as "shipped tables"), lever off; Aon = lever on;
# D = tables-decode/ (S1 M=4 / 16 and S2 M=16 on the decode config m4n4k512 w4 | w8, lever off);
# Don = D with the lever on. 4 rounds x 50 repeats, digests reported (A = Aon and D = Don must
# hold: the lever is bitwise). Binaries in .devbin-d (3fd781e).
set -u
cd "$(dirname "$0")/../../.." || exit 2
export MOETUNE_CACHE_DIR=/tmp/moetune-cache
BIN=.devbin-d
R=bench/results/2026-12-02-decode-stream
start=$(date +%s)
mkdir -p "$OUT"
nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.max.sm,power.draw,power.limit --format=csv > "$OUT/nvidia-smi.txt"
timeout -k 5 240 $BIN/cuda_kernel_tests --gtest_filter='Sm90Gather.Decode*' > "$OUT/gpu_tests.log" 2>&1
echo "gpu tests rc $? after $(( $(date +%s) - start )) s"
grep -E "^\[  (FAILED|PASSED) |decode_fused phases|Failure" "$OUT/gpu_tests.log" | head -20
timeout -k 5 300 $BIN/moetune ab --recipe recipes/h200.json --m 1,4,16 --rounds 4 --repeats 50 \
  --digests any --out "$OUT/ab" --arm A=default --arm Aon=levers:decode_fused=on \
  --arm D=tables:$R/tables-decode --arm Don=tables:$R/tables-decode,levers:decode_fused=on \
  > "$OUT/ab.log" 2>&1
echo "ab rc $? after $(( $(date +%s) - start )) s"
grep -vE "^ab: arm" "$OUT/ab.log" | tail -40
