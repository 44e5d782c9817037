#!/usr/bin/env bash
# Device call 6 (twenty-sixth session): the last GPU test, compile-only
# (EveryDefaultAndSearchSpaceConfigCompilesForS2). Binaries of 4049eb8.
mkdir -p $OUT && MOETUNE_CACHE_DIR=/tmp/moetune-cache timeout -k 5 280 .devbin-c/cuda_kernel_tests \
  --gtest_filter='Sm90Gather.EveryDefaultAndSearchSpaceConfigCompilesForS2' \
  > $OUT/cuda_kernel_tests_compile.log 2>&1
echo "rc $?"
grep -hE "^\[  (FAILED|PASSED) |^\[       OK|Failure" $OUT/cuda_kernel_tests_compile.log | cut -c1-150
