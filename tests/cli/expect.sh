#!/usr/bin/env bash
# Runs a command and checks its exit code and its combined output (stdout and stderr) against an
# expect file, line by line, from the first line to the last.
# usage: expect.sh EXIT_CODE EXPECT_FILE -- COMMAND...
#
# The expect file's lines, in order:
#   text       an output line equal to it, character for character (deterministic output)
#   ~ REGEX    an output line that the extended regular expression matches as a whole: only for
#              what changes from run to run or machine to machine (times, rates, measured bytes,
#              build paths); keep the rest of the line literal in the regex
#   ...        any number of output lines, none included, up to the first one the next expect
#              line accepts (or to the end): for tables of measurements
# Every output line must be accepted by one of them. An output line that itself starts with "~ "
# or is "..." is written as a regex. Empty expect lines stand for empty output lines.
set -u
want_exit=$1 expected=$2
shift 3
out=$("$@" 2>&1)
got_exit=$?
status=0
if [[ $got_exit -ne $want_exit ]]; then
  echo "exit code: expected $want_exit, got $got_exit"
  status=1
fi

# accepts EXPECT_LINE OUTPUT_LINE: whether one expect line (not "...") accepts one output line.
accepts() {
  if [[ $1 == "~ "* ]]; then
    grep -Eq -- "^(${1#"~ "})\$" <<<"$2"
  else
    [[ $1 == "$2" ]]
  fi
}

mapfile -t want <"$expected"
mapfile -t got <<<"$out"
[[ -z $out ]] && got=()
w=0 g=0
while ((status == 0 && w < ${#want[@]})); do
  if [[ ${want[w]} == "..." ]]; then
    ((w++))
    if ((w == ${#want[@]})); then
      g=${#got[@]}
      break
    fi
    while ((g < ${#got[@]})) && ! accepts "${want[w]}" "${got[g]}"; do ((g++)); done
    continue
  fi
  if ((g >= ${#got[@]})); then
    echo "output ends before expect line $((w + 1)): ${want[w]}"
    status=1
  elif ! accepts "${want[w]}" "${got[g]}"; then
    echo "output line $((g + 1)) differs from expect line $((w + 1))"
    echo "  expected: ${want[w]}"
    echo "  got:      ${got[g]}"
    status=1
  else
    ((w++, g++))
  fi
done
if ((status == 0 && g < ${#got[@]})); then
  echo "output line $((g + 1)) is beyond the expect file's end: ${got[g]}"
  status=1
fi
if [[ $status -ne 0 ]]; then
  echo "--- command: $*"
  echo "--- output:"
  echo "$out"
fi
exit $status
