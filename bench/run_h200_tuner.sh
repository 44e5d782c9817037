#!/usr/bin/env bash
# The tuner's three issue-4 targets on one H200, in one device call (at most about 8.5 minutes),
# every part bounded by `timeout` within TUNER_BUDGET_S seconds:
#   a. a full S1 table (recipes/h200-s1-tune.json: S1's 12 buckets, nothing pinned) tuned from a
#      cold cubin cache, compiles included, with its wall time (target <= 300 s), run as a user
#      would (no --repeat; TUNER_A_REPEAT=N adds --repeat N, the final round N more times, whose
#      cost then counts against a: at 4 it was about 70 s of S1 16384's 106 s on the H200);
#      --budget-min (the target less 15 s) ends it before the hard limit (target + 30 s), so it
#      writes its table even when slow (candidates it then leaves out are counted as not run, and
#      target a is not met);
#   b. the exhaustive sweep (tune --exhaustive) of the same space at TUNER_EXH_BUCKETS (empty:
#      skipped, so c gets the time for its whole tunes), each run
#      with a's table row as its incumbent (--merge into a copy), so the tuned winner and the
#      exhaustive best are timed in the same final round (target: within 2%);
#   d. when 75 s are left: wrong/nan/compile faults on the cuda demo shape (45 s cap; b leaves
#      room for it; TUNER_FAULTS=0 skips it, leaving its time to c);
#   c. more full tunes of S1 with fresh stores (warm cubin cache) while the budget lasts, numbered
#      TUNER_C_FROM (2) to TUNER_C_TO (5), for winner agreement over a + c (target: same winner or
#      a tie in >= 95% of buckets). TUNER_ONLY_C=1 runs c alone (no a or d, b only at buckets
#      TUNER_EXH_BUCKETS names, against the table an earlier call's a left in $OUT/tuned; the
#      cubin cache is kept): a second call adds tunes, e.g. TUNER_ONLY_C=1 TUNER_C_FROM=5, and
#      bench/tuner_targets.py reads the stores of both calls put in one folder.
# TUNER_TUNE_ARGS adds tune options to a, b and c (e.g. "--stage2-gemm1s 2").
# bench/tuner_targets.py then writes $OUT/tuner-targets.csv and $OUT/summary.txt; everything else
# (stores, JSON, stderr, tables) is packed into $OUT/tuner-run.tgz, because the device tool brings
# back at most 8 files: $OUT ends with summary.txt, run.log, tuner-targets.csv and tuner-run.tgz.
# The summary is printed last. Binaries in $BIN (scripts/build_device.sh).
# A cpu dry run (a cpu recipe also switches d to recipes/demo.json):
#   BIN=build-tuner TUNER_RECIPE=recipes/demo.json TUNER_EXH_BUCKETS=4,16 OUT=/tmp/tt \
#   bash bench/run_h200_tuner.sh
set -uo pipefail
cd "$(dirname "$0")/.."
BIN=${BIN:-.devbin}
OUT=${OUT:-build/results/$(date +%F)-tuner-targets}
RECIPE=${TUNER_RECIPE:-recipes/h200-s1-tune.json}
EXH_BUCKETS=${TUNER_EXH_BUCKETS-16,256,4096}
ONLY_C=${TUNER_ONLY_C:-0}
# Extra tune options for parts a, b and c (e.g. "--stage2-gemm1s 2"), split on spaces.
read -ra EXTRA <<< "${TUNER_TUNE_ARGS:-}"
C_FROM=${TUNER_C_FROM:-2}
C_TO=${TUNER_C_TO:-5}
A_REPEAT=${TUNER_A_REPEAT:-0}
# The whole script; packing and the summary take a few seconds more. The device call allows 10
# minutes, start and copy-back not counted: 500 s leaves room for a run that overruns a timeout.
BUDGET_S=${TUNER_BUDGET_S:-500}
TUNE_LIMIT_S=${TUNER_TUNE_LIMIT_S:-300}  # part a (the target); b, d and c get what is left
FAULT_S=45                               # d's cap; b leaves it FAULT_S + 60 s (d, then c)
RUN_FAULTS=${TUNER_FAULTS:-1}            # 0: no d, its time goes to c
if [ "$ONLY_C" = 1 ]; then
  RUN_FAULTS=0
  EXH_BUCKETS=${TUNER_EXH_BUCKETS-}  # b only when asked, against $OUT/tuned of an earlier call
