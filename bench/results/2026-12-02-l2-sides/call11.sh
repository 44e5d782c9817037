#!/usr/bin/env bash
# Device call 11 (twenty-fourth session): the swap-AB GEMMs on CTA pairs that share an align
# block's token rows by multicast (MOETUNE_SWAP_PAIR=2 through MOETUNE_DEV_NVRTC_DEFINES; calls
# 6-10: a stream re-reading 1.5 bytes per DRAM byte ran 17% faster when pairs shared the re-read
# rows). Arms of the shipped recipe, rotated over 3 rounds: A shipped, P pairs; same digests
# required. Then the swap-AB GPU test with pairs, and ncu of S1 M=4096's GEMMs with pairs.
# Binaries in .devbin-s (the working tree after 9918a24 with the macro).
set -u
cd "$(dirname "$0")/../../.." || exit 2
export MOETUNE_CACHE_DIR=/tmp/moetune-cache
BIN=.devbin-s
work=$(mktemp -d)
mkdir -p "$work/runs" "$OUT"
start=$(date +%s)
arms=(A P)
defs() { [ "$1" = P ] && echo "MOETUNE_SWAP_PAIR=2" || echo ""; }
for r in 1 2 3; do
  for j in 0 1; do
    a=${arms[$(( (j + r - 1) % 2 ))]}
    MOETUNE_DEV_NVRTC_DEFINES="$(defs $a)" timeout -k 5 170 $BIN/moetune_sm90_bench \
      --recipe recipes/h200.json --shapes S1,S2,S3 --m 512,1024,2048,4096 --no-sweep \
      --out "$work/runs/$a-$r" > "$work/runs/$a-$r.log" 2>&1
    echo "round $r arm $a rc $? after $(( $(date +%s) - start )) s"
  done
done
tar czf "$OUT/runs.tgz" -C "$work" runs
python3 bench/ab_summary.py "$work/runs" 3 equal A P > "$OUT/summary.txt"
echo "ab_summary rc $?"
cat "$OUT/summary.txt"
MOETUNE_DEV_NVRTC_DEFINES="MOETUNE_SWAP_PAIR=2" timeout -k 5 200 $BIN/cuda_kernel_tests \
  --gtest_filter='Sm90Gather.SwapAb*' > "$OUT/gpu_tests.log" 2>&1
echo "gpu tests rc $? after $(( $(date +%s) - start )) s: $(grep -E '^\[  (PASSED|FAILED) ' "$OUT/gpu_tests.log" | tr '\n' ' ')"
MOETUNE_DEV_NVRTC_DEFINES="MOETUNE_SWAP_PAIR=2" timeout -k 5 100 ncu --clock-control none \
  --target-processes all --kernel-name regex:gemm --launch-count 2 --metrics \
  gpu__time_duration.sum,dram__bytes_read.sum,lts__t_sectors_srcunit_ltcfabric.sum,lts__t_sectors_srcunit_tex.sum,dram__throughput.avg.pct_of_peak_sustained_elapsed,sm__pipe_tensor_op_hmma_cycles_active.avg.pct_of_peak_sustained_elapsed \
  $BIN/moetune_sm90_bench --recipe recipes/h200.json --shapes S1 --m 4096 --no-sweep \
  --out /tmp/bo > "$OUT/ncu-P-S1-4096.txt" 2> /dev/null
echo "ncu rc $? after $(( $(date +%s) - start )) s"
grep -E "^  void|^    (lts__|dram__|gpu__|sm__)" "$OUT/ncu-P-S1-4096.txt" | sed 's/  */ /g' | cut -c1-100
