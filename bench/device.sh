#!/usr/bin/env bash
# bench/device.sh: every measurement on the device machine, one subcommand per kind of run, each
# bounded by `timeout` so one device call (10 minutes) holds it. Binaries come from
# scripts/build_device.sh (.devbin/: moetune, moetune_sm90_bench, cuda_kernel_tests,
# runtime_cuda_tests); call the device tool with carry [".devbin"] and e.g. the command
# `bench/device.sh --out $OUT protocol`. Run `bench/device.sh --help` for the subcommands.
# Every A/B is interleaved in one place: `ab` through `moetune ab` (fresh processes, rounds
# alternating, verdicts with intervals), `stage-ab` through stage_ab_rounds below (the kernel
# benchmark's per-stage times); nothing else alternates arms.
set -uo pipefail
cd "$(dirname "$0")/.." || exit 2
self=bench/device.sh

usage() {
  cat <<'EOF'
usage: bench/device.sh [--bin DIR] [--out DIR] [--backend cuda|cpu] [--no-pack] COMMAND [options]

Global options (before COMMAND):
  --bin DIR       the binaries (default .devbin, from scripts/build_device.sh)
  --out DIR       where everything lands (default build/results/<date>-<COMMAND>); folders in it
                  are packed into DIR.tgz at the end (the device tool brings back plain files)
  --backend B     cuda (default) or cpu: protocol, ab and tuner run on the cpu backend as a dry
                  run (recipes/demo.json, tables/cpu)
  --no-pack       leave the folders under --out as they are

Commands (options after the command; every one also takes --tests FILTER: cuda_kernel_tests
with that gtest filter first, "all" for every test; a failed test run stops the command):
  protocol   moetune bench of the recipe's shapes with configs from the tables, then moetune ab
             of three arms (tables, the backend default, tables with pdl=off: a bitwise lever,
             its digests must equal the baseline's), then moetune report of both (~3 min)
             --bench-m LIST (1,16,256,2048) --ab-m LIST (16,256) --repeats N (20) --rounds N (3)
             --recipe R (recipes/h200.json) --tables DIR (tables/NVIDIA_H200)
  ab         moetune ab of arms on the recipe's shapes (interleaved fresh processes, verdicts)
             --arm NAME=SPEC (repeat; SPEC as moetune ab's: default, tables:DIR,
             levers:NAME=on|off[+...], binary:PATH) | --lever NAME[+NAME...] (the tables with
             the levers all on against all off) --m LIST (1,4) --repeats N (30) --rounds N (4)
             --digests equal|any (equal) --recipe R --tables DIR --limit-s S (400)
  stage-ab   the kernel benchmark (--no-sweep) of arms in rounds, the order rotated each round,
             then per point the median layer and GEMM stage times, ratios and digests
             (bench/ab_summary.py): builds, recipes, environments or bench options against each
             other. --arm NAME=SPEC (repeat, first = baseline; SPEC a ','-list of bin:DIR,
             recipe:FILE|none, env:VAR=VAL[+VAR=VAL...], args:OPT[+OPT...]) --shapes LIST
             (S1,S2,S3) --m LIST (1,4) --rounds N (3) --digests equal|any (equal) --recipe R
             (every arm's unless it names one) --limit-s S (150 per run) [-- bench options]
  kernels    the GPU tests (all, unless --tests FILTER or --no-tests), then moetune_sm90_bench
             (ceilings, sweep or recipe rows, check, timing, CSV) --no-tests --tests-only
             --heldout (five shapes no rule was fitted to: H1-H5) --limit-s S (540)
             [-- bench options, e.g. --recipe recipes/h200.json --m 1,64 --sweep-log FILE]
  runtime    runtime_cuda_tests, then `moetune run --json` with knobs none/auto/cache, auto
             refused during capture, levers off, a table row (run.jsonl; knobs.json)
  ncu        Nsight Compute on the shipped configs' first GEMM launches at points (summary
             table of throughputs and stalls) --points LIST (S1:4096,S2:2048,S2:8192,S3:512)
             --kernels REGEX (gemm) --recipe R --limit-s S (150) --ncu PATH (ncu) --source (the
             source page per SASS instruction instead, read by tools/ncu_stalls.py)
  tuner      the tuner's targets (a: a full S1 table from a cold cubin cache, b: exhaustive at a
             few buckets, d: fault injection, c: repeated tunes; bench/tuner_targets.py)
             --recipe R (recipes/h200-s1-tune.json) --exhaustive-buckets LIST (16,256,4096; ""
             skips b) --repeats-from K (2) --repeats-to K (5) --only-repeats (c alone, a second
             call) --a-repeat N (0) --budget-s S (500) --tune-limit-s S (300) --no-faults
             --tune-args "OPTS"
  retune     moetune tune --merge of a recipe's buckets into a copy of the tables, the recipe
             with the tuned rows (bench/recipe_variant.py), then stage-ab pinned against tuned
             at the changed points --tune-recipe R (required) --tune-s S (240) --recipe R
             --tables DIR
  session    the end-of-session call: GPU tests, the recipe's rows timed, runtime, protocol
             (smaller), each bounded (~9 min); a failed test does not stop it --ab-s S (110;
             0 skips protocol)
  triton-vllm  vLLM's Triton kernel tuned by moetune and timed against vLLM's own configs
             (bench/triton_vllm_device.py; carry .engines too) --shapes LIST (S1,S3,S2)
             --budget-min X (1.25) --shape-s S (180) --agreement SHAPE --agreement-tunes N (2)

Exit: 0 all went well; 1 a run, a test or an equal-digest check failed; 2 bad usage.
EOF
}

