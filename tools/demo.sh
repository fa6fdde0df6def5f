#!/usr/bin/env bash
# Sets up (tools/setup.sh) and runs the main job on its embedded default, on this machine's CPU:
# `shardplan demo` calibrates the cores (GEMMs, kernels, MPI collectives), plans gpt-small for them
# with the measured profile, executes the best plan and the runners-up on MPI ranks, compares each
# with its prediction and prints one table. Every file (profile, plans, measurements, traces,
# comparisons, logs) goes to out/demo/. Arguments are passed to `shardplan demo`.
set -euo pipefail
cd "$(dirname "$0")/.."
tools/setup.sh
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1  # CI containers run as root
exec build/tools/shardplan demo --out-dir out/demo --json out/demo/demo.json "$@"
