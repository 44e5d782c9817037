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

# The demo shape for this machine: the CPU backend's recipes/demo.json, or, where a GPU is usable,
# the same kind of small shape for the cuda backend (recipes/demo-h200.json).
recipe=recipes/demo.json
if command -v nvidia-smi >/dev/null 2>&1 && nvidia-smi -L >/dev/null 2>&1 && [ -x build/moetune ]; then
  recipe=recipes/demo-h200.json
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
