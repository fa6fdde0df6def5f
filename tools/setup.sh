#!/usr/bin/env bash
# Installs shardplan's build dependencies (Debian packages) when missing, then configures and
# builds a Release tree in build/. Idempotent: a second run only rebuilds what changed.
set -euo pipefail
cd "$(dirname "$0")/.."

# libjemalloc-dev is the CLI's malloc (CMakeLists.txt: SHARDPLAN_JEMALLOC). clang and
# libclang-rt-14-dev (libFuzzer's runtime) build tools/fuzz.sh's targets; libjs-chart.js
# is inlined into `shardplan report`'s pages, and chromium renders them in tests/report.
packages=(build-essential cmake nlohmann-json3-dev libeigen3-dev libfmt-dev catch2 libcli11-dev
          libopenmpi-dev openmpi-bin libjemalloc-dev clang libclang-rt-14-dev libjs-chart.js chromium)
missing=()
for p in "${packages[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done
if ((${#missing[@]})); then
  echo "shardplan setup: installing ${missing[*]}"
  sudo_cmd=()
  [[ $(id -u) -eq 0 ]] || sudo_cmd=(sudo)
  "${sudo_cmd[@]}" apt-get update -qq
  DEBIAN_FRONTEND=noninteractive "${sudo_cmd[@]}" apt-get install -y -qq "${missing[@]}" >/dev/null
fi

cmake --preset release >/dev/null
cmake --build build -j "$(nproc)"
