#!/usr/bin/env bash
# Device call 8 (twenty-sixth session): CudaTestbed::prepare now draws the weights from each
# point's own seed. Build of the fix (.devbin-d2) against 4049eb8's (.devbin-c): the new GPU test
# and three more of the testbed's, then moetune_sm90_bench on the shipped recipe at S2 with two M
# lists, 64,2048 and 2048 alone: the digest of S2 M=2048 must agree between the two lists with the
# fix, and (the old behaviour) differ without it.
set -u
cd "$(dirname "$0")/../../.." || exit 2
export MOETUNE_CACHE_DIR=/tmp/moetune-cache
start=$(date +%s)
mkdir -p "$OUT"
timeout -k 5 120 .devbin-d2/cuda_kernel_tests \
  --gtest_filter='Sm90Gather.PrepareDraws*:Sm90Gather.CheckerCatches*:Sm90Gather.ConfigsSharing*:Sm90Gather.HandlesAllTokens*' \
  > "$OUT/gpu_tests.log" 2>&1
echo "tests rc $? after $(( $(date +%s) - start )) s"
grep -hE "^\[  (FAILED|PASSED) |^\[       OK|Failure" "$OUT/gpu_tests.log" | cut -c1-150
for bin in .devbin-c .devbin-d2; do
  for m in 64,2048 2048; do
    tag=${bin#.devbin-}-${m/,/_}
    timeout -k 5 90 "$bin/moetune_sm90_bench" --recipe recipes/h200.json --shapes S2 --m "$m" \
      --no-sweep --out "$OUT/$tag" > "$OUT/$tag.log" 2>&1
    echo "$tag rc $? after $(( $(date +%s) - start )) s: S2 M=2048 digest $(python3 -c "
import csv, glob, sys
rows = [r for f in glob.glob('$OUT/$tag/*.csv') for r in csv.DictReader(open(f)) if r['M'] == '2048']
print(rows[0]['digest'] if rows else 'none')")"
  done
done
