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

echo "+ moetune tune --recipe recipes/demo.json --out $out"
start=$(date +%s)
"$bin" tune --recipe recipes/demo.json --out "$out"
echo "tune took $(( $(date +%s) - start )) s"
table=$(ls "$out"/*.json | head -n 1)
echo
echo "+ moetune resolve --table $table --m 24"
"$bin" resolve --table "$table" --m 24
