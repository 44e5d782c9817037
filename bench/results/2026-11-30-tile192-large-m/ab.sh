# 192 x 192 tiles (S1; S2/S3: GEMM1 192 x 96, GEMM2 192 x 192 / 192 x 128) at large M against the
# shipped rows, in one device call: `moetune ab`, fresh interleaved processes, digests reported.
set -u
export MOETUNE_CACHE_DIR=/tmp/mc
B=${BIN:-.devbin}; D=bench/results/2026-11-30-tile192-large-m
$B/moetune materialize --recipe $D/recipe-v192.json --out /tmp/t192 > /dev/null
nvidia-smi --query-gpu=clocks.sm,power.draw,temperature.gpu --format=csv > $OUT/smi.txt 2>&1
timeout 500 $B/moetune ab --backend cuda --recipe recipes/h200.json --m ${AB_M:-4096,8192,16384} \
  --repeats ${REPEATS:-20} --warmup 3 --rounds ${ROUNDS:-3} --cooldown 0.3 --digests any \
  --timeout-s 200 --arm base=tables:tables/NVIDIA_H200 --arm v192=tables:/tmp/t192 --out $OUT/ab \
  > $OUT/ab.log 2>&1
echo "ab rc $?"
grep -E " M=[0-9]+ " $OUT/ab.log
