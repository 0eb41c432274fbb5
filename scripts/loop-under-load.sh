#!/usr/bin/env bash
# Runs one e2e test N times while busy loops keep every CPU loaded, and
# prints how many runs failed: the check that a test does not depend on this
# machine's load or speed (issue: tests that pass on a fresh Debian 12 every
# time). Logs of failed runs are kept under OUT.
#
#   scripts/loop-under-load.sh BUILD N FILE.py TEST [OUT]
#   scripts/loop-under-load.sh build 20 run_job.py TrainingJob.test_leak
set -u
build=$(cd "${1:?build dir}" && pwd)
n=${2:?count}
file=${3:?e2e file}
test=${4:?test name}
out=${5:-/tmp/loop-under-load}
root=$(cd "$(dirname "$0")/.." && pwd)
mkdir -p "$out"
burners=()
for _ in $(seq "$(nproc)"); do
  /usr/bin/python3 -c 'while True: pass' &
  burners+=($!)
done
trap 'kill "${burners[@]}" 2>/dev/null' EXIT
failed=0
start=$(date +%s)
for i in $(seq "$n"); do
  log="$out/$(basename "$file" .py).$test.$i.log"
  if (cd "$root/tests/e2e" && /usr/bin/python3 "$file" "$build/stallscope" "$test") >"$log" 2>&1; then
    rm -f "$log"
  else
    failed=$((failed + 1))
    echo "run $i failed: $log" >&2
  fi
done
echo "$file $test: $failed of $n runs failed under $(nproc) busy loops ($(( $(date +%s) - start )) s)"
[ "$failed" = 0 ]
