#!/usr/bin/env bash
# Builds the libFuzzer targets (CMakePresets.json's "fuzz": clang, ASan, UBSan, asserts) and runs
# each loader's target in turn, one process at a time, for a time or a count of inputs; prints
# each target's executions and executions per second and the total. Exits non-zero when any target
# reports a crash (an exception other than InputError, an assertion, a sanitizer report), a leak, a
# timeout (one input over TIMEOUT_S) or an input over the memory limit. tests/fuzz/README.md says
# what each target reads and what the long runs found.
#
# usage: tools/fuzz.sh [-t SECONDS_PER_TARGET | -r INPUTS_PER_TARGET] [LOADER...]
#   default: -t 15 and every loader. Seeds: tests/fuzz/corpus/LOADER (read only); what the fuzzer
#   adds goes to build-fuzz/fuzz/LOADER/corpus, a failing input to build-fuzz/fuzz/LOADER/, the
#   log to build-fuzz/fuzz/LOADER/log.
set -euo pipefail
cd "$(dirname "$0")/.."

loaders=()
for source in tests/fuzz/fuzz_*.cpp; do
  name=${source##*/fuzz_}
  loaders+=("${name%.cpp}")
done
budget=(-max_total_time=15)
while getopts "t:r:" opt; do
  case $opt in
    t) budget=(-max_total_time="$OPTARG") ;;
    r) budget=(-runs="$OPTARG") ;;
    *) echo "usage: $0 [-t SECONDS_PER_TARGET | -r INPUTS_PER_TARGET] [LOADER...]" >&2; exit 64 ;;
  esac
done
shift $((OPTIND - 1))
(($#)) && loaders=("$@")

# A single input slower than this is a hang: the slowest seed (a measurement's eight programs
# rebuilt) takes under 0.1 s under the sanitizers.
timeout_s=10
cmake --preset fuzz >/dev/null
cmake --build build-fuzz -j "$(nproc)" --target fuzz_targets >/dev/null

# Leaks are on by default (ASan on Linux); UBSan reports stop the run (-fno-sanitize-recover too).
export ASAN_OPTIONS=${ASAN_OPTIONS:-detect_leaks=1}
export UBSAN_OPTIONS=${UBSAN_OPTIONS:-halt_on_error=1:print_stacktrace=1}

failed=()
total_runs=0
printf '%-18s %12s %10s  %s\n' loader executions exec/s result
for loader in "${loaders[@]}"; do
  out=build-fuzz/fuzz/$loader
  mkdir -p "$out/corpus"
  status=ok
  build-fuzz/tests/fuzz/fuzz_"$loader" "${budget[@]}" -timeout="$timeout_s" -rss_limit_mb=2048 \
    -print_final_stats=1 -artifact_prefix="$out/" "$out/corpus" "tests/fuzz/corpus/$loader" \
    >"$out/log" 2>&1 || status=FAILED
  runs=$(sed -n 's/^stat::number_of_executed_units: *//p' "$out/log" | tail -1)
  rate=$(sed -n 's/^stat::average_exec_per_sec: *//p' "$out/log" | tail -1)
  total_runs=$((total_runs + ${runs:-0}))
  printf '%-18s %12s %10s  %s\n' "$loader" "${runs:-?}" "${rate:-?}" "$status"
  if [[ $status != ok ]]; then
    failed+=("$loader")
    grep -E "^==[0-9]+==ERROR|runtime error|SUMMARY|Test unit written|ALARM|uncaught" "$out/log" |
      head -20 | sed 's/^/    /'
  fi
done
printf '%-18s %12s\n' total "$total_runs"
if ((${#failed[@]})); then
  echo "fuzz: ${failed[*]} failed; logs and inputs in build-fuzz/fuzz/" >&2
  exit 1
fi
