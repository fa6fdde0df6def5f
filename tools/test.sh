#!/usr/bin/env bash
# Sets up (tools/setup.sh) and runs every test: Catch2 unit tests and the multi-rank tests under
# mpirun, all registered with CTest; first on the Release tree, then on a Debug tree built with
# AddressSanitizer and UndefinedBehaviorSanitizer (CMakePresets.json's "debug": asserts live, the
# CPU backend only), so that a bug that corrupts memory, reads past a buffer or overflows fails
# the tests instead of passing them by luck.
set -euo pipefail
cd "$(dirname "$0")/.."
tools/setup.sh
# Multi-rank tests run mpirun as root in CI containers; Open MPI refuses that unless told.
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
ctest --preset release -j "$(nproc)"
# The sanitizers' options (ASAN_OPTIONS, UBSAN_OPTIONS) are the debug test preset's. It leaves out
# the calibration's 2-rank tests, which assert that collectives' and work quanta's times grow with
# their size: under the sanitizers' slowdown on a loaded 2-core machine they do not reliably.
cmake --preset debug >/dev/null
cmake --build build-debug -j "$(nproc)"
ctest --preset debug -j "$(nproc)"
# Every loader's libFuzzer target (tests/fuzz) for 15 s under ASan and UBSan: a crash, a leak, a
# hang or an exception other than InputError on any input fails the run.
tools/fuzz.sh -t 15
