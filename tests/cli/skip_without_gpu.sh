#!/usr/bin/env bash
# Runs the rest of the command line when this machine has a CUDA device (nvidia-smi lists one);
# otherwise says why and exits 77, which CTest's SKIP_RETURN_CODE reports as a skipped test.
# usage: skip_without_gpu.sh COMMAND...
if ! command -v nvidia-smi >/dev/null 2>&1 || ! nvidia-smi -L 2>/dev/null | grep -q '^GPU '; then
  echo "skipped: no CUDA device"
  exit 77
fi
exec "$@"
