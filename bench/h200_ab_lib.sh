# bench/h200_ab_lib.sh: what the device A/B scripts share (sourced by run_h200_lever_ab.sh and
# run_h200_tables_ab.sh). They set BIN, OUT, AB_M, REPEATS, ROUNDS, TEST_FILTER, DIGESTS first.
#   ab_begin LOG_NAME      $OUT/LOG_NAME gets the commit and nvidia-smi's clocks; the GPU tests of
#                          TEST_FILTER run into $OUT/gpu_tests.log (test_rc; "skipped" if empty)
#   ab_run TITLE RECIPE ARM ARM [ARM...]   `moetune ab` of the arm specs (the first is the
#                          baseline) at AB_M (ab_rc), bounded by AB_S seconds (400)
#   ab_summary TITLE       the summary, printed last: exits, test results, the A/B's comparisons;
#                          returns 0 when the A/B and the GPU tests (if any ran) exited 0, else 1
export MOETUNE_CACHE_DIR=${MOETUNE_CACHE_DIR:-/tmp/moetune-cache}
start=$(date +%s)
elapsed() { echo "$(( $(date +%s) - start )) s"; }

ab_begin() {
  mkdir -p "$OUT"
  log="$OUT/$1"
  : > "$log"
  # The device's copy of the tree may carry an older .git: the binaries' own commit is in the A/B
  # folder's name and its env.json.
  echo "checkout HEAD $(git rev-parse HEAD 2>/dev/null) (binaries: see the A/B folder's env.json)" \
    >> "$log"
  nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.max.sm,power.draw,power.limit \
    --format=csv 2>&1 | tee -a "$log"
  test_rc=skipped
  if [ -n "$TEST_FILTER" ]; then
    timeout -k 10 300 "$BIN/cuda_kernel_tests" --gtest_filter="$TEST_FILTER" \
      > "$OUT/gpu_tests.log" 2>&1
    test_rc=$?
    echo "gpu tests ($TEST_FILTER) exit $test_rc after $(elapsed)" | tee -a "$log"
  fi
}

ab_run() {
  local title=$1 recipe=$2 arms=() a
  shift 2
  for a in "$@"; do arms+=(--arm "$a"); done
  echo "== ab: $title, M $AB_M, $ROUNDS rounds x $REPEATS repeats" | tee -a "$log"
  timeout -k 10 "${AB_S:-400}" "$BIN/moetune" ab --backend cuda --recipe "$recipe" --m "$AB_M" \
    --repeats "$REPEATS" --warmup 3 --rounds "$ROUNDS" --cooldown 0.3 --digests "$DIGESTS" \
    --timeout-s 120 "${arms[@]}" --out "$OUT" >> "$log" 2>&1
  ab_rc=$?
  echo "ab exit $ab_rc after $(elapsed)" | tee -a "$log"
}

ab_summary() {
  echo
  echo "== summary ($(elapsed); gpu tests exit $test_rc, ab exit $ab_rc)"
  [ -f "$OUT/gpu_tests.log" ] &&
    grep -E "^\[  (PASSED|FAILED|SKIPPED) |tests ran|Failure" "$OUT/gpu_tests.log" | head -20
  echo "-- ab: $1"
  grep -E " M=[0-9]+ " "$log" | head -40 || echo "(no A/B comparisons; see $log)"
  grep -E "DIGEST|^moetune |error" "$log" | head -5
  # The script's exit status: the greps above find nothing when all went well.
  [ "$ab_rc" = 0 ] && { [ "$test_rc" = 0 ] || [ "$test_rc" = skipped ]; }
}
