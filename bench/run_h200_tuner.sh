#!/usr/bin/env bash
# Device check of the tuner on the cuda backend (issue 4): the GPU variants of fault injection and
# a budgeted tune of the small cuda demo shape, each bounded in time. Binaries in .devbin/.
set -uo pipefail
BIN=${BIN:-.devbin}
OUT=${OUT:-bench/results}
export MOETUNE_CACHE_DIR=${MOETUNE_CACHE_DIR:-/tmp/moetune-cache}
mkdir -p "$OUT"
start=$(date +%s)
timeout 75 "$BIN/moetune" tune --recipe recipes/demo-h200.json --buckets 1 --budget-min 0.6 \
  --timeout-s 15 --inject-fault crash@1,hang@2,wrong@3,nan@4,launch@5,compile@6,oom@7 \
  --store "$OUT/tuner-faults.db" --out "$OUT/faults" --json > "$OUT/tuner-faults.json" 2> "$OUT/tuner-faults.err"
echo "faults run exit $? after $(( $(date +%s) - start )) s"; tail -5 "$OUT/tuner-faults.err"
start=$(date +%s)
timeout 40 "$BIN/moetune" tune --recipe recipes/demo-h200.json --buckets 64 --inject-fault crash@all \
  --timeout-s 5 --out "$OUT/allfail" > "$OUT/tuner-allfail.txt" 2>&1
echo "all-fail run exit $? after $(( $(date +%s) - start )) s"; tail -3 "$OUT/tuner-allfail.txt"
