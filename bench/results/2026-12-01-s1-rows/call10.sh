#!/usr/bin/env bash
# Device call 10 (twenty-first session): the decode points (M = 1, 4) with the shipped rows (the
# interleaved protocol, aae8b83's bench in .devbin-p, b9efb65's kernels), then the bench's sweep
# of the decode kernels alone (--sweep-decode-only: the best of their candidates, whatever the
# default does) at the same points on the same machine, to see whether a decode config now beats
# the shipped rows (S1 M=1 1.33 x floor, S2 M=1 1.48: the decode GEMM2 streams at ~3 TB/s alone,
# GEMM1 at ~4). Each folder is packed into a .tgz (8-file limit).
set -u
cd "$(dirname "$0")/../../.." || exit 2
export MOETUNE_CACHE_DIR=/tmp/moetune-cache
start=$(date +%s)
mkdir -p "$OUT/shipped" "$OUT/sweep"
timeout 200 .devbin-p/moetune_sm90_bench --out "$OUT/shipped" --recipe recipes/h200.json \
  --m 1,4 --no-sweep > "$OUT/shipped/bench.log" 2>&1
echo "shipped rc $? after $(( $(date +%s) - start )) s"
left=$(( 560 - ($(date +%s) - start) ))
timeout $left .devbin-p/moetune_sm90_bench --out "$OUT/sweep" --m 1,4 --sweep-decode-only \
  > "$OUT/sweep/bench.log" 2>&1
echo "sweep rc $? after $(( $(date +%s) - start )) s"
for d in shipped sweep; do
  echo "== $d"
  grep -E "^S[123] M=" "$OUT/$d/bench.log"
  tar czf "$OUT/$d.tgz" -C "$OUT" "$d" && rm -rf "${OUT:?}/$d"
done
