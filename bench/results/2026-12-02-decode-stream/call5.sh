#!/usr/bin/env bash
# Device call 5 (twenty-fifth session): lever decode_fused at 09211a8 (four consumer warps, eight
# slots of ~26 KB; call 4, 6b858b4, sixteen slots: GEMM1 at ~3.2 TB/s, S2 M=1 35.8 vs 28.8 us,
# GEMM2 ~10 us after the barrier whatever the shape). Its GPU tests (the
# bits of the two decode launches, the grid barrier, phase stamps) and the other decode tests,
# then moetune ab at M = 1, 4 of the shipped recipe: A = the default rule's configs (ab's `default`: no tables; first written here as "shipped tables"), lever off; Aon = lever
# on; D = tables-decode/ (S1 M=4 on the decode config m4n4k512 w4 | w8, lever off); Don = D with
# the lever on. 4 rounds x 50 repeats, digests reported (A = Aon and D = Don must hold: the lever
# is bitwise). Binaries in .devbin-d (09211a8).
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
timeout -k 5 300 $BIN/moetune ab --recipe recipes/h200.json --m 1,4 --rounds 4 --repeats 50 \
  --digests any --out "$OUT/ab" --arm A=default --arm Aon=levers:decode_fused=on \
  --arm D=tables:$R/tables-decode --arm Don=tables:$R/tables-decode,levers:decode_fused=on \
  > "$OUT/ab.log" 2>&1
echo "ab rc $? after $(( $(date +%s) - start )) s"
grep -vE "^ab: arm" "$OUT/ab.log" | grep -v mixtral | tail -30
