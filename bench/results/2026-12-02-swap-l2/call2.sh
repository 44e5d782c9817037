#!/usr/bin/env bash
# Device call 2 (twenty-third session): do fewer L2-to-SM bytes make the memory-bound GEMMs faster?
# The existing TMA-multicast configs as a probe: A = the shipped recipe, B = recipe-clusters.json
# (GEMM1 tma_ws 128 rows on 2x1 pairs, the weight tile multicast; GEMM2 tma_ws 128 rows on 1x2
# pairs, the h rows multicast; S1 M=8192/16384, S2 M=4096/8192/16384). 2 rounds (A B, B A) of
# moetune_sm90_bench at S1,S2 x M 4096-16384, then ncu of both arms at S2 M=4096 and S1 M=8192.
# Binaries in .devbin-z (b950db1).
set -u
cd "$(dirname "$0")/../../.." || exit 2
export MOETUNE_CACHE_DIR=/tmp/moetune-cache
BIN=.devbin-z
R=bench/results/2026-12-02-swap-l2
work=$(mktemp -d)
mkdir -p "$work/runs" "$OUT"
start=$(date +%s)
recipe() { case $1 in A) echo recipes/h200.json;; *) echo $R/recipe-clusters.json;; esac; }
for r in 1 2; do
  for a in $([ $r = 1 ] && echo "A B" || echo "B A"); do
    timeout -k 5 150 $BIN/moetune_sm90_bench --recipe "$(recipe $a)" --shapes S1,S2 \
      --m 4096,8192,16384 --no-sweep --out "$work/runs/$a-$r" > "$work/runs/$a-$r.log" 2>&1
    echo "round $r arm $a rc $? after $(( $(date +%s) - start )) s"
  done
done
tar czf "$OUT/runs.tgz" -C "$work" runs
python3 bench/ab_summary.py "$work/runs" 2 any A B > "$OUT/summary.txt"
for a in A B; do
  BIN=$BIN OUT=$work/ncu-$a POINTS=S2:4096,S1:8192 LIMIT_S=100 RECIPE=$(recipe $a) \
    timeout -k 5 220 bash bench/run_h200_ncu.sh > "$work/ncu-$a.log" 2>&1
  echo "ncu $a rc $? after $(( $(date +%s) - start )) s"
  cp "$work/ncu-$a/summary.txt" "$OUT/ncu-$a-summary.txt"
done
tar czf "$OUT/ncu.tgz" -C "$work" ncu-A ncu-B
cat "$OUT/summary.txt" "$OUT"/ncu-*-summary.txt
