#!/usr/bin/env bash
# Device call 5 (twentieth session): the GPU tests that call 4's 470 s budget did not reach
# (b9efb65's cuda_kernel_tests after EveryDefaultAndSearchSpaceConfigCompilesForS2, which was
# compiling when the budget ended): the levers' bitwise tests and the wgmma band test.
set -u
cd "$(dirname "$0")/../../.." || exit 2
export MOETUNE_CACHE_DIR=/tmp/moetune-cache
timeout -k 5 230 .devbin/cuda_kernel_tests \
  --gtest_filter='Sm90Gather.MultiCta*:Sm90Gather.Decode*:Sm90Gather.DynamicTiles*:Sm90Gather.Wgmma*' \
  > "$OUT/cuda_kernel_tests.log" 2>&1
echo "cuda_kernel_tests rc $?"
grep -hE "^\[  (PASSED|FAILED) |^\[       OK|Failure" "$OUT/cuda_kernel_tests.log" | head -20
