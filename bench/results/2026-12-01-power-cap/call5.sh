#!/usr/bin/env bash
# Device call 5 (nineteenth session; binaries of the commit that adds this script, kernels as
# c0199b0's): does the 2x1 cluster pair (the weight tile multicast to both CTAs: fewer L2-to-SM
# bytes per MMA) raise the power-limited clock of S3's large-M GEMMs? Recipe A/B (A B A B) of the
# shipped rows against recipe-s3-c2x1.json (both GEMMs of S3 M = 4096 and 8192 on cluster_m 2, as
# the shipped S3 M=16384 row; made by bench/recipe_variant.py --set both.launch.cluster_m=2
# --shapes S3 --min-m 4096 --max-m 8192), the CSVs with NVML's clock event reasons.
set -u
cd "$(dirname "$0")/../../.." || exit 2
export MOETUNE_CACHE_DIR=/tmp/moetune-cache
RUN_S=90 bash bench/run_h200_recipe_ab.sh recipes/h200.json \
  bench/results/2026-12-01-power-cap/recipe-s3-c2x1.json --shapes S3 --m 4096,8192,16384
mkdir -p /tmp/ab5 && tar xzf "$OUT/ab.tgz" -C /tmp/ab5 2>/dev/null
python3 - /tmp/ab5 <<'PY'
import csv, glob, sys
print("run shp M time_us clk cap config")
for f in sorted(glob.glob(sys.argv[1] + "/**/*.csv", recursive=True)):
    if f.endswith("-dense.csv"): continue
    for r in csv.DictReader(open(f)):
        print(f.split("/")[-2], r["shape"], r["M"], r["time_us"][:7], r["sm_clock_mhz"],
              r.get("power_capped_frac", "")[:4], r["config"], "default", r["default_us"][:7])
PY
