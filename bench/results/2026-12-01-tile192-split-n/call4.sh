#!/usr/bin/env bash
# Device call 4 (eighteenth session): tma_ws block_n chosen for the fewest padded columns at the
# tile count of 256-wide tiles (recipe-balanced-bn.json, config only), each pinned row against the
# default rule's config timed in the same run (the CSV's default_us), two runs: S1 M=16384 (GEMM1
# 232, GEMM2 248 for I = 1856, K = 2688), the E = 40 gelu shape H5 M=1024/2048/4096 (GEMM1 240 for
# I = 704), gpt-oss-120b H3 M=8192/16384 (GEMM2 240 for K = 2880); S1 M=8192's shipped row
# (232 / 224) against its default as well. Carry .devbin-x (a/: b259a37's bench binary).
set -u
start=$(date +%s)
D=bench/results/2026-12-01-tile192-split-n
export MOETUNE_CACHE_DIR=/tmp/mc
for run in 1 2; do
  timeout 200 .devbin-x/a/moetune_sm90_bench --recipe $D/recipe-balanced-bn.json --no-sweep \
    --shapes S1 --shape H5=40,1536,704,5,gelu_tanh --shape H3=128,2880,2880,4,silu \
    --m 1024,2048,4096,8192,16384 --out $OUT/run$run > $OUT/run$run.log 2>&1
  echo "run $run exit $? after $(( $(date +%s) - start )) s"
done
python3 - $OUT <<'PY'
import csv, glob, sys
print("sh     M   row us  default us  row/default  row config | default config")
for run in (1, 2):
    for f in sorted(glob.glob(sys.argv[1] + "/run%d/*.csv" % run)):
        if "winners" in f or "dense" in f:
            continue
        for r in csv.DictReader(open(f)):
            if r["config"] != r["default_config"]:
                print("%s %5s %8.1f %10.1f %8.3f  %s | %s" % (
                    r["shape"], r["M"], float(r["time_us"]), float(r["default_us"]),
                    float(r["time_us"]) / float(r["default_us"]), r["config"], r["default_config"]))
PY
