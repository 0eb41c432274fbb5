#!/usr/bin/env bash
# The CPU cost of one full sample (host + a 64-process tree), stallscope
# against pidstat -rud + iostat -x taking the same samples at the same
# interval, in one run. Prints both and the ratio; then the sampler again with
# the boundary samples `run` takes at epoch marks, 1 and 19 in each interval
# (19 at a 1 s interval: the most their 50 ms spacing allows). Usage:
#   bench/sample_cost.sh BUILD_DIR [SAMPLES] [INTERVAL_S]
set -euo pipefail
build=${1:-build}
samples=${2:-20}
interval=${3:-1}
exec /usr/bin/python3 "$(dirname "$0")/sample_cost.py" "$build/sample_cost" "$samples" "$interval"
