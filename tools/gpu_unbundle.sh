#!/usr/bin/env bash
# Sets up a bundle made by tools/gpu_bundle.sh on the GPU machine and runs a command with it:
# Open MPI's files where it looks for them, the build tree linked where it was built, and the
# bundle's libraries, CUDA's and NCCL's on the path. Where the machine has an Open MPI of its own
# (Ubuntu's 4.1, built on PMIx 5), its plugins, orted and libraries are kept: the bundle's 4.1
# libmpi is ABI-compatible, but its PMIx 4 breaks the machine's plugins.
# usage (from the repository's root): tools/gpu_unbundle.sh BUNDLE BUILD_PATH COMMAND...
#   BUILD_PATH: where the bundle's build tree was built (its CTest files name it)
set -euo pipefail
bundle=$(realpath "$1")
built_at=$2
shift 2
if ! ldconfig -p | grep -q 'libmpi\.so\.40 '; then
  cp -a "$bundle/root/." /
  [[ -e /usr/bin/mpiexec ]] || ln -s orterun /usr/bin/mpiexec
fi
source_at=$(dirname "$built_at")
if [[ $(realpath -m "$source_at") != $(pwd) ]]; then
  mkdir -p "$(dirname "$source_at")"
  ln -sfn "$(pwd)" "$source_at"
fi
[[ -e $built_at ]] || ln -sfn "$bundle/build" "$built_at"
mkdir -p "$bundle/missing"
for lib in "$bundle"/lib/*; do
  ldconfig -p | grep -q "^[[:space:]]*$(basename "$lib") " || ln -sf "$lib" "$bundle/missing/"
done
nccl=$(find /opt /usr/local -name 'libnccl.so.2' -print -quit 2>/dev/null || true)
export LD_LIBRARY_PATH=$bundle/missing:/usr/local/cuda/lib64:/usr/local/cuda/lib${nccl:+:$(dirname "$nccl")}${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
exec "$@"
