#!/usr/bin/env bash
# The README's first command: install deps, build, tune the demo recipe on this machine's default
# backend (cpu without a GPU), then print the table and how it serves one token count.
# Writes into ${MOETUNE_DEMO_OUT:-build/demo-tables} so the checked-in tables/ stay untouched.
set -euo pipefail
cd "$(dirname "$0")/.."

./scripts/setup.sh
./scripts/build.sh moetune
out=${MOETUNE_DEMO_OUT:-build/demo-tables}
bin=${MOETUNE_BUILD_DIR:-build}/moetune

# The demo shape for this machine: the CPU backend's recipes/demo.json, or, on a Hopper GPU, the
# same kind of small shape for the cuda backend: recipes/demo-h200.json with its device set to the
# GPU present (build/demo-<device>.json), since `tune` refuses a recipe of another device and a
# table is named for the device it was measured on.
recipe=recipes/demo.json
if [ -z "${MOETUNE_DEMO_RECIPE:-}" ] && command -v nvidia-smi >/dev/null 2>&1 &&
  nvidia-smi -L >/dev/null 2>&1 && [ -x "$bin" ]; then
  gpu=$(nvidia-smi --query-gpu=name --format=csv,noheader -i 0 | head -n 1)
  cap=$(nvidia-smi --query-gpu=compute_cap --format=csv,noheader -i 0 | head -n 1)
  if [ "${cap%%.*}" = 9 ] && [[ "$gpu" =~ ^[A-Za-z0-9\ _.()-]+$ ]]; then
    label=${gpu// /_}
    recipe=$(dirname "$bin")/demo-$label.json
    sed -e "s/\"device\": \"NVIDIA H200\"/\"device\": \"$gpu\"/" \
      -e "s/\"demo-h200\"/\"demo-$label\"/g" recipes/demo-h200.json >"$recipe"
    echo "+ $recipe: recipes/demo-h200.json for this $gpu"
  else
    echo "note: GPU '$gpu' (compute capability $cap) is not a Hopper GPU; the demo tunes on the cpu"
  fi
fi
recipe=${MOETUNE_DEMO_RECIPE:-$recipe}
echo "+ moetune tune --recipe $recipe --out $out"
start=$(date +%s)
"$bin" tune --recipe "$recipe" --out "$out"
echo "tune took $(( $(date +%s) - start )) s"
table=$(ls "$out"/*.json | head -n 1)
echo
echo "+ moetune resolve --table $table --m 24"
"$bin" resolve --table "$table" --m 24
