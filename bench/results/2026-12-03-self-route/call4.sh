#!/usr/bin/env bash
# Call 4: the protocol run of the shipped recipe at the landed head (503dffc; kernels of c99661d),
# so the closing note quotes a CSV of the code that ships: bench/run_h200.sh --no-sweep (every
# point: the recipe row and the default rule timed interleaved, L2 flushed, median), no tests
# (call 3 ran them on the same binaries).
set -uo pipefail
cd "$(dirname "$0")/../../.."
OUT=${OUT:?}
export MOETUNE_CACHE_DIR=$(mktemp -d)
OUT=$OUT/run BIN=.devbin timeout 300 bash bench/run_h200.sh --no-tests --recipe recipes/h200.json \
  --no-sweep > $OUT/run.log 2>&1
echo "protocol run exit $?"
tail -42 $OUT/run.log
