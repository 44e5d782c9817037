#!/usr/bin/env bash
# Device run of the bench and A/B protocol on the cuda backend (issue 5), in one call (~3 min):
#   1. moetune bench over the three shapes of recipes/h200.json at a few M, configs resolved from
#      tables/NVIDIA_H200: ceilings measured in the same run, floor, t/floor, two checked runs
#      (digest), telemetry;
#   2. moetune ab on fewer points with three arms, each in fresh processes, interleaved:
#      tables (the baseline), default (the backend's default configs: other tiles, so other
#      digests; --digests any) and tables,levers:pdl=off (pdl is a bitwise lever: its digests
#      must equal the baseline's; the summary says whether they do);
#   3. moetune report of both folders on one page.
# Binaries: scripts/build_device.sh builds .devbin/moetune. Device tool: carry [".devbin"],
# command "bench/run_h200_ab.sh". Everything lands under $OUT (7 files: ab_h200.log, the bench
# folder's env.json and bench.csv, the A/B folder's env.json, ab.csv and ab_samples.csv, and
# report.html); the summary is printed last.
# Knobs: BIN, OUT, BENCH_M (1,16,256,2048), AB_M (16,256), REPEATS (20), ROUNDS (3).
set -uo pipefail
BIN=${BIN:-.devbin}
OUT=${OUT:-build/results}
BENCH_M=${BENCH_M:-1,16,256,2048}
AB_M=${AB_M:-16,256}
REPEATS=${REPEATS:-20}
ROUNDS=${ROUNDS:-3}
export MOETUNE_CACHE_DIR=${MOETUNE_CACHE_DIR:-/tmp/moetune-cache}
mkdir -p "$OUT"
log="$OUT/ab_h200.log"
: > "$log"
nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.max.sm,power.draw,power.limit \
  --format=csv 2>&1 | tee -a "$log"
start=$(date +%s)
elapsed() { echo "$(( $(date +%s) - start )) s"; }

# The dated folder a command made: the one folder under $OUT that was not there before it.
new_dir() { comm -13 <(echo "$1") <(ls -d "$OUT"/*/ 2>/dev/null) | head -1; }
before=$(ls -d "$OUT"/*/ 2>/dev/null)
echo "== bench (M $BENCH_M, $REPEATS repeats)" | tee -a "$log"
"$BIN/moetune" bench --backend cuda --recipe recipes/h200.json --tables tables/NVIDIA_H200 \
  --m "$BENCH_M" --repeats "$REPEATS" --warmup 3 --cooldown 0.5 --out "$OUT" >> "$log" 2>&1
bench_rc=$?
echo "bench exit $bench_rc after $(elapsed)" | tee -a "$log"
bench_dir=$(new_dir "$before")
before=$(ls -d "$OUT"/*/ 2>/dev/null)

echo "== ab (M $AB_M, $ROUNDS rounds x $REPEATS repeats)" | tee -a "$log"
"$BIN/moetune" ab --backend cuda --recipe recipes/h200.json --m "$AB_M" --repeats "$REPEATS" \
  --warmup 3 --rounds "$ROUNDS" --cooldown 0.5 --digests any --timeout-s 240 \
  --arm tables=tables:tables/NVIDIA_H200 --arm default=default \
  --arm pdl_off=tables:tables/NVIDIA_H200,levers:pdl=off --out "$OUT" >> "$log" 2>&1
ab_rc=$?
echo "ab exit $ab_rc after $(elapsed)" | tee -a "$log"
ab_dir=$(new_dir "$before")

inputs=()
[ -n "$bench_dir" ] && inputs+=("$bench_dir")
[ -n "$ab_dir" ] && inputs+=("$ab_dir")
if [ ${#inputs[@]} -gt 0 ]; then
  "$BIN/moetune" report "${inputs[@]}" --out "$OUT/report.html" >> "$log" 2>&1
  echo "report exit $? after $(elapsed)" | tee -a "$log"
fi

echo
echo "== summary ($(elapsed); bench exit $bench_rc, ab exit $ab_rc)"
echo "-- bench: series, M, median us [p10, p90], CI, floor, t/floor, config, digest"
grep -E "^[a-z0-9-]+ +M=" "$log" | grep "t/floor" || echo "(no bench points; see $log)"
echo "-- ab: each arm against the tables arm"
grep -E " M=[0-9]+ +tables " "$log" || echo "(no A/B comparisons; see $log)"
pdl_mismatch=$(grep -c "DIGEST .*pdl_off" "$log")
echo "-- pdl=off digests differing from the baseline's: $pdl_mismatch point(s) (bitwise lever: expect 0)"
grep -E "^moetune |error|FAILED" "$log" | head -5
echo "files: $(cd "$OUT" && find . -type f | sort | tr '\n' ' ')"
