#!/usr/bin/env bash
# Call 5: every GPU test at the head (c2fbe14): cuda_kernel_tests (all of them, since the
# testbed poisons the workspace before each checked run: until now only subsets ran with it) and
# MoeRunner's GPU tests, each with a fresh cubin cache.
set -uo pipefail
cd "$(dirname "$0")/../../.."
OUT=${OUT:?}
export MOETUNE_CACHE_DIR=$(mktemp -d)
nvidia-smi --query-gpu=name,driver_version,clocks.sm,power.draw --format=csv > $OUT/nvidia-smi.txt 2>&1
timeout -k 5 470 .devbin/cuda_kernel_tests > $OUT/cuda_kernel_tests.log 2>&1
echo "cuda_kernel_tests: exit $? $(grep -E 'test suites ran|^\[  PASSED|^\[  FAILED  \] [0-9]' $OUT/cuda_kernel_tests.log | tr '\n' ' ')"
grep -E "^\[  FAILED  \] Sm|Failure" $OUT/cuda_kernel_tests.log | head -10
timeout -k 5 100 .devbin/runtime_cuda_tests > $OUT/runtime_cuda_tests.log 2>&1
echo "runtime_cuda_tests: exit $? $(grep -E 'test suites ran|^\[  PASSED|^\[  FAILED  \] [0-9]' $OUT/runtime_cuda_tests.log | tr '\n' ' ')"
grep -E "^\[       OK|^\[  FAILED  \] " $OUT/cuda_kernel_tests.log $OUT/runtime_cuda_tests.log | sed 's/.*\] //' | head -40
