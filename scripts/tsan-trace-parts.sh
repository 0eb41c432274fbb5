#!/usr/bin/env bash
# Builds tests/tsan/trace_parts_race.cc with the trace reader's sources under
# ThreadSanitizer (g++ -fsanitize=thread) and runs it: exit 0 when every read
# in parts equals one thread's and ThreadSanitizer reports no race.
# Usage: scripts/tsan-trace-parts.sh [OUT_DIR]   (default: build-tsan)
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
out=${1:-$root/build-tsan}
mkdir -p "$out"
src=$root/src
g++ -std=c++20 -O1 -g -fsanitize=thread -I"$src" "$root/tests/tsan/trace_parts_race.cc" \
  "$src/formats/trace/file.cc" "$src/formats/trace/parts.cc" "$src/formats/trace/text.cc" \
  "$src/probe/meminfo.cc" "$src/core/status.cc" "$src/core/text.cc" "$src/core/file.cc" \
  "$src/core/read_log.cc" "$src/sample/trace.cc" -o "$out/trace_parts_race" -ldeflate -lz -lfmt
TSAN_OPTIONS="halt_on_error=1 exitcode=66" "$out/trace_parts_race"
