#!/usr/bin/env bash
# Device call 5 (twenty-sixth session): the GPU tests call 4's 330 s cut (cuda_kernel_tests stopped
# in EveryDefaultAndSearchSpaceConfigCompilesForS2) but that one: align/PDL levers, the decode
# levers, dynamic tiles / half-tile skip / tail split, the wgmma band. Binaries of 4049eb8.
mkdir -p $OUT && MOETUNE_CACHE_DIR=/tmp/moetune-cache timeout -k 5 230 .devbin-c/cuda_kernel_tests \
  --gtest_filter='Sm90Gather.MultiCta*:Sm90Gather.Dynamic*:Sm90Gather.Wgmma*:Sm90Gather.Decode*' \
  > $OUT/cuda_kernel_tests_rest.log 2>&1
echo "rc $?"
grep -hE "^\[  (FAILED|PASSED) |^\[       OK|Failure" $OUT/cuda_kernel_tests_rest.log | cut -c1-150
