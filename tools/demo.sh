#!/usr/bin/env bash
# Sets up (tools/setup.sh) and runs the main job on its embedded default, on this machine's CPU:
# plan gpt-small for the local cores, execute the chosen plan on MPI ranks for a few steps, and
# simulate the same plan, so predicted and measured step times and traces sit side by side.
# Files go to out/demo/. (`shardplan compare` and `demo`, which close the loop in one table, come
# with the calibration issue.)
set -euo pipefail
cd "$(dirname "$0")/.."
tools/setup.sh
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1  # CI containers run as root
sp=build/tools/shardplan
out=out/demo
mkdir -p "$out"

echo "== plan: gpt-small on local-cpu"
$sp plan --model gpt-small --cluster local-cpu --gbs 8 --seq 256 --dtype fp32 --top 5 \
  --out "$out/plan.json"
echo
echo "== execute the plan on this machine's cores"
$sp execute "$out/plan.json" --steps 5 --out "$out/measured.json" --trace "$out/measured_trace.json"
echo
echo "== simulate the same plan"
$sp simulate "$out/plan.json" --trace "$out/predicted_trace.json"
echo
echo "open $out/measured_trace.json and $out/predicted_trace.json in ui.perfetto.dev to compare"
