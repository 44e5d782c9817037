#!/usr/bin/env bash
# Issue 52's device numbers in one device call: for each shape of TRITON_SHAPES (default S1,S3,S2),
# bench/triton_vllm_device.py tunes vLLM's Triton fused-MoE kernel (12 buckets, cold Triton
# cache, --budget-min TRITON_BUDGET_MIN, default 1.25) and then times vLLM's layer with (a) the
# tuned file, (b) the file vLLM ships for this GPU, (c) vLLM's default rule; each shape is bounded
# by `timeout` TRITON_SHAPE_S seconds (default 180), so three fit one 600 s call. With
# TRITON_AGREEMENT=S2 the agreement tunes of that shape run too (TRITON_AGREEMENT_TUNES, default 2).
# The device tool brings back at most 8 files and none whose name holds '=' or ',': $OUT ends with
# run.log (everything printed, appended to: a second run with other settings adds to it; the
# tables last) and triton-device.tgz (per shape: the CSV, the tune
# log and JSON, the stores, recipes and vLLM-named tables). Carry .engines (fetch_engine_kernels.py)
# and .devbin (moetune; libsqlite3.so.0 beside it where the device lacks it).
#   device: carry [".engines", ".devbin"], command "bash bench/run_triton_vllm_device.sh"
set -uo pipefail
cd "$(dirname "$0")/.."
OUT=${OUT:-build/triton-device-report}
SHAPES=${TRITON_SHAPES:-S1,S3,S2}
BUDGET_MIN=${TRITON_BUDGET_MIN:-1.25}
SHAPE_S=${TRITON_SHAPE_S:-180}
WORK=build/triton-device
mkdir -p "$OUT" "$WORK"
export LD_LIBRARY_PATH=$PWD/.devbin:/usr/local/cuda/lib64:/usr/local/cuda/lib:${LD_LIBRARY_PATH:-}
export PYTHONUNBUFFERED=1
{
  nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.mem,temperature.gpu,power.draw \
    --format=csv
  python3 -c 'import torch, triton; print("torch", torch.__version__, "triton", triton.__version__)'
  ldd .devbin/moetune | grep 'not found' && echo "moetune: a library is missing (above)"
  for shape in ${SHAPES//,/ }; do
    agree=()
    [ "${TRITON_AGREEMENT:-}" = "$shape" ] &&
      agree=(--agreement "$shape" --agreement-tunes "${TRITON_AGREEMENT_TUNES:-2}")
    echo "=== $shape (budget $BUDGET_MIN min, limit $SHAPE_S s) $(date +%T)"
    timeout -k 10 "$SHAPE_S" python3 bench/triton_vllm_device.py --out "$WORK/$shape" \
      --shapes "$shape" --budget-min "$BUDGET_MIN" "${agree[@]}"
    echo "=== $shape exit $? $(date +%T)"
  done
} 2>&1 | tee -a "$OUT/run.log"
tar czf "$OUT/triton-device.tgz" -C "$WORK" .
