#!/usr/bin/env bash
# Runs a command that should write the JSON file FILE, passes its output and exit code through,
# then says whether FILE was written: its size, how many complete ("ph": "X") trace events it
# holds, its keys down to the second level when indented (the lines indented by 2 or 4 spaces),
# and every key name it holds, sorted (for compact files such as traces).
# usage: file_written.sh FILE -- COMMAND...
set -u
file=$1
shift 2
rm -f -- "$file"
"$@"
status=$?
if [[ -f $file ]]; then
  echo "wrote $file: $(wc -c <"$file") bytes, $(grep -Eo '"ph": *"X"' "$file" | wc -l) complete events"
  grep -E '^ {2}( {2})?"[^"]+":' "$file"
  echo "keys: $(grep -Eo '"[A-Za-z_]+": ?' "$file" | tr -d ' ' | sort -u | tr '\n' ' ')"
else
  echo "did not write $file"
fi
exit $status
