# GEMM2 stores by the producer warpgroup (kAsyncEpilogue, experiment build B = .devbin-e: the
# kernel's MOETUNE_WS_ASYNC_EPILOGUE at 1 and every tma_ws launch given 230400 bytes of dynamic
# shared memory) against build A (.devbin-m: moetune of .devbin, c9f312a), in one device call:
#  1. B's GPU tests (the bit tests compare tma_ws 128-row tiles, now with the async epilogue where
#     its buffer fits, against cooperative / 192 / 256-row tiles);
#  2. `moetune ab` at M = 1024..16384 of the recipe's shapes, digests required equal across all
#     arms: A shipped, A with recipe-s3.json (128-row tma_ws GEMM2 rows at 3 stages, where the
#     buffer fits beside the stages), B shipped (async only where it fits at the shipped stages:
#     128 x 128 GEMM2s), B with recipe-s3.json.
set -u
export MOETUNE_CACHE_DIR=/tmp/mc
D=bench/results/2026-11-30-async-epilogue
.devbin-m/moetune materialize --recipe $D/recipe-s3.json --out /tmp/ts3 > /dev/null
nvidia-smi --query-gpu=clocks.sm,power.draw,temperature.gpu --format=csv > $OUT/smi.txt 2>&1
timeout 240 .devbin-e/cuda_kernel_tests > $OUT/gpu-tests-B.log 2>&1
echo "gpu tests B rc $?"
grep -E "^\[  (PASSED|FAILED) |tests ran" $OUT/gpu-tests-B.log | head -8
timeout 330 .devbin-m/moetune ab --backend cuda --recipe recipes/h200.json --m 1024,2048,4096,8192,16384 \
  --repeats 10 --warmup 3 --rounds 3 --cooldown 0.3 --digests equal --timeout-s 200 \
  --arm A=tables:tables/NVIDIA_H200 --arm A3=tables:/tmp/ts3 \
  --arm B=binary:.devbin-e/moetune,tables:tables/NVIDIA_H200 \
  --arm B3=binary:.devbin-e/moetune,tables:/tmp/ts3 --out $OUT/ab > $OUT/ab.log 2>&1
echo "ab rc $?"
grep -E " M=[0-9]+ " $OUT/ab.log | sort -u
grep -iE "digest|error" $OUT/ab.log | head -5
