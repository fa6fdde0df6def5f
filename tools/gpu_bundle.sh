#!/usr/bin/env bash
# Packs a build with the CUDA backend for a GPU machine that has CUDA, NCCL and a C++ runtime but
# none of shardplan's other libraries (the lent device machines: Ubuntu with CUDA 13, no Open MPI,
# nothing to install from). The bundle holds the CLI and the CUDA test programs, the build tree's
# CTest files, the shared libraries they and Open MPI's plugins load beyond glibc, the C++ runtime,
# CUDA and NCCL, and Open MPI's plugins, help texts and settings at the paths it was built for.
# tools/gpu_unbundle.sh sets it up there and runs a command in it.
# usage: tools/gpu_bundle.sh [BUILD_DIR=build] [BUNDLE=.devbuild]
set -euo pipefail
cd "$(dirname "$0")/.."
build=${1:-build}
bundle=$(realpath -m "${2:-.devbuild}")
[[ -x $build/tests/test_executor_cuda ]] ||
  { echo "gpu_bundle: $build has no CUDA backend (no tests/test_executor_cuda)" >&2; exit 1; }
rm -rf "$bundle"
mkdir -p "$bundle/build" "$bundle/lib" "$bundle/root"

# The build tree without its objects: CTest's files name programs by absolute path, so the tree
# keeps its layout and gpu_unbundle.sh links it where it was built.
(cd "$build" && find . \( -name CTestTestfile.cmake -o -name '*_include*.cmake' -o -name '*_tests*.cmake' \) \
  -exec cp --parents {} "$bundle/build" \;)
programs=(tools/shardplan tests/test_executor_cuda tests/test_executor_cuda_mpi)
for p in "${programs[@]}"; do
  mkdir -p "$bundle/build/$(dirname "$p")"
  cp "$build/$p" "$bundle/build/$p"
done

# Open MPI and PMIx as Debian installs them: their plugins are found by the paths they were
# configured with, so they travel to the same paths.
mpi_paths=(/usr/lib/x86_64-linux-gnu/openmpi/lib/openmpi3 /usr/lib/x86_64-linux-gnu/pmix2
           /usr/share/openmpi /etc/openmpi /usr/bin/orterun /usr/bin/orted)
for p in "${mpi_paths[@]}"; do
  mkdir -p "$bundle/root$(dirname "$p")"
  cp -a "$p" "$bundle/root$p"
done

# Every shared library these load but glibc's, the C++ runtime's, CUDA's and NCCL's (the GPU
# machine has its own); gpu_unbundle.sh takes those the machine lacks.
system='^(libc|libm|libdl|librt|libpthread|ld-linux-x86-64|libstdc\+\+|libgcc_s|libcuda|libcudart|libcublas|libcublasLt|libnccl|linux-vdso)\.so'
objects=("${programs[@]/#/$build/}")
mapfile -t -O "${#objects[@]}" objects < <(find "$bundle/root" -name '*.so' -o -path '*/bin/*')
ldd "${objects[@]}" 2>/dev/null | awk '$2 == "=>" && $3 ~ /^\// {print $1, $3}' | sort -u |
  while read -r name path; do
    [[ $name =~ $system ]] || cp -L "$path" "$bundle/lib/$name"
  done
du -sh "$bundle"
