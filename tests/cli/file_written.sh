#!/usr/bin/env bash
# Runs a command that should write the JSON file FILE, passes its output and exit code through,
# then says whether FILE was written: its size, how many complete ("ph": "X") trace events it
# holds, and its keys down to the second level (the lines indented by 2 or 4 spaces).
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
else
  echo "did not write $file"
fi
exit $status
