// libFuzzer target: ParseOomKills on any text; every kill it returns must be
// a positive pid with a message taken from the input.
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <string_view>

#include "probe/kernel_log.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  std::string_view text(reinterpret_cast<const char*>(data), size);
  for (const stallscope::OomKill& k : stallscope::ParseOomKills(text)) {
    if (k.pid <= 0 || k.line == 0 || text.find(k.message) == std::string_view::npos) std::abort();
    (void)k.rss_bytes();
  }
  return 0;
}
