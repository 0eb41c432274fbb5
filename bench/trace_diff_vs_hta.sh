#!/usr/bin/env bash
# `stallscope trace --diff CONTROL TEST --json` against HTA's own
# `TraceDiff.compare_traces` + `ops_diff` on the same pair, in one run: each
# timed by /usr/bin/time (wall seconds, peak RSS), the best of 3, and the
# ratio. HTA comes from a checkout of its source (nothing of HTA is in this
# repository) and needs Debian's python3-pandas, python3-plotly,
# python3-networkx and python3-psutil.
# Usage: bench/trace_diff_vs_hta.sh BUILD_DIR HTA_SRC [CONTROL TEST]
# (default: HTA's trace_diff pair, ../shared/traces/hta/trace_diff/{control,test})
set -euo pipefail
build=${1:?BUILD_DIR}
hta=${2:?HTA_SRC}
here=$(cd "$(dirname "$0")" && pwd)
pair=$(cd "$here/../.." && pwd)/shared/traces/hta/trace_diff
control=${3:-$pair/control}
test=${4:-$pair/test}
bin=$(cd "$build" && pwd)/stallscope
for side in "$control" "$test"; do
  [ -e "$side" ] || { echo "trace_diff_vs_hta: skipped: no trace at $side"; exit 0; }
done
echo "load average before: $(cut -d' ' -f1-3 /proc/loadavg), $(nproc) CPUs"
best() {  # best wall seconds and its peak RSS (MiB) of 3 runs of "$@"
  local out s r bs="" br="" t
  t=$(mktemp)
  for _ in 1 2 3; do
    /usr/bin/time -o "$t" -f "%e %M" "$@" >/dev/null 2>&1
    out=$(tail -1 "$t")
    s=${out% *}; r=${out#* }
    if [ -z "$bs" ] || awk "BEGIN{exit !($s < $bs)}"; then bs=$s; br=$r; fi
  done
  rm -f "$t"
  echo "$bs $((br / 1024))"
}
read -r ss sr < <(best "$bin" trace --diff "$control" "$test" --json)
read -r hs hr < <(best /usr/bin/python3 -c "
import sys; sys.path.insert(0, sys.argv[1])
from hta.trace_diff import TraceDiff, LabeledTrace
c = LabeledTrace('control', trace_dir=sys.argv[2]); t = LabeledTrace('test', trace_dir=sys.argv[3])
TraceDiff.compare_traces(c, t); TraceDiff.ops_diff(c, t)" "$hta" "$control" "$test")
printf '%-12s %8s %9s\n' tool wall_s RSS_MiB
printf '%-12s %8s %9s\n' stallscope "$ss" "$sr" HTA "$hs" "$hr"
awk -v s="$ss" -v h="$hs" 'BEGIN{printf "HTA / stallscope: %.1fx\n", h / s}'
