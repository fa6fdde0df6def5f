#!/usr/bin/env bash
# Checks that a JSON file written by shardplan (indented or compact) has every given key.
# usage: check_json_keys.sh FILE KEY...
set -u
file=$1
shift
status=0
for key in "$@"; do
  if ! grep -Eq -- "\"$key\": ?" "$file"; then
    echo "$file lacks the key $key"
    status=1
  fi
done
exit $status