fi
if [ -z "${FAULT_RECIPE:-}" ]; then
  # The faults run on the tuned recipe's backend: the cuda demo shape, or the cpu one in a dry run.
  FAULT_RECIPE=recipes/demo-h200.json
  grep -q '"backend": *"cpu"' "$RECIPE" && FAULT_RECIPE=recipes/demo.json
fi
export MOETUNE_CACHE_DIR=${MOETUNE_CACHE_DIR:-/tmp/moetune-tuner-cache}
# Part a is measured from a cold cache: every compile counts.
[ "$ONLY_C" = 1 ] || rm -rf "$MOETUNE_CACHE_DIR"
mkdir -p "$OUT"
t0=$(date +%s)
left() { echo $(( BUDGET_S - ($(date +%s) - t0) )); }
log() { echo "[$(( $(date +%s) - t0 )) s] $*" | tee -a "$OUT/run.log"; }
# -k: a tuner that outlives SIGTERM by 10 s is killed (its workers die with it: PDEATHSIG).
bounded() { local s=$1; shift; timeout -k 10 "$s" "$@"; }
git rev-parse HEAD > "$OUT/commit.txt" 2>/dev/null || true
timeout 20 nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.max.sm,power.draw \
  --format=csv > "$OUT/gpu.csv" 2>&1 || true

# a. the S1 table, cold cache, timed; the tuner's own budget ends it before the target and the
# limit (its final rounds run past the budget), so it writes its table and JSON even when slow.
if [ "$ONLY_C" = 1 ]; then
  log "a: skipped (TUNER_ONLY_C=1)"
else
  limit=$(( $(left) - 120 < TUNE_LIMIT_S + 30 ? $(left) - 120 : TUNE_LIMIT_S + 30 ))
  [ "$limit" -ge 40 ] || limit=$(( $(left) / 2 ))  # a small TUNER_BUDGET_S (dry runs)
  budget_s=$(( (limit - 30 < TUNE_LIMIT_S ? limit - 30 : TUNE_LIMIT_S) - 15 ))
  [ "$budget_s" -ge 10 ] || budget_s=10
  budget_min=$(awk -v s="$budget_s" 'BEGIN { printf "%.2f", s / 60 }')
  log "a: tune $RECIPE (budget $budget_min min, limit ${limit} s)"
  start=$(date +%s)
  repeat_args=()
  [ "$A_REPEAT" -gt 0 ] && repeat_args=(--repeat "$A_REPEAT")
  bounded "$limit" "$BIN/moetune" tune --recipe "$RECIPE" --out "$OUT/tuned" "${repeat_args[@]}" \
    "${EXTRA[@]}" --budget-min "$budget_min" --store "$OUT/tune-a.db" --json > "$OUT/tune-a.json" \
    2> "$OUT/tune-a.err"
  rc=$?
  wall=$(( $(date +%s) - start ))
  echo "{\"part\": \"a\", \"exit\": $rc, \"wall_s\": $wall, \"limit_s\": $limit}" \
    > "$OUT/tune-a.time.json"
  log "a: exit $rc after $wall s"; tail -3 "$OUT/tune-a.err"
fi

# b. exhaustive at a few buckets, a's winner as the incumbent; one bounded run per bucket.
cp -r "$OUT/tuned" "$OUT/exhaustive" 2>/dev/null || mkdir -p "$OUT/exhaustive"
exh=()
[ -n "$EXH_BUCKETS" ] && IFS=',' read -ra exh <<< "$EXH_BUCKETS"
if [ "${#exh[@]}" -gt 0 ] && [ ! -d "$OUT/tuned" ]; then
  log "b: skipped (no table of part a in $OUT/tuned)"
  exh=()
