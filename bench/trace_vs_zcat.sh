#!/usr/bin/env bash
# `stallscope trace DIR --json` against the floor of reading the same files:
# `zcat` (gzip's own inflate, `cat` for plain .json) of every trace file in
# the folder, and against Python's `json.load(gzip.open(F))`, in one run:
# hyperfine's mean of each (warm page cache), the ratio to zcat (goal <= 1.2)
# and json.load's ratio to stallscope, per folder, then stallscope's peak RSS
# (/usr/bin/time) on each. One process per folder for every tool.
# Usage: bench/trace_vs_zcat.sh BUILD_DIR [TRACES_DIR]
# TRACES_DIR: folders of traces (default: HTA's test traces, ../shared/traces/hta
# beside the checkout).
set -euo pipefail
for tool in hyperfine /usr/bin/time zcat; do
  command -v "$tool" >/dev/null || { echo "$0 needs $tool (apt-get install hyperfine time gzip)" >&2; exit 2; }
done
build=${1:-build}
here=$(cd "$(dirname "$0")" && pwd)
traces=${2:-$(cd "$here/../.." && pwd)/shared/traces/hta}
bin=$(cd "$build" && pwd)/stallscope
[ -d "$traces" ] || { echo "trace_vs_zcat: skipped: no traces under $traces"; exit 0; }
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
echo "load average before: $(cut -d' ' -f1-3 /proc/loadavg), $(nproc) CPUs"
printf '%-44s %9s %9s %9s %8s %9s %8s\n' folder MB_in zcat_s trace_s "/zcat" json.load "RSS_MiB"
# Every folder that holds trace files, at any depth (HTA's critical_path/*).
find "$traces" -type f \( -name '*.json' -o -name '*.gz' \) -printf '%h\n' | sort -u >"$work/dirs"
while read -r dir; do
  name=${dir#"$traces"/}
  files=$(find "$dir" -maxdepth 1 -type f \( -name '*.json' -o -name '*.gz' \) | sort | tr '\n' ' ')
  [ -n "$files" ] || continue
  # zcat -f passes plain files through: the floor for both kinds.
  hyperfine --style none --warmup 1 --runs 7 --export-json "$work/h.json" \
    "zcat -f $files" \
    "$bin trace $dir --json" \
    "/usr/bin/python3 -c 'import json,gzip,sys
for f in sys.argv[1:]: json.load(gzip.open(f) if f.endswith(\".gz\") else open(f))' $files" \
    >/dev/null 2>&1 || { echo "$name: a command failed (run it by hand)"; continue; }
  rss=$( { /usr/bin/time -f '%M' "$bin" trace "$dir" --json >/dev/null; } 2>&1 | tail -1)
  /usr/bin/python3 - "$work/h.json" "$name" "$rss" $files <<'PY'
import json, os, sys
r = json.load(open(sys.argv[1]))["results"]
zcat, ours, pyjson = (x["mean"] for x in r)
size = sum(os.path.getsize(f) for f in sys.argv[4:])
print("%-44s %9.2f %9.3f %9.3f %7.2fx %8.1fx %8.1f" % (
    sys.argv[2], size / 1e6, zcat, ours, ours / zcat, pyjson / ours, int(sys.argv[3]) / 1024))
PY
done <"$work/dirs"
echo "/zcat: stallscope's time over zcat's (goal <= 1.2); json.load: Python's time over stallscope's"
echo "load average after: $(cut -d' ' -f1-3 /proc/loadavg)"
