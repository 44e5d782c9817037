#!/usr/bin/env bash
# Arms of one build that differ only in their environment (lever knobs, e.g. a bitwise lever on
# against off), measured against each other on the H200 in one device call: GPU tests first
# (TEST_FILTER; empty: none), then ROUNDS rounds of `moetune_sm90_bench --no-sweep` on the recipe at
# SHAPES x M, the arms in a rotated order each round (fresh processes, one cubin cache: the same
# kernels), then one summary: per point the median over rounds of each arm's layer time and GEMM
# stage times, its ratio to the first arm, and whether every run gave the first arm's output
# digest (a bitwise lever must; DIGESTS=any allows otherwise). Raw runs land in $OUT/runs.tgz.
# Usage: ARMS="off=MOETUNE_LEVER_PDL=off on=MOETUNE_LEVER_PDL=on" M=256,2048 OUT=$OUT \
#   bench/run_h200_env_ab.sh
# ARMS: space-separated NAME=VAR=VALUE[,VAR=VALUE...]; the first arm is the baseline.
# Knobs: BIN (.devbin), ARMS, SHAPES (S1,S2,S3), M, ROUNDS (2), TEST_FILTER, DIGESTS (equal|any),
# RECIPE (recipes/h200.json), LIMIT_S (per bench run, 150). Exit 1 when a run or the tests failed,
# or DIGESTS=equal and the digests differ.
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
OUT=${OUT:-bench/results/$(date +%F)-env-ab}
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
    env "${vars[@]}" timeout -k 10 "$LIMIT_S" "$BIN/moetune_sm90_bench" --recipe "$RECIPE" \
      --shapes "$SHAPES" --m "$M" --no-sweep --out "$work/runs/$name-$r" \
      > "$work/runs/$name-$r.log" 2>&1
    rc=$?
    ((rc != 0)) && status=1
    echo "round $r arm $name exit $rc"
  done
done
tar czf "$OUT/runs.tgz" -C "$work" runs
python3 - "$work/runs" "$ROUNDS" "$DIGESTS" "${names[@]}" > "$OUT/summary.txt" << 'PY' || status=1
import csv, glob, os, statistics, sys
runs, rounds, digests, names = sys.argv[1], int(sys.argv[2]), sys.argv[3], sys.argv[4:]
data = {}  # (shape, M) -> arm -> rows
for arm in names:
    for r in range(1, rounds + 1):
        for f in glob.glob(os.path.join(runs, "%s-%d" % (arm, r), "*.csv")):
            for row in csv.DictReader(open(f)):
                data.setdefault((row["shape"], int(row["M"])), {}).setdefault(arm, []).append(row)
base = names[0]
print("%-4s %6s %-10s %10s %7s %9s %9s %s" % ("shp", "M", "arm", "us", "/" + base[:6], "gemm1",
      "gemm2", "bits"))
same_all = True
for (shape, m), arms in sorted(data.items()):
    ref = {x["digest"] for x in arms.get(base, [])}
    b = statistics.median(float(x["time_us"]) for x in arms[base]) if arms.get(base) else float("nan")
    for arm in names:
        rows = arms.get(arm, [])
        if not rows:
            print("%-4s %6d %-10s (no runs)" % (shape, m, arm))
            same_all = False
            continue
        med = lambda key: statistics.median(float(x[key]) for x in rows)
        same = len(ref) == 1 and {x["digest"] for x in rows} == ref and len(rows) == rounds
        same_all &= same
        print("%-4s %6d %-10s %10.2f %7.3f %9.2f %9.2f %s" % (shape, m, arm, med("time_us"),
              med("time_us") / b, med("gemm1_us"), med("gemm2_us"), "same" if same else "DIFF"))
if digests == "equal" and not same_all:
    print("DIGESTS DIFFER (or runs missing) where DIGESTS=equal")
    sys.exit(1)
PY
cat "$OUT/summary.txt"
echo "exit status $status"
exit $status
