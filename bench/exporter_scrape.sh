#!/usr/bin/env bash
# Scrape cost of `stallscope exporter` against Prometheus' node_exporter, in
# one run: each exporter is started on a free loopback port, warmed up with a
# few scrapes, then GET /metrics is scraped N times by curl, 0.15 s apart
# (stallscope shares one read of the host among scrapes within 100 ms of
# each other: spaced out, every scrape pays a whole read, as node_exporter's
# does, and as a Prometheus scraping every few seconds meets it); the
# script prints the median and p99 scrape latency (curl's %{time_total}:
# connect to last byte, curl's own start-up not included), the body's size
# and series lines, and each exporter's peak RSS (VmHWM in /proc/PID/status,
# read after the scrapes), then the ratios stallscope / node_exporter.
# node_exporter (Debian: prometheus-node-exporter) is optional: without it
# only stallscope's figures are printed. Both run with their default
# collectors; node_exporter exposes more series, so the ratio is of the cost
# of a scrape as a user meets it, not per series.
#
# usage: bench/exporter_scrape.sh BUILD_DIR   (N=200 WARMUP=5 INTERVAL=5)
set -euo pipefail
build=${1:?usage: $0 BUILD_DIR}
n=${N:-200}
warmup=${WARMUP:-5}
interval=${INTERVAL:-5}
[ -d "$build" ] || { echo "$build: no such build folder" >&2; exit 1; }
bin=$(cd "$build" && pwd)/stallscope
[ -x "$bin" ] || { echo "$bin: not built" >&2; exit 1; }
command -v curl >/dev/null || { echo "curl is not installed" >&2; exit 1; }
node_exporter=$(command -v prometheus-node-exporter || command -v node_exporter || true)

work=$(mktemp -d /tmp/stallscope-exporter-bench.XXXXXX)
pids=()
cleanup() {
  for p in "${pids[@]}"; do kill "$p" 2>/dev/null || true; done
  for p in "${pids[@]}"; do wait "$p" 2>/dev/null || true; done
  rm -rf "$work"
}
trap cleanup EXIT

free_port() {
  python3 -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])'
}

# Waits up to 10 s for PID to answer on URL; fails naming the log if it dies.
wait_ready() {
  local pid=$1 url=$2 log=$3
  for _ in $(seq 100); do
    if ! kill -0 "$pid" 2>/dev/null; then
      echo "exporter exited before serving $url:" >&2
      cat "$log" >&2
      exit 1
    fi
    curl -sf -o /dev/null "$url" && return 0
    sleep 0.1
  done
  echo "no answer from $url in 10 s; log: $log" >&2
  exit 1
}

# measure NAME PID URL: N timed scrapes into $work/NAME.times, then a summary line.
measure() {
  local name=$1 pid=$2 url=$3
  for _ in $(seq "$warmup"); do curl -sf -o /dev/null "$url"; done
  curl -sf -o "$work/$name.body" "$url"
  : >"$work/$name.times"
  for _ in $(seq "$n"); do
    curl -sf -o /dev/null -w '%{time_total}\n' "$url" >>"$work/$name.times"
    sleep 0.15
  done
  local hwm
  hwm=$(awk '/^VmHWM:/ {print $2}' "/proc/$pid/status")
  python3 - "$name" "$work/$name.times" "$work/$name.body" "$hwm" >>"$work/summary" <<'PY'
import math, sys
name, times_path, body_path, hwm_kb = sys.argv[1], sys.argv[2], sys.argv[3], int(sys.argv[4])
t = sorted(float(x) for x in open(times_path) if x.strip())
def pct(p):  # nearest rank
    return t[max(0, math.ceil(p / 100 * len(t)) - 1)]
body = open(body_path, "rb").read()
series = sum(1 for l in body.split(b"\n") if l and not l.startswith(b"#"))
print(name, len(t), pct(50) * 1e3, pct(99) * 1e3, t[-1] * 1e3, len(body), series, hwm_kb * 1024)
PY
}

port=$(free_port)
"$bin" exporter --listen "127.0.0.1:$port" --interval "$interval" \
  --hook-socket "$work/hook.sock" >"$work/stallscope.log" 2>&1 &
pids+=($!)
wait_ready "$!" "http://127.0.0.1:$port/metrics" "$work/stallscope.log"
measure stallscope "${pids[-1]}" "http://127.0.0.1:$port/metrics"

if [ -n "$node_exporter" ]; then
  port2=$(free_port)
  "$node_exporter" --web.listen-address="127.0.0.1:$port2" >"$work/node_exporter.log" 2>&1 &
  pids+=($!)
  wait_ready "$!" "http://127.0.0.1:$port2/metrics" "$work/node_exporter.log"
  measure node_exporter "${pids[-1]}" "http://127.0.0.1:$port2/metrics"
fi

python3 - "$work/summary" "$(nproc)" "$(cut -d' ' -f1-3 /proc/loadavg)" <<'PY'
import sys
rows = {}
for line in open(sys.argv[1]):
    f = line.split()
    rows[f[0]] = dict(n=int(f[1]), median=float(f[2]), p99=float(f[3]), max=float(f[4]),
                      body=int(f[5]), series=int(f[6]), rss=int(f[7]))
print("%d scrapes of GET /metrics each, %s CPUs, load average %s" % (
    rows["stallscope"]["n"], sys.argv[2], sys.argv[3]))
print("  %-14s %9s %9s %9s %10s %8s %9s" % ("", "median ms", "p99 ms", "max ms", "body KB",
                                            "series", "peak RSS"))
for name, r in rows.items():
    print("  %-14s %9.2f %9.2f %9.2f %10.1f %8d %6.1f MB" % (
        name, r["median"], r["p99"], r["max"], r["body"] / 1e3, r["series"], r["rss"] / 1e6))
if "node_exporter" in rows:
    s, n = rows["stallscope"], rows["node_exporter"]
    print("  stallscope / node_exporter: median %.2fx, p99 %.2fx, peak RSS %.2fx, series %.2fx" % (
        s["median"] / n["median"], s["p99"] / n["p99"], s["rss"] / n["rss"],
        s["series"] / n["series"]))
else:
    print("  node_exporter not installed (apt-get install prometheus-node-exporter): no comparison")
PY
