#!/usr/bin/env bash
# Sets up (tools/setup.sh) and runs every test: Catch2 unit tests and the multi-rank tests under
# mpirun, all registered with CTest.
set -euo pipefail
cd "$(dirname "$0")/.."
tools/setup.sh
# Multi-rank tests run mpirun as root in CI containers; Open MPI refuses that unless told.
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
ctest --preset release -j "$(nproc)"
