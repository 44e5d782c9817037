# S1 M=16384: the sweep's best pair of the 128-row space (GEMM1 128x256 on 2x1 clusters, GEMM2
# 128x224 with 5 stages on 2x1 clusters; recipe-va.json) and the S1 M=8192 row's tiles without
# clusters (GEMM1 128x232 s5, GEMM2 128x224 s5; recipe-vb.json) against the shipped row (the
# default, 128x256 both), in one device call: `moetune ab`, fresh interleaved processes.
set -u
export MOETUNE_CACHE_DIR=/tmp/mc
B=${BIN:-.devbin}; D=bench/results/2026-11-30-s1-16384-rows
for v in va vb; do $B/moetune materialize --recipe $D/recipe-$v.json --out /tmp/t$v > /dev/null; done
nvidia-smi --query-gpu=clocks.sm,power.draw,temperature.gpu --format=csv > $OUT/smi.txt 2>&1
timeout 500 $B/moetune ab --backend cuda --problem E=128,K=2688,I=1856,topk=6,act=relu2,dtype=bf16 \
  --m 16384 --repeats ${REPEATS:-10} --warmup 3 --rounds ${ROUNDS:-6} --cooldown 0.5 --digests any \
  --timeout-s 200 --arm base=tables:tables/NVIDIA_H200 --arm va=tables:/tmp/tva \
  --arm vb=tables:/tmp/tvb --out $OUT/ab > $OUT/ab.log 2>&1
echo "ab rc $?"
grep -E " M=[0-9]+ " $OUT/ab.log
