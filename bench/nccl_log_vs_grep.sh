#!/usr/bin/env bash
# stallscope nccl-log against `grep -c NCCL` on the same generated log, in one
# run: throughput of both (hyperfine, warm page cache) and the ratio, then the
# peak RSS of stallscope (/usr/bin/time -v) on a 100 MB and a 1 GB log, which
# must be the same (the parser's memory does not grow with the file). Both
# on a plain log and on one whose every line has a launcher's prefix and a
# timestamp ("2024-03-04 05:06:07.123456 [1,R]<stdout>:", gen_nccl_log.py
# --prefixed), as logs copied out of real jobs have.
# Usage: bench/nccl_log_vs_grep.sh BUILD_DIR [WORK_DIR] [BIG_BYTES]
# The logs are generated into WORK_DIR (default /work/tmp/nccllog-bench) and
# kept there for reruns; remove the folder when done.
set -euo pipefail
for tool in hyperfine /usr/bin/time; do
  command -v "$tool" >/dev/null || { echo "$0 needs $tool (apt-get install hyperfine time)" >&2; exit 2; }
done
build=${1:-build}
work=${2:-/work/tmp/nccllog-bench}
big_bytes=${3:-1000000000}
bin=$(cd "$build" && pwd)/stallscope
here=$(cd "$(dirname "$0")" && pwd)
mkdir -p "$work"
compare() {  # LABEL SMALL BIG GOAL
  local label=$1 small=$2 big=$3 goal=$4
  local bytes
  bytes=$(stat -c %s "$big")
  echo "== $label log: $big ($bytes bytes, $(wc -l <"$big") lines, $(grep -c NCCL "$big") with NCCL)"
  cat "$big" >/dev/null  # warm the page cache for both tools
  # Other work on the machine slows both tools, not always alike: say how busy it was.
  echo "load average before: $(cut -d' ' -f1-3 /proc/loadavg), $(nproc) CPUs"
  # --output=pipe: GNU grep stops at the first match when its stdout is /dev/null.
  hyperfine --output=pipe --warmup 1 --runs 5 --export-json "$work/hyperfine-$label.json" \
    "grep -c NCCL $big" "$bin nccl-log $big --json"
  /usr/bin/python3 - "$work/hyperfine-$label.json" "$bytes" "$goal" <<'PY'
import json, sys
results = json.load(open(sys.argv[1]))["results"]
size = int(sys.argv[2])
grep, ours = results[0]["mean"], results[1]["mean"]
print("grep -c NCCL:        %.3f s  %7.0f MB/s" % (grep, size / grep / 1e6))
print("stallscope nccl-log: %.3f s  %7.0f MB/s" % (ours, size / ours / 1e6))
print("ratio (stallscope throughput / grep throughput): %.2f  (goal >= %s)" % (grep / ours, sys.argv[3]))
# Wall time swings with the machine's load; the CPU each spent is steadier.
cpu = [r["user"] + r["system"] for r in results]
print("CPU (user+sys): grep %.3f s, stallscope %.3f s, ratio %.2f" % (cpu[0], cpu[1], cpu[0] / cpu[1]))
PY
  echo "load average after: $(cut -d' ' -f1-3 /proc/loadavg)"
  for f in "$small" "$big"; do
    rss=$(/usr/bin/time -v "$bin" nccl-log "$f" --json 2>&1 >/dev/null |
          awk -F': ' '/Maximum resident set size/ {print $2}')
    echo "peak RSS on $(basename "$f") ($(stat -c %s "$f") bytes): ${rss} KiB"
  done
}

small="$work/nccl-100M.log"
big="$work/nccl-1G.log"
[ -s "$small" ] || /usr/bin/python3 "$here/gen_nccl_log.py" "$small" 100000000
[ -s "$big" ] || /usr/bin/python3 "$here/gen_nccl_log.py" "$big" "$big_bytes"
psmall="$work/nccl-prefixed-100M.log"
pbig="$work/nccl-prefixed-1G.log"
[ -s "$psmall" ] || /usr/bin/python3 "$here/gen_nccl_log.py" "$psmall" 100000000 8 --prefixed
[ -s "$pbig" ] || /usr/bin/python3 "$here/gen_nccl_log.py" "$pbig" "$big_bytes" 8 --prefixed
compare plain "$small" "$big" 0.5
compare prefixed "$psmall" "$pbig" 0.75
