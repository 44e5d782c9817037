#!/usr/bin/env bash
# Device call 4 (nineteenth session; binaries of the commit that added the energy counter, kernels
# as c0199b0's): how much power our GEMMs draw against cuBLAS on the same flops. The NVML test,
# then moetune_sm90_bench --dense on the shipped recipe at M = 4096-16384, shapes S3, S1, S2, twice:
# per point the mean board power over the timed replays from NVML's energy counter for the layer
# (power_mean_w), our GEMM stages (stage_power_mean_w) and cuBLAS's dense GEMMs
# (dense_power_mean_w), beside their SM clocks and power-limited shares.
set -u
cd "$(dirname "$0")/../../.." || exit 2
export MOETUNE_CACHE_DIR=/tmp/moetune-cache
BIN=${BIN:-.devbin}
start=$(date +%s)
"$BIN/cuda_kernel_tests" --gtest_filter='NvmlTelemetry*' > "$OUT/nvml_test.log" 2>&1
echo "nvml test rc $?"; grep -E "^nvml:|PASSED|FAILED" "$OUT/nvml_test.log"
for run in 1 2; do
  mkdir -p "$OUT/run$run"
  timeout 250 "$BIN/moetune_sm90_bench" --recipe recipes/h200.json --no-sweep --dense \
    --shapes S3,S1,S2 --m 4096,8192,16384 --out "$OUT/run$run" > "$OUT/run$run/bench.log" 2>&1
  echo "run $run rc $? after $(( $(date +%s) - start )) s"
  grep -E "^ceilings" "$OUT/run$run/bench.log" | head -1
  python3 - "$OUT/run$run" <<'PY'
import csv, glob, sys
d = sys.argv[1]
main = [f for f in glob.glob(d + "/*.csv") if not f.endswith("-dense.csv")]
dense = glob.glob(d + "/*-dense.csv")
rows = {(r["shape"], r["M"]): r for r in csv.DictReader(open(main[0]))} if main else {}
print("shp M | layer_us clk cap W | g1 g2 clk cap W | dense_g1 dense_g2 clk cap W")
for r in csv.DictReader(open(dense[0])) if dense else []:
    m = rows.get((r["shape"], r["M"]), {})
    print(r["shape"], r["M"], "|", m.get("time_us", "?")[:7], m.get("sm_clock_mhz"),
          m.get("power_capped_frac", "")[:4], m.get("power_mean_w", "")[:5], "|", r["gemm1_us"][:7],
          r["gemm2_us"][:7], r["stage_sm_clock_mhz"], r["stage_power_capped_frac"][:4],
          r["stage_power_mean_w"][:5], "|", r["dense_gemm1_us"][:7], r["dense_gemm2_us"][:7],
          r["dense_sm_clock_mhz"], r["dense_power_capped_frac"][:4], r["dense_power_mean_w"][:5])
PY
done
