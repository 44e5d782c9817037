#!/usr/bin/env bash
# The README's second command: install deps, build everything, run every test. GPU tests skip
# themselves (with the reason) where no GPU is present.
set -euo pipefail
cd "$(dirname "$0")/.."

./scripts/setup.sh
./scripts/build.sh
build_dir=${MOETUNE_BUILD_DIR:-build}
ctest --test-dir "$build_dir" --output-on-failure -j2 "$@"
