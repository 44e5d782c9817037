#!/usr/bin/env bash
# Device run of the runtime on the cuda backend (issue 6), in one call (~2 min):
#   1. runtime_cuda_tests: MoeRunner through device pointers and a stream (knobs none, explicit,
#      auto vs the fp64 reference, bitwise repeats, auto refused during a real graph capture, a
#      second runner served from the cache, levers reaching the launches);
#   2. `moetune run --backend cuda --json` (the runner's own launch, checked): knobs none, auto,
#      none again (now the cache), auto during --capturing for a new bucket (must exit 2), levers
#      off by --levers, a table row of tables/NVIDIA_H200 and auto on S2, one JSON object per
#      line into run.jsonl.
# Binaries: scripts/build_device.sh builds .devbin/moetune and .devbin/runtime_cuda_tests.
# Device tool: carry [".devbin"], command "bench/run_h200_runtime.sh". Files under $OUT:
# runtime_cuda_tests.log, run.jsonl, run.log, knobs.json (the knob cache the runs filled).
set -uo pipefail
BIN=${BIN:-.devbin}
OUT=${OUT:-build/results}
export MOETUNE_CACHE_DIR=${MOETUNE_CACHE_DIR:-/tmp/moetune-cache}
mkdir -p "$OUT"
start=$(date +%s)
elapsed() { echo "$(( $(date +%s) - start )) s"; }
nvidia-smi --query-gpu=name,driver_version,clocks.sm,power.draw --format=csv,noheader

"$BIN/runtime_cuda_tests" > "$OUT/runtime_cuda_tests.log" 2>&1
tests_rc=$?
echo "runtime_cuda_tests exit $tests_rc after $(elapsed)"

small=E=8,K=256,I=128,topk=2,act=silu,dtype=bf16
s2=E=128,K=2048,I=768,topk=8,act=silu,dtype=bf16
cache="$OUT/knobs.json"
: > "$OUT/run.jsonl"
: > "$OUT/run.log"
run() {  # expected-exit-code, then moetune run arguments
  local want=$1
  shift
  "$BIN/moetune" run --backend cuda --cache "$cache" --json "$@" >> "$OUT/run.jsonl" 2>> "$OUT/run.log"
  local rc=$?
  echo "run $* -> exit $rc (want $want)$([ $rc -eq "$want" ] || echo '  UNEXPECTED')" | tee -a "$OUT/run.log"
}
for m in 1 17 300; do
  run 0 --problem "$small" --m "$m" --knobs none
  run 0 --problem "$small" --m "$m" --knobs auto --budget-s 4
  run 0 --problem "$small" --m "$m" --knobs none
done
run 2 --problem "$small" --m 40 --knobs auto --capturing
run 0 --problem "$small" --m 300 --levers pdl=off,wgmma_mainloop=off
run 0 --problem "$s2" --m 16 --tables tables/NVIDIA_H200
run 0 --problem "$s2" --m 16 --knobs auto --budget-s 6

echo
echo "== summary ($(elapsed))"
grep -E "^\[  (PASSED|FAILED|SKIPPED) |tests ran|Failure" "$OUT/runtime_cuda_tests.log" | head -20
echo "-- moetune run: M, rule, config, rel_l2_error, passed, levers on"
sed -E 's/.*"m": ([0-9]+), .*"rule": "([a-z]+)".*"config_short": "([^"]*)".*"on": "([^"]*)".*"rel_l2_error": ([^,]+), .*"passed": (true|false).*/M=\1 \2 \3 rel_l2=\5 passed=\6 levers=\4/' \
  "$OUT/run.jsonl"
grep -E "UNEXPECTED" "$OUT/run.log" || echo "every run ended as expected"
