#!/usr/bin/env bash
# A/B of two recipes' pinned rows in one device call: moetune_sm90_bench --recipe A, then B, then
# A, then B again (drift and clock state hit both arms alike), each run bounded by RUN_S seconds.
# Logs and CSVs go into $OUT/ab.tgz; a per-point table of both arms prints last (the medians of
# each arm's two runs, B/A, and whether both B runs beat both A runs).
#   OUT=$OUT bash bench/run_h200_recipe_ab.sh recipes/h200.json /tmp/variant.json \
#     --shapes S2,S3 --m 512,1024,2048,4096
# How this session's pingpong-GEMM2 and tail-split A/Bs were run (by hand); the variant recipe
# comes from bench/recipe_variant.py. BIN_B (default $BIN) runs arm B with other binaries, for a
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
OUT=${OUT:-bench/results/$(date +%F)-recipe-ab}
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
      "$bin/moetune_sm90_bench" --out "$OUT/ab/$arm$i" --recipe "$recipe" "$@" \
      > "$OUT/ab/$arm$i.log" 2>&1
    echo "$arm$i exit $?"
  done
done
tar czf "$OUT/ab.tgz" -C "$OUT" ab && rm -rf "$OUT/ab"
python3 - "$OUT/ab.tgz" <<'PY'
import csv, io, statistics, sys, tarfile
runs = {}  # (shape, M) -> arm -> [time_us]
with tarfile.open(sys.argv[1]) as t:
    for m in t.getmembers():
        if not m.name.endswith(".csv") or m.name.endswith("winners.csv"):
            continue
        arm = m.name.split("/")[1][0]
        for r in csv.DictReader(io.StringIO(t.extractfile(m).read().decode())):
            runs.setdefault((r["shape"], int(r["M"])), {}).setdefault(arm, []).append(
                float(r["time_us"]))
print("%-3s %6s %10s %10s %7s  %s" % ("sh", "M", "A us", "B us", "B/A", "B beats A in every run"))
for (s, m), arms in sorted(runs.items()):
    a, b = arms.get("A", []), arms.get("B", [])
    if not a or not b:
        print("%-3s %6d  missing an arm (A %d runs, B %d runs)" % (s, m, len(a), len(b)))
        continue
    ma, mb = statistics.median(a), statistics.median(b)
    print("%-3s %6d %10.1f %10.1f %7.3f  %s" % (s, m, ma, mb, mb / ma,
                                                "yes" if max(b) < min(a) else "no"))
PY
