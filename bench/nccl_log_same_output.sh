#!/usr/bin/env bash
# Does a faster nccl-log still say the same? Runs two stallscope binaries
# (BEFORE, AFTER) on every NCCL log fixture (tests/fixtures/nccl_logs, all
# folders), on generated logs (plain and with a launcher prefix on every
# line, about 20 MB each, gen_nccl_log.py) and on variants of them that take
# the parser's other paths (CRLF line ends, colour codes, a terminal's wrap,
# a console's " | " repeat, NUL bytes, stray non-UTF-8 bytes, no newline at
# the end, stdin instead of a file), and compares exit status, stdout and
# stderr byte for byte (the report's time of day aside), for --json and
# for the text report.
# Usage: bench/nccl_log_same_output.sh BEFORE AFTER [WORK_DIR]
# WORK_DIR (default: a fresh temporary folder, removed at the end) holds the
# generated logs. Exit status 0 when every case is identical, 1 otherwise.
set -euo pipefail
before=$(realpath "$1")
after=$(realpath "$2")
here=$(cd "$(dirname "$0")" && pwd)
root=$(dirname "$here")
if [ $# -ge 3 ]; then
  work=$3
  mkdir -p "$work"
else
  work=$(mktemp -d)
  trap 'rm -rf "$work"' EXIT
fi

gen() {  # NAME BYTES [--prefixed]
  [ -s "$work/$1" ] || /usr/bin/python3 "$here/gen_nccl_log.py" "$work/$1" "$2" 8 ${3:-} >/dev/null
}
gen plain-20M.log 20000000
gen prefixed-20M.log 20000000 --prefixed
gen plain-2M.log 2000000
gen prefixed-2M.log 2000000 --prefixed
# Variants (from the 2 MB logs: each is read whole).
/usr/bin/python3 - "$work" <<'PY'
import os, sys
work = sys.argv[1]
plain = open(os.path.join(work, "plain-2M.log"), "rb").read()
prefixed = open(os.path.join(work, "prefixed-2M.log"), "rb").read()
def write(name, data):
    with open(os.path.join(work, name), "wb") as f:
        f.write(data)
write("crlf.log", prefixed.replace(b"\n", b"\r\n"))
write("colour.log", b"".join(
    (b"\x1b[32m" + l + b"\x1b[0m\n") if i % 3 == 0 else l + b"\n"
    for i, l in enumerate(plain.split(b"\n")[:-1])))
write("console.log", b"".join(
    (l + b" | " + l + b"\n") if i % 5 == 0 else l + b"\n"
    for i, l in enumerate(prefixed.split(b"\n")[:-1])))
# A terminal 120 columns wide.
wrapped = []
for l in plain.split(b"\n")[:-1]:
    while len(l) > 120:
        wrapped.append(l[:120])
        l = l[120:]
    wrapped.append(l)
write("wrapped.log", b"\n".join(wrapped) + b"\n")
write("progress.log", plain.replace(b"Connected all rings", b"step 1\rstep 2\rConnected all rings"))
write("stray-bytes.log", plain.replace(b"node003", b"node\xff\xfe3").replace(b"Using", b"Us\xc3ing"))
write("nul-early.log", plain[:5000] + b"\x00" + plain[5000:])
write("nul-late.log", plain[:70000] + b"\x00\x00" + plain[70000:])
# Runs of plain and prefixed lines in turn (the reader switches its fast path).
pl, pr = plain.split(b"\n")[:-1], prefixed.split(b"\n")[:-1]
write("mixed.log", b"".join(b"\n".join((pl if (i // 700) % 2 else pr)[i:i + 700]) + b"\n"
                            for i in range(0, min(len(pl), len(pr)), 700)))
write("no-newline.log", plain.rstrip(b"\n"))
write("long-lines.log", plain[:100000] + b"x" * 200000 + b" NCCL INFO " + b"y" * 70000 + b"\n" + plain[100000:])
PY

failed=0
cases=0
compare() {  # LABEL ARGS... (a "<FILE" argument is read as stdin)
  local label=$1
  shift
  local stdin=/dev/null args=()
  for a in "$@"; do
    if [[ $a == "<"* ]]; then stdin=${a#<}; else args+=("$a"); fi
  done
  local b_rc=0 a_rc=0
  "$before" "${args[@]}" <"$stdin" >"$work/b.out" 2>"$work/b.err" || b_rc=$?
  "$after" "${args[@]}" <"$stdin" >"$work/a.out" 2>"$work/a.err" || a_rc=$?
  cases=$((cases + 1))
  # The report's own time is the clock's, not the log's.
  sed -i -E 's/"time": "[0-9T:Z-]+"/"time": "T"/' "$work/b.out" "$work/a.out"
  if [ "$b_rc" != "$a_rc" ] || ! cmp -s "$work/b.out" "$work/a.out" || ! cmp -s "$work/b.err" "$work/a.err"; then
    echo "DIFFERS: $label (exit $b_rc -> $a_rc)"
    diff <(head -c 200000 "$work/b.out") <(head -c 200000 "$work/a.out") | head -20 || true
    diff "$work/b.err" "$work/a.err" | head -10 || true
    failed=1
  fi
}

while IFS= read -r -d '' log; do
  compare "${log#"$root"/} --json" nccl-log "$log" --json
  compare "${log#"$root"/} text" nccl-log "$log"
done < <(find "$root/tests/fixtures/nccl_logs" -name '*.log' -print0 | sort -z)
for log in "$work"/*.log; do
  compare "$(basename "$log") --json" nccl-log "$log" --json
  compare "$(basename "$log") text" nccl-log "$log"
done
compare "prefixed-2M.log from stdin" nccl-log - --json "<$work/prefixed-2M.log"
echo "$cases cases compared"
exit $failed
