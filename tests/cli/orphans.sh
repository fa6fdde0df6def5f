#!/usr/bin/env bash
# Kills (SIGKILL) a self-relaunching `shardplan execute` once its mpirun and ranks run, and checks
# that they end with it within 10 s and never write --out (orphans finished the job before).
# usage: orphans.sh OUT -- SHARDPLAN execute ARGS...
set -u
out=$1
shift 2
rm -f -- "$out"
"$@" --out "$out" >/dev/null 2>&1 &
parent=$!
children() { pgrep -P "$1" | tr '\n' ' '; }
mpirun="" ranks=""
for _ in $(seq 100); do
  mpirun=$(children "$parent")
  [[ -n $mpirun ]] && ranks=$(children "${mpirun%% *}")
  [[ -n $ranks ]] && break
  sleep 0.2
done
[[ -n $ranks ]] || { echo "no ranks started under $parent"; kill -9 "$parent"; exit 1; }
sleep 1
kill -9 "$parent"
wait "$parent" 2>/dev/null
for _ in $(seq 50); do
  alive=""
  for p in $mpirun $ranks; do kill -0 "$p" 2>/dev/null && alive+="$p "; done
  [[ -z $alive ]] && break
  sleep 0.2
done
if [[ -n $alive ]]; then
  echo "still running 10 s after the parent was killed: $alive"
  kill -9 $alive 2>/dev/null
  exit 1
fi
[[ -e $out ]] && { echo "$out was written"; exit 1; }
echo "mpirun and ranks ($mpirun$ranks) ended with the parent; $out not written"
