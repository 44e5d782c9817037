#!/usr/bin/env bash
# Installs the build dependencies on Debian/Ubuntu, skipping every package already present.
# Safe to run any number of times. Needs root or sudo only when something is missing.
set -euo pipefail

# clang and libclang-rt-14-dev build the readers' libFuzzer target (tests/fuzz/, Fuzz.JsonReaders).
packages=(cmake ninja-build g++ nlohmann-json3-dev libcli11-dev libsqlite3-dev libgtest-dev python3 python3-pip python3-venv clang libclang-rt-14-dev)
missing=()
for p in "${packages[@]}"; do
  if ! dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed"; then
    missing+=("$p")
  fi
done
install_python_deps() {
  # The Python package's build and tests: torch (the version the device has), transformers (the
  # drop-in's tests build real models from configs), pytest. MOETUNE_PYTHON=OFF skips them.
  [ "${MOETUNE_PYTHON:-}" = OFF ] && return 0
  local want=("torch==${MOETUNE_TORCH_VERSION:-2.11.0}" "transformers==5.17.0" "pytest" "numpy")
  if python3 -c "import torch, transformers, pytest, numpy" >/dev/null 2>&1; then return 0; fi
  echo "setup: pip installing ${want[*]} (torch is a few GB)"
  python3 -m pip install -q "${want[@]}" || PIP_BREAK_SYSTEM_PACKAGES=1 python3 -m pip install -q "${want[@]}"
}

if [ ${#missing[@]} -eq 0 ]; then
  install_python_deps
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
install_python_deps
