#!/usr/bin/env bash
# A/B of two recipes' pinned rows in one device call: moetune_sm90_bench --recipe A, then B, then
# A, then B again (drift and clock state hit both arms alike), each run bounded by RUN_S seconds.
# Logs and CSVs go into $OUT/ab.tgz; a per-point table of both arms prints last (the medians of
# each arm's two runs: layer, B/A, GEMM1 and GEMM2 stage times; whether both B runs beat both A
# runs; B's config where it differs from A's).
#   OUT=$OUT bash bench/run_h200_recipe_ab.sh recipes/h200.json /tmp/variant.json \
#     --shapes S2,S3 --m 512,1024,2048,4096
# The variant recipe comes from bench/recipe_variant.py. BIN_B (default $BIN) runs arm B with other binaries, for a
# kernel change with the same recipe: BIN_B=.devbin-new bash ... recipes/h200.json recipes/h200.json
set -uo pipefail
cd "$(dirname "$0")/.." || exit 2
if [ $# -lt 2 ]; then
  echo "usage: bench/run_h200_recipe_ab.sh RECIPE_A RECIPE_B [moetune_sm90_bench options]" >&2
  exit 2
fi
A=$1
B=$2
shift 2
BIN=${BIN:-.devbin}
BIN_B=${BIN_B:-$BIN}
OUT=${OUT:-build/results/$(date +%F)-recipe-ab}
RUN_S=${RUN_S:-60}
for f in "$A" "$B"; do
  [ -r "$f" ] || { echo "run_h200_recipe_ab: cannot read recipe $f" >&2; exit 2; }
done
mkdir -p "$OUT/ab"
for i in 1 2; do
  for arm in A B; do
    recipe=$A bin=$BIN
    [ "$arm" = B ] && recipe=$B bin=$BIN_B
    MOETUNE_CACHE_DIR=${MOETUNE_CACHE_DIR:-/tmp/moetune-cache}-$arm timeout "$RUN_S" \
      "$bin/moetune_sm90_bench" --out "$OUT/ab/$arm-$i" --recipe "$recipe" "$@" \
      > "$OUT/ab/$arm-$i.log" 2>&1
    echo "$arm$i exit $?"
  done
done
# The runs as bench/ab_summary.py reads them (<arm>-<round>/*.csv); its loader, this table.
python3 - "$OUT/ab" <<'PY'
import statistics, sys
sys.path.insert(0, "bench")
import ab_summary
data = ab_summary.load(sys.argv[1], 2, ["A", "B"])  # (shape, M) -> arm -> CSV rows
print("%-3s %6s %10s %10s %7s %8s %8s %8s %8s  %-5s %s" % (
    "sh", "M", "A us", "B us", "B/A", "A gemm1", "B gemm1", "A gemm2", "B gemm2", "every",
    "B config (where it differs)"))
for (s, m), arms in sorted(data.items()):
    a, b = arms.get("A", []), arms.get("B", [])
    if not a or not b:
        print("%-3s %6d  missing an arm (A %d runs, B %d runs)" % (s, m, len(a), len(b)))
        continue
    med = ab_summary.median
    ma, mb = med(a, "time_us"), med(b, "time_us")
    # every: B's layer time below A's in every run
    every = max(float(x["time_us"]) for x in b) < min(float(x["time_us"]) for x in a)
    print("%-3s %6d %10.1f %10.1f %7.3f %8.1f %8.1f %8.1f %8.1f  %-5s %s" % (
        s, m, ma, mb, mb / ma, med(a, "gemm1_us"), med(b, "gemm1_us"), med(a, "gemm2_us"),
        med(b, "gemm2_us"), "yes" if every else "no",
        b[0]["config"] if b[0]["config"] != a[0]["config"] else "="))
PY
tar czf "$OUT/ab.tgz" -C "$OUT" ab && rm -rf "$OUT/ab"
