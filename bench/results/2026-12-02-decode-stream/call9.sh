#!/usr/bin/env bash
# Device call 9 (twenty-fifth session): moetune_sm90_bench as built at the HEAD that links its
# percentiles and ceilings from moetune_bench (pct() removed), at S2 M = 1, 2048 and S1 M = 2048 of
# the shipped recipe: it runs, and its p10 / p90 bracket the median. Binary in .devbin-p.
set -u
cd "$(dirname "$0")/../../.." || exit 2
export MOETUNE_CACHE_DIR=/tmp/moetune-cache
mkdir -p "$OUT"
timeout -k 5 200 .devbin-p/moetune_sm90_bench --recipe recipes/h200.json --shapes S1,S2 \
  --m 1,2048 --no-sweep --out "$OUT" > "$OUT/bench.log" 2>&1
echo "bench rc $?"
python3 - "$OUT" <<'PY'
import csv, glob, sys
for f in glob.glob(sys.argv[1] + "/*.csv"):
    for r in csv.DictReader(open(f)):
        ok = float(r["p10_us"]) <= float(r["time_us"]) <= float(r["p90_us"])
        print(r["shape"], r["M"], r["p10_us"], r["time_us"], r["p90_us"], "bracketed" if ok else "NOT BRACKETED")
PY
