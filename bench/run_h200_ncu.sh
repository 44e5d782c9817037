#!/usr/bin/env bash
# Hardware counters of the shipped kernels at chosen points, in one device call: for each point
# (shape:M of recipes/h200.json), Nsight Compute profiles the first GEMM1 and GEMM2 launches of
# moetune_sm90_bench running the shipped config (--no-sweep; its check runs the layer first), with
# the clocks left as they are (--clock-control none, as the device notes ask), and saves the full
# report per point; then one summary table (duration, SM clock, DRAM / compute / L1 / L2 throughput,
# shared-memory wavefronts, top warp stall) is printed last. The metric names the device's ncu
# knows for the tensor pipes go to $OUT/tensor-metrics.txt, for a --metrics run next.
# SOURCE=1 instead records the source page (warp stall samples per SASS instruction, CSV) of the
# matched kernels per point into src-<shape>-<M>.csv.gz and prints bench/ncu_stalls.py of each
# (e.g. KERNELS=decode POINTS=S1:1,S2:1: where the decode kernels' warps wait).
# Usage: POINTS=S1:4096,S2:2048 bench/run_h200_ncu.sh   (binaries of scripts/build_device.sh)
# Knobs: BIN (.devbin), OUT, POINTS (S1:4096,S2:2048,S2:8192,S3:512: the worst mid-M points and
# S2's short-K GEMM2), KERNELS (ncu --kernel-name regex, default gemm), LIMIT_S (per point, 150),
# RECIPE (recipes/h200.json; a variant from bench/recipe_variant.py profiles other configs).
# Outputs: ncu-<shape>-<M>.txt (ncu's details page), bench-<shape>-<M>.log, summary.txt.
set -uo pipefail
cd "$(dirname "$0")/.."
BIN=${BIN:-.devbin}
OUT=${OUT:-build/results/$(date +%F)-ncu}
POINTS=${POINTS:-S1:4096,S2:2048,S2:8192,S3:512}
KERNELS=${KERNELS:-gemm}
LIMIT_S=${LIMIT_S:-150}
RECIPE=${RECIPE:-recipes/h200.json}
NCU=${NCU:-ncu}
mkdir -p "$OUT"
export MOETUNE_CACHE_DIR=${MOETUNE_CACHE_DIR:-/tmp/moetune-ncu-cache}
if ! command -v "$NCU" > /dev/null; then
  echo "run_h200_ncu: '$NCU' is not on the PATH; set NCU=/path/to/ncu" | tee "$OUT/summary.txt"
  exit 2
fi
"$NCU" --query-metrics --chip gh100 2> /dev/null | grep -Ei "tensor|gmma|hmma" \
  > "$OUT/tensor-metrics.txt" || true
IFS=',' read -ra points <<< "$POINTS"
if [ "${SOURCE:-0}" = 1 ]; then
  for point in "${points[@]}"; do
    shape=${point%%:*}
    m=${point##*:}
    tag="$shape-$m"
    timeout -k 10 "$LIMIT_S" "$NCU" --clock-control none --target-processes all \
      --kernel-name "regex:$KERNELS" --launch-count 2 --section SourceCounters \
      --section WarpStateStats --page source --print-source sass --csv \
      "$BIN/moetune_sm90_bench" --recipe "$RECIPE" --shapes "$shape" --m "$m" --no-sweep \
      --out "$OUT/bench-out" 2> "$OUT/bench-$tag.log" | gzip > "$OUT/src-$tag.csv.gz"
    echo "[$(date +%T)] $tag exit ${PIPESTATUS[0]}"
    python3 bench/ncu_stalls.py "$OUT/src-$tag.csv.gz" | tee -a "$OUT/summary.txt"
  done
  rm -rf "$OUT/bench-out"
  exit 0
fi
for point in "${points[@]}"; do
  shape=${point%%:*}
  m=${point##*:}
  tag="$shape-$m"
  echo "[$(date +%T)] $tag"
  timeout -k 10 "$LIMIT_S" "$NCU" --clock-control none --target-processes all \
    --kernel-name "regex:$KERNELS" --launch-count 2 \
    --section SpeedOfLight --section MemoryWorkloadAnalysis \
    --section MemoryWorkloadAnalysis_Tables --section ComputeWorkloadAnalysis \
    --section WarpStateStats --section LaunchStats --section Occupancy \
    "$BIN/moetune_sm90_bench" --recipe "$RECIPE" --shapes "$shape" --m "$m" --no-sweep \
    --out "$OUT/bench-out" > "$OUT/ncu-$tag.txt" 2> "$OUT/bench-$tag.log"
  echo "  exit $? ($(grep -c "Section: GPU Speed Of Light" "$OUT/ncu-$tag.txt") kernels profiled)"
done
rm -rf "$OUT/bench-out"
python3 - "$OUT" "$POINTS" > "$OUT/summary.txt" << 'EOF'
import re, sys
out, points = sys.argv[1], sys.argv[2].split(",")
keys = [("Duration", "time"), ("SM Frequency", "sm_clock"), ("DRAM Throughput", "dram%"),
        ("Compute (SM) Throughput", "sm%"), ("L1/TEX Cache Throughput", "l1%"),
        ("L2 Cache Throughput", "l2%"), ("Executed Ipc Active", "ipc")]
print("%-9s %-38s %s" % ("point", "kernel", "  ".join("%9s" % k[1] for k in keys)))
for point in points:
    tag = point.replace(":", "-")
    try:
        text = open("%s/ncu-%s.txt" % (out, tag)).read()
    except OSError:
        print("%-9s (no report)" % point)
        continue
    for block in re.split(r"\n  (?=\S.*\(\d+, \d+, \d+\)x\()", text)[1:]:
        name = block.split("(")[0].strip()[:38]
        vals = []
        for key, _ in keys:
            found = re.search(r"^\s+%s\s+(\S+)\s+([\d,.]+)" % re.escape(key), block, re.M)
            unit = found.group(1) if found else ""
            vals.append(found.group(2) + (unit if unit in ("us", "ms", "Ghz") else "")
                        if found else "-")
        print("%-9s %-38s %s" % (point, name, "  ".join("%9s" % v for v in vals)))
EOF
cat "$OUT/summary.txt"
