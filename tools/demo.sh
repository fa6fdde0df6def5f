#!/usr/bin/env bash
# Sets up (tools/setup.sh) and runs the main job on its embedded default. Until the executor and
# calibration issues land, that is: describe the demo model and this machine.
set -euo pipefail
cd "$(dirname "$0")/.."
tools/setup.sh
build/tools/shardplan describe gpt-small
build/tools/shardplan describe local-cpu
