#!/usr/bin/env bash
# Device call 5 (twenty-first session): is the interleaved protocol itself slower? The regenerated
# recipe (recipes/h200.json from call 4's run1) timed by the old protocol (row, then default:
# moetune_sm90_bench of b9efb65 in .devbin), the new one (row, default, default, row: aae8b83 in
# .devbin-p), and the old one again, back to back on one machine.
set -u
cd "$(dirname "$0")/../../.." || exit 2
export MOETUNE_CACHE_DIR=/tmp/moetune-cache
start=$(date +%s)
for r in old1:.devbin new:.devbin-p old2:.devbin; do
  name=${r%%:*} bin=${r##*:}
  mkdir -p "$OUT/$name"
  OUT=$OUT/$name BIN=$bin timeout 180 bash bench/run_h200.sh --no-tests --recipe recipes/h200.json \
    --no-sweep > "$OUT/$name/bench.log" 2>&1
  echo "$name rc $? after $(( $(date +%s) - start )) s"
  grep -E "^ceilings|geomean" "$OUT/$name/bench.log"
done
