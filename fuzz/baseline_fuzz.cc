// libFuzzer target: ParseBaseline, the reader of `doctor --baseline B.json`.
// A baseline that parses must print back to JSON that parses to the same
// metrics, and compared with itself must show no drift.
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <string_view>

#include "analyze/host/baseline.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  std::string_view text(reinterpret_cast<const char*>(data), size);
  stallscope::Result<stallscope::HostBaseline> b = stallscope::ParseBaseline(text, "fuzz.json");
  if (!b.ok()) return 0;
  stallscope::Result<stallscope::HostBaseline> again =
      stallscope::ParseBaseline(stallscope::BaselineToJson(*b), "again.json");
  if (!again.ok() || again->metrics.size() != b->metrics.size()) std::abort();
  for (size_t i = 0; i < b->metrics.size(); ++i) {
    if (again->metrics[i].name != b->metrics[i].name ||
        again->metrics[i].value != b->metrics[i].value ||
        again->metrics[i].layer != b->metrics[i].layer) {
      std::abort();
    }
  }
  if (!stallscope::CompareBaseline(*b, *b, 0.1, nullptr).findings.empty()) std::abort();
  return 0;
}