fi
for i in "${!exh[@]}"; do
  b=${exh[$i]}
  share=$(( ($(left) - FAULT_S - 60) / (${#exh[@]} - i) ))
  if [ "$share" -lt 15 ]; then log "b: bucket $b skipped (budget)"; continue; fi
  log "b: exhaustive bucket $b (limit ${share} s)"
  start=$(date +%s)
  bounded "$share" "$BIN/moetune" tune --recipe "$RECIPE" --buckets "$b" --exhaustive --merge \
    "${EXTRA[@]}" --out "$OUT/exhaustive" --store "$OUT/exhaustive-$b.db" --json \
    > "$OUT/exhaustive-$b.json" 2> "$OUT/exhaustive-$b.err"
  log "b: bucket $b exit $? after $(( $(date +%s) - start )) s"
done

# d. (cheap, before c) the wrong/nan/compile faults on the device: wrong and nan now corrupt the
# device output after the kernels, so the correctness gate must catch them (wrong_result).
if [ "$RUN_FAULTS" = 0 ]; then
  log "d: skipped (TUNER_FAULTS=0)"
elif [ "$(left)" -gt $(( FAULT_S + 30 )) ]; then
  log "d: fault injection on $FAULT_RECIPE"
  start=$(date +%s)
  bounded "$FAULT_S" "$BIN/moetune" tune --recipe "$FAULT_RECIPE" --buckets 16 --budget-min 0.4 \
    --timeout-s 10 --inject-fault wrong@1,nan@2,compile@3 --out "$OUT/faults" \
    --store "$OUT/faults.db" --json > "$OUT/faults.json" 2> "$OUT/faults.err"
  log "d: exit $? after $(( $(date +%s) - start )) s"
  python3 - "$OUT/faults.db" <<'PY' | tee -a "$OUT/run.log"
import sqlite3, sys
try:
    db = sqlite3.connect("file:%s?mode=ro" % sys.argv[1], uri=True)
    rows = db.execute("SELECT fault, outcome, substr(reason, 1, 90) FROM measurements "
                      "WHERE fault != '' AND round = 0").fetchall()
except sqlite3.Error as e:
    rows = []
    print("d: no fault measurements in %s (%s)" % (sys.argv[1], e))
for fault, outcome, reason in rows:
    print("d: %-8s -> %-14s %s" % (fault, outcome, reason))
PY
else
  log "d: skipped ($(left) s left)"
fi

# c. repeated full tunes (fresh store, warm cubin cache) while the budget lasts; a tune is started
# only when the time left covers the previous warm tune plus 10% (a tune cut short counts only the
# buckets it finished, with a store killed mid-bucket: a fifth tune once got 83 of ~93 s).
last_s=0
for k in $(seq "$C_FROM" "$C_TO"); do
  limit=$(( $(left) - 20 ))
  if [ "$limit" -lt 40 ] || [ "$limit" -lt $(( last_s * 11 / 10 )) ]; then
    log "c: tune $k skipped (${limit} s left, the last tune took ${last_s} s)"
    break
  fi
  log "c: repeat tune $k (limit ${limit} s)"
  start=$(date +%s)
  bounded "$limit" "$BIN/moetune" tune --recipe "$RECIPE" --out "$OUT/repeat-$k" "${EXTRA[@]}" \
    --store "$OUT/tune-$k.db" --json > "$OUT/tune-$k.json" 2> "$OUT/tune-$k.err"
  rc=$?
  last_s=$(( $(date +%s) - start ))
  log "c: tune $k exit $rc after ${last_s} s"
done

rm -rf "$OUT/repeat-"*  # the tables of c are not needed, their stores and JSON are
python3 bench/tuner_targets.py "$OUT" > "$OUT/summary.txt" 2>&1 ||
  echo "bench/tuner_targets.py failed (exit $?)" >> "$OUT/summary.txt"
# The device tool brings back at most 8 files (and may leave out names with '=' or ','): all but
# the summary, the log and the CSV go into one archive, stores with their -wal and -shm.
mapfile -t rest < <(ls -A "$OUT" | grep -vxF -e summary.txt -e run.log -e tuner-targets.csv \
  -e tuner-run.tgz)
if [ "${#rest[@]}" -gt 0 ] && tar czf "$OUT/tuner-run.tgz" -C "$OUT" -- "${rest[@]}"; then
  (cd "$OUT" && rm -rf -- "${rest[@]}")
fi
log "done: $(ls -A "$OUT" | wc -l) files in $OUT ($(ls -A "$OUT" | tr '\n' ' '))"
cat "$OUT/summary.txt"
