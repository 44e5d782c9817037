#!/usr/bin/env bash
# Device call 3 (nineteenth session; binaries of 7bde61b, kernels as c0199b0's): is the layer at
# large M held at the power limit where cuBLAS on the same flops is not? moetune_sm90_bench
# --dense on the shipped recipe at M = 2048-16384 (the layer, each GEMM stage, and cuBLAS on the
# dense GEMMs of the same sizes, each with NVML's clock and clock event reasons sampled), twice:
# shapes in the order S1, S2, S3 and then S3, S2, S1 (so that heat from what ran before shows).
set -u
cd "$(dirname "$0")/../../.." || exit 2
export MOETUNE_CACHE_DIR=/tmp/moetune-cache
BIN=${BIN:-.devbin}
start=$(date +%s)
nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.max.sm,power.draw,power.limit,temperature.gpu \
  --format=csv > "$OUT/nvidia-smi.txt" 2>&1
for order in S1,S2,S3 S3,S2,S1; do
  dir=$OUT/$(echo "$order" | tr 'S,' 's-')  # s1-s2-s3: the device tool brings back no commas
  mkdir -p "$dir"
  timeout 270 "$BIN/moetune_sm90_bench" --recipe recipes/h200.json --no-sweep --dense \
    --shapes "$order" --m 2048,4096,8192,16384 --out "$dir" > "$dir/bench.log" 2>&1
  echo "order $order rc $? after $(( $(date +%s) - start )) s"
done
nvidia-smi --query-gpu=clocks.sm,power.draw,temperature.gpu --format=csv >> "$OUT/nvidia-smi.txt" 2>&1
for order in S1,S2,S3 S3,S2,S1; do
  dir=$OUT/$(echo "$order" | tr 'S,' 's-')
  echo "== $order"
  grep -E "^ceilings" "$dir/bench.log" | head -1
  python3 - "$dir" <<'PY'
import csv, glob, sys
d = sys.argv[1]
main = [f for f in glob.glob(d + "/*.csv") if not f.endswith("-dense.csv")]
dense = glob.glob(d + "/*-dense.csv")
rows = {(r["shape"], r["M"]): r for r in csv.DictReader(open(main[0]))} if main else {}
print("shp M layer_us clk cap reasons | g1 g2 stage_clk stage_cap | dense_g1 dense_g2 dense_clk dense_cap")
for r in csv.DictReader(open(dense[0])) if dense else []:
    m = rows.get((r["shape"], r["M"]), {})
    print(r["shape"], r["M"], m.get("time_us", "?")[:7], m.get("sm_clock_mhz"), m.get("power_capped_frac", "")[:4],
          m.get("clock_reasons"), "|", r["gemm1_us"][:7], r["gemm2_us"][:7], r["stage_sm_clock_mhz"],
          r["stage_power_capped_frac"][:4], "|", r["dense_gemm1_us"][:7], r["dense_gemm2_us"][:7],
          r["dense_sm_clock_mhz"], r["dense_power_capped_frac"][:4], r["dense_clock_reasons"])
PY
done