die() { echo "device.sh: $*" >&2; exit 2; }
BIN=.devbin OUT='' BACKEND=cuda PACK=1
while [ $# -gt 0 ]; do
  case $1 in
    -h | --help) usage; exit 0 ;;
    --bin) [ $# -ge 2 ] || die "--bin needs a value"; BIN=$2; shift 2 ;;
    --out) [ $# -ge 2 ] || die "--out needs a value"; OUT=$2; shift 2 ;;
    --backend) [ $# -ge 2 ] || die "--backend needs a value"; BACKEND=$2; shift 2 ;;
    --no-pack) PACK=0; shift ;;
    -*) die "unknown option '$1' before the command; see bench/device.sh --help" ;;
    *) break ;;
  esac
done
COMMANDS="protocol ab stage-ab kernels runtime ncu tuner retune session triton-vllm"
[ $# -gt 0 ] || die "name a command ($COMMANDS); see bench/device.sh --help"
CMD=$1
shift
case $BACKEND in cuda | cpu) ;; *) die "--backend '$BACKEND': expected cuda or cpu" ;; esac
OUT=${OUT:-build/results/$(date +%F)-$CMD}
if [ "$BACKEND" = cpu ]; then RECIPE=recipes/demo.json TABLES=tables/cpu; else
  RECIPE=recipes/h200.json TABLES=tables/NVIDIA_H200; fi
export MOETUNE_CACHE_DIR=${MOETUNE_CACHE_DIR:-/tmp/moetune-cache}
TESTS='' ARMS=() EXTRA=()
start=$(date +%s)
elapsed() { echo "$(($(date +%s) - start)) s"; }

