#!/usr/bin/env bash
# `stallscope doctor --quick` against the seed's manual first look (5.1:
# free -h, ps rss, iostat -x over an interval, ip -s link, ibstatus when
# present), both under hyperfine; prints both means and the ratio. The goal:
# --quick finishes in under 3 s. Then one full `doctor --data DIR` (census
# and the 256 MiB / 2 s storage bench) timed once; goal: under 30 s.
#
#   bench/doctor_quick.sh BUILD_DIR [DATA_DIR]
set -euo pipefail
build=${1:?build dir}
bin="$build/stallscope"
data=${2:-}
[ -x "$bin" ] || { echo "no $bin" >&2; exit 1; }
command -v hyperfine >/dev/null || { echo "hyperfine is not installed" >&2; exit 1; }
out=$(mktemp -d)
trap 'rm -rf "$out"' EXIT
# iostat's first report is since boot; the second, over 0.25 s... iostat
# only takes whole seconds, so the manual look samples 1 s.
manual="free -h >/dev/null; ps -eo pid,rss,vsz,cmd --sort=-rss >/dev/null; \
iostat -x 1 2 >/dev/null; ip -s link >/dev/null; \
(command -v ibstatus >/dev/null && ibstatus >/dev/null || true)"
hyperfine --warmup 1 --runs 10 --export-json "$out/h.json" \
  -n "stallscope doctor --quick" "$bin doctor --quick >/dev/null" \
  -n "free+ps+iostat -x 1 2+ip -s link" "$manual" >&2
python3 - "$out/h.json" <<'PY'
import json, sys
r = {x["command"]: x for x in json.load(open(sys.argv[1]))["results"]}
s = r["stallscope doctor --quick"]
m = r["free+ps+iostat -x 1 2+ip -s link"]
print("doctor --quick: mean %.3f s (min %.3f, max %.3f), goal < 3 s: %s"
      % (s["mean"], s["min"], s["max"], "met" if s["max"] < 3 else "NOT met"))
print("manual first look: mean %.3f s" % m["mean"])
print("ratio manual / doctor --quick: %.2fx" % (m["mean"] / s["mean"]))
PY
if [ -n "$data" ]; then
  /usr/bin/time -f "doctor --data $data: %e s wall, %M KiB max RSS" "$bin" doctor --data "$data" \
    >/dev/null
fi
