#!/usr/bin/env bash
# Call 5: the review's refactor (padded_offsets_warp0 through align_offsets_warp0; .devbin-e):
# call 3's align GPU tests again, then the shipped recipe at small M, its digests against call 3's.
set -uo pipefail
cd "$(dirname "$0")/../../.."
OUT=${OUT:?}
export MOETUNE_CACHE_DIR=$(mktemp -d)
timeout 200 .devbin-e/cuda_kernel_tests \
  --gtest_filter='Sm90Gather.MatchesFp64ReferenceOnSmallAndOddShapesAtEveryEdgeM' \
  > $OUT/gpu-tests-1.log 2>&1
echo "gpu tests 1: exit $? $(grep -E '^\[  (PASSED|FAILED) ' $OUT/gpu-tests-1.log | tr '\n' ' ')"
timeout 120 .devbin-e/cuda_kernel_tests \
  --gtest_filter='Sm90Gather.HandlesAllTokensOnOneExpertAndTopK1:Sm90Gather.Tile256SkipsPaddingHalvesAndGivesTheBitsOfTile128:Sm90Gather.MultiCtaAlignAndPdlLeversGiveTheSameBitsAsTheirOffPaths' \
  > $OUT/gpu-tests-2.log 2>&1
echo "gpu tests 2: exit $? $(grep -E '^\[  (PASSED|FAILED) |^\[       OK|^\[  FAILED' $OUT/gpu-tests-2.log | tr '\n' ' ')"
timeout 150 .devbin-e/moetune_sm90_bench --recipe recipes/h200.json --shapes S1,S2,S3 \
  --m 4,16,64,256,512,1024 --no-sweep --out $OUT/bench > $OUT/bench.log 2>&1
echo "bench exit $?"
python3 - $OUT/bench bench/results/2026-12-02-combine-align/call3/run <<'PY'
import csv, glob, sys
def rows(d):
    f = glob.glob(d + "/*.csv")[0]
    return {(r["shape"], r["M"]): r for r in csv.DictReader(open(f))}
new, old = rows(sys.argv[1]), rows(sys.argv[2])
same = [k for k in new if new[k]["digest"] == old[k]["digest"]]
print("digests equal to call 3's (5b55655) at %d of %d points" % (len(same), len(new)))
for k in sorted(new):
    print(k, new[k]["digest"], old[k]["digest"], new[k]["time_us"], old[k]["time_us"])
PY
