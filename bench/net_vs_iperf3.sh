#!/usr/bin/env bash
# TCP throughput of `stallscope net probe` against iperf3 between two network
# namespaces joined by a veth pair (made here, removed on exit), in one run:
# single stream and N parallel streams, each tool for the same duration,
# both printed with the ratio stallscope / iperf3. Needs root and iperf3.
#
# usage: bench/net_vs_iperf3.sh PATH_TO_STALLSCOPE [SECONDS] [STREAMS] [MTU]
set -euo pipefail
bin=$(readlink -f "${1:?usage: $0 PATH_TO_STALLSCOPE [SECONDS] [STREAMS] [MTU]}")
seconds=${2:-5}
streams=${3:-4}
mtu=${4:-1500}
command -v iperf3 >/dev/null || { echo "iperf3 is not installed (apt-get install iperf3)" >&2; exit 1; }
[ "$(id -u)" = 0 ] || { echo "needs root for network namespaces" >&2; exit 1; }

tag=$(head -c3 /dev/urandom | od -An -tx1 | tr -d ' \n')
a=ssbench-$tag-a b=ssbench-$tag-b
pids=()
cleanup() {
  for p in "${pids[@]}"; do kill "$p" 2>/dev/null || true; wait "$p" 2>/dev/null || true; done
  ip netns del "$a" 2>/dev/null || true
  ip netns del "$b" 2>/dev/null || true
}
trap cleanup EXIT
ip netns add "$a"; ip netns add "$b"
ip link add "sba$tag" type veth peer name "sbb$tag"
ip link set "sba$tag" netns "$a"; ip link set "sbb$tag" netns "$b"
ip -n "$a" addr add 10.99.0.1/24 dev "sba$tag"; ip -n "$b" addr add 10.99.0.2/24 dev "sbb$tag"
for ns in "$a" "$b"; do ip -n "$ns" link set lo up; done
ip -n "$a" link set "sba$tag" mtu "$mtu" up; ip -n "$b" link set "sbb$tag" mtu "$mtu" up

ip netns exec "$b" iperf3 -s -B 10.99.0.2 -p 5201 >/dev/null 2>&1 & pids+=($!)
ip netns exec "$b" "$bin" net serve --bind 10.99.0.2 --port 9309 >/dev/null 2>&1 & pids+=($!)
sleep 0.5

iperf() {  # streams -> bits/s as the receiver counted them
  ip netns exec "$a" iperf3 -c 10.99.0.2 -p 5201 -t "$seconds" -P "$1" -J |
    python3 -c 'import json,sys; print(json.load(sys.stdin)["end"]["sum_received"]["bits_per_second"])'
}
json=$(ip netns exec "$a" "$bin" net probe 10.99.0.2 --port 9309 --json \
         --duration "$seconds" --streams "$streams" --pings 1000)
ours() { python3 -c 'import json,sys; print(json.loads(sys.argv[1])["probe"]["throughput"][sys.argv[2]]["bits_per_second"])' "$json" "$1"; }
i1=$(iperf 1); iN=$(iperf "$streams")
s1=$(ours single); sN=$(ours parallel)
echo "veth pair between two namespaces, MTU $mtu, $seconds s per test, $(nproc) CPUs"
printf '%-22s %14s %14s %8s\n' test "iperf3 Gbit/s" "stallscope" ratio
python3 - "$i1" "$s1" "$iN" "$sN" "$streams" <<'PY'
import sys
i1, s1, iN, sN = map(float, sys.argv[1:5]); n = sys.argv[5]
for name, i, s in (("1 stream", i1, s1), (n + " streams", iN, sN)):
    print("%-22s %14.2f %14.2f %8.2f" % (name, i / 1e9, s / 1e9, s / i))
PY
python3 -c 'import json,sys; l=json.loads(sys.argv[1])["probe"]["latency_us"]; print("stallscope latency: p50 %.1f us, p99 %.1f us over %d round trips" % (l["p50"], l["p99"], l["samples"]))' "$json"
