// ThreadSanitizer's check of the trace read in parts (formats/trace/parts.h):
// a text of 4,000 events, sound and broken (strings that run on into what
// reads as an event start: the first part's in-place parse writes there),
// read in 2 to 12 parts, each compared with one thread's read. Built and run
// by scripts/tsan-trace-parts.sh (not part of `make test`: a build of its
// own); exits 1 on a mismatch, and ThreadSanitizer reports any race.
#include <cstdio>
#include <string>

#include "formats/trace/file.h"

namespace {

std::string Text(bool broken) {
  std::string t = "{\"deviceProperties\": [{\"id\": 0}],\n \"traceEvents\": [";
  for (int i = 0; i < 4000; ++i) {
    if (i > 0) t += ",\n  ";
    const std::string name =
        broken && i > 2000 && i % 7 == 0 ? "a}, {\"ph\"" : "op\\\"" + std::to_string(i % 13) + "\"";
    t += "{\"ph\": \"X\", \"cat\": \"cpu_op\", \"name\": \"" + name +
         ", \"pid\": 1, \"tid\": 2, \"ts\": " + std::to_string(i * 10) +
         ", \"dur\": 3, \"args\": {\"l\": [{\"a\": 1},\n {\"ph\": 2}], \"correlation\": " +
         std::to_string(i) + "}}";
  }
  return t + "],\n \"distributedInfo\": {\"rank\": 1}}\n";
}

}  // namespace

int main() {
  using stallscope::ParseTraceBytes;
  int mismatches = 0;
  for (bool broken : {false, true}) {
    const std::string text = Text(broken);
    stallscope::TraceReading one;
    one.parse_threads = 1;
    one.min_part_bytes = 0;
    const auto want = ParseTraceBytes(text, "t.json", one);
    for (size_t n = 2; n <= 12; ++n) {
      stallscope::TraceReading how = one;
      how.parse_threads = n;
      const auto got = ParseTraceBytes(text, "t.json", how);
      if (got.ok() != want.ok() ||
          (!got.ok() && got.status().message() != want.status().message()) ||
          (got.ok() && (got->events.size() != want->events.size() || got->names != want->names)))
        ++mismatches;
    }
    std::printf("%s text: %s, read in 2 to 12 parts\n", broken ? "broken" : "sound",
                want.ok() ? "read" : "an error");
  }
  std::printf("mismatches with one thread's read: %d\n", mismatches);
  return mismatches == 0 ? 0 : 1;
}
