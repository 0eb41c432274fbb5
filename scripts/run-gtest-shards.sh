#!/usr/bin/env bash
# Runs a GoogleTest binary as JOBS shards at once (GTEST_TOTAL_SHARDS /
# GTEST_SHARD_INDEX), each one process, in the binary's directory as ctest
# would. Under ASan a process costs about half a second to start, so one
# process per shard instead of one per test (as ctest runs them) saves
# minutes. Prints each shard's summary; on a failure, that shard's whole
# output. Exits 1 when any shard fails.
#   scripts/run-gtest-shards.sh BINARY [JOBS]
set -euo pipefail
bin=$(realpath "${1:?usage: $0 BINARY [JOBS]}")
jobs=${2:-2}
dir=$(dirname "$bin")
logs=$(mktemp -d)
trap 'rm -rf "$logs"' EXIT
pids=()
for ((i = 0; i < jobs; i++)); do
  (cd "$dir" && GTEST_TOTAL_SHARDS=$jobs GTEST_SHARD_INDEX=$i "$bin" --gtest_brief=1 \
     >"$logs/$i.log" 2>&1) &
  pids+=($!)
done
failed=0
for ((i = 0; i < jobs; i++)); do
  if wait "${pids[$i]}"; then
    echo "shard $((i + 1))/$jobs: $(grep -E '^\[==========\]' "$logs/$i.log" | tail -1)"
  else
    echo "shard $((i + 1))/$jobs FAILED:"
    cat "$logs/$i.log"
    failed=1
  fi
done
exit $failed
