#!/usr/bin/env bash
# Device call 3 (twentieth session): the protocol run of the shipped recipe on b9efb65 (the tma_ws
# GEMM1 gather's zeros; bench/run_h200.sh: ceilings, every point of S1-S3, each pinned row and the
# default rule), then two main-loop variants against b9efb65 at the points the cp.async main loop
# serves (bench/run_h200_bin_ab.sh, 2 rounds, digests equal): m2 = mainloop-alias.patch (a padding
# row's src-size-0 copy aliases the tile's first row at the same k: no shared hot address), m1 =
# mainloop-zeros-no-clobber.patch (call 1's zeros, the asm without its memory clobber).
set -u
cd "$(dirname "$0")/../../.." || exit 2
export MOETUNE_CACHE_DIR=/tmp/moetune-cache
start=$(date +%s)
mkdir -p "$OUT/shipped"
OUT=$OUT/shipped BIN=.devbin timeout 300 bash bench/run_h200.sh --no-tests --recipe recipes/h200.json \
  --no-sweep > "$OUT/shipped/bench.log" 2>&1
echo "shipped rc $? after $(( $(date +%s) - start )) s"
grep -E "^ceilings|geomean" "$OUT/shipped/bench.log"
for v in m2 m1; do
  left=$(( 560 - ($(date +%s) - start) ))
  (( left < 60 )) && { echo "no time left for $v"; break; }
  BIN_A=.devbin BIN_B=.devbin-$v SHAPES=S1,S2,S3 M=16,64,256,512 ROUNDS=2 LIMIT_S=60 \
    OUT=$OUT/$v timeout $(( left - 5 )) bash bench/run_h200_bin_ab.sh > "$OUT/$v.log" 2>&1
  echo "$v rc $? after $(( $(date +%s) - start )) s"
  grep -E "^S[123] |bits|DIFFER" "$OUT/$v.log" | awk '{print $1, $2, $3, $4, $5, $NF}'
done
