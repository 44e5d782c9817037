# The decode path's fixed cost and the decode_w2_stage lever on wider GEMM2 rows, in one device
# call (run from the repository root with OUT set; BIN: the build, .devbin):
#  1. moetune_sm90_bench at M=1 with the default configs on shapes of 0.03..302 MB of weights (T0-T4);
#  2. `moetune ab` at M=1,4 of the shipped tables against the lever on, and against three variant
#     recipes with the lever on (recipe-v1..v3.json: GEMM2 decode block_n 16 / 16 with 16 warps /
#     8, so that fewer, larger CTAs stage their w2 rows while GEMM1 runs).
set -u
export MOETUNE_CACHE_DIR=/tmp/mc
B=${BIN:-.devbin}; D=bench/results/2026-11-30-decode-probe
for v in 1 2 3; do $B/moetune materialize --recipe $D/recipe-v$v.json --out /tmp/tv$v > /dev/null; done
nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.max.sm,power.draw --format=csv > $OUT/smi.txt 2>&1
git rev-parse HEAD >> $OUT/smi.txt 2>/dev/null
timeout 200 $B/moetune_sm90_bench --out $OUT/fixed --shapes none --shape T0=8,128,128,1,silu --shape T1=128,1024,768,8,silu --shape T2=128,4096,768,8,silu --shape T3=128,8192,768,8,silu --shape T4=128,2048,768,1,silu --m 1 --no-sweep > $OUT/fixed.log 2>&1; echo "fixed rc $?"
A="--arm base=tables:tables/NVIDIA_H200 --arm lever=tables:tables/NVIDIA_H200,levers:decode_w2_stage=on"
for v in 1 2 3; do A="$A --arm v$v=tables:/tmp/tv$v,levers:decode_w2_stage=on"; done
timeout 300 $B/moetune ab --backend cuda --recipe recipes/h200.json --m 1,4 --repeats 50 --warmup 3 --rounds 4 --cooldown 0.2 --digests equal --timeout-s 120 $A --out $OUT/ab > $OUT/ab.log 2>&1; echo "ab rc $?"
cd $OUT && tar czf fixed.tgz fixed && rm -rf fixed; cd - >/dev/null
tail -12 $OUT/fixed.log
grep -E " M=[0-9]+ " $OUT/ab.log
