#!/usr/bin/env bash
# Arms of one build that differ only in their environment (lever knobs, e.g. a bitwise lever on
# against off), measured against each other on the H200 in one device call: GPU tests first
# (TEST_FILTER; empty: none), then ROUNDS rounds of `moetune_sm90_bench --no-sweep` on the recipe at
# SHAPES x M, the arms in a rotated order each round (fresh processes, one cubin cache: the same
# kernels), then one summary: per point the median over rounds of each arm's layer time and GEMM
# stage times, its ratio to the first arm, and whether every run of every arm gave the same output
# digest (a bitwise lever must; DIGESTS=any allows otherwise; bench/ab_summary.py). Raw runs land
# in $OUT/runs.tgz.
# Usage: ARMS="off=MOETUNE_LEVER_PDL=off on=MOETUNE_LEVER_PDL=on" M=256,2048 OUT=$OUT \
#   bench/run_h200_env_ab.sh
# ARMS: space-separated NAME=VAR=VALUE[,VAR=VALUE...]; the first arm is the baseline.
# Knobs: BIN (.devbin), ARMS, SHAPES (S1,S2,S3), M, ROUNDS (2), TEST_FILTER, DIGESTS (equal|any),
# RECIPE (recipes/h200.json; none: no recipe, so every point runs the default rule), EXTRA (more
# bench options, e.g. EXTRA="--shape H1=128,4096,1536,8,silu"), LIMIT_S (per bench run, 150).
# Exit 1 when a run or the tests failed, or DIGESTS=equal and the digests differ.
set -uo pipefail
cd "$(dirname "$0")/.."
BIN=${BIN:-.devbin}
ARMS=${ARMS:?name the arms, e.g. ARMS="off=MOETUNE_LEVER_PDL=off on=MOETUNE_LEVER_PDL=on"}
SHAPES=${SHAPES:-S1,S2,S3}
M=${M:-256,2048}
ROUNDS=${ROUNDS:-2}
TEST_FILTER=${TEST_FILTER-}
DIGESTS=${DIGESTS:-equal}
RECIPE=${RECIPE:-recipes/h200.json}
LIMIT_S=${LIMIT_S:-150}
EXTRA=${EXTRA-}
recipe_args=(--recipe "$RECIPE")
[ "$RECIPE" = none ] && recipe_args=()
OUT=${OUT:-build/results/$(date +%F)-env-ab}
export MOETUNE_CACHE_DIR=${MOETUNE_CACHE_DIR:-$(mktemp -d)}
work=$(mktemp -d)
mkdir -p "$OUT" "$work/runs"
status=0
read -r -a arms <<< "$ARMS"
names=()
for a in "${arms[@]}"; do names+=("${a%%=*}"); done
printf '%s\n' "${arms[@]}" > "$work/runs/arms.txt"
nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.max.sm,power.draw,power.limit \
  --format=csv > "$work/runs/gpu.csv" 2>&1
if [ -n "$TEST_FILTER" ]; then
  timeout -k 10 300 "$BIN/cuda_kernel_tests" --gtest_filter="$TEST_FILTER" \
    > "$work/runs/gpu_tests.log" 2>&1 || status=1
  echo "gpu tests ($TEST_FILTER): $(grep -E '^\[  (PASSED|FAILED) ' "$work/runs/gpu_tests.log" |
    tr '\n' ' ')"
fi
n=${#arms[@]}
for ((r = 1; r <= ROUNDS; ++r)); do
  for ((j = 0; j < n; ++j)); do
    i=$(((j + r - 1) % n))
    name=${names[$i]}
    spec=${arms[$i]#*=}
    IFS=, read -r -a vars <<< "$spec"
    env "${vars[@]}" timeout -k 10 "$LIMIT_S" "$BIN/moetune_sm90_bench" "${recipe_args[@]}" \
      --shapes "$SHAPES" $EXTRA --m "$M" --no-sweep --out "$work/runs/$name-$r" \
      > "$work/runs/$name-$r.log" 2>&1
    rc=$?
    ((rc != 0)) && status=1
    echo "round $r arm $name exit $rc"
  done
done
tar czf "$OUT/runs.tgz" -C "$work" runs
python3 bench/ab_summary.py "$work/runs" "$ROUNDS" "$DIGESTS" "${names[@]}" > "$OUT/summary.txt" ||
  status=1
cat "$OUT/summary.txt"
echo "exit status $status"
exit $status
