#!/usr/bin/env bash
# Installs the C++ package from a build tree into a temporary prefix, builds
# examples/03_find_package against it with find_package(moetune), runs it (a self-checking cpu
# layer), and checks that the consumer's link line names neither the tuner nor SQLite.
# Usage: find_package_test.sh BUILD_DIR SOURCE_DIR
set -euo pipefail
build=$1 src=$2
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
cmake --install "$build" --component dev --prefix "$tmp/prefix" >/dev/null
cmake -S "$src/examples/03_find_package" -B "$tmp/consumer" -G Ninja \
  -DCMAKE_BUILD_TYPE=Release -DCMAKE_PREFIX_PATH="$tmp/prefix" >/dev/null
cmake --build "$tmp/consumer" >/dev/null
link=$(ninja -C "$tmp/consumer" -t commands moetune_consumer | tail -1)
if echo "$link" | grep -Eiq 'sqlite|moetune_tuner'; then
  echo "find_package_test: the consumer links the tuner or SQLite: $link" >&2
  exit 1
fi
echo "$link" | grep -q 'libmoetune_runtime.a' || { echo "no runtime on: $link" >&2; exit 1; }
"$tmp/consumer/moetune_consumer"
