#!/usr/bin/env bash
# Device call 1 (twenty-first session), binaries of b9efb65 (.devbin) and d0d3d96 (.devbin-a):
# 1. recipe A/B at S1 M=4096 and 16384 (bench/run_h200_recipe_ab.sh, A B A B): A = the shipped
#    recipe, B = recipe-b.json (S1 16384: the 8192 row's GEMMs, 128 x 232 s5 / 128 x 224; S1 4096:
#    GEMM1 the 8192 row's tma_ws gather 128 x 232 s5 beside the shipped swap-AB GEMM2), since
#    b9efb65 made the tma_ws gather GEMM1 4-8% faster at large M;
# 2. ncu of the first tma_ws GEMM1 at S2 M=4096 on both builds (the twentieth session's next step):
#    sections (speed of light, memory tables, warp states), then L2 request counters per slice
#    (max and mean over the slices: one hot slice would show as max >> mean).
set -u
cd "$(dirname "$0")/../../.." || exit 2
start=$(date +%s)
export MOETUNE_CACHE_DIR=/tmp/moetune-cache
D=bench/results/2026-12-01-s1-rows
OUT=$OUT/recipe-ab RUN_S=50 timeout 230 bash bench/run_h200_recipe_ab.sh recipes/h200.json \
  $D/recipe-b.json --shapes S1 --m 4096,16384 > "$OUT/recipe-ab.log" 2>&1
echo "recipe-ab rc $? after $(( $(date +%s) - start )) s"
tail -4 "$OUT/recipe-ab.log"
M="lts__t_requests_srcunit_tex.sum,lts__t_requests_srcunit_tex.max,lts__t_requests_srcunit_tex.avg"
M="$M,lts__t_sectors_srcunit_tex.sum,lts__t_sectors_srcunit_tex.max,lts__t_sectors_srcunit_tex.avg"
M="$M,lts__t_sectors.max,lts__t_sectors.avg,gpu__time_duration.sum,sm__cycles_elapsed.avg.per_second"
M="$M,smsp__inst_executed_op_ldgsts.sum,l1tex__t_requests_pipe_lsu_mem_global_op_ldgsts.sum"
mkdir -p "$OUT/ncu"
for b in a b; do
  bin=.devbin; [ $b = a ] && bin=.devbin-a
  for pass in sections metrics; do
    left=$(( 585 - ($(date +%s) - start) ))
    (( left < 40 )) && { echo "no time left for $b $pass"; continue; }
    lim=$(( left < 120 ? left : 120 ))
    if [ $pass = sections ]; then
      what=(--section SpeedOfLight --section MemoryWorkloadAnalysis_Tables --section WarpStateStats)
    else
      what=(--metrics "$M")
    fi
    timeout -k 5 $lim ncu --clock-control none --target-processes all --kernel-name regex:ws_gemm \
      --launch-count 1 "${what[@]}" $bin/moetune_sm90_bench --recipe recipes/h200.json \
      --shapes S2 --m 4096 --no-sweep --out /tmp/ncu-bench-$b > "$OUT/ncu/$b-$pass.txt" \
      2> "$OUT/ncu/$b-$pass.err"
    echo "ncu $b $pass rc $? after $(( $(date +%s) - start )) s"
  done
done
for b in a b; do
  echo "== build $b"
  grep -E "Duration|SM Frequency|L2 Cache Throughput|DRAM Throughput|Compute \(SM\)|lts__t_|ldgsts|gpu__time" \
    "$OUT/ncu/$b-sections.txt" "$OUT/ncu/$b-metrics.txt" | sed 's/^.*ncu\///' | head -30
done
