#!/usr/bin/env bash
# Call 2: combine variants of one dev build (.devbin-c, the new one-CTA align in every arm),
# selected by MOETUNE_DEV_NVRTC_DEFINES=MOETUNE_COMBINE_VARIANT=N (a dev-only macro, not in the
# tree): v0 the committed loop (34 registers), v1 8 rows in flight (call 1's B, 58 registers),
# v2 4 rows under __launch_bounds__(256, 6) (40), v3 2 rows under (256, 6) (40), v4 4 rows (42).
set -uo pipefail
cd "$(dirname "$0")/../../.."
OUT=${OUT:?}
D=MOETUNE_DEV_NVRTC_DEFINES=MOETUNE_COMBINE_VARIANT
BIN=.devbin-c ROUNDS=3 SHAPES=S1,S2,S3 M=16,64,512,4096,16384 LIMIT_S=150 \
  ARMS="v0=$D=0 v1=$D=1 v2=$D=2 v3=$D=3 v4=$D=4" \
  OUT=$OUT/ab bash bench/run_h200_env_ab.sh 2>&1 | tail -50