# Parses "$@" against the command's options, given as "name=VAR" (takes a value) or "name!VAR"
# (a flag, VAR=1); --tests, --arm and "-- bench options" are known to every command that lists
# them. Unknown options end the script with exit 2.
parse_opts() {
  local spec=$1 word var found
  shift
  while [ $# -gt 0 ]; do
    found=''
    if [ "$1" = -- ]; then
      [[ " $spec " == *" --!EXTRA "* ]] || die "$CMD: takes no bench options after --"
      shift
      EXTRA=("$@")
      return
    fi
    for word in $spec; do
      var=${word#*[=!]}
      if [ "$1" = "${word%%[=!]*}" ]; then
        found=1
        if [[ $word == *!* ]]; then printf -v "$var" 1; shift; else
          [ $# -ge 2 ] || die "$CMD: $1 needs a value"
          if [ "$var" = ARMS ]; then ARMS+=("$2"); else printf -v "$var" %s "$2"; fi
          shift 2
        fi
        break
      fi
    done
    [ -n "$found" ] || die "$CMD: unknown option '$1'; see bench/device.sh --help"
  done
}

gpu_info() {
  nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.max.sm,power.draw,power.limit \
    --format=csv 2>&1 || echo "(no nvidia-smi)"
}

# run_tests FILTER: cuda_kernel_tests (all when "all") into $OUT/gpu_tests.log, its summary
# printed; returns its exit status ("" runs nothing).
run_tests() {
  [ -n "$1" ] || return 0
  local filter=()
  [ "$1" = all ] || filter=(--gtest_filter="$1")
  timeout -k 10 300 "$BIN/cuda_kernel_tests" "${filter[@]}" > "$OUT/gpu_tests.log" 2>&1
  local rc=$?
  echo "gpu tests ($1) exit $rc after $(elapsed)"
  grep -E "^\[  (PASSED|FAILED|SKIPPED) |tests ran|Failure" "$OUT/gpu_tests.log" | head -20
  return $rc
}

# pack: each folder under $OUT becomes FOLDER.tgz (the device tool brings back plain files).
pack() {
  [ "$PACK" = 1 ] || return 0
  local d
  for d in "$OUT"/*/; do
    [ -d "$d" ] || continue
    d=$(basename "$d")
    tar czf "$OUT/$d.tgz" -C "$OUT" "$d" && rm -rf "${OUT:?}/$d"
  done
}

# The dated folder a moetune command made: the one folder under $OUT that was not there before.
new_dir() { comm -13 <(echo "$1") <(ls -d "$OUT"/*/ 2>/dev/null) | head -1; }

cmd_protocol() {
  local bench_m=1,16,256,2048 ab_m=16,256 repeats=20 rounds=3 recipe=$RECIPE tables=$TABLES
  parse_opts "--bench-m=bench_m --ab-m=ab_m --repeats=repeats --rounds=rounds --recipe=recipe
    --tables=tables --tests=TESTS" "$@"
  local log="$OUT/protocol.log" before bench_dir ab_dir bench_rc ab_rc
  gpu_info > "$log"
  run_tests "$TESTS" || return 1
  before=$(ls -d "$OUT"/*/ 2>/dev/null)
  echo "== bench (M $bench_m, $repeats repeats)" | tee -a "$log"
  "$BIN/moetune" bench --backend "$BACKEND" --recipe "$recipe" --tables "$tables" --m "$bench_m" \
    --repeats "$repeats" --warmup 3 --cooldown 0.5 --out "$OUT" >> "$log" 2>&1
  bench_rc=$?
  echo "bench exit $bench_rc after $(elapsed)" | tee -a "$log"
  bench_dir=$(new_dir "$before")
  before=$(ls -d "$OUT"/*/ 2>/dev/null)
  echo "== ab (M $ab_m, $rounds rounds x $repeats repeats)" | tee -a "$log"
  local off=pdl
  [ "$BACKEND" = cpu ] && off=cpu_register_tiles
  "$BIN/moetune" ab --backend "$BACKEND" --recipe "$recipe" --m "$ab_m" --repeats "$repeats" \
    --warmup 3 --rounds "$rounds" --cooldown 0.5 --digests any --timeout-s 240 \
    --arm "tables=tables:$tables" --arm default=default \
    --arm "${off}_off=tables:$tables,levers:$off=off" --out "$OUT" >> "$log" 2>&1
  ab_rc=$?
  echo "ab exit $ab_rc after $(elapsed)" | tee -a "$log"
  ab_dir=$(new_dir "$before")
  local inputs=()
  [ -n "$bench_dir" ] && inputs+=("$bench_dir")
  [ -n "$ab_dir" ] && inputs+=("$ab_dir")
  if [ ${#inputs[@]} -gt 0 ]; then
    "$BIN/moetune" report "${inputs[@]}" --out "$OUT/report.html" >> "$log" 2>&1
    echo "report exit $? after $(elapsed)" | tee -a "$log"
  fi
  echo
  echo "== summary ($(elapsed); bench exit $bench_rc, ab exit $ab_rc)"
  echo "-- bench: series, M, median us [p10, p90], CI, floor, t/floor, config, digest"
  grep -E "^[a-z0-9-]+ +M=" "$log" | grep "t/floor" || echo "(no bench points; see $log)"
  echo "-- ab: each arm against the tables arm"
  grep -E " M=[0-9]+ +tables " "$log" || echo "(no A/B comparisons; see $log)"
  echo "-- $off=off digests differing from the baseline's:" \
    "$(grep -c "DIGEST .*${off}_off" "$log") point(s) (bitwise lever: expect 0)"
  grep -E "^moetune |error|FAILED" "$log" | head -5
  [ "$bench_rc" = 0 ] && [ "$ab_rc" = 0 ]
}

cmd_ab() {
  local m=1,4 repeats=30 rounds=4 digests=equal recipe=$RECIPE tables=$TABLES limit_s=400 lever=''
  parse_opts "--arm=ARMS --lever=lever --m=m --repeats=repeats --rounds=rounds --digests=digests
    --recipe=recipe --tables=tables --limit-s=limit_s --tests=TESTS" "$@"
  if [ -n "$lever" ]; then  # "a+b" -> on: a=on+b=on, off: a=off+b=off
    ARMS=("on=tables:$tables,levers:$(sed 's/+/=on+/g; s/$/=on/' <<< "$lever")"
      "off=tables:$tables,levers:$(sed 's/+/=off+/g; s/$/=off/' <<< "$lever")" "${ARMS[@]}")
  fi
  [ ${#ARMS[@]} -ge 2 ] || die "ab: name two arms or more (--arm NAME=SPEC, or --lever NAME)"
  local log="$OUT/ab.log" arm args=() rc
  : > "$log"
  gpu_info >> "$log"
  run_tests "$TESTS" || return 1
  for arm in "${ARMS[@]}"; do args+=(--arm "$arm"); done
  echo "== ab: ${ARMS[*]}; M $m, $rounds rounds x $repeats repeats" | tee -a "$log"
  timeout -k 10 "$limit_s" "$BIN/moetune" ab --backend "$BACKEND" --recipe "$recipe" --m "$m" \
    --repeats "$repeats" --warmup 3 --rounds "$rounds" --cooldown 0.3 --digests "$digests" \
    --timeout-s 120 "${args[@]}" --out "$OUT" >> "$log" 2>&1
  rc=$?
  echo "ab exit $rc after $(elapsed)"
  echo "-- each arm against ${ARMS[0]%%=*} (positive delta: slower)"
  grep -E " M=[0-9]+ " "$log" | head -40 || echo "(no A/B comparisons; see $log)"
  grep -E "DIGEST|^moetune |error" "$log" | head -5
  return $rc
}

# stage_ab_rounds ROUNDS RECIPE SHAPES M LIMIT_S DIR: every arm of ARMS once per round into
# DIR/<name>-<round>/, the order rotated each round (A B, B A, ... for two arms), each run a fresh
# moetune_sm90_bench --no-sweep process with its own cubin cache; returns 1 when a run failed.
stage_ab_rounds() {
  local rounds=$1 recipe=$2 shapes=$3 m=$4 limit_s=$5 dir=$6 n=${#ARMS[@]} r j status=0
  for ((r = 1; r <= rounds; ++r)); do
    for ((j = 0; j < n; ++j)); do
      local spec=${ARMS[$(((j + r - 1) % n))]} name bin=$BIN arm_recipe=$recipe env=() args=() part
      name=${spec%%=*}
      IFS=, read -r -a parts <<< "${spec#*=}"
      for part in "${parts[@]}"; do
        case $part in
          bin:*) bin=${part#bin:} ;;
          recipe:*) arm_recipe=${part#recipe:} ;;
          env:*) IFS=+ read -r -a env <<< "${part#env:}" ;;
          args:*) IFS=+ read -r -a args <<< "${part#args:}" ;;
        esac
      done
      local recipe_args=(--recipe "$arm_recipe")
      [ "$arm_recipe" = none ] && recipe_args=()
      env ${env[@]+"${env[@]}"} MOETUNE_CACHE_DIR="$MOETUNE_CACHE_DIR-$name" timeout -k 10 \
        "$limit_s" "$bin/moetune_sm90_bench" "${recipe_args[@]}" --shapes "$shapes" --m "$m" \
        --no-sweep ${args[@]+"${args[@]}"} ${EXTRA[@]+"${EXTRA[@]}"} --out "$dir/$name-$r" \
        > "$dir/$name-$r.log" 2>&1
      local rc=$?
      ((rc != 0)) && status=1
      echo "round $r arm $name exit $rc after $(elapsed)"
    done
  done
  return $status
}

cmd_stage_ab() {
  local shapes=S1,S2,S3 m=1,4 rounds=3 digests=equal recipe=$RECIPE limit_s=150
  parse_opts "--arm=ARMS --shapes=shapes --m=m --rounds=rounds --digests=digests --recipe=recipe
    --limit-s=limit_s --tests=TESTS --!EXTRA" "$@"
  [ ${#ARMS[@]} -ge 2 ] || die "stage-ab: name two arms or more (--arm NAME=SPEC)"
  [[ $digests =~ ^(equal|any)$ ]] || die "stage-ab: --digests '$digests': expected equal or any"
  local names=() a status=0 part parts
  for a in "${ARMS[@]}"; do
    [[ $a == *=* ]] || die "stage-ab: arm '$a' is not NAME=SPEC"
    IFS=, read -r -a parts <<< "${a#*=}"
    for part in ${parts[@]+"${parts[@]}"}; do
      [[ $part =~ ^(bin|recipe|env|args): ]] ||
        die "stage-ab: arm '$a': '$part' is not bin:DIR, recipe:FILE, env:VAR=VAL or args:OPT"
    done
    names+=("${a%%=*}")
  done
  mkdir -p "$OUT/runs"
  gpu_info > "$OUT/runs/gpu.csv"
  printf '%s\n' "${ARMS[@]}" > "$OUT/runs/arms.txt"
  run_tests "$TESTS" || return 1
  stage_ab_rounds "$rounds" "$recipe" "$shapes" "$m" "$limit_s" "$OUT/runs" || status=1
  python3 bench/ab_summary.py "$OUT/runs" "$rounds" "$digests" "${names[@]}" \
    > "$OUT/summary.txt" || status=1
  echo "exit status $status" >> "$OUT/summary.txt"
  cat "$OUT/summary.txt"
  return $status
}

cmd_kernels() {
  local no_tests='' tests_only='' heldout='' limit_s=540
  parse_opts "--tests=TESTS --no-tests!no_tests --tests-only!tests_only --heldout!heldout
    --limit-s=limit_s --!EXTRA" "$@"
  gpu_info | tee "$OUT/nvidia-smi.txt"
  if [ -z "$no_tests" ]; then
    run_tests "${TESTS:-all}" ||
      { echo "GPU tests failed: no benchmark on a wrong kernel"; return 1; }
  fi
  [ -n "$tests_only" ] && return 0
  local shapes=()
  if [ -n "$heldout" ]; then
    # Qwen3-235B-A22B, DeepSeek-V2-Lite, gpt-oss-120b (K = I = 2880: multiples of 64, not 128),
    # Mixtral-8x22B, and an odd one (E = 40, I = 704 = 11 x 64, non-gated gelu_tanh).
    shapes=(--shapes none --shape H1=128,4096,1536,8,silu --shape H2=64,2048,1408,6,silu
      --shape H3=128,2880,2880,4,silu --shape H4=8,6144,16384,2,silu
      --shape H5=40,1536,704,5,gelu_tanh)
  fi
  timeout -k 10 "$limit_s" "$BIN/moetune_sm90_bench" --out "$OUT" "${shapes[@]}" \
    ${EXTRA[@]+"${EXTRA[@]}"} 2>&1 | tee "$OUT/kernels.log" | tail -80
  return "${PIPESTATUS[0]}"
}

cmd_runtime() {
  parse_opts "--tests=TESTS" "$@"
  gpu_info
  run_tests "$TESTS" || return 1
  "$BIN/runtime_cuda_tests" > "$OUT/runtime_cuda_tests.log" 2>&1
  echo "runtime_cuda_tests exit $? after $(elapsed)"
  local small=E=8,K=256,I=128,topk=2,act=silu,dtype=bf16
  local s2=E=128,K=2048,I=768,topk=8,act=silu,dtype=bf16
  local cache="$OUT/knobs.json" unexpected=0 m
  : > "$OUT/run.jsonl"
  : > "$OUT/run.log"
  run() {  # expected exit code, then moetune run arguments
    local want=$1
    shift
    "$BIN/moetune" run --backend cuda --cache "$cache" --json "$@" >> "$OUT/run.jsonl" \
      2>> "$OUT/run.log"
    local rc=$?
    [ $rc -eq "$want" ] || unexpected=1
    echo "run $* -> exit $rc (want $want)$([ $rc -eq "$want" ] || echo '  UNEXPECTED')" |
      tee -a "$OUT/run.log"
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
  return $unexpected
}

cmd_ncu() {
  local points=S1:4096,S2:2048,S2:8192,S3:512 kernels=gemm recipe=$RECIPE limit_s=150 ncu=ncu
  local source=''
  parse_opts "--points=points --kernels=kernels --recipe=recipe --limit-s=limit_s --ncu=ncu
    --source!source --tests=TESTS" "$@"
  command -v "$ncu" > /dev/null || die "ncu: '$ncu' is not on the PATH; pass --ncu /path/to/ncu"
  run_tests "$TESTS" || return 1
  "$ncu" --query-metrics --chip gh100 2> /dev/null | grep -Ei "tensor|gmma|hmma" \
    > "$OUT/tensor-metrics.txt" || true
  local point shape m tag sections
  IFS=',' read -ra pts <<< "$points"
  for point in "${pts[@]}"; do
    shape=${point%%:*} m=${point##*:} tag=${point/:/-}
    local bench=("$BIN/moetune_sm90_bench" --recipe "$recipe" --shapes "$shape" --m "$m" --no-sweep
      --out "$OUT/bench-out")
    local base=("$ncu" --clock-control none --target-processes all --kernel-name "regex:$kernels"
      --launch-count 2)
    if [ -n "$source" ]; then
      timeout -k 10 "$limit_s" "${base[@]}" --section SourceCounters --section WarpStateStats \
        --page source --print-source sass --csv "${bench[@]}" 2> "$OUT/bench-$tag.log" |
        gzip > "$OUT/src-$tag.csv.gz"
      echo "[$(date +%T)] $tag exit ${PIPESTATUS[0]}"
      python3 tools/ncu_stalls.py "$OUT/src-$tag.csv.gz" --blocks 4 | tee -a "$OUT/summary.txt"
      continue
    fi
    sections=(--section SpeedOfLight --section MemoryWorkloadAnalysis
      --section MemoryWorkloadAnalysis_Tables --section ComputeWorkloadAnalysis
      --section WarpStateStats --section LaunchStats --section Occupancy)
    timeout -k 10 "$limit_s" "${base[@]}" "${sections[@]}" "${bench[@]}" > "$OUT/ncu-$tag.txt" \
      2> "$OUT/bench-$tag.log"
    echo "[$(date +%T)] $tag exit $? ($(grep -c "Section: GPU Speed Of Light" \
      "$OUT/ncu-$tag.txt") kernels profiled)"
  done
  rm -rf "$OUT/bench-out"
  [ -n "$source" ] && return 0
  python3 tools/ncu_summary.py "$OUT" "$points" > "$OUT/summary.txt"
  cat "$OUT/summary.txt"
}

# The tuner's targets in one call (at most about 8.5 minutes), every part bounded within
# --budget-s: a. the recipe's table tuned from a cold cubin cache, compiles included, with its
# wall time (target <= 300 s; --budget-min, the target less 15 s, ends it before the hard limit
# so it writes its table even when slow; --a-repeat N adds --repeat N, whose cost counts against
# a); b. the exhaustive sweep at --exhaustive-buckets, each with a's row as its incumbent (--merge
# into a copy), so the tuned winner and the exhaustive best share a final round (target: within
# 2%); d. when 75 s are left, wrong/nan/compile faults on the demo shape (45 s cap); c. more full
# tunes with fresh stores (warm cache) while the budget lasts, numbered --repeats-from to
# --repeats-to, for winner agreement over a + c (target: the same winner or a tie in >= 95% of
# buckets). --only-repeats runs c alone (b only where --exhaustive-buckets is given, against the
# table an earlier call's a left in --out/tuned; the cubin cache is kept), so a second call adds
# tunes and bench/tuner_targets.py reads the stores of both calls put in one folder.
cmd_tuner() {
  local recipe=recipes/h200-s1-tune.json exh=unset c_from=2 c_to=5 only_c='' a_repeat=0
  local budget_s=500 tune_limit_s=300 no_faults='' tune_args='' fault_s=45
  [ "$BACKEND" = cpu ] && recipe=recipes/demo.json
  parse_opts "--recipe=recipe --exhaustive-buckets=exh --repeats-from=c_from --repeats-to=c_to
    --only-repeats!only_c --a-repeat=a_repeat --budget-s=budget_s --tune-limit-s=tune_limit_s
    --no-faults!no_faults --tune-args=tune_args --tests=TESTS" "$@"
  if [ "$exh" = unset ]; then exh=16,256,4096; [ -n "$only_c" ] && exh=; fi
  [ -n "$only_c" ] && no_faults=1
  local extra fault_recipe=recipes/demo-h200.json t0 limit rc wall
  read -ra extra <<< "$tune_args"
  grep -q '"backend": *"cpu"' "$recipe" && fault_recipe=recipes/demo.json
  export MOETUNE_CACHE_DIR=/tmp/moetune-tuner-cache
  [ -n "$only_c" ] || rm -rf "$MOETUNE_CACHE_DIR"  # part a is measured from a cold cache
  run_tests "$TESTS" || return 1
  t0=$(date +%s)
  left() { echo $((budget_s - ($(date +%s) - t0))); }
  log() { echo "[$(($(date +%s) - t0)) s] $*" | tee -a "$OUT/run.log"; }
  # -k: a tuner that outlives SIGTERM by 10 s is killed (its workers die with it: PDEATHSIG).
  bounded() { local s=$1; shift; timeout -k 10 "$s" "$@"; }
  git rev-parse HEAD > "$OUT/commit.txt" 2> /dev/null || true
  timeout 20 nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.max.sm,power.draw \
    --format=csv > "$OUT/gpu.csv" 2>&1 || true
  if [ -n "$only_c" ]; then
    log "a: skipped (--only-repeats)"
  else
    limit=$(($(left) - 120 < tune_limit_s + 30 ? $(left) - 120 : tune_limit_s + 30))
    [ "$limit" -ge 40 ] || limit=$(($(left) / 2))  # a small --budget-s (dry runs)
    local budget_min budget=$(((limit - 30 < tune_limit_s ? limit - 30 : tune_limit_s) - 15))
    [ "$budget" -ge 10 ] || budget=10
    budget_min=$(awk -v s="$budget" 'BEGIN { printf "%.2f", s / 60 }')
    log "a: tune $recipe (budget $budget_min min, limit $limit s)"
    local start repeat_args=()
    start=$(date +%s)
    [ "$a_repeat" -gt 0 ] && repeat_args=(--repeat "$a_repeat")
    bounded "$limit" "$BIN/moetune" tune --recipe "$recipe" --out "$OUT/tuned" \
      ${repeat_args[@]+"${repeat_args[@]}"} ${extra[@]+"${extra[@]}"} --budget-min "$budget_min" \
      --store "$OUT/tune-a.db" --json > "$OUT/tune-a.json" 2> "$OUT/tune-a.err"
    rc=$?
    wall=$(($(date +%s) - start))
    echo "{\"part\": \"a\", \"exit\": $rc, \"wall_s\": $wall, \"limit_s\": $limit}" \
      > "$OUT/tune-a.time.json"
    log "a: exit $rc after $wall s"
    tail -3 "$OUT/tune-a.err"
  fi
  cp -r "$OUT/tuned" "$OUT/exhaustive" 2> /dev/null || mkdir -p "$OUT/exhaustive"
  local buckets=() i b share
  [ -n "$exh" ] && IFS=',' read -ra buckets <<< "$exh"
  if [ "${#buckets[@]}" -gt 0 ] && [ ! -d "$OUT/tuned" ]; then
    log "b: skipped (no table of part a in $OUT/tuned)"
    buckets=()
  fi
  for i in "${!buckets[@]}"; do
    b=${buckets[$i]}
    share=$((($(left) - fault_s - 60) / (${#buckets[@]} - i)))
    if [ "$share" -lt 15 ]; then log "b: bucket $b skipped (budget)"; continue; fi
    log "b: exhaustive bucket $b (limit $share s)"
    bounded "$share" "$BIN/moetune" tune --recipe "$recipe" --buckets "$b" --exhaustive --merge \
      ${extra[@]+"${extra[@]}"} --out "$OUT/exhaustive" --store "$OUT/exhaustive-$b.db" --json \
      > "$OUT/exhaustive-$b.json" 2> "$OUT/exhaustive-$b.err"
    log "b: bucket $b exit $?"
  done
  # d. wrong and nan corrupt the device output after the kernels: the correctness gate must
  # catch them (wrong_result); compile must end as a failed candidate.
  if [ -n "$no_faults" ]; then
    log "d: skipped"
  elif [ "$(left)" -gt $((fault_s + 30)) ]; then
    log "d: fault injection on $fault_recipe"
    bounded "$fault_s" "$BIN/moetune" tune --recipe "$fault_recipe" --buckets 16 --budget-min 0.4 \
      --timeout-s 10 --inject-fault wrong@1,nan@2,compile@3 --out "$OUT/faults" \
      --store "$OUT/faults.db" --json > "$OUT/faults.json" 2> "$OUT/faults.err"
    log "d: exit $?"
    python3 bench/tuner_targets.py --faults "$OUT/faults.db" | tee -a "$OUT/run.log"
  else
    log "d: skipped ($(left) s left)"
  fi
  # c. a tune starts only when the time left covers the previous one plus 10% (a tune cut short
  # counts only the buckets it finished).
  local k last_s=0
  for k in $(seq "$c_from" "$c_to"); do
    limit=$(($(left) - 20))
    if [ "$limit" -lt 40 ] || [ "$limit" -lt $((last_s * 11 / 10)) ]; then
      log "c: tune $k skipped ($limit s left, the last tune took $last_s s)"
      break
    fi
    log "c: repeat tune $k (limit $limit s)"
    local start
    start=$(date +%s)
    bounded "$limit" "$BIN/moetune" tune --recipe "$recipe" --out "$OUT/repeat-$k" \
      ${extra[@]+"${extra[@]}"} --store "$OUT/tune-$k.db" --json > "$OUT/tune-$k.json" \
      2> "$OUT/tune-$k.err"
    rc=$?
    last_s=$(($(date +%s) - start))
    log "c: tune $k exit $rc after $last_s s"
  done
  rm -rf "$OUT/repeat-"*  # the tables of c are not needed, their stores and JSON are
  python3 bench/tuner_targets.py "$OUT" > "$OUT/summary.txt" 2>&1 ||
    echo "bench/tuner_targets.py failed (exit $?)" >> "$OUT/summary.txt"
  # All but the summary, the log and the CSV go into one archive (stores with -wal and -shm).
  local rest
  mapfile -t rest < <(ls -A "$OUT" | grep -vxF -e summary.txt -e run.log -e tuner-targets.csv \
    -e tuner-run.tgz)
  if [ "${#rest[@]}" -gt 0 ] && tar czf "$OUT/tuner-run.tgz" -C "$OUT" -- "${rest[@]}"; then
    (cd "$OUT" && rm -rf -- "${rest[@]}")
  fi
  cat "$OUT/summary.txt"
}

cmd_retune() {
  local tune_recipe='' tune_s=240 recipe=$RECIPE tables=$TABLES
  parse_opts "--tune-recipe=tune_recipe --tune-s=tune_s --recipe=recipe --tables=tables
    --tests=TESTS" "$@"
  [ -n "$tune_recipe" ] ||
    die "retune: name the buckets to tune with --tune-recipe R (e.g. recipes/h200-s2s3-retune.json)"
  run_tests "$TESTS" || return 1
  rm -rf "$OUT/tuned"
  cp -r "$tables" "$OUT/tuned"
  local budget shapes ms
  budget=$(awk -v s="$tune_s" 'BEGIN { printf "%.2f", (s - 30) / 60 }')  # its finals run past it
  timeout -k 10 "$tune_s" "$BIN/moetune" tune --recipe "$tune_recipe" --out "$OUT/tuned" --merge \
    --budget-min "$budget" --store "$OUT/retune.db" --json > "$OUT/retune.json" 2> "$OUT/retune.err"
  echo "tune exit $? after $(elapsed)"
  python3 bench/recipe_variant.py "$recipe" --from-tables "$OUT/tuned" > "$OUT/variant.json" ||
    return 1
  read -r shapes ms < <(python3 bench/recipe_variant.py "$recipe" --from-tables "$OUT/tuned" \
    --list-changed)
  mkdir -p "$OUT/store" && mv "$OUT"/retune.db* "$OUT/store/" 2> /dev/null
  if [ "$shapes" = none ]; then
    echo "no shipped row changed: every incumbent held"
    return 0
  fi
  echo "changed rows: shapes $shapes, M $ms (a tuned row is worth shipping where it beats the" \
    "pinned one in every round: 'every' yes)"
  ARMS=("pinned=recipe:$recipe" "tuned=recipe:$OUT/variant.json")
  cmd_stage_ab --shapes "$shapes" --m "$ms" --rounds 2 --digests any
}

cmd_session() {
  local ab_s=110
  parse_opts "--ab-s=ab_s --tests=TESTS" "$@"
  local g=(--bin "$BIN" --no-pack --backend "$BACKEND")
  run_tests "${TESTS:-all}"  # a failure is reported, not a stop: the rest still runs
  timeout 180 bash "$self" "${g[@]}" --out "$OUT/final" kernels --no-tests -- --recipe "$RECIPE" \
    > "$OUT/final.log" 2>&1
  echo "kernel bench exit $?"
  timeout 90 bash "$self" "${g[@]}" --out "$OUT/runtime" runtime > "$OUT/runtime.log" 2>&1
  echo "runtime exit $?"
  if [ "$ab_s" -gt 0 ]; then
    timeout "$ab_s" bash "$self" "${g[@]}" --out "$OUT/ab" protocol --bench-m 16,2048 --ab-m 256 \
      --rounds 2 --repeats 10 > "$OUT/ab.log" 2>&1
    echo "protocol exit $?"
  fi
  echo "== gpu tests"; grep -E "^\[  (PASSED|FAILED) |Failure" -A2 "$OUT/gpu_tests.log" | head -12
  echo "== runtime"; sed -n '/== summary/,$p' "$OUT/runtime.log" | head -30
  echo "== protocol"; sed -n '/== summary/,$p' "$OUT/ab.log" | head -25
  echo "== kernel bench"; grep -E "^S[123] +[0-9]|geomean|FAIL|NONDET" "$OUT/final.log" | head -45
}

cmd_triton_vllm() {
  local shapes=S1,S3,S2 budget_min=1.25 shape_s=180 agreement='' agreement_tunes=2
  parse_opts "--shapes=shapes --budget-min=budget_min --shape-s=shape_s --agreement=agreement
    --agreement-tunes=agreement_tunes --tests=TESTS" "$@"
  run_tests "$TESTS" || return 1
  local work=build/triton-device shape agree
  mkdir -p "$work"
  export LD_LIBRARY_PATH=$PWD/$BIN:/usr/local/cuda/lib64:/usr/local/cuda/lib:${LD_LIBRARY_PATH:-}
  export PYTHONUNBUFFERED=1
  {
    gpu_info
    python3 -c 'import torch, triton; print("torch", torch.__version__, "triton",
      triton.__version__)'
    ldd "$BIN/moetune" | grep 'not found' && echo "moetune: a library is missing (above)"
    for shape in ${shapes//,/ }; do
      agree=()
      [ "$agreement" = "$shape" ] &&
        agree=(--agreement "$shape" --agreement-tunes "$agreement_tunes")
      echo "=== $shape (budget $budget_min min, limit $shape_s s) $(date +%T)"
      timeout -k 10 "$shape_s" python3 bench/triton_vllm_device.py --out "$work/$shape" \
        --shapes "$shape" --budget-min "$budget_min" --moetune "$BIN/moetune" \
        ${agree[@]+"${agree[@]}"}
      echo "=== $shape exit $? $(date +%T)"
    done
  } 2>&1 | tee -a "$OUT/run.log"
  tar czf "$OUT/triton-device.tgz" -C "$work" .
}

[[ " $COMMANDS " == *" $CMD "* ]] || die "unknown command '$CMD'; expected one of: $COMMANDS"
mkdir -p "$OUT" || die "--out $OUT: cannot create it"
"cmd_${CMD//-/_}" "$@"
status=$?
pack
echo "files: $(cd "$OUT" && find . -type f | sort | tr '\n' ' ')"
exit $status
