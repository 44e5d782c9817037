#!/usr/bin/env bash
# clang-format (Google base, 100 columns; .clang-format) over the tracked C++/CUDA sources.
#   scripts/format.sh           rewrite files in place (commit the result on its own, STYLE 6)
#   scripts/format.sh --check   list files that differ and exit 1 when any does
set -euo pipefail
cd "$(dirname "$0")/.."

if ! command -v clang-format >/dev/null; then
  echo "format: clang-format not found (apt-get install clang-format)" >&2
  exit 2
fi
mapfile -t files < <(git ls-files '*.cpp' '*.hpp' '*.cu' '*.cuh')
if [ "${1:-}" = "--check" ]; then
  bad=0
  for f in "${files[@]}"; do
    if ! clang-format --style=file "$f" | cmp -s - "$f"; then
      echo "format: $f differs from clang-format"
      bad=1
    fi
  done
  exit $bad
fi
clang-format --style=file -i "${files[@]}"
