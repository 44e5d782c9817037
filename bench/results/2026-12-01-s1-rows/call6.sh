#!/usr/bin/env bash
# Device call 6 (twenty-first session): the shipped recipe (regenerated from call 4's run1) in three
# back-to-back protocol runs of the interleaved protocol (aae8b83's bench in .devbin-p, b9efb65's
# kernels), to see how far the geomeans move from run to run on one machine. Each run's folder is
# packed into runN.tgz (the device returns at most 8 files); geomeans print last.
set -u
cd "$(dirname "$0")/../../.." || exit 2
export MOETUNE_CACHE_DIR=/tmp/moetune-cache
start=$(date +%s)
for r in run1 run2 run3; do
  mkdir -p "$OUT/$r"
  OUT=$OUT/$r BIN=.devbin-p timeout 170 bash bench/run_h200.sh --no-tests --recipe recipes/h200.json \
    --no-sweep > "$OUT/$r/bench.log" 2>&1
  echo "$r rc $? after $(( $(date +%s) - start )) s"
  tar czf "$OUT/$r.tgz" -C "$OUT" "$r" && rm -rf "${OUT:?}/$r"
done
for r in run1 run2 run3; do
  tar xzf "$OUT/$r.tgz" -O "$r/bench.log" | grep -E "^ceilings|geomean" | sed "s/^/$r /"
done
