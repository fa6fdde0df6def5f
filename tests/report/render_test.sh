#!/usr/bin/env bash
# Runs a command that writes an HTML report, then opens the page in headless Chromium with every
# host name unresolvable: fails when the page recorded a script error or a fetch its
# Content-Security-Policy blocked (report/report.js writes its state on <body>: data-status,
# data-charts, data-empty-charts), when it drew no chart or an empty one, or when its
# screenshot (left at PNG for a person to look at) is too small to hold the charts.
# usage: render_test.sh HTML PNG -- COMMAND...
set -u
html=$1 png=$2
shift 3
browser=$(command -v chromium || command -v chromium-browser || true)
if [[ -z $browser ]]; then
  echo "FAIL: chromium is not installed: the report's pages are checked in it (tools/setup.sh" \
       "installs Debian's chromium package: apt-get install chromium)"
  exit 1
fi
rm -f -- "$html" "$png"
"$@" || { echo "FAIL: the command exited with $?"; exit 1; }
[[ -s $html ]] || { echo "FAIL: $html was not written"; exit 1; }
size=$(wc -c <"$html")

# One browser per run, in its own profile; the virtual time budget lets the page's load handler
# draw every chart before the DOM is read.
flags=(--headless --no-sandbox --disable-gpu --no-first-run --host-resolver-rules="MAP * ~NOTFOUND"
       --user-data-dir="$(mktemp -d)" --window-size=1400,3000 --virtual-time-budget=8000)
start_ns=$(date +%s%N)
dom=$(timeout 120 "$browser" "${flags[@]}" --dump-dom "file://$(realpath "$html")" 2>/dev/null)
render_ms=$((($(date +%s%N) - start_ns) / 1000000))
timeout 120 "$browser" "${flags[@]}" --screenshot="$png" "file://$(realpath "$html")" >/dev/null 2>&1

body=$(grep -o -m1 '<body data-status="[^"]*"[^>]*>' <<<"$dom")
echo "$html: $size bytes, rendered in ${render_ms} ms: $body"
status=0
if [[ $body != *'data-status="ok"'* ]]; then
  echo "FAIL: the page did not finish drawing cleanly (data-status above)"
  status=1
fi
charts=$(grep -o 'data-charts="[0-9]*"' <<<"$body" | grep -o '[0-9]*')
empty=$(grep -o 'data-empty-charts="[0-9]*"' <<<"$body" | grep -o '[0-9]*')
if [[ -z $charts || $charts -eq 0 ]]; then
  echo "FAIL: no chart drawn"
  status=1
fi
if [[ -z $empty || $empty -ne 0 ]]; then
  echo "FAIL: ${empty:-?} of ${charts:-?} charts are empty"
  status=1
fi
# A blank 1400x3000 page compresses to a few kilobytes; charts and text take far more.
png_size=$(wc -c <"$png" 2>/dev/null || echo 0)
if ((png_size < 40000)); then
  echo "FAIL: the screenshot $png is ${png_size} bytes: blank or missing"
  status=1
fi
((status == 0)) && echo "ok: $charts charts, screenshot $png ($png_size bytes)"
exit $status
