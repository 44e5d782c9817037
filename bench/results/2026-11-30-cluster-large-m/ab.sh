# 2x1 cluster pairs (TMA multicast of the weight tile) on every 128-row tma_ws GEMM at large M
# against the shipped rows, in one device call: `moetune ab`, fresh interleaved processes.
set -u
export MOETUNE_CACHE_DIR=/tmp/mc
B=${BIN:-.devbin}; D=bench/results/2026-11-30-cluster-large-m
$B/moetune materialize --recipe $D/recipe-vc2.json --out /tmp/tc2 > /dev/null
nvidia-smi --query-gpu=clocks.sm,power.draw,temperature.gpu --format=csv > $OUT/smi.txt 2>&1
timeout 500 $B/moetune ab --backend cuda --recipe recipes/h200.json --m ${AB_M:-4096,8192,16384} \
  --repeats ${REPEATS:-20} --warmup 3 --rounds ${ROUNDS:-3} --cooldown 0.3 --digests any \
  --timeout-s 200 --arm base=tables:tables/NVIDIA_H200 --arm c2x1=tables:/tmp/tc2 --out $OUT/ab \
  > $OUT/ab.log 2>&1
echo "ab rc $?"
grep -E " M=[0-9]+ " $OUT/ab.log
