#!/usr/bin/env bash
# Call 4: 7f9e614 (.devbin-d, the new align policy committed): the protocol run on the shipped
# recipe; then the large-M points where call 3 saw S1 M=8192 slower under the new policy with more
# power-capped samples, again as env arms of the dev build (.devbin-c), 4 rounds.
set -uo pipefail
cd "$(dirname "$0")/../../.."
OUT=${OUT:?}
OUT=$OUT/run BIN=.devbin-d timeout 330 bash bench/run_h200.sh --no-tests --recipe recipes/h200.json \
  --no-sweep > $OUT/run.log 2>&1
echo "protocol run exit $?"
BIN=.devbin-c ROUNDS=4 SHAPES=S1,S3 M=8192 LIMIT_S=60 \
  ARMS="ship=MOETUNE_DEV_ALIGN_IDS=8,MOETUNE_DEV_ALIGN_ONE_CTA=4096 new=MOETUNE_DEV_ALIGN_IDS=0" \
  OUT=$OUT/ab timeout 200 bash bench/run_h200_env_ab.sh 2>&1 | tail -8
tail -45 $OUT/run.log
