#!/usr/bin/env bash
# One device call for a kernel change (every step bounded): the sm90_gather GPU tests, a sweep of
# the changed candidates (SWEEP_ARGS, moetune_sm90_bench options) and the shipped recipe rows
# re-timed (RECIPE_ARGS), each into its own CSV; the folders are packed into one archive (the
# device tool returns at most 8 files) and a per-point table comparing the two prints last.
#   SWEEP_ARGS="--shapes S3 --m 256,512,1024 --sweep-schedule tma_ws" bash bench/run_h200_round.sh
# RECIPE (default recipes/h200.json) re-times another recipe's rows, e.g. a variant to ship:
#   bench/recipe_variant.py recipes/h200.json --set gemm1.launch.cluster_m=2 \
#     --where gemm1.launch.schedule=tma_ws --shapes S3 --min-m 1024 --max-m 4096 > bench/v.json
#   RECIPE=bench/v.json bash bench/run_h200_round.sh   (then bench/csv_to_recipe.py on its CSV)
# The decode sweep:
#   SWEEP_ARGS="--m 1,4 --sweep-decode-only" RECIPE_ARGS="--m 1,4" bash bench/run_h200_round.sh
set -uo pipefail
cd "$(dirname "$0")/.."
BIN=${BIN:-.devbin}
OUT=${OUT:-build/results/$(date +%F)-round}
mkdir -p "$OUT/sweep" "$OUT/recipe"
export MOETUNE_CACHE_DIR=${MOETUNE_CACHE_DIR:-/tmp/moetune-cache}
nvidia-smi --query-gpu=name,driver_version,clocks.sm,power.draw --format=csv > "$OUT/gpu.csv" 2>&1
timeout "${TESTS_S:-240}" "$BIN/cuda_kernel_tests" --gtest_filter="${TEST_FILTER:-Sm90Gather.*}" \
  > "$OUT/gpu-tests.log" 2>&1
echo "gpu tests exit $?"
grep -E "^\[  (PASSED|FAILED) |tests ran|Failure" "$OUT/gpu-tests.log" | head -20
if [ -n "${SWEEP_ARGS:-}" ]; then
  # shellcheck disable=SC2086
  timeout "${SWEEP_S:-200}" "$BIN/moetune_sm90_bench" --out "$OUT/sweep" $SWEEP_ARGS \
    > "$OUT/sweep.log" 2>&1
  echo "sweep exit $?"
fi
# shellcheck disable=SC2086
timeout "${RECIPE_S:-200}" "$BIN/moetune_sm90_bench" --out "$OUT/recipe" \
  --recipe "${RECIPE:-recipes/h200.json}" ${RECIPE_ARGS:-} > "$OUT/recipe.log" 2>&1
echo "recipe exit $?"
tar czf "$OUT/csv.tgz" -C "$OUT" sweep recipe && rm -rf "$OUT/sweep" "$OUT/recipe"
grep -E "geomean" "$OUT/recipe.log"
python3 - "$OUT" <<'PY'
import csv, sys, tarfile
rows = {}
with tarfile.open(sys.argv[1] + "/csv.tgz") as t:
    for m in t.getmembers():
        if m.name.endswith(".csv") and not m.name.endswith("winners.csv"):
            arm = m.name.split("/")[0]
            for r in csv.DictReader(t.extractfile(m).read().decode().splitlines()):
                rows[(r["shape"], int(r["M"]), arm)] = r
print("%-3s %6s %9s %9s %9s %7s %7s  %s | %s" % ("sh", "M", "floor", "recipe", "sweep", "r/fl",
                                                "s/fl", "recipe config", "sweep config"))
for s, m in sorted({(k[0], k[1]) for k in rows}):
    r = rows.get((s, m, "recipe"), {}); w = rows.get((s, m, "sweep"), {})
    fl = float((r or w)["floor_us"]); rt = float(r.get("time_us", "nan")); st = float(w.get("time_us", "nan"))
    print("%-3s %6d %9.1f %9.1f %9.1f %7.3f %7.3f  %s | %s" % (s, m, fl, rt, st, rt / fl, st / fl,
          r.get("config", "-"), w.get("config", "-")))
PY
