#!/usr/bin/env bash
# Device call 2 (twenty-second session): the swap-AB GEMM1 of block_m >= 128 copying x's rows into
# sorted order itself, in its three producer warps that issue no TMA, beside the GEMM
# (MOETUNE_DEV_SWAP_PERMUTE=1, a measurement knob of the working tree; the permute pass copies only
# the blocks of the GEMM's first wave), against the permute pass copying all of them. Binaries in
# .devbin-f. First the swap-AB GPU test with the knob on; then 2 rounds of four arms, rotated:
# A = the shipped recipe, B = A with the knob, C = recipe-swap256.json (both GEMMs swap-AB 256 at
# S1 M=2048/8192/16384, S2 2048/4096/8192, S3 1024/2048/4096), D = C with the knob, E = B with the pass copying two waves' blocks
# (MOETUNE_DEV_PERMUTE_WAVES=2).
set -u
cd "$(dirname "$0")/../../.." || exit 2
export MOETUNE_CACHE_DIR=/tmp/moetune-cache
BIN=.devbin-f
R=bench/results/2026-12-01-swap-gather
work=$(mktemp -d)
mkdir -p "$work/runs" "$OUT"
start=$(date +%s)
MOETUNE_DEV_SWAP_PERMUTE=1 timeout -k 5 240 $BIN/cuda_kernel_tests --gtest_filter='*SwapAb*' \
  > "$OUT/gpu_tests.log" 2>&1
echo "gpu test rc $? after $(( $(date +%s) - start )) s: $(grep -E '^\[  (PASSED|FAILED) ' "$OUT/gpu_tests.log" | tr '\n' ' ')"
arms=(A B C D E)
recipe() { case $1 in A|B|E) echo recipes/h200.json;; *) echo $R/recipe-swap256.json;; esac; }
knob() { case $1 in B|D|E) echo 1;; *) echo 0;; esac; }
for r in 1 2; do
  for j in 0 1 2 3 4; do
    a=${arms[$(( (j + r - 1) % 5 ))]}
    waves=1
    [ "$a" = E ] && waves=2
    MOETUNE_DEV_PERMUTE_WAVES=$waves MOETUNE_DEV_SWAP_PERMUTE=$(knob $a) timeout -k 5 120 $BIN/moetune_sm90_bench \
      --recipe "$(recipe $a)" --shapes S1,S2,S3 --m 512,1024,2048,4096,8192,16384 --no-sweep \
      --out "$work/runs/$a-$r" > "$work/runs/$a-$r.log" 2>&1
    echo "round $r arm $a rc $? after $(( $(date +%s) - start )) s"
  done
done
tar czf "$OUT/runs.tgz" -C "$work" runs
python3 bench/ab_summary.py "$work/runs" 2 any A B C D E > "$OUT/summary.txt"
python3 - "$work/runs" > "$OUT/digests.txt" <<'PY'
import csv, glob, os, sys
d = {}
for f in glob.glob(os.path.join(sys.argv[1], "*-*", "*.csv")):
    arm = os.path.basename(os.path.dirname(f)).split("-")[0]
    for row in csv.DictReader(open(f)):
        d.setdefault((row["shape"], int(row["M"])), {}).setdefault(arm, set()).add(row["digest"])
for (s, m), by in sorted(d.items()):
    ab = "AB " + ("equal" if by.get("A") == by.get("B") and len(by.get("A", ())) == 1 else "DIFFER")
    cd = "CD " + ("equal" if by.get("C") == by.get("D") and len(by.get("C", ())) == 1 else "DIFFER")
    ae = "AE " + ("equal" if by.get("A") == by.get("E") else "DIFFER")
    print(s, m, ab, cd, ae)
PY
cat "$OUT/digests.txt"
cat "$OUT/summary.txt"
