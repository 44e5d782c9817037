#!/usr/bin/env bash
# Installs the build dependencies on Debian/Ubuntu, skipping every package already present.
# Safe to run any number of times. Needs root or sudo only when something is missing.
set -euo pipefail

packages=(cmake ninja-build g++ nlohmann-json3-dev libcli11-dev libsqlite3-dev libgtest-dev python3)
missing=()
for p in "${packages[@]}"; do
  if ! dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed"; then
    missing+=("$p")
  fi
done
if [ ${#missing[@]} -eq 0 ]; then
  exit 0
fi
echo "setup: installing ${missing[*]}"
as_root=()
if [ "$(id -u)" -ne 0 ]; then
  if ! command -v sudo >/dev/null; then
    echo "setup: missing packages ${missing[*]} and no sudo; install them as root and rerun" >&2
    exit 2
  fi
  as_root=(sudo)
fi
export DEBIAN_FRONTEND=noninteractive
"${as_root[@]}" apt-get update -qq
"${as_root[@]}" apt-get install -y -qq --no-install-recommends "${missing[@]}"
