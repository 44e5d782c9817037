#!/usr/bin/env bash
# Call 1: lever route_in_gemm1 (GEMM1 routes its own blocks, no align launch), the combine with 8
# rows in flight where its grid fits one wave and top_k > 4, the testbed poisoning the workspace
# before every check, and the bench's no_align_us column (.devbin-new), against 34bfc66
# (.devbin-base). GPU tests of the new build first; then three arms in rotated order, 2 rounds, at
# S1-S3, M = 4, 16, 64, 256 on the shipped recipe: base (34bfc66), off (new build, lever off: the
# combine change alone), on (new build, MOETUNE_LEVER_ROUTE_IN_GEMM1=on).
set -uo pipefail
cd "$(dirname "$0")/../../.."
OUT=${OUT:?}
nvidia-smi --query-gpu=name,driver_version,clocks.sm,power.draw --format=csv
work=$(mktemp -d)
mkdir -p $work/runs
MOETUNE_CACHE_DIR=$work/cache-new timeout -k 5 280 .devbin-new/cuda_kernel_tests \
  --gtest_filter='Sm90Gather.RouteInGemm1LeverGivesTheBitsOfItsOffPath:Sm90Gather.MatchesFp64ReferenceOnSmallAndOddShapesAtEveryEdgeM:Sm90Gather.BenchmarkShapesMatchTheGpuReferenceAndAreDeterministic:Sm90Gather.HandlesAllTokensOnOneExpertAndTopK1:Sm90Gather.MultiCtaAlignAndPdlLeversGiveTheSameBitsAsTheirOffPaths' \
  > $OUT/gpu-tests.log 2>&1
echo "gpu tests: exit $? $(grep -E '^\[       OK|^\[  FAILED|^\[  PASSED' $OUT/gpu-tests.log | tr '\n' ' ')"
grep -E "Failure|error|Expected|Which is|differ|align stage" $OUT/gpu-tests.log | head -20
arms=(base off on)
for r in 1 2; do
  for j in 0 1 2; do
    a=${arms[$(((j + r - 1) % 3))]}
    bin=.devbin-new; cache=$work/cache-new; lever=off
    [ $a = base ] && { bin=.devbin-base; cache=$work/cache-base; }
    [ $a = on ] && lever=on
    MOETUNE_LEVER_ROUTE_IN_GEMM1=$lever MOETUNE_CACHE_DIR=$cache timeout -k 5 100 \
      $bin/moetune_sm90_bench --recipe recipes/h200.json --shapes S1,S2,S3 --m 4,16,64,256 \
      --no-sweep --out $work/runs/$a-$r > $work/runs/$a-$r.log 2>&1
    echo "round $r arm $a exit $?"
  done
done
tar czf $OUT/runs.tgz -C $work runs
python3 bench/ab_summary.py $work/runs 2 equal base off on | tee $OUT/summary.txt
python3 - $work/runs <<'PY'
import csv, glob, sys, statistics as st
print("arm shape M layer align_stage no_align combine")
for arm in ("base", "off", "on"):
    rows = {}
    for f in glob.glob(sys.argv[1] + "/%s-*/*.csv" % arm):
        for r in csv.DictReader(open(f)):
            rows.setdefault((r["shape"], int(r["M"])), []).append(r)
    for k in sorted(rows):
        med = lambda c: st.median(float(x.get(c) or "nan") for x in rows[k])
        print(arm, k[0], k[1], round(med("time_us"), 1), round(med("align_us"), 2),
              round(med("no_align_us"), 1) if arm != "base" else "-", round(med("combine_us"), 2))
PY
