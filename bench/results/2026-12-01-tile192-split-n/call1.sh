#!/usr/bin/env bash
# Device call 1 (eighteenth session): tma_ws at block_m 192 on two warpgroups that split block_n
# (num_warps 8). The new GPU tests first (bits against 128-row tiles at half the width, the odd
# shapes against fp64), then the shipped recipe (A) against recipe-192n.json (B: both GEMMs
# 192 x {gated 96 | 192} and 192 x 192, 4 stages, at S1/S2 M >= 4096 and S3 M >= 1024), A B A B.
# Carry .devbin-s.
set -u
start=$(date +%s)
D=bench/results/2026-12-01-tile192-split-n
export MOETUNE_CACHE_DIR=/tmp/mc
timeout 300 .devbin-s/cuda_kernel_tests \
  --gtest_filter='*Tile192*:*MatchesFp64ReferenceOnSmallAndOdd*' > $OUT/gpu-tests.log 2>&1
echo "gpu tests exit $? after $(( $(date +%s) - start )) s"
grep -E "^\[  (PASSED|FAILED) |^\[  FAILED|OK \]" $OUT/gpu-tests.log | tail -8
BIN=.devbin-s RUN_S=100 OUT=$OUT/ab bash bench/run_h200_recipe_ab.sh recipes/h200.json \
  $D/recipe-192n.json --shapes S1,S2,S3 --m 1024,2048,4096,8192,16384 > $OUT/ab.log 2>&1
echo "ab exit $? after $(( $(date +%s) - start )) s"
cat $OUT/ab.log | tail -25
python3 - $OUT/ab/ab.tgz <<'PY'
import csv, io, statistics, sys, tarfile
st = {}
with tarfile.open(sys.argv[1]) as t:
    for m in t.getmembers():
        if not m.name.endswith(".csv") or m.name.endswith("winners.csv"):
            continue
        arm = m.name.split("/")[1][0]
        for r in csv.DictReader(io.StringIO(t.extractfile(m).read().decode())):
            st.setdefault((r["shape"], int(r["M"]), arm), []).append(
                (float(r["gemm1_us"]), float(r["gemm2_us"]), float(r["align_us"]), r["config"]))
print("stages (median of runs): sh M | A g1 g2 align | B g1 g2 align | B config")
for (s, m, arm) in sorted(st):
    if arm != "A" or (s, m, "B") not in st:
        continue
    a, b = st[(s, m, "A")], st[(s, m, "B")]
    med = lambda v, i: statistics.median(x[i] for x in v)
    print("%s %5d | %7.1f %7.1f %5.1f | %7.1f %7.1f %5.1f | %s" % (
        s, m, med(a, 0), med(a, 1), med(a, 2), med(b, 0), med(b, 1), med(b, 2), b[0][3]))
PY
