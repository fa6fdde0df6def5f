#!/usr/bin/env bash
# Runs a command and checks its exit code and that its combined output matches every pattern.
# usage: expect.sh EXIT_CODE PATTERN_FILE -- COMMAND...
# PATTERN_FILE holds one extended regex per line, each of which must match some output line.
set -u
want_exit=$1 patterns=$2
shift 3
out=$("$@" 2>&1)
got_exit=$?
status=0
if [[ $got_exit -ne $want_exit ]]; then
  echo "exit code: expected $want_exit, got $got_exit"
  status=1
fi
while IFS= read -r pattern; do
  [[ -z $pattern ]] && continue
  if ! grep -Eq -- "$pattern" <<<"$out"; then
    echo "output lacks: $pattern"
    status=1
  fi
done <"$patterns"
if [[ $status -ne 0 ]]; then
  echo "--- command: $*"
  echo "--- output:"
  echo "$out"
fi
exit $status
