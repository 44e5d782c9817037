#!/usr/bin/env bash
# Device call 7 (twenty-sixth session): a second protocol run of the shipped recipe on the same
# machine right after calls 4-6 (its cubin cache warm), binaries of 4049eb8.
mkdir -p $OUT/run2 && MOETUNE_CACHE_DIR=/tmp/moetune-cache OUT=$OUT/run2 BIN=.devbin-c \
  timeout -k 5 200 bash bench/run_h200.sh --no-tests --recipe recipes/h200.json --no-sweep \
  > $OUT/run2/bench.log 2>&1
echo "rc $?"
grep -E "^ceilings|geomean" $OUT/run2/bench.log | head -4
