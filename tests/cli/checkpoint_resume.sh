#!/usr/bin/env bash
# Checks that `execute --resume` continues a run with the losses the uninterrupted run has.
# usage: checkpoint_resume.sh DIR SAVE_LAYOUT RESUME_LAYOUT -- SHARDPLAN EXECUTE_ARGS...
# Runs 4 steps under SAVE_LAYOUT; 2 steps with a checkpoint at step 2; leaves a half-written later
# checkpoint (a crash mid-save); resumes for 2 steps under RESUME_LAYOUT. Steps 1-4 must match the
# uninterrupted run: exactly (as printed) under the same layout; under another layout within 5e-4,
# the difference of fp32 sums taken in another order.
set -u
dir=$1 save=$2 resume=$3
shift 4
rm -rf "$dir"
losses() { awk '/^ +[0-9]+ +[0-9.]+ +[0-9.]+ +[0-9]+$/ {print $1, $2}'; }
run() {
  local out
  out=$("$@" 2>&1) || { echo "failed: $*"; echo "$out"; exit 1; }
  echo "$out" >&2
  losses <<<"$out"
}
ref=$(run "$@" --layout "$save" --steps 4)
first=$(run "$@" --layout "$save" --steps 2 --checkpoint-dir "$dir" --checkpoint-every 2)
[[ -f $dir/step-2/params.bin && $(cat "$dir/latest") == step-2 ]] || { echo "no checkpoint step-2"; exit 1; }
mkdir -p "$dir/step-4.tmp" && head -c 100 "$dir/step-2/params.bin" >"$dir/step-4.tmp/params.bin"
echo step-4 >"$dir/latest.tmp"
second=$(run "$@" --layout "$resume" --steps 2 --checkpoint-dir "$dir" --resume)
tolerance=0
[[ $save != "$resume" ]] && tolerance=0.0005
echo "uninterrupted:"; echo "$ref"; echo "checkpointed + resumed:"; echo "$first"; echo "$second"
paste -d' ' <(echo "$ref") <(printf '%s\n%s\n' "$first" "$second") | awk -v tol="$tolerance" '
  { n++; d = $2 - $4; if (d < 0) d = -d
    if ($1 != $3 || d > tol) { print "step " $1 ": loss " $2 " vs " $4 " (step " $3 ")"; bad = 1 } }
  END { if (n != 4) { print n " steps compared, expected 4"; bad = 1 }; exit bad }'
