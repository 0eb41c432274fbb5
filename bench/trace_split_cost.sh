#!/usr/bin/env bash
# What matching the collectives across ranks and splitting their time into
# waiting and transfer adds to `stallscope trace`: the same inputs through
# a binary without the split (BEFORE, e.g. built from the commit before it)
# and one with it (AFTER), in one run, interleaved by hyperfine: every
# folder of HTA's test traces, one process a folder, as one command; and a
# set of 64 ranks bench/gen_trace.py --ranks writes (2 of them late, clocks
# offset), with --json and as text (the JSON carries each collective's
# times on every rank: the output itself grows). Prints each mean, the ratio
# AFTER / BEFORE (goal: under 1.10) and AFTER's peak RSS on the 64 ranks.
# Usage: bench/trace_split_cost.sh BEFORE_BINARY AFTER_BINARY [TRACES_DIR] [MB_A_RANK]
set -euo pipefail
command -v hyperfine >/dev/null || { echo "$0 needs hyperfine (apt-get install hyperfine)" >&2; exit 2; }
before=$(readlink -f "$1")
after=$(readlink -f "$2")
here=$(cd "$(dirname "$0")" && pwd)
traces=${3:-$(cd "$here/../.." && pwd)/shared/traces/hta}
mb=${4:-1}
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
echo "load average before: $(cut -d' ' -f1-3 /proc/loadavg), $(nproc) CPUs"
/usr/bin/python3 "$here/gen_trace.py" "$work/ranks64" --ranks 64 --bytes "${mb}e6" \
  --kernels-per-step 200 --late 5:3:1:4000:kernel --late 40:5:0:3000:cpu \
  --offset 7:2500 --offset 33:-1200 >/dev/null
# A command that runs one binary over every folder of traces, one process each.
folders="$work/folders.sh"
{
  echo 'set -e'
  find "$traces" -type f \( -name '*.json' -o -name '*.gz' \) -printf '%h\n' | sort -u |
    while read -r dir; do echo "\"\$1\" trace \"$dir\" --json >/dev/null"; done
} >"$folders"
report() {
  /usr/bin/python3 - "$1" "$2" <<'PY'
import json, sys
r = json.load(open(sys.argv[1]))["results"]
b, a = r[0]["mean"], r[1]["mean"]
print("%-28s before %7.3f s  after %7.3f s  after/before %.3f" % (sys.argv[2], b, a, a / b))
PY
}
if [ -d "$traces" ]; then
  hyperfine --style none --warmup 1 --runs 10 --export-json "$work/hta.json" \
    "bash $folders $before" "bash $folders $after" >/dev/null
  report "$work/hta.json" "HTA's test traces ($(wc -l <"$folders") - 1 folders)"
else
  echo "HTA's test traces: skipped: no traces under $traces"
fi
hyperfine --style none --warmup 1 --runs 5 --export-json "$work/64.json" \
  "$before trace $work/ranks64 --json" "$after trace $work/ranks64 --json" >/dev/null
report "$work/64.json" "64 generated ranks (${mb} MB each), --json"
hyperfine --style none --warmup 1 --runs 5 --export-json "$work/64t.json" \
  "$before trace $work/ranks64" "$after trace $work/ranks64" >/dev/null
report "$work/64t.json" "64 generated ranks, text"
rss=$( { /usr/bin/time -f '%M' "$after" trace "$work/ranks64" --json >/dev/null; } 2>&1 | tail -1)
echo "after's peak RSS on the 64 ranks: $((rss / 1024)) MiB"
