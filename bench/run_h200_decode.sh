#!/usr/bin/env bash
# One device call (about 6 minutes, every step bounded): the sm90_gather GPU tests, then the decode
# kernels (launch.swap_ab) swept at the tiny-M points of S1-S3 and, in the same run, the shipped
# recipe rows at those points, so the two CSVs compare like for like. Binaries: scripts/build_device.sh.
# Folders under $OUT are packed into one archive (the device tool returns at most 8 files).
set -uo pipefail
cd "$(dirname "$0")/.."
BIN=${BIN:-.devbin}
OUT=${OUT:-bench/results/$(date +%F)-decode}
M_LIST=${M_LIST:-1,4,16}
mkdir -p "$OUT"
export MOETUNE_CACHE_DIR=${MOETUNE_CACHE_DIR:-/tmp/moetune-cache}
nvidia-smi --query-gpu=name,driver_version,clocks.sm,power.draw --format=csv > "$OUT/gpu.csv" 2>&1
timeout "${TESTS_S:-240}" "$BIN/cuda_kernel_tests" --gtest_filter='Sm90Gather.*' \
  > "$OUT/gpu-tests.log" 2>&1
echo "gpu tests exit $?"
grep -E "^\[  (PASSED|FAILED) |tests ran|Failure" "$OUT/gpu-tests.log" | head -20
mkdir -p "$OUT/decode" "$OUT/recipe"
timeout "${SWEEP_S:-200}" "$BIN/moetune_sm90_bench" --out "$OUT/decode" --m "$M_LIST" \
  --sweep-decode-only > "$OUT/decode.log" 2>&1
echo "decode sweep exit $?"
timeout "${RECIPE_S:-100}" "$BIN/moetune_sm90_bench" --out "$OUT/recipe" --m "$M_LIST" \
  --recipe recipes/h200.json > "$OUT/recipe.log" 2>&1
echo "recipe exit $?"
tar czf "$OUT/csv.tgz" -C "$OUT" decode recipe && rm -rf "$OUT/decode" "$OUT/recipe"
python3 - "$OUT" <<'PY'
import csv, glob, subprocess, sys, tarfile
out = sys.argv[1]
rows = {}
with tarfile.open(out + "/csv.tgz") as t:
    for m in t.getmembers():
        if m.name.endswith(".csv"):
            arm = m.name.split("/")[0]
            for r in csv.DictReader(t.extractfile(m).read().decode().splitlines()):
                rows[(r["shape"], int(r["M"]), arm)] = r
print("%-3s %6s %9s %9s %9s %7s %7s  %s" % ("sh", "M", "floor", "recipe", "decode", "r/fl", "d/fl", "decode config"))
for (s, m, arm) in sorted(k for k in rows if k[2] == "decode"):
    d = rows[(s, m, "decode")]; r = rows.get((s, m, "recipe"), {})
    fl = float(d["floor_us"]); rt = float(r.get("time_us", "nan")); dt = float(d["time_us"])
    print("%-3s %6d %9.1f %9.1f %9.1f %7.3f %7.3f  %s" % (s, m, fl, rt, dt, rt / fl, dt / fl, d["config"]))
PY
