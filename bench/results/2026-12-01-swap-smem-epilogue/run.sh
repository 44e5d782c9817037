#!/usr/bin/env bash
# One device call: the swap-AB epilogue through shared memory (a05410d) against the 2-byte stores
# before it (binaries of abafbb9's kernels), same configs, so the digests must be equal.
#   1. the swap-AB and edge-M GPU tests of build B;
#   2. bench/run_h200_bin_ab.sh: A = BIN_A, B = BIN_B, on the recipe with both GEMMs swap-AB at
#      the mid-M points (../2026-12-01-swap-wide-boxes/variant-256.json), 2 rounds;
#   3. one run of the shipped recipe on build B (the tma_ws rows, for reference in the same call).
#   BIN_A=.devbin-A BIN_B=.devbin OUT=$OUT bash bench/results/2026-12-01-swap-smem-epilogue/run.sh
set -u
cd "$(dirname "$0")/../../.." || exit 2
D=bench/results/2026-12-01-swap-smem-epilogue
OUT=${OUT:-$D/out}
BIN_A=${BIN_A:-.devbin-A}
BIN_B=${BIN_B:-.devbin}
M=${AB_M:-512,1024,2048,4096,8192}
mkdir -p "$OUT"
MOETUNE_CACHE_DIR=/tmp/t-B timeout "${TEST_S:-300}" "$BIN_B/cuda_kernel_tests" \
  --gtest_filter="${TEST_FILTER:-*SwapAb*:*EveryEdgeM*}" > "$OUT/gpu_tests.log" 2>&1
rc=$?
echo "gpu tests rc $rc"
grep -E "^\[ +(OK|FAILED) +\]|Failure" "$OUT/gpu_tests.log" | head -20
[ $rc -eq 0 ] || { echo "GPU tests failed: no timing"; exit $rc; }
BIN_A=$BIN_A BIN_B=$BIN_B SHAPES=S1,S2,S3 M=$M ROUNDS=${ROUNDS:-2} LIMIT_S=150 \
  RECIPE=bench/results/2026-12-01-swap-wide-boxes/variant-256.json OUT=$OUT/bin-ab \
  bash bench/run_h200_bin_ab.sh > "$OUT/bin-ab.log" 2>&1
echo "bin-ab exit $?"
MOETUNE_CACHE_DIR=/tmp/t-S timeout 150 "$BIN_B/moetune_sm90_bench" --recipe recipes/h200.json \
  --shapes S1,S2,S3 --m "$M" --no-sweep --out "$OUT/shipped" > "$OUT/shipped.log" 2>&1
echo "shipped exit $?"
cat "$OUT/bin-ab/summary.txt"
python3 - "$OUT/shipped" "$OUT/bin-ab/summary.txt" << 'PY'
import csv, glob, sys
rows = {}
for f in glob.glob(sys.argv[1] + "/*.csv"):
    for r in csv.DictReader(open(f)):
        rows[(r["shape"], int(r["M"]))] = r
print("shipped recipe on B (tma_ws rows): shape M time gemm1 gemm2")
for k in sorted(rows):
    r = rows[k]
    print("%s %6d %9.1f %9.1f %9.1f" % (k[0], k[1], float(r["time_us"]), float(r["gemm1_us"]),
                                        float(r["gemm2_us"])))
PY
