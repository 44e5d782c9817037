#!/usr/bin/env bash
# A/B of two recipes' pinned rows in one device call: moetune_sm90_bench --recipe A, then B, then
# A, then B again (drift and clock state hit both arms alike), each run bounded by RUN_S seconds.
# Logs and CSVs go into $OUT/ab.tgz; a per-point table of both arms prints last (the medians of
# each arm's two runs: layer, B/A, GEMM1 and GEMM2 stage times; whether both B runs beat both A
# runs; B's config where it differs from A's).
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
runs = {}  # (shape, M) -> arm -> [(time_us, gemm1_us, gemm2_us)]
configs = {}  # (shape, M) -> arm -> config
with tarfile.open(sys.argv[1]) as t:
    for m in t.getmembers():
        if not m.name.endswith(".csv") or m.name.endswith("winners.csv"):
            continue
        arm = m.name.split("/")[1][0]
        for r in csv.DictReader(io.StringIO(t.extractfile(m).read().decode())):
            key = (r["shape"], int(r["M"]))
            runs.setdefault(key, {}).setdefault(arm, []).append(
                (float(r["time_us"]), float(r["gemm1_us"]), float(r["gemm2_us"])))
            configs.setdefault(key, {})[arm] = r["config"]
print("%-3s %6s %10s %10s %7s %8s %8s %8s %8s  %-5s %s" % (
    "sh", "M", "A us", "B us", "B/A", "A gemm1", "B gemm1", "A gemm2", "B gemm2", "every",
    "B config (where it differs)"))
for key, arms in sorted(runs.items()):
    s, m = key
    a, b = arms.get("A", []), arms.get("B", [])
    if not a or not b:
        print("%-3s %6d  missing an arm (A %d runs, B %d runs)" % (s, m, len(a), len(b)))
        continue
    med = lambda v, i: statistics.median(x[i] for x in v)
    ma, mb = med(a, 0), med(b, 0)
    cfg = configs[key]
    # every: B's layer time below A's in every run
    print("%-3s %6d %10.1f %10.1f %7.3f %8.1f %8.1f %8.1f %8.1f  %-5s %s" % (
        s, m, ma, mb, mb / ma, med(a, 1), med(b, 1), med(a, 2), med(b, 2),
        "yes" if max(x[0] for x in b) < min(x[0] for x in a) else "no",
        cfg["B"] if cfg["B"] != cfg["A"] else "="))
PY
